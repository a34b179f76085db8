"""Shared plumbing of the exact families (select, alloc, joint): units, flow decomposition,
integer scaling for CP-SAT and the assembly of an honest :class:`SolveResult`.

Units. Models are solved in *link-time units*: a volume unit ``V = max_i max(out_i, in_i) / d``
bytes (what one server must push through each of its ``d`` ports under an ideal switch) and a
capacity of 1 per link, so the ideal-switch time is 1 model time unit and a model time ``t``
is ``t * V / B`` seconds. Throughput models maximise ``lambda`` (the demand multiplier that
fits), so ``lambda <= 1`` and ``T_comm = V / (B lambda)`` seconds.

Results. The reported objective is never the solver's number: it is
:func:`~topoopt_milp.evaluate.comm_time` of the routing actually returned (or the diameter /
byte-hops of the returned topology), so the independent checker agrees with it by
construction. The solver's bound is converted to the same units; a solver run whose recomputed
objective drifts from its own objective by more than ``OBJ_TOL`` is downgraded from optimal
to feasible with a message, never silently kept.
"""

from __future__ import annotations

import logging
from collections import defaultdict, deque
from collections.abc import Sequence
from math import gcd

import numpy as np
import pulp

from ..evaluate import arc_loads, comm_time, congestion
from ..heuristics.routing import RoutingError, route
from ..instance import Instance
from ..result import SolveOptions, SolveResult, Status
from ..topology import Commodity, Path, Ring, Routing, Topology, commodities_for

log = logging.getLogger(__name__)

OBJ_TOL = 1e-5  # relative: LP tolerances are ~1e-7; routing extraction must not lose more
FLOW_EPS = 1e-9  # relative to the commodity volume: smaller path flows are solver noise


def volume_unit(instance: Instance) -> float:
    """Bytes per model volume unit ``V`` (see module docstring); 1.0 for empty traffic."""
    out, inn = instance.node_out_in_bytes()
    v = float(max(out.max(), inn.max())) / instance.degree
    return v if v > 0 else 1.0


def seconds_per_unit(instance: Instance) -> float:
    """Seconds per model time unit: ``V / B``."""
    return volume_unit(instance) / instance.link_bytes_per_s


def demand_matrix(instance: Instance, rings: Sequence[Ring]) -> np.ndarray:
    """``n x n`` bytes from ``src`` to ``dst`` over all commodities (MP + ring edges)."""
    D = np.zeros((instance.n, instance.n))
    for c in commodities_for(instance, rings):
        D[c.src, c.dst] += c.bytes
    return D


# -- AllReduce ring choice (alloc and select "choose" mode) ------------------------------------
def totient_orders(members) -> list[tuple[int, ...]]:
    """TotientPerms candidate ring orders of a group: ``member[(i m) mod k]``, ``gcd(m,k)=1``
    over the sorted members (``m`` and ``k - m`` give a ring and its reverse)."""
    ms = sorted(members)
    k = len(ms)
    return [tuple(ms[(i * m) % k] for i in range(k)) for m in range(1, k) if gcd(m, k) == 1] or [
        tuple(ms)]


def normalise_shares(rings: Sequence[Ring]) -> list[Ring]:
    """Rescale the shares of each group's rings to sum to 1 (solver leftovers after dropping
    rings with share ~0)."""
    total: dict[int, float] = defaultdict(float)
    for r in rings:
        total[r.group] += r.share
    return [Ring(r.group, r.order, r.share / total[r.group]) for r in rings]


def expr_value(expr, values: dict[str, float]) -> float:
    """Value of a PuLP affine expression (or a number) under solver ``values`` by name."""
    if isinstance(expr, int | float):
        return float(expr)
    return float(sum(c * values.get(v.name, 0.0) for v, c in expr.items()) + expr.constant)


# -- flow decomposition ----------------------------------------------------------------------
def ring_choice(prob, lam, g: int, orders, edge_volume: float, demand, sources=None) -> list:
    """Free AllReduce ring split of group ``g`` in a throughput model (alloc, select).

    The group may split its volume over the candidate ring ``orders`` with shares ``sigma_c``.
    The demand ``lambda sigma_c`` is bilinear; with ``tau_c = lambda sigma_c`` and
    ``sum_c tau_c = lambda`` it is linear: ring edge ``a -> b`` of order ``c`` adds
    ``edge_volume * tau_c`` to ``demand[a][b]``. Only sources in ``sources`` (default: all)
    get rows -- the single-source circulant reduction keeps one. Returns the
    ``(g, order, tau)`` terms; ``sigma_c = tau_c / lambda``."""
    taus = [prob.add_variable(f"tau_{g}_{c}", 0) for c in range(len(orders))]
    prob += pulp.lpSum(taus) == lam, f"shares_{g}"
    terms = []
    for order, tau in zip(orders, taus, strict=True):
        terms.append((g, order, tau))
        k = len(order)
        for i in range(k):
            a, b = order[i], order[(i + 1) % k]
            if sources is None or a in sources:
                demand[a][b] = demand[a].get(b, 0) + edge_volume * tau
    return terms


def decompose_source(
    s: int, arc_flow: dict[tuple[int, int], float], demand: dict[int, float],
    links: np.ndarray | None = None,
) -> dict[int, list[tuple[Path, float]]]:
    """Split a single-source flow into simple paths ending at its sinks.

    ``arc_flow`` is the flow of source ``s`` on arcs ``(u, v)``; ``demand[t]`` what must reach
    ``t``. Repeatedly take a destination with unmet demand, find a path ``s -> t`` through arcs
    with positive residual flow (BFS, so paths are simple and short) and push the bottleneck.
    Flow on cycles is never used (dropping it only lowers loads). Returns, per destination,
    ``(path, fraction)`` pairs whose fractions sum to 1 (normalised: solver noise below
    ``FLOW_EPS`` is spread proportionally); destinations the flow cannot reach are omitted.

    With ``links`` (the rounded link matrix of a MILP solution) arcs without a link are
    ignored: a link variable within the integrality tolerance of 0 may still carry a sliver of
    flow in a time-limited incumbent, and a path over it would have no capacity."""
    resid = {a: f for a, f in arc_flow.items() if f > 0 and (links is None or links[a] > 0)}
    out_arcs: dict[int, list[int]] = defaultdict(list)
    for u, v in resid:
        out_arcs[u].append(v)
    result: dict[int, list[tuple[Path, float]]] = {}
    for t, want in sorted(demand.items()):
        if want <= 0 or t == s:
            continue
        left = want
        got: dict[Path, float] = defaultdict(float)
        while left > FLOW_EPS * want:
            path = _bfs_path(s, t, out_arcs, resid, FLOW_EPS * want)
            if path is None:
                break
            push = min(left, min(resid[(path[k], path[k + 1])] for k in range(len(path) - 1)))
            for k in range(len(path) - 1):
                resid[(path[k], path[k + 1])] -= push
            got[path] += push
            left -= push
        total = sum(got.values())
        if total > 0 and total >= (1 - 1e-4) * want:
            result[t] = [(p, f / total) for p, f in sorted(got.items())]
    return result


def _bfs_path(s, t, out_arcs, resid, eps) -> Path | None:
    prev = {s: None}
    queue = deque([s])
    while queue:
        u = queue.popleft()
        if u == t:
            break
        for v in out_arcs[u]:
            if v not in prev and resid[(u, v)] > eps:
                prev[v] = u
                queue.append(v)
    if t not in prev:
        return None
    path = [t]
    while prev[path[-1]] is not None:
        path.append(prev[path[-1]])
    return tuple(reversed(path))


def routing_from_pair_paths(
    instance: Instance,
    topology: Topology,
    rings: Sequence[Ring],
    pair_paths: dict[tuple[int, int], list[tuple[Path, float]]],
    seed: int = 0,
    comm_paths: dict[tuple[str, int, int, int], list[tuple[Path, float]]] | None = None,
) -> Routing:
    """A :class:`Routing` giving every commodity ``(s, t)`` the split ``pair_paths[(s, t)]``
    (or ``comm_paths[(kind, tag, s, t)]`` when given there: models that route ring edges of
    different groups separately).

    Commodities the model left without paths (zero-volume rounding in CP-SAT, or numerical
    leftovers) get a shortest path on ``topology`` so that the routing is always complete."""
    comms = commodities_for(instance, rings)
    comm_paths = comm_paths or {}
    missing = [c for c in comms if (c.src, c.dst) not in pair_paths
               and (c.kind, c.tag, c.src, c.dst) not in comm_paths]
    fallback: dict[tuple[int, int], tuple] = {}
    if missing:
        try:
            sp = route(instance, topology, rings, "shortest", seed)
            fallback = {(c.src, c.dst): c.paths for c in sp.commodities}
        except RoutingError as exc:
            log.warning("no fallback path for %d commodities: %s", len(missing), exc)
    routed = []
    for c in comms:
        paths = (comm_paths.get((c.kind, c.tag, c.src, c.dst)) or pair_paths.get((c.src, c.dst))
                 or fallback.get((c.src, c.dst), ()))
        routed.append(Commodity(c.src, c.dst, c.bytes, c.kind, c.tag, tuple(paths)))
    return Routing(tuple(rings), tuple(routed))


# -- integers for CP-SAT ------------------------------------------------------------------------
def integer_units(values: np.ndarray, max_units: int = 10**5) -> tuple[np.ndarray, float, bool]:
    """Integer volumes for CP-SAT: ``(units, scale, exact)`` with ``values ~ units * scale``.

    Exact when every positive value is an integer multiple of the smallest (within 1e-9) and
    the largest multiple is at most ``max_units``; otherwise ``units = floor(values / scale)``
    with ``scale = max(values) / max_units``. Rounding *down* keeps every scaled load at most
    the true load, so a CP-SAT bound times ``scale`` stays a valid lower bound."""
    values = np.asarray(values, dtype=float)
    pos = values[values > 0]
    if pos.size == 0:
        return np.zeros(values.shape, dtype=np.int64), 1.0, True
    base = float(pos.min())
    ratio = values / base
    if np.allclose(ratio, np.round(ratio), rtol=0, atol=1e-9) and ratio.max() <= max_units:
        return np.round(ratio).astype(np.int64), base, True
    scale = float(pos.max()) / max_units
    return np.floor(values / scale + 1e-9).astype(np.int64), scale, False


# -- results ------------------------------------------------------------------------------------
def failed_result(method: str, options: SolveOptions, outcome, runtime: float, message: str = "",
                  restricted: bool = False):
    """A result without a solution (infeasible, no solution in time, error).

    ``restricted``: the model is a restriction of the problem (candidate paths), so its
    infeasibility proves nothing about the problem: reported as ``no_solution``."""
    status = outcome.status
    if restricted and status is Status.INFEASIBLE:
        status = Status.NO_SOLUTION
        message = message or "no solution within the candidate paths (the restricted model is infeasible)"
    return SolveResult(
        method=method, status=status, objective=None, bound=None, runtime_s=runtime,
        seed=options.seed, params=options.as_params(), backend=outcome.backend,
        backend_version=outcome.version, message=(message or outcome.message),
    )


def fallback_result(
    method: str,
    instance: Instance,
    options: SolveOptions,
    outcome,
    topology: Topology | None,
    rings: Sequence[Ring],
    runtime: float,
    bound_s: float | None = None,
    restricted: bool = False,
) -> SolveResult | None:
    """The incumbent a solver failed to improve on: ``topology`` (a warm start) with
    shortest-path routing, status ``feasible``; ``None`` when there is no usable topology.

    DESIGN: a time-limited run returns its incumbent and bound, never nothing. When the solver
    stops without a solution but a heuristic topology was given to it as a start, that start
    *is* the incumbent. For a ``restricted`` model (candidate paths) an infeasible model is
    treated the same way: the restriction, not the problem, has no solution."""
    allowed = (Status.NO_SOLUTION, Status.INFEASIBLE) if restricted else (Status.NO_SOLUTION,)
    if topology is None or outcome.status not in allowed:
        return None
    try:
        routing = route(instance, topology, rings, "shortest", options.seed)
    except RoutingError:
        return None
    obj = comm_time(instance, topology, routing)
    if bound_s is not None and bound_s > obj:
        bound_s = None  # a bound of a restricted model need not hold for the start
    return SolveResult(
        method=method, status=Status.FEASIBLE, objective=obj, bound=bound_s, runtime_s=runtime,
        topology=topology, routing=routing, seed=options.seed, params=options.as_params(),
        backend=outcome.backend, backend_version=outcome.version, objective_kind="comm_time",
        message=f"{outcome.message}; solver found no solution"
        f"{' in the restricted model' if outcome.status is Status.INFEASIBLE else ' in time'}: "
        "warm-start topology returned with shortest-path routing",
    )


def comm_time_result(
    method: str,
    instance: Instance,
    options: SolveOptions,
    outcome,
    topology: Topology,
    routing: Routing,
    model_objective_s: float | None,
    bound_s: float | None,
    runtime: float,
    scale: float | None = None,
    exact_model: bool = True,
    message: str = "",
) -> SolveResult:
    """Assemble a ``comm_time`` result whose objective is recomputed from ``routing``.

    ``model_objective_s`` / ``bound_s`` are the solver's objective and bound converted to
    seconds. A bound above the recomputed objective by less than ``OBJ_TOL`` (solver
    tolerance) is clipped to it; a larger excess is kept so the checker flags it."""
    obj = comm_time(instance, topology, routing)
    # the models optimise the bandwidth term; a latency term (max hops x latency) is added on
    # top by the cost model, so the drift check compares bandwidth terms only
    bw = congestion(topology, arc_loads(instance.n, routing), instance.link_bytes_per_s)
    status = outcome.status
    notes = [outcome.message] if outcome.message else []
    if message:
        notes.append(message)
    if instance.latency_us > 0:
        notes.append("latency term not modelled (bandwidth term optimised, latency added)")
    if bound_s is not None and obj < bound_s <= obj * (1 + OBJ_TOL):
        bound_s = obj
    if status is Status.OPTIMAL and model_objective_s is not None and bw > model_objective_s * (
        1 + OBJ_TOL
    ) + 1e-15:
        status = Status.FEASIBLE
        notes.append(f"routing extraction gives {obj:.9g} s, model said {model_objective_s:.9g} s")
    if status is Status.OPTIMAL and instance.latency_us > 0:
        status = Status.FEASIBLE  # optimal for the bandwidth term only
    if status is Status.OPTIMAL and not exact_model and bound_s is not None and obj > 0 and (
        obj - bound_s
    ) / obj > max(options.mip_gap, OBJ_TOL):
        status = Status.FEASIBLE
        notes.append("optimal for the integer-scaled model only (volumes rounded)")
    return SolveResult(
        method=method, status=status, objective=obj, bound=bound_s, runtime_s=runtime,
        topology=topology, routing=routing, seed=options.seed, params=options.as_params(),
        backend=outcome.backend, backend_version=outcome.version, objective_kind="comm_time",
        scale=scale, message="; ".join(notes),
    )
