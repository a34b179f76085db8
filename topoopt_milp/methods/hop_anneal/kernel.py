"""The compiled kernels of hop-anneal: the hop volume of a graph by bit-parallel breadth-first
search, and a chunk of simulated annealing over degree-preserving 2-switches (numba).

Hop volume: :func:`topoopt_milp.core.hop_volume.hop_volume` (bit-parallel breadth-first
search; shared with group-split's cycle descent).

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

from ...core.hop_volume import hop_volume, relink
from ...core.jit import njit  # numba's njit, or a pass-through without numba

__all__ = ["anneal_chunk", "hop_volume", "sample_rises", "seed"]

INF = np.inf


@njit(cache=True)
def seed(value):
    """Seed the compiled generator (numba keeps its own state, apart from numpy's)."""
    np.random.seed(value)


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
def _switch(M, nbr, deg, edges, i, j, a, b, c, e):
    # links (a, b) = edges[i] and (c, e) = edges[j] become (a, c) and (b, e)
    relink(M, nbr, deg, a, b, c, e)
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
