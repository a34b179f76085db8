"""alloc-benders: the alloc-milp problem solved by metric-inequality (Benders) decomposition.

Problem (that of :mod:`.alloc` in throughput form, ``rings = "choose"``): an integer symmetric
link matrix ``x`` under the port budget (``sum_j x_ij = d``, ``<= d`` if not regular,
``x_ij <= cap``), AllReduce rings split freely over the TotientPerms candidate orders
(``tau_c = lambda sigma_c``, ``sum_c tau_c = lambda``), fractional routing; maximise the
demand multiplier ``lambda`` (``T_comm = V / (B lambda)``). The demand is linear in
``(lambda, tau)``::

    D_st(lambda, tau) = lambda M_st + sum_{g, c} e_g tau_gc [s -> t is an edge of order c]

Metric inequalities (Japanese theorem). For fixed capacities ``x``, ``D`` is routable iff for
every length function ``mu >= 0`` on the arcs of the complete digraph::

    sum_{i<j} (mu_ij + mu_ji) x_ij  >=  sum_{s,t} dist_mu(s, t) D_st(lambda, tau)        (MI)

Any set of (MI) is therefore a valid relaxation. Replacing ``mu`` by its shortest-path closure
``dist_mu`` never weakens a cut (left side down, right side unchanged), so every cut here is
written with a metric ``ell = dist_mu`` on all ordered pairs.

Master (a MILP over ``x``, adjacency ``y``, ``lambda``, ``tau`` and the hop variables ``z, w``):

* port budget, ``y_ij <= x_ij <= cap y_ij`` (``y`` binary), ring shares;
* **two-hop counting** (valid inequalities that see the integrality of ``x``): let ``z_st`` be
  the part of commodity ``s -> t`` routed on the direct arc. Then ``z_st <= D_st``,
  ``z_st <= x_st`` (arc capacity) and ``z_st = 0`` unless ``y_st = 1``; every other unit needs
  at least two hops, and all loads fit in the total capacity ``2 sum x``::

      sum_{s,t} (2 D_st - z_st)  <=  2 sum_{i<j} x_ij

  (plus ``lambda`` times :func:`beyond_two_hops` for MP beyond the Moore levels one and two).
  The adjacency is linked through ``w_st = lambda y_st`` (exact at integer ``y``):
  ``z_st <= M_st w_st + R_st y_st`` (``R_st`` the largest ring volume an edge ``s -> t`` can
  carry, ``tau <= lambda <= 1``), ``w_st <= y_st``, ``w_st <= lambda``, and, since a node has at
  most ``d`` neighbours, ``sum_t w_st <= d lambda`` and ``sum_s w_st <= d lambda``;
* **cut-set inequalities** (the MI with ``ell = 1`` on the arcs leaving ``S``) for every pair
  ``S = {s, t}`` and every AllReduce group's member set and its complement, in both directions,
  and their **integer rounding** in the improving region ``lambda >= lambda_L`` (``lambda_L``
  the incumbent): the crossing demand is at least ``lambda_L (a_S + sum_g min_c b_gcS)``
  (``a_S`` MP bytes, ``b_gcS`` ring bytes of order ``c`` crossing ``S``, ``sum_c tau = lambda``),
  and the left side is an integer, so ``x(delta^+(S)) >= ceil(lambda_L (a_S + ...))``. Only
  solutions better than the incumbent matter for optimality, so the master may be restricted to
  ``lambda >= lambda_L``; its optimum is then still an upper bound on the optimum;
* **symmetry breaking** only where valid for the chosen-ring problem: nodes whose transposition
  maps the MP matrix and every group's set of candidate orders onto itself are interchangeable
  (all permutations of a class are then automorphisms), and the chain
  ``x[k0, q_1] >= x[k0, q_2] >= ...`` of :func:`.alloc.symmetry_chain` is added for the largest
  class. (Ring orders are not symmetric under most transpositions, so the chain of the given-ring
  model is *not* valid here in general.)

Separation. For a master solution's ``x`` the route LP with free ring split gives
``lambda_max(x)`` (an incumbent: the topology ``x`` with that routing is feasible) and, from
its capacity duals ``mu``, the metric cut (MI) with ``ell = dist_mu``. By LP duality that cut
is violated by every ``(x, lambda, tau)`` with ``lambda > lambda_max(x)``. A disconnected ``x``
gets the cut-set inequality of a component instead.

Loop. highspy 1.16 exposes MIP callbacks (``cbMipImprovingSolution``, ``cbMipInterrupt``) but
its callback input can only interrupt or inject a solution: it cannot add rows, so lazy
constraints are not available. The master is therefore re-solved: during a solve every
improving master solution is separated at once; once it has ``cuts_per_round`` violated
cuts and has run ``round_frac`` of the elapsed time the solve is interrupted,
the cuts are added to the same HiGHS model and it is re-run with the incumbent as MIP start.
Every master solve (finished or interrupted) yields a valid upper bound on ``lambda`` (its
dual bound, at least ``lambda_L``); the bound reported is the smallest. The run is optimal when
the bound meets the incumbent within ``mip_gap``. The master's rows are built by
:mod:`.benders_master`.

Scope of the bound: that of alloc-milp (DESIGN.md section 10, scope 1 with the TotientPerms
orders and free split). With ``rings = all`` the candidates are *every* directed cyclic order
of each group (:func:`.master.all_orders`): a solution with any
ring orders and any split of them is a point of this problem (its orders are candidates), so
every row above stays valid for it and the bound covers every ring order (scope ``any``).
At most :data:`.master.MAX_ALL_ORDERS` orders in all: the size check refuses more in one line.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import highspy
import numpy as np
from scipy.sparse import coo_matrix, csr_matrix
from scipy.sparse.csgraph import connected_components, shortest_path

from ...core.backends.pulp_backend import (
    BackendOutcome,
    MatrixModel,
    highs_lp,
    highs_version,
    new_highs,
)
from ...core.instance import Instance
from ...core.params import SolveOptions, knob
from ...core.result import SolveResult, Status
from ...core.scope import Scope, ring_scope
from ...core.sizes import Estimate, traffic_counts
from ...core.spec import MethodSpec
from ...core.topology import Ring, Topology
from .. import model_data as _exact
from ..bounds import counting as bounds
from ..flow_paths import decompose_flow
from ..formulations.alloc import LinkParams
from ..result_step import honest_result
from .master import (
    RING_SPACES,
    Layout,
    Problem,
    build_master,
    check_order_count,
    cut_sets,
    cutset_terms,
    links_from,
    master_point,
    metric_cut,
    problem_of,
    relabel,
    symmetry_rows,
)

log = logging.getLogger(__name__)

__all__ = ["AllocBendersParams", "Problem", "RouteEval", "benders", "max_lambda", "problem_of", "solve"]

INF = math.inf
FEAS_TOL = 1e-6  # relative: a master lambda within this of lambda_max(x) is feasible
# the rings knob -> the ring mode of its scope (core.scope.ring_scope)
_RING_MODE = {"choose": "choose", "all": "any"}


# -- separation: the route LP with free ring split on a fixed topology ----------------------
@dataclass
class RouteEval:
    """``lambda_max(x)`` with its ring split ``tau``, the per-source arc flows and the metric
    ``dist`` (shortest-path closure of the capacity duals; ``None`` if disconnected)."""

    lam: float
    tau: np.ndarray
    arcs: np.ndarray
    sources: np.ndarray
    flows: np.ndarray
    dist: np.ndarray | None
    component: np.ndarray | None = None  # node mask of a component, when disconnected


def max_lambda(P: Problem, L: np.ndarray, basis: np.ndarray | None = None,
               duals: str = "simplex", time_limit: float | None = None) -> RouteEval | None:
    """Solve ``max lambda`` s.t. source-aggregated flows carry ``D(lambda, tau)`` within the
    capacities ``L`` (present arcs only), ``sum_c tau_gc = lambda``, ``lambda <= 1``;
    ``None`` when ``time_limit`` runs out first."""
    n = P.n
    B = P.demand_basis() if basis is None else basis
    support = B.sum(axis=0) > 0
    u, v = np.nonzero(L)
    arcs = np.stack([u, v], axis=1)
    ncomp, label = connected_components(csr_matrix(L > 0), directed=False)
    if ncomp > 1:
        for c in range(ncomp):
            mask = label == c
            if support[np.ix_(mask, ~mask)].any():
                return RouteEval(0.0, np.zeros(P.num_tau), arcs, np.array([], int),
                                 np.zeros((0, len(arcs))), None, mask)
    sources = np.flatnonzero(support.any(axis=1))
    K, m, T = len(sources), len(arcs), P.num_tau
    nf = K * m
    lam_col, tau0 = nf, nf + 1
    ncol = nf + 1 + T
    rows, cols, vals = [], [], []
    # conservation: in - out - D_sv(lambda, tau) = 0 for v != s (row k * n + v)
    col = np.arange(nf)
    kk = np.repeat(np.arange(K), m)
    aa = np.tile(np.arange(m), K)
    rows += [kk * n + arcs[aa, 1], kk * n + arcs[aa, 0]]
    cols += [col, col]
    vals += [np.ones(nf), -np.ones(nf)]
    for j in range(1 + T):
        sub = B[j][sources]
        k_idx, v_idx = np.nonzero(sub)
        keep = sources[k_idx] != v_idx
        rows.append(k_idx[keep] * n + v_idx[keep])
        cols.append(np.full(keep.sum(), lam_col if j == 0 else tau0 + j - 1))
        vals.append(-sub[k_idx[keep], v_idx[keep]])
    nrow = K * n
    lo = np.zeros(nrow)
    up = np.zeros(nrow)
    src_rows = np.arange(K) * n + sources
    lo[src_rows], up[src_rows] = -INF, INF
    # capacity rows: sum_k f[k, a] <= L_a
    rows.append(nrow + aa)
    cols.append(col)
    vals.append(np.ones(nf))
    cap_row0 = nrow
    nrow += m
    lo = np.concatenate([lo, np.full(m, -INF)])
    up = np.concatenate([up, L[u, v].astype(float)])
    for sl in P.tau_slices():
        idx = np.arange(sl.start, sl.stop)
        rows += [np.full(len(idx) + 1, nrow)]
        cols += [np.concatenate([tau0 + idx, [lam_col]])]
        vals += [np.concatenate([np.ones(len(idx)), [-1.0]])]
        nrow += 1
        lo, up = np.append(lo, 0.0), np.append(up, 0.0)
    A = coo_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
                   shape=(nrow, ncol)).tocsc()
    cost = np.zeros(ncol)
    cost[lam_col] = 1.0
    col_up = np.full(ncol, INF)
    col_up[lam_col] = 1.0
    model = MatrixModel(A, cost, np.zeros(ncol), col_up, lo, up, np.zeros(ncol, bool),
                        [], maximize=True)
    h = new_highs()
    h.setOptionValue("output_flag", False)
    # "simplex": vertex duals; "ipm" without crossover: duals near the centre of the optimal
    # face (every mu >= 0 gives a valid cut; only its strength differs)
    h.setOptionValue("solver", duals)
    if duals == "ipm":
        h.setOptionValue("run_crossover", "off")
    if time_limit is not None:
        h.setOptionValue("time_limit", max(float(time_limit), 0.01))
    h.passModel(highs_lp(model))
    h.run()
    if time_limit is not None and h.getModelStatus() == highspy.HighsModelStatus.kTimeLimit:
        return None
    if h.getModelStatus() != highspy.HighsModelStatus.kOptimal or (
            h.getInfo().dual_solution_status != 2):
        raise RuntimeError(f"route LP: {h.modelStatusToString(h.getModelStatus())}")
    sol = h.getSolution()
    x = np.asarray(sol.col_value)
    mu = np.abs(np.asarray(sol.row_dual)[cap_row0:cap_row0 + m])
    return RouteEval(float(x[lam_col]), x[tau0:], arcs, sources, x[:nf].reshape(K, m),
                     metric_closure(n, arcs, mu))


def metric_closure(n: int, arcs: np.ndarray, mu: np.ndarray) -> np.ndarray:
    """All-pairs shortest distances under arc lengths ``mu`` (a tiny floor keeps zero-length
    arcs as edges of the sparse graph; any ``mu >= 0`` gives a valid cut)."""
    W = csr_matrix((np.maximum(mu, 1e-9 * max(1.0, float(mu.max(initial=0.0)))),
                    (arcs[:, 0], arcs[:, 1])), shape=(n, n))
    return shortest_path(W, method="D", directed=True)


# -- the loop ------------------------------------------------------------------------------
@dataclass
class BendersOutcome:
    """Best topology and its route evaluation, the upper bound on lambda, and counters."""

    L: np.ndarray | None
    best: RouteEval | None
    bound: float
    optimal: bool
    iterations: int
    cuts: int
    evaluated: int
    runtime_s: float
    history: list[tuple[float, float, float]]  # (time, incumbent lambda, bound)
    message: str = ""


@dataclass(frozen=True)
class AllocBendersParams(LinkParams):
    """alloc-benders: the metric-inequality decomposition's loop (see its module)."""

    cuts_per_round: int = knob(1, "alloc-benders: violated cuts collected before a master "
                                  "solve is interrupted.", minimum=1)
    hop_rows: bool | None = knob(None, "alloc-benders: two-hop counting rows in the master "
                                       "(default: on above n = 8).")
    duals: str | None = knob(None, "alloc-benders: LP dual for the cuts (default: simplex up "
                                   "to n = 32, ipm above).", choices=("simplex", "ipm"))
    heuristic_effort: float = knob(0.05, "alloc-benders: HiGHS mip_heuristic_effort of the "
                                         "master.", minimum=0, maximum=1)
    round_frac: float | None = knob(None, "alloc-benders: share of the elapsed time a master "
                                          "solve runs before it is interrupted for its cuts.",
                                    minimum=0, maximum=1)
    rings: str = knob("choose", "alloc-benders: the ring orders split over: each group's "
                                "TotientPerms orders (choose: alloc-milp's space) or all its "
                                "orders (all: the bound covers every ring order; (k - 1)! "
                                "orders a group of k, at most 1000 in all).",
                      choices=RING_SPACES)


# Measured (mixed traffic, d = 4, 2 shared cores): at n = 8 the master without the two-hop rows
# proves optimality in 11 s and with them in 56 s; at n = 10 without them the bound stays at
# the ideal switch after 120 s (gap 22%) and with them reaches 14%. At n = 12, 120 s: stopping
# every master solve at its first violated solution leaves the bound at about the root's
# (6.40 ms, alloc-milp 6.44 ms); letting each solve run half the elapsed time first gives
# 6.67 ms, the whole elapsed time 6.71 ms. At n = 8 (no two-hop rows) quick rounds win: 54 s
# to optimality against 99 s with round_frac 0.5 (both under the same load). The price of long
# rounds is the incumbent: at n = 10, 120 s, quick rounds reached 6.80 ms (bound 5.85 ms), long
# ones stay at the warm start's 7.65 ms (bound 5.87 ms); alternating quick and long rounds
# gave neither (n = 12: 18.6% against 14.9%).
HOP_ROWS_MIN_N = 8


def benders(P: Problem, time_limit: float = 60.0, mip_gap: float = 1e-6, threads: int = 1,
            warm: Sequence[np.ndarray] = (), config: AllocBendersParams | None = None, seed: int = 0,
            log_cb: Callable[[str], None] | None = None, upper: float = 1.0) -> BendersOutcome:
    """Run the decomposition (module docstring) for at most ``time_limit`` seconds.

    ``warm``: link matrices to evaluate first (heuristic topologies); the best routable one is
    the first incumbent. ``upper``: a known valid upper bound on ``lambda`` (e.g. from a lower
    bound on the time of :mod:`topoopt_milp.methods.bounds.counting` in the same scope); it
    bounds the master's
    ``lambda`` and is the bound until a master solve does better."""
    config = config or AllocBendersParams()
    cuts_per_round = config.cuts_per_round
    hop_rows = P.n > HOP_ROWS_MIN_N if config.hop_rows is None else config.hop_rows
    duals = config.duals or ("simplex" if P.n <= 32 else "ipm")
    round_frac = (0.5 if hop_rows else 0.0) if config.round_frac is None else config.round_frac
    t0 = time.perf_counter()
    n = P.n
    B = P.demand_basis()
    lay = Layout(n, P.num_tau)
    chain = symmetry_rows(P, lay) if config.symmetry else None
    state = {"L": None, "best": None, "lam": 0.0, "cuts": 0, "evaluated": 0}
    cache: dict[bytes, RouteEval] = {}

    def left() -> float:
        return time_limit - (time.perf_counter() - t0)

    def evaluate(L: np.ndarray) -> RouteEval | None:
        key = L.tobytes()
        ev = cache.get(key)
        if ev is None:
            ev = max_lambda(P, L, B, duals, left())
            if ev is None:
                return None
            cache[key] = ev
            state["evaluated"] += 1
            if ev.lam > state["lam"]:
                state.update(L=L.copy(), best=ev, lam=ev.lam)
        return ev

    # within the time limit; a caller keeps the warm solutions' own routings as the fallback
    for L in warm:
        if left() <= 0:
            break
        evaluate(relabel(np.asarray(L, dtype=np.int64), chain))
    upper = min(1.0, float(upper))
    if left() <= 0:
        return BendersOutcome(state["L"], state["best"], upper, False, 0, 0, state["evaluated"],
                              time.perf_counter() - t0, [], "time limit (before the master)")
    model, _rows = build_master(P, lay, B, chain, hop_rows)  # not interruptible: ~1 min at n = 128
    if left() <= 0:
        return BendersOutcome(state["L"], state["best"], upper, False, 0, 0, state["evaluated"],
                              time.perf_counter() - t0, [], "time limit (building the master)")
    h = new_highs()
    h.setOptionValue("output_flag", False)
    h.setOptionValue("random_seed", int(seed))
    h.setOptionValue("mip_rel_gap", float(mip_gap))
    h.setOptionValue("mip_heuristic_effort", float(config.heuristic_effort))
    if threads and threads > 1:
        h.setOptionValue("threads", int(threads))
    h.passModel(highs_lp(model))
    h.changeColBounds(lay.lam, 0.0, upper)
    rounded: list[tuple[int, float]] = []  # (row, least crossing per lambda) of rounded cut-sets
    history: list[tuple[float, float, float]] = []

    def add_cut(ev: RouteEval):
        if ev.dist is None:  # disconnected: cut-set of the component
            for side in (ev.component, ~ev.component):
                xs, cross, _ = cutset_terms(P, lay, B, side)
                idx = xs + [lay.lam] + [lay.tau0 + j for j in range(P.num_tau)]
                val = [1.0] * len(xs) + [-c for c in cross]
                h.addRow(0.0, INF, len(idx), np.array(idx, np.int32), np.array(val))
        else:
            cut = metric_cut(P, lay, B, ev.dist)
            if cut is None:  # trivial: nothing to add (LP duality: never when violated)
                return
            idx, val = cut
            h.addRow(0.0, INF, len(idx), idx.astype(np.int32), val)
        state["cuts"] += 1

    bound = upper
    iterations = 0
    optimal = False
    message = ""
    new_cuts: list[RouteEval] = []

    def on_solution(e):
        sol = np.asarray(e.data_out.mip_solution)
        lam_m = float(sol[lay.lam])
        if lam_m <= state["lam"] * (1 + FEAS_TOL):
            return
        L = links_from(lay, n, sol)
        ev = evaluate(L)
        if ev is not None and lam_m > ev.lam * (1 + FEAS_TOL) + 1e-9 and all(
                ev is not c for c in new_cuts):
            new_cuts.append(ev)

    round_start = [0.0]

    def on_interrupt(e):
        # set the flag both ways: HiGHS keeps the callback input between runs. A solve stops
        # once it has its cuts and has run round_frac of the elapsed time: long enough for its
        # branch-and-bound to move the bound, short enough to use the cuts soon.
        now = time.perf_counter()
        ripe = now - round_start[0] >= round_frac * (round_start[0] - t0)
        e.interrupt((len(new_cuts) >= cuts_per_round and ripe) or now - t0 > time_limit)

    h.cbMipImprovingSolution.subscribe(on_solution)
    h.cbMipInterrupt.subscribe(on_interrupt)
    h.cbMipSolution.subscribe(on_solution)
    while True:
        remaining = left()
        if remaining <= 0:
            message = "time limit"
            break
        lam_L = state["lam"]
        if lam_L > 0:
            # improving region and integer rounding of the cut-sets (module docstring)
            h.changeColBounds(lay.lam, min(lam_L * (1 - 1e-7), upper), upper)
            _round_cutsets(h, P, lay, B, lam_L * (1 - 1e-7), rounded)
            start = master_point(P, lay, B, state["L"], lam_L * (1 - 1e-7),
                                 state["best"].tau * (1 - 1e-7))
            h.setSolution(lay.ncol, np.arange(lay.ncol, dtype=np.int32), start)
        h.setOptionValue("time_limit", float(max(remaining, 0.01)))
        new_cuts.clear()
        round_start[0] = time.perf_counter()
        h.run()
        iterations += 1
        ms = h.getModelStatus()
        info = h.getInfo()
        master_bound = float(info.mip_dual_bound)
        if ms == highspy.HighsModelStatus.kInfeasible:
            master_bound = lam_L  # nothing better than the incumbent satisfies the relaxation
        if math.isfinite(master_bound):
            bound = min(bound, max(master_bound, state["lam"]))
        if ms == highspy.HighsModelStatus.kOptimal and info.primal_solution_status == 2:
            sol = np.asarray(h.getSolution().col_value)
            ev = evaluate(links_from(lay, n, sol))
            if ev is not None and float(sol[lay.lam]) > ev.lam * (1 + FEAS_TOL) + 1e-9 and all(
                    ev is not c for c in new_cuts):
                new_cuts.append(ev)
        history.append((time.perf_counter() - t0, state["lam"], bound))
        if log_cb:
            log_cb(f"iter {iterations}: {h.modelStatusToString(ms)} incumbent {state['lam']:.6f} "
                   f"bound {bound:.6f} cuts {state['cuts']} t {time.perf_counter() - t0:.1f}s")
        # the master is solved to mip_gap and separation accepts FEAS_TOL: optimal within both
        if state["lam"] > 0 and bound <= state["lam"] * (1 + mip_gap) * (1 + FEAS_TOL):
            optimal = True
            break
        if not new_cuts:
            if ms == highspy.HighsModelStatus.kTimeLimit or time.perf_counter() - t0 > time_limit:
                message = "time limit"
                break
            message = f"master stopped without a cut: {h.modelStatusToString(ms)}"
            break
        for ev in new_cuts:
            add_cut(ev)
    return BendersOutcome(state["L"], state["best"], bound, optimal, iterations, state["cuts"],
                          state["evaluated"], time.perf_counter() - t0, history, message)


def _round_cutsets(h, P: Problem, lay: Layout, B: np.ndarray, lam_L: float, rounded: list):
    """Add (once) or raise the rounded cut-set rows ``x(delta^+(S)) >= ceil(lam_L least_S)``."""
    if not rounded:
        for S in cut_sets(P):
            for side in (S, ~S):
                xs, _, least = cutset_terms(P, lay, B, side)
                if least <= 0:
                    continue
                h.addRow(0.0, INF, len(xs), np.array(xs, np.int32), np.ones(len(xs)))
                rounded.append((h.getNumRow() - 1, least))
    for row, least in rounded:
        h.changeRowBounds(row, float(math.ceil(lam_L * least - 1e-9)), INF)


# -- the adapter ---------------------------------------------------------------------------
def warm_results(instance: Instance, options: SolveOptions, cap: int) -> list[SolveResult]:
    """The warm start (``options.warm_start``: TopologyFinder's solution by default, or e.g.
    alloc-alternate's), kept when its topology fits the port budget and ``cap``."""
    ws = options.warm_start
    if ws is None or ws.topology is None:
        return []
    t = ws.topology
    deg = t.degrees()
    ok = t.n == instance.n and t.links.max() <= cap and (
        (deg == instance.degree).all() if instance.regular else (deg <= instance.degree).all())
    return [ws] if ok else []


def routing_of(instance: Instance, P: Problem, L: np.ndarray, ev: RouteEval, seed: int = 0):
    """Rings (shares ``tau / lambda``) and paths (flow decomposition) of a route evaluation."""
    topo = Topology(L)
    rings = []
    for (g, _e, orders), sl in zip(P.groups, P.tau_slices(), strict=True):
        for order, tau in zip(orders, ev.tau[sl], strict=True):
            share = tau / ev.lam if ev.lam > 0 else 0.0
            if share > 1e-9:
                rings.append(Ring(g, tuple(order), float(share)))
    rings = _exact.normalise_shares(rings)
    B = P.demand_basis()
    D = ev.lam * B[0] + (np.tensordot(ev.tau, B[1:], axes=1) if P.num_tau else 0.0)
    arcs = [(int(a), int(b)) for a, b in ev.arcs]
    pair_paths = {}
    for k, s in enumerate(ev.sources):
        f = ev.flows[k]
        arc_flow = {arcs[a]: float(f[a]) for a in np.flatnonzero(f > 0)}
        dem = {int(t): float(D[s, t]) for t in np.flatnonzero(D[s] > 0) if t != s}
        for t, paths in decompose_flow(int(s), arc_flow, dem, topo).items():
            pair_paths[(int(s), t)] = paths
    return topo, _exact.routing_from_pair_paths(instance, topo, rings, pair_paths, seed)


def solve(instance: Instance, options: SolveOptions) -> SolveResult:
    """``alloc-benders``: the time limit (default 60 s), ``threads``, ``mip_gap``, the warm
    start and the :class:`AllocBendersParams` knobs. Its scope is
    alloc-milp's: every topology with the port budget, the TotientPerms ring orders with a
    free split, fractional routing; with ``rings = all`` every ring order."""
    t0 = time.perf_counter()
    p = options.method
    cap = instance.degree if p.max_multiplicity is None else int(p.max_multiplicity)
    P = problem_of(instance, cap, p.rings)
    ring_args = ring_scope(_RING_MODE[p.rings])
    limit = options.time_left()
    limit = 60.0 if limit is None else limit
    options.check_deadline()  # the preparation is not interruptible: stop between its steps
    warm = warm_results(instance, options, cap)
    options.check_deadline()
    # the cheap bounds of the same scope (its ring orders, any topology) start the bound
    space = ring_args["rings"]  # the counting bounds' ring space: totient or any
    lb = max(bounds.port_hop_bound(instance, space), bounds.cut_bound(instance, space))
    upper = P.sec_per_unit / lb if lb > 0 else 1.0
    out = benders(P, max(limit - (time.perf_counter() - t0), 0.01), options.solver.mip_gap,
                  options.solver.threads, [np.asarray(r.topology.links) for r in warm], p,
                  options.seed, log.info if options.solver.solver_log else None, upper)
    runtime = time.perf_counter() - t0
    status = Status.OPTIMAL if out.optimal else (
        Status.FEASIBLE if out.L is not None else Status.NO_SOLUTION)
    msg = (f"benders: {out.iterations} master solves, {out.cuts} cuts, {out.evaluated} "
           f"topologies routed" + (f"; {out.message}" if out.message else ""))
    outcome = BackendOutcome(status, out.best.lam if out.best else None, out.bound, runtime,
                             "highs", highs_version(), {}, msg)
    bound_s = P.sec_per_unit / out.bound if out.bound > 0 else None
    cap_arg = cap if cap < instance.degree else None
    scope = Scope(topology="any", max_multiplicity=cap_arg, **ring_args)
    info = {"master_solves": out.iterations, "cuts": out.cuts, "routed": out.evaluated}
    if out.L is None or out.best is None or out.best.lam <= 0:
        # the route LP did not finish in time: the best warm start, with its own routing, is
        # the incumbent (a time-limited run returns its incumbent and bound, never nothing)
        ok = [r for r in warm if r.routing is not None and r.objective is not None]
        best = min(ok, key=lambda r: r.objective) if ok else None
        outcome = BackendOutcome(Status.NO_SOLUTION, None, out.bound, runtime, "highs",
                                 highs_version(), {}, msg)
        return honest_result("alloc-benders", instance, options, outcome, None, None, scope=scope,
                       runtime=runtime, bound=bound_s, info=info,
                       fallback=None if best is None else (best.topology, best.routing))
    topo, routing = routing_of(instance, P, out.L, out.best, options.seed)
    return honest_result("alloc-benders", instance, options, outcome, topo, routing, scope=scope,
                   runtime=runtime, bound=bound_s, model_objective=P.sec_per_unit / out.best.lam,
                   notes=[f"rings={p.rings}"], info=info)


def master_bound(instance: Instance, time_limit: float = 60.0) -> float:
    """The master's dual bound after ``time_limit`` seconds, without warm start or separation
    beyond what fits in the time. The master is a relaxation of the alloc-milp problem (every
    row is a valid inequality), so its dual bound on ``lambda`` after any time gives
    ``T >= V / (B lambda_bound)``; scope: every topology, TotientPerms orders, free split."""
    P = problem_of(instance)
    out = benders(P, time_limit=time_limit)
    return P.sec_per_unit / out.bound if out.bound > 0 else math.inf


def memory(instance: Instance, options: SolveOptions) -> Estimate:
    """The master's one integer per node pair (plus its cuts), the route LP of a
    ``d``-regular topology (``S`` source-aggregated flows over its ``n d`` arcs) and the
    demand basis, one ``n x n`` array per candidate ring order (``(k - 1)!`` per group with
    ``rings = all``)."""
    orders = check_order_count(instance, options.method.rings)  # the size check refuses it too
    n = instance.n
    flows = traffic_counts(instance).sources * n * instance.degree
    est = Estimate.model(3.0 * flows + 2.0 * n * n + float(orders), "milp",
                         f"its route LP's S n d = {flows:.3g} arc flows, {n * n} link "
                         f"variables and {orders} ring orders")
    return Estimate(est.bytes + 8.0 * (1 + orders) * n * n, est.what, est.nonzeros)


def _scope(instance, options):
    from ..formulations.alloc import link_scope

    return link_scope(instance, options, ring_scope(_RING_MODE[options.method.rings]))


SPEC = MethodSpec(
    "alloc-benders", "alloc", "exact", "milp", AllocBendersParams, solve,
    "alloc-milp's problem by metric-inequality (Benders) decomposition: MILP master",
    scope=_scope, memory=memory, max_n=256, warm_start="best-start")
