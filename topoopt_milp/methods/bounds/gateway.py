"""Gateway bound: an AllReduce group whose members cannot afford a link out of it (issue 16,
item 2).

The neighbourhood MILP of :mod:`.neighbourhood` may give a heavy member all ``d`` links
inside its group and send its model-parallel bytes out through a neighbour's spare capacity.
If every member does so, no link leaves the group and its outbound bytes cannot leave at all.
This bound charges a group ``S`` (one group's members) for its *gateways*, the members with a
link to a node outside ``S``.

Per member ``v`` the neighbourhood MILP is solved twice more, with the row "at least one link
leaves ``S``" (least capacity ``c_v^gw``) and with "no link leaves ``S``" (``c_v^ng``); every
solution puts ``v`` in one of the two cases, so at capacity ``c = B T`` the members with
``c < c_v^gw`` are not gateways and those with ``c < c_v^ng`` are.

Notation: ``I_S`` the bytes with both ends in ``S`` (MP, plus ``k_h e_h`` for every group
inside ``S``: each member sends ``e_h`` to a successor in ``S`` in every ring order);
``O_S``, ``I'_S`` the bytes leaving and entering ``S`` (MP plus the least ring crossings of
:func:`~.counting._ring_crossings`); ``q_s`` the MP bytes between ``s`` and the complement in
both directions; ``sigma_u = d c - max(out_u, in_u)``.

Validity (lemma). Take a solution of time ``T`` with simple paths (cutting cycles never raises
a load) and ``X`` links between ``S`` and the complement, ``X <= d min(|S|, n - |S|)``, at
least one per gateway. At most ``d |S| - X`` arcs join two members, each of capacity ``c`` per
link. Let ``W`` be the bytes with both ends in ``S`` that leave ``S`` on the way. Then

* each byte of ``I_S`` not in ``W`` uses an arc inside ``S``; a byte between a non-gateway
  ``s`` and the complement uses one too (its first or last arc), and these bytes are
  distinct from the former: ``I_S - W + NG <= (d |S| - X) c`` where ``NG`` is the sum of
  ``q_s`` over the non-gateways;
* the out-crossing arcs carry ``O_S + W``, the in-crossing arcs ``I'_S + W``, so
  ``max(O_S, I'_S) + W <= X c``;
* every byte of ``W`` is forwarded by a node outside ``S``, within its spare capacity:
  ``W <= sum_{u not in S} sigma_u``.

For a fixed ``c`` the best choice is ``W`` as large as allowed and, for the gateways, the
members that must be one plus those with the largest ``q_s`` among the members that may be
one (at most ``X`` in all). ``T`` is feasible only if some integer ``X`` passes; feasibility
only improves with ``c`` (every threshold set shrinks), so the least passing ``c`` (by
bisection; the value returned still fails) gives ``T >= c / B``. Scope: that of the
neighbourhood MILPs used (``"any"`` or ``"totient"``); ``I_S`` holds in every ring order.
"""

from __future__ import annotations

import time

import numpy as np

from ...core.instance import Instance
from .counting import _check_scope, _ring_crossings
from .neighbourhood import _solve_node, node_problem


def _set_data(instance: Instance, S: np.ndarray, scope: str, mp: np.ndarray):
    """``(I_S, max(O_S, I'_S), q_s per member in S's order)`` in bytes."""
    inside = float(mp[np.ix_(S, S)].sum())
    for g in instance.allreduce:
        if g.edge_bytes > 0 and S[list(g.members)].all():
            inside += len(g.members) * g.edge_bytes
    out_b = float(mp[np.ix_(S, ~S)].sum()) + _ring_crossings(instance, S, scope)
    in_b = float(mp[np.ix_(~S, S)].sum()) + _ring_crossings(instance, ~S, scope)
    q = mp[np.ix_(S, ~S)].sum(axis=1) + mp[np.ix_(~S, S)].sum(axis=0)
    return inside, max(out_b, in_b), q


def _feasible(c, d, n, inside, cross, q, c_gw, c_ng, outside_load) -> bool:
    """Whether some integer ``X`` and gateway set meet the lemma's rows at capacity ``c``."""
    k = len(q)
    must = c < c_ng
    cannot = c < c_gw
    if (must & cannot).any():
        return False  # below some member's plain neighbourhood value
    sigma = float(np.maximum(0.0, d * c - outside_load).sum())
    free = np.sort(q[~must & ~cannot])[::-1]  # may be gateways: the largest first
    prefix = np.concatenate([[0.0], np.cumsum(free)])
    base_ng = float(q[cannot].sum()) + float(free.sum())
    n_must = int(must.sum())
    x_max = min(d * int((~cannot).sum()), d * min(k, n - k))
    for X in range(n_must, x_max + 1):
        if X * c < cross:
            continue
        chosen = min(len(free), X - n_must)  # gateways beyond the required ones
        ng = base_ng - prefix[chosen]
        w = min(inside, sigma, X * c - cross)
        if inside - w + ng <= (d * k - X) * c * (1 + 1e-12):
            return True
    return False


def gateway_bound(instance: Instance, scope: str = "any", time_limit: float = 30.0,
                  info: dict | None = None) -> float:
    """The best gateway bound over the AllReduce groups (members as ``S``) examined within
    ``time_limit`` seconds, heaviest ring first; seconds (0 when no group applies)."""
    _check_scope(scope)
    t0 = time.perf_counter()
    n, d, B = instance.n, instance.degree, instance.link_bytes_per_s
    out, inn = instance.node_out_in_bytes()
    load = np.maximum(out, inn)
    if instance.total_bytes() <= 0 or d < 1:
        return 0.0
    mp = instance.mp_matrix()
    order = sorted((gi for gi, g in enumerate(instance.allreduce)
                    if g.edge_bytes > 0 and len(g.members) < n),
                   key=lambda gi: -instance.allreduce[gi].edge_bytes)
    best, examined, cache = 0.0, 0, {}
    for gi in order:
        S = np.zeros(n, bool)
        S[list(instance.allreduce[gi].members)] = True
        members = np.flatnonzero(S)
        c_gw, c_ng = np.zeros(len(members)), np.zeros(len(members))
        for i, v in enumerate(members):
            left = time_limit - (time.perf_counter() - t0)
            if left <= 0:
                break
            key, V, groups = node_problem(instance, int(v), scope)
            g0 = groups.index(gi)
            for mode, arr in ((True, c_gw), (False, c_ng)):
                if (key, g0, mode) not in cache:
                    cache[key, g0, mode] = _solve_node(key, left, 0.0, (g0, mode)) * V
                arr[i] = cache[key, g0, mode]
        else:
            examined += 1
            inside, cross, q = _set_data(instance, S, scope, mp)
            args = (d, n, inside, cross, q, c_gw, c_ng, load[~S])
            # each member's own case split is the neighbourhood bound: valid on its own
            best = max(best, float(np.minimum(c_gw, c_ng).max()))
            lo = best
            if _feasible(lo, *args):
                continue
            hi = 2 * lo
            for _ in range(60):  # feasible once c exceeds every threshold and the rows
                if _feasible(hi, *args):
                    break
                lo, hi = hi, 2 * hi
            for _ in range(60):
                mid = 0.5 * (lo + hi)
                if _feasible(mid, *args):
                    hi = mid
                else:
                    lo = mid
                if hi - lo <= 1e-9 * hi:
                    break
            best = max(best, lo)
            continue
        break  # out of time inside a group: its partial thresholds are not used
    if info is not None:
        info.update(examined=examined, groups=len(order), seconds=time.perf_counter() - t0)
    return float(best / B)
