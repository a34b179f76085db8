"""The compiled kernels of hop-anneal: the hop volume of a graph by bit-parallel breadth-first
search, and a chunk of simulated annealing over degree-preserving 2-switches (numba).

Hop volume. ``H(L) = sum_st D_st dist_L(s, t)`` for a demand matrix ``D`` (``inf`` when the
graph is disconnected). With ``R_k(v)`` the set of nodes within ``k`` hops of ``v`` (a bitset of
``W = ceil(n / 64)`` words), ``R_0(v) = {v}`` and ``R_k(v) = R_{k-1}(v) | OR_{u in N(v)}
R_{k-1}(u)``, node ``t`` lies at distance exactly ``k`` from ``v`` iff it is in ``R_k(v)`` but
not in ``R_{k-1}(v)``, so ``H = sum_k k sum_v sum_{t in R_k(v) - R_{k-1}(v)} D_vt``. One level
costs ``W sum_v deg(v)`` word operations, against ``n sum_v deg(v)`` for a breadth-first
search from every source (a factor ``64`` fewer at ``W = 1``). With uniform demand (``D_st =
c`` for all ``s != t``, the all-to-all case) the inner sum is ``c`` times a population count;
otherwise each new bit is looked up in ``D`` (``n^2`` look-ups over all levels).

Moves. A 2-switch picks two links ``(a, b)`` and ``(c, e)`` (uniformly among the link slots,
the second one in a random orientation) and replaces them by ``(a, c)`` and ``(b, e)``: every
node keeps its degree. It is admissible when the four nodes are distinct and both new pairs
stay below the multiplicity cap. Acceptance is Metropolis on the change of ``H / sum D`` (the
demand-weighted mean distance; ``+inf`` for a disconnecting move, never accepted): a move
that does not raise it is always accepted, one that raises it by ``delta`` with probability
``exp(-delta / temp)``. The temperature falls geometrically from ``t_from`` to ``t_to`` over
the chunk; the caller strings chunks together (its clock sets each chunk's range).

The random numbers are numba's own generator, seeded by :func:`seed`: a run with the same
seed and the same chunks (iterations and temperatures) makes the same moves.
"""

from __future__ import annotations

import numpy as np

from ...core.jit import njit  # numba's njit, or a pass-through without numba

INF = np.inf


@njit(cache=True)
def seed(value):
    """Seed the compiled generator (numba keeps its own state, apart from numpy's)."""
    np.random.seed(value)


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
def _draw(edges):
    # two distinct link slots, each in a random orientation
    m = edges.shape[0]
    i = np.random.randint(m)
    j = np.random.randint(m - 1)
    if j >= i:
        j += 1
    a, b = edges[i, 0], edges[i, 1]
    if np.random.random() < 0.5:
        a, b = b, a
    c, e = edges[j, 0], edges[j, 1]
    if np.random.random() < 0.5:
        c, e = e, c
    return i, j, a, b, c, e


@njit(cache=True)
def _admissible(M, cap, a, b, c, e):
    # four distinct nodes, both new pairs below the cap
    distinct = a != c and a != e and b != c and b != e  # a != b, c != e: they are links
    return distinct and M[a, c] < cap and M[b, e] < cap


@njit(cache=True)
def _replace(nbr, deg, v, old, new):
    # one occurrence of ``old`` in v's neighbour list becomes ``new``
    for k in range(deg[v]):
        if nbr[v, k] == old:
            nbr[v, k] = new
            return


@njit(cache=True)
def _switch(M, nbr, deg, edges, i, j, a, b, c, e):
    # links (a, b) = edges[i] and (c, e) = edges[j] become (a, c) and (b, e)
    M[a, b] -= 1
    M[b, a] -= 1
    M[c, e] -= 1
    M[e, c] -= 1
    M[a, c] += 1
    M[c, a] += 1
    M[b, e] += 1
    M[e, b] += 1
    _replace(nbr, deg, a, b, c)
    _replace(nbr, deg, b, a, e)
    _replace(nbr, deg, c, e, a)
    _replace(nbr, deg, e, c, b)
    edges[i, 0] = a
    edges[i, 1] = c
    edges[j, 0] = b
    edges[j, 1] = e


@njit(cache=True)
def anneal_chunk(M, nbr, deg, edges, D, uniform, scale, cap, cost, iters, t_from, t_to,
                 best_cost, best_edges, R, Rn):
    """``iters`` annealing moves (module docstring) on the state ``M`` (link matrix), ``nbr`` /
    ``deg`` (neighbour lists) and ``edges`` (one row per link), all updated in place, from the
    current hop volume ``cost``; ``scale`` = ``sum D`` (the cost is compared as ``H / scale``).
    The best state seen is kept in ``best_edges`` when it beats ``best_cost``. Returns
    ``(cost, best_cost, accepted, improved)``."""
    m = edges.shape[0]
    accepted = 0
    improved = 0
    if iters <= 0 or m < 2:
        return cost, best_cost, accepted, improved
    ratio = (t_to / t_from) ** (1.0 / iters) if t_from > 0 else 1.0
    temp = t_from
    for _ in range(iters):
        temp *= ratio
        i, j, a, b, c, e = _draw(edges)
        if not _admissible(M, cap, a, b, c, e):
            continue
        _switch(M, nbr, deg, edges, i, j, a, b, c, e)
        new = hop_volume(nbr, deg, D, uniform, R, Rn)
        delta = (new - cost) / scale
        if delta <= 0.0 or (temp > 0.0 and new < INF
                            and np.random.random() < np.exp(-delta / temp)):
            cost = new
            accepted += 1
            if cost < best_cost:
                best_cost = cost
                best_edges[:, :] = edges
                improved += 1
        else:  # undo: (a, c), (b, e) back to (a, b), (c, e)
            _switch(M, nbr, deg, edges, i, j, a, c, b, e)
    return cost, best_cost, accepted, improved


@njit(cache=True)
def sample_rises(M, nbr, deg, edges, D, uniform, scale, cap, cost, tries, R, Rn):
    """The rises of ``H / scale`` (``> 0`` only, connected results only) of up to ``tries``
    random admissible moves, each undone: the calibration of the start temperature."""
    m = edges.shape[0]
    out = np.zeros(tries)
    count = 0
    if m < 2:
        return out[:0]
    for _ in range(tries):
        i, j, a, b, c, e = _draw(edges)
        if not _admissible(M, cap, a, b, c, e):
            continue
        _switch(M, nbr, deg, edges, i, j, a, b, c, e)
        new = hop_volume(nbr, deg, D, uniform, R, Rn)
        _switch(M, nbr, deg, edges, i, j, a, c, b, e)
        if new < INF and new > cost:
            out[count] = (new - cost) / scale
            count += 1
    return out[:count]
