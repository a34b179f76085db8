"""Shared pieces of :mod:`.route_approx`: the result, shortest-path trees, pricing with the
certified bound (its proof is in :mod:`.route_approx`), limits and the HiGHS master."""

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

import highspy
import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import dijkstra

from ...core.backends.pulp_backend import new_highs

U_ROUND = 2.0**-53
LENGTH_FLOOR = 1e-7  # relative floor on lengths: strictly positive arcs order every tree
PRICE_TOL = 1e-9  # relative improvement a new path needs to enter
ALPHA = 0.5  # Wentges smoothing weight of the best-bound lengths
MASTER_TOL = 1e-5  # interior-point tolerances of the path master
ETA_FLOOR = 0.1  # smallest first step of a round's ascent (Bound.ascend)
ASCENT = 8  # supergradient steps on the bound per round (Bound.ascend)
LOAD_BLOCK = 256  # trees per block in Pricer.loads
PROBE_SOURCES = 32  # sources of the timed Dijkstra that estimates an all-sources call
# columns entering per round per arc: 8 (was 4) since unused columns age at 1e-3 (paths.UNUSED);
# n = 256, d = 4: 4 rounds against 6 (docs/route_approx.md, 2026-12-04 evening)
COLS_PER_ARC = 8


@dataclass
class ApproxResult:
    """Routing and certificate of :func:`approx_min_congestion` (model units).

    General case: ``key[k, v]`` is the parent of ``v`` in the key tree of source
    ``sources[k]``; alternative path ``j`` of pair ``(sources[alt_src[j]], alt_dst[j])`` has
    nodes ``alt_nodes[alt_ptr[j]:alt_ptr[j + 1]]`` and fraction ``alt_frac[j]`` (the key path
    carries the rest). Tree columns (:mod:`.trees`): source ``sources[tree_src[j]]`` sends
    ``tree_weight[j]`` of its demand along tree ``trees[j]``. Symmetric case: ``trees[j]`` are
    source-0 trees with weights ``tree_weight[j]``, rotated by ``s`` for source ``s``.
    ``upper`` is the congestion of this routing, ``lower`` a certified bound on the optimum,
    ``lengths`` the arc lengths of the best bound (``sum_r mu_r cap(r) = 1``; divided by
    ``n`` in the symmetric case)."""

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
    status: str  # converged | optimal | time_limit | iteration_limit | master: <HiGHS status>
    timings: dict[str, float] = field(default_factory=dict)
    history: list[tuple[int, float, float, float, int]] = field(default_factory=list)
    tree_src: np.ndarray | None = None  # tree columns: source index of ``trees[j]``
    duals: np.ndarray | None = None  # per arc: the last master's lengths (paths)
    shares: np.ndarray | None = None  # free ring shares (:mod:`.rings`): one per candidate

    @property
    def gap(self) -> float:
        return (self.upper - self.lower) / self.upper if self.upper > 0 else 0.0

    def pair_paths(self, demand: np.ndarray) -> Iterator[tuple[int, int, list]]:
        """``(s, t, [(path, fraction), ...])`` for every pair with ``demand[s, t] > 0``
        (equal paths merged; the key path carries what the alternatives leave)."""
        n = self.n
        if self.symmetric:
            walks = [walk_back(tree, 0, np.arange(1, n)) for tree in self.trees]
            keep = np.flatnonzero(self.tree_weight > 0)
            base: list[list] = [[]]
            for i in range(n - 1):
                merged: dict[tuple[int, ...], float] = {}
                for j in keep:
                    key = tuple(walks[j][i])
                    merged[key] = merged.get(key, 0.0) + float(self.tree_weight[j])
                base.append(list(merged.items()))
            ring = list(range(n)) * 2
            for s, t in zip(*np.nonzero(demand), strict=True):
                if s != t:
                    rot = ring[s:s + n].__getitem__  # x -> (x + s) mod n
                    yield int(s), int(t), [(tuple(map(rot, p)), f) for p, f in base[(t - s) % n]]
            return
        if self.tree_src is not None:
            yield from self._tree_pair_paths(demand)
            return
        nodes, ptr = self.alt_nodes.tolist(), self.alt_ptr.tolist()
        alt: dict[tuple[int, int], list] = {}
        for j in np.flatnonzero(self.alt_frac > 0).tolist():
            alt.setdefault((int(self.alt_src[j]), int(self.alt_dst[j])), []).append(
                (tuple(nodes[ptr[j]:ptr[j + 1]]), float(self.alt_frac[j])))
        for k, s in enumerate(self.sources.tolist()):
            ts = np.flatnonzero(demand[s] > 0)
            ts = ts[ts != s]
            for t, kp in zip(ts.tolist(), walk_back(self.key[k], s, ts), strict=True):
                paths: dict[tuple[int, ...], float] = {}
                rest = 1.0
                for p, f in alt.get((k, t), ()):
                    paths[p] = paths.get(p, 0.0) + f
                    rest -= f
                if rest > 1e-12:  # a rebased key path (.paths) leaves the tree path ~0
                    kp = tuple(kp)
                    paths[kp] = paths.get(kp, 0.0) + rest
                yield s, t, list(paths.items())


    def _tree_pair_paths(self, demand):
        order = np.argsort(self.tree_src, kind="stable")
        bounds = np.searchsorted(self.tree_src[order], np.arange(len(self.sources) + 1))
        for k, s in enumerate(self.sources.tolist()):
            ts = np.flatnonzero(demand[s] > 0)
            ts = ts[ts != s]
            js = order[bounds[k]:bounds[k + 1]]
            merged: list[dict] = [{} for _ in ts]
            for j in js.tolist():
                f = float(self.tree_weight[j])
                for i, p in enumerate(walk_back(self.trees[j], s, ts)):
                    p = tuple(p)
                    merged[i][p] = merged[i].get(p, 0.0) + f
            for t, paths in zip(ts.tolist(), merged, strict=True):
                yield s, t, list(paths.items())


def walk_back(pred: np.ndarray, root: int, targets: np.ndarray) -> list[list[int]]:
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


def paths_back(pred: np.ndarray, src: np.ndarray, dst: np.ndarray, roots: np.ndarray):
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


def tree_order(dist: np.ndarray) -> np.ndarray:
    return np.argsort(dist, axis=1, kind="stable")


def tree_sum_down(order, pred, w_arc, arc_id, roots) -> np.ndarray:
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


def tree_sum_up(order, pred, demand, roots) -> np.ndarray:
    """Subtree demand below every node (the load of tree arc ``(pred v, v)``), nodes
    processed farthest first."""
    K, n = pred.shape
    acc = np.array(demand, dtype=float)  # one copy
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


class Pricer:
    """All-sources Dijkstra under resource lengths, and the certified bound. ``ring``: free
    ring shares (:class:`.rings.BoundRings`, bound to ``sources``): the bound adds every
    group's cheapest candidate, and the loads route it (``demand_rows`` is then the fixed
    part of the demand only)."""

    def __init__(self, n, arcs, res_of_arc, cap, sources, D, demand_rows, symmetric, ring=None):
        self.n, self.sources, self.D, self.rows, self.sym = n, sources, D, demand_rows, symmetric
        self.ring = ring
        self.res_of_arc, self.cap, self.arcs = res_of_arc, cap, arcs
        G = csr_matrix((np.arange(1, len(arcs) + 1, dtype=float), (arcs[:, 0], arcs[:, 1])),
                       shape=(n, n))
        self.perm = G.data.astype(np.int64) - 1  # csr slot -> arc
        self.indices, self.indptr = G.indices, G.indptr
        self._arc_id: np.ndarray | None = None  # (n, n) arc ids, for loads()
        self.cost = 0.0  # wall seconds of the last all-sources call (probe: extrapolated)
        self.limits: Limits | None = None  # set by the caller: calls past it are skipped

    def probe(self, mu: np.ndarray, k: int = PROBE_SOURCES) -> float:
        """Estimated wall seconds of one all-sources call: a Dijkstra from ``k`` of the
        sources, timed and scaled by ``S / k`` (at n = 10^4 one call took 35 s, more than a
        20 s limit; the search must know before it starts one)."""
        S = len(self.sources)
        if k >= S:
            return self.cost
        length = mu[self.res_of_arc]
        G = csr_matrix((length[self.perm], self.indices, self.indptr), shape=(self.n, self.n))
        t = time.perf_counter()
        dijkstra(G, directed=True, indices=self.sources[:k], return_predecessors=True)
        self.cost = (time.perf_counter() - t) * S / k
        return self.cost

    def affords(self, calls: float = 1.0) -> bool:
        """Whether ``calls`` more all-sources calls fit in the time left (always without a
        time limit)."""
        left = None if self.limits is None else self.limits.left()
        return left is None or left >= calls * self.cost

    def __call__(self, mu: np.ndarray, bound_only: bool = False):
        t0 = time.perf_counter()
        try:
            return self._call(mu, bound_only)
        finally:
            self.cost = time.perf_counter() - t0

    def _call(self, mu: np.ndarray, bound_only: bool):
        length = mu[self.res_of_arc]
        G = csr_matrix((length[self.perm], self.indices, self.indptr), shape=(self.n, self.n))
        if bound_only:
            dist, pred = dijkstra(G, directed=True, indices=self.sources), None
        else:
            dist, pred = dijkstra(G, directed=True, indices=self.sources,
                                  return_predecessors=True)
        norm = math.fsum((mu * self.cap).tolist())
        if self.sym:
            n = self.n
            rot = (np.arange(n)[None, :] - np.arange(n)[:, None]) % n
            total = math.fsum((self.D * dist[0][rot]).ravel().tolist()) / n
        else:
            nz = self.rows > 0  # only the pairs with demand (sparse traffic at large n)
            terms = (self.rows[nz] * dist[nz]).tolist()
            if self.ring is not None:  # + e_g min_c len(c) per group (.rings, the proof)
                terms += self.ring.terms(dist)[0]
            total = math.fsum(terms)
        lb = total / norm * (1.0 - 4.0 * (self.n + 8) * U_ROUND) if norm > 0 else 0.0
        if bound_only:
            return lb
        return dist, pred, lb  # scipy's int32 predecessors (400 MB less each at n = 10^4)

    def loads(self, dist, pred) -> np.ndarray:
        """Per resource: the load of the shortest-path routing of trees ``pred`` (with free
        rings: every group on its cheapest candidate, a supergradient of the bound's
        numerator as in :meth:`Bound.ascend`)."""
        rows = self.rows if self.ring is None else self.ring.rows_at(dist, self.rows)
        acc = tree_sum_up(tree_order(dist), pred, rows, self.sources)
        if self._arc_id is None:  # built once (it was rebuilt per ascent step), int32
            self._arc_id = np.full((self.n, self.n), -1, np.int32)
            self._arc_id[self.arcs[:, 0], self.arcs[:, 1]] = np.arange(len(self.arcs))
        out = np.zeros(len(self.cap))
        for lo in range(0, len(pred), LOAD_BLOCK):  # blocks of trees: no (S n) index arrays
            p, w = pred[lo:lo + LOAD_BLOCK], acc[lo:lo + LOAD_BLOCK]
            k, v = np.nonzero(p >= 0)
            a = self._arc_id[p[k, v], v]
            out += np.bincount(self.res_of_arc[a], weights=w[k, v], minlength=len(self.cap))
        return out

    def bound(self, lb: float, mu: np.ndarray) -> Bound:
        return Bound(self, self.cap, lb, mu)


def smooth(alpha, best, mu, cap):
    """Normalised (``sum mu cap = 1``), floored combination of best-bound and dual lengths."""
    mix = alpha * best + (1 - alpha) * mu
    mix = np.maximum(mix, LENGTH_FLOOR * mix.max())
    return mix / math.fsum((mix * cap).tolist())


def normalise(mu, cap, fallback):
    mu = np.maximum(mu, 0.0)
    if not (mu > 0).any():
        return fallback
    return mu / math.fsum((mu * cap).tolist())


class StartTooCostly(Exception):
    """The first all-sources pricing (the start routing and the first bound) does not fit in
    the time left: the caller returns its cheap start instead (:mod:`.method`)."""


@dataclass
class Limits:
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


class Bound:
    """The best certified bound so far and its lengths.

    Each round prices at the Wentges point ``alpha mu_best + (1 - alpha) mu_master`` (its trees
    give the new columns) and evaluates the bound at a few more points of that segment
    (``SEARCH``): the bound is concave along it and each point costs one all-sources
    Dijkstra, far less than a master solve."""

    SEARCH = (0.0, 0.25, 0.75)

    def __init__(self, pricer: Pricer, cap: np.ndarray, lb: float, mu: np.ndarray):
        self.pricer, self.cap, self.lb, self.mu = pricer, cap, lb, mu
        self.eta = 1.0
        self.steps = ASCENT  # supergradient steps per round (a warm start: paths.WARM_ASCENT)

    def price(self, alpha: float, mu: np.ndarray, timings: dict):
        t = time.perf_counter()
        best, best_lb = self.mu, self.lb
        mu_sep = smooth(alpha, best, mu, self.cap)
        dist, pred, lb = self.pricer(mu_sep)
        if lb > self.lb:
            self.lb, self.mu = lb, mu_sep
        for a in self.SEARCH if alpha > 0 else ():
            if not self.pricer.affords(2):  # keep time for the rounds' own pricing
                break
            point = smooth(a, best, mu, self.cap)
            lb = self.pricer(point, bound_only=True)
            if lb > self.lb:
                self.lb, self.mu = lb, point
        if self.lb < best_lb:  # never (the bound only improves); kept as a guard
            self.lb, self.mu = best_lb, best
        if self.steps and not self.pricer.sym:
            self.ascend(self.steps)
        timings["pricing"] += time.perf_counter() - t
        return dist, pred

    def ascend(self, steps: int) -> None:
        """Multiplicative supergradient ascent on the bound from the best lengths.

        ``LB(mu) = N(mu) / sum_r mu_r cap(r)`` with ``N(mu) = sum_k d_k dist_mu(k)`` concave;
        the loads ``f`` of the shortest-path routing under ``mu`` are a supergradient of
        ``N`` (``N(mu') <= sum_r mu'_r f_r`` for every ``mu'``, with equality at ``mu``), and
        ``LB(mu) = sum_r mu_r f_r / sum_r mu_r cap(r)``: a weighted mean of the congestions
        ``f_r / cap(r)``. A step moves weight to the resources above the mean:
        ``mu_r <- mu_r exp(eta (f_r / (cap(r) LB) - 1))``, accepted only when the bound it
        certifies (every candidate is non-negative lengths, so :mod:`.method`'s proof holds)
        is higher; ``eta`` is cut on a rejection, grown on an acceptance, and every round starts
        at ``eta >= ETA_FLOOR`` (a failed first round had cut it to 2e-5 for good)."""
        eta = max(self.eta, ETA_FLOOR)  # a failed round shrank it 27x: reset it
        for _ in range(steps):
            if not self.pricer.affords(5):  # a step: up to 4 calls; only the bound gains
                break
            dist, pred = self.pricer(self.mu)[:2]
            r = self.pricer.loads(dist, pred) / self.cap / max(self.lb, 1e-300) - 1.0
            for _ in range(3):
                mix = self.mu * np.exp(np.clip(eta * r, -30, 30))
                mix = np.maximum(mix, LENGTH_FLOOR * mix.max())
                mix = mix / math.fsum((mix * self.cap).tolist())
                lb = self.pricer(mix, bound_only=True)
                if lb > self.lb:
                    self.lb, self.mu, eta = lb, mix, eta * 1.5
                    break
                eta *= 0.3
            else:
                break
        self.eta = eta


def master_highs(nrow_lo, nrow_up, cap_rows, cap, solver: str) -> highspy.Highs:
    """A master LP with the given rows and the column ``U`` (cost 1, ``-cap`` in the
    capacity rows). ``solver``: ``"ipm"`` (interior point without crossover: the path master
    is highly degenerate, and well-centred duals price better) or ``"simplex"`` (primal,
    warm-started; for the tiny circulant master)."""
    h = new_highs()  # without HiGHS' start-up banner on stdout
    h.setOptionValue("output_flag", False)
    if solver == "ipm":
        h.setOptionValue("solver", "ipm")
        h.setOptionValue("run_crossover", "off")
        # the master only steers the search (the incumbent is recomputed, the bound is
        # certified independently): 1e-5 halved the rounds at n = 128 against 1e-8
        for opt in ("ipm_optimality_tolerance", "primal_feasibility_tolerance",
                    "dual_feasibility_tolerance"):
            h.setOptionValue(opt, MASTER_TOL)
    else:
        h.setOptionValue("solver", "simplex")
        h.setOptionValue("simplex_strategy", 4)  # primal: new columns keep the basis feasible
    h.addRows(len(nrow_lo), np.asarray(nrow_lo, float), np.asarray(nrow_up, float), 0,
              np.zeros(0, np.int32), np.zeros(0, np.int32), np.zeros(0))
    h.addCols(1, np.array([1.0]), np.array([0.0]), np.array([np.inf]), len(cap_rows),
              np.array([0], np.int32), np.asarray(cap_rows, np.int32), -np.asarray(cap, float))
    return h


def run_master(h: highspy.Highs, limits: Limits) -> str:
    """Solve the master; ``""`` when optimal, else why the search stops (the caller keeps the
    last master solution)."""
    left = limits.left()
    if left is not None:
        h.setOptionValue("time_limit", max(0.01, left))
    h.run()
    ms = h.getModelStatus()
    if ms == highspy.HighsModelStatus.kUnknown and not limits.out_of_time():
        # interior point without crossover gives up on badly scaled masters (demand spanning
        # 1e-18..1e2 measured); crossover from its last iterate repairs that
        h.setOptionValue("run_crossover", "on")
        h.run()
        ms = h.getModelStatus()
    if ms == highspy.HighsModelStatus.kOptimal:
        return ""
    if ms == highspy.HighsModelStatus.kTimeLimit or limits.out_of_time():
        return "time_limit"
    return f"master: {h.modelStatusToString(ms)}"


