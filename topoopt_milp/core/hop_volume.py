"""The hop volume of a graph by bit-parallel breadth-first search (numba), for searches that
evaluate many graphs (hop-anneal's 2-switches, group-split's cycle descent).

``H(L) = sum_st D_st dist_L(s, t)`` for a demand matrix ``D`` (``inf`` when the graph is
disconnected). With ``R_k(v)`` the set of nodes within ``k`` hops of ``v`` (a bitset of
``W = ceil(n / 64)`` words), ``R_0(v) = {v}`` and ``R_k(v) = R_{k-1}(v) | OR_{u in N(v)}
R_{k-1}(u)``, node ``t`` lies at distance exactly ``k`` from ``v`` iff it is in ``R_k(v)`` but
not in ``R_{k-1}(v)``, so ``H = sum_k k sum_v sum_{t in R_k(v) - R_{k-1}(v)} D_vt``. One level
costs ``W sum_v deg(v)`` word operations, against ``n sum_v deg(v)`` for a breadth-first
search from every source (a factor ``64`` fewer at ``W = 1``). With uniform demand (``D_st =
c`` for all ``s != t``, the all-to-all case) the inner sum is ``c`` times a population count;
otherwise each new bit is looked up in ``D`` (``n^2`` look-ups over all levels).

Graphs are neighbour lists: ``nbr[v, :deg[v]]`` (a parallel link appears once per link; that
changes no distance).
"""

from __future__ import annotations

import numpy as np

from .jit import njit  # numba's njit, or a pass-through without numba

INF = np.inf


@njit(cache=True)
def _popcount(x):
    # SWAR population count of a uint64
    x = x - ((x >> np.uint64(1)) & np.uint64(0x5555555555555555))
    x = (x & np.uint64(0x3333333333333333)) + ((x >> np.uint64(2)) & np.uint64(0x3333333333333333))
    x = (x + (x >> np.uint64(4))) & np.uint64(0x0F0F0F0F0F0F0F0F)
    return int((x * np.uint64(0x0101010101010101)) >> np.uint64(56))


@njit(cache=True)
def hop_volume(nbr, deg, D, uniform, R, Rn):
    """``H = sum_st D_st dist(s, t)`` of the graph given by neighbour lists ``nbr[v, :deg[v]]``
    (a parallel link appears once per link; that changes no distance), ``inf`` when it is
    disconnected; ``uniform`` > 0: every off-diagonal demand equals ``uniform`` (``D`` unused).
    ``R``, ``Rn``: ``(n, W)`` uint64 work arrays."""
    n = nbr.shape[0]
    W = R.shape[1]
    for v in range(n):
        for w in range(W):
            R[v, w] = np.uint64(0)
        R[v, v >> 6] = np.uint64(1) << np.uint64(v & 63)
    reached = n
    total = 0.0
    level = 0
    while reached < n * n:
        level += 1
        new_total = 0
        for v in range(n):
            for w in range(W):
                x = R[v, w]
                for k in range(deg[v]):
                    x |= R[nbr[v, k], w]
                Rn[v, w] = x
                new = x & ~R[v, w]
                if new:
                    if uniform > 0:
                        new_total += _popcount(new)
                    else:
                        while new:
                            low = new & (~new + np.uint64(1))  # lowest set bit
                            b = _popcount(low - np.uint64(1))
                            total += level * D[v, (w << 6) + b]
                            new_total += 1
                            new ^= low
        if new_total == 0:
            return INF  # disconnected: no new node reached, some pair never will be
        if uniform > 0:
            total += level * uniform * new_total
        reached += new_total
        R, Rn = Rn, R
    return total


@njit(cache=True)
def replace_neighbour(nbr, deg, v, old, new):
    # one occurrence of ``old`` in v's neighbour list becomes ``new``
    for k in range(deg[v]):
        if nbr[v, k] == old:
            nbr[v, k] = new
            return


@njit(cache=True)
def relink(M, nbr, deg, a, b, x, e):
    """Links ``(a, b)`` and ``(x, e)`` of the link matrix ``M`` and the neighbour lists become
    ``(a, x)`` and ``(b, e)``: every node keeps its degree."""
    M[a, b] -= 1
    M[b, a] -= 1
    M[x, e] -= 1
    M[e, x] -= 1
    M[a, x] += 1
    M[x, a] += 1
    M[b, e] += 1
    M[e, b] += 1
    replace_neighbour(nbr, deg, a, b, x)
    replace_neighbour(nbr, deg, b, a, e)
    replace_neighbour(nbr, deg, x, e, a)
    replace_neighbour(nbr, deg, e, x, b)


def neighbour_lists(L: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(nbr, deg)`` of the symmetric link matrix ``L``: node ``v``'s neighbours
    ``nbr[v, :deg[v]]``, a neighbour once per parallel link."""
    L = np.asarray(L, dtype=np.int64)
    deg = L.sum(axis=1)
    nbr = np.zeros((len(L), max(1, int(deg.max(initial=0)))), dtype=np.int64)
    for v in range(len(L)):
        nbr[v, :deg[v]] = np.repeat(np.arange(len(L)), L[v])
    return nbr, deg


def work_arrays(n: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``(n, W)`` uint64 work arrays ``R``, ``Rn`` of :func:`hop_volume`."""
    W = (n + 63) // 64
    return np.zeros((n, W), dtype=np.uint64), np.zeros((n, W), dtype=np.uint64)
