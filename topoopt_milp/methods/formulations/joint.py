"""joint (beyond the paper): links, routing and every AllReduce ring order together.

Extends :mod:`.alloc` by making the ring order of each AllReduce group ``g`` (``k_g`` members)
a decision: a Hamiltonian cycle on the members, with ring-edge volume
``e_g = 2 (k_g - 1)/k_g S_g`` sent from each member to its successor. Groups of two members
have a single ring (both directions) and stay fixed. Meant for small clusters (``n <= 8``).

The volume of a group may be split over ``R = rings_per_group`` rings
(default 2: TotientPerms' bidirectional ring is a ring plus its reverse at half share each;
two identical rings are one ring at full share).

MILP. For each ring ``r`` of group ``g``: arc binaries ``a[g,r][u][v]`` (``u != v`` members)
with one successor and one predecessor per member, and subtour elimination by a
single-commodity flow: the first member emits ``k_g - 1`` units, every other member absorbs
one, and ``phi[u][v] <= (k_g - 1) a[u][v]`` (a flow that reaches every member exists only on a
single cycle). In the throughput form of :mod:`.alloc` the ring demand
``lambda sigma_r e_g a[u][v]`` is trilinear; with ``tau_r = lambda sigma_r`` (``sum_r tau_r =
lambda``, ``tau_1 >= tau_2 >= ..`` since the rings of a group are interchangeable) and
``tau_r <= lambda <= 1`` (the ideal-switch bound, valid for every ring order), the McCormick
envelope of ``mu = tau_r a`` is exact for binary ``a``::

    mu <= tau_r,  mu <= a,  mu >= tau_r - (1 - a),  mu >= 0

and the demand from ``u`` to ``v`` is ``e_g / V * mu``. The successor and predecessor rows
multiplied by ``tau_r`` (``sum_v mu[u][v] = sum_v mu[v][u] = tau_r``) are valid and keep the
relaxed ring volume of every member at ``tau_r e_g``. Flows, link variables and the
port budget are those of :mod:`.alloc`; ``T_comm = V / (B lambda)``.

Symmetry: when the MP demand matrix is symmetric, reversing every ring and every flow maps a
solution onto an equally good one, so the direction of the first group with ``k >= 3`` is
fixed: the root's successor on its first ring has a smaller id than its predecessor (valid
together with the share ordering: reversal keeps the shares).

CP-SAT. Ring arcs as literals under ``AddCircuit`` (one circuit per ring over the members;
the ``R`` rings of a group carry equal shares ``1/R``),
integer links with value indicators, and for every commodity ``cpsat_splits`` pieces (default
1) each on one of the candidate paths of the complete graph (:func:`.alloc.candidate_paths`);
a ring edge is routed iff its arc literal is true. Volumes are integer units (scale recorded)
as in ``alloc-cpsat``; the optimum is that of this restricted problem (equal ring shares,
candidate paths, pieces), which can exceed the MILP optimum: its scope is restricted, and its
optimality is reported as ``scope_status``.

Scope of the MILP: every topology with the port budget, any ``R`` ring orders per group with a
free split, fractional routing (groups of two members have their one ring).

Known issue: CBC 2.10 (bundled with PuLP 3.3) stops this MILP at the root node after a
heuristic solution and claims optimality at a worse value (see
``tests/test_joint.py::test_cbc_joint_optimality_claim``); use HiGHS, the default.

Rings are returned as :class:`~topoopt_milp.core.topology.Ring` objects in the routing, so the
independent checker verifies that each is a permutation of its group.
"""

from __future__ import annotations

import logging
import time
from collections import defaultdict
from dataclasses import dataclass
from itertools import combinations, permutations

import numpy as np
import pulp

from ...core.backends.pulp_backend import solve_pulp
from ...core.instance import Instance
from ...core.params import SolveOptions, knob
from ...core.result import SolveResult
from ...core.scope import ring_scope
from ...core.sizes import Estimate
from ...core.spec import MethodSpec
from ...core.topology import Ring, Topology, default_rings
from .. import model_data as _exact
from ..flow_paths import decompose_flow, flows_by_source
from ..result_step import honest_result, warm_incumbent, warm_topology
from .alloc import (
    LinkParams,
    PathModelParams,
    candidate_paths,
    chosen_paths,
    cpsat_memory,
    flow_vars_milp,
    link_cap,
    link_scope,
    link_vars_cpsat,
    link_vars_milp,
    milp_memory,
    path_model_scope,
    solve_link_paths_cpsat,
    throughput_bound,
    throughput_outcome,
)

log = logging.getLogger(__name__)

MAX_N_WARNING = 8


@dataclass(frozen=True)
class JointMilpParams(LinkParams):
    rings_per_group: int = knob(2, "joint: ring orders per AllReduce group (free split).", minimum=1)


@dataclass(frozen=True)
class JointCpsatParams(JointMilpParams, PathModelParams):
    pass


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
    lam = prob.add_variable("lam", 0, 1)
    prob.setObjective(lam)
    x = link_vars_milp(prob, n, d, instance.regular, link_cap(instance, options))
    demand: dict[int, dict[int, object]] = defaultdict(lambda: defaultdict(float))
    mp = instance.mp_matrix()
    for s, t in zip(*np.nonzero(mp), strict=True):
        demand[int(s)][int(t)] += float(mp[s, t] / V) * lam
    free = _free_groups(instance)
    arcs: dict[tuple[int, int], dict[tuple[int, int], pulp.LpVariable]] = {}
    shares: dict[tuple[int, int], pulp.LpVariable] = {}
    for g, grp in enumerate(instance.allreduce):
        if g in free or grp.edge_bytes <= 0:
            continue
        u, v = grp.members  # two members: the ring u -> v -> u is the only one
        demand[u][v] += grp.edge_bytes / V * lam
        demand[v][u] += grp.edge_bytes / V * lam
    R = options.method.rings_per_group
    for g in free:
        grp = instance.allreduce[g]
        ms, k = list(grp.members), len(grp.members)
        root = ms[0]
        taus = [prob.add_variable(f"tau_{g}_{r}", 0, 1) for r in range(R)]
        prob += pulp.lpSum(taus) == lam, f"shares_{g}"
        for r in range(1, R):
            prob += taus[r - 1] >= taus[r], f"ring_order_{g}_{r}"  # rings are interchangeable
        for r, tau in enumerate(taus):
            a = {(u, v): prob.add_variable(f"a_{g}_{r}_{u}_{v}", cat=pulp.LpBinary)
                 for u, v in permutations(ms, 2)}
            phi = {(u, v): prob.add_variable(f"phi_{g}_{r}_{u}_{v}", 0, k - 1)
                   for u, v in permutations(ms, 2)}
            for u in ms:
                prob += pulp.lpSum(a[u, v] for v in ms if v != u) == 1, f"succ_{g}_{r}_{u}"
                prob += pulp.lpSum(a[v, u] for v in ms if v != u) == 1, f"pred_{g}_{r}_{u}"
                net = (pulp.lpSum(phi[u, v] for v in ms if v != u)
                       - pulp.lpSum(phi[v, u] for v in ms if v != u))
                prob += net == ((k - 1) if u == root else -1), f"scf_{g}_{r}_{u}"
            mu = {}
            for u, v in permutations(ms, 2):
                prob += phi[u, v] <= (k - 1) * a[u, v]
                if u < v:
                    prob += a[u, v] + a[v, u] <= 1
                mu[u, v] = prob.add_variable(f"mu_{g}_{r}_{u}_{v}", 0, 1)
                prob += mu[u, v] <= tau
                prob += mu[u, v] <= a[u, v]
                prob += mu[u, v] >= tau - 1 + a[u, v]
                demand[u][v] += grp.edge_bytes / V * mu[u, v]
            # the assignment rows times tau (valid: exactly one successor / predecessor
            # carries tau); they tie the relaxed ring volume to tau and tighten the LP bound
            for u in ms:
                prob += pulp.lpSum(mu[u, v] for v in ms if v != u) == tau, f"mu_out_{g}_{r}_{u}"
                prob += pulp.lpSum(mu[v, u] for v in ms if v != u) == tau, f"mu_in_{g}_{r}_{u}"
            arcs[g, r] = a
            shares[g, r] = tau
    if free and np.allclose(mp, mp.T) and options.method.symmetry:
        g = free[0]
        ms = instance.allreduce[g].members
        root, a = ms[0], arcs[g, 0]
        prob += (pulp.lpSum(v * a[root, v] for v in ms if v != root)
                 <= pulp.lpSum(u * a[u, root] for u in ms if u != root)), "ring_direction"
    f = flow_vars_milp(prob, n, x, demand, options.check_deadline)
    return prob, {"lam": lam, "x": x, "f": f, "arcs": arcs, "shares": shares, "demand": demand,
                  "V": V}


def _rings_from(instance: Instance, free, R: int, succ_of, share_of) -> list[Ring]:
    """Rings of every group: fixed groups keep their member order; free groups get their
    ``R`` chosen cycles with positive share (shares renormalised to sum to 1)."""
    rings = []
    for g, grp in enumerate(instance.allreduce):
        if g not in free:
            rings.append(Ring(g, tuple(grp.members), 1.0))
            continue
        got = [(_order_from_arcs(list(grp.members), succ_of(g, r)), share_of(g, r)) for r in range(R)]
        total = sum(sh for _, sh in got if sh > 1e-9)
        rings.extend(Ring(g, order, sh / total) for order, sh in got if sh > 1e-9)
    return rings


def _ring_start(instance: Instance, parts) -> dict[str, float]:
    """MIP start for the ring arcs: ring 0 ascending members, ring 1 (if any) its reverse --
    the rings of :func:`~topoopt_milp.core.topology.default_rings` -- further rings as ring 0."""
    start = {}
    for (g, r), arcs in parts["arcs"].items():
        ms = sorted(instance.allreduce[g].members)
        order = ms if r != 1 else [ms[0], *reversed(ms[1:])]
        succ = {order[i]: order[(i + 1) % len(order)] for i in range(len(order))}
        for (u, v), var in arcs.items():
            start[var.name] = 1.0 if succ[u] == v else 0.0
    return start


def solve_milp(instance: Instance, options: SolveOptions) -> SolveResult:
    """Links + fractional routing + ring orders as one MILP (PuLP; HiGHS or CBC)."""
    t0 = time.perf_counter()
    n = instance.n
    if n > MAX_N_WARNING:
        log.warning("joint-milp at n = %d: the model is meant for n <= %d", n, MAX_N_WARNING)
    prob, parts = build_milp(instance, options)
    cap = link_cap(instance, options)
    warm = warm_topology(instance, options, cap)
    start = None
    if warm is not None:
        start = {f"x_{i}_{j}": float(warm.links[i, j]) for i, j in combinations(range(n), 2)}
        start.update(_ring_start(instance, parts))
    out = throughput_outcome(solve_pulp(prob, options, start))
    runtime = time.perf_counter() - t0
    R = options.method.rings_per_group
    scope = milp_scope(instance, options)
    spu = _exact.seconds_per_unit(instance)
    fallback = warm_incumbent(instance, options, default_rings(instance), cap)
    if not out.status.has_solution:
        return honest_result("joint-milp", instance, options, out, None, None, scope=scope,
                       runtime=runtime, bound=throughput_bound(out.bound, spu), fallback=fallback)
    vals = out.values
    L = np.zeros((n, n), dtype=np.int64)
    for i, j in combinations(range(n), 2):
        L[i, j] = L[j, i] = int(round(vals.get(f"x_{i}_{j}", 0.0)))
    topo = Topology(L)

    def succ_of(g, r):
        return {u: v for (u, v), var in parts["arcs"][g, r].items() if vals.get(var.name, 0.0) > 0.5}

    rings = _rings_from(instance, _free_groups(instance), R, succ_of,
                        lambda g, r: vals.get(parts["shares"][g, r].name, 0.0))
    lam = vals.get("lam", 0.0)
    pair_paths = {}
    by_source = flows_by_source(parts["f"], vals)
    for s, row in parts["demand"].items():
        arc = by_source.get(s, {})
        dem = {t: float(sum(c * vals.get(v.name, 0.0) for v, c in e.items()) + e.constant)
               if not isinstance(e, float) else e for t, e in row.items()}
        pair_paths.update({(s, t): ps for t, ps in decompose_flow(s, arc, dem, topo).items()})
    routing = _exact.routing_from_pair_paths(instance, topo, rings, pair_paths, options.seed)
    model_obj = spu / lam if lam > 0 else None
    return honest_result("joint-milp", instance, options, out, topo, routing, scope=scope,
                   runtime=runtime, bound=throughput_bound(out.bound, spu),
                   model_objective=model_obj, notes=["rings chosen"], fallback=fallback)


def solve_cpsat(instance: Instance, options: SolveOptions) -> SolveResult:
    """Links + ring orders (AddCircuit) + one candidate path per commodity: CP-SAT."""
    from ortools.sat.python import cp_model  # lazily: 0.5 s to import
    t0 = time.perf_counter()
    n, d = instance.n, instance.degree
    cap = link_cap(instance, options)
    free = _free_groups(instance)
    mp = instance.mp_matrix()
    mp_pairs = [(int(s), int(t)) for s, t in zip(*np.nonzero(mp), strict=True)]
    R = options.method.rings_per_group
    k_paths = options.method.k_paths
    # free groups: R rings of equal share 1/R (identical rings allowed: one ring, full share)
    vols = [mp[p] for p in mp_pairs] + [grp.edge_bytes / (R if g in free else 1)
                                        for g, grp in enumerate(instance.allreduce)]
    units, scale, exact = _exact.integer_units(np.array(vols, dtype=float),
                                                options.method.cpsat_units)
    mp_units, ar_units = units[: len(mp_pairs)], units[len(mp_pairs):]
    m = cp_model.CpModel()
    x, z = link_vars_cpsat(m, n, d, instance.regular, cap)
    pmode = options.method.cpsat_paths
    items = [(("mp", s, t), u, candidate_paths(n, s, t, k_paths, pmode), None)
             for (s, t), u in zip(mp_pairs, mp_units, strict=True)]
    arcs: dict[tuple[int, int], dict[tuple[int, int], object]] = {}
    for g, grp in enumerate(instance.allreduce):
        ms = list(grp.members)
        if grp.edge_bytes <= 0:
            continue
        if g not in free:
            for u, v in ((ms[0], ms[1]), (ms[1], ms[0])):
                items.append((("ar", g, u, v), ar_units[g], candidate_paths(n, u, v, k_paths,
                                                                             pmode), None))
            continue
        idx = {u: i for i, u in enumerate(ms)}
        for r in range(R):
            lits = {(u, v): m.NewBoolVar(f"a_{g}_{r}_{u}_{v}") for u, v in permutations(ms, 2)}
            m.AddCircuit([(idx[u], idx[v], lit) for (u, v), lit in lits.items()])
            arcs[g, r] = lits
            for (u, v), lit in lits.items():
                items.append((("ar", g, u, v, r), ar_units[g],
                              candidate_paths(n, u, v, k_paths, pmode), lit))
    if free and np.allclose(mp, mp.T) and options.method.symmetry:
        g = free[0]
        ms = instance.allreduce[g].members
        root, lits = ms[0], arcs[g, 0]
        m.Add(sum(v * lits[root, v] for v in ms if v != root)
              <= sum(u * lits[u, root] for u in ms if u != root))
    solved = solve_link_paths_cpsat("joint-cpsat", m, x, z, items, cap, instance, options,
                                    default_rings(instance), t0)
    if isinstance(solved, SolveResult):
        return solved
    out, solver, choice, divisor, splits, runtime, topo = solved

    def succ_of(g, r):
        return {u: v for (u, v), lit in arcs[g, r].items() if solver.Value(lit)}

    rings = _rings_from(instance, free, R, succ_of, lambda g, r: 1.0 / R)
    pair_paths, comm_paths = {}, defaultdict(list)
    for key, _, paths, active in items:
        if active is not None and not solver.Value(active):
            continue
        split = chosen_paths(solver, choice[key], paths, splits)
        if key[0] == "mp":
            pair_paths[key[1:]] = split
        else:
            comm_paths[key[:4]].append(split)
    # identical arcs of several equal-share rings are one commodity key: average their splits
    merged = {}
    for key, splits_list in comm_paths.items():
        acc: dict = defaultdict(float)
        for split in splits_list:
            for path, fr in split:
                acc[path] += fr / len(splits_list)
        merged[key] = sorted(acc.items())
    comm_paths = merged
    routing = _exact.routing_from_pair_paths(instance, topo, rings, pair_paths, options.seed,
                                             comm_paths)
    bound = None if out.bound is None else out.bound / divisor * scale / instance.link_bytes_per_s
    return honest_result("joint-cpsat", instance, options, out, topo, routing,
                   scope=path_model_scope(instance, options, scale,
                                          f"{R} ring order(s) per group at equal shares"),
                   runtime=runtime, bound=bound, exact_model=exact, scale=scale,
                   notes=["rings by AddCircuit"])


def milp_scope(instance: Instance | None, options: SolveOptions):
    """joint-milp: every topology with the port budget; any ``rings_per_group`` ring orders
    per group, free split; fractional routing."""
    return link_scope(instance, options,
                      ring_scope("orders", rings_per_group=options.method.rings_per_group))


def _milp_memory(instance: Instance, options: SolveOptions) -> Estimate:
    R = options.method.rings_per_group
    rings = sum(R * len(g.members) ** 2 for g in instance.allreduce if g.bytes > 0)
    return milp_memory(instance, options, rings)


MILP = MethodSpec(
    "joint-milp", "joint", "exact", "milp", JointMilpParams, solve_milp,
    "links + routing + AllReduce ring orders: MILP with subtour elimination",
    scope=milp_scope, memory=_milp_memory, max_n=32, warm_start="best-start")
CPSAT = MethodSpec(
    "joint-cpsat", "joint", "restricted", "cpsat", JointCpsatParams, solve_cpsat,
    "links + routing + AllReduce ring orders: CP-SAT with circuit constraints",
    scope=lambda i, o: path_model_scope(i, o, None, f"{o.method.rings_per_group} ring order(s) "
                                                    "per group at equal shares"),
    memory=lambda i, o: cpsat_memory(i, o, free_rings=True), max_n=32,
    warm_start="topologyfinder")
