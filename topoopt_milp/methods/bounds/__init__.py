"""Lower bounds: the bound functions with their validity proofs (counting.py); the method
``lower-bounds`` that reports them is :mod:`topoopt_milp.methods.lower_bounds`."""
