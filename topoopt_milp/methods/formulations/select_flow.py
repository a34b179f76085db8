"""select, flow model: ring-jump selection under the ``comm_time`` objective (MILP and CP-SAT).

The jump binaries ``y_p``, candidate sets and port budget are those of :mod:`.select`.

Flow model (objective ``comm_time``, fractional routing). Maximum concurrent flow with
capacities switched by ``y``: maximise ``lambda`` such that ``lambda`` times the demand is
routed with source-aggregated arc flows ``f[s][i, i+c]`` over the coins ``c = +-p`` and::

    sum_s f[s][i, i+c] <= y_p          (one link of B per arc, volumes in units V)

``T_comm = 1 / lambda`` (units ``V/B`` seconds), so minimising the bilinear
``max load / (B y)`` becomes a linear model.

AllReduce rings of the flow model (parameter ``rings``):

* ``"choose"`` (MILP default): as in :mod:`.alloc`, every group may split its volume over the
  TotientPerms candidate orders ``member[(i m) mod k]``, ``gcd(m, k) = 1``, of its sorted
  members (``m`` and ``k - m`` are a ring and its reverse, so both directions are candidates).
  Shares ``sigma_c`` make the demand ``lambda sigma_c`` bilinear; with
  ``tau_c = lambda sigma_c``, ``sum_c tau_c = lambda``, each edge of order ``c`` demands
  ``e_g tau_c`` (``e_g`` = the group's edge volume) and the model stays linear;
  ``sigma_c = tau_c / lambda``. This space contains the default rings (``m = 1, k - 1`` at
  half share) and every TotientPerms split (its rings along the chosen jumps, both directions,
  equal shares), so the optimum is never beaten by those rings on any circulant of the
  candidate set. Returned rings are the orders with ``sigma_c > SHARE_EPS``, renormalised.
* ``"given"`` (CP-SAT, which only takes this mode): the rings of
  :func:`~topoopt_milp.core.topology.default_rings` as fixed demands. Choosing integer ring splits
  in the integer-unit CP-SAT model is left out: the MILP is the exact tool for it.

Rotation-invariant reduction. When the traffic is rotation invariant
(``D[s][t] = D[0][t-s]``, e.g. all-to-all or a ring 0, 1, .., n-1), averaging an optimal
routing over the ``n`` rotations keeps it optimal, so one source suffices and arc type ``c``
carries ``sum_i f[0][i, i+c]`` (the circulant symmetric reduction); otherwise every source
gets its flows. With chosen rings this stays valid when the MP demand is rotation invariant
and every AllReduce group with volume is the whole cluster: then every candidate order
``i -> i m`` sends ``s -> s + m`` for all ``s`` (a circulant demand for any shares), so for
fixed shares the averaging argument applies. A group on a sub-cluster has non-circulant
candidate rings and the per-source model is used. Path extraction only uses arcs of the
chosen jumps (a jump binary within the integrality tolerance of 0 may carry a sliver of flow).

CP-SAT solves the same flow model in integer volume units (scale recorded, volumes rounded
down, ``flow_resolution`` = 12 units per smallest demand unit). Integer flows are a
restriction of fractional routing: the integer model's optimum can lie above the fractional
optimum (uniform traffic, n = 23, d = 4: 0.0101333 s against select-milp's proven 0.01008 s),
and its bound bounds the integer model only. So select-cpsat's comm_time results are
**downgraded and scoped**, not exact: scope ``restricted`` (integer flows of that unit, default
rings), status ``feasible`` with ``scope_status = optimal`` when CP-SAT proves the integer
optimum, and no table uses that bound for another solution. select-milp is the exact tool for
comm_time; it is meant for small instances.

Scope of the MILP: circulants with jumps from the candidate set; the ring space of the ``rings``
mode (``choose``: the TotientPerms orders, free split; ``given``: the default rings);
fractional routing.
"""

from __future__ import annotations

import logging
import time

import numpy as np
import pulp

from ...core.backends.cpsat_backend import solve_cpsat as _run_cpsat
from ...core.backends.pulp_backend import solve_pulp
from ...core.circulant import port_cost, rep, totient_orders
from ...core.instance import Instance
from ...core.params import SolveOptions
from ...core.result import SolveResult
from ...core.routing import route
from ...core.scope import Scope, ring_scope
from ...core.topology import Ring, Topology, default_rings
from .. import model_data as _exact
from ..flow_paths import decompose_flow
from ..result_step import honest_result
from .alloc import throughput_bound, throughput_outcome

log = logging.getLogger(__name__)

SHARE_EPS = 1e-9  # ring shares below this are LP noise
CPSAT_FLOW_RESOLUTION = 12  # splits in 1/2, 1/3, 1/4, 1/6, 1/12 of a demand unit are exact


def chosen_jumps(values: dict[str, float], cands) -> tuple[int, ...]:
    """Jumps whose binary ``y_p`` is set in a solver solution."""
    return tuple(p for p in cands if values.get(f"y_{p}", 0.0) > 0.5)



# -- flow model ---------------------------------------------------------------------------------
def _coins(n: int, cands: list[int]) -> list[tuple[int, int]]:
    """``(coin, jump)`` pairs: ``+p`` and ``-p``, only ``+p`` for ``p = n/2``."""
    out = []
    for p in cands:
        out.append((p, p))
        if 2 * p != n:
            out.append(((-p) % n, p))
    return out


def _rotation_invariant(D: np.ndarray) -> bool:
    n = D.shape[0]
    ref = D[0]
    tol = 1e-9 * max(1.0, float(np.abs(D).max()))
    return all(np.abs(np.roll(D[s], -s) - ref).max() <= tol for s in range(1, n))


def ring_space(instance: Instance, mode: str) -> tuple[list[Ring], list[tuple[int, float, list]]]:
    """AllReduce rings of the flow model: ``(fixed, chosen)``.

    ``"given"``: ``fixed`` are the rings of :func:`~topoopt_milp.core.topology.default_rings` and
    ``chosen`` is empty. ``"choose"``: ``fixed`` is empty and ``chosen`` lists, per group with
    positive volume, ``(group, edge bytes, candidate orders)`` with the TotientPerms orders of
    :func:`topoopt_milp.core.circulant.totient_orders`."""
    if mode == "given":
        return list(default_rings(instance)), []
    if mode == "choose":
        return [], [(g, grp.edge_bytes, totient_orders(grp.members))
                     for g, grp in enumerate(instance.allreduce) if grp.edge_bytes > 0]
    raise ValueError(f"rings: unknown ring mode {mode!r}")


def choice_symmetric(instance: Instance, chosen) -> bool:
    """Whether chosen rings keep the traffic rotation invariant: every group with volume is the
    whole cluster, so every candidate order ``i -> i m`` sends ``s -> s + m`` for all ``s``."""
    return all(sorted(instance.allreduce[g].members) == list(range(instance.n))
               for g, _, _ in chosen)


def build_flow_milp(n, d, regular, cands, w, sources, symmetric, chosen=(), tick=None):
    """PuLP max-concurrent-flow model with switchable rings; ``w[s][t]`` in units ``V``.

    ``chosen``: ``(group, edge volume in units V, candidate orders)`` per group whose ring split
    is a decision: ``tau[g][c] >= 0``, ``sum_c tau[g][c] = lambda`` and each edge of order ``c``
    adds ``volume * tau[g][c]`` to the demand (``w`` then holds the MP demand only). Returns
    ``(problem, y, lambda, f, taus, demand)`` with ``taus`` a list of ``(group, order, tau)``
    and ``demand[s][t]`` the demand expressions (multiples of ``lambda`` and ``tau``)."""
    prob = pulp.LpProblem("select_flow", pulp.LpMaximize)
    y = {p: prob.add_variable(f"y_{p}", cat=pulp.LpBinary) for p in cands}
    ports = pulp.lpSum(port_cost(n, p) * y[p] for p in cands)
    prob += (ports == d) if regular else (ports <= d), "ports"
    lam = prob.add_variable("lam", 0, 1)  # ideal-switch bound: T >= 1 unit for any topology
    prob.setObjective(lam)
    demand = {s: {t: float(w[s][t]) * lam for t in range(n) if t != s and w[s][t] > 0}
              for s in sources}
    taus = []
    for g, vol, orders in chosen:
        taus += _exact.ring_choice(prob, lam, g, orders, float(vol), demand, sources=demand)
    coins = _coins(n, cands)
    f = {(s, i, c): prob.add_variable(f"f_{s}_{i}_{c}", 0) for s in sources for i in range(n)
         for c, _ in coins}
    for s in sources:
        if tick is not None:
            tick()
        row = demand[s]
        for v in range(n):
            out = pulp.lpSum(f[s, v, c] for c, _ in coins)
            inn = pulp.lpSum(f[s, (v - c) % n, c] for c, _ in coins)
            rhs = pulp.lpSum(row.values()) if v == s else -row.get(v, 0)
            prob += out - inn == rhs
    if symmetric:  # rotation-invariant reduction: arc type c carries the whole sum
        for c, p in coins:
            prob += pulp.lpSum(f[sources[0], i, c] for i in range(n)) <= y[p]
    else:
        for i in range(n):
            for c, p in coins:
                prob += pulp.lpSum(f[s, i, c] for s in sources) <= y[p]
    return prob, y, lam, f, taus, demand


def build_flow_cpsat(n, d, regular, cands, units, sources, symmetric, tick=None):
    """CP-SAT integer version: minimise the largest arc load ``U`` (integer units)."""
    from ortools.sat.python import cp_model  # lazily: 0.5 s to import
    m = cp_model.CpModel()
    y = {p: m.NewBoolVar(f"y_{p}") for p in cands}
    ports = sum(port_cost(n, p) * y[p] for p in cands)
    m.Add(ports == d) if regular else m.Add(ports <= d)
    coins = _coins(n, cands)
    total = int(sum(int(units[s].sum()) for s in sources))
    # In the symmetric reduction an arc type's load sums source 0's flow over all n rotations
    # of the arc, so it can reach n times the source's volume (every unit crossing up to n-1
    # arcs of the type); a domain of ``total`` made large circulants spuriously infeasible.
    U = m.NewIntVar(0, max(total * (n if symmetric else 1), 1), "U")
    f = {(s, i, c): m.NewIntVar(0, int(units[s].sum()), f"f_{s}_{i}_{c}") for s in sources
         for i in range(n) for c, _ in coins}
    for s in sources:
        if tick is not None:
            tick()
        for v in range(n):
            out = sum(f[s, v, c] for c, _ in coins)
            inn = sum(f[s, (v - c) % n, c] for c, _ in coins)
            rhs = int(units[s].sum() - units[s][s]) if v == s else -int(units[s][v])
            m.Add(out - inn == rhs)
    arcs = ([(None, c, p) for c, p in coins] if symmetric
            else [(i, c, p) for i in range(n) for c, p in coins])
    for i, c, p in arcs:
        load = (sum(f[sources[0], j, c] for j in range(n)) if i is None
                else sum(f[s, i, c] for s in sources))
        m.Add(load <= U)
        m.Add(load == 0).OnlyEnforceIf(y[p].Not())
    m.Minimize(U)
    return m, y, U, f


# -- solve ----------------------------------------------------------------------------------
def _chosen_rings(taus, values: dict[str, float], lam: float | None) -> list[Ring]:
    """Rings with share ``sigma_c = tau_c / lambda``; shares below ``SHARE_EPS`` are solver
    noise and dropped, the rest renormalised per group."""
    rings = []
    for g, order, tau in taus:
        share = values.get(tau.name, 0.0) / lam if lam and lam > 0 else 0.0
        if share > SHARE_EPS:
            rings.append(Ring(g, tuple(order), share))
    return _exact.normalise_shares(rings)


def _flow_routing(instance, topo, rings, n, cands, sources, symmetric, flow_value, dem):
    """Routing from source flows; ``dem[s][t]`` per source (model units, any scale)."""
    # only coins of chosen jumps (the decomposition also ignores arcs without a link)
    used = {rep(n, p) for p in topo.jumps}
    coins = [(c, p) for c, p in _coins(n, cands) if p in used]
    pair_paths = {}
    for s in sources:
        arc = {}
        for i in range(n):
            for c, _ in coins:
                val = flow_value(s, i, c)
                if val > 0:
                    arc[(i, (i + c) % n)] = arc.get((i, (i + c) % n), 0.0) + val
        paths = decompose_flow(s, arc, {t: float(dem[s][t]) for t in range(n) if dem[s][t] > 0},
                               topo)
        if symmetric:
            for shift in range(n):
                for t, ps in paths.items():
                    pair_paths[(shift, (t + shift) % n)] = [
                        (tuple((x + shift) % n for x in path), fr) for path, fr in ps]
        else:
            pair_paths.update({(s, t): ps for t, ps in paths.items()})
    return _exact.routing_from_pair_paths(instance, topo, rings, pair_paths)


def solve_flow(instance: Instance, options: SolveOptions, backend: str, method: str, cands,
               warm: tuple[int, ...] | None, t0: float) -> SolveResult:
    """Solve the flow model (module docstring) over the jump candidates ``cands``; ``warm`` is
    a feasible jump set used as MIP start / hint."""
    n, d, regular = instance.n, instance.degree, instance.regular
    mode = options.method.rings
    rings, chosen = ring_space(instance, mode)
    D = _exact.demand_matrix(instance, rings)  # MP only when the rings are chosen
    V = _exact.volume_unit(instance)
    spu = _exact.seconds_per_unit(instance)
    symmetric = _rotation_invariant(D) and choice_symmetric(instance, chosen)
    ring_nodes = {v for g, _, _ in chosen for v in instance.allreduce[g].members}
    sources = [0] if symmetric else [s for s in range(n) if D[s].sum() > 0 or s in ring_nodes]
    w = D / V
    scope = Scope(topology="circulant", candidates=cands,
                  **ring_scope("choose" if mode == "choose" else "given", rings))
    fallback = None
    if warm:
        wt = Topology.circulant(n, warm)
        fallback = wt, route(instance, wt, default_rings(instance), "coin-change")
    if backend == "milp":
        chosen_units = [(g, vol / V, orders) for g, vol, orders in chosen]
        prob, y, lam, f, taus, demand = build_flow_milp(n, d, regular, cands, w, sources,
                                                        symmetric, chosen_units,
                                                        options.check_deadline)
        hint = {f"y_{p}": float(p in warm) for p in cands} if warm else None
        out = throughput_outcome(solve_pulp(prob, options, hint))
        runtime = time.perf_counter() - t0
        topo = routing = model_obj = None
        if out.status.has_solution:
            topo = Topology.circulant(n, chosen_jumps(out.values, cands))
            lam_v = out.objective
            if chosen:
                rings = _chosen_rings(taus, out.values, lam_v)
            dem = np.zeros((n, n))
            for s, row in demand.items():
                for t, e in row.items():
                    dem[s, t] = _exact.expr_value(e, out.values)
            routing = _flow_routing(instance, topo, rings, n, cands, sources, symmetric,
                                    lambda s, i, c: out.values.get(f"f_{s}_{i}_{c}", 0.0), dem)
            model_obj = spu / lam_v if lam_v and lam_v > 0 else None
        return honest_result(method, instance, options, out, topo, routing, scope=scope,
                       runtime=runtime, bound=throughput_bound(out.bound, spu),
                       model_objective=model_obj, fallback=fallback,
                       notes=[f"sources={len(sources)}; rings={mode}"],
                       info={"jumps": None if topo is None else list(topo.jumps)})
    units, scale, exact = _exact.integer_units(D, 10**4)
    res = options.method.flow_resolution
    units, scale = units * res, scale / res
    model, y, U, f = build_flow_cpsat(n, d, regular, cands, units, sources, symmetric,
                                      options.check_deadline)
    out, solver = _run_cpsat(model, options, {y[p]: float(p in warm) for p in cands} if warm else None)
    runtime = time.perf_counter() - t0
    topo = routing = None
    if out.status.has_solution:
        topo = Topology.circulant(n, chosen_jumps(out.values, cands))
        routing = _flow_routing(instance, topo, rings, n, cands, sources, symmetric,
                                lambda s, i, c: float(solver.Value(f[s, i, c])), units)
    B = instance.link_bytes_per_s
    bound = None if out.bound is None else out.bound * scale / B
    restricted = Scope(topology="circulant", candidates=cands, routing="restricted",
                       detail=f"integer flows in units of {scale:.6g} bytes, default rings")
    return honest_result(method, instance, options, out, topo, routing, scope=restricted,
                   runtime=runtime, bound=bound, exact_model=False, scale=scale,
                   fallback=fallback,
                   info={"jumps": None if topo is None else list(topo.jumps)})
