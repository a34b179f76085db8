"""select: choose the ring jumps of a circulant topology exactly (MILP and CP-SAT).

Decision. A set ``J`` of jumps ``p`` from a candidate set ``P`` (parameter ``candidates``:
``all`` = ``1..floor(n/2)``; ``coprime`` = the TotientPerms space of the whole cluster, the
units of ``Z_n`` folded to ``p <= n/2`` because ``p`` and ``n-p`` are the same ring, plus
``n/2`` when ``d`` is odd, as TotientPerms adds it). Jump ``p`` links ``i -- i+p`` for every
``i``; it uses ``c_p = 2`` ports per node, except ``p = n/2`` (a perfect matching) with
``c_p = 1``. With binaries ``y_p``::

    sum_p c_p y_p = d        (regular instance; "<= d" otherwise)

Circulants are vertex-transitive and distances are symmetric, so the hop distance from ``s``
to ``t`` is ``dist(v)`` of the residue ``v = t - s``, and ``dist(v) = dist(-v)``: the models
work on the residue classes ``v in {0, .., floor(n/2)}`` (class weight ``mu_v = 1`` for
``v = 0`` or ``2v = n``, else 2).

Reach model (objectives ``diameter`` and ``total_hops``). ``r[h][v] = 1`` may hold only if
``v`` is reachable within ``h`` hops; ``r[0][v] = [v = 0]`` and for ``h >= 1``, ``v != 0``::

    r[h][v] <= r[h-1][v] + sum_p q[h][v][p]
    q[h][v][p] <= y_p,   q[h][v][p] <= r[h-1][v-p] + r[h-1][v+p]     (0 <= q <= 1)
    r[h-1][v] <= r[h][v]                                             (reach is monotone)
    sum_v mu_v r[h][v] <= Ball(m, h)                                 (valid counting cut)

``Ball(m, h) = sum_i 2^i C(m, i) C(h, i)`` counts the points of ``Z^m`` within L1 radius
``h``; the residues within ``h`` hops are an image of that ball, so the cut is valid, and it
is the Moore-type bound that makes the LP relaxation tight (for ``m = 2`` it gives the
Boesch-Wang value ``ceil((sqrt(2n-1)-1)/2)`` directly). When ``n`` is even and every
candidate is odd (``coprime`` on even ``n``), a residue's parity equals the parity of every
walk to it, so the cut also holds per parity class with the lattice points of even / odd
norm (e.g. ``n = 128, d = 8``: 64 even residues but only 33 even points within 3 hops, so
diameter >= 4 follows from the LP). ``m`` is the largest number of jumps
the port budget allows. Any model solution has ``r`` at most the true reachability, and the
true reachability is a model solution, so:

* ``diameter``: ``w[h] <= r[h][v]`` for all ``v``, ``w[H] = 1``, minimise
  ``sum_{h<H} (1 - w[h])`` = the first ``h`` reaching everything. ``H`` is the diameter of the
  best starting set (warm start, TotientPerms, seeded random samples): a valid upper bound.
* ``total_hops``: ``r[H][v] = 1`` (connected), minimise
  ``sum_v W_v sum_{h<H} (1 - r[h][v]) = sum_v W_v dist(v)`` with ``W_v`` the bytes whose
  residue is ``+-v`` (MP demands and the ring edges of the default ring orders). ``H``: every
  layer ``1..D-1`` of a connected vertex-transitive graph of degree >= 2 has >= 2 vertices
  (a single vertex would be a cut vertex), so ``D <= floor(n/2)`` and
  ``sum_v W_v dist(v) >= W_min D^2``; with an incumbent of value ``U``, ``D <= sqrt(U/W_min)``.

Multiplier symmetry. For a unit ``a`` of ``Z_n`` the map ``v -> a v`` is an isomorphism from
the circulant with jumps ``J`` onto the one with jumps ``aJ`` and maps the candidate sets onto
themselves (``n/2`` to ``n/2``), preserving port counts. If ``J`` contains a unit ``u``,
``u^-1 J`` contains 1 and has the same diameter; its byte-hops are the same when the residue
weights are invariant under all units (checked numerically). Every feasible ``J`` contains a
unit when the candidates are ``coprime``, and, for ``all``, when ``n`` is a prime power (a
connected circulant needs a jump prime to ``n``). In those cases ``y_1 = 1`` is imposed
(``symmetry = False`` turns it off).

Flow model (objective ``comm_time``): see :mod:`.select_flow` (maximum concurrent flow with
capacities switched by ``y``, AllReduce ring splits chosen by the MILP by default).

Every result carries the chosen circulant (``Topology.jumps``) and a routing: the model's
flows (comm_time) or the parameter ``routing`` (shortest by default; diameter, total_hops;
``info`` gets ``jumps``, ``diameter`` and ``avg_hops``). A run stopped without a solution
returns its starting set (the warm start -- the registry passes TotientPerms' solution -- or
the best random sample) with status ``feasible``.

Scope: circulants whose distinct jumps come from the candidate set. Rings: ``diameter`` does
not depend on them (any rings); ``total_hops`` weighs the default rings' edges (those fixed
rings); ``comm_time`` uses the ring space of the ``rings`` mode (see :mod:`.select_flow`).
The hop objectives weight residues with the rings of
:func:`~topoopt_milp.core.topology.default_rings`; ``comm_time`` results carry the rings the model
used (chosen or given) in their routing.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pulp

from ...core.backends.cpsat_backend import solve_cpsat as _run_cpsat
from ...core.backends.pulp_backend import solve_pulp
from ...core.circulant import candidates, port_cost, rep, residue_distances
from ...core.errors import InputError
from ...core.evaluate import avg_hops
from ...core.instance import Instance
from ...core.params import RINGS_HELP, Params, SolveOptions, knob
from ...core.result import SolveResult
from ...core.routing import route
from ...core.scope import Scope, ring_scope
from ...core.sizes import Estimate, traffic_counts
from ...core.spec import MethodSpec
from ...core.topology import Topology, default_rings
from .. import model_data as _exact
from ..result_step import honest_result
from .select_flow import chosen_jumps, solve_flow

log = logging.getLogger(__name__)

OBJECTIVES = ("diameter", "total_hops", "comm_time")


@dataclass(frozen=True)
class SelectParams(Params):
    """select: ring jumps of a circulant."""

    objective: str = knob("comm_time", "select objective: comm_time (with fractional routing), "
                                       "diameter or total_hops.",
                          choices=("comm_time", "diameter", "total_hops"))
    candidates: str = knob("coprime", "select candidate jumps: coprime (TotientPerms) or all 1..n/2.",
                           choices=("coprime", "all"))
    rings: str = knob("choose", RINGS_HELP, choices=("choose", "given"))
    symmetry: bool = knob(True, "Add valid symmetry-breaking constraints.")
    routing: str | None = knob(None, "Routing returned with a hop objective (default shortest).",
                               choices=("shortest", "ecmp", "coin-change"))


@dataclass(frozen=True)
class SelectCpsatParams(SelectParams):
    rings: str = knob("given", RINGS_HELP,
                      choices=("given",))
    flow_resolution: int = knob(12, "CP-SAT select: integer flow units per smallest demand unit.",
                                minimum=1)


def bound_scope(instance: Instance | None, options: SolveOptions, backend: str = "milp") -> Scope:
    """The bound's scope: circulants with jumps from the candidate set; ring orders by
    objective (diameter: any; total_hops and ``rings=given``: the default rings; comm_time
    with ``rings=choose``: TotientPerms orders, free split); CP-SAT's comm_time model is
    restricted (integer flows, default rings)."""
    p = options.method
    cands = None if instance is None else candidate_jumps(instance.n, instance.degree,
                                                          p.candidates)
    rings = None if instance is None else default_rings(instance)
    if p.objective == "comm_time" and backend == "cpsat":
        return Scope(topology="circulant", candidates=cands, routing="restricted",
                     detail="integer flows, default rings")
    if p.objective == "diameter":
        return Scope(topology="circulant", candidates=cands, **ring_scope("any"))
    mode = "choose" if p.objective == "comm_time" and p.rings == "choose" else "given"
    return Scope(topology="circulant", candidates=cands, **ring_scope(mode, rings))
N_RANDOM_INCUMBENTS = 200


# -- candidate sets and cheap evaluation ---------------------------------------------------------
def candidate_jumps(n: int, d: int, mode: str) -> list[int]:
    """Ring jumps the model may choose (each ring once: ``p <= n/2``)."""
    if mode == "all":
        return list(range(1, n // 2 + 1))
    if mode == "coprime":
        cands = sorted({min(p % n, n - p % n) for p in candidates(n, n) if p % n})
        if d % 2 and n % 2 == 0 and n // 2 not in cands:
            cands.append(n // 2)
        return cands
    raise InputError(f"candidates: unknown candidate set {mode!r} (known: coprime, all)")


def ball(m: int, h: int) -> int:
    """Points of ``Z^m`` within L1 distance ``h`` of the origin."""
    return sum(2**i * math.comb(m, i) * math.comb(h, i) for i in range(min(m, h) + 1))


def ball_parity(m: int, h: int, parity: int) -> int:
    """Points of ``Z^m`` within L1 distance ``h`` whose L1 norm has the given parity."""
    return sum(ball(m, j) - (ball(m, j - 1) if j else 0) for j in range(parity, h + 1, 2))


def parity_cuts(n: int, cands: list[int]) -> bool:
    """Whether every candidate jump is odd on an even ``n``: then a residue's parity is the
    parity of the number of hops to it, and the counting cut applies per parity class."""
    return n % 2 == 0 and all(p % 2 for p in cands)


def residue_weights(instance: Instance) -> np.ndarray:
    """``W[v]``: bytes of all commodities (default rings) from ``s`` to ``s + v``."""
    D = _exact.demand_matrix(instance, default_rings(instance))
    n = instance.n
    W = np.zeros(n)
    for s in range(n):
        W += np.roll(D[s], -s)
    return W


def _sym_weights(W: np.ndarray) -> np.ndarray:
    n = len(W)
    return np.array([W[v] + (W[(n - v) % n] if 2 * v % n else 0.0) for v in range(n // 2 + 1)])


def _feasible(n: int, d: int, regular: bool, jumps: Sequence[int]) -> bool:
    ports = sum(port_cost(n, p) for p in jumps)
    return ports == d if regular else 0 < ports <= d


def _score(n: int, jumps, objective: str, W: np.ndarray) -> float:
    dist = residue_distances(n, jumps)
    if objective == "diameter":
        return float(dist.max())
    return float(np.dot(W, np.where(W > 0, dist, 0.0))) if np.isfinite(dist).all() else math.inf


def start_jumps(instance: Instance, cands: list[int], warm=None) -> list[tuple[int, ...]]:
    """Feasible jump sets to start from: the warm start's circulant (``warm``, a
    :class:`SolveResult`, if its topology is a circulant over these candidates)."""
    n, d, regular = instance.n, instance.degree, instance.regular
    sets = []
    topo = None if warm is None else warm.topology
    if topo is not None and topo.jumps and topo.n == n:
        js = tuple(sorted({rep(n, p) for p in topo.jumps}))
        if (Topology.circulant(n, js).links == topo.links).all():
            sets.append(js)
    return [js for js in sets if set(js) <= set(cands) and _feasible(n, d, regular, js)]


def heuristic_jumps(instance: Instance, cands: list[int], objective: str, seed: int, warm=None):
    """Best of the start sets (warm start, TotientPerms) and seeded random feasible jump sets
    under a combinatorial objective (``diameter`` or ``total_hops``); ``None`` if none is
    feasible."""
    n, d, regular = instance.n, instance.degree, instance.regular
    pool: list[tuple[int, ...]] = start_jumps(instance, cands, warm)
    rng = np.random.default_rng(seed)
    half = [p for p in cands if 2 * p == n]
    full = [p for p in cands if 2 * p != n]
    for _ in range(N_RANDOM_INCUMBENTS):
        use_half = bool(half) and (d % 2 == 1 or (not regular and rng.random() < 0.5))
        k = (d - (1 if use_half else 0)) // 2
        if k > len(full):
            continue
        pick = tuple(sorted(int(p) for p in rng.choice(full, size=k, replace=False)))
        js = pick + ((half[0],) if use_half else ())
        if _feasible(n, d, regular, js):
            pool.append(js)
    W = residue_weights(instance)
    scored = [(_score(n, js, objective, W), js) for js in dict.fromkeys(pool)]
    scored = [s for s in scored if math.isfinite(s[0])]
    return min(scored) if scored else None


def _with_unit_one(n: int, jumps) -> tuple[int, ...]:
    """``u^-1 J`` for the first unit ``u`` in ``J`` (an isomorphic circulant containing 1)."""
    u = next(p for p in jumps if math.gcd(p, n) == 1)
    inv = pow(u, -1, n)
    return tuple(sorted(rep(n, inv * p) for p in jumps))


def _mult(n: int, v: int) -> int:
    return 1 if v == 0 or 2 * v == n else 2


def _max_jumps(n: int, d: int, cands: list[int]) -> int:
    """Most jumps a port budget of ``d`` admits: ``k`` full rings (2 ports) plus the matching."""
    k = min(sum(1 for p in cands if 2 * p != n), d // 2)
    half = any(2 * p == n for p in cands) and 2 * k + 1 <= d
    return k + int(half)


def _horizon(instance: Instance, objective: str, cands, seed: int, warm=None):
    """Largest hop layer ``H`` the reach model needs (see module docstring) and the incumbent."""
    n = instance.n
    inc = heuristic_jumps(instance, cands, objective, seed, warm)
    if objective == "diameter":
        return (int(inc[0]) if inc else n // 2), (inc[1] if inc else None)
    H = max(1, n // 2)
    # per residue (not per class): sum_{v != 0} W_v dist(v) >= W_min * D^2
    W = residue_weights(instance)[1:]
    wmin = float(W.min()) if W.size else 0.0
    if inc and wmin > 0:
        H = min(H, int(math.floor(math.sqrt(inc[0] / wmin) + 1e-9)))
    return max(H, 1), (inc[1] if inc else None)


def fix_unit_jump(n: int, cands: list[int], mode: str, objective: str, W: np.ndarray) -> bool:
    """Whether ``y_1 = 1`` may be imposed (multiplier symmetry, see the module docstring)."""
    if 1 not in cands or objective not in ("diameter", "total_hops"):
        return False
    units = [a for a in range(1, n) if math.gcd(a, n) == 1]
    if objective == "total_hops":
        tol = 1e-9 * max(1.0, float(np.abs(W).max()))
        idx = np.arange(n)
        if any(np.abs(W[(a * idx) % n] - W).max() > tol for a in units):
            return False
    if mode == "coprime":
        return True
    # "all": a connected circulant on a prime power n has a jump prime to n, i.e. a unit
    p = next(q for q in range(2, n + 1) if n % q == 0)
    m = n
    while m % p == 0:
        m //= p
    return m == 1


# -- reach model --------------------------------------------------------------------------------
def build_reach_milp(n, d, regular, cands, H, objective, wsym, m_max, fix_one=False, tick=None):
    """PuLP reach model (module docstring); returns ``(problem, y, r)``."""
    prob = pulp.LpProblem("select_reach", pulp.LpMinimize)
    y = {p: prob.add_variable(f"y_{p}", cat=pulp.LpBinary) for p in cands}
    ports = pulp.lpSum(port_cost(n, p) * y[p] for p in cands)
    prob += (ports == d) if regular else (ports <= d), "ports"
    if fix_one:
        prob += y[1] == 1, "multiplier_symmetry"
    reps = range(n // 2 + 1)
    r = [{v: (1 if v == 0 else 0) for v in reps}]
    for h in range(1, H + 1):
        if tick is not None:
            tick()
        layer = {0: 1}
        for v in reps[1:]:
            layer[v] = prob.add_variable(f"r_{h}_{v}", cat=pulp.LpBinary)
        for v in reps[1:]:
            qs = []
            for p in cands:
                a, b = r[h - 1][rep(n, v - p)], r[h - 1][rep(n, v + p)]
                if isinstance(a, int) and isinstance(b, int) and a + b == 0:
                    continue
                q = prob.add_variable(f"q_{h}_{v}_{p}", 0, 1)
                prob += q <= y[p]
                prob += q <= a + b
                qs.append(q)
            prob += layer[v] <= r[h - 1][v] + pulp.lpSum(qs)
            if h > 1:
                prob += r[h - 1][v] <= layer[v]
        prob += pulp.lpSum(_mult(n, v) * layer[v] for v in reps[1:]) <= ball(m_max, h) - 1
        if parity_cuts(n, cands):
            for par in (0, 1):
                prob += pulp.lpSum(_mult(n, v) * layer[v] for v in reps[1:] if v % 2 == par) \
                    <= ball_parity(m_max, h, par) - (1 - par)
        r.append(layer)
    if objective == "diameter":
        w = [prob.add_variable(f"w_{h}", cat=pulp.LpBinary) for h in range(H)]
        for h in range(1, H):
            for v in reps[1:]:
                prob += w[h] <= r[h][v]
            if h + 1 < H:
                prob += w[h] <= w[h + 1]
        prob += w[0] == (1 if n == 1 else 0)
        prob.setObjective(H - pulp.lpSum(w))
    else:
        prob.setObjective(pulp.lpSum(float(wsym[v]) * (H - pulp.lpSum(r[h][v] for h in range(H)))
                                     for v in reps[1:] if wsym[v] > 0))
    for v in reps[1:]:
        prob += r[H][v] == 1
    return prob, y, r


def build_reach_cpsat(n, d, regular, cands, H, objective, wunits, m_max, fix_one=False,
                      tick=None):
    """CP-SAT reach model (same constraints as :func:`build_reach_milp`, Boolean ``q``)."""
    from ortools.sat.python import cp_model  # lazily: 0.5 s to import
    m = cp_model.CpModel()
    y = {p: m.NewBoolVar(f"y_{p}") for p in cands}
    ports = sum(port_cost(n, p) * y[p] for p in cands)
    m.Add(ports == d) if regular else m.Add(ports <= d)
    if fix_one:
        m.Add(y[1] == 1)
    reps = range(n // 2 + 1)
    r = [{v: (1 if v == 0 else 0) for v in reps}]
    for h in range(1, H + 1):
        if tick is not None:
            tick()
        layer = {0: 1}
        for v in reps[1:]:
            layer[v] = m.NewBoolVar(f"r_{h}_{v}")
        for v in reps[1:]:
            support = [] if isinstance(r[h - 1][v], int) else [r[h - 1][v]]
            for p in cands:
                a, b = rep(n, v - p), rep(n, v + p)
                if 0 in (a, b):
                    support.append(y[p])  # 0 is reached at every layer: one hop along p
                    continue
                nb = [x for x in (r[h - 1][a], r[h - 1][b]) if not isinstance(x, int)]
                if not nb:
                    continue
                q = m.NewBoolVar(f"q_{h}_{v}_{p}")
                m.AddImplication(q, y[p])
                m.AddBoolOr(nb).OnlyEnforceIf(q)
                support.append(q)
            m.AddBoolOr(support).OnlyEnforceIf(layer[v]) if support else m.Add(layer[v] == 0)
            if h > 1:
                m.AddImplication(r[h - 1][v], layer[v])
        m.Add(sum(_mult(n, v) * layer[v] for v in reps[1:]) <= ball(m_max, h) - 1)
        if parity_cuts(n, cands):
            for par in (0, 1):
                m.Add(sum(_mult(n, v) * layer[v] for v in reps[1:] if v % 2 == par)
                      <= ball_parity(m_max, h, par) - (1 - par))
        r.append(layer)
    for v in reps[1:]:
        m.Add(r[H][v] == 1)
    if objective == "diameter":
        w = [m.NewBoolVar(f"w_{h}") for h in range(H)]
        m.Add(w[0] == 0)
        for h in range(1, H):
            for v in reps[1:]:
                m.AddImplication(w[h], r[h][v])
            if h + 1 < H:
                m.AddImplication(w[h], w[h + 1])
        m.Minimize(H - sum(w))
    else:
        m.Minimize(sum(int(wunits[v]) * (H - sum(r[h][v] for h in range(H)))
                       for v in reps[1:] if wunits[v] > 0))
    return m, y, r


# -- solve ------------------------------------------------------------------------------------------
def _solve(instance: Instance, options: SolveOptions, backend: str) -> SolveResult:
    t0 = time.perf_counter()
    method = f"select-{backend}"
    n, d, regular = instance.n, instance.degree, instance.regular
    p = options.method
    objective = p.objective
    cands = candidate_jumps(n, d, p.candidates)
    rings = default_rings(instance)
    if objective == "comm_time":
        starts = start_jumps(instance, cands, options.warm_start)
        return solve_flow(instance, options, backend, method, cands,
                          starts[0] if starts else None, t0)
    H, inc = _horizon(instance, objective, cands, options.seed, options.warm_start)
    m_max = _max_jumps(n, d, cands)
    W = residue_weights(instance)
    wsym = _sym_weights(W)
    total = float(W.sum())
    fix_one = p.symmetry and fix_unit_jump(n, cands, p.candidates, objective, W)
    if fix_one and inc and 1 not in inc:
        inc = _with_unit_one(n, inc)
    hint = {f"y_{p}": float(p in inc) for p in cands} if inc else None
    exact = True
    if backend == "milp":
        wn = wsym / total if total > 0 else wsym
        prob, _, _ = build_reach_milp(n, d, regular, cands, H, objective, wn, m_max, fix_one,
                                      options.check_deadline)
        out = solve_pulp(prob, options, hint)
        to_obj = 1.0 if objective == "diameter" else total
    else:
        units, scale, exact = _exact.integer_units(wsym, 10**6)
        model, y, _ = build_reach_cpsat(n, d, regular, cands, H, objective, units, m_max,
                                        fix_one, options.check_deadline)
        out, _ = _run_cpsat(model, options, {y[p]: float(p in inc) for p in cands} if inc else None)
        to_obj = 1.0 if objective == "diameter" else scale
    runtime = time.perf_counter() - t0
    bound = None if out.bound is None else out.bound * to_obj
    if objective == "diameter":
        # counting bound (within h hops at most Ball(m, h) residues) is valid on its own
        counting = float(next(h for h in range(n) if ball(m_max, h) >= n))
        bound = counting if bound is None else max(bound, counting)
        bound = float(math.ceil(bound - 1e-6))  # diameters are integers
    # hop objectives do not route; return the requested heuristic routing (shortest paths by
    # default; coin-change and ECMP are shortest-path routings on a circulant too)
    how = p.routing or "shortest"

    def routed(jumps):
        topo = Topology.circulant(n, jumps)
        return topo, route(instance, topo, rings, how, options.seed)

    topo = routing = None
    if out.status.has_solution:
        topo, routing = routed(chosen_jumps(out.values, cands))
    info = {"horizon": H, "fixed_unit_jump": fix_one}
    if topo is not None:
        info.update(jumps=list(topo.jumps), diameter=topo.diameter(), avg_hops=avg_hops(routing))
    scope = bound_scope(instance, options, backend)
    return honest_result(method, instance, options, out, topo, routing, scope=scope, runtime=runtime,
                   bound=bound, objective_kind=objective, exact_model=exact,
                   scale=None if backend == "milp" or objective == "diameter" else to_obj,
                   info=info, fallback=routed(tuple(inc)) if inc else None)


def solve_milp(instance: Instance, options: SolveOptions) -> SolveResult:
    """Exact ring-jump selection as a MILP (PuLP; HiGHS or CBC). See the module docstring."""
    return _solve(instance, options, "milp")


def solve_cpsat(instance: Instance, options: SolveOptions) -> SolveResult:
    """Exact ring-jump selection with CP-SAT. See the module docstring."""
    return _solve(instance, options, "cpsat")


def memory(instance: Instance, options: SolveOptions, backend: str = "milp") -> Estimate:
    """comm_time: flows of each source over ``2 J`` arc types, ``S n 2 J`` (``S = 1`` when the
    traffic is rotation invariant); hop objectives: reach variables over ``H`` hop layers,
    ``H (n/2 + 1) J`` with ``H ~ m (n/2)^(1/m)``, the diameter scale of a circulant with
    ``m = d/2`` jumps (``J`` jump candidates)."""
    from .select_flow import _rotation_invariant, choice_symmetric, ring_space

    n, p = instance.n, options.method
    J = len(candidate_jumps(n, instance.degree, p.candidates))
    if p.objective != "comm_time":
        m = max(1, instance.degree // 2)
        H = math.ceil(m * (n / 2) ** (1 / m))
        q = H * (n // 2 + 1) * J
        return Estimate.model(3.0 * q, backend, f"{q:.3g} reach variables (H ~ {H} hop layers "
                                               f"x {n // 2 + 1} residues x {J} jumps)")
    rings, chosen = ring_space(instance, p.rings)
    symmetric = _rotation_invariant(_exact.demand_matrix(instance, rings)) \
        and choice_symmetric(instance, chosen)
    S = 1 if symmetric else traffic_counts(instance).sources
    flows = S * n * 2 * J
    return Estimate.model(3.0 * flows, backend, f"its S n 2J = {flows:.3g} flow variables "
                                               f"(S = {S} sources, J = {J} jump candidates)")


MILP = MethodSpec(
    "select-milp", "select", "exact", "milp", SelectParams, solve_milp,
    "choose d/2 ring jumps: MILP (PuLP; HiGHS or CBC)", scope=bound_scope,
    memory=memory, max_n=1024, warm_start="totientperms")
CPSAT = MethodSpec(
    "select-cpsat", "select", "exact", "cpsat", SelectCpsatParams, solve_cpsat,
    "choose d/2 ring jumps: CP-SAT", scope=lambda i, o: bound_scope(i, o, "cpsat"),
    memory=lambda i, o: memory(i, o, "cpsat"), max_n=1024, warm_start="totientperms")
