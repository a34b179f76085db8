"""Matching bound: the one-hop bytes of all sources together fit in a b-matching (issue 16,
item 2: neighbour choices coupled across nodes).

The Moore-type count (:func:`~topoopt_milp.core.evaluate.moore_lower_bound`) fills the levels of
each source on its own: every source puts its ``d`` largest MP demands at one hop. Adjacency is
symmetric and every node has ``d`` ports, so when the sources' favourite destinations are not
mutual (dense random MP) or crowd on a few nodes, far fewer bytes travel one hop than the
per-source count assumes; every byte that misses its one-hop slot costs at least one more arc.
The same holds at every distance (Lemma 3): the pairs within ``h`` hops of each other are
symmetric too, at most ``M_h`` per node, so the bytes within ``h`` hops fit in a b-matching.

Notation: ``c = B T`` bytes per link and direction in time ``T``; ``b_st`` the MP bytes
``s -> t``; for a source ``s``, ``b_s(1) >= b_s(2) >= ...`` its demands sorted, ``h_k`` the
Moore slots of :func:`~topoopt_milp.core.evaluate.moore_slots` (``d`` at 1 hop, ``d (d-1)`` at 2,
...), ``Moore_s = sum_k b_s(k) h_k`` and ``top_s = sum_{k <= d} b_s(k)``; ``R`` the bytes of all
AllReduce ring edges.

Lemma 1 (one source). Fix a solution and a source ``s``; let ``y_s`` be the MP bytes of ``s``
that travel a single arc (``s -> t`` for their destination ``t``). The MP byte-hops of ``s`` are
at least ``Moore_s + top_s - y_s``.

*Proof.* Let ``N`` be the neighbours of ``s`` (``|N| <= d``) and ``A = sum_{t in N} b_st``. A byte
for ``t`` in ``N`` that is not sent on the direct arc crosses at least two arcs, so the bytes for
``N`` cost at least ``y_s + 2 (A - y_s)``. A node outside ``N`` is at distance ``>= 2``, and at
most ``|N| (d-1)^{h-1} <= d (d-1)^{h-1}`` nodes are at distance ``h + 1`` (Moore), so by
rearrangement the bytes outside ``N`` cost at least ``C(N)``: the demands outside ``N`` sorted
decreasing on the slots ``h_{d+1} <= h_{d+2} <= ...`` (all ``>= 2``). Let ``Top`` be the
``d`` largest demands. The demands outside ``N`` are those outside ``Top`` with each element of
``Top \\ N`` either replacing a no larger element of ``N \\ Top`` or added; raising an element by
``D`` raises the sorted cost by at least ``2 D`` (every slot costs ``>= 2``), and adding an
element ``b`` raises it by at least ``2 b``. So ``C(N) >= C(Top) + 2 (top_s - A)``, and the byte-
hops are at least ``2 A - y_s + C(Top) + 2 top_s - 2 A = Moore_s + top_s - y_s``, as
``Moore_s = top_s + C(Top)``. QED. The same holds per destination with the bytes arriving at
``t`` (in-trees, the columns of ``b``).

Lemma 2 (one-hop bytes). Let ``Y_mp = sum_s y_s`` and ``Y_ring`` the ring bytes that travel a
single arc (to their successor). Then ``Y_mp + Y_ring <= OneHop(c)``, the optimum of the LP over
the pairs ``p = {s, t}`` (``s < t``) with MP demand or a possible ring edge and their copies
``k = 1..d``::

    max  sum_{p not ring} sum_k w_pk(c) z_pk + sum_{p ring} (m_p^f + m_p^b + r_p^f + r_p^b)
    s.t. sum_{p ni v} sum_k z_pk <= d                           (every node v)
         m_p^f <= sum_k w_pk^f(c) z_pk,  m_p^f + r_p^f <= c sum_k z_pk   (ring pairs; also b)
         sum of r out of s <= e_s,  sum of r into s <= e_s       (every node s)
         0 <= z <= 1,  m, r >= 0,  r_p^f = 0 unless t can follow s in the scope (also b)
    w_pk^f(c) = min(b_st, k c) - min(b_st, (k-1) c),  w_pk^b likewise with b_ts,
    w_pk = w_pk^f + w_pk^b

where a *ring pair* is one whose nodes can be consecutive in a ring order of the scope
(``"any"``: two members of a common group; ``"totient"``: a TotientPerms successor), and ``e_s``
the ring bytes ``s`` sends (and receives) per iteration, ``sum_{g ni s} e_g``.

*Proof.* The solution's topology ``L`` gives ``z_pk = [L_st >= k]``, which meets the degree rows.
On a ring pair take ``m`` the MP bytes and ``r`` the ring bytes that go one hop on its direct
arcs: the MP ones are at most ``min(b_st, c L_st) = sum_{k <= L_st} w_pk^f``, MP and ring
together at most the arc capacity ``c L_st``, and a node sends (receives) at most its ``e_s``
ring bytes, on pairs whose nodes are consecutive in an order of the scope. On any other pair
the one-hop bytes are MP bytes, at most ``min(b_st, c L_st) + min(b_ts, c L_st) = sum_{k <=
L_st} w_pk``. So ``Y_mp + Y_ring`` is at most the objective at that feasible point, hence at
most the optimum. QED. ``OneHop`` does not decrease with ``c``: an optimal ``z`` can be taken
non-increasing in ``k`` (moving weight to a lower copy keeps every row and the weights are
non-increasing in ``k``); for such ``z`` the right sides ``sum_k w_pk z_pk = sum_k (z_pk -
z_p,k+1) min(b_st, k c)`` and ``c sum_k z_pk`` do not decrease with ``c``, so the same point
stays feasible with no smaller objective.

Lemma 3 (the levels beyond one hop). For ``h >= 1`` let ``M_h = sum_{i=1..h} d (d-1)^{i-1}``
(the Moore count of the nodes within ``h`` hops of a node; at most ``n - 1`` are), ``T_h =
sum_s (sum of the M_h largest b_st)`` the per-source count of the bytes within ``h`` hops, and
``W_h`` the optimum of the fractional b-matching LP over the unordered pairs ``{s, t}``::

    W_h = max sum_{s<t} (b_st + b_ts) x_st   s.t.  sum_{t != v} x_vt <= M_h (every v),  0 <= x <= 1.

Then for every topology with the port budget and every routing the MP byte-hops are at least
``sum_s Moore_s + top - Y_mp + G`` with ``G = sum_{h >= 2, M_h < n - 1} (T_h - W_h) >= 0``
(``top = sum_s top_s``, ``Y_mp`` the MP bytes that travel a single arc, as in Lemma 1).

*Proof.* Let ``P_h`` be the pairs at distance at most ``h``. By the Moore count (proof (i) of
:func:`~topoopt_milp.core.evaluate.moore_lower_bound`) a node lies in at most ``M_h`` of them,
so the indicator of ``P_h`` is feasible and ``V_h``, the MP bytes of the pairs of ``P_h`` (both
directions), is at most ``W_h``. A byte of a pair at distance ``delta`` that travels ``k >= delta``
arcs has ``k = 1 + [k >= 2] + sum_{h >= 2} [k > h] >= 1 + [k >= 2] + sum_{h >= 2} [delta > h]``;
summing over the MP bytes (``B`` of them in all), the byte-hops are at least ``2 B - Y_mp +
sum_{h >= 2} (B - V_h)``, and each term ``B - V_h >= B - W_h >= 0`` (``W_h <= B``, as ``x <=
1``) may be kept or dropped. The per-source count is the same sum with ``T_h`` in place of
``W_h``: ``sum_s Moore_s = 2 B - top + sum_{h >= 2} (B - T_h)``, because ``Moore_s`` puts the
ranks ``M_{h-1} < k <= M_h`` at ``h`` hops (for the levels with ``M_h >= n - 1`` both counts
are ``B``). So the byte-hops are at least ``sum_s Moore_s + top - Y_mp + G``. ``G >= 0``: at
a feasible ``x`` node ``s``'s share ``sum_t b_st x_st`` is at most its ``M_h`` largest, so
``W_h <= T_h``, and likewise per destination. QED. The levels cost one LP each (over the pairs
with demand), at most ``MAX_LEVELS`` of them (dropping a level's gain keeps the proof); the
value used for ``W_h`` is the objective of a dual solution (weak duality), so a solver's
tolerance can only weaken the bound, never break it.

Theorem. A ring edge crosses at least one arc, and two when it does not go one hop; in time
``T`` the arcs carry at most ``n d c - I`` byte-hops, ``I`` the capacity that the nodes'
imbalance keeps idle (:mod:`.idle`). With ``R`` the ring bytes, Lemmas 1 to 3 (and ``y_s <=
top_s``, ``Y_ring <= R``) give::

    n d c - I >= F(c) := R + sum_s Moore_s + G + max(0, sum_s top_s + R_LP - OneHop(c))

(and the same with the per-destination sums and their ``G``). ``F`` does not increase with ``c`` (Lemma 2), so
the set of ``c`` meeting the inequality is a half-line ``[c*, inf)``, found by bisection; the
value returned is a ``c`` at which it still fails, so ``T > c / B``; the search starts at the
larger of the Moore bound and the ideal switch (both valid), and returns it when the inequality
already holds there, so the bound is never below either.

The LP may see the ring pairs of some groups only (the smallest ones, up to
``RING_PAIRS_PER_NODE`` pairs per node); the ring bytes of the others
then count one hop each and take no one-hop capacity, as in the Moore bound: ``R`` inside the
max becomes the bytes of the groups the LP sees (``R_LP``), and ``Y_ring`` counts theirs only.
The proofs hold as written for that subset (the other ring bytes only take capacity the LP
leaves to these), so the bound stays valid.

Scope: ``"any"`` or ``"totient"`` (the ring pairs of that ring space); every topology with the
port budget, every routing. No multiplicity cap is assumed.
"""

from __future__ import annotations

import math
from math import gcd

import highspy
import numpy as np
from scipy.optimize import linprog
from scipy.sparse import coo_matrix

from ...core.backends.pulp_backend import MatrixModel, highs_lp, new_highs
from ...core.evaluate import moore_slots
from ...core.instance import Instance
from .bisect import last_failing
from .idle import idle_capacity

INF = math.inf
MAX_COLUMNS = 2_000_000  # the LP's size limit (pair copies); beyond it the Moore count
RING_PAIRS_PER_NODE = 32  # ring pairs of the LP, per node (ring_pairs)
MAX_LEVELS = 8  # Lemma 3's levels solved, one LP each (d = 2 has n / 2 of them); the rest add 0


def _level_sums(M: np.ndarray, d: int) -> tuple[float, float]:
    """``(sum_s Moore_s, sum_s top_s)`` over the rows of ``M`` (module docstring)."""
    n = M.shape[0]
    slots = moore_slots(n, d)
    moore = top = 0.0
    for s in range(n):
        row = np.sort(np.delete(M[s], s))[::-1]
        nz = row > 0  # an unreachable slot (d = 1) never meets a zero demand
        moore += float((row[nz] * slots[nz]).sum())
        top += float(row[:d].sum())
    return moore, top


def level_gains(M: np.ndarray, d: int) -> tuple[float, float]:
    """Lemma 3's ``G`` for the sources (rows of ``M``) and for the destinations (columns):
    ``sum (T_h - W_h)`` over the levels ``h >= 2`` with ``M_h < n - 1`` (the first
    ``MAX_LEVELS``), each ``W_h`` the optimum of one b-matching LP over the pairs with demand;
    ``(0, 0)`` for ``d < 2``, where a level's reach does not grow."""
    n = M.shape[0]
    if d < 2 or n < 3:
        return 0.0, 0.0
    slots = moore_slots(n, d)
    # M_h < n - 1 exactly for the levels before the last node's
    reach = [int(np.count_nonzero(slots <= h)) for h in range(2, int(slots[-1]))][:MAX_LEVELS]
    if not reach:
        return 0.0, 0.0
    iu, ju = np.nonzero(np.triu(M + M.T, 1))
    w = M[iu, ju] + M[ju, iu]
    P = len(w)
    if P == 0:  # no MP (rings only): nothing to count beyond the rings' one hop
        return 0.0, 0.0
    incidence = coo_matrix((np.ones(2 * P), (np.concatenate([iu, ju]), np.tile(np.arange(P), 2))),
                           shape=(n, P)).tocsr()
    top_rows = np.cumsum(-np.sort(-M, axis=1), axis=1).sum(axis=0)  # T_h at index M_h - 1
    top_cols = np.cumsum(-np.sort(-M, axis=0), axis=0).sum(axis=1)
    scale = float(w.max())  # weights of order 1 for the solver
    gains = [0.0, 0.0]
    for m in reach:
        res = linprog(-w / scale, A_ub=incidence, b_ub=np.full(n, float(m)), bounds=(0, 1),
                      method="highs")
        if res.status != 0:  # no optimum, no certificate: the level gives up its gain
            continue
        # W_h from above whatever the solver's tolerances: by weak duality any y >= 0 gives
        # W_h <= sum_v M_h y_v + sum_{s<t} max(0, w_st - y_s - y_t); the solver's row duals
        # (clipped at 0) make it the LP's optimum up to those tolerances
        y = np.maximum(-np.asarray(res.ineqlin.marginals, dtype=float), 0.0)
        within = scale * (m * float(y.sum())
                          + float(np.maximum(w / scale - y[iu] - y[ju], 0.0).sum()))
        for j, top in enumerate((top_rows, top_cols)):
            gains[j] += max(0.0, float(top[m - 1]) - within)
    return gains[0], gains[1]


class OneHop:
    """The LP of Lemma 2 for the pairs with MP demand or a possible ring edge; :meth:`value`
    solves it for a capacity ``c >= c_min`` (bytes), from the previous solve's basis.

    ``ring = (src, dst)``: the ordered pairs ``s -> t`` where ``t`` can follow ``s`` in a ring
    order of the scope (``None``: no ring columns); ``budget[s]``: the ring bytes ``s`` sends
    (and receives) per iteration. A pair that is not a ring pair gets only the copies ``k``
    with ``(k - 1) c_min < max(b_st, b_ts)``: the others weigh 0 at every ``c >= c_min``, and
    a column of weight 0 that only uses ports never raises the optimum."""

    def __init__(self, M: np.ndarray, d: int,
                 ring: tuple[np.ndarray, np.ndarray] | None = None,
                 budget: np.ndarray | None = None, c_min: float = 0.0):
        n = M.shape[0]
        src, dst = (np.zeros(0, int), np.zeros(0, int)) if ring is None else ring
        # the pairs with demand or a ring edge in either direction, from the nonzeros only (no
        # n x n copy: any other pair has weight 0, so its columns never help)
        s, t = np.nonzero(M)
        s, t = np.concatenate([s, src]), np.concatenate([t, dst])
        key = np.unique(np.minimum(s, t) * n + np.maximum(s, t))
        iu, ju = key // n, key % n
        self.n, self.d, self.P = n, d, len(iu)
        self.iu, self.ju, self.a, self.b = iu, ju, M[iu, ju], M[ju, iu]
        fwd = np.isin(key, src * n + dst)  # iu -> ju can be a ring edge
        bwd = np.isin(key, dst * n + src)  # ju -> iu can be a ring edge
        self.rp = np.flatnonzero(fwd | bwd)  # ring pairs: MP and ring share a link
        self.fwd, self.bwd = fwd[self.rp], bwd[self.rp]
        copies = np.full(self.P, d)
        if c_min > 0:
            need = np.ceil(np.maximum(self.a, self.b) / c_min).astype(int)
            copies = np.minimum(d, np.maximum(need, 1))
        copies[self.rp] = d
        self.col_p = np.repeat(np.arange(self.P), copies)  # z columns: (pair, copy k)
        self.col_k = np.concatenate([np.arange(1, m + 1) for m in copies]) if self.P else \
            np.zeros(0, int)
        ring_col = np.full(self.P, -1)
        ring_col[self.rp] = np.arange(len(self.rp))
        self.col_q = ring_col[self.col_p]  # the ring pair of a z column, -1 if none
        self.budget = np.zeros(n) if budget is None else np.asarray(budget, float)
        self.h = new_highs()
        self.h.setOptionValue("output_flag", False)
        self.basis = None

    def model(self, c: float) -> MatrixModel:
        """The LP at capacity ``c`` in units of ``c`` bytes: the ``z`` columns
        (``col_p``, ``col_k``), then per ring pair ``q`` its MP one-hop bytes ``m_f, m_b`` and
        ring one-hop bytes ``r_f, r_b``; its optimum times ``c`` is the bytes."""
        n, d, R, nz = self.n, self.d, len(self.rp), len(self.col_p)
        p, k = self.col_p, self.col_k
        # bytes in units of c (one link's worth): coefficients of order 1 for the solver
        wf = (np.minimum(self.a[p], k * c) - np.minimum(self.a[p], (k - 1) * c)) / c
        wb = (np.minimum(self.b[p], k * c) - np.minimum(self.b[p], (k - 1) * c)) / c
        ringz = self.col_q >= 0
        # a ring pair earns through its m and r columns, any other pair through its z
        cost = np.concatenate([np.where(ringz, 0.0, wf + wb), np.ones(4 * R)])
        q = np.arange(R)
        mf, mb, rf, rb = nz + q, nz + R + q, nz + 2 * R + q, nz + 3 * R + q
        zc = np.arange(nz)
        rows = [self.iu[p], self.ju[p]]  # degree rows 0..n-1
        cols = [zc, zc]
        vals = [np.ones(nz), np.ones(nz)]
        # ring budgets: bytes out of s (rows n..2n-1), into t (rows 2n..3n-1)
        rows += [n + self.iu[self.rp], n + self.ju[self.rp], 2 * n + self.ju[self.rp],
                 2 * n + self.iu[self.rp]]
        cols += [rf, rb, rf, rb]
        vals += [np.ones(R)] * 4
        # per ring pair: m <= sum_k w_k z_k and m + r <= sum_k z_k (units of c), both ways
        r0, zq, qz = 3 * n, zc[ringz], self.col_q[ringz]
        for j, (m, r, w) in enumerate(((mf, rf, wf), (mb, rb, wb))):
            cap, lim = r0 + 2 * j * R, r0 + (2 * j + 1) * R
            rows += [lim + q, cap + q, cap + q, lim + qz, cap + qz]
            cols += [m, m, r, zq, zq]
            vals += [np.ones(R), np.ones(R), np.ones(R), -w[ringz], -np.ones(len(zq))]
        nrow, ncol = r0 + 4 * R, nz + 4 * R
        A = coo_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
                       shape=(nrow, ncol)).tocsc()
        up = np.concatenate([np.full(n, float(d)), self.budget / c, self.budget / c,
                             np.zeros(4 * R)])
        col_up = np.concatenate([np.ones(nz), np.full(2 * R, INF),
                                 np.where(self.fwd, INF, 0.0), np.where(self.bwd, INF, 0.0)])
        return MatrixModel(A, cost, np.zeros(ncol), col_up, np.full(nrow, -INF), up,
                           np.zeros(ncol, bool), [], maximize=True)

    def value(self, c: float) -> float:
        if self.P == 0:
            return 0.0
        lp = highs_lp(self.model(c))
        self.h.passModel(lp)
        if self.basis is not None:  # same shape at every c: start from the last optimum
            self.h.setBasis(self.basis)
        self.h.run()
        if self.basis is not None and self.h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
            self.h.clear()  # a start the solver could not use: solve from scratch
            self.h.setOptionValue("output_flag", False)
            self.h.passModel(lp)
            self.h.run()
        if self.h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
            raise RuntimeError("matching bound: one-hop LP "
                               f"{self.h.modelStatusToString(self.h.getModelStatus())}")
        self.basis = self.h.getBasis()
        # the LP's optimum bounds the one-hop bytes from above; a tiny relative slack covers
        # the solver's tolerance
        return c * float(self.h.getInfo().objective_function_value) * (1 + 1e-9)


def ring_pairs(instance: Instance, scope: str, limit: int | None = None
               ) -> tuple[tuple[np.ndarray, np.ndarray] | None, np.ndarray]:
    """``(ring, budget)`` of :class:`OneHop`: the ordered pairs ``s -> t`` where ``t`` can
    follow ``s`` in a ring order of the scope (``"any"``: every other member of the group;
    ``"totient"``: the TotientPerms successors ``member[(j + m) mod k]``, ``gcd(m, k) = 1``)
    of the groups that get ring columns, and the ring bytes each node sends (= receives) per
    iteration in those groups. Groups get columns smallest first while their pairs number at
    most ``limit`` (default ``RING_PAIRS_PER_NODE`` per node: a group of all ``n`` nodes in
    scope any would make every pair a ring pair, and the LP many times slower)."""
    n = instance.n
    limit = RING_PAIRS_PER_NODE * n if limit is None else limit
    budget = np.zeros(n)
    groups = sorted(((sorted(g.members), g.edge_bytes) for g in instance.allreduce
                     if g.edge_bytes > 0 and len(g.members) >= 2), key=lambda ge: len(ge[0]))
    src, dst, used = [], [], 0
    for ms, e in groups:
        k = len(ms)
        steps = [m for m in range(1, k) if scope == "any" or gcd(m, k) == 1]
        if used + k * len(steps) > limit:
            break
        used += k * len(steps)
        budget[ms] += e
        arr = np.asarray(ms)
        for m in steps:
            src.append(arr)
            dst.append(np.roll(arr, -m))  # member j -> member (j + m) mod k
    if not src:
        return None, budget
    return (np.concatenate(src), np.concatenate(dst)), budget


def matching_bound(instance: Instance, scope: str = "any", info: dict | None = None) -> float:
    """``c* / B`` of the theorem (module docstring) for the ring orders of ``scope``
    (``"any"`` or ``"totient"``), seconds."""
    if scope not in ("any", "totient"):
        raise ValueError(f"scope: unknown {scope!r} (known: any, totient)")
    n, d, B = instance.n, instance.degree, instance.link_bytes_per_s
    if d < 1 or instance.total_bytes() <= 0:
        return 0.0
    M = instance.mp_matrix()
    # the groups without ring columns (beyond the size limit): their ring edges count one hop
    # and take no one-hop capacity, as in the Moore bound
    ring_ok, budget = ring_pairs(instance, scope)
    ring = float(sum(g.edge_bytes * len(g.members) for g in instance.allreduce))
    idle = idle_capacity(instance)  # byte-hops the arcs can never carry (idle.py)
    sums = [_level_sums(M, d), _level_sums(M.T, d)]
    if not all(math.isfinite(m) for m, _ in sums):
        return INF  # d = 1 and demands beyond one hop: no topology routes them
    pairs = int(np.count_nonzero(M)) + (0 if ring_ok is None else len(ring_ok[0]))
    if pairs * d > MAX_COLUMNS:  # too big an LP: the Moore count (valid, no gain)
        return (max(ring + m for m, _ in sums) + idle) / (n * d * B)
    # Lemma 3: the levels beyond one hop, coupled across the sources like the first
    gains = level_gains(M, d)
    sums = [(m + g, top) for (m, top), g in zip(sums, gains)]
    # start at the larger of the Moore count's c (less the idle capacity) and the ideal
    # switch's (both valid): when the inequality already holds there, the bound adds nothing
    # and one LP was enough
    out, inn = instance.node_out_in_bytes()
    lo = max((max(ring + m for m, _ in sums) + idle) / (n * d),
             float(max(out.max(), inn.max())) / d)
    lp = OneHop(M, d, ring_ok, budget, c_min=lo)
    # the ring bytes that may miss their one-hop slot: those of the groups the LP sees
    missable = float(budget.sum())

    def excess(c: float) -> float:
        one = lp.value(c)
        return max(ring + m + max(0.0, top + missable - one) for m, top in sums) + idle \
            - n * d * c

    value = lo if excess(lo) <= 0 else last_failing(excess, lo, 2 * lo, rel=1e-4, steps=40)
    if info is not None:
        info.update(one_hop=lp.value(value), top=[t for _, t in sums], ring=ring,
                    level_gains=list(gains), idle=idle)
    return float(value / B)
