"""Degree-preserving 2-swaps of a link matrix, guided by arc loads, LP duals and hop counts.

Move. For four distinct nodes with links ``(a, b)`` and ``(c, d)`` the swap removes one link
of each and adds one link ``(a, c)`` and one ``(b, d)``: every node keeps its degree (``a``
and ``c`` lose one link and gain one, so do ``b`` and ``d``), so the port budget holds
exactly. A swap is admissible when both new pairs stay within the multiplicity cap. (The
other reconnection ``(a, d), (b, c)`` is the swap of ``(a, b)`` with ``(d, c)``, which the
enumeration meets as well.)

Guides (all dimensionless, a relative change of the communication time ``T`` to first
order):

* **add value** of a pair: the route LP's dual gain of one more link,
  ``gains_ij + gains_ji`` (:class:`..formulations.ring_lp.RingRoute`; duality gives
  ``sum_a pi_a L_a = 1``, so one unit of capacity on an arc lowers ``U`` by about
  ``U gains``), plus the **shortcut** value ``(D_ij + D_ji)(dist_ij - 1) / H``: the share of
  the hop volume ``H = sum_st D_st dist(s, t)`` a direct link would save on the pair's own
  demand (the heaviest demands that travel furthest come first);
* **drop cost** of a linked pair: its capacity price ``pi_ij + pi_ji``, the first-order cost
  of losing one link; without duals (a start routed by a heuristic) the pair's utilisation
  ``w_ij / L_ij`` over the hottest pair's instead;
* **hop change**: the exact relative change ``-Delta H / H`` of the hop volume with the
  current rings, recomputed by breadth-first search on the swapped graph. ``H / (B sum L)``
  is a lower bound on ``T`` for the topology (every byte crosses at least ``dist`` arcs);
  with uniform traffic on a near-symmetric graph it is close to ``T`` itself.

The estimate of a swap is ``add(a, c) + add(b, d) - drop(a, b) - drop(c, d)``; the ``pool``
best by estimate are scored with the hop change added (``key``). Estimates only rank moves:
a move is accepted only on the exact re-routed objective (:mod:`.search`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .starts import hop_distances

Swap = tuple[int, int, int, int]  # (a, b, c, d): drop (a, b), (c, d); add (a, c), (b, d)


@dataclass(frozen=True)
class Guide:
    """The per-pair values of the module docstring for one current solution."""

    add: np.ndarray
    drop: np.ndarray
    demand: np.ndarray  # symmetrised bytes per pair (MP plus the current rings' edges)


def guide(links: np.ndarray, demand: np.ndarray, loads: np.ndarray,
          prices: np.ndarray | None, gains: np.ndarray | None) -> Guide:
    """The add values and drop costs (module docstring) of the current solution: ``demand``
    bytes per ordered pair, ``loads`` its routing's arc loads, ``prices`` / ``gains`` its
    route LP's duals (or ``None``)."""
    n = links.shape[0]
    D = demand + demand.T
    np.fill_diagonal(D, 0.0)
    dist = hop_distances(links)
    H = float((demand * np.where(np.isfinite(dist), dist, 0.0)).sum())
    short = np.where(np.isfinite(dist), D * np.clip(dist - 1, 0, None), 0.0) / max(H, 1e-300)
    add = short.copy()
    if gains is not None:
        add += np.clip(gains + gains.T, 0.0, None)
    w = np.maximum(loads, loads.T)
    if prices is not None:
        drop = prices + prices.T
    else:
        util = np.where(links > 0, w / np.maximum(links, 1), 0.0)
        drop = util / max(float(util.max()), 1e-300)
    add[np.eye(n, dtype=bool)] = -np.inf
    return Guide(add, np.where(links > 0, drop, np.inf), D)


def hop_volume(links: np.ndarray, demand: np.ndarray) -> float:
    """``H = sum_st D_st dist(s, t)`` (``inf`` when a demand is disconnected)."""
    dist = hop_distances(links)
    pos = demand > 0
    return float((demand[pos] * dist[pos]).sum())


def apply(links: np.ndarray, s: Swap) -> np.ndarray:
    """A copy of ``links`` with the swap applied."""
    a, b, c, d = s
    L = links.copy()
    for i, j, delta in ((a, b, -1), (c, d, -1), (a, c, 1), (b, d, 1)):
        L[i, j] += delta
        L[j, i] += delta
    return L


def swap_key(s: Swap) -> tuple:
    """The swap as its (removed pairs, added pairs), independent of how it was enumerated."""
    a, b, c, d = s
    pair = lambda i, j: (min(i, j), max(i, j))  # noqa: E731
    return tuple(sorted((pair(a, b), pair(c, d)))), tuple(sorted((pair(a, c), pair(b, d))))


def candidates(links: np.ndarray, g: Guide, cap: int, k_add: int,
               banned: set[tuple] | None = None) -> list[tuple[float, Swap]]:
    """Admissible swaps ``(estimate, swap)``, best first: for each of the ``k_add`` pairs
    ``(a, c)`` with the highest add value (below the cap), every link ``(a, b)`` at ``a`` and
    ``(c, d)`` at ``c`` with ``a, b, c, d`` distinct and ``(b, d)`` below the cap; swaps whose
    :func:`swap_key` is ``banned`` (rejected before) are left out."""
    n = links.shape[0]
    iu, ju = np.triu_indices(n, 1)
    ok = links[iu, ju] < cap
    iu, ju = iu[ok], ju[ok]
    vals = g.add[iu, ju]
    order = np.argsort(-vals, kind="stable")
    out: list[tuple[float, Swap]] = []
    taken = 0
    nbrs = [np.flatnonzero(links[v] > 0) for v in range(n)]
    for k in order:
        if taken >= k_add:
            break
        a, c = int(iu[k]), int(ju[k])
        taken += 1
        base = g.add[a, c]
        for b in nbrs[a]:
            if b == c:
                continue
            for d in nbrs[c]:
                if d in (a, b) or links[b, d] >= cap:
                    continue
                s = (a, int(b), c, int(d))
                if banned and swap_key(s) in banned:
                    continue
                est = base + g.add[b, d] - g.drop[a, b] - g.drop[c, d]
                out.append((float(est), s))
    out.sort(key=lambda t: -t[0])
    return out


def scored(links: np.ndarray, demand: np.ndarray, H: float, cands, pool: int,
           deadline: float | None = None) -> list[tuple[float, float, Swap]]:
    """The ``pool`` best candidates with their hop change: ``(key, H_after, swap)`` with
    ``key = estimate - Delta H / H`` (disconnecting swaps dropped), best first; candidates
    left when ``deadline`` (``time.perf_counter()``) passes are not scored."""
    import time

    out = []
    for est, s in cands[:pool]:
        if deadline is not None and time.perf_counter() > deadline:
            break
        Hs = hop_volume(apply(links, s), demand)
        if not np.isfinite(Hs):
            continue
        out.append((est + (H - Hs) / max(H, 1e-300), Hs, s))
    out.sort(key=lambda t: -t[0])
    return out


def batch(links: np.ndarray, g: Guide, demand: np.ndarray, cap: int, q: int, k_add: int,
          pool: int, banned: set[tuple] | None = None, positive: bool = True
          ) -> tuple[np.ndarray, list[Swap]]:
    """Up to ``q`` swaps applied greedily, each the best by ``key`` on the graph the previous
    ones left (hop changes recomputed; dual values kept, so swaps touching a node already
    changed are skipped: its duals no longer describe it). With ``positive`` only swaps
    predicted to improve (``key > 0``) are taken. Returns the new links and the swaps."""
    L, done, touched = links.copy(), [], set()
    H = hop_volume(L, demand)
    for _ in range(q):
        cands = [c for c in candidates(L, g, cap, k_add, banned)
                 if not touched.intersection(c[1])]
        best = scored(L, demand, H, cands, pool)
        if not best or (positive and best[0][0] <= 0):
            break
        _, H, s = best[0]
        L = apply(L, s)
        done.append(s)
        touched.update(s)
    return L, done


def descend(links: np.ndarray, demand: np.ndarray, cap: int, seconds: float, k_add: int,
            pool: int) -> tuple[np.ndarray, int]:
    """Hop-volume descent without any routing: apply the swap with the largest decrease of
    ``H`` (add values: the shortcut values only, drop costs 0) until none decreases it or
    ``seconds`` have passed. ``H / (B sum L)`` bounds ``T`` from below for every routing, and
    on uniform traffic it is what the route LP achieves on near-symmetric graphs (the mean
    hop count is the quantity Graph Golf minimises), so this is the cheap first phase of a
    search whose route LPs are expensive. Returns the links and the number of swaps."""
    import time

    end = time.perf_counter() + seconds
    L, count = links.copy(), 0
    H = hop_volume(L, demand)
    zeros = np.zeros_like(demand)
    while time.perf_counter() < end:
        g = guide(L, demand, zeros, None, None)
        g = Guide(g.add, np.where(L > 0, 0.0, np.inf), g.demand)
        best = scored(L, demand, H, candidates(L, g, cap, k_add), pool, end)
        best = [b for b in best if b[1] < H * (1 - 1e-12)]
        if not best:
            break
        _, H, s = min(best, key=lambda b: b[1])
        L = apply(L, s)
        count += 1
    return L, count
