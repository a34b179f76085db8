"""Number theory of circulants and ring orders, shared by the heuristics and the exact models.

* :func:`candidates` -- the TotientPerms jump candidates of a coset group: an AllReduce group of
  size ``g`` on a coset ``{s, s + n/g, ...}`` of ``Z_n`` can use the jumps ``p = (n/g) m`` with
  ``1 <= m <= g``, ``gcd(m, g) = 1`` (``phi(g)`` of them): ``x -> x + p`` then walks the whole
  coset, a Hamiltonian ring of the group;
* :func:`totient_orders` -- the ring orders ``member[(i m) mod k]``, ``gcd(m, k) = 1``, of a
  group's sorted members (``m`` and ``k - m`` are a ring and its reverse): the ring space of
  alloc-milp and select-milp;
* :func:`rep`, :func:`port_cost` -- a jump's canonical representative ``p <= n/2`` and its
  ports per node (1 for the matching ``p = n/2``, else 2);
* :func:`circulant_jumps` -- the jumps of a circulant link matrix (with multiplicity);
* :func:`residue_distances` -- hop distances from 0 in a circulant (BFS over ``Z_n``).
"""

from __future__ import annotations

from collections.abc import Sequence
from math import gcd

import numpy as np

from .errors import InputError


def candidates(n: int, g: int) -> list[int]:
    """Jumps ``(n/g) m``, ``1 <= m <= g``, ``gcd(m, g) = 1`` (ascending) for a group of size
    ``g`` on a coset of ``Z_n``."""
    if g < 2:
        raise InputError(f"g: a group needs at least 2 members, got {g}")
    if n % g:
        raise InputError(f"g: group size {g} does not divide n = {n}")
    step = n // g
    return [step * m for m in range(1, g + 1) if gcd(m, g) == 1]


def _totient_steps(k: int) -> list[int]:
    """The steps ``m`` of :func:`totient_orders` for a group of ``k``: ``1 <= m < k``,
    ``gcd(m, k) = 1``."""
    return [m for m in range(1, k) if gcd(m, k) == 1]


def totient_orders(members) -> list[tuple[int, ...]]:
    """TotientPerms candidate ring orders of a group: ``member[(i m) mod k]``, ``gcd(m,k)=1``
    over the sorted members (``m`` and ``k - m`` give a ring and its reverse)."""
    ms = sorted(members)
    k = len(ms)
    return [tuple(ms[(i * m) % k] for i in range(k)) for m in _totient_steps(k)] or [tuple(ms)]


def totient_order_count(k: int) -> int:
    """``len(totient_orders(members))`` for a group of ``k`` members, without building them
    (a size check at k = 5000 would build 2000 orders of 5000 nodes)."""
    return max(len(_totient_steps(k)), 1)


def is_totient_order(members, order) -> bool:
    """Whether ``order`` is, up to rotation, one of :func:`totient_orders` of ``members``.

    Each candidate ``member[(i m) mod k]`` starts at the smallest member, and its second
    node ``member[m]`` names ``m``; so ``order`` rotated to start at its smallest node is a
    candidate iff that ``m`` has ``gcd(m, k) = 1`` and the order is ``member[(i m) mod k]``.
    Checked in ``O(k)``, instead of building the ``phi(k)`` candidates of ``k`` nodes each
    (10^7 tuples at k = 5000, n = 10^4: 14 s per solution summary)."""
    ms = sorted(members)
    k = len(ms)
    o = list(order)
    if len(o) != k or k == 0:
        return False
    if k == 1:
        return o == ms
    start = o.index(min(o))
    o = o[start:] + o[:start]
    pos = {v: i for i, v in enumerate(ms)}
    m = pos.get(o[1])
    if m is None or gcd(m, k) != 1:
        return False
    return all(o[i] == ms[(i * m) % k] for i in range(k))


def rep(n: int, x: int) -> int:
    """The jump ``p <= n/2`` naming the same ring as ``x`` (``x`` and ``-x`` mod ``n``)."""
    x %= n
    return min(x, n - x)


def port_cost(n: int, p: int) -> int:
    """Ports per node used by jump ``p``: 1 for the matching ``p = n/2``, else 2."""
    return 1 if 2 * p == n else 2


def circulant_jumps(links: np.ndarray) -> tuple[int, ...] | None:
    """The jumps of ``links`` if it is circulant (``L[i, j]`` depends only on ``j - i mod n``),
    as residues ``1 <= p <= n/2`` repeated by multiplicity; ``None`` otherwise."""
    L = np.asarray(links)
    n = L.shape[0]
    row = L[0]
    if not all((L[i] == np.roll(row, i)).all() for i in range(1, n)):
        return None
    jumps: list[int] = []
    for p in range(1, n // 2 + 1):
        jumps.extend([p] * int(row[p]))
    return tuple(jumps) if jumps else None


def residue_distances(n: int, jumps: Sequence[int]) -> np.ndarray:
    """Hop distance from 0 to every residue in the circulant with these jumps (BFS)."""
    dist = np.full(n, np.inf)
    dist[0] = 0
    frontier = np.array([0])
    coins = np.array(sorted({c % n for p in jumps for c in (p, -p)}))
    h = 0
    while frontier.size:
        h += 1
        nxt = np.unique((frontier[:, None] + coins[None, :]) % n)
        nxt = nxt[np.isinf(dist[nxt])]
        dist[nxt] = h
        frontier = nxt
    return dist
