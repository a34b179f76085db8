"""Per-source tree columns for :mod:`.route_approx` (Dantzig-Wolfe by source).

A column is one shortest-path tree ``T`` of one source ``s`` carrying *all* of ``s``'s demand:
tree arc ``(p, v)`` carries the demand of the subtree below ``v``, so its resource loads are
``load_T(r) = sum_{(p, v) in T, arc of r} sum_{t below v} D[s, t]``. The restricted master is::

    min U  s.t.  sum_{s, T} lambda_{s,T} load_T(r) <= U cap(r)      (every resource r)
                 sum_T lambda_{s,T} = 1                              (every source s)
                 lambda >= 0

with about ``S x rounds`` columns (``S`` sources) instead of one per commodity path. Any
feasible ``lambda`` is a routing: pair ``(s, t)`` sends ``lambda_{s,T}`` of its demand on its
path in ``T``, so the loads are exactly the master's left-hand sides.

Pricing (why a tree is the best column of a source). With capacity-row duals ``mu_r >= 0``
and convexity duals ``pi_s``, the reduced cost of ``(s, T)`` is
``sum_r mu_r load_T(r) - pi_s = sum_t D[s, t] len_mu(path_T(s, t)) - pi_s``. A shortest-path
tree under ``mu`` minimises every term at once, so it is the minimum over *all* flows of
``s``, and the master is optimal for the full problem when no source's shortest-path tree
has ``sum_t D[s, t] dist_mu(s, t) < pi_s``.

The certified bound. Summing the pricing minimum over the sources gives exactly the bound
``LB(mu) = sum_{s,t} D[s, t] dist_mu(s, t) / sum_r mu_r cap(r)`` of :mod:`.method` (weak
duality for *any* ``mu >= 0``, proof and floating-point margin there); it depends on the
lengths only, not on the column type, so tree columns keep the same certificate and the same
:class:`.common.Bound` (Wentges smoothing and the line search along the smoothing segment).

Measured against path columns (:mod:`.paths`; random 4-regular, all-to-all, one run, load
4-5 on 2 cores): n = 64: 15 rounds, 2.2 CPU s against 5 rounds, 0.35 s; n = 128: 25 rounds,
36 CPU s against 5 rounds, 1.9 s. With a warm-started primal simplex master instead: 0.8 and
90 CPU s. Each tree has ``n - 1`` entries, so the master is dense and its solves grow fast;
paths stay the default and ``columns = "trees"`` selects this module.

The master is solved by interior point without crossover and rebuilt from the pool every
round; columns unused for ``AGE`` masters leave the pool, and pruning stops for good after
``STALL`` rounds without progress (as in :mod:`.paths`, where dropping at the first unused
master made the search cycle).
"""

from __future__ import annotations

import time

import numpy as np

from .common import (
    ALPHA,
    PRICE_TOL,
    ApproxResult,
    Limits,
    Pricer,
    master_highs,
    normalise,
    run_master,
    tree_order,
    tree_sum_down,
    tree_sum_up,
)
from .paths import AGE, PRUNE, Pruning


class TreePool:
    """Tree columns: ``pred[j]`` (parents, ``-1`` at the root and unreachable nodes) of source
    index ``src[j]``; resource loads ``res/val[ptr[j]:ptr[j + 1]]``; ``age[j]``: consecutive
    masters that left the column unused."""

    def __init__(self, n: int):
        self.pred = np.zeros((0, n), np.int32)
        self.src = np.zeros(0, np.int64)
        self.res, self.val = np.zeros(0, np.int64), np.zeros(0)
        self.ptr = np.zeros(1, np.int64)
        self.age = np.zeros(0, np.int64)

    def __len__(self) -> int:
        return len(self.src)

    def add(self, ks, pred, dist, rows, sources, arc_id, res_of_arc, R) -> None:
        """The trees ``pred`` (one row per source index in ``ks``) and their loads."""
        acc = tree_sum_up(tree_order(dist), pred, rows[ks], sources[ks])
        kk, vv = np.nonzero((pred >= 0) & (acc > 0))
        r = res_of_arc[arc_id[pred[kk, vv], vv]]
        key, inv = np.unique(kk * R + r, return_inverse=True)  # merge shared resources
        val = np.bincount(inv, weights=acc[kk, vv])
        own = key // R
        self.pred = np.concatenate([self.pred, pred.astype(np.int32)])
        self.src = np.concatenate([self.src, ks])
        self.res = np.concatenate([self.res, key % R])
        self.val = np.concatenate([self.val, val])
        self.ptr = np.concatenate([self.ptr, self.ptr[-1] + np.searchsorted(
            own, np.arange(1, len(ks) + 1))])
        self.age = np.concatenate([self.age, np.zeros(len(ks), np.int64)])

    def take(self, idx: np.ndarray) -> TreePool:
        out = TreePool(self.pred.shape[1])
        out.pred, out.src, out.age = self.pred[idx], self.src[idx], self.age[idx]
        lens = np.diff(self.ptr)[idx]
        out.ptr = np.concatenate([[0], np.cumsum(lens)])
        pos = np.repeat(self.ptr[idx] - out.ptr[:-1], lens) + np.arange(out.ptr[-1])
        out.res, out.val = self.res[pos], self.val[pos]
        return out

    def res_load(self, lam: np.ndarray, R: int) -> np.ndarray:
        owner = np.repeat(np.arange(len(self)), np.diff(self.ptr))
        return np.bincount(self.res, weights=self.val * lam[owner], minlength=R)


def _master(pool: TreePool, cap: np.ndarray, S: int):
    R, C = len(cap), len(pool)
    h = master_highs(np.concatenate([np.full(R, -np.inf), np.ones(S)]),
                     np.concatenate([np.zeros(R), np.ones(S)]), np.arange(R), cap, "ipm")
    lens = np.diff(pool.ptr) + 1
    starts = np.concatenate([[0], np.cumsum(lens)])[:-1]
    idx = np.empty(int(lens.sum()), np.int64)
    val = np.empty(len(idx))
    owner = np.repeat(np.arange(C), np.diff(pool.ptr))
    pos = starts[owner] + np.arange(len(pool.res)) - pool.ptr[owner]
    idx[pos], val[pos] = pool.res, pool.val
    conv = starts + lens - 1
    idx[conv], val[conv] = R + pool.src, 1.0
    h.addCols(C, np.zeros(C), np.zeros(C), np.full(C, np.inf), len(idx), starts.astype(np.int32),
              idx.astype(np.int32), val)
    return h


def _weights(pool: TreePool, x: np.ndarray, S: int) -> np.ndarray:
    """Convex weights per source from a master solution (interior-point dust removed, the
    rest renormalised, so that every source routes exactly its demand)."""
    lam = np.zeros(len(pool))
    lam[: len(x) - 1] = np.clip(x[1:], 0.0, None)
    tot = np.bincount(pool.src, weights=lam, minlength=S)
    lam[lam <= PRUNE * tot[pool.src]] = 0.0
    tot = np.bincount(pool.src, weights=lam, minlength=S)
    if (tot <= 0).any():  # cannot happen for a solved master; the first tree is the fallback
        first = np.unique(pool.src, return_index=True)[1]
        for k in np.flatnonzero(tot <= 0):
            lam[first[k]] = 1.0
        tot = np.bincount(pool.src, weights=lam, minlength=S)
    return lam / tot[pool.src]


def solve_trees(n, arcs, arc_id, res_of_arc, cap, D, limits: Limits, init_rounds: int,
                seed: int) -> ApproxResult:
    """Column generation with per-source tree columns (module docstring)."""
    timings = dict.fromkeys(("setup", "master", "pricing", "columns"), 0.0)
    t = time.perf_counter()
    R = len(cap)
    sources = np.flatnonzero(D.sum(axis=1) > 0)
    S = len(sources)
    rows = D[sources]
    pricer = Pricer(n, arcs, res_of_arc, cap, sources, D, rows, False)
    pricer.limits = limits
    pool = TreePool(n)
    ks_all = np.arange(S)

    def add(dist, pred, ks=ks_all):
        pool.add(ks, pred[ks], dist[ks], rows, sources, arc_id, res_of_arc, R)

    mu0 = normalise(1.0 / cap, cap, None)
    dist, pred, lb = pricer(mu0)
    if not np.isfinite(np.where(rows > 0, dist, 0.0)).all():
        raise ValueError("demand: a pair with demand is not connected")
    bound = pricer.bound(lb, mu0)
    add(dist, pred)
    rng = np.random.default_rng(seed)
    for _ in range(init_rounds):
        if limits.out_of_time():
            break
        dist_r, pred_r, _ = pricer(mu0 * rng.uniform(1.0, 1.5, size=R))
        add(dist_r, pred_r)
    timings["setup"] = time.perf_counter() - t
    history, status, it = [], "iteration_limit", 0
    last_pool, x = pool, None
    pruning = Pruning(np.inf, bound.lb)
    while it < limits.max_iter:
        if limits.out_of_time():
            status = "time_limit"
            break
        it += 1
        t = time.perf_counter()
        h = _master(pool, cap, S)
        stop = run_master(h, limits)
        timings["master"] += time.perf_counter() - t
        if stop:
            status = stop
            break
        sol = h.getSolution()
        last_pool, x = pool, np.asarray(sol.col_value)
        y = -np.asarray(sol.row_dual)
        lam = _weights(pool, x, S)
        upper = float((pool.res_load(lam, R) / cap).max())
        scale = float(np.dot(np.maximum(y[:R], 0), cap))
        mu = normalise(y[:R], cap, mu0)
        pi = -y[R:] / scale if scale > 0 else np.full(S, np.inf)  # convexity duals, mu scale
        for alpha in (ALPHA, 0.0):  # at the master's own duals when the smoothed point misprices
            dist, pred = bound.price(alpha, mu, timings)
            status = limits.stop(upper, bound.lb)
            if status:
                break
            t = time.perf_counter()
            tree_len = tree_sum_down(tree_order(dist), pred, mu[res_of_arc], arc_id, sources)
            cost = (rows * np.where(rows > 0, tree_len, 0.0)).sum(axis=1)
            cand = np.flatnonzero(cost < pi - PRICE_TOL * np.abs(pi))
            timings["columns"] += time.perf_counter() - t
            if len(cand):
                break
        history.append((it, upper, bound.lb, limits.elapsed(), len(pool)))
        if status:
            break
        if len(cand) == 0:
            status = "optimal"
            break
        prune = pruning.update(upper, bound.lb)
        t = time.perf_counter()
        pool.age = np.where(lam > 0, 0, pool.age + 1)
        if prune:
            pool = pool.take(np.flatnonzero(pool.age < AGE))
        add(dist, pred, cand)
        timings["columns"] += time.perf_counter() - t
    if status in ("", "iteration_limit"):
        status = f"iteration_limit ({limits.max_iter} rounds{'' if pruning.on else ', pruning off'})"
    lam = _weights(last_pool, x, S) if x is not None else _first_trees(last_pool, S)
    return tree_result(n, last_pool, lam, sources, rows, arc_id, res_of_arc, cap, bound, it,
                       status, timings, history, limits)


def _first_trees(pool: TreePool, S: int) -> np.ndarray:
    lam = np.zeros(len(pool))
    lam[np.unique(pool.src, return_index=True)[1]] = 1.0
    return lam


def tree_result(n, pool: TreePool, lam, sources, rows, arc_id, res_of_arc, cap, bound, it,
                status, timings, history, limits) -> ApproxResult:
    """The routing of weights ``lam``: arc loads recomputed from the trees themselves."""
    m = int(arc_id.max()) + 1
    keep = np.flatnonzero(lam > 0)
    P = pool.pred[keep].astype(np.int64)
    dist = tree_depth(P, sources[pool.src[keep]])
    acc = tree_sum_up(tree_order(dist), P, rows[pool.src[keep]] * lam[keep, None],
                      sources[pool.src[keep]])
    kk, vv = np.nonzero((P >= 0) & (acc > 0))
    arc_load = np.bincount(arc_id[P[kk, vv], vv], weights=acc[kk, vv], minlength=m)
    upper = float((np.bincount(res_of_arc, weights=arc_load, minlength=len(cap)) / cap).max())
    timings["total"] = limits.elapsed()
    z = np.zeros(0, np.int64)
    return ApproxResult(
        n=n, upper=upper, lower=min(bound.lb, upper), symmetric=False, sources=sources,
        key=np.zeros((0, n), np.int64), alt_src=z, alt_dst=z, alt_ptr=np.zeros(1, np.int64),
        alt_nodes=z, alt_frac=np.zeros(0), trees=P, tree_weight=lam[keep],
        lengths=bound.mu[res_of_arc], arc_load=arc_load, iterations=it, status=status,
        timings=timings, history=history, tree_src=pool.src[keep],
    )


def tree_depth(pred: np.ndarray, roots: np.ndarray) -> np.ndarray:
    """Hop depth of every node in every tree (``inf`` off the tree): an order in which each
    parent precedes its children, for :func:`.common.tree_sum_up`."""
    K, n = pred.shape
    depth = np.full((K, n), np.inf)
    rows = np.arange(K)
    depth[rows, roots] = 0.0
    for _ in range(n):
        p = np.maximum(pred, 0)
        nd = np.where(pred >= 0, depth[rows[:, None], p] + 1, np.inf)
        nd[rows, roots] = 0.0
        if np.array_equal(nd, depth):
            break
        depth = nd
    return depth
