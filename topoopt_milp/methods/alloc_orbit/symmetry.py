"""Shift symmetry of an instance: the rotations ``v -> v + s (mod n)`` that map its traffic
onto itself.

A rotation ``pi_s`` is a *symmetry* of an instance when

* every MP demand is invariant: ``D[pi_s(i), pi_s(j)] = D[i, j]`` for all ``i, j``;
* every AllReduce group with traffic is mapped onto itself, and at least one of its
  TotientPerms ring orders (:func:`..formulations.ring_lp.candidate_orders`) is invariant:
  the successor map ``succ`` of the order commutes with the rotation,
  ``succ(pi_s(v)) = pi_s(succ(v))``.

The rotations by multiples of ``s`` are then symmetries too (an order invariant under
``pi_s`` is invariant under its powers). The *period* is the smallest such ``s`` dividing
``n``; ``s = n`` is the identity: no symmetry. The coopt instances that the outer loop builds from coset
placements are symmetric: bert and gpt3-1.3b at ``n = 128`` have period 4 (a block of four
consecutive servers repeats 32 times), gpt3-13b period 8, candle period 16. Random MP traffic
(the mixed family) has none.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from ...core.instance import Instance
from ..formulations.ring_lp import Order, candidate_orders


def invariant_orders(orders: Sequence[Order], s: int, n: int) -> list[Order]:
    """The orders of ``orders`` whose successor map commutes with ``v -> v + s (mod n)``."""
    out = []
    for order in orders:
        succ = {v: order[(i + 1) % len(order)] for i, v in enumerate(order)}
        if all(succ.get((v + s) % n) == (w + s) % n for v, w in succ.items()):
            out.append(tuple(order))
    return out


def ring_orders(instance: Instance, s: int,
                candidates: Mapping[int, Sequence[Order]] | None = None
                ) -> dict[int, list[Order]] | None:
    """The invariant candidate orders of every group with traffic under ``v -> v + s``, or
    ``None`` when some group is not mapped onto itself or has no invariant order."""
    n = instance.n
    cands = candidate_orders(instance) if candidates is None else candidates
    out = {}
    for g, orders in cands.items():
        members = set(instance.allreduce[g].members)
        if {(v + s) % n for v in members} != members:
            return None
        keep = invariant_orders(orders, s, n)
        if not keep:
            return None
        out[g] = keep
    return out


def is_symmetry(instance: Instance, s: int, mp: np.ndarray | None = None,
                candidates: Mapping[int, Sequence[Order]] | None = None) -> bool:
    """True when ``v -> v + s (mod n)`` is a symmetry of ``instance`` (module docstring);
    ``mp`` (:meth:`Instance.mp_matrix`) and ``candidates`` may be handed in when known."""
    D = instance.mp_matrix() if mp is None else mp
    return is_invariant(D, s) and ring_orders(instance, s, candidates) is not None


def period(instance: Instance) -> int:
    """The smallest ``s`` dividing ``n`` whose rotation is a symmetry (``n``: none)."""
    n = instance.n
    D, cands = instance.mp_matrix(), candidate_orders(instance)
    for s in range(1, n):
        if n % s == 0 and is_symmetry(instance, s, D, cands):
            return s
    return n


def is_invariant(matrix: np.ndarray, s: int) -> bool:
    """True when an ``n x n`` matrix (links, or the MP demand) is invariant under
    ``v -> v + s (mod n)``: ``M[v + s, w + s] = M[v, w]``."""
    n = matrix.shape[0]
    idx = (np.arange(n) + s) % n
    return bool(np.array_equal(matrix[np.ix_(idx, idx)], matrix))
