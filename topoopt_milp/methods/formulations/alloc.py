"""alloc: degree-constrained integer link allocation together with routing (MILP and CP-SAT).

Decision. A symmetric integer link matrix ``x[i][j] in {0, .., cap}`` (multi-links allowed up
to ``cap = max_multiplicity``, default ``d``) with the port budget::

    sum_j x[i][j] = d   (regular instance; "<= d" otherwise)

and a routing of every commodity (MP demands, ring edges of the AllReduce rings).

MILP (throughput form). Minimising ``T = max_a load(a) / (B x_a)`` is bilinear in ``x``.
Since all loads scale with the demand, ``T`` is minimal exactly when the demand multiplier
``lambda`` that still fits under the capacities is maximal, and ``T = 1 / lambda``::

    max lambda
    s.t. sum_j f[s][v, j] - sum_j f[s][j, v] = lambda * (w_s [v = s] - w[s][v])   all s, v
         sum_s f[s][i, j] <= x[i][j]                                         all i != j
         f >= 0,  lambda <= 1

with flows ``f[s]`` aggregated by source over the arcs of the complete graph (volumes in
units ``V``, one link = capacity 1, see :mod:`._exact`), ``w[s][v]`` the demand and ``w_s``
its row sum. ``lambda <= 1`` is valid because the ideal-switch time is 1 unit. The objective
and the bound (HiGHS ``mip_dual_bound`` on ``lambda``, also on time-out) are reported in
seconds as ``V / (B lambda)``.

AllReduce rings (parameter ``rings``):

* ``"given"``: the rings (orders and shares) of
  :func:`~topoopt_milp.core.topology.default_rings`; ``"warm"``: the warm start's rings (e.g.
  TotientPerms' orders and shares). Ring edges are fixed demands.
* ``"choose"`` (default): every group may split its volume over the TotientPerms candidate orders
  ``member[(i m) mod k]``, ``gcd(m, k) = 1`` (sorted members). With shares ``sigma_c`` the
  demand ``lambda sigma_c`` is bilinear; substituting ``tau_c = lambda sigma_c`` (so
  ``sum_c tau_c = lambda``) keeps the model linear, and ``sigma_c = tau_c / lambda``.
  This ring space contains every heuristic's rings (TotientPerms orders in both directions,
  the default bidirectional ring ``m = 1, k - 1``), so the proven optimum bounds them all.

Symmetry breaking (given rings only). Nodes ``i, j`` are interchangeable when swapping them
maps the demand matrix onto itself; this is an equivalence relation (transpositions compose),
and every permutation of a class ``Q`` is then an automorphism of the traffic. For the
largest class and an anchor ``k0`` outside it (or its first node, removed from it, when
``Q`` is everything), any solution can be relabelled by sorting ``Q`` on ``x[k0][q]``, so
``x[k0][q_1] >= x[k0][q_2] >= ...`` is valid. Only one chain is added: chains for several
classes could contradict each other.

Scope (:mod:`topoopt_milp.core.scope`): every topology with the port budget (at most ``cap``
links per pair when ``max_multiplicity < d``), the ring space of the ``rings`` mode
(``choose``: the TotientPerms orders with a free split; otherwise the fixed rings) and
fractional routing: the proven optimum bounds every solution in that space.

Warm start: ``options.warm_start`` (the registry passes TopologyFinder's solution when the
caller gives none) -- its links become a MIP start / CP-SAT hint when they fit ``cap``.

CP-SAT (``solve_cpsat``): integer links, and every commodity pair ``(s, t)`` is cut into
``P = cpsat_splits`` equal pieces (default 1: unsplittable), each taking one path among the
``k_paths`` shortest paths of the complete graph ``K_n`` (ties broken by node order;
``cpsat_paths = "two_hop"`` uses all paths of at most two hops); a used path forces
``x_e >= 1`` on its links. Volumes are integer units (rounded down,
``scale`` recorded), the load of arc ``a`` is at most ``U x_a`` via the value indicators of
``x_a`` (``U`` in ``1 / (lcm(1..cap) P)`` units, exact), and ``T = U scale / B``. This is a
restricted problem (path-limited, splits in multiples of ``1/P``): its optimum can exceed the
fractional MILP optimum, its bound is valid for the restricted problem only (scope
``restricted``), its optimality is reported as ``scope_status`` and its infeasibility as
``no_solution``. Ring orders are given (``"given"`` or ``"warm"``); choosing them is the joint
family's job.

A solver stopped by its time limit without a solution returns the warm-start topology with
shortest-path routing (status ``feasible``) rather than nothing.
"""

from __future__ import annotations

import logging
import math
import time
from collections import defaultdict
from dataclasses import dataclass, replace
from itertools import combinations, permutations
from typing import TYPE_CHECKING

import numpy as np
import pulp

from ...core.backends.cpsat_backend import solve_cpsat as _run_cpsat
from ...core.backends.pulp_backend import solve_pulp
from ...core.circulant import totient_orders
from ...core.instance import Instance
from ...core.params import (
    RINGS_HELP,
    ParamError,
    Params,
    SolveOptions,
    k_paths_knob,
    knob,
    max_multiplicity_knob,
)
from ...core.result import SolveResult, Status
from ...core.scope import Scope, ring_scope
from ...core.sizes import Estimate, traffic_counts
from ...core.spec import MethodSpec
from ...core.topology import Ring, Topology, default_rings
from .. import model_data as _exact
from ..flow_paths import decompose_flow, flows_by_source
from ..model_data import expr_value, normalise_shares
from ..result_step import honest_result, warm_incumbent, warm_topology
from .ideal_probe import probe as ideal_probe

if TYPE_CHECKING:
    from ortools.sat.python import cp_model

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class LinkParams(Params):
    """Integer link matrices (alloc, joint)."""

    max_multiplicity: int | None = max_multiplicity_knob()
    symmetry: bool = knob(True, "Add valid symmetry-breaking constraints.")


@dataclass(frozen=True)
class AllocMilpParams(LinkParams):
    rings: str = knob("choose", RINGS_HELP,
                      choices=("choose", "given", "warm"))
    neighbour_rows: bool = knob(False, "alloc-milp: add the neighbourhood counting rows (a "
                                       "node's d neighbours forward its traffic; "
                                       "formulations/neighbour_rows.py).")
    probe_ideal: float = knob(0.0, "alloc-milp: share of the time limit for first looking for a "
                                   "topology at the ideal-switch time (a feasibility MILP; "
                                   "found: optimal; formulations/ideal_probe.py; 0: off).",
                              minimum=0, maximum=1)


@dataclass(frozen=True)
class PathModelParams(Params):
    """CP-SAT link + path-choice models (alloc-cpsat, joint-cpsat)."""

    k_paths: int = k_paths_knob()
    cpsat_units: int = knob(10**6, "CP-SAT: integer volume units per largest commodity.", minimum=1)
    cpsat_splits: int = knob(1, "CP-SAT: equal pieces per commodity, each on one path.", minimum=1)
    cpsat_paths: str = knob("ksp", "CP-SAT candidate paths: ksp (k shortest of K_n) or two_hop.",
                            choices=("ksp", "two_hop"))


@dataclass(frozen=True)
class AllocCpsatParams(LinkParams, PathModelParams):
    rings: str = knob("given", RINGS_HELP,
                      choices=("given", "warm"))


# -- building blocks shared with the joint family -------------------------------------------------
def link_vars_milp(prob, n: int, d: int, regular: bool, cap: int) -> dict[tuple[int, int], pulp.LpVariable]:
    """``x[i, j]`` (``i < j``) with the port budget; ``x[j, i]`` is the same variable."""
    x = {}
    for i, j in combinations(range(n), 2):
        x[i, j] = x[j, i] = prob.add_variable(f"x_{i}_{j}", 0, cap, cat=pulp.LpInteger)
    for i in range(n):
        ports = pulp.lpSum(x[i, j] for j in range(n) if j != i)
        prob += (ports == d) if regular else (ports <= d), f"ports_{i}"
    return x


def flow_vars_milp(prob, n: int, x, demand: dict[int, dict[int, object]], tick=None):
    """Source-aggregated flows on the complete graph carrying ``demand[s][t]`` (expressions)
    under the link capacities ``x``; returns ``f[s, i, j]``. ``tick()`` is called once per
    source (the deadline check of :meth:`SolveOptions.check_deadline`)."""
    f = {}
    for s, row in demand.items():
        if tick is not None:
            tick()
        for i, j in permutations(range(n), 2):
            if j != s:  # no flow ever needs to re-enter its source
                f[s, i, j] = prob.add_variable(f"f_{s}_{i}_{j}", 0)
        for v in range(n):
            if v == s:
                continue
            inn = pulp.lpSum(f[s, u, v] for u in range(n) if (s, u, v) in f)
            out = pulp.lpSum(f[s, v, u] for u in range(n) if (s, v, u) in f)
            prob += inn - out == row.get(v, 0), f"cons_{s}_{v}"
    for i, j in permutations(range(n), 2):
        if tick is not None and j == 0:
            tick()
        terms = [f[s, i, j] for s in demand if (s, i, j) in f]
        if terms:
            prob += pulp.lpSum(terms) <= x[i, j], f"cap_{i}_{j}"
    return f


def interchangeable_classes(D: np.ndarray) -> list[list[int]]:
    """Classes of nodes whose transposition maps ``D`` onto itself (module docstring)."""
    n = D.shape[0]
    tol = 1e-9 * max(1.0, float(np.abs(D).max()))
    classes: list[list[int]] = []
    for v in range(n):
        for cls in classes:
            u = cls[0]
            perm = np.arange(n)
            perm[[u, v]] = [v, u]
            if np.abs(D[np.ix_(perm, perm)] - D).max() <= tol:
                cls.append(v)
                break
        else:
            classes.append([v])
    return classes


def symmetry_chain(D: np.ndarray) -> tuple[int, list[int]] | None:
    """``(anchor, ordered class)`` for the single valid chain, or ``None``."""
    classes = interchangeable_classes(D)
    big = max(classes, key=len)
    n = D.shape[0]
    if len(big) == n:
        return (big[0], big[1:]) if n >= 3 else None
    if len(big) < 2:
        return None
    anchor = next(v for v in range(n) if v not in big)
    return anchor, big


def fixed_rings(instance: Instance, options: SolveOptions) -> list[Ring]:
    """The fixed ring orders of ``rings`` mode ``given`` (default rings) or ``warm`` (the warm
    start's rings; groups it leaves out keep their default rings)."""
    if options.method.rings == "given":
        return list(default_rings(instance))
    ws = options.warm_start
    if ws is None or ws.routing is None:
        raise ParamError("rings: 'warm' needs a warm start with rings (--warm-start SOL.json)")
    rings = list(ws.routing.rings)
    covered = {r.group for r in rings}
    return rings + [r for r in default_rings(instance) if r.group not in covered]


def link_cap(instance: Instance, options: SolveOptions) -> int:
    """The multiplicity cap ``max_multiplicity`` (default: the degree)."""
    cap = options.method.max_multiplicity
    return instance.degree if cap is None else int(cap)


def link_scope(instance: Instance | None, options: SolveOptions, ring_args: dict,
               **more) -> Scope:
    """Scope of a link-allocation model: every topology (capped multiplicity if below ``d``;
    ``instance=None``: the cap as given)."""
    if instance is None:
        cap = options.method.max_multiplicity
    else:
        cap = link_cap(instance, options)
        cap = cap if cap < instance.degree else None
    return Scope(topology="any", max_multiplicity=cap, **ring_args, **more)


def milp_scope(instance: Instance | None, options: SolveOptions) -> Scope:
    """alloc-milp's scope: every topology with the port budget; ``rings=choose`` the
    TotientPerms orders with a free split, otherwise the fixed ring set (the default rings,
    or the warm start's); fractional routing. A result states its own (with its ring set)."""
    mode = options.method.rings
    if mode == "choose":
        return link_scope(instance, options, ring_scope("choose"))
    rings = None
    if instance is not None:
        ws = options.warm_start
        rings = ws.routing.rings if mode == "warm" and ws is not None and ws.routing else \
            default_rings(instance)
    return link_scope(instance, options, ring_scope("given", rings))


# -- MILP ---------------------------------------------------------------------------------------------
def build_milp(instance: Instance, options: SolveOptions):
    """The throughput MILP of the module docstring; returns ``(prob, parts)``."""
    n, d = instance.n, instance.degree
    V = _exact.volume_unit(instance)
    mode = options.method.rings
    prob = pulp.LpProblem("alloc", pulp.LpMaximize)
    lam = prob.add_variable("lam", 0, 1)
    prob.setObjective(lam)
    x = link_vars_milp(prob, n, d, instance.regular, link_cap(instance, options))
    demand: dict[int, dict[int, object]] = defaultdict(lambda: defaultdict(float))
    # (group, order, share): a fixed float share, or the variable tau = lambda * share
    ring_terms: list[tuple[int, tuple[int, ...], pulp.LpVariable | float]] = []
    if mode == "choose":
        mp_only = _exact.demand_matrix(instance, [])
        for s, t in zip(*np.nonzero(mp_only), strict=True):
            demand[int(s)][int(t)] += float(mp_only[s, t] / V) * lam
        for g, grp in enumerate(instance.allreduce):
            if grp.edge_bytes <= 0:
                continue
            ring_terms += _exact.ring_choice(prob, lam, g, totient_orders(grp.members),
                                             grp.edge_bytes / V, demand)
        D = None
    else:
        rings = fixed_rings(instance, options)
        D = _exact.demand_matrix(instance, rings)
        for s, t in zip(*np.nonzero(D), strict=True):
            demand[int(s)][int(t)] += float(D[s, t] / V) * lam
        ring_terms = [(r.group, r.order, r.share) for r in rings]
        chain = symmetry_chain(D) if options.method.symmetry else None
        if chain:
            anchor, cls = chain
            for a, b in zip(cls, cls[1:], strict=False):
                prob += x[anchor, a] >= x[anchor, b], f"sym_{a}_{b}"
    if getattr(options.method, "neighbour_rows", False):
        from .neighbour_rows import rows_for_model

        rows_for_model(prob, instance, link_cap(instance, options), x, lam, demand, D, V)
    f = flow_vars_milp(prob, n, x, demand, options.check_deadline)
    return prob, {"lam": lam, "x": x, "f": f, "demand": demand, "rings": ring_terms,
                  "mode": mode, "V": V, "D": D}


def extract_milp(instance, options, parts, values, method, out, runtime, spu, fallback=None):
    """Topology, rings and routing from a MILP solution; the :class:`SolveResult`."""
    n = instance.n
    lam = values.get("lam", 0.0)
    L = np.zeros((n, n), dtype=np.int64)
    for i, j in combinations(range(n), 2):
        L[i, j] = L[j, i] = int(round(values.get(f"x_{i}_{j}", 0.0)))
    topo = Topology(L)
    rings = []
    chosen = False
    for g, order, tau in parts["rings"]:
        if isinstance(tau, float | int):
            rings.append(Ring(g, tuple(order), float(tau)))
            continue
        chosen = True
        share = values.get(tau.name, 0.0) / lam if lam > 0 else 0.0
        if share > 1e-9:
            rings.append(Ring(g, tuple(order), share))
    if chosen:
        rings = normalise_shares(rings)
    pair_paths = {}
    by_source = flows_by_source(parts["f"], values)
    for s, row in parts["demand"].items():
        arc = by_source.get(s, {})
        dem = {t: expr_value(e, values) for t, e in row.items()}
        for t, ps in decompose_flow(s, arc, dem, topo).items():
            pair_paths[(s, t)] = ps
    routing = _exact.routing_from_pair_paths(instance, topo, rings, pair_paths, options.seed)
    model_obj = spu / lam if lam > 0 else None
    return honest_result(method, instance, options, out, topo, routing, scope=alloc_scope(instance,
                   options, parts), runtime=runtime, bound=throughput_bound(out.bound, spu),
                   model_objective=model_obj, notes=[f"rings={parts['mode']}"], fallback=fallback)


def throughput_bound(lam_bound: float | None, spu: float) -> float | None:
    """Seconds bound ``V / (B lambda_bound)`` of a throughput model (``None`` when the solver
    gave no bound; ``0`` for a non-positive multiplier bound, which bounds nothing)."""
    if lam_bound is None:
        return None
    return 0.0 if lam_bound <= 0 else spu / min(lam_bound, 1e300)


ZERO_THROUGHPUT = 1e-12  # a multiplier this small is 0: lambda >= 1/(n d) for routable traffic


def throughput_outcome(outcome):
    """A throughput model's outcome read as the min-time problem's (alloc, joint, select).

    An incumbent with ``lambda = 0`` routes nothing (``T = V / (B lambda)`` is infinite), so
    it is no solution. When the solver proved ``lambda = 0`` optimal (status optimal, or its
    bound on ``lambda`` is 0 too), no topology of the model's space routes all the traffic --
    the instance is infeasible (e.g. ``d = 1``: every topology is a matching, and a server
    with demands to two others cannot reach both). Other outcomes pass unchanged."""
    lam = outcome.objective
    if not outcome.status.has_solution or lam is None or lam > ZERO_THROUGHPUT:
        return outcome
    proven = outcome.status is Status.OPTIMAL or (
        outcome.bound is not None and outcome.bound <= ZERO_THROUGHPUT)
    note = ("infeasible: no topology of the model routes all traffic (the largest demand "
            "multiplier is 0)" if proven else "the incumbent routes nothing (multiplier 0)")
    return replace(outcome, status=Status.INFEASIBLE if proven else Status.NO_SOLUTION,
                   message="; ".join(x for x in (outcome.message, note) if x))


def alloc_scope(instance: Instance, options: SolveOptions, parts) -> Scope:
    fixed = [Ring(g, tuple(o), float(t)) for g, o, t in parts["rings"]] \
        if parts["mode"] != "choose" else None
    return link_scope(instance, options, ring_scope(parts["mode"], fixed))


def solve_milp(instance: Instance, options: SolveOptions) -> SolveResult:
    """Integer link allocation + fractional routing as a MILP (PuLP; HiGHS or CBC)."""
    t0 = time.perf_counter()
    found, note = ideal_probe(instance, options, build_milp)
    if found is not None:
        prob, parts, out = found
    else:
        prob, parts = build_milp(instance, options)
        cap = link_cap(instance, options)
        warm = warm_topology(instance, options, cap)
        start = None
        if warm is not None:
            start = {f"x_{i}_{j}": float(warm.links[i, j])
                     for i, j in combinations(range(instance.n), 2)}
        out = throughput_outcome(solve_pulp(prob, options, start))
        if note:
            out = replace(out, message="; ".join(x for x in (out.message, note) if x))
    cap = link_cap(instance, options)
    runtime = time.perf_counter() - t0
    spu = _exact.seconds_per_unit(instance)
    rings = default_rings(instance) if parts["mode"] == "choose" else fixed_rings(instance, options)
    fallback = warm_incumbent(instance, options, rings, cap)
    if not out.status.has_solution:
        return honest_result("alloc-milp", instance, options, out, None, None,
                       scope=alloc_scope(instance, options, parts), runtime=runtime,
                       bound=throughput_bound(out.bound, spu), fallback=fallback)
    return extract_milp(instance, options, parts, out.values, "alloc-milp", out, runtime, spu,
                        fallback)


# -- CP-SAT ---------------------------------------------------------------------------------------------
def candidate_paths(n: int, s: int, t: int, k: int, mode: str = "ksp") -> list[tuple[int, ...]]:
    """Paths of ``K_n`` from ``s`` to ``t``: the ``k`` shortest (ties by node order), or every
    path of at most two hops (``mode = "two_hop"``)."""
    paths = [(s, t)] + [(s, w, t) for w in range(n) if w not in (s, t)]
    if mode == "two_hop":
        return paths
    if k > len(paths):
        paths += [(s, a, b, t) for a in range(n) for b in range(n)
                  if len({s, a, b, t}) == 4][: k - len(paths)]
    return paths[:k]


def link_vars_cpsat(m: cp_model.CpModel, n: int, d: int, regular: bool, cap: int):
    """``x[i, j]`` with the port budget, and value indicators ``z[i, j][c] <=> x = c``."""
    x, z = {}, {}
    for i, j in combinations(range(n), 2):
        var = m.NewIntVar(0, cap, f"x_{i}_{j}")
        ind = [m.NewBoolVar(f"z_{i}_{j}_{c}") for c in range(cap + 1)]
        m.AddExactlyOne(ind)
        m.Add(var == sum(c * b for c, b in enumerate(ind)))
        x[i, j] = x[j, i] = var
        z[i, j] = z[j, i] = ind
    for i in range(n):
        ports = sum(x[i, j] for j in range(n) if j != i)
        m.Add(ports == d) if regular else m.Add(ports <= d)
    return x, z


def path_loads_cpsat(m, n, x, z, items, cap, splits: int = 1, tick=None):
    """Path choice for ``items = [(key, units, paths, active)]`` (``active`` a literal or
    ``None`` = always routed); returns ``(choice, U, divisor)``. ``tick()`` is called every
    256 commodities and links (the deadline check).

    Each commodity is cut into ``splits`` equal pieces and every piece takes one candidate
    path: integer counts ``c_k`` with ``sum_k c_k = splits`` (times ``active``), and a path
    with ``c_k > 0`` needs ``x_e >= 1`` on its links (``splits = 1``: unsplittable). With
    ``load(a) = sum units * c_k`` the constraint is ``R load(a) <= U x_a`` where ``U`` counts
    ``1 / (R splits)`` units and ``R = lcm(1..cap)``: ``max load / x`` is a fraction with
    denominator at most ``cap``, so an integer ``U`` represents it exactly. The model time
    is ``U / divisor`` units with ``divisor = R splits``."""
    P = max(1, int(splits))
    R = lcm_upto(cap)
    total = sum(int(u) for _, u, _, _ in items) * R * P
    U = m.NewIntVar(0, max(total, 1), "U")
    load: dict[tuple[int, int], list] = defaultdict(list)
    choice = {}
    for k_item, (key, units, paths, active) in enumerate(items):
        if tick is not None and k_item % 256 == 0:
            tick()
        if P == 1:
            cs = [m.NewBoolVar(f"b_{key}_{k}") for k in range(len(paths))]
            used = cs
        else:
            cs = [m.NewIntVar(0, P, f"c_{key}_{k}") for k in range(len(paths))]
            used = [m.NewBoolVar(f"b_{key}_{k}") for k in range(len(paths))]
            for c, b in zip(cs, used, strict=True):
                m.Add(c <= P * b)
                m.Add(c >= 1).OnlyEnforceIf(b)
        if active is None:
            m.Add(sum(cs) == P)
        else:
            m.Add(sum(cs) == P).OnlyEnforceIf(active)
            m.Add(sum(cs) == 0).OnlyEnforceIf(active.Not())
        for c, b, path in zip(cs, used, paths, strict=True):
            for u, v in zip(path, path[1:], strict=False):
                m.Add(x[u, v] >= 1).OnlyEnforceIf(b)
                if units:
                    load[u, v].append(int(units) * c)
        choice[key] = cs
    for k_link, ((u, v), terms) in enumerate(load.items()):
        if tick is not None and k_link % 256 == 0:
            tick()
        expr = sum(terms)
        m.Add(expr == 0).OnlyEnforceIf(z[u, v][0])
        for c in range(1, cap + 1):
            m.Add(R * expr <= c * U).OnlyEnforceIf(z[u, v][c])
    m.Minimize(U)
    return choice, U, R * P


def chosen_paths(solver, counts, paths, splits: int) -> list:
    """``(path, fraction)`` of a commodity from its solved piece counts."""
    P = max(1, int(splits))
    return [(p, solver.Value(c) / P) for c, p in zip(counts, paths, strict=True) if solver.Value(c)]


def solve_link_paths_cpsat(method, m, x, z, items, cap, instance, options, fallback_rings, t0):
    """The shared second half of the link + path-choice CP-SAT models (alloc and joint): path
    loads, the warm-start hint, the solve, and the link matrix.

    Returns ``(outcome, solver, choice, divisor, splits, runtime, topology)``, or a finished
    :class:`SolveResult` (the warm start, or a failure) when CP-SAT found no solution."""
    n = instance.n
    splits = options.method.cpsat_splits
    choice, _, divisor = path_loads_cpsat(m, n, x, z, items, cap, splits, options.check_deadline)
    warm = warm_topology(instance, options, cap)
    hint = None
    if warm is not None:
        hint = {x[i, j]: float(warm.links[i, j]) for i, j in combinations(range(n), 2)}
    out, solver = _run_cpsat(m, options, hint)
    runtime = time.perf_counter() - t0
    if not out.status.has_solution:
        return honest_result(method, instance, options, out, None, None,
                       scope=path_model_scope(instance, options), runtime=runtime,
                       fallback=warm_incumbent(instance, options, fallback_rings, cap))
    L = np.zeros((n, n), dtype=np.int64)
    for i, j in combinations(range(n), 2):
        L[i, j] = L[j, i] = solver.Value(x[i, j])
    return out, solver, choice, divisor, splits, runtime, Topology(L)


def path_model_scope(instance: Instance, options: SolveOptions, scale: float | None = None,
                     rings: str = "given ring orders") -> Scope:
    """The restricted scope of a CP-SAT link + path-choice model."""
    p = options.method
    units = "" if scale is None else f"; volumes in units of {scale:.6g} bytes"
    detail = (f"{p.cpsat_splits} piece(s) per commodity, each on one of "
              f"{'the two-hop' if p.cpsat_paths == 'two_hop' else f'{p.k_paths} shortest'} paths "
              f"of K_n; {rings}{units}")
    return link_scope(instance, options, {"rings": "any"}, routing="restricted", detail=detail)


def lcm_upto(cap: int) -> int:
    """``lcm(1, .., cap)``."""
    return math.lcm(*range(1, max(cap, 1) + 1))


def solve_cpsat(instance: Instance, options: SolveOptions) -> SolveResult:
    """Integer links + one path per commodity pair among candidate paths: CP-SAT."""
    from ortools.sat.python import cp_model  # lazily: 0.5 s to import
    t0 = time.perf_counter()
    n, d = instance.n, instance.degree
    cap = link_cap(instance, options)
    rings = fixed_rings(instance, options)
    D = _exact.demand_matrix(instance, rings)
    pairs = [(int(s), int(t)) for s, t in zip(*np.nonzero(D), strict=True)]
    units, scale, exact = _exact.integer_units(np.array([D[p] for p in pairs]),
                                                options.method.cpsat_units)
    m = cp_model.CpModel()
    x, z = link_vars_cpsat(m, n, d, instance.regular, cap)
    pmode = options.method.cpsat_paths
    items = [((s, t), u, candidate_paths(n, s, t, options.method.k_paths, pmode), None)
             for (s, t), u in zip(pairs, units, strict=True)]
    solved = solve_link_paths_cpsat("alloc-cpsat", m, x, z, items, cap, instance, options,
                                    rings, t0)
    if isinstance(solved, SolveResult):
        return solved
    out, solver, choice, divisor, splits, runtime, topo = solved
    pair_paths = {key: chosen_paths(solver, choice[key], paths, splits)
                  for key, _, paths, _ in items}
    routing = _exact.routing_from_pair_paths(instance, topo, rings, pair_paths, options.seed)
    bound = None if out.bound is None else out.bound / divisor * scale / instance.link_bytes_per_s
    return honest_result("alloc-cpsat", instance, options, out, topo, routing,
                   scope=path_model_scope(instance, options, scale), runtime=runtime, bound=bound,
                   exact_model=exact, scale=scale)


def milp_memory(instance: Instance, options: SolveOptions, ring_vars: float = 0.0) -> Estimate:
    """alloc-milp (and joint-milp, with ``ring_vars`` ring variables): source-aggregated flows
    on ``K_n``, ``S (n-1)^2``, about three nonzeros per flow variable."""
    t = traffic_counts(instance)
    flows = t.sources * (instance.n - 1) ** 2
    return Estimate.model(3.0 * flows + 10.0 * ring_vars, "milp",
                          f"its S (n-1)^2 = {flows:.3g} flow variables (S = {t.sources} sources)")


def cpsat_memory(instance: Instance, options: SolveOptions, free_rings: bool = False) -> Estimate:
    """alloc-cpsat (joint-cpsat: ``free_rings``, every ordered pair of a group): ``k`` paths of
    at most 3 hops per pair plus ``(d + 2)`` value indicators per node pair."""
    n, p, t = instance.n, options.method, traffic_counts(instance)
    pairs = t.free_pairs if free_rings else t.pairs
    paths = pairs * (2 * n - 3 if p.cpsat_paths == "two_hop" else p.k_paths) * p.cpsat_splits
    links = n * (n - 1) / 2 * (instance.degree + 2)
    arcs = n * (n - 1)  # one load row per arc (with the value indicators of its link)
    return Estimate.model(4.0 * paths + 3.0 * links + 2.0 * arcs, "cpsat",
                          f"{paths:.3g} path choices ({pairs} pairs) and {links:.3g} "
                          "link-value indicators")


MILP = MethodSpec(
    "alloc-milp", "alloc", "exact", "milp", AllocMilpParams, solve_milp,
    "integer link matrix under the port budget with routing: MILP", scope=milp_scope,
    memory=milp_memory, max_n=64, warm_start="best-start")
CPSAT = MethodSpec(
    "alloc-cpsat", "alloc", "restricted", "cpsat", AllocCpsatParams, solve_cpsat,
    "integer link matrix under the port budget with path choice: CP-SAT",
    scope=lambda i, o: path_model_scope(i, o), memory=cpsat_memory, max_n=64,
    warm_start="topologyfinder")
