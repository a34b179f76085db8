"""The one evaluation call of alloc-search and best-start: a topology re-routed exactly.

``reroute(instance, topology, rings, options)`` solves the route LP with free ring shares
(:func:`..formulations.ring_lp.route_rings`) over the candidate ring orders of ``rings``:

* ``"choose"``: every group's TotientPerms orders with a free split -- alloc-milp's ring
  space, so the value is alloc-milp's optimum with its links fixed to ``topology``;
* ``"given"``: the orders of the instance's default rings, both directions of each group
  (:func:`~topoopt_milp.core.topology.default_rings`: the sorted members and their reverse)
  as the group's two candidates with a free split. Route-milp's LP with the default rings
  fixes the split at one half each way, a feasible split here, so this value is never above
  route-milp's on the same topology (and equals it when the halves are optimal). Both
  orders are TotientPerms orders (``m = 1`` and ``m = k - 1``), so the rings stay in
  alloc-milp's space.

The routing is decomposed into paths, the objective recomputed from it and the solution
re-verified by the independent checker (:func:`..alloc_alternate.search._checked`), so an
accepted move is accepted on the exact objective of a checked solution, never on an
estimate. Everything that evaluates a candidate calls this function, so a faster re-routing
(warm-started, or route-approx's column generation) replaces it in one place.

:func:`reroute_approx` is that faster re-routing for the ``"given"`` ring mode: route-approx
within ``1 + epsilon``, warm-started from the nearby current solution (the warm fast path of
:mod:`..route_approx.warm`), checked the same way, with its certified bound's lengths as the
prices.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import dijkstra

from ...core.errors import InputError
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
    # both directions of each group are candidates (a dict of one order per group kept
    # only the reverse)
    out: dict[int, list[tuple[int, ...]]] = {}
    for r in default_rings(instance):
        if instance.allreduce[r.group].edge_bytes > 0:
            orders = out.setdefault(r.group, [])
            if tuple(r.order) not in orders:
                orders.append(tuple(r.order))
    return out


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


# -- the approximate evaluation: route-approx, warm-started from the nearby solution ---------
_RESULTS: OrderedDict[tuple[int, str], object] = OrderedDict()  # (instance, links) -> result
KEEP = 8  # route-approx results kept to warm-start the next candidates
GAINS_MAX_N = 256  # gains need an (n, n, n) difference array: above this size, None


def reroute_approx(instance: Instance, topology: Topology, options: SolveOptions,
                   near: Solution | None = None, epsilon: float = 0.01,
                   time_limit: float | None = None, rings: str | Mapping = "given"
                   ) -> tuple[Solution | None, str]:
    """``topology`` routed by ``route-approx`` within ``1 + epsilon``, warm-started from
    ``near`` (the current solution of a local search: its own route-approx result when this
    module computed it, else its routing with hop-count lengths; without ``near``, the
    remembered result whose links differ least from ``topology``), and checked.

    ``rings``: ``"given"`` routes the instance's default rings
    (:func:`..route_approx.warm_route`); ``"choose"`` (every group's TotientPerms orders) or a
    mapping group -> candidate orders (alloc-search's tours) splits every group freely over
    its candidates (:func:`..route_approx.choice.route_with_rings`, the ring LP of
    :func:`reroute` within ``1 + epsilon``): the returned rings are among the candidates,
    so ``ring_space`` keeps its meaning.

    The objective is that of the returned routing (recomputed, and checked by the
    independent checker), at most ``1 + epsilon`` times the route LP's optimum on
    ``topology`` (with the same ring candidates), so a move is still accepted on the exact
    objective of a checked solution, of a routing that is near-optimal instead of optimal.
    ``prices`` are the certified bound's arc lengths (``sum_a pi_a L_a = 1``, the
    normalisation of the route LP's duals); ``gains[i, j] = max_s (dist(s, j) - dist(s, i))``
    under them (the reduced-cost rate of a new arc, as for the LP's conservation duals;
    ``None`` above ``GAINS_MAX_N`` nodes)."""
    from ...core.deadline import Deadline
    from ...core.result import SolveResult, Status
    from ...core.scope import topology_hash
    from ..route_approx import warm_route
    from ..route_approx.choice import route_with_rings
    from ..route_approx.common import StartTooCostly
    from ..route_approx.method import SPEC
    from ..route_approx.warm import INFO_KEY

    L = np.asarray(topology.links)
    mine = [(h, r) for (i, h), r in _RESULTS.items() if i == id(instance)]
    prev = None
    if near is not None:
        prev = dict(mine).get(topology_hash(np.asarray(near.topology.links)))
        if prev is None:
            prev = SolveResult("alloc-search", Status.FEASIBLE, near.objective_s, None, 0.0,
                               topology=near.topology, routing=near.routing)
    elif mine:  # the remembered result whose links differ least from ``topology``
        prev = min((r for _, r in mine), key=lambda r: int(np.abs(r.topology.links - L).sum()))
    try:
        # no group with traffic (no candidates): nothing to split, the fixed-ring path
        cands = {} if isinstance(rings, str) and rings == "given" else \
            {g: o for g, o in ring_candidates(instance, rings).items() if o}
        if cands:
            opts = SPEC.options({"epsilon": epsilon})
            if time_limit is not None:  # the clock starts now
                opts = opts.with_(deadline=Deadline(float(time_limit)))
            res = route_with_rings(instance, L, cands, opts, prev,
                                   "choose" if isinstance(rings, str) else "fixed")
        elif prev is not None:
            res = warm_route(instance, L, prev, epsilon=epsilon, time_limit=time_limit)
        else:
            opts = SPEC.options({"epsilon": epsilon, "time_limit": time_limit})
            res = SPEC.solve(instance.with_topology(L), opts)
    except (InputError, StartTooCostly) as exc:  # a disconnected topology, or no time
        return None, str(exc)
    if res.routing is None or res.objective is None:
        return None, f"route-approx: {res.status.value} {res.message}"
    _RESULTS[(id(instance), topology_hash(L))] = res  # any routing is a valid warm start
    while len(_RESULTS) > KEEP:
        _RESULTS.popitem(last=False)
    info = (res.info or {}).get(INFO_KEY)
    prices = gains = None
    if info is not None:
        n = instance.n
        arcs = np.asarray(info["arcs"], np.int64).reshape(-1, 2)
        prices = np.zeros((n, n))
        prices[arcs[:, 0], arcs[:, 1]] = info["lengths"]
        if n <= GAINS_MAX_N:
            dist = dijkstra(csr_matrix((np.maximum(prices[arcs[:, 0], arcs[:, 1]], 1e-300),
                                        (arcs[:, 0], arcs[:, 1])), shape=(n, n)),
                            directed=True)
            dist = np.where(np.isfinite(dist), dist, 0.0)
            gains = np.clip((dist[:, None, :] - dist[:, :, None]).max(axis=0), 0.0, None)
    sol = Solution(res.topology, res.routing, tuple(res.routing.rings), float(res.objective),
                   prices, gains, None if res.bound is None else float(res.bound))
    return _checked(instance, sol)
