"""The links between member sets in group-split's step 2: to MP partners (:func:`mp_links`),
the sets in a cycle (:func:`cycle_links`) or the nodes along heavy MP tours
(:func:`tour_links`); each works in place on a link matrix whose rings are laid.
"""

from __future__ import annotations

import heapq

import numpy as np
from scipy.optimize import linear_sum_assignment

from ...core.instance import Instance
from ...core.tours import tour


def _link(L: np.ndarray, free: np.ndarray, u: int, v: int) -> None:
    """One more link ``u -- v``, one port fewer free at each end."""
    L[u, v] += 1
    L[v, u] += 1
    free[u] -= 1
    free[v] -= 1


def mp_links(instance: Instance, L: np.ndarray, primary: np.ndarray) -> int:
    """Step 2 in place on ``L`` (up to ``d`` ports per node): the MP links; returns how many."""
    d = instance.degree
    W: dict[tuple[int, int], float] = {}
    for s, t, b in instance.mp:
        if b > 0 and s != t:
            key = (min(s, t), max(s, t))
            W[key] = W.get(key, 0.0) + b
    free = d - L.sum(axis=1)
    made: dict[tuple[int, int], int] = {}
    heap = [(-w, u, v, 0) for (u, v), w in W.items()]
    heapq.heapify(heap)
    links = 0
    while heap:
        _, u, v, seen = heapq.heappop(heap)
        if free[u] <= 0 or free[v] <= 0 or L[u, v]:
            continue
        pair = (min(primary[u], primary[v]), max(primary[u], primary[v]))
        c = made.get(pair, 0)
        if c != seen:  # stale priority: push back with the current divisor
            heapq.heappush(heap, (-W[(u, v)] / (1 + c) ** 2, u, v, c))
            continue
        _link(L, free, u, v)
        made[pair] = c + 1
        links += 1
    return links


def cycle_links(instance: Instance, L: np.ndarray, primary: np.ndarray) -> int:
    """Step 2 with ``cross = "cycle"``, in place on ``L``: the member sets (``primary``: a
    node's heaviest) in a cycle, from the set with the least MP (an end of a pipeline), each
    next the unvisited set it shares the most MP bytes with; about half of each set's free
    ports are linked to each of its two neighbours in the cycle, among the free nodes of two
    neighbouring sets the pairs with the most MP bytes between them (an assignment), so
    pipeline partners are linked directly where their stages meet. Returns how many links.

    Why. With the MP rule (:func:`mp_links`) the links between the sets follow the MP, so
    on a pipeline the last stage and the first are joined only through the middle ones;
    the cycle joins them too, and a set's ring bytes can detour through the two sets next
    to it, using their spare capacity. On GPT-3 (stage groups, the first stage's ring the
    heaviest), with the route LP over the sets' one-hop Hamiltonian cycles and tours (free
    split): gpt3-1.3b at n = 32 / 64 / 128 0.0746 / 0.0789 / 0.0819 s against 0.0780 /
    0.0833 / 0.0859 s for the best solutions known before, gpt3-13b at n = 64 / 128 0.3899 /
    0.4131 s against 0.4028 / 0.4218 s (certify, T = 600 s, the start itself was the best
    solution: results/certify-d4-cycle.md)."""
    d = instance.degree
    sets = [int(x) for x in np.unique(primary[primary >= 0])]
    if len(sets) < 2:
        return 0
    mp = instance.mp_matrix()
    mp = mp + mp.T
    members = [np.flatnonzero(primary == x) for x in sets]
    W = np.array([[mp[np.ix_(a, b)].sum() for b in members] for a in members])
    np.fill_diagonal(W, -1.0)
    order = [int(np.argmin(W.sum(axis=1)))]  # an end of a pipeline of stages
    left = set(range(len(sets))) - set(order)
    while left:
        order.append(max(sorted(left), key=lambda h: W[order[-1], h]))
        left.discard(order[-1])
    free = d - L.sum(axis=1)
    total = [int(free[m].sum()) for m in members]
    q = len(order)
    links = 0
    for i in range(q if q > 2 else 1):
        g, h = order[i], order[(i + 1) % q]
        rest_g, rest_h = int(free[members[g]].sum()), int(free[members[h]].sum())
        if q == 2:  # two sets: every free port across
            want = min(rest_g, rest_h)
        elif i == 0:  # half forward, half kept for the closing link
            want = -(-total[g] // 2)
        elif i < q - 1:  # what is left forward, keeping half of h's ports for its next
            want = min(rest_g, rest_h - total[h] // 2)
        else:  # the closing link: what is left
            want = rest_g
        A = np.repeat(members[g], np.maximum(free[members[g]], 0))
        B = np.repeat(members[h], np.maximum(free[members[h]], 0))
        if not len(A) or not len(B) or want <= 0:
            continue
        r, c = linear_sum_assignment(-mp[np.ix_(A, B)])
        for j in np.argsort(-mp[A[r], B[c]], kind="stable")[:want]:
            u, v = int(A[r[j]]), int(B[c[j]])
            if free[u] > 0 and free[v] > 0 and not L[u, v]:
                _link(L, free, u, v)
                links += 1
    return links


def tour_links(instance: Instance, L: np.ndarray, rng: np.random.Generator) -> int:
    """Step 2 with ``cross = "tour"``, in place on ``L``: while at least three nodes have two
    free ports, a Hamiltonian cycle through them that keeps the MP bytes between consecutive
    nodes high (2-opt, :func:`~topoopt_milp.core.tours.tour`, on the pair cost
    ``-W_uv / max W + 2 [u, v linked]``, ``W`` the MP bytes in both directions: a pair
    already linked is taken only when nothing else is left) is laid on them; returns how
    many links.

    Why a tour and not the heaviest pairs: the MP of pipeline-times-data-parallel traffic is
    a chain along consecutive nodes with chords, and a 2-factor of the same MP weight may
    close it into two short cycles. On candle-n128-d4 (16-node blocks, nested data-parallel
    groups on the rings' two ports) the route LP (the same ring orders, split evenly over
    both directions) gives 0.842 s when each block's MP ports form one cycle of 16 and
    1.080 s when they form two of 8 (the same MP bytes one hop): the long cycle links the
    residue classes, whose ring bytes detour through each other."""
    d = instance.degree
    W = instance.mp_matrix()
    W = W + W.T
    scale = max(float(W.max(initial=0.0)), 1e-300)
    free = d - L.sum(axis=1)
    made = 0
    while (free >= 2).sum() >= 3:
        members = np.flatnonzero(free >= 2)
        o = tour(members.tolist(), -W / scale + 2.0 * (L > 0), rng)
        for u, v in zip(o, o[1:] + o[:1]):
            _link(L, free, u, v)
            made += 1
    return made
