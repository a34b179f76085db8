"""The route LP with free AllReduce ring shares: routing on a fixed topology, ring split chosen.

On a fixed topology ``L`` the MP demands are fixed and every AllReduce group ``g`` (edge volume
``e_g = 2 (k-1)/k S_g``) splits its volume over a given set ``C_g`` of candidate ring orders
with free shares ``sigma_c``::

    min U  (+ eps sum_{s,a} f[s, a])
    s.t. sum_{a into v} f[s, a] - sum_{a out of v} f[s, a]
             - sum_{g, c in C_g: (s -> v) an edge of c} e_g sigma_c = D_mp[s, v]   all s, v != s
         sum_s f[s, a] <= U L_a                                                    all arcs a
         sum_{c in C_g} sigma_c = 1,  sigma >= 0,  f >= 0                          all g

It is linear because the topology is fixed (in alloc-milp the same shares are bilinear with
the demand multiplier, see :func:`._exact.ring_choice`). Flows are aggregated by source as in
:mod:`.route`: the model is :func:`.route._flow_lp`'s source-aggregated arc LP for the MP-only
demand (one flow per source of MP traffic or ring traffic), with the ``sigma`` columns and the
share rows appended; ``_flow_lp`` itself is not changed. The flows are decomposed into paths
by the route family's decomposition (:func:`.route._decompose`) with the demand the solved
``sigma`` imply, and the rings returned are the orders with ``sigma_c > 1e-9``, renormalised.

Candidates default to the TotientPerms orders of every group
(:func:`topoopt_milp.core.circulant.totient_orders`),
which is alloc-milp's ring space: the LP value on ``L`` is then exactly alloc-milp's optimum
with its links fixed to ``L``, and it is never worse than any fixed ring choice in that space
(a fixed choice is a feasible ``sigma``). With one candidate per group the LP is route-milp's
LP with those rings.

``hop_penalty`` ``eps_rel > 0`` adds ``eps = eps_rel / (total demand in volume units)`` per unit
of flow on an arc, i.e. ``eps_rel`` times the traffic-weighted mean hop count: among
(near-)optimal routings the LP prefers short ones, so arcs no shortest-enough routing needs
carry no flow (an interior-point solution otherwise spreads flow over every arc that some
optimal routing could use). Its optimum ``U_eps`` satisfies ``U* <= U_eps <= U* + eps_rel H*``
with ``H*`` the mean hop count of an unpenalised optimum (compare the two objectives at the
two optima), so ``eps_rel = 1e-4`` costs at most about ``1e-4 H*`` time units. The returned
objective is always the recomputed communication time of the returned routing.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from scipy.sparse import coo_matrix, csc_matrix, hstack, vstack

from ...core.backends.pulp_backend import BackendOutcome, MatrixModel, solve_model
from ...core.circulant import totient_orders
from ...core.evaluate import comm_time
from ...core.instance import Instance
from ...core.params import SolveOptions
from ...core.topology import Ring, Routing, Topology
from .. import model_data as _exact
from ..model_data import normalise_shares
from . import route

SHARE_EPS = 1e-9  # rings with a smaller share are dropped (solver noise), the rest renormalised

Order = tuple[int, ...]


@dataclass(frozen=True)
class RingRoute:
    """A routing step's outcome: ``routing`` (``None`` when the LP failed), its ``rings``,
    ``objective_s`` (recomputed communication time of ``routing``), ``lp_s`` (the LP's own
    ``U`` in seconds, a lower bound on this topology when ``hop_penalty = 0`` and the LP is
    optimal), the backend ``outcome``, the wall time and the arc ``prices`` (below).

    ``prices[i, j]`` is the dual value ``pi_a >= 0`` of the capacity row of arc ``a = (i, j)``
    (0 for arcs without a link). LP duality gives ``sum_a pi_a L_a = 1`` (the reduced cost of
    ``U``, without a hop penalty), and ``pi_a`` is the rate at which ``U`` falls per unit of
    capacity added to ``a``: one more link on ``a`` lowers ``U`` by about ``U pi_a`` to first
    order, and a link with ``pi = 0`` can lose capacity at no first-order cost.

    ``gains[i, j] = max_s (y[s, j] - y[s, i])`` over the sources' node potentials ``y`` (the
    duals of the conservation rows, ``y[s, s] = 0``) is the same rate for a unit of capacity on
    *any* arc, with or without a link: a flow column of a new arc ``(i, j)`` would have reduced
    cost ``-(y[s, j] - y[s, i])``. On arcs that carry flow ``gains = prices`` (complementary
    slackness), elsewhere ``gains <= prices`` (dual feasibility). Both are ``None`` when the
    solver returned no duals."""

    topology: Topology
    routing: Routing | None
    rings: tuple[Ring, ...]
    objective_s: float | None
    lp_s: float | None
    outcome: BackendOutcome
    runtime_s: float
    prices: np.ndarray | None = None
    gains: np.ndarray | None = None


def candidate_orders(instance: Instance) -> dict[int, list[Order]]:
    """The TotientPerms orders of every group with traffic (alloc-milp's ring space)."""
    return {g: totient_orders(grp.members) for g, grp in enumerate(instance.allreduce)
            if grp.edge_bytes > 0}


def in_ring_space(instance: Instance, rings: Sequence[Ring],
                  candidates: Mapping[int, Sequence[Order]] | None = None) -> bool:
    """True when every ring of a group with traffic is one of its candidate orders (default:
    the TotientPerms orders), i.e. alloc-milp's bound covers a solution with these rings."""
    cands = candidate_orders(instance) if candidates is None else candidates
    allowed = {g: {tuple(o) for o in orders} for g, orders in cands.items()}
    return all(tuple(r.order) in allowed[r.group] for r in rings
               if instance.allreduce[r.group].edge_bytes > 0 and r.share > 0)


def _uniform_rings(instance: Instance, cands: Mapping[int, Sequence[Order]]) -> tuple[Ring, ...]:
    rings = []
    for g, grp in enumerate(instance.allreduce):
        orders = cands.get(g) if grp.edge_bytes > 0 else None
        if not orders:
            rings.append(Ring(g, tuple(sorted(grp.members)), 1.0))
            continue
        rings += [Ring(g, tuple(o), 1.0 / len(orders)) for o in orders]
    return tuple(rings)


def build(instance: Instance, topology: Topology, cands: Mapping[int, Sequence[Order]],
          hop_penalty: float = 0.0):
    """The LP of the module docstring: ``(model, layout)``.

    ``layout`` holds the route problem ``P``, the flow ``sources``, the MP-only ``demand``
    rows, the flow column count ``nf``, and per ``sigma`` column its ``(group, order)`` and
    the (row, volume) entries it adds to the demand."""
    # The RouteProblem of route.py (arcs, capacities, units; it also refuses a topology on
    # which some candidate ring edge or MP demand is unreachable): built with every candidate
    # ring at a uniform share, whose demand matrix is not used below.
    P = route.problem_on(instance, topology, _uniform_rings(instance, cands))
    n = instance.n
    mp = _exact.demand_matrix(instance, []) / P.unit
    sigma_keys: list[tuple[int, Order]] = []
    edges: list[list[tuple[int, int, float]]] = []  # per sigma: (src, dst, volume units)
    for g, orders in cands.items():
        e = instance.allreduce[g].edge_bytes / P.unit
        for o in orders:
            k = len(o)
            sigma_keys.append((g, tuple(o)))
            edges.append([(o[i], o[(i + 1) % k], e) for i in range(k)])
    is_src = mp.sum(axis=1) > 0
    for es in edges:
        is_src[[a for a, _, _ in es]] = True
    sources = np.flatnonzero(is_src)
    demand = mp[sources]
    base, nf = route._flow_lp(P, sources, demand)
    K, nrow0, ncol0 = len(sources), base.A.shape[0], base.A.shape[1]
    if base.names[nf] != "U" or ncol0 != nf + 1 or nrow0 != K * n + len(P.res_arcs):
        raise RuntimeError("ring_lp: route._flow_lp's layout changed (flows, then U; "
                           "conservation rows s * n + v, then one capacity row per arc)")
    pos = np.full(n, -1)
    pos[sources] = np.arange(K)
    # sigma columns: -e_g at the conservation row (source a, node b) of every ring edge a -> b
    rr, cc, vv = [], [], []
    for j, es in enumerate(edges):
        for a, b, vol in es:
            rr.append(pos[a] * n + b)
            cc.append(j)
            vv.append(-vol)
    ns, groups = len(sigma_keys), list(cands)
    S = coo_matrix((vv, (rr, cc)), shape=(nrow0, ns))
    grp_row = {g: r for r, g in enumerate(groups)}
    share = coo_matrix((np.ones(ns), ([grp_row[g] for g, _ in sigma_keys], np.arange(ns))),
                       shape=(len(groups), ns))
    A = vstack([hstack([base.A, S]), hstack([csc_matrix((len(groups), ncol0)), share])]).tocsc()
    cost = np.concatenate([base.cost, np.zeros(ns)])
    if hop_penalty > 0:
        # total demand: MP plus k ring edges of volume e_g per group (whatever the split)
        total = float(mp.sum()) + sum(instance.allreduce[g].edge_bytes / P.unit
                                      * len(instance.allreduce[g].members) for g in groups)
        cost[:nf] = hop_penalty / max(total, 1e-300)
    model = MatrixModel(
        A=A, cost=cost,
        col_lower=np.concatenate([base.col_lower, np.zeros(ns)]),
        col_upper=np.concatenate([base.col_upper, np.ones(ns)]),
        row_lower=np.concatenate([base.row_lower, np.ones(len(groups))]),
        row_upper=np.concatenate([base.row_upper, np.ones(len(groups))]),
        integer=np.zeros(ncol0 + ns, dtype=bool),
        names=list(base.names) + [f"sigma{j}" for j in range(ns)],
    )
    layout = {"P": P, "sources": sources, "demand": demand, "nf": nf, "sigma": sigma_keys,
              "edges": edges, "pos": pos, "cap_rows": K * n}
    return model, layout


def route_rings(instance: Instance, topology: Topology,
                candidates: Mapping[int, Sequence[Order]] | None = None,
                options: SolveOptions | None = None, hop_penalty: float = 0.0) -> RingRoute:
    """Solve the LP on ``topology`` and return the routing with its chosen rings.

    ``candidates`` maps a group index to its candidate orders (default
    :func:`candidate_orders`); groups without traffic keep their sorted member order.
    ``options``: solver, LP algorithm, time limit, threads (IPM runs without crossover unless
    ``crossover = on``: the flows are decomposed anyway); HiGHS also returns the LP's row
    duals (``prices``, ``gains``)."""
    t0 = time.perf_counter()
    options = options or SolveOptions()
    sp = options.solver
    if sp.lp_algorithm == "ipm" and sp.crossover == "auto":
        options = options.with_(solver=sp.with_(crossover="off"))
    cands = candidate_orders(instance) if candidates is None else dict(candidates)
    for g, orders in cands.items():
        if not orders:
            raise ValueError(f"candidates: group {g} has no candidate ring order")
    model, lay = build(instance, topology, cands, hop_penalty)
    outcome = solve_model(model, options, row_duals=True)
    if not outcome.status.has_solution:
        return RingRoute(topology, None, (), None, None, outcome, time.perf_counter() - t0)
    x = outcome.x if outcome.x is not None else np.array(
        [outcome.values.get(nm, 0.0) for nm in model.names])
    nf = lay["nf"]
    P, sources = lay["P"], lay["sources"]
    sigma = np.clip(x[nf + 1:], 0.0, None)
    demand = lay["demand"].copy()
    pos = lay["pos"]
    for s_val, es in zip(sigma, lay["edges"], strict=True):
        for a, b, vol in es:
            demand[pos[a], b] += vol * s_val
    # (sources, arcs): a reshape by -1 fails for traffic without any source (all volumes 0)
    flows = x[:nf].reshape(len(sources), len(P.arcs))
    pair_paths = route._decompose(P, sources, demand, flows)
    rings = [Ring(g, o, float(s)) for (g, o), s in zip(lay["sigma"], sigma, strict=True)
             if s > SHARE_EPS]
    rings = normalise_shares(rings)
    for g, grp in enumerate(instance.allreduce):  # groups without traffic (or candidates)
        if g not in cands:
            rings.append(Ring(g, tuple(sorted(grp.members)), 1.0))
    rings.sort(key=lambda r: r.group)
    routing = _exact.routing_from_pair_paths(instance, topology, rings, pair_paths, options.seed)
    obj = comm_time(instance, topology, routing)
    lp_s = outcome.objective * P.sec_per_unit if hop_penalty == 0 else float(x[nf]) * P.sec_per_unit
    prices = gains = None
    if outcome.row_duals is not None:
        prices = np.zeros((instance.n, instance.n))
        r0 = lay["cap_rows"]
        for r, arcs in enumerate(P.res_arcs):  # one arc per resource (not an SNDlib instance)
            u, v = P.arcs[arcs[0]]
            prices[u, v] = abs(float(outcome.row_duals[r0 + r]))
        y = np.zeros((instance.n, instance.n))  # y[k-th source, v]: node potentials
        y[sources] = outcome.row_duals[:r0].reshape(len(sources), instance.n)
        y[sources, sources] = 0.0  # the free source rows
        gains = np.zeros((instance.n, instance.n))  # no source (no traffic): no gain
        if len(sources):
            gains = (y[sources][:, None, :] - y[sources][:, :, None]).max(axis=0)
    return RingRoute(topology, routing, tuple(rings), obj, lp_s, outcome, time.perf_counter() - t0,
                     prices, gains)
