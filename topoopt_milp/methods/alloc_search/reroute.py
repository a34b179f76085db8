"""The one evaluation call of alloc-search and best-start: a topology re-routed exactly.

``reroute(instance, topology, rings, options)`` solves the route LP with free ring shares
(:func:`..formulations.ring_lp.route_rings`) over the candidate ring orders of ``rings``:

* ``"choose"``: every group's TotientPerms orders with a free split -- alloc-milp's ring
  space, so the value is alloc-milp's optimum with its links fixed to ``topology``;
* ``"given"``: the instance's default rings (one candidate per group): the route LP with
  fixed rings.

The routing is decomposed into paths, the objective recomputed from it and the solution
re-verified by the independent checker (:func:`..alloc_alternate.search._checked`), so an
accepted move is accepted on the exact objective of a checked solution, never on an
estimate. Everything that evaluates a candidate calls this function, so a faster re-routing
(warm-started, or route-approx's column generation) replaces it in one place.
"""

from __future__ import annotations

from collections.abc import Mapping

from ...core.instance import Instance
from ...core.params import SolveOptions
from ...core.topology import Topology, default_rings
from ..alloc_alternate.search import Solution, _checked, _solution
from ..formulations.ring_lp import candidate_orders, route_rings

RING_MODES = ("choose", "given")


def ring_candidates(instance: Instance, rings: str | Mapping) -> dict:
    """Candidate orders per group with traffic for the ring mode (module docstring), or
    ``rings`` itself when it is already a mapping of candidate orders (alloc-search's tours)."""
    if isinstance(rings, Mapping):
        return dict(rings)
    if rings == "choose":
        return candidate_orders(instance)
    if rings != "given":
        raise ValueError(f"rings: {rings!r} is not one of {', '.join(RING_MODES)}")
    return {r.group: [tuple(r.order)] for r in default_rings(instance)
            if instance.allreduce[r.group].edge_bytes > 0}


def lp_options(options: SolveOptions, tolerance: float | None = 1e-6) -> SolveOptions:
    """The options of a search LP: the caller's solver settings without its time limit (the
    search keeps its own clock) and, for the interior-point method, ``tolerance`` (1e-6:
    measured 40% faster than HiGHS' 1e-8 by alloc-alternate, objective 1e-8 higher)."""
    sp = options.solver.with_(time_limit=None)
    if sp.lp_algorithm == "ipm" and tolerance is not None:
        sp = sp.with_(ipm_tolerance=tolerance)
    return options.with_(solver=sp, warm_start=None, deadline=None)


def reroute(instance: Instance, topology: Topology, rings: str | Mapping,
            options: SolveOptions,
            hop_penalty: float = 0.0, time_limit: float | None = None
            ) -> tuple[Solution | None, str]:
    """``topology`` routed by the route LP of ``rings`` and checked: ``(solution, "")``, or
    ``(None, reason)`` when the LP fails, a demand is unreachable or the checker objects.
    ``time_limit`` (wall seconds) caps the LP."""
    opts = options
    if time_limit is not None:
        opts = options.with_(solver=options.solver.with_(time_limit=max(time_limit, 0.5)))
    try:
        rr = route_rings(instance, topology, ring_candidates(instance, rings), opts, hop_penalty)
    except ValueError as exc:  # a disconnected topology: some demand cannot be routed
        return None, str(exc)
    sol, why = _solution(rr)
    return (None, why) if sol is None else _checked(instance, sol)
