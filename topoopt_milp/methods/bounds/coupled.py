"""Coupled neighbourhood bound: the hot nodes' neighbourhood MILPs joined by the forwarding
capacity and the ports of the nodes they share (issue 16, item 2).

The neighbourhood bound of :mod:`.neighbourhood` solves one node at a time: each busy node
may pick the same few lightly loaded nodes as neighbours and spend all of their spare
capacity on forwarding its own bytes. On the co-optimized DLRM instance (n = 128, d = 4) the
eight embedding nodes all run at the ideal-switch load, so each needs its neighbours to
forward about three of its four links' worth of bytes in each direction, and every one of
them, alone, finds enough spare capacity: the bound stays at the ideal switch. Here the
MILPs of a *set* ``Hot`` of busy nodes are solved as one model in which a node ``u`` forwards,
for all of them together, no more than its spare capacity, and gives them no more than its
``d`` ports.

Notation (as in :mod:`.neighbourhood`): ``c = B T`` bytes per link and direction in time
``T``; ``out_u``, ``in_u`` the bytes node ``u`` sends and receives (ring edges included);
``b_vu`` the MP bytes ``v -> u``; ``e_g`` the ring edge bytes of group ``g``; ``sigma_u = d c -
max(out_u, in_u)``.

Validity (lemma). Take a solution (integer symmetric topology ``x`` with at most ``d`` ports a
node, fractional routing, any ring orders split freely) of time ``T``; cut cycles out of its
paths (no load rises), so every path is simple. For every ``v`` in ``Hot`` and ``u != v`` the
rows of the neighbourhood lemma hold with the same flows ``D_vu, G_vu`` (``v``'s bytes whose
first arc is ``v -> u``, destined to ``u`` or beyond), ``A_uv, H_uv`` (bytes for ``v`` whose
last arc is ``u -> v``, from ``u`` or from farther) and ring shares ``phi_gvu``, ``pi_gvu``
(the share of ``g``'s ring orders in which ``u`` follows, resp. precedes, ``v``):

* ``sum_u x_vu <= d``; ``D_vu + G_vu <= c x_vu``; ``A_uv + H_uv <= c x_vu``;
* ``sum_u D_vu + G_vu = out_v``; ``sum_u A_uv + H_uv = in_v``;
* ``D_vu <= b_vu + sum_g e_g phi_gvu``, ``A_uv <= b_uv + sum_g e_g pi_gvu``,
  ``sum_u phi_gvu = sum_u pi_gvu = 1``;
* ``G_vu + H_uv <= sigma_u`` (no byte is in both: it would go from ``v`` to ``v``).

Coupling rows, for every node ``u``: the bytes of ``G_vu`` over ``v`` in ``Hot`` are distinct
(different origins), each enters ``u`` and leaves it and is not ``u``'s own, so ``sum_v G_vu <=
sigma_u``; likewise ``sum_v H_uv <= sigma_u`` (different destinations). A byte can be in
``G_vu`` and in ``H_uw`` only when it goes ``v -> u -> w`` with ``v != w`` both in ``Hot``;
call the bytes counted twice at ``u`` ``Z_u``. Then ``Z_u <= sum_v G_vu``, ``Z_u <= sum_v H_uv``,
the distinct bytes ``u`` forwards are at least ``sum_v (G_vu + H_uv) - Z_u <= sigma_u``, and
since each byte has one path (split flows: its fractions) and a simple two-hop path has one
middle node, ``sum_u Z_u <= BHH``, the bytes from a node of ``Hot`` to another: MP ``b_vw``
plus, per member ``v`` of a group with another member in ``Hot``, at most ``e_g``. Ports: a
node ``u`` outside ``Hot`` has at most ``d`` links, so ``sum_{v in Hot} x_vu <= d``; between
two nodes of ``Hot`` the link count ``x_vw = x_wv`` is one variable, so both port rows see it.

Every solution of time ``T`` thus meets these rows at ``c = B T``. Divided by ``c`` they are
linear in ``lambda = 1 / c`` (capacities ``x_vu``, ``sigma_u = d - lambda max(out_u, in_u)``,
demands ``lambda b_vu``, ring shares summing to ``lambda``), so the MILP "maximise ``lambda``"
over integer ``x`` has an optimum ``>= 1 / (B T)``, and its dual bound after any time limit
(or the LP relaxation's optimum) is at least that. Hence ``T >= 1 / (lambda_ub B)``. Any set
``Hot`` gives a valid bound; with one node it is that node's neighbourhood MILP.

Scope: ``"any"``: ring shares are free distributions over the group's other members, with
``phi_gvu + pi_gvu <= 1`` in a group of ``k >= 3`` (no order has ``u`` both after and before
``v``), a relaxation of any split over any orders. ``"totient"``: one split ``tau_g`` over the
TotientPerms orders of each group (steps ``m`` with ``gcd(m, k) = 1``; in the order of step
``m`` member ``j`` sends ``e_g tau_gm`` to member ``(j + m) mod k``), *shared by every hot
member*: the split is the group's, not a node's, so ``phi_gvu = sum_{m: (j_v + m) mod k =
j_u} tau_gm`` and ``pi_gvu = sum_{m: (j_v - m) mod k = j_u} tau_gm``. No multiplicity cap is
assumed.

Consistency (``consistent=True``), for ``v`` and ``u`` both in ``Hot``: ``D_vu`` (``v``'s
bytes whose first arc ``v -> u`` ends at their destination ``u``) and ``u``'s ``A_vu`` (bytes
for ``u`` whose last arc is ``v -> u`` and which start at ``v``) are the same one-hop bytes, so
they are equal; and ``phi_gvu`` (the share of ``g``'s orders in which ``u`` follows ``v``)
equals ``u``'s ``pi_guv`` (the share in which ``v`` precedes ``u``): the same orders. In a
ring of ``k >= 3`` members ``u`` cannot both follow and precede ``v``, so ``phi_gvu +
phi_guv <= 1`` (in the model's units, ``<= lambda e_g``).

Relay ports (``ports=True``). For ``u`` outside ``Hot`` let ``p_u = sum_{v in Hot} x_vu``
(its links to hot nodes) and ``Q_u`` (``Q'_u``) the bytes on its arcs to (from) hot nodes that
the hot node forwards (bytes not for it, resp. not from it). Every byte ``u`` sends on an arc
``u -> w``, ``w`` hot, is for ``w`` (``A_uw`` if it starts at ``u``, ``H_uw`` if farther) or
is forwarded by ``w`` (``Q``), so ``sum_w A_uw + H_uw + Q_u <= c p_u``. ``u``'s arcs to nodes
outside ``Hot`` number ``d - p_u`` links at most and carry (i) ``u``'s own bytes that do not
leave on an arc to ``Hot``, at least ``out_u - sum_w A_uw - Q_u``, and (ii) the bytes ``G_vu``
that ``u`` forwards for hot ``v`` and does not hand to a hot node, at least ``sum_v G_vu - Z_u
- Q_u`` (a byte of ``G_vu`` on an arc ``u -> w`` is in ``H_uw``, hence in ``Z_u``, or in
``Q_u``); ``Q_u`` is subtracted once as the two parts are disjoint. So ``c p_u + sum_v G_vu -
Z_u - sum_w A_uw - Q_u + out_u <= d c``, and likewise in the other direction with ``H``,
``D`` and ``Q'``. Each ``Q`` byte is forwarded by a hot node: ``sum_u Q_u`` and ``sum_u Q'_u``
are at most ``sum_{w in Hot} sigma_w``. Two-hop bytes are split per source: ``z_vu`` (``v``'s
bytes through ``u`` to another hot node) is at most ``G_vu`` and at most ``sum_{w != v} H_uw``
(the byte's last arc ``u -> w`` goes to a hot node other than its source), ``Z_u = sum_v
z_vu``, and ``sum_u z_vu + sum_{w in Hot} D_vw <= BHH_v`` (``v``'s bytes for other hot nodes:
a path has one length, so one-hop and two-hop bytes are distinct).

Floor: the model restricted to one node's rows is that node's neighbourhood MILP of the same
scope, so its optimum is at least each hot node's neighbourhood value; those are solved first
(within 30% of the time) and bound ``lambda`` from above, so the result is never below them.

Size: ``|Hot| (n - 1)`` candidate pairs with five columns each, plus ring shares; the hot set
is the nodes whose ``max(out, in)`` is at least ``share`` of the busiest one's, busiest first,
at most ``max_hot`` of them.
"""

from __future__ import annotations

import math
import time
from math import gcd

import highspy
import numpy as np
from scipy.sparse import coo_matrix

from ...core.backends.pulp_backend import MatrixModel, highs_lp, new_highs
from ...core.instance import Instance
from .neighbourhood import _Rows, _solve_node, node_problem

INF = math.inf


def hot_nodes(instance: Instance, share: float = 0.9, max_hot: int = 16) -> list[int]:
    """The busiest nodes (``max(out, in)`` at least ``share`` of the largest), busiest first,
    at most ``max_hot``."""
    out, inn = instance.node_out_in_bytes()
    load = np.maximum(out, inn)
    if load.max() <= 0:
        return []
    order = [int(v) for v in np.argsort(-load, kind="stable")]
    return [v for v in order if load[v] >= share * load.max() and load[v] > 0][:max_hot]


def _kept_nodes(instance: Instance, hot: list[int], groups, mp: np.ndarray, d: int):
    """The hot nodes plus, of each class of interchangeable other nodes (same ``out``, ``in``,
    MP bytes with each hot node and position in each hot node's groups), at most ``d |Hot|``
    (the most distinct non-hot neighbours the hot nodes can have); the classes' kept nodes."""
    out, inn = instance.node_out_in_bytes()
    hset = set(hot)
    classes: dict[tuple, list[int]] = {}
    for u in range(instance.n):
        if u in hset:
            continue
        role = tuple((ms.index(u) - ms.index(v)) % len(ms) if u in ms else -1
                     for v in hot for _e, ms in groups if v in ms)
        key = (round(float(out[u]), 3), round(float(inn[u]), 3),
               tuple(round(float(mp[v, u]), 12) for v in hot),
               tuple(round(float(mp[u, v]), 12) for v in hot), role)
        cls = classes.setdefault(key, [])
        if len(cls) < d * len(hot):
            cls.append(u)
    kept = sorted(u for cls in classes.values() for u in cls)
    return list(hot) + kept, [cls for cls in classes.values() if len(cls) > 1]


def coupled_bound(instance: Instance, scope: str = "any", time_limit: float = 30.0,
                  hot: list[int] | None = None, share: float = 0.9, max_hot: int = 16,
                  info: dict | None = None, consistent: bool = True,
                  ports: bool = True) -> float:
    """``1 / (lambda_ub B)`` of the coupled MILP over ``hot`` (default :func:`hot_nodes`)
    within ``time_limit`` seconds (module docstring); seconds. ``scope`` ``"any"`` or
    ``"totient"`` (one ring split per group, shared by its hot members); ``ports`` adds the
    relay port rows."""
    if scope not in ("any", "totient"):
        raise ValueError(f"scope: unknown {scope!r} (known: any, totient)")
    t0 = time.perf_counter()
    n, d = instance.n, instance.degree
    out, inn = instance.node_out_in_bytes()
    load = np.maximum(out, inn)
    if instance.total_bytes() <= 0 or d < 1 or load.max() <= 0:
        return 0.0
    hot = hot_nodes(instance, share, max_hot) if hot is None else [int(v) for v in hot]
    if not hot:
        return 0.0
    V = float(load.max()) / d  # unit of bytes: the ideal-switch capacity
    mp = instance.mp_matrix() / V
    ld = load / V
    hset = set(hot)
    groups = [(g.edge_bytes / V, sorted(g.members)) for g in instance.allreduce
              if g.edge_bytes > 0]
    nodes, copies = _kept_nodes(instance, hot, groups, mp, d)
    # columns: lambda | x | per pair (v, u): D, G, A, H | shares | Z[u]
    col = 1
    xcol: dict[tuple[int, int], int] = {}
    for v in hot:
        for u in nodes:
            if u == v:
                continue
            key = (min(u, v), max(u, v)) if u in hset else (v, u)
            if key not in xcol:
                xcol[key] = col
                col += 1
    nx_end = col
    pair: dict[tuple[int, int], int] = {}
    for v in hot:
        for u in nodes:
            if u != v:
                pair[v, u] = col
                col += 4
    share_col: dict[tuple[int, int], tuple[int, list[int]]] = {}  # (v, g) -> start, members
    tau_col: dict[int, tuple[int, list[int]]] = {}  # totient: g -> start, steps (shared split)
    for v in hot:
        for gi, (_e, ms) in enumerate(groups):
            if v not in ms:
                continue
            if scope == "totient":
                if gi not in tau_col:
                    steps = [m for m in range(1, len(ms)) if gcd(m, len(ms)) == 1]
                    tau_col[gi] = (col, steps)
                    col += len(steps)
                continue
            others = [u for u in ms if u != v]
            share_col[v, gi] = (col, others)
            col += 2 * len(others)
    z0 = col
    col += n
    q0 = col  # ports: Q[u], Q'[u] (bytes a relay hands to a hot node to forward, out / in)
    col += 2 * n if ports else 0
    zcol = {}  # ports: z[v, u] (v's bytes for another hot node, two hops through u)
    if ports:
        for v in hot:
            for u in nodes:
                if u != v:
                    zcol[v, u] = col
                    col += 1
    nc = col
    rows = _Rows()

    def x_of(v: int, u: int) -> int:
        return xcol[(min(u, v), max(u, v))] if u in hset else xcol[v, u]

    bhh, bhh_v = 0.0, {}
    for v in hot:
        rows.add([x_of(v, u) for u in nodes if u != v], [1.0] * (len(nodes) - 1), -INF, d)
        bhh_v[v] = float(sum(mp[v, w] for w in hot if w != v))
        for e, ms in groups:
            if v in ms and any(w in hset and w != v for w in ms):
                bhh_v[v] += e
        bhh += bhh_v[v]
        succ_of: dict[int, tuple[list[int], list[int]]] = {}  # u -> succ, pred share columns
        for gi, (e, ms) in enumerate(groups):
            if gi in tau_col and v in ms:  # totient: u follows v in the orders of step m
                start, steps = tau_col[gi]
                j, k = ms.index(v), len(ms)
                for c, m in enumerate(steps):
                    succ_of.setdefault(ms[(j + m) % k], ([], []))[0].append(start + c)
                    succ_of.setdefault(ms[(j - m) % k], ([], []))[1].append(start + c)
                continue
            if (v, gi) not in share_col:
                continue
            start, others = share_col[v, gi]
            k = len(others)
            rows.add(list(range(start, start + k)) + [0], [1.0] * k + [-e], 0.0, 0.0)
            rows.add(list(range(start + k, start + 2 * k)) + [0], [1.0] * k + [-e], 0.0, 0.0)
            for j, u in enumerate(others):
                succ_of.setdefault(u, ([], []))[0].append(start + j)
                succ_of[u][1].append(start + k + j)
                if k >= 2:  # a ring of >= 3: u never both follows and precedes v
                    rows.add([start + j, start + k + j, 0], [1.0, 1.0, -e], -INF, 0.0)
        own_out, own_in = [], []
        for u in nodes:
            if u == v:
                continue
            D = pair[v, u]
            G, A, H, x = D + 1, D + 2, D + 3, x_of(v, u)
            rows.add([D, G, x], [1.0, 1.0, -1.0], -INF, 0.0)
            rows.add([A, H, x], [1.0, 1.0, -1.0], -INF, 0.0)
            rows.add([G, H, 0], [1.0, 1.0, float(ld[u])], -INF, float(d))
            su, pu = succ_of.get(u, ([], []))
            rows.add([D, 0] + su, [1.0, -float(mp[v, u])] + [-1.0] * len(su), -INF, 0.0)
            rows.add([A, 0] + pu, [1.0, -float(mp[u, v])] + [-1.0] * len(pu), -INF, 0.0)
            own_out += [D, G]
            own_in += [A, H]
        rows.add(own_out + [0], [1.0] * len(own_out) + [-float(out[v] / V)], 0.0, INF)
        rows.add(own_in + [0], [1.0] * len(own_in) + [-float(inn[v] / V)], 0.0, INF)
    for u in nodes:
        gs = [pair[v, u] + 1 for v in hot if v != u]
        hs = [pair[v, u] + 3 for v in hot if v != u]
        if not gs:
            continue
        lu, z = float(ld[u]), z0 + u
        rows.add(gs + [0], [1.0] * len(gs) + [lu], -INF, float(d))
        rows.add(hs + [0], [1.0] * len(hs) + [lu], -INF, float(d))
        rows.add(gs + hs + [z, 0], [1.0] * (2 * len(gs)) + [-1.0, lu], -INF, float(d))
        rows.add([z] + gs, [1.0] + [-1.0] * len(gs), -INF, 0.0)
        rows.add([z] + hs, [1.0] + [-1.0] * len(hs), -INF, 0.0)
        if u not in hset:
            xs = [xcol[v, u] for v in hot]
            rows.add(xs, [1.0] * len(hot), -INF, float(d))
            if ports:  # relay ports: u's links to Hot carry no more of u's traffic than this
                q, qi = q0 + 2 * u, q0 + 2 * u + 1
                a_s = [pair[v, u] + 2 for v in hot]  # A_uv
                d_s = [pair[v, u] for v in hot]  # D_vu
                k = len(hot)
                rows.add(xs + gs + [z] + a_s + [q, 0],
                         [1.0] * (2 * k) + [-1.0] + [-1.0] * k + [-1.0, float(out[u] / V)],
                         -INF, float(d))
                rows.add(xs + hs + [z] + d_s + [qi, 0],
                         [1.0] * (2 * k) + [-1.0] + [-1.0] * k + [-1.0, float(inn[u] / V)],
                         -INF, float(d))
                # Q rides on u's arcs to Hot beside the bytes for (A, H) / from (D, G) them
                h_s = [pair[v, u] + 3 for v in hot]
                g_s = [pair[v, u] + 1 for v in hot]
                rows.add([q] + a_s + h_s + xs, [1.0] * (1 + 2 * k) + [-1.0] * k, -INF, 0.0)
                rows.add([qi] + d_s + g_s + xs, [1.0] * (1 + 2 * k) + [-1.0] * k, -INF, 0.0)
    if ports:  # z[v, u]: within G_vu and what u hands on to *other* hot nodes (H_uw, w != v)
        for (v, u), zc in zcol.items():
            rows.add([zc, pair[v, u] + 1], [1.0, -1.0], -INF, 0.0)
            hw = [pair[w, u] + 3 for w in hot if w not in (v, u)]
            rows.add([zc] + hw, [1.0] + [-1.0] * len(hw), -INF, 0.0)
        for u in nodes:
            zs = [zcol[v, u] for v in hot if v != u]
            rows.add([z0 + u] + zs, [1.0] + [-1.0] * len(zs), -INF, 0.0)
        for v in hot:  # v's bytes for other hot nodes: one hop (D) or two (z), at most BHH_v
            zs = [zcol[v, u] for u in nodes if u != v]
            ds = [pair[v, w] for w in hot if w != v]
            rows.add(zs + ds + [0], [1.0] * (len(zs) + len(ds)) + [-bhh_v[v]], -INF, 0.0)
    if ports:  # what the hot nodes forward for their relays: within their spare capacity
        spare = float(sum(ld[v] for v in hot))
        for off in (0, 1):
            qs = [q0 + 2 * u + off for u in nodes if u not in hset]
            rows.add(qs + [0], [1.0] * len(qs) + [spare], -INF, float(d * len(hot)))
    # two-hop bytes between hot nodes (Z) and one-hop ones (D between two hot nodes) are
    # distinct bytes of BHH: a path has one length
    one_hop = [pair[v, w] for v in hot for w in hot if w != v] if ports else []
    for cls in copies:  # interchangeable relays: the busiest first (no loss: permute them)
        for a, b in zip(cls, cls[1:]):
            xa, xb = [xcol[v, a] for v in hot], [xcol[v, b] for v in hot]
            rows.add(xb + xa, [1.0] * len(hot) + [-1.0] * len(hot), -INF, 0.0)
    rows.add(list(range(z0, z0 + n)) + one_hop + [0], [1.0] * (n + len(one_hop)) + [-bhh],
             -INF, 0.0)
    for gi, (start, steps) in tau_col.items():  # one split of the group's bytes: sum e_g lambda
        rows.add(list(range(start, start + len(steps))) + [0],
                 [1.0] * len(steps) + [-groups[gi][0]], 0.0, 0.0)
    if consistent:  # one byte set, one ring share, seen from both ends of a hot pair
        for v in hot:
            for u in hot:
                if u != v:
                    rows.add([pair[v, u], pair[u, v] + 2], [1.0, -1.0], 0.0, 0.0)
                    for gi in range(len(groups)):
                        if (v, gi) in share_col and (u, gi) in share_col:
                            sv, ov = share_col[v, gi]
                            su, ou = share_col[u, gi]
                            rows.add([sv + ov.index(u), su + len(ou) + ou.index(v)],
                                     [1.0, -1.0], 0.0, 0.0)
                            if v < u and len(ov) >= 2:  # no 2-cycle in a ring of >= 3
                                rows.add([sv + ov.index(u), su + ou.index(v), 0],
                                         [1.0, 1.0, -groups[gi][0]], -INF, 0.0)
    col_up = np.full(nc, INF)
    col_up[1:nx_end] = float(d)
    integer = np.zeros(nc, bool)
    integer[1:nx_end] = True
    # floor: each hot node's own neighbourhood MILP of the scope, a relaxation of this model
    c_lo = max(out.max(), inn.max()) / V / d  # the ideal switch (= 1 in units of V)
    solved: dict[tuple, float] = {}
    for v in hot:
        left = 0.3 * time_limit - (time.perf_counter() - t0)
        if left <= 0:
            break
        key = node_problem(instance, v, scope)[0]
        if key not in solved:
            solved[key] = _solve_node(key, left)
        c_lo = max(c_lo, solved[key])
    col_up[0] = 1.0 / c_lo
    cost = np.zeros(nc)
    cost[0] = 1.0
    A_ = coo_matrix((rows.v, (rows.r, rows.c)), shape=(len(rows.lo), nc)).tocsc()
    model = MatrixModel(A_, cost, np.zeros(nc), col_up, np.array(rows.lo), np.array(rows.up),
                        integer, [], maximize=True)
    h = new_highs()
    h.setOptionValue("output_flag", False)
    h.setOptionValue("mip_rel_gap", 1e-6)
    left = time_limit - (time.perf_counter() - t0)
    h.setOptionValue("time_limit", max(float(left), 0.05))
    h.passModel(highs_lp(model))
    h.run()
    status = h.getModelStatus()
    if status not in (highspy.HighsModelStatus.kOptimal, highspy.HighsModelStatus.kTimeLimit,
                      highspy.HighsModelStatus.kInterrupt):
        raise RuntimeError(f"coupled neighbourhood MILP: {h.modelStatusToString(status)}")
    lam_ub = float(h.getInfo().mip_dual_bound)
    c = c_lo if not math.isfinite(lam_ub) or lam_ub <= 0 else max(c_lo, 1.0 / min(lam_ub,
                                                                                   col_up[0]))
    if info is not None:
        info.update(hot=len(hot), status=h.modelStatusToString(status),
                    seconds=time.perf_counter() - t0, columns=nc, rows=len(rows.lo))
    return float(c * V / instance.link_bytes_per_s)
