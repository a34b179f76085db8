"""Matching bound: the one-hop bytes of all sources together fit in a b-matching (issue 16,
item 2: neighbour choices coupled across nodes).

The Moore-type count (:func:`~topoopt_milp.core.evaluate.moore_lower_bound`) fills the levels of
each source on its own: every source puts its ``d`` largest MP demands at one hop. Adjacency is
symmetric and every node has ``d`` ports, so when the sources' favourite destinations are not
mutual (dense random MP) or crowd on a few nodes, far fewer bytes travel one hop than the
per-source count assumes; every byte that misses its one-hop slot costs at least one more arc.

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

Lemma 2 (all sources). ``Y = sum_s y_s <= OneHop(c)``, the optimum of the fractional b-matching
LP with one column per pair ``p = {s, t}`` and copy ``k = 1..d``::

    max  sum_{p, k} w_pk(c) z_pk    s.t.  sum_{p ni v} sum_k z_pk <= d  (every v),  0 <= z <= 1
    w_pk(c) = [min(b_st, k c) - min(b_st, (k-1) c)] + [min(b_ts, k c) - min(b_ts, (k-1) c)]

*Proof.* The solution's topology ``L`` gives ``z_pk = [L_st >= k]``, which meets the degree
rows; the one-hop bytes ``s -> t`` use the ``L_st`` direct links, at most ``min(b_st, c L_st) =
sum_{k <= L_st} (min(b_st, kc) - min(b_st, (k-1)c))``, and likewise ``t -> s``. So ``Y`` is at
most the objective at that integral point, hence at most the LP optimum. QED. ``OneHop`` does
not decrease with ``c``: an optimal ``z`` can be taken non-increasing in ``k`` (the weights are),
and then ``sum_k w_pk z_pk = sum_k (z_pk - z_p,k+1) (min(b_st, kc) + min(b_ts, kc))``.

Theorem. A ring edge crosses at least one arc (any ring order), and in time ``T`` the arcs carry
at most ``n d c`` byte-hops (``sum_a L_a <= n d``). By Lemmas 1 and 2 (and ``y_s <= top_s``)::

    n d c >= F(c) := R + sum_s Moore_s + max(0, sum_s top_s - OneHop(c))

(and the same with the per-destination sums). ``F`` does not increase with ``c`` (Lemma 2), so
the set of ``c`` meeting the inequality is a half-line ``[c*, inf)``, found by bisection; the
value returned is a ``c`` at which it still fails, so ``T > c / B``. With ``OneHop >= sum top``
the bound is the Moore bound's; it is never below it.

Scope: ``"any"`` (every topology with the port budget, every routing, every ring order: rings
are counted at one hop and take no slot). No multiplicity cap is assumed.
"""

from __future__ import annotations

import math

import highspy
import numpy as np
from scipy.sparse import coo_matrix

from ...core.backends.pulp_backend import MatrixModel, highs_lp, new_highs
from ...core.evaluate import moore_slots
from ...core.instance import Instance
from .bisect import last_failing

INF = math.inf


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


class OneHop:
    """The LP of Lemma 2, built once; :meth:`value` re-prices it for a capacity ``c`` (bytes)
    and re-solves from the previous basis."""

    def __init__(self, M: np.ndarray, d: int):
        n = M.shape[0]
        # the pairs with demand in either direction, from the nonzeros only (no n x n copy: a
        # pair without demand has weight 0, so its columns never help)
        s, t = np.nonzero(M)
        iu, ju = np.unique(np.stack([np.minimum(s, t), np.maximum(s, t)]), axis=1)
        self.a, self.b = M[iu, ju], M[ju, iu]
        self.d, P = d, len(iu)
        cols = np.arange(P * d)
        rows = np.concatenate([np.tile(iu, d), np.tile(ju, d)])
        A = coo_matrix((np.ones(2 * P * d), (rows, np.concatenate([cols, cols]))),
                       shape=(n, P * d)).tocsc()
        model = MatrixModel(A, np.zeros(P * d), np.zeros(P * d), np.ones(P * d),
                            np.full(n, -INF), np.full(n, float(d)), np.zeros(P * d, bool), [],
                            maximize=True)
        self.h = new_highs()
        self.h.setOptionValue("output_flag", False)
        self.h.passModel(highs_lp(model))
        self.idx = np.arange(P * d, dtype=np.int32)

    def weights(self, c: float) -> np.ndarray:
        """``w_pk(c)``, copy-major (column ``k P + p``)."""
        ks = np.arange(1, self.d + 1)[:, None]
        w = (np.minimum(self.a, ks * c) - np.minimum(self.a, (ks - 1) * c)
             + np.minimum(self.b, ks * c) - np.minimum(self.b, (ks - 1) * c))
        return w.ravel()

    def value(self, c: float) -> float:
        if len(self.idx) == 0:
            return 0.0
        self.h.changeColsCost(len(self.idx), self.idx, self.weights(c))
        self.h.run()
        if self.h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
            raise RuntimeError("matching bound: b-matching LP "
                               f"{self.h.modelStatusToString(self.h.getModelStatus())}")
        # the LP's optimum bounds Y from above; a tiny relative slack covers solver tolerance
        return float(self.h.getInfo().objective_function_value) * (1 + 1e-9)


def matching_bound(instance: Instance, info: dict | None = None) -> float:
    """``c* / B`` of the theorem (module docstring), seconds; scope ``"any"``."""
    n, d, B = instance.n, instance.degree, instance.link_bytes_per_s
    if d < 1 or instance.total_bytes() <= 0:
        return 0.0
    M = instance.mp_matrix()
    ring = float(sum(g.edge_bytes * len(g.members) for g in instance.allreduce))
    sums = [_level_sums(M, d), _level_sums(M.T, d)]
    if not all(math.isfinite(m) for m, _ in sums):
        return INF  # d = 1 and demands beyond one hop: no topology routes them
    lp = OneHop(M, d)

    def excess(c: float) -> float:
        one = lp.value(c)
        return max(ring + m + max(0.0, top - one) for m, top in sums) - n * d * c

    lo = max(ring + m for m, _ in sums) / (n * d)  # the Moore bound's c: excess >= 0 there
    value = lo if excess(lo) <= 0 else last_failing(excess, lo, 2 * lo, rel=1e-9, steps=60)
    if info is not None:
        info.update(one_hop=lp.value(value), top=[t for _, t in sums])
    return float(value / B)
