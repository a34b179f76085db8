"""route-approx: the method (method.py), its shared pieces and certified bound (common.py),
path column generation (paths.py, base.py), per-source tree columns (trees.py) and warm
re-routing (warm.py; :func:`warm_route` is the entry point of a local search)."""

from .method import approx_min_congestion, warm_route

__all__ = ["approx_min_congestion", "warm_route"]
