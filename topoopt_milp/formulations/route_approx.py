"""``route-approx``: minimum congestion within ``1 + eps``, with a certified bound.

The problem is the max-concurrent-flow LP of :mod:`.route` (model units)::

    min U  s.t.  every commodity k = (s, t) sends d_k = D[s, t] on paths from s to t,
                 load(r) = sum of the flow on the arcs of resource r <= U cap(r)

A resource is one arc (duplex links) or the arcs sharing one capacity (an SNDlib link).

The certified lower bound (weak duality)
----------------------------------------
For resource lengths ``mu >= 0`` (arc length ``l(a) = mu_r`` for the resource ``r`` of ``a``)
and *any* routing with congestion ``U``::

    sum_k d_k dist_l(s_k, t_k) <= sum_a l(a) load(a) = sum_r mu_r load(r) <= U sum_r mu_r cap(r)

because every path of ``k`` is at least as long as its shortest path. Hence for every
``mu >= 0``, ``U* >= LB(mu) = sum_k d_k dist_l(s_k, t_k) / sum_r mu_r cap(r)``. The lengths
need not be optimal duals, only non-negative. Floating point cannot overstate the bound: a
computed Dijkstra distance exceeds the true one by at most a factor ``(1 + u)^h`` along the
true shortest path of ``h < n`` hops (``u = 2^-53``, one rounding per relaxation); the sums are
``math.fsum`` (exactly rounded); products and the division round once each. The bound is
multiplied by ``1 - 4 (n + 8) u``, which covers these ``n + 4`` roundings.

Algorithm (chosen by measurement: ``docs/route_approx.md``)
-----------------------------------------------------------
Path-based column generation. Every pair keeps a *key path* (its path in the first
shortest-path tree of its source) and gets alternative paths ``p`` with fractions ``x_p``;
the key path carries ``1 - sum_p x_p``. Substituting the key path keeps the restricted master
small and sparse::

    min U  s.t.  base(r) + sum_p d_k(p) [|p ∩ r| - |key_k ∩ r|] x_p <= U cap(r)   (all r)
                 sum_{p of k} x_p <= 1       (a row only for pairs with two or more
                 0 <= x_p <= 1                alternatives; one alternative is a bound)

``base(r)`` is the load of all key paths. The master is solved by HiGHS' primal simplex,
warm-started as columns arrive (new columns keep the basis feasible). Pricing is one
all-sources Dijkstra (:func:`scipy.sparse.csgraph.dijkstra`) at Wentges-smoothed lengths
``alpha mu_best + (1 - alpha) mu_master``; it gives the bound above and, per pair, a
shortest path that enters the master when it is shorter under the master's duals than every
path the pair has (for an optimal master, the pair's dual is ``d_k`` times that minimum
length, so this is exactly a negative reduced cost). At most ``max_cols`` columns enter per
round, the most improving first.

Circulant symmetry: with a circulant topology and rotation-invariant demand, averaging any
optimal routing over the ``n`` rotations keeps it optimal, so source 0 suffices. Its columns
are whole shortest-path trees (Dantzig-Wolfe): one convexity row and one capacity row per
difference class ``delta`` (``sum_{a of class delta} load_0(a) <= U L[0, delta]``). The bound
then uses the rotation-invariant lengths ``mu_delta / n`` on the full graph and the *full*
demand matrix, so it stays valid whatever the demand.

The incumbent ``upper`` is always recomputed from the arc loads of the returned fractions.
The run stops when ``(upper - lower) / upper <= eps``, when no column improves (the master
is then optimal), at ``time_limit`` or at ``max_iter``, returning incumbent and bound.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

import highspy
import numpy as np
import scipy
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import dijkstra

from ..backends.pulp_backend import BackendOutcome, highs_version
from ..instance import Instance
from ..result import SolveOptions, SolveResult, Status
from . import _exact

U_ROUND = 2.0**-53
LENGTH_FLOOR = 1e-7  # relative floor on lengths: strictly positive arcs order every tree
PRICE_TOL = 1e-9  # relative improvement a new path needs to enter
ALPHA = 0.5  # Wentges smoothing weight of the best-bound lengths
OPTIMAL_GAP = 1e-6  # a certified gap this small is reported as optimal (LP tolerances)


@dataclass
class ApproxResult:
    """Routing and certificate of :func:`approx_min_congestion` (model units).

    General case: ``key[k, v]`` is the parent of ``v`` in the key tree of source
    ``sources[k]``; alternative path ``j`` of pair ``(sources[alt_src[j]], alt_dst[j])`` has
    nodes ``alt_nodes[alt_ptr[j]:alt_ptr[j + 1]]`` and fraction ``alt_frac[j]`` (the key path
    carries the rest). Symmetric case: ``trees[j]`` are source-0 trees with weights
    ``tree_weight[j]``, rotated by ``s`` for source ``s``. ``upper`` is the congestion of this
    routing, ``lower`` a certified bound on the optimum, ``lengths`` the arc lengths of the
    best bound (``sum_r mu_r cap(r) = 1``; divided by ``n`` in the symmetric case)."""

    n: int
    upper: float
    lower: float
    symmetric: bool
    sources: np.ndarray
    key: np.ndarray
    alt_src: np.ndarray
    alt_dst: np.ndarray
    alt_ptr: np.ndarray
    alt_nodes: np.ndarray
    alt_frac: np.ndarray
    trees: np.ndarray
    tree_weight: np.ndarray
    lengths: np.ndarray
    arc_load: np.ndarray
    iterations: int
    status: str  # converged | optimal | time_limit | iteration_limit
    timings: dict[str, float] = field(default_factory=dict)
    history: list[tuple[int, float, float, float, int]] = field(default_factory=list)

    @property
    def gap(self) -> float:
        return (self.upper - self.lower) / self.upper if self.upper > 0 else 0.0

    def pair_paths(self, demand: np.ndarray) -> Iterator[tuple[int, int, list]]:
        """``(s, t, [(path, fraction), ...])`` for every pair with ``demand[s, t] > 0``."""
        n = self.n
        if self.symmetric:
            targets = np.arange(1, n)
            walks = [_walk_back(tree, 0, targets) for tree in self.trees]
            keep = np.flatnonzero(self.tree_weight > 0)
            base = {}
            for i, t in enumerate(targets):
                merged: dict[tuple[int, ...], float] = {}
                for j in keep:
                    key = tuple(walks[j][i])
                    merged[key] = merged.get(key, 0.0) + float(self.tree_weight[j])
                base[int(t)] = [(np.array(p), f) for p, f in merged.items()]
            for s, t in zip(*np.nonzero(demand), strict=True):
                if s == t:
                    continue
                yield int(s), int(t), [(tuple(((p + s) % n).tolist()), f)
                                       for p, f in base[int((t - s) % n)]]
            return
        order = np.lexsort((self.alt_dst, self.alt_src))
        pos = 0
        for k, s in enumerate(self.sources):
            ts = np.flatnonzero(demand[s] > 0)
            ts = ts[ts != s]
            keys = _walk_back(self.key[k], int(s), ts)
            for i, t in enumerate(ts):
                paths: dict[tuple[int, ...], float] = {}
                rest = 1.0
                while pos < len(order) and self.alt_src[order[pos]] == k and \
                        self.alt_dst[order[pos]] == t:
                    j = order[pos]
                    f = float(self.alt_frac[j])
                    if f > 0:
                        p = tuple(self.alt_nodes[self.alt_ptr[j]:self.alt_ptr[j + 1]].tolist())
                        paths[p] = paths.get(p, 0.0) + f
                        rest -= f
                    pos += 1
                if rest > 0:
                    kp = tuple(keys[i])
                    paths[kp] = paths.get(kp, 0.0) + rest
                yield int(s), int(t), list(paths.items())


def _walk_back(pred: np.ndarray, root: int, targets: np.ndarray) -> list[list[int]]:
    """Tree paths ``root -> t`` for every ``t`` in ``targets`` (walked for all at once)."""
    cur = np.asarray(targets, dtype=np.int64).copy()
    steps = [cur.copy()]
    for _ in range(len(pred)):
        if (cur == root).all():
            break
        cur = np.where(cur == root, root, pred[cur])
        steps.append(cur.copy())
    else:
        raise RuntimeError("tree walk did not reach the root (corrupt predecessor array)")
    walk = np.stack(steps, axis=1)  # (targets, hops + 1): t ... root root
    out = []
    for row in walk:
        end = int(np.argmax(row == root))
        out.append(row[: end + 1][::-1].tolist())
    return out


def _paths_back(pred: np.ndarray, src: np.ndarray, dst: np.ndarray, roots: np.ndarray):
    """Node sequences (flattened, with pointers) of the tree paths ``roots[src] -> dst`` in
    trees ``pred[src]``, all walked at once."""
    cur = dst.astype(np.int64).copy()
    root = roots[src]
    cols = [cur.copy()]
    for _ in range(pred.shape[1]):
        live = cur != root
        if not live.any():
            break
        cur = np.where(live, pred[src, np.maximum(cur, 0)], root)
        cols.append(np.where(live, cur, -1))
    walk = np.stack(cols, axis=1)  # t, ..., s, -1, -1
    lens = (walk >= 0).sum(axis=1)
    rev = walk[:, ::-1]
    flat = rev[rev >= 0]  # each row reversed: s ... t
    ptr = np.concatenate([[0], np.cumsum(lens)])
    return flat, ptr


def _tree_order(dist: np.ndarray) -> np.ndarray:
    return np.argsort(dist, axis=1, kind="stable")


def _tree_sum_down(order, pred, w_arc, arc_id, roots) -> np.ndarray:
    """Length of the tree path from the root to every node: ``L[v] = L[pred v] + w(pred v, v)``,
    nodes processed nearest first."""
    K, n = pred.shape
    out = np.zeros((K, n))
    rows = np.arange(K)
    for i in range(1, n):
        v = order[:, i]
        p = pred[rows, v]
        ok = p >= 0
        a = arc_id[np.where(ok, p, 0), v]
        out[rows, v] = np.where(ok, out[rows, np.maximum(p, 0)] + w_arc[a], np.inf)
    out[rows, roots] = 0.0
    return out


def _tree_sum_up(order, pred, demand, roots) -> np.ndarray:
    """Subtree demand below every node (the load of tree arc ``(pred v, v)``), nodes
    processed farthest first."""
    K, n = pred.shape
    acc = demand.astype(float).copy()
    rows = np.arange(K)
    for i in range(n - 1, 0, -1):
        v = order[:, i]
        p = pred[rows, v]
        ok = p >= 0  # one node per tree and step: the (tree, parent) pairs are distinct
        if ok.all():
            acc[rows, p] += acc[rows, v]
        else:
            acc[rows[ok], p[ok]] += acc[rows[ok], v[ok]]
    acc[rows, roots] = 0.0
    return acc


class _Pricer:
    """All-sources Dijkstra under resource lengths, and the certified bound."""

    def __init__(self, n, arcs, res_of_arc, cap, sources, D, demand_rows, symmetric):
        self.n, self.sources, self.D, self.rows, self.sym = n, sources, D, demand_rows, symmetric
        self.res_of_arc, self.cap = res_of_arc, cap
        G = csr_matrix((np.arange(1, len(arcs) + 1, dtype=float), (arcs[:, 0], arcs[:, 1])),
                       shape=(n, n))
        self.perm = G.data.astype(np.int64) - 1  # csr slot -> arc
        self.indices, self.indptr = G.indices, G.indptr

    def __call__(self, mu: np.ndarray):
        length = mu[self.res_of_arc]
        G = csr_matrix((length[self.perm], self.indices, self.indptr), shape=(self.n, self.n))
        dist, pred = dijkstra(G, directed=True, indices=self.sources, return_predecessors=True)
        norm = math.fsum((mu * self.cap).tolist())
        if self.sym:
            n = self.n
            rot = (np.arange(n)[None, :] - np.arange(n)[:, None]) % n
            total = math.fsum((self.D * dist[0][rot]).ravel().tolist()) / n
        else:
            total = math.fsum((self.rows * np.where(self.rows > 0, dist, 0.0)).ravel().tolist())
        lb = total / norm * (1.0 - 4.0 * (self.n + 8) * U_ROUND) if norm > 0 else 0.0
        return dist, pred.astype(np.int64), lb


def _smooth(alpha, best, mu, cap):
    """Normalised (``sum mu cap = 1``), floored combination of best-bound and dual lengths."""
    mix = alpha * best + (1 - alpha) * mu
    mix = np.maximum(mix, LENGTH_FLOOR * mix.max())
    return mix / math.fsum((mix * cap).tolist())


def _normalise(mu, cap, fallback):
    mu = np.maximum(mu, 0.0)
    if not (mu > 0).any():
        return fallback
    return mu / math.fsum((mu * cap).tolist())


def approx_min_congestion(
    n: int,
    arcs: np.ndarray,
    res_arcs,
    res_cap: np.ndarray,
    demand: np.ndarray,
    epsilon: float = 0.01,
    time_limit: float | None = None,
    symmetric: bool = False,
    max_iter: int = 1000,
    max_cols: int | None = None,
    init_rounds: int = 2,
    seed: int = 0,
) -> ApproxResult:
    """Minimum congestion within ``1 + epsilon``, with a certified bound (module docstring).

    Parameters
    ----------
    n : number of nodes.
    arcs : ``(m, 2)`` int array of distinct directed arcs ``(u, v)``.
    res_arcs : sequence of int arrays, the arcs of each capacity resource; every arc in
        exactly one resource.
    res_cap : ``(R,)`` positive capacities.
    demand : dense ``(n, n)`` matrix ``D[s, t] >= 0`` (the diagonal is ignored); every pair
        with demand must be connected.
    epsilon : target relative gap ``(upper - lower) / upper``.
    time_limit : seconds; the incumbent and the best bound are returned when it runs out.
    symmetric : the topology is circulant and the demand rotation-invariant (checked).
    max_iter : pricing rounds at most.
    max_cols : columns entering per round (default ``max(4 m, n^2 / 16)``).
    """
    t0 = time.perf_counter()
    arcs = np.asarray(arcs, dtype=np.int64).reshape(-1, 2)
    m = len(arcs)
    D = np.array(demand, dtype=float)
    if D.shape != (n, n):
        raise ValueError(f"demand: expected an ({n}, {n}) matrix, got shape {D.shape}")
    if (D < 0).any() or not np.isfinite(D).all():
        raise ValueError("demand: volumes must be finite and non-negative")
    np.fill_diagonal(D, 0.0)
    res_cap = np.asarray(res_cap, dtype=float)
    if len(res_cap) != len(res_arcs) or (res_cap <= 0).any():
        raise ValueError("res_cap: need one positive capacity per resource")
    res_of_arc = np.full(m, -1, dtype=np.int64)
    for r, a in enumerate(res_arcs):
        if (res_of_arc[np.asarray(a, dtype=np.int64)] >= 0).any():
            raise ValueError(f"res_arcs: resource {r} shares an arc with another resource")
        res_of_arc[np.asarray(a, dtype=np.int64)] = r
    if (res_of_arc < 0).any():
        raise ValueError("res_arcs: every arc needs a resource")
    arc_id = np.full((n, n), -1, dtype=np.int64)
    arc_id[arcs[:, 0], arcs[:, 1]] = np.arange(m)
    if (arc_id[arcs[:, 0], arcs[:, 1]] != np.arange(m)).any():
        raise ValueError("arcs: duplicate arcs (merge parallel links into one capacity)")
    limits = _Limits(t0, time_limit, max_iter, epsilon)
    if symmetric:
        if len(res_arcs) != m:
            raise ValueError("symmetric: needs one resource per arc (no shared capacities)")
        return _solve_trees(n, arcs, arc_id, res_of_arc, res_cap, D, limits)
    if max_cols is None:
        max_cols = max(4 * m, n * n // 16)
    return _solve_paths(n, arcs, arc_id, res_of_arc, res_cap, D, limits, max_cols, init_rounds,
                        seed)


@dataclass
class _Limits:
    t0: float
    time_limit: float | None
    max_iter: int
    epsilon: float

    def elapsed(self) -> float:
        return time.perf_counter() - self.t0

    def left(self) -> float | None:
        return None if self.time_limit is None else self.time_limit - self.elapsed()

    def out_of_time(self) -> bool:
        return self.time_limit is not None and self.elapsed() >= self.time_limit

    def stop(self, upper: float, lower: float) -> str:
        """Why to stop now (``""``: go on)."""
        if upper - lower <= self.epsilon * upper:
            return "converged"
        return "time_limit" if self.out_of_time() else ""


class _Bound:
    """The best certified bound so far and its lengths; prices at the smoothed point."""

    def __init__(self, pricer: _Pricer, cap: np.ndarray, lb: float, mu: np.ndarray):
        self.pricer, self.cap, self.lb, self.mu = pricer, cap, lb, mu

    def price(self, alpha: float, mu: np.ndarray, timings: dict):
        t = time.perf_counter()
        mu_sep = _smooth(alpha, self.mu, mu, self.cap)
        dist, pred, lb = self.pricer(mu_sep)
        if lb > self.lb:
            self.lb, self.mu = lb, mu_sep
        timings["pricing"] += time.perf_counter() - t
        return dist, pred


def _highs(nrow_lo, nrow_up, cap_rows, cap, solver: str) -> highspy.Highs:
    """A master LP with the given rows and the column ``U`` (cost 1, ``-cap`` in the
    capacity rows). ``solver``: ``"ipm"`` (interior point without crossover: the path master
    is highly degenerate, and well-centred duals price better) or ``"simplex"`` (primal,
    warm-started; for the tiny circulant master)."""
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    if solver == "ipm":
        h.setOptionValue("solver", "ipm")
        h.setOptionValue("run_crossover", "off")
    else:
        h.setOptionValue("solver", "simplex")
        h.setOptionValue("simplex_strategy", 4)  # primal: new columns keep the basis feasible
    h.addRows(len(nrow_lo), np.asarray(nrow_lo, float), np.asarray(nrow_up, float), 0,
              np.zeros(0, np.int32), np.zeros(0, np.int32), np.zeros(0))
    h.addCols(1, np.array([1.0]), np.array([0.0]), np.array([np.inf]), len(cap_rows),
              np.array([0], np.int32), np.asarray(cap_rows, np.int32), -np.asarray(cap, float))
    return h


def _run(h: highspy.Highs, limits: _Limits) -> bool:
    left = limits.left()
    if left is not None:
        h.setOptionValue("time_limit", max(0.01, left))
    h.run()
    return h.getModelStatus() == highspy.HighsModelStatus.kOptimal


# -- general case: path columns with key-path substitution ----------------------------------
def _solve_paths(n, arcs, arc_id, res_of_arc, cap, D, limits, max_cols, init_rounds,
                 seed) -> ApproxResult:
    timings = dict.fromkeys(("setup", "master", "pricing", "columns"), 0.0)
    t = time.perf_counter()
    m, R = len(arcs), len(cap)
    sources = np.flatnonzero(D.sum(axis=1) > 0)
    S = len(sources)
    rows = D[sources]
    pricer = _Pricer(n, arcs, res_of_arc, cap, sources, D, rows, False)
    mu0 = _normalise(1.0 / cap, cap, None)
    dist, key, lb = pricer(mu0)
    if not np.isfinite(np.where(rows > 0, dist, 0.0)).all():
        raise ValueError("demand: a pair with demand is not connected")
    bound = _Bound(pricer, cap, lb, mu0)
    key_order = _tree_order(dist)
    # base loads: every pair on its key path
    acc = _tree_sum_up(key_order, key, rows, sources)
    kk, vv = np.nonzero((key >= 0) & (acc > 0))
    base = np.bincount(res_of_arc[arc_id[key[kk, vv], vv]], weights=acc[kk, vv], minlength=R)
    h = _highs(np.full(R, -np.inf), -base, np.arange(R), cap, "ipm")
    # columns: pair (source index, dst), node path, arcs
    col_src: list[np.ndarray] = []
    col_dst: list[np.ndarray] = []
    col_nodes: list[np.ndarray] = []
    col_ptr: list[np.ndarray] = []
    n_alt = np.zeros((S, n), dtype=np.int64)  # alternatives per pair
    conv_row = np.full((S, n), -1, dtype=np.int64)  # row of the pair's convexity constraint
    first_col = np.full((S, n), -1, dtype=np.int64)
    ncol, nrow = 1, R
    alt_len_arcs = np.zeros(0, dtype=np.int64)  # arcs of all columns, flattened
    alt_len_ptr = np.zeros(1, dtype=np.int64)

    def add(ks, ts, pred):
        nonlocal ncol, nrow, alt_len_arcs, alt_len_ptr
        nodes, ptr = _paths_back(pred, ks, ts, sources)
        knodes, kptr = _paths_back(key, ks, ts, sources)
        ncol, nrow = _add_columns(h, ks, ts, rows[ks, ts], nodes, ptr, knodes, kptr, arc_id,
                                  res_of_arc, n_alt, conv_row, first_col, ncol, nrow)
        col_src.append(ks)
        col_dst.append(ts)
        col_nodes.append(nodes)
        col_ptr.append(ptr)
        arcs_new = arc_id[nodes[:-1], nodes[1:]]
        keep = np.ones(len(arcs_new), dtype=bool)
        keep[ptr[1:-1] - 1] = False  # the junction between consecutive paths is no arc
        alt_len_arcs = np.concatenate([alt_len_arcs, arcs_new[keep]])
        alt_len_ptr = np.concatenate([alt_len_ptr, alt_len_ptr[-1] + np.cumsum(np.diff(ptr) - 1)])

    # diversify: trees under randomly perturbed lengths give pairs equally short alternatives
    rng = np.random.default_rng(seed)
    for _ in range(init_rounds):
        mu_r = mu0 * rng.uniform(1.0, 1.5, size=R)
        dist_r, pred_r, _ = pricer(mu_r)
        lr = mu_r[res_of_arc]
        new_len = _tree_sum_down(_tree_order(dist_r), pred_r, lr, arc_id, sources)
        old_len = _tree_sum_down(key_order, key, lr, arc_id, sources)
        differ = (rows > 0) & (new_len < old_len * (1 - 1e-12))
        ks, ts = np.nonzero(differ)
        if len(ks):
            add(ks, ts, pred_r)
    timings["setup"] = time.perf_counter() - t
    history, status, alpha, it, x = [], "iteration_limit", ALPHA, 0, np.zeros(1)
    while it < limits.max_iter:
        it += 1
        t = time.perf_counter()
        ok = _run(h, limits)
        sol = h.getSolution()
        x = np.asarray(sol.col_value)
        y = np.asarray(sol.row_dual)
        timings["master"] += time.perf_counter() - t
        if not ok:
            status = "time_limit"
            break
        load = np.asarray(sol.row_value)[:R] + cap * x[0] + base
        upper = float((load / cap).max())
        mu = _normalise(-y[:R], cap, mu0)
        dist, pred = bound.price(alpha, mu, timings)
        history.append((it, upper, bound.lb, limits.elapsed(), ncol - 1))
        status = limits.stop(upper, bound.lb)
        if status:
            break
        # which pairs have a path shorter (under the master duals) than all their paths?
        t = time.perf_counter()
        lm = mu[res_of_arc]
        new_len = _tree_sum_down(_tree_order(dist), pred, lm, arc_id, sources)
        have = _tree_sum_down(key_order, key, lm, arc_id, sources)
        if ncol > 1:
            seg = np.add.reduceat(lm[alt_len_arcs], alt_len_ptr[:-1])
            seg[np.diff(alt_len_ptr) == 0] = 0.0
            cs, cd = np.concatenate(col_src), np.concatenate(col_dst)
            np.minimum.at(have, (cs, cd), seg)
        gain = np.where(rows > 0, rows * (have - new_len), 0.0)
        thr = PRICE_TOL * np.maximum(rows * have, 1e-300)
        cand = np.flatnonzero((gain > thr).ravel())
        if len(cand) == 0:
            timings["columns"] += time.perf_counter() - t
            if alpha == 0.0:
                status = "optimal"  # no improving path at the master's own duals
                break
            alpha = 0.0  # mispricing at the smoothed point: price at the duals themselves
            continue
        alpha = ALPHA
        if len(cand) > max_cols:
            cand = cand[np.argpartition(-gain.ravel()[cand], max_cols)[:max_cols]]
        ks, ts = np.divmod(cand, n)
        add(ks, ts, pred)
        timings["columns"] += time.perf_counter() - t
    # the returned routing: master fractions, recomputed loads
    frac = np.clip(x[1:], 0.0, 1.0) if len(x) > 1 else np.zeros(0)
    cs = np.concatenate(col_src) if col_src else np.zeros(0, np.int64)
    cd = np.concatenate(col_dst) if col_dst else np.zeros(0, np.int64)
    tot = np.zeros((S, n))
    np.add.at(tot, (cs, cd), frac)
    over = tot[cs, cd] > 1.0
    frac[over] = frac[over] / tot[cs, cd][over]
    tot = np.minimum(tot, 1.0)
    nodes_all, ptr_all = _concat_paths(col_nodes, col_ptr)
    arc_load = _key_loads(key_order, key, rows * (1.0 - tot), sources, arc_id, m)
    if len(frac):
        seg_arcs = arc_id[nodes_all[:-1], nodes_all[1:]]
        owner = np.repeat(np.arange(len(frac)), np.diff(ptr_all))[:-1]
        same = owner == np.repeat(np.arange(len(frac)), np.diff(ptr_all))[1:]
        w = (rows[cs, cd] * frac)[owner[same]]
        arc_load += np.bincount(seg_arcs[same], weights=w, minlength=m)
    upper = float((np.bincount(res_of_arc, weights=arc_load, minlength=R) / cap).max())
    timings["total"] = limits.elapsed()
    return ApproxResult(
        n=n, upper=upper, lower=min(bound.lb, upper), symmetric=False, sources=sources, key=key,
        alt_src=cs, alt_dst=cd, alt_ptr=ptr_all, alt_nodes=nodes_all, alt_frac=frac,
        trees=np.zeros((0, n), np.int64), tree_weight=np.zeros(0), lengths=bound.mu[res_of_arc],
        arc_load=arc_load, iterations=it, status=status, timings=timings, history=history,
    )


def _concat_paths(nodes_list, ptr_list):
    if not nodes_list:
        return np.zeros(0, np.int64), np.zeros(1, np.int64)
    offs = np.cumsum([0] + [len(x) for x in nodes_list[:-1]])
    ptr = np.concatenate([[0]] + [p[1:] + o for p, o in zip(ptr_list, offs, strict=True)])
    return np.concatenate(nodes_list), ptr


def _key_loads(order, key, rows, sources, arc_id, m) -> np.ndarray:
    acc = _tree_sum_up(order, key, rows, sources)
    kk, vv = np.nonzero((key >= 0) & (acc > 0))
    return np.bincount(arc_id[key[kk, vv], vv], weights=acc[kk, vv], minlength=m)


def _add_columns(h, ks, ts, vol, nodes, ptr, knodes, kptr, arc_id, res_of_arc, n_alt, conv_row,
                 first_col, ncol, nrow):
    """Add one column per pair ``(ks[i], ts[i])``: coefficients ``vol`` on the resources of
    the new path minus those of the key path (common arcs cancel), plus the pair's
    convexity row when it has one; pairs reaching two alternatives get that row now."""
    C = len(ks)

    def res_entries(nd, pt, sign):
        a = arc_id[nd[:-1], nd[1:]]
        owner = np.repeat(np.arange(C), np.diff(pt))
        same = owner[:-1] == owner[1:]
        return owner[:-1][same], res_of_arc[a[same]], sign * vol[owner[:-1][same]]

    o1, r1, v1 = res_entries(nodes, ptr, 1.0)
    o2, r2, v2 = res_entries(knodes, kptr, -1.0)
    own = np.concatenate([o1, o2])
    res = np.concatenate([r1, r2])
    val = np.concatenate([v1, v2])
    R = int(res_of_arc.max()) + 1
    keyv, inv = np.unique(own * R + res, return_inverse=True)
    sval = np.bincount(inv, weights=val)
    nz = np.abs(sval) > 1e-14 * np.maximum(vol[keyv // R], 1e-300)
    own, res, val = keyv[nz] // R, keyv[nz] % R, sval[nz]
    row = conv_row[ks, ts]
    has_row = row >= 0
    own = np.concatenate([own, np.flatnonzero(has_row)])
    res = np.concatenate([res, row[has_row]])
    val = np.concatenate([val, np.ones(int(has_row.sum()))])
    o = np.argsort(own, kind="stable")
    own, res, val = own[o], res[o], val[o]
    starts = np.searchsorted(own, np.arange(C)).astype(np.int32)
    h.addCols(C, np.zeros(C), np.zeros(C), np.ones(C), len(val), starts, res.astype(np.int32),
              val.astype(float))
    cols = ncol + np.arange(C)
    # second alternative: a convexity row over the first and this one
    two = n_alt[ks, ts] == 1
    if two.any():
        k2, t2, c2 = ks[two], ts[two], cols[two]
        q = len(k2)
        idx = np.stack([first_col[k2, t2], c2], axis=1).ravel().astype(np.int32)
        h.addRows(q, np.full(q, -np.inf), np.ones(q), 2 * q, (2 * np.arange(q)).astype(np.int32),
                  idx, np.ones(2 * q))
        conv_row[k2, t2] = nrow + np.arange(q)
        nrow += q
    fresh = n_alt[ks, ts] == 0
    first_col[ks[fresh], ts[fresh]] = cols[fresh]
    n_alt[ks, ts] += 1
    return ncol + C, nrow


# -- circulant case: source-0 trees (Dantzig-Wolfe) -----------------------------------------
def _solve_trees(n, arcs, arc_id, res_of_arc, cap, D, limits) -> ApproxResult:
    timings = dict.fromkeys(("setup", "master", "pricing", "columns"), 0.0)
    t = time.perf_counter()
    _check_circulant(n, arcs, cap[res_of_arc], D)
    delta = (arcs[:, 1] - arcs[:, 0]) % n
    classes, cls_of_arc = np.unique(delta, return_inverse=True)
    ccap = np.zeros(len(classes))
    ccap[cls_of_arc] = cap[res_of_arc]
    C = len(classes)
    sources = np.array([0])
    pricer = _Pricer(n, arcs, cls_of_arc, ccap, sources, D, D[:1], True)
    h = _highs(np.concatenate([[1.0], np.full(C, -np.inf)]), np.concatenate([[1.0], np.zeros(C)]),
               1 + np.arange(C), ccap, "simplex")
    trees, loads = [], []

    def add(dist, pred):
        acc = _tree_sum_up(_tree_order(dist), pred, D[:1], sources)[0]
        v = np.flatnonzero((pred[0] >= 0) & (acc > 0))
        a = arc_id[pred[0, v], v]
        cl = np.bincount(cls_of_arc[a], weights=acc[v], minlength=C)
        nz = np.flatnonzero(cl > 0)
        h.addCols(1, np.zeros(1), np.zeros(1), np.array([np.inf]), 1 + len(nz),
                  np.array([0], np.int32), np.concatenate([[0], 1 + nz]).astype(np.int32),
                  np.concatenate([[1.0], cl[nz]]))
        trees.append(pred[0].copy())
        loads.append(cl)

    mu0 = _normalise(1.0 / ccap, ccap, None)
    dist, pred, lb = pricer(mu0)
    if not np.isfinite(dist).all():
        raise ValueError("demand: a pair with demand is not connected")
    bound = _Bound(pricer, ccap, lb, mu0)
    add(dist, pred)
    timings["setup"] = time.perf_counter() - t
    history, status, alpha, it, x = [], "iteration_limit", ALPHA, 0, np.array([0.0, 1.0])
    while it < limits.max_iter:
        it += 1
        t = time.perf_counter()
        ok = _run(h, limits)
        sol = h.getSolution()
        x, y = np.asarray(sol.col_value), np.asarray(sol.row_dual)
        timings["master"] += time.perf_counter() - t
        if not ok:
            status = "time_limit"
            break
        cl = np.stack(loads).T @ np.clip(x[1:], 0, None)
        upper = float((cl / ccap).max())
        mu = _normalise(-y[1:], ccap, mu0)
        dist, pred = bound.price(alpha, mu, timings)
        history.append((it, upper, bound.lb, limits.elapsed(), len(trees)))
        status = limits.stop(upper, bound.lb)
        if status:
            break
        acc = _tree_sum_up(_tree_order(dist), pred, D[:1], sources)[0]
        v = np.flatnonzero(pred[0] >= 0)
        cost = float((acc[v] * mu[cls_of_arc[arc_id[pred[0, v], v]]]).sum())
        if cost >= y[0] - PRICE_TOL * abs(y[0]):
            if alpha == 0.0:
                status = "optimal"
                break
            alpha = 0.0
            continue
        alpha = ALPHA
        t = time.perf_counter()
        add(dist, pred)
        timings["columns"] += time.perf_counter() - t
    w = np.clip(x[1:], 0.0, None)
    w = w / w.sum() if w.sum() > 0 else np.eye(len(trees))[0]
    cl = np.stack(loads).T @ w
    arc_load = cl[cls_of_arc]  # the rotated routing puts the class total on every arc
    upper = float((np.bincount(res_of_arc, weights=arc_load, minlength=len(cap)) / cap).max())
    timings["total"] = limits.elapsed()
    return ApproxResult(
        n=n, upper=upper, lower=min(bound.lb, upper), symmetric=True, sources=sources,
        key=np.zeros((0, n), np.int64), alt_src=np.zeros(0, np.int64),
        alt_dst=np.zeros(0, np.int64), alt_ptr=np.zeros(1, np.int64),
        alt_nodes=np.zeros(0, np.int64), alt_frac=np.zeros(0), trees=np.stack(trees),
        tree_weight=w, lengths=bound.mu[cls_of_arc] / n, arc_load=arc_load, iterations=it,
        status=status, timings=timings, history=history,
    )


def _check_circulant(n, arcs, cap_arc, D) -> None:
    cap = np.zeros((n, n))
    cap[arcs[:, 0], arcs[:, 1]] = cap_arc
    for i in range(1, n):
        if not np.array_equal(cap[i], np.roll(cap[0], i)):
            raise ValueError("symmetric: the topology is not circulant")
        if not np.allclose(D[i], np.roll(D[0], i), rtol=1e-12, atol=0):
            raise ValueError("symmetric: the demand is not rotation-invariant")


# -- the method ``route-approx`` ----------------------------------------------------------------
def solve(instance: Instance, options: SolveOptions) -> SolveResult:
    """``route-approx``: :func:`approx_min_congestion` on the route problem of ``instance``.

    The topology, ring orders, commodities and capacity resources are those of ``route-milp``
    (:func:`.route.build_problem`); ``options.extra["epsilon"]`` (default 0.01) is the target
    gap; ``extra["formulation"] = "source"`` turns the circulant reduction off. The objective is
    recomputed from the returned routing, the bound is the certified lower bound in seconds,
    and the status is ``optimal`` only when the certified gap is below ``OPTIMAL_GAP``."""
    from . import route

    t0 = time.perf_counter()
    eps = options.extra.get("epsilon", 0.01)
    if not isinstance(eps, int | float) or not 0 < float(eps) < 1:
        raise ValueError(f"epsilon: expected a number in (0, 1), got {eps!r}")
    form = options.extra.get("formulation", "auto")
    if form not in ("auto", "source", "symmetric"):
        raise ValueError(f"formulation: unknown {form!r} for route-approx (known: auto, source, "
                         "symmetric)")
    P = route.build_problem(instance, options)
    sym = form != "source" and route.symmetric_applies(P)
    if form == "symmetric" and not sym:
        raise ValueError("formulation: the symmetric reduction needs a circulant topology and "
                         "rotation-invariant traffic")
    res = approx_min_congestion(instance.n, P.arcs, P.res_arcs, P.res_cap, P.D, float(eps),
                                options.time_limit, symmetric=sym, seed=options.seed)
    t = time.perf_counter()
    pair_paths = {(s, t): paths for s, t, paths in res.pair_paths(P.D)}
    routing = _exact.routing_from_pair_paths(instance, P.topology, P.rings, pair_paths,
                                             options.seed)
    assemble = time.perf_counter() - t
    status = Status.OPTIMAL if res.gap <= OPTIMAL_GAP else Status.FEASIBLE
    tm = ", ".join(f"{k} {v:.2f}" for k, v in res.timings.items())
    note = (f"formulation={'symmetric' if sym else 'paths'}; epsilon={float(eps):g}; "
            f"certified gap {res.gap:.3g} after {res.iterations} rounds ({res.status}); "
            f"times [s]: {tm}, routing {assemble:.2f}")
    outcome = BackendOutcome(status, res.upper, res.lower, res.timings["total"], "approx-cg",
                             f"highspy {highs_version()}, scipy {scipy.__version__}", {})
    return route.finish("route-approx", P, options, outcome, routing,
                        res.upper * P.sec_per_unit, res.lower * P.sec_per_unit,
                        time.perf_counter() - t0, note=note)
