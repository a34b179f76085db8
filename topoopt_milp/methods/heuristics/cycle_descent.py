"""Hamiltonian cycles whose union has short distances: a descent of the hop volume by moves
that keep every cycle Hamiltonian (and a perfect matching a perfect matching).

Why. group-split's random ring pattern (:func:`.group_split.random_pattern`) is a union of
edge-disjoint random Hamiltonian cycles: its rings are one-hop, and the graph is an expander
for the traffic that leaves them. A random union is not the best one, though: on 128 nodes
two random cycles have an average distance of 3.78 hops, and 3,000 segment reversals that
do not lengthen it bring it to 3.56 (the Moore bound of a 4-regular graph is 3.43); on
``ncf-n128-d4`` (one ring over all nodes and all-to-all MP) the route LP's time falls from
0.02516 to 0.02487 s with the rings unchanged in kind.

Moves. On a cycle ``(.., a, b, .., x, e, ..)`` a 2-opt move reverses ``b .. x``: the links
``(a, b)``, ``(x, e)`` become ``(a, x)``, ``(b, e)`` and the cycle stays Hamiltonian. On a
perfect matching, two pairs ``(a, b)``, ``(x, e)`` become ``(a, x)``, ``(b, e)``. Every node
keeps its degree. A move is admissible when both new pairs are not linked yet (the union
stays a simple graph, so the cycles stay edge-disjoint), and it is kept when the hop volume
``H = sum_{s != t} dist(s, t)`` (:func:`topoopt_milp.core.hop_volume.hop_volume`) does not
grow: equal moves are kept too, so the descent walks plateaus. The moves are drawn by numba's
generator, seeded: the same seed gives the same cycles.
"""

from __future__ import annotations

import numpy as np

from ...core.hop_volume import hop_volume, neighbour_lists, relink, work_arrays
from ...core.jit import njit

MOVES_PER_NODE = 40  # per node and component; two cycles, k = 128: 3.77 -> 3.55 hops in 0.33 s
MAX_WORK = 2e8  # word operations of all the hop volumes of one descent (~0.2-0.5 s)


@njit(cache=True)
def _descend(rows, is_cycle, M, nbr, deg, moves, seed, R, Rn):  # pragma: no cover - compiled
    """``moves`` moves (module docstring) on the components ``rows`` (a cycle's order, or a
    matching's pairs ``rows[c, 2p], rows[c, 2p + 1]``), all updated in place; returns the
    final hop volume and the number of moves kept."""
    np.random.seed(seed)
    C, k = rows.shape
    D = np.zeros((1, 1))
    cost = hop_volume(nbr, deg, D, 1.0, R, Rn)
    kept = 0
    for _ in range(moves):
        c = np.random.randint(C)
        row = rows[c]
        if is_cycle[c]:
            i = np.random.randint(k)
            j = np.random.randint(k)
            if i > j:
                i, j = j, i
            if j - i < 2 or (i == 0 and j == k - 1):
                continue
            a, b, x, e = row[i], row[i + 1], row[j], row[(j + 1) % k]
        else:
            p = np.random.randint(k // 2)
            q = np.random.randint(k // 2)
            if p == q:
                continue
            a, b = row[2 * p], row[2 * p + 1]
            x, e = row[2 * q], row[2 * q + 1]
            if np.random.random() < 0.5:
                x, e = e, x
        if M[a, x] > 0 or M[b, e] > 0:
            continue
        relink(M, nbr, deg, a, b, x, e)
        new = hop_volume(nbr, deg, D, 1.0, R, Rn)
        if new <= cost:
            cost = new
            kept += 1
            if is_cycle[c]:
                row[i + 1:j + 1] = row[i + 1:j + 1][::-1].copy()
            else:
                row[2 * p + 1] = x
                row[2 * q] = b
                row[2 * q + 1] = e
        else:
            relink(M, nbr, deg, a, x, b, e)  # (a, x), (b, e) back to (a, b), (x, e)
    return cost, kept


def union(k: int, cycles: list[tuple[int, ...]], matching: np.ndarray | None) -> np.ndarray:
    """The ``(k, k)`` link matrix of ``cycles`` (orders of ``0..k-1``) and an optional
    ``matching`` (``(k/2, 2)`` pairs)."""
    M = np.zeros((k, k), dtype=np.int64)
    pairs = [(np.asarray(o), np.roll(np.asarray(o), -1)) for o in cycles]
    if matching is not None:
        pairs.append((matching[:, 0], matching[:, 1]))
    for a, b in pairs:
        np.add.at(M, (a, b), 1)
        np.add.at(M, (b, a), 1)
    return M


def shorten(k: int, cycles: list[tuple[int, ...]], matching: np.ndarray | None,
            seed: int = 0, moves: int | None = None
            ) -> tuple[list[tuple[int, ...]], np.ndarray | None]:
    """The descent of the module docstring on edge-disjoint Hamiltonian ``cycles`` of the
    nodes ``0..k-1`` and an optional perfect ``matching`` (``(k/2, 2)`` pairs) disjoint from
    them: the improved ``(cycles, matching)``. ``moves`` defaults to ``MOVES_PER_NODE`` per
    node and component, capped so that the descent costs at most ``MAX_WORK`` word
    operations."""
    comps = [np.asarray(o, dtype=np.int64) for o in cycles]
    if matching is not None:
        comps.append(np.asarray(matching, dtype=np.int64).ravel())
    if not comps or k < 5:
        return cycles, matching
    rows = np.stack(comps)
    is_cycle = np.array([True] * len(cycles) + [False] * (matching is not None))
    M = union(k, cycles, matching)
    nbr, deg = neighbour_lists(M)
    R, Rn = work_arrays(k)
    if moves is None:
        ports = int(deg.max())
        per_move = k * R.shape[1] * ports * max(2.0, np.log(k) / np.log(max(ports - 1, 2)))
        moves = int(min(MOVES_PER_NODE * k * len(rows), MAX_WORK / per_move))
    _descend(rows, is_cycle, M, nbr, deg, moves, seed, R, Rn)
    out = [tuple(int(v) for v in row) for row in rows[:len(cycles)]]
    return out, (rows[-1].reshape(-1, 2) if matching is not None else None)
