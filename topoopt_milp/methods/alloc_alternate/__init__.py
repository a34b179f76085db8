"""alloc-alternate: the alternation (search.py), its exact topology
step (link_step.py); the route LP with free ring shares is
formulations/ring_lp.py."""
