"""joint (beyond the paper): links, routing and every AllReduce ring order together.

Extends :mod:`.alloc` by making the ring order of each AllReduce group ``g`` (``k_g`` members)
a decision: a Hamiltonian cycle on the members, with ring-edge volume
``e_g = 2 (k_g - 1)/k_g S_g`` sent from each member to its successor. Groups of two members
have a single ring (both directions) and stay fixed. Meant for small clusters (``n <= 8``).

MILP. Arc binaries ``a[g][u][v]`` (``u != v`` members) with one successor and one predecessor
per member, and subtour elimination by a single-commodity flow: the first member ``r`` emits
``k_g - 1`` units, every other member absorbs one, and ``phi[g][u][v] <= (k_g - 1) a[g][u][v]``
(a flow that reaches every member exists only on a single cycle). In the throughput form of
:mod:`.alloc` the ring demand ``lambda e_g a[g][u][v]`` is bilinear; with ``lambda <= 1``
(the ideal-switch bound, valid for every ring order) the McCormick envelope of
``mu = lambda a`` is exact for binary ``a``::

    mu <= lambda,  mu <= a,  mu >= lambda - (1 - a),  mu >= 0

and the demand from ``u`` to ``v`` is ``e_g / V * mu[g][u][v]``. Flows, link variables and the
port budget are those of :mod:`.alloc`; ``T_comm = V / (B lambda)``.

Symmetry: when the MP demand matrix is symmetric, reversing every ring and every flow maps a
solution onto an equally good one, so the direction of the first group with ``k >= 3`` is
fixed: its root's successor has a smaller id than its predecessor.

CP-SAT. Ring arcs as literals under ``AddCircuit`` (one circuit per group over its members),
integer links with value indicators, and one path per commodity among the candidate paths of
the complete graph (:func:`.alloc.candidate_paths`); a ring edge's path is chosen iff its arc
literal is true. Volumes are integer units (scale recorded) as in ``alloc-cpsat``; the
optimum is that of the unsplittable, path-restricted problem.

Rings are returned as :class:`~topoopt_milp.topology.Ring` objects in the routing, so the
independent checker verifies that each is a permutation of its group.
"""

from __future__ import annotations

import logging
import time
from collections import defaultdict
from itertools import combinations, permutations

import numpy as np
import pulp
from ortools.sat.python import cp_model

from ..backends.cpsat_backend import solve_cpsat as _run_cpsat
from ..backends.pulp_backend import solve_pulp
from ..instance import Instance
from ..result import SolveOptions, SolveResult
from ..topology import Ring, Topology
from . import _exact
from .alloc import (
    _cap,
    candidate_paths,
    flow_vars_milp,
    lcm_upto,
    link_vars_cpsat,
    link_vars_milp,
    path_loads_cpsat,
    warm_topology,
)

log = logging.getLogger(__name__)

MAX_N_WARNING = 8


def _free_groups(instance: Instance) -> list[int]:
    """Groups whose ring order is a decision (at least 3 members and some volume)."""
    return [g for g, grp in enumerate(instance.allreduce) if len(grp.members) >= 3 and grp.edge_bytes > 0]


def _order_from_arcs(members, succ: dict[int, int]) -> tuple[int, ...]:
    order = [members[0]]
    while len(order) < len(members):
        order.append(succ[order[-1]])
    return tuple(order)


def build_milp(instance: Instance, options: SolveOptions):
    """The joint MILP of the module docstring; returns ``(prob, parts)``."""
    n, d = instance.n, instance.degree
    V = _exact.volume_unit(instance)
    prob = pulp.LpProblem("joint", pulp.LpMaximize)
    lam = pulp.LpVariable("lam", 0, 1)
    prob.setObjective(lam)
    x = link_vars_milp(prob, n, d, instance.regular, _cap(instance, options))
    demand: dict[int, dict[int, object]] = defaultdict(lambda: defaultdict(float))
    mp = instance.mp_matrix()
    for s, t in zip(*np.nonzero(mp), strict=True):
        demand[int(s)][int(t)] += float(mp[s, t] / V) * lam
    free = _free_groups(instance)
    arcs: dict[int, dict[tuple[int, int], pulp.LpVariable]] = {}
    for g, grp in enumerate(instance.allreduce):
        if g in free or grp.edge_bytes <= 0:
            continue
        u, v = grp.members  # two members: the ring u -> v -> u is the only one
        demand[u][v] += grp.edge_bytes / V * lam
        demand[v][u] += grp.edge_bytes / V * lam
    for g in free:
        grp = instance.allreduce[g]
        ms, k = list(grp.members), len(grp.members)
        a = {(u, v): pulp.LpVariable(f"a_{g}_{u}_{v}", cat=pulp.LpBinary) for u, v in permutations(ms, 2)}
        phi = {(u, v): pulp.LpVariable(f"phi_{g}_{u}_{v}", 0, k - 1) for u, v in permutations(ms, 2)}
        root = ms[0]
        for u in ms:
            prob += pulp.lpSum(a[u, v] for v in ms if v != u) == 1, f"succ_{g}_{u}"
            prob += pulp.lpSum(a[v, u] for v in ms if v != u) == 1, f"pred_{g}_{u}"
            net = pulp.lpSum(phi[u, v] for v in ms if v != u) - pulp.lpSum(phi[v, u] for v in ms if v != u)
            prob += net == ((k - 1) if u == root else -1), f"scf_{g}_{u}"
        for u, v in permutations(ms, 2):
            prob += phi[u, v] <= (k - 1) * a[u, v]
            if u < v:
                prob += a[u, v] + a[v, u] <= 1
            mu = pulp.LpVariable(f"mu_{g}_{u}_{v}", 0, 1)
            prob += mu <= lam
            prob += mu <= a[u, v]
            prob += mu >= lam - 1 + a[u, v]
            demand[u][v] += grp.edge_bytes / V * mu
        arcs[g] = a
    if free and np.allclose(mp, mp.T) and options.extra.get("symmetry", True):
        g = free[0]
        ms = instance.allreduce[g].members
        root, a = ms[0], arcs[g]
        prob += (pulp.lpSum(v * a[root, v] for v in ms if v != root)
                 <= pulp.lpSum(u * a[u, root] for u in ms if u != root)), "ring_direction"
    f = flow_vars_milp(prob, n, x, demand)
    return prob, {"lam": lam, "x": x, "f": f, "arcs": arcs, "demand": demand, "V": V}


def _rings_from(instance: Instance, succ_of) -> list[Ring]:
    rings = []
    for g, grp in enumerate(instance.allreduce):
        succ = succ_of(g)
        order = tuple(grp.members) if succ is None else _order_from_arcs(list(grp.members), succ)
        rings.append(Ring(g, order, 1.0))
    return rings


def solve_milp(instance: Instance, options: SolveOptions) -> SolveResult:
    """Links + fractional routing + ring orders as one MILP (PuLP; HiGHS or CBC)."""
    t0 = time.perf_counter()
    n = instance.n
    if n > MAX_N_WARNING:
        log.warning("joint-milp at n = %d: the model is meant for n <= %d", n, MAX_N_WARNING)
    prob, parts = build_milp(instance, options)
    warm = warm_topology(instance, options, _cap(instance, options))
    start = None
    if warm is not None:
        start = {f"x_{i}_{j}": float(warm.links[i, j]) for i, j in combinations(range(n), 2)}
    out = solve_pulp(prob, options, start)
    runtime = time.perf_counter() - t0
    if not out.status.has_solution:
        return _exact.failed_result("joint-milp", options, out, runtime)
    vals = out.values
    L = np.zeros((n, n), dtype=np.int64)
    for i, j in combinations(range(n), 2):
        L[i, j] = L[j, i] = int(round(vals.get(f"x_{i}_{j}", 0.0)))
    topo = Topology(L)

    def succ_of(g):
        if g not in parts["arcs"]:
            return None
        return {u: v for (u, v), var in parts["arcs"][g].items() if vals.get(var.name, 0.0) > 0.5}

    rings = _rings_from(instance, succ_of)
    lam = vals.get("lam", 0.0)
    pair_paths = {}
    for s, row in parts["demand"].items():
        arc = {(i, j): vals.get(v.name, 0.0) for (ss, i, j), v in parts["f"].items() if ss == s}
        dem = {t: float(sum(c * vals.get(v.name, 0.0) for v, c in e.items()) + e.constant)
               if not isinstance(e, float) else e for t, e in row.items()}
        pair_paths.update({(s, t): ps for t, ps in _exact.decompose_source(s, arc, dem).items()})
    routing = _exact.routing_from_pair_paths(instance, topo, rings, pair_paths, options.seed)
    spu = _exact.seconds_per_unit(instance)
    model_obj = spu / lam if lam > 0 else None
    bound = None if out.bound is None else (0.0 if out.bound <= 0 else spu / out.bound)
    return _exact.comm_time_result("joint-milp", instance, options, out, topo, routing, model_obj,
                                   bound, runtime, message="rings chosen")


def solve_cpsat(instance: Instance, options: SolveOptions) -> SolveResult:
    """Links + ring orders (AddCircuit) + one candidate path per commodity: CP-SAT."""
    t0 = time.perf_counter()
    n, d = instance.n, instance.degree
    cap = _cap(instance, options)
    free = _free_groups(instance)
    mp = instance.mp_matrix()
    mp_pairs = [(int(s), int(t)) for s, t in zip(*np.nonzero(mp), strict=True)]
    vols = [mp[p] for p in mp_pairs] + [grp.edge_bytes for grp in instance.allreduce]
    units, scale, exact = _exact.integer_units(np.array(vols, dtype=float), 10**5)
    mp_units, ar_units = units[: len(mp_pairs)], units[len(mp_pairs):]
    m = cp_model.CpModel()
    x, z = link_vars_cpsat(m, n, d, instance.regular, cap)
    pmode = options.extra.get("cpsat_paths", "ksp")
    items = [(("mp", s, t), u, candidate_paths(n, s, t, options.k_paths, pmode), None)
             for (s, t), u in zip(mp_pairs, mp_units, strict=True)]
    arcs: dict[int, dict[tuple[int, int], object]] = {}
    for g, grp in enumerate(instance.allreduce):
        ms = list(grp.members)
        if grp.edge_bytes <= 0:
            continue
        if g not in free:
            for u, v in ((ms[0], ms[1]), (ms[1], ms[0])):
                items.append((("ar", g, u, v), ar_units[g], candidate_paths(n, u, v, options.k_paths,
                                                                             pmode), None))
            continue
        lits = {(u, v): m.NewBoolVar(f"a_{g}_{u}_{v}") for u, v in permutations(ms, 2)}
        idx = {u: i for i, u in enumerate(ms)}
        m.AddCircuit([(idx[u], idx[v], lit) for (u, v), lit in lits.items()])
        arcs[g] = lits
        for (u, v), lit in lits.items():
            items.append((("ar", g, u, v), ar_units[g], candidate_paths(n, u, v, options.k_paths, pmode),
                          lit))
    if free and np.allclose(mp, mp.T) and options.extra.get("symmetry", True):
        g = free[0]
        ms = instance.allreduce[g].members
        root, lits = ms[0], arcs[g]
        m.Add(sum(v * lits[root, v] for v in ms if v != root)
              <= sum(u * lits[u, root] for u in ms if u != root))
    choice, _ = path_loads_cpsat(m, n, x, z, items, cap)
    warm = warm_topology(instance, options, cap)
    hint = None
    if warm is not None:
        hint = {x[i, j]: float(warm.links[i, j]) for i, j in combinations(range(n), 2)}
    out, solver = _run_cpsat(m, options, hint)
    runtime = time.perf_counter() - t0
    if not out.status.has_solution:
        return _exact.failed_result("joint-cpsat", options, out, runtime, restricted=True)
    L = np.zeros((n, n), dtype=np.int64)
    for i, j in combinations(range(n), 2):
        L[i, j] = L[j, i] = solver.Value(x[i, j])
    topo = Topology(L)

    def succ_of(g):
        if g not in arcs:
            return None
        return {u: v for (u, v), lit in arcs[g].items() if solver.Value(lit)}

    rings = _rings_from(instance, succ_of)
    pair_paths, comm_paths = {}, {}
    for key, _, paths, active in items:
        if active is not None and not solver.Value(active):
            continue
        k = next((k for k, b in enumerate(choice[key]) if solver.Value(b)), None)
        if k is None:
            continue
        if key[0] == "mp":
            pair_paths[key[1:]] = [(paths[k], 1.0)]
        else:
            comm_paths[key] = [(paths[k], 1.0)]
    routing = _exact.routing_from_pair_paths(instance, topo, rings, pair_paths, options.seed,
                                             comm_paths)
    bound = None if out.bound is None else out.bound / lcm_upto(cap) * scale / instance.link_bytes_per_s
    return _exact.comm_time_result(
        "joint-cpsat", instance, options, out, topo, routing, None, bound, runtime, scale=scale,
        exact_model=exact, message=f"rings by AddCircuit; unsplittable over {pmode} candidate paths; "
        f"units of {scale:.6g} bytes; bound valid for that model")
