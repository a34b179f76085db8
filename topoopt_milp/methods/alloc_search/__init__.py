"""alloc-search: the cheap-start portfolio (starts.py, also the ``best-start`` warm start of
the exact methods), the one re-routing call every candidate goes through (reroute.py), the
degree-preserving swap moves (swaps.py) and the local search itself (search.py)."""
