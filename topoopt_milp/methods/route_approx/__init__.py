"""route-approx: the method (method.py), its shared pieces and certified
bound (common.py) and path column generation (paths.py)."""
