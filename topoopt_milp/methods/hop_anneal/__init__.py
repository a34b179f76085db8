"""hop-anneal: simulated annealing of the hop volume over degree-preserving 2-switches
(kernel.py: the compiled hop volume and moves; method.py: the method and its spec)."""
