"""alloc-orbit: alloc-milp over the topologies that keep the instance's shift symmetry
(symmetry.py: the rotations that map the traffic onto itself; model.py: the MILP over link
orbits; method.py: the method and its spec)."""
