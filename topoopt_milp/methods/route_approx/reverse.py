"""Reversal symmetry: symmetric demand on duplex links routed as half as many pairs.

When the demand is symmetric (``D[s, t] = D[t, s]``) and every link has the same capacity
in both directions (duplex links, no shared SNDlib capacities), the route problem of
:mod:`.method` has an optimal routing that is its own reverse, and that routing is found by
a problem on the unordered pairs:

* **reduced problem**: pair ``s < t`` sends ``D[s, t] + D[t, s]`` from ``s`` to ``t``; the two
  arcs ``(u, v)``, ``(v, u)`` of a link form one capacity resource of capacity
  ``cap(u, v) + cap(v, u)`` (a shared resource, as SNDlib links are in :mod:`.method`).
* **expansion**: pair ``(s, t)`` takes the reduced pair's paths and fractions, ``(t, s)``
  the reversed paths with the same fractions.

Why the optimum is the same, and the certified bound stays valid:

1. *Expansion keeps the congestion.* Arc ``(u, v)`` carries
   ``sum_{s<t} D[s, t] f(P ∋ (u, v)) + sum_{s<t} D[t, s] f(P ∋ (v, u))``, and ``(v, u)`` the
   same with the arcs swapped; with ``D[s, t] = D[t, s]`` both equal half the reduced load of
   the link, so each arc's load over its capacity equals the link's reduced load over
   ``cap(u, v) + cap(v, u) = 2 cap(u, v)``.
2. *Reduction never raises it.* Any routing of the original problem with congestion ``U``
   gives a reduced routing (pair ``s < t`` sends ``D[s, t]`` on ``(s, t)``'s paths and
   ``D[t, s]`` on the reverses of ``(t, s)``'s paths) whose link loads are the sums of the
   two arc loads, ``<= U (cap(u, v) + cap(v, u))``. So the reduced optimum is at most the
   original one, and by 1. equal to it.

Hence the reduced problem's certified bound (any non-negative link lengths, :mod:`.method`)
is a lower bound on the reduced optimum, which is the original optimum: the bound stays
certified, and the expanded routing's congestion is exactly the reduced routing's. The
reduced master has half the pair columns and half the capacity rows; the pricing is the same
all-sources Dijkstra (with equal lengths on both arcs of a link).
"""

from __future__ import annotations

import numpy as np

# symmetry tested exactly: a routing that is its own reverse balances the two arcs of a link
# only when the demands agree exactly (the recomputed objective would show any difference)


def applies(P) -> bool:
    """Whether the route problem ``P`` (:class:`..formulations.route_problem.RouteProblem`)
    has symmetric demand on duplex links with one resource per arc."""
    if P.shared or len(P.res_arcs) != len(P.arcs):
        return False
    cap = np.zeros((P.instance.n,) * 2)
    cap[P.arcs[:, 0], P.arcs[:, 1]] = P.res_cap[np.concatenate(P.res_arcs)] if len(
        P.res_arcs) else 0.0
    return bool(np.array_equal(P.D, P.D.T) and np.array_equal(cap, cap.T))


def reduce(n: int, arcs: np.ndarray, cap: np.ndarray, D: np.ndarray):
    """The reduced problem (module docstring): ``(res_arcs, res_cap, D_red)`` with one
    resource per link (its two arcs) and the demand of every pair ``s < t``. ``cap`` is per
    arc (one resource per arc in the original)."""
    arc_id = np.full((n, n), -1, np.int64)
    arc_id[arcs[:, 0], arcs[:, 1]] = np.arange(len(arcs))
    fwd = np.flatnonzero(arcs[:, 0] < arcs[:, 1])
    rev = arc_id[arcs[fwd, 1], arcs[fwd, 0]]
    if (rev < 0).any():
        raise ValueError("reverse: a link without its reverse arc")
    res_arcs = tuple(np.array([a, b]) for a, b in zip(fwd.tolist(), rev.tolist(), strict=True))
    res_cap = cap[fwd] + cap[rev]
    return res_arcs, res_cap, np.triu(D + D.T, 1)


def expand(pair_paths):
    """``{(s, t): paths}`` for both directions from the reduced pairs' ``(s, t, paths)``."""
    out = {}
    for s, t, paths in pair_paths:
        out[(s, t)] = paths
        out[(t, s)] = [(tuple(reversed(p)), f) for p, f in paths]
    return out
