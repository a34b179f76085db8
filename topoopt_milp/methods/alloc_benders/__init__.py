"""alloc-benders: the metric-inequality decomposition (decomposition.py)
and its master problem (master.py)."""
