"""The master of :mod:`.alloc_benders`: the problem in model units and the master MILP's rows.

Columns (:class:`Layout`): ``x`` and ``y`` per node pair ``i < j``, ``lambda``, the ring
shares ``tau``, and the two-hop variables ``z`` and ``w`` per ordered pair. Rows: port budget,
``y <= x <= cap y``, ring shares, the two-hop counting, cut-sets and the symmetry chain
(:func:`build_master`); the metric cuts of the separation are written by :func:`metric_cut`.
The validity of every row is argued in the docstring of :mod:`.alloc_benders`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import combinations, permutations

import numpy as np
from scipy.sparse import coo_matrix

from ...core.backends.pulp_backend import MatrixModel
from ...core.circulant import totient_order_count, totient_orders
from ...core.evaluate import moore_slots
from ...core.instance import Instance
from ...core.sizes import SizeError
from .. import model_data as _exact
from ..formulations.alloc import interchangeable_classes

INF = math.inf

# -- the problem in model units -------------------------------------------------------------
@dataclass(frozen=True)
class Problem:
    """alloc-milp's problem in volume units ``V`` (one link = capacity 1 per direction).

    ``groups[k] = (instance group index, edge volume e_g, candidate orders)``."""

    n: int
    d: int
    cap: int
    regular: bool
    M: np.ndarray
    groups: tuple[tuple[int, float, tuple[tuple[int, ...], ...]], ...]
    sec_per_unit: float

    @property
    def num_tau(self) -> int:
        return sum(len(orders) for _, _, orders in self.groups)

    def tau_slices(self) -> list[slice]:
        out, k = [], 0
        for _, _, orders in self.groups:
            out.append(slice(k, k + len(orders)))
            k += len(orders)
        return out

    def demand_basis(self) -> np.ndarray:
        """``(1 + T) x n x n``: ``D = lambda B[0] + sum_j tau_j B[1 + j]``."""
        B = np.zeros((1 + self.num_tau, self.n, self.n))
        B[0] = self.M
        j = 1
        for _, e, orders in self.groups:
            for order in orders:
                k = len(order)
                for i in range(k):
                    B[j, order[i], order[(i + 1) % k]] += e
                j += 1
        return B


RING_SPACES = ("choose", "all")
MAX_ALL_ORDERS = 1000  # rings = all: orders in all (groups of up to 7 members, or 8 of 6)


def all_orders(members) -> list[tuple[int, ...]]:
    """Every directed cyclic order of ``members``, each once (rotated to start at the
    smallest member): ``(k - 1)!`` orders, a ring and its reverse being two of them."""
    ms = sorted(members)
    return [(ms[0], *rest) for rest in permutations(ms[1:])] or [tuple(ms)]


def order_count(instance: Instance, rings: str = "choose") -> int:
    """How many candidate orders :func:`problem_of` builds (``all``: counted, not built)."""
    groups = [g.members for g in instance.allreduce if g.edge_bytes > 0]
    if rings == "all":
        return sum(math.factorial(max(len(m) - 1, 1)) for m in groups)
    return sum(totient_order_count(len(m)) for m in groups)


def check_order_count(instance: Instance, rings: str) -> int:
    """The candidate orders' count; refuses (:class:`SizeError`, one line) ``rings = all``
    beyond :data:`MAX_ALL_ORDERS` orders: the master's cut-set rows carry one coefficient per
    order and are built before the first solve (mixed-n32-d4, four groups of 8, 20160 orders:
    over 60 s)."""
    count = order_count(instance, rings)
    if rings == "all" and count > MAX_ALL_ORDERS:
        shown = f"{count:,}" if count < 10**9 else f"{float(count):.3g}"
        raise SizeError(f"alloc-benders: rings=all: {shown} ring orders ((k - 1)! for a "
                        f"group of k members), more than {MAX_ALL_ORDERS}; use rings=choose "
                        "(the TotientPerms orders)")
    return count


def problem_of(instance: Instance, cap: int | None = None, rings: str = "choose") -> Problem:
    """The problem in model units; ``rings``: the candidate orders of every group with traffic,
    its TotientPerms orders (``choose``: alloc-milp's ring space) or all its ``(k - 1)!``
    orders (``all``: a free split over every order contains every choice of orders, so the
    problem's optimum and every relaxation's bound cover every ring order; at most
    :data:`MAX_ALL_ORDERS` in all, :func:`check_order_count`)."""
    if rings not in RING_SPACES:
        raise ValueError(f"rings: {rings!r} is not one of {', '.join(RING_SPACES)}")
    check_order_count(instance, rings)
    V = _exact.volume_unit(instance)
    orders_of = totient_orders if rings == "choose" else all_orders
    groups = tuple((g, grp.edge_bytes / V, tuple(orders_of(grp.members)))
                   for g, grp in enumerate(instance.allreduce) if grp.edge_bytes > 0)
    return Problem(instance.n, instance.degree, instance.degree if cap is None else int(cap),
                   instance.regular, instance.mp_matrix() / V, groups,
                   _exact.seconds_per_unit(instance))


# -- the master ---------------------------------------------------------------------------
@dataclass
class Layout:
    """Column indices of the master: x, y (pairs i < j), lambda, tau, z, w (n x n grids)."""

    n: int
    num_tau: int
    pair: np.ndarray = field(init=False)  # pair[i, j] = pair index (symmetric, -1 diagonal)
    pairs: list[tuple[int, int]] = field(init=False)

    def __post_init__(self):
        self.pairs = list(combinations(range(self.n), 2))
        self.pair = np.full((self.n, self.n), -1)
        for p, (i, j) in enumerate(self.pairs):
            self.pair[i, j] = self.pair[j, i] = p

    @property
    def P(self) -> int:
        return len(self.pairs)

    def x(self, p):
        return p

    def y(self, p):
        return self.P + p

    @property
    def lam(self) -> int:
        return 2 * self.P

    @property
    def tau0(self) -> int:
        return 2 * self.P + 1

    def z(self, s, t):
        return self.tau0 + self.num_tau + s * self.n + t

    def w(self, s, t):
        return self.tau0 + self.num_tau + self.n * self.n + s * self.n + t

    @property
    def ncol(self) -> int:
        return self.tau0 + self.num_tau + 2 * self.n * self.n


class Rows:
    """Accumulates sparse rows ``lo <= a x <= up``."""

    def __init__(self):
        self.r, self.c, self.v, self.lo, self.up = [], [], [], [], []

    def add(self, idx: Sequence[int], val: Sequence[float], lo: float, up: float) -> int:
        k = len(self.lo)
        self.r.extend([k] * len(idx))
        self.c.extend(int(i) for i in idx)
        self.v.extend(float(a) for a in val)
        self.lo.append(lo)
        self.up.append(up)
        return k


def _demand_terms(lay: Layout, B: np.ndarray, s: int, t: int, scale: float = 1.0):
    """Columns and coefficients of ``scale * D_st(lambda, tau)``."""
    idx, val = [], []
    for j in range(B.shape[0]):
        if B[j, s, t]:
            idx.append(lay.lam if j == 0 else lay.tau0 + j - 1)
            val.append(scale * B[j, s, t])
    return idx, val


def complete_metric(ell: np.ndarray) -> np.ndarray:
    """A finite metric on all ordered pairs from a closure ``ell`` that may be infinite
    between the components of a disconnected (but routable) topology.

    (MI) holds for every length ``mu >= 0`` on the arcs of the *complete* digraph, not only
    on the topology's arcs. Give every pair at infinite distance the length ``M`` (the
    largest finite distance, 1 when there is none) and close it under shortest paths again:
    a valid cut. Within a component nothing changes (a detour through another component takes
    two arcs of length ``M`` at least, never shorter than a finite distance), no demand
    crosses the components, and the pairs across them carry no link of the topology, so at
    the topology the cut's value, and so its violation, is the same as with ``ell``."""
    ell = np.asarray(ell, dtype=float)
    finite = np.isfinite(ell)
    if finite.all():
        return ell
    M = float(ell[finite].max(initial=0.0)) or 1.0
    W = np.where(finite, ell, M)
    for k in range(len(W)):  # Floyd-Warshall (scipy's dense input would drop zero lengths)
        W = np.minimum(W, W[:, k:k + 1] + W[k:k + 1, :])
    return W


def metric_cut(P: Problem, lay: Layout, B: np.ndarray, ell: np.ndarray):
    """(MI) for the metric ``ell`` as ``(idx, val)`` of ``cut >= 0``, scaled to max |coef| 1;
    infinite distances (a disconnected topology) are completed by :func:`complete_metric`
    (they made every coefficient ``inf`` or ``nan``, and the cut empty). ``None`` when every
    coefficient is zero (a trivial cut, ``0 >= 0``)."""
    ell = complete_metric(ell)
    coef = np.zeros(lay.ncol)
    for p, (i, j) in enumerate(lay.pairs):
        coef[lay.x(p)] = ell[i, j] + ell[j, i]
    coef[lay.lam] = -float((B[0] * ell).sum())
    for j in range(P.num_tau):
        coef[lay.tau0 + j] = -float((B[1 + j] * ell).sum())
    top = float(np.abs(coef).max())
    if top <= 0:
        return None
    nz = np.flatnonzero(np.abs(coef) > 1e-12 * top)
    return nz, coef[nz] / top


def beyond_two_hops(P: Problem) -> float:
    """``sum_s sum_t M_s(t) (h_t - 2)^+``: MP demands sorted descending on the Moore levels
    ``h_t`` (``d`` nodes at one hop, ``d (d-1)`` at two, ...). At most ``d (d-1)^(h-1)`` nodes
    are ``h`` hops from a source, so (rearrangement) the MP byte-hops beyond two hops per unit
    ``lambda`` are at least this; the two-hop row adds it (zero when ``n <= 1 + d^2``)."""
    slots = moore_slots(P.n, P.d)
    slots = np.where(np.isfinite(slots), slots, 2.0)  # d = 1: unreachable; stay valid
    extra = 0.0
    for s in range(P.n):
        row = np.sort(np.delete(P.M[s], s))[::-1]
        extra += float((row * np.maximum(slots - 2, 0)).sum())
    return extra


PAIR_CUTS_MAX_N = 32  # pair cut-sets (n^2 / 2 rows) only up to this size


def cut_sets(P: Problem) -> list[np.ndarray]:
    """Node sets whose cut-set inequalities start the master: every pair (``n <=
    PAIR_CUTS_MAX_N``), every group's member set and its complement."""
    n = P.n
    sets = []
    for i, j in combinations(range(n), 2) if n <= PAIR_CUTS_MAX_N else ():
        m = np.zeros(n, bool)
        m[[i, j]] = True
        sets.append(m)
    for _, _, orders in P.groups:
        m = np.zeros(n, bool)
        m[list(orders[0])] = True
        if 2 < m.sum() < n - 1:
            sets += [m, ~m]
    return sets


def cutset_terms(P: Problem, lay: Layout, B: np.ndarray, S: np.ndarray):
    """For arcs leaving ``S``: the x columns, the demand crossing per basis term, and the
    least crossing per unit ``lambda`` (``a_S + sum_g min_c b_gcS``)."""
    out = np.flatnonzero(S)
    inn = np.flatnonzero(~S)
    xs = [lay.x(lay.pair[i, j]) for i in out for j in inn]
    cross = B[:, S][:, :, ~S].sum(axis=(1, 2))
    least = cross[0]
    for sl in P.tau_slices():
        least += cross[1 + sl.start:1 + sl.stop].min()
    return xs, cross, least


def ring_symmetry_classes(P: Problem) -> list[list[int]]:
    """Classes of nodes whose transposition maps ``M`` and every group's set of candidate ring
    orders (as sets of directed edges) onto itself (see module docstring)."""
    tol = 1e-9 * max(1.0, float(np.abs(P.M).max(initial=0.0)))
    edge_sets = [{frozenset((o[i], o[(i + 1) % len(o)]) for i in range(len(o))) for o in orders}
                 for _, _, orders in P.groups]
    cand = interchangeable_classes(P.M)

    def swaps_ok(u, v):
        perm = np.arange(P.n)
        perm[[u, v]] = [v, u]
        if np.abs(P.M[np.ix_(perm, perm)] - P.M).max() > tol:
            return False
        return all({frozenset((perm[a], perm[b]) for a, b in es) for es in sets} == sets
                   for sets in edge_sets)

    classes: list[list[int]] = []
    for cls in cand:
        sub: list[list[int]] = []
        for v in cls:
            for c in sub:
                if swaps_ok(c[0], v):
                    c.append(v)
                    break
            else:
                sub.append([v])
        classes += sub
    return classes


def symmetry_rows(P: Problem, lay: Layout) -> tuple[int, list[int]] | None:
    classes = ring_symmetry_classes(P)
    big = max(classes, key=len)
    if len(big) == P.n:
        return (big[0], big[1:]) if P.n >= 3 else None
    if len(big) < 2:
        return None
    return next(v for v in range(P.n) if v not in big), big


def build_master(P: Problem, lay: Layout, B: np.ndarray, chain,
                 hop_rows: bool = True) -> tuple[MatrixModel, Rows]:
    """The base master (module docstring) without cuts; ``hop_rows = False`` leaves out the
    two-hop counting (its columns stay, fixed at 0)."""
    n, d, cap = P.n, P.d, P.cap
    R = Rows()
    col_lo = np.zeros(lay.ncol)
    col_up = np.full(lay.ncol, INF)
    integer = np.zeros(lay.ncol, bool)
    for p in range(lay.P):
        col_up[lay.x(p)], col_up[lay.y(p)] = cap, 1.0
        integer[lay.x(p)] = integer[lay.y(p)] = True
        R.add([lay.y(p), lay.x(p)], [1, -1], -INF, 0)
        R.add([lay.x(p), lay.y(p)], [1, -cap], -INF, 0)
    col_up[lay.lam] = 1.0
    for i in range(n):
        R.add([lay.x(lay.pair[i, j]) for j in range(n) if j != i], [1] * (n - 1),
              d if P.regular else 0, d)
    for sl in P.tau_slices():
        idx = [lay.tau0 + j for j in range(sl.start, sl.stop)]
        R.add(idx + [lay.lam], [1] * len(idx) + [-1], 0, 0)
    ring_max = B[1:].max(axis=0) if P.num_tau else np.zeros((n, n))
    support = B.sum(axis=0) > 0
    hop_idx, hop_val = [], []
    for s in range(n):
        for t in range(n):
            zc, wc = lay.z(s, t), lay.w(s, t)
            if s == t or not support[s, t] or not hop_rows:
                col_up[zc] = col_up[wc] = 0.0
                continue
            p = lay.pair[s, t]
            di, dv = _demand_terms(lay, B, s, t)
            R.add([zc] + di, [1] + [-a for a in dv], -INF, 0)  # z <= D_st
            R.add([zc, lay.x(p)], [1, -1], -INF, 0)  # z <= x_st
            R.add([zc, wc, lay.y(p)], [1, -P.M[s, t], -ring_max[s, t]], -INF, 0)
            R.add([wc, lay.y(p)], [1, -1], -INF, 0)
            R.add([wc, lay.lam], [1, -1], -INF, 0)
            di2, dv2 = _demand_terms(lay, B, s, t, 2.0)
            hop_idx += di2 + [zc]
            hop_val += dv2 + [-1.0]
    if hop_rows:
        for s in range(n):
            R.add([lay.w(s, t) for t in range(n) if t != s] + [lay.lam], [1] * (n - 1) + [-d],
                  -INF, 0)
            R.add([lay.w(t, s) for t in range(n) if t != s] + [lay.lam], [1] * (n - 1) + [-d],
                  -INF, 0)
        hop_idx += [lay.x(p) for p in range(lay.P)] + [lay.lam]
        hop_val += [-2.0] * lay.P + [beyond_two_hops(P)]
        R.add(hop_idx, hop_val, -INF, 0)
    for S in cut_sets(P):
        for side in (S, ~S):
            xs, cross, _ = cutset_terms(P, lay, B, side)
            idx = xs + [lay.lam] + [lay.tau0 + j for j in range(P.num_tau)]
            R.add(idx, [1] * len(xs) + [-c for c in cross], 0, INF)
    if chain:
        anchor, cls = chain
        for a, b in zip(cls, cls[1:], strict=False):
            R.add([lay.x(lay.pair[anchor, a]), lay.x(lay.pair[anchor, b])], [1, -1], 0, INF)
    cost = np.zeros(lay.ncol)
    cost[lay.lam] = 1.0
    A = coo_matrix((R.v, (R.r, R.c)), shape=(len(R.lo), lay.ncol)).tocsc()
    model = MatrixModel(A, cost, col_lo, col_up, np.array(R.lo, float), np.array(R.up, float),
                        integer, [], maximize=True)
    return model, R


def master_point(P: Problem, lay: Layout, B: np.ndarray, L: np.ndarray, lam: float,
                 tau: np.ndarray) -> np.ndarray:
    """A full master vector for a routable ``(L, lambda, tau)`` (the MIP start)."""
    v = np.zeros(lay.ncol)
    ring_max = B[1:].max(axis=0) if P.num_tau else np.zeros((P.n, P.n))
    for p, (i, j) in enumerate(lay.pairs):
        v[lay.x(p)] = L[i, j]
        v[lay.y(p)] = float(L[i, j] > 0)
    v[lay.lam] = lam
    v[lay.tau0:lay.tau0 + P.num_tau] = tau
    D = lam * B[0] + np.tensordot(tau, B[1:], axes=1) if P.num_tau else lam * B[0]
    for s in range(P.n):
        for t in range(P.n):
            if s == t or D[s, t] <= 0:
                continue
            y = float(L[s, t] > 0)
            v[lay.w(s, t)] = lam * y
            v[lay.z(s, t)] = min(D[s, t], L[s, t], P.M[s, t] * lam * y + ring_max[s, t] * y)
    return v


def relabel(L: np.ndarray, chain) -> np.ndarray:
    """An equivalent topology satisfying the symmetry chain: the class sorted by
    ``L[anchor, q]`` descending (a permutation of the class is an automorphism)."""
    if not chain:
        return L
    anchor, cls = chain
    order = sorted(cls, key=lambda q: -L[anchor, q])
    perm = np.arange(L.shape[0])
    perm[cls] = order  # new node cls[k] plays the role of old node order[k]
    return L[np.ix_(perm, perm)]


def links_from(lay: Layout, n: int, sol: np.ndarray) -> np.ndarray:
    L = np.zeros((n, n), dtype=np.int64)
    for p, (i, j) in enumerate(lay.pairs):
        L[i, j] = L[j, i] = int(round(sol[lay.x(p)]))
    return L


