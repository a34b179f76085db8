"""The base routing of :mod:`.paths`: what every pair sends where its columns do not.

The base is the *key path* of every pair (its path in a shortest-path tree of its source),
or in general a mix of paths: pair ``k`` splits its demand over
base paths ``b`` with fractions ``f_b`` (``sum_b f_b = 1``), so its base uses arc ``a`` with
weight ``w_k(a) = sum_{b ∋ a} f_b``; a column (path ``p``, fraction ``x_p``) moves ``x_p`` of
the pair's whole base mix onto ``p``, and the capacity coefficient of ``p`` in resource ``r``
is ``d_k (|p ∩ r| - sum_{a in r} w_k(a))``. With a single key path this is the key-path
substitution of :mod:`.paths`.
"""

from __future__ import annotations

import numpy as np


def hops(nodes: np.ndarray, ptr: np.ndarray, arc_id: np.ndarray):
    """Arc of every hop of the ragged paths ``nodes[ptr[j]:ptr[j + 1]]`` and the path owning
    it (``-1`` arcs where a hop is not an arc of ``arc_id``)."""
    owner = np.repeat(np.arange(len(ptr) - 1), np.diff(ptr))
    same = owner[:-1] == owner[1:]
    return arc_id[nodes[:-1][same], nodes[1:][same]], owner[:-1][same]


class Base:
    """Base paths ``j`` of pairs ``pair[j] = k * n + t`` (``k`` a source index) with
    fractions ``frac[j]``, nodes ``nodes[ptr[j]:ptr[j + 1]]``; per-arc entries ``e_pair,
    e_arc, e_w`` sorted by pair (``eptr[p]:eptr[p + 1]`` for pair ``p``)."""

    def __init__(self, n, S, pair, nodes, ptr, frac, arc_id):
        self.n, self.S = n, S
        self.pair, self.nodes, self.ptr, self.frac = pair, nodes, ptr, frac
        a, owner = hops(nodes, ptr, arc_id)
        if (a < 0).any():
            raise ValueError("base: a path uses a hop that is not an arc")
        ep = pair[owner]
        order = np.argsort(ep, kind="stable")
        self.e_pair, self.e_arc, self.e_w = ep[order], a[order], frac[owner][order]
        self.eptr = np.searchsorted(self.e_pair, np.arange(S * n + 1))

    def arc_load(self, weight: np.ndarray, m: int) -> np.ndarray:
        """Arc loads when pair ``p`` sends ``weight.flat[p]`` on its base."""
        return np.bincount(self.e_arc, weights=self.e_w * weight.ravel()[self.e_pair],
                           minlength=m)

    def length(self, arc_len: np.ndarray) -> np.ndarray:
        """``(S, n)``: every pair's base length ``sum_a w_k(a) l(a)``."""
        return np.bincount(self.e_pair, weights=self.e_w * arc_len[self.e_arc],
                           minlength=self.S * self.n).reshape(self.S, self.n)

    def entries(self, pairs: np.ndarray):
        """The base entries of the columns' pairs: ``(column, arc, weight)``."""
        lens = self.eptr[pairs + 1] - self.eptr[pairs]
        col = np.repeat(np.arange(len(pairs)), lens)
        starts = np.concatenate([[0], np.cumsum(lens)])[:-1]
        pos = np.repeat(self.eptr[pairs] - starts, lens) + np.arange(int(lens.sum()))
        return col, self.e_arc[pos], self.e_w[pos]


def coefficients(vol, nodes, ptr, pairs, base: Base, arc_id, res_of_arc, R):
    """Capacity coefficients ``vol (|p ∩ r| - sum_{a in r} w_k(a))`` per column (module
    docstring; common arcs cancel), as ``(cres, cval, cptr)``."""
    C = len(vol)
    a1, o1 = hops(nodes, ptr, arc_id)
    o2, a2, w2 = base.entries(pairs)
    o = np.concatenate([o1, o2])
    keyv, inv = np.unique(o * R + res_of_arc[np.concatenate([a1, a2])], return_inverse=True)
    val = np.bincount(inv, weights=np.concatenate([np.ones(len(o1)), -w2]) * vol[o])
    own = keyv // R
    nz = np.abs(val) > 1e-12 * vol[own]
    own, res, val = own[nz], keyv[nz] % R, val[nz]
    return res, val, np.searchsorted(own, np.arange(C + 1))
