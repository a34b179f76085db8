"""route-approx: the method (method.py), its shared pieces and certified bound (common.py),
path column generation (paths.py) and per-source tree columns (trees.py)."""
