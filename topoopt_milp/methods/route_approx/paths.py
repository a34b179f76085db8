"""Path column generation for :mod:`.route_approx` (the general, non-circulant case).

Every pair ``k = (s, t)`` keeps a *key path* (its path in the first shortest-path tree of
``s``) and a pool of alternative paths ``p`` with fractions ``x_p``; the key path carries
``1 - sum_p x_p``. With the key paths substituted the restricted master is::

    min U  s.t.  base(r) + sum_p d_k [|p ∩ r| - |key_k ∩ r|] x_p <= U cap(r)   (every r)
                 sum_{p of k} x_p <= 1    (a row only for pairs with two or more
                 0 <= x_p <= 1             alternatives; one alternative is a bound)

where ``base(r)`` is the load of all key paths. It is solved by HiGHS' interior point method
without crossover: the master is highly degenerate (primal simplex needed thousands of
iterations per round, see ``docs/route_approx.md``) and well-centred duals price better. As
the interior point method does not warm-start, the master is rebuilt every round from the
pool, and columns the last ``AGE`` solutions did not use (``x_p <= UNUSED = 1e-3``: interior
point without crossover leaves most unused columns between 1e-6 and 1e-4, so a 1e-6 test
kept them all; n = 256, d = 4: 14.4 against 11.0 CPU s) leave the pool; the
last solution loses at most 1e-3 of a pair per dropped column, so the master value rises
little if at all (the incumbent is recomputed from the returned fractions either way).
Dropping a column at its first unused round made the search cycle on degenerate masters
(permutation traffic on a circulant: two columns must enter together to lower ``U``; each
entered alone, was unused and left, for 1000 rounds); when neither the incumbent nor the
bound has improved for ``STALL`` rounds, pruning stops for the rest of the run, and column
generation without deletion terminates.
After each master, a column carrying more than ``1 - REBASE`` of its pair becomes the pair's
key path and leaves the pool (:func:`_rebase`; the base and the coefficients are recomputed),
so the next master has neither its column nor, often, its convexity row (n = 256, d = 4:
8.2k instead of 13.7k rows, 41k instead of 52k columns in the third master). Each round adds
the improving shortest paths of two tree sets: at the smoothed point and at the best-bound
lengths (``SECOND``; a second path only when still shorter than every path the pair has).
A pair gets a new column when its shortest path under the master's duals is shorter than
every path it has: for an optimal master the pair's dual is ``d_k`` times that minimum
length, so this is a negative reduced cost, and the master is optimal when no pair has one.

A warm start (:mod:`.warm`) prices without the supergradient ascent (``WARM_ASCENT = 0``):
its first bound comes from the old lengths and is already close, and the ascent's Dijkstra
runs were a third of a warm call's pricing and masters (n = 128, random 4-regular,
all-to-all, 3 swaps: warm CPU median 0.39 s without against 0.56 s with 8 steps). Skipping
it only forgoes a possible increase of the bound; every evaluated bound is certified. Tried
and not kept: the old routing's main surviving path as each pair's key path
(a variant measured on 2026-12-04, docs/route_approx.md): smaller first masters but 4-5
rounds instead of 2-3, warm CPU median 0.73 against 0.57 s.
"""

from __future__ import annotations

import time

import highspy
import numpy as np

from .base import Base, coefficients
from .common import (
    ALPHA,
    PRICE_TOL,
    ApproxResult,
    Limits,
    Pricer,
    StartTooCostly,
    master_highs,
    normalise,
    paths_back,
    run_master,
    smooth,
    tree_order,
    tree_sum_down,
)
from .rings import MasterRings

PRUNE = 1e-6  # a column with a smaller fraction in the last master counts as unused
UNUSED = 1e-3  # a column with a smaller fraction in the last master ages (AGE)
AGE = 3  # masters a column may stay unused before it leaves the pool
STALL = 5  # rounds without progress of incumbent or bound that switch pruning off
SECOND = True
SECOND_COLS = None  # cap on the second set's columns per round (None: all; a cap needed more rounds)
WARM_ASCENT = 0  # supergradient steps per round of a warm start (Bound.ascend; module doc)
DUAL_TREES = True
REBASE = 1e-3  # a column carrying more than 1 - REBASE of its pair becomes the pair's key path


class Pruning:
    """Whether the column pool may still be pruned: until ``STALL`` rounds in a row improve
    neither the incumbent ``upper`` nor the bound ``lb``; then never again (column generation
    without deletion terminates; module docstring). One rule for path and tree columns."""

    def __init__(self, upper: float, lb: float) -> None:
        self.on, self.best_up, self.best_lb, self.still = True, upper, lb, 0

    def update(self, upper: float, lb: float) -> bool:
        if upper < self.best_up * (1 - 1e-9) or lb > self.best_lb * (1 + 1e-9):
            self.still = 0
        else:
            self.still += 1
        self.best_up, self.best_lb = min(self.best_up, upper), max(self.best_lb, lb)
        self.on = self.on and self.still < STALL
        return self.on


class _Pool:
    """Alternative paths (ragged arrays): pair ``(src[j], dst[j])`` (source index, node),
    nodes ``nodes[ptr[j]:ptr[j + 1]]``, capacity coefficients ``cres/cval[cptr[j]:...]``."""

    def __init__(self):
        z = np.zeros(0, np.int64)
        self.src, self.dst, self.nodes, self.ptr = z, z, z, np.zeros(1, np.int64)
        self.cres, self.cval, self.cptr = z, np.zeros(0), np.zeros(1, np.int64)
        self.age = z  # consecutive masters that left the column unused

    def __len__(self) -> int:
        return len(self.src)

    def extend(self, src, dst, nodes, ptr, cres, cval, cptr) -> None:
        self.src = np.concatenate([self.src, src])
        self.dst = np.concatenate([self.dst, dst])
        self.nodes = np.concatenate([self.nodes, nodes])
        self.ptr = np.concatenate([self.ptr, self.ptr[-1] + ptr[1:]])
        self.cres = np.concatenate([self.cres, cres])
        self.cval = np.concatenate([self.cval, cval])
        self.cptr = np.concatenate([self.cptr, self.cptr[-1] + cptr[1:]])
        self.age = np.concatenate([self.age, np.zeros(len(src), np.int64)])

    def take(self, idx: np.ndarray) -> _Pool:
        out = _Pool()
        out.src, out.dst, out.age = self.src[idx], self.dst[idx], self.age[idx]
        out.nodes, out.ptr = _take(self.nodes, self.ptr, idx)
        sel, out.cptr = _take(np.arange(len(self.cres)), self.cptr, idx)
        out.cres, out.cval = self.cres[sel], self.cval[sel]
        return out

    def arcs(self, arc_id):
        """Arc of every hop, and the column owning it."""
        owner = np.repeat(np.arange(len(self)), np.diff(self.ptr))
        same = owner[:-1] == owner[1:]
        return arc_id[self.nodes[:-1][same], self.nodes[1:][same]], owner[:-1][same]


def _take(flat, ptr, idx):
    """Segments ``idx`` of a ragged array."""
    lens = np.diff(ptr)[idx]
    new_ptr = np.concatenate([[0], np.cumsum(lens)])
    pos = np.repeat(ptr[idx] - new_ptr[:-1], lens) + np.arange(new_ptr[-1])
    return flat[pos], new_ptr


def _rebase(pool: _Pool, x, knodes, kptr, pidx, n):
    """Columns carrying more than ``1 - REBASE`` of their pair (``x`` the master's fractions)
    become their pairs' key paths and leave the pool, the old key paths are dropped.

    Why: after the second master about 40% of the columns (12k of 30k at n = 256, d = 4)
    carry their whole pair, each a column and often a convexity row of the next master;
    as key paths they cost the master nothing. The restricted master changes (the old key
    path leaves it; it re-enters by pricing when it is short), the certificate does not:
    the bound is certified from lengths alone (:mod:`.method`). Returns the new pool, key
    nodes and pointers, and the pairs (indices into ``kptr``) whose key changed."""
    full = np.flatnonzero(x[1:len(pool) + 1] >= 1.0 - REBASE)
    if len(full) == 0:
        return pool, knodes, kptr, np.zeros(0, np.int64)
    q = pidx[pool.src[full] * n + pool.dst[full]]
    q, first = np.unique(q, return_index=True)  # one column per pair (conv row: at most one)
    full = full[first]
    src_of = np.arange(len(kptr) - 1)
    src_of[q] = len(kptr) - 1 + full  # segment of the pool's nodes
    nodes = np.concatenate([knodes, pool.nodes])
    ptr = np.concatenate([kptr, kptr[-1] + pool.ptr[1:]])
    knodes, kptr = _take(nodes, ptr, src_of)
    keep = np.ones(len(pool), bool)
    keep[full] = False
    return pool.take(np.flatnonzero(keep)), knodes, kptr, q


def _master(pool: _Pool, base, cap, n, mr=None) -> highspy.Highs:
    """The restricted master of ``pool`` (column 0 is ``U``, then the pool's columns, then
    with free rings (``mr``: :class:`.rings.MasterRings`) one share column per candidate)."""
    R, C = len(cap), len(pool)
    pair = pool.src * n + pool.dst
    upair, inv, counts = np.unique(pair, return_inverse=True, return_counts=True)
    need = counts >= 2  # one alternative of a fixed demand: its bound x <= 1 is the row
    if mr is not None:
        need |= mr.variable[upair]  # a varying demand: the row carries its share columns
    nconv = int(need.sum())
    row_of = np.cumsum(need) - 1  # conv row of each pair that has one
    rhs = np.ones(nconv) if mr is None else mr.rhs[upair[need]]
    G = 0 if mr is None else len(mr.ring.groups)
    h = master_highs(np.concatenate([np.full(R + nconv, -np.inf), np.ones(G)]),
                     np.concatenate([-base, rhs, np.ones(G)]), np.arange(R), cap, "ipm")
    if C:
        multi = need[inv]
        lens = np.diff(pool.cptr) + multi
        starts = np.concatenate([[0], np.cumsum(lens)])[:-1]
        idx = np.empty(int(lens.sum()), np.int64)
        val = np.empty(len(idx))
        cap_pos = np.repeat(starts, np.diff(pool.cptr)) + (
            np.arange(len(pool.cres)) - np.repeat(pool.cptr[:-1], np.diff(pool.cptr)))
        idx[cap_pos], val[cap_pos] = pool.cres, pool.cval
        conv_pos = starts[multi] + np.diff(pool.cptr)[multi]
        idx[conv_pos], val[conv_pos] = R + row_of[inv[multi]], 1.0
        h.addCols(C, np.zeros(C), np.zeros(C), np.ones(C), len(idx), starts.astype(np.int32),
                  idx.astype(np.int32), val)
    if mr is not None:
        K = len(mr.cand)
        pos = np.minimum(np.searchsorted(upair, mr.flat), max(len(upair) - 1, 0))
        has = (len(upair) > 0) & (upair[pos] == mr.flat) & need[pos] if len(upair) else \
            np.zeros(len(mr.flat), bool)
        owner = np.concatenate([np.repeat(np.arange(K), np.diff(mr.cptr)),
                                mr.edge_pos[has], np.arange(K)])
        idx = np.concatenate([mr.cres, R + row_of[pos[has]], R + nconv + mr.share_row])
        val = np.concatenate([mr.cval, -mr.coef[has], np.ones(K)])
        order = np.argsort(owner, kind="stable")
        starts = np.searchsorted(owner[order], np.arange(K))
        h.addCols(K, np.zeros(K), np.zeros(K), np.ones(K), len(idx), starts.astype(np.int32),
                  idx[order].astype(np.int32), val[order])
    return h


def solve_paths(n, arcs, arc_id, res_of_arc, cap, D, limits: Limits, max_cols: int,
                init_rounds: int, seed: int, warm=None, ring=None) -> ApproxResult:
    """Path column generation (module docstring). ``warm``: a :class:`.warm.WarmStart` of a
    nearby topology, whose lengths give the first bound (and the point smoothing starts from)
    and whose surviving paths are the first pool. ``ring``: a :class:`.rings.RingChoice`,
    free ring shares over candidate orders (``D`` is then the fixed demand; the master and
    the bound of :mod:`.rings`)."""
    timings = dict.fromkeys(("setup", "master", "pricing", "columns"), 0.0)
    t = time.perf_counter()
    m, R = len(arcs), len(cap)
    Dfix = D
    if ring is not None:  # every pair that some candidate may load: its largest demand
        D = D + ring.reference(n)
    sources = np.flatnonzero(D.sum(axis=1) > 0)
    S = len(sources)
    rows = D if len(sources) == n else D[sources]  # every node a source: D itself, not an n x n copy
    fixed = rows if ring is None else (Dfix if len(sources) == n else Dfix[sources])
    if ring is not None:
        ring.bind(sources, n)
    pricer = Pricer(n, arcs, res_of_arc, cap, sources, D, fixed, False, ring)
    pricer.limits = limits
    mu0 = normalise(1.0 / cap, cap, None)
    if limits.time_limit is not None and pricer.probe(mu0) > 0 and not pricer.affords(1):
        raise StartTooCostly(f"one all-sources pricing (~{pricer.cost:.1f} s) does not fit in "
                             f"the {max(0.0, limits.left()):.1f} s left")
    # key trees by hop count: near-optimal lengths are ~0 on half the arcs (a warm start's
    # key paths under them wandered, the start was 2x worse than the old routing)
    dist, key, lb = pricer(mu0)
    if not np.isfinite(np.where(rows > 0, dist, 0.0)).all():
        raise ValueError("demand: a pair with demand is not connected")
    bound = pricer.bound(lb, mu0)
    mu_start = mu0
    if warm is not None:
        bound.steps = WARM_ASCENT
        mu_start = warm.resource_lengths(arcs, res_of_arc, cap, pricer)
        lb_w = pricer(mu_start, bound_only=True)
        if lb_w > bound.lb:
            bound.lb, bound.mu = lb_w, mu_start
    kk, tt = np.nonzero(rows > 0)
    knodes, kptr = paths_back(key, kk, tt, sources)
    pidx = np.full(S * n, -1, np.int64)
    pidx[kk * n + tt] = np.arange(len(kk))
    rebased = np.zeros(len(kk), bool)  # pairs whose key path is no longer their tree path
    base = Base(n, S, kk * n + tt, knodes, kptr, np.ones(len(kk)), arc_id)
    base_res = np.bincount(res_of_arc, weights=base.arc_load(fixed, m), minlength=R)
    x_start, mr = np.zeros(1), None
    if ring is None:
        upper0 = float((base_res / cap).max())  # the start: never return worse
    else:  # the start: every group on its cheapest candidates at hop lengths, on key paths
        x_start = np.concatenate([[0.0], ring.tied(dist)])
        active = x_start[1:] > 0  # candidates with a share column (.rings.MasterRings)
        if warm is not None and warm.rings:  # the nearby solution's rings
            active |= [(ring.groups[ring.cand_row[c]], o) in warm.rings
                       for c, o in enumerate(ring.orders)]
        mr = MasterRings(ring, rows, fixed, base, n, res_of_arc, R, active)
        upper0 = _loads(_Pool(), x_start, rows, fixed, base, ring, arc_id, res_of_arc,
                        cap)[0]
    pool = _Pool()

    def add(ks, ts, pred):
        nodes, ptr = paths_back(pred, ks, ts, sources)
        cres, cval, cptr = coefficients(rows[ks, ts], nodes, ptr, ks * n + ts, base, arc_id,
                                        res_of_arc, R)
        ok = np.flatnonzero(np.diff(cptr) > 0)  # a (rebased) key path is no column
        if len(ok) < len(ks):
            nodes, ptr = _take(nodes, ptr, ok)
            sel, cptr = _take(np.arange(len(cres)), cptr, ok)
            ks, ts, cres, cval = ks[ok], ts[ok], cres[sel], cval[sel]
        pool.extend(ks, ts, nodes, ptr, cres, cval, cptr)

    def shorter(pred, order, arc_len):
        new_len = tree_sum_down(order, pred, arc_len, arc_id, sources)
        return np.nonzero((rows > 0) & (new_len < base.length(arc_len) * (1 - 1e-9)))

    if warm is not None:  # the old routing's surviving paths are the first pool (.warm)
        ws, wt, wn, wp, _ = warm.surviving(n, sources, rows, arc_id)
        coef = coefficients(rows[ws, wt], wn, wp, ws * n + wt, base, arc_id, res_of_arc, R)
        pool.extend(ws, wt, wn, wp, *coef)
        pool = pool.take(np.flatnonzero(np.diff(pool.cptr) > 0))  # a key path is no column
    # diversify: trees under randomly perturbed lengths give pairs equally short alternatives
    rng = np.random.default_rng(seed)
    for _ in range(init_rounds if warm is None else 0):
        if limits.out_of_time() or not pricer.affords(2):  # keep a master and a pricing
            break
        mu_r = mu0 * rng.uniform(1.0, 1.5, size=R)
        dist_r, pred_r, _ = pricer(mu_r)
        ks, ts = shorter(pred_r, tree_order(dist_r), mu_r[res_of_arc])
        if len(ks):
            add(ks, ts, pred_r)
    timings["setup"] = time.perf_counter() - t
    history, status, it = [], "iteration_limit", 0
    last_pool, x, mu = _Pool(), np.zeros(1), mu_start
    start_base = last_base = (base, knodes, kptr, rebased.copy())  # of the master giving x
    pruning = Pruning(upper0, bound.lb)
    master_s = 0.0  # wall seconds of the last master (build and solve)
    while it < limits.max_iter:
        left = limits.left()
        if limits.out_of_time() or (left is not None and left < master_s + pricer.cost):
            status = "time_limit"  # a round (master and pricing) no longer fits
            break
        it += 1
        t = time.perf_counter()
        h = _master(pool, base_res, cap, n, mr)
        stop = run_master(h, limits)
        master_s = time.perf_counter() - t
        timings["master"] += master_s
        if stop:  # keep the last master solution
            status = stop
            break
        sol = h.getSolution()
        last_pool, x = pool, np.asarray(sol.col_value)
        if ring is not None:  # every candidate's share (inactive ones 0)
            x = np.concatenate([x[:len(pool) + 1], mr.expand(x[len(pool) + 1:])])
        live = rows  # the pairs that may get columns, weighted by their volume
        if ring is None:
            upper = float(((np.asarray(sol.row_value)[:R] + cap * x[0] + base_res) / cap).max())
        else:  # the routing with the renormalised shares (what _result returns)
            upper, *_, shares = _loads(pool, x, rows, fixed, base, ring, arc_id, res_of_arc,
                                       cap)
        mu = normalise(-np.asarray(sol.row_dual)[:R], cap, mu0)
        for alpha in (ALPHA, 0.0):  # at the master's own duals when the smoothed point misprices
            if not pricer.affords(1):  # the master's solution is kept (its base too)
                status = "time_limit"
                break
            dist, pred = bound.price(alpha, mu, timings)
            status = limits.stop(upper, bound.lb)
            if status:
                break
            t = time.perf_counter()
            if ring is not None:  # .rings: the used candidates and the cheapest ones here
                cheap = ring.tied(dist)
                active |= cheap > 0
                live = ring.demand_rows(shares + cheap, fixed)
            cand, gain = _improving(dist, pred, mu, res_of_arc, arc_id, sources, live, base, pool)
            if len(cand) == 0 and live is not rows:  # pairs without demand now, before "optimal"
                cand, gain = _improving(dist, pred, mu, res_of_arc, arc_id, sources, rows, base,
                                        pool)
            timings["columns"] += time.perf_counter() - t
            if len(cand):
                break
        history.append((it, upper, bound.lb, limits.elapsed(), len(pool)))
        last_base = (base, knodes, kptr, rebased.copy())
        if status:
            break
        if len(cand) == 0:
            status = "optimal"  # no improving path at the master's own duals
            break
        prune = pruning.update(upper, bound.lb)  # a stalled search stops pruning
        t = time.perf_counter()
        if len(cand) > max_cols:
            cand = cand[np.argpartition(-gain.ravel()[cand], max_cols)[:max_cols]]
        xp = x[1:len(pool) + 1]
        pool.age = np.where(xp > UNUSED, 0, pool.age + 1)
        if ring is not None:  # the share of its pair's current demand each column carries
            dcur = ring.demand_rows(ring.normalise(x[len(pool) + 1:]), fixed)
            with np.errstate(invalid="ignore", divide="ignore"):
                carry = np.where(dcur[pool.src, pool.dst] > 0, xp * rows[pool.src, pool.dst]
                                 / dcur[pool.src, pool.dst], 0.0)
            xr = np.concatenate([x[:1], carry])
        else:
            xr = x
        pool, knodes, kptr, moved = _rebase(pool, xr, knodes, kptr, pidx, n)
        if len(moved):  # new key paths: the base and every column's coefficients change
            rebased[moved] = True
            base = Base(n, S, kk * n + tt, knodes, kptr, np.ones(len(kk)), arc_id)
            base_res = np.bincount(res_of_arc, weights=base.arc_load(fixed, m), minlength=R)
            pp = pool.src * n + pool.dst
            pool.cres, pool.cval, pool.cptr = coefficients(
                rows[pool.src, pool.dst], pool.nodes, pool.ptr, pp, base, arc_id, res_of_arc, R)
            pool = pool.take(np.flatnonzero(np.diff(pool.cptr) > 0))  # a key path: no column
        if prune:
            pool = pool.take(np.flatnonzero(pool.age < AGE))
        ks, ts = np.divmod(cand, n)
        add(ks, ts, pred)
        if SECOND and pricer.affords(2):  # the trees at the best-bound lengths too: a path
            # still shorter under the master's lengths than every path the pair now has
            dist2, pred2, _ = pricer(bound.mu)
            c2, g2 = _improving(dist2, pred2, mu, res_of_arc, arc_id, sources, live, base, pool)
            cap2 = SECOND_COLS if ring is None else max_cols  # free rings: as many as the first
            if cap2 is not None and len(c2) > cap2:
                c2 = c2[np.argpartition(-g2.ravel()[c2], cap2)[:cap2]]
            if len(c2):
                add(*np.divmod(c2, n), pred2)
        if DUAL_TREES and ring is not None and alpha > 0 and pricer.affords(2):
            # and at the master's own duals: a smoothed point next to a poor bound misprices
            # (free rings, bert-n128-d4: 38 rounds without, 6 with; all-to-all at n = 128 the
            # masters grew 2-6x with it)
            dist3, pred3, _ = pricer(smooth(0.0, bound.mu, mu, cap))
            c3, g3 = _improving(dist3, pred3, mu, res_of_arc, arc_id, sources, live, base, pool)
            if len(c3) > max_cols:
                c3 = c3[np.argpartition(-g3.ravel()[c3], max_cols)[:max_cols]]
            if len(c3):
                add(*np.divmod(c3, n), pred3)
            active |= ring.tied(dist3) > 0
        if ring is not None:  # the active candidates and the key paths may have changed
            mr = MasterRings(ring, rows, fixed, base, n, res_of_arc, R, active)
        timings["columns"] += time.perf_counter() - t
    if status in ("", "iteration_limit"):
        status = f"iteration_limit ({limits.max_iter} rounds{'' if pruning.on else ', pruning off'})"
    if ring is not None and len(x) < len(last_pool) + 1 + len(ring):  # no master solved
        x = x_start
    res = _result(n, key, sources, rows, last_base, last_pool, x, arc_id, res_of_arc, cap,
                  bound, it, status, timings, history, limits, mu, ring, fixed)
    if res.upper > upper0 * (1 + 1e-12):  # an inexact master: the start is better
        res = _result(n, key, sources, rows, start_base, _Pool(), x_start, arc_id,
                      res_of_arc, cap, bound, it, status + "; the start routing kept", timings,
                      history, limits, mu, ring, fixed)
    return res


def _improving(dist, pred, mu, res_of_arc, arc_id, sources, rows, base: Base, pool):
    """Pairs whose shortest path (trees ``pred``) is shorter under the master lengths ``mu``
    than every path they have (base mix and pool), and the gains ``d_k (have - new)``."""
    lm = mu[res_of_arc]
    new_len = tree_sum_down(tree_order(dist), pred, lm, arc_id, sources)
    have = base.length(lm)
    if len(pool):
        a, owner = pool.arcs(arc_id)
        np.minimum.at(have, (pool.src, pool.dst),
                      np.bincount(owner, weights=lm[a], minlength=len(pool)))
    gain = np.where(rows > 0, rows * (have - new_len), 0.0)
    return np.flatnonzero((gain > PRICE_TOL * rows * have).ravel()), gain


def _loads(pool, x, rows, fixed, base: Base, ring, arc_id, res_of_arc, cap):
    """The routing of a master solution ``x`` (pool fractions, then with free rings the
    shares): ``(congestion, arc loads, fractions of the pair's demand, pair totals, pair
    demand, shares)``. Fractions at most ``PRUNE`` are interior-point dust (the base takes
    them); a pair whose columns sum past 1 is rescaled. With rings the shares are
    renormalised (:meth:`.rings.RingChoice.normalise`) and a column's fraction of its pair's
    demand is ``x_p dref_k / d_k(sigma)``."""
    S, n = rows.shape
    m = int(arc_id.max()) + 1
    xp = np.zeros(len(pool))
    xp[: min(len(pool), len(x) - 1)] = x[1:len(pool) + 1]
    xp = np.clip(xp, 0.0, None)
    shares, dem = None, rows
    if ring is not None:
        shares = ring.normalise(x[len(pool) + 1:len(pool) + 1 + len(ring)])
        dem = ring.demand_rows(shares, fixed)
        with np.errstate(invalid="ignore", divide="ignore"):
            xp = np.where(dem[pool.src, pool.dst] > 0,
                          xp * rows[pool.src, pool.dst] / dem[pool.src, pool.dst], 0.0)
    frac = np.minimum(xp, 1.0)
    frac[frac <= PRUNE] = 0.0  # interior-point dust: the base takes it
    tot = np.zeros((S, n))
    np.add.at(tot, (pool.src, pool.dst), frac)
    over = tot[pool.src, pool.dst] > 1.0
    frac[over] /= tot[pool.src, pool.dst][over]
    tot = np.minimum(tot, 1.0)
    arc_load = base.arc_load(dem * (1.0 - tot), m)
    if len(pool):
        a, owner = pool.arcs(arc_id)
        arc_load += np.bincount(a, weights=(dem[pool.src, pool.dst] * frac)[owner], minlength=m)
    upper = float((np.bincount(res_of_arc, weights=arc_load, minlength=len(cap)) / cap).max())
    return upper, arc_load, frac, tot, dem, shares


def _result(n, key, sources, rows, base_state, pool, x, arc_id, res_of_arc, cap, bound, it,
            status, timings, history, limits, mu, ring=None, fixed=None) -> ApproxResult:
    """The routing of the last master solution, its loads and congestion recomputed
    (:func:`_loads`). A pair whose key path was rebased (:func:`_rebase`) lists its key path
    as an alternative with what the columns leave, so its tree path (``key``) carries
    nothing."""
    base, knodes, kptr, rebased = base_state
    upper, arc_load, frac, tot, dem, shares = _loads(pool, x, rows, fixed, base, ring, arc_id,
                                                     res_of_arc, cap)
    q = np.flatnonzero(rebased)
    if len(q):
        kk, tt = np.nonzero(rows > 0)
        bnodes, bptr = _take(knodes, kptr, q)
        pool = pool.take(np.arange(len(pool)))
        pool.src = np.concatenate([pool.src, kk[q]])
        pool.dst = np.concatenate([pool.dst, tt[q]])
        pool.nodes = np.concatenate([pool.nodes, bnodes])
        pool.ptr = np.concatenate([pool.ptr, pool.ptr[-1] + bptr[1:]])
        frac = np.concatenate([frac, 1.0 - tot[kk[q], tt[q]]])
    timings["total"] = limits.elapsed()
    return ApproxResult(
        n=n, upper=upper, lower=min(bound.lb, upper), symmetric=False, sources=sources,
        key=key, alt_src=pool.src, alt_dst=pool.dst, alt_ptr=pool.ptr, alt_nodes=pool.nodes,
        alt_frac=frac, trees=np.zeros((0, n), np.int64), tree_weight=np.zeros(0),
        lengths=bound.mu[res_of_arc], arc_load=arc_load, iterations=it, status=status,
        timings=timings, history=history, duals=mu[res_of_arc], shares=shares,
    )
