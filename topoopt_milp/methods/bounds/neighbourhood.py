"""Neighbourhood bound: one node, its ``d`` (unknown, integer) links, and what its neighbours
can forward (issue 16, item 2).

The bounds of :mod:`.counting` look at a node's traffic or at a cut, never at *which* nodes
are its neighbours; on the co-optimized instances they all equal the ideal switch. This bound
fixes one node ``v``, lets a small MILP choose its ``d`` links, and asks whether ``v``'s own
traffic fits through them given how much each neighbour can forward.

Notation: ``c = B T`` bytes per link and direction in time ``T``; ``out_u``, ``in_u`` the bytes
node ``u`` sends and receives (:meth:`~topoopt_milp.core.instance.Instance.node_out_in_bytes`,
ring edges included: every ring order gives a member the same volume); ``b_vu`` the MP bytes
``v -> u``; ``e_g`` the ring edge bytes of group ``g``.

Validity (lemma). Let a solution (topology ``x``, integer, symmetric, at most ``d`` ports per
node; fractional routing; rings in the scope's ring space) have time ``T``. Cycles can be cut
out of every path without raising a load, so take its paths simple. Fix ``v``. Classify each
byte on an arc by its origin and destination:

* own out: a byte of ``v`` on its first arc ``v -> u`` is destined to ``u`` (``D_vu``) or
  beyond (``G_vu``); all of ``out_v`` is one or the other, and ``D_vu + G_vu <= c x_vu``;
* own in: a byte for ``v`` on its last arc ``u -> v`` comes from ``u`` (``A_uv``) or from
  farther (``H_uv``); ``sum_u A_uv + H_uv = in_v`` and ``A_uv + H_uv <= c x_vu``;
* ``D_vu <= b_vu + sum_g e_g phi_gu``, where ``phi_gu`` is the share of group ``g``'s ring
  orders in which ``u`` follows ``v`` (``sum_u phi_gu = 1``); ``A_uv <= b_uv + sum_g e_g
  pi_gu`` with ``pi_gu`` the share in which ``u`` precedes ``v``;
* forwarding: the bytes ``G_vu`` enter ``u`` and leave it, and so do the bytes ``H_uv``; none
  of them is ``u``'s own, and no byte is in both (it would go from ``v`` to ``v``). ``u``'s
  out-arcs carry ``out_u`` plus every byte ``u`` forwards, within ``c`` times its at most
  ``d`` ports, and likewise its in-arcs, so ``G_vu + H_uv <= sigma_u := d c - max(out_u,
  in_u)``.

Every solution of time ``T`` thus gives integers ``x_v. >= 0`` with ``sum_u x_vu <= d`` and
flows meeting these rows at ``c = B T``. Dividing every flow by ``c`` turns the rows linear in
``lambda = 1 / c`` (the capacity ``c x_vu`` becomes ``x_vu``, ``sigma_u`` becomes ``d - lambda
max(out_u, in_u)``, the demands ``lambda b_vu``, the ring shares ``lambda e_g phi_gu`` with
``sum_u lambda phi_gu = lambda``), so the MILP "maximise ``lambda``" over integer ``x_v.``
has an optimum ``lambda_v >= 1 / (B T)``; its dual bound after any time limit is at least
``lambda_v``. Hence ``T >= c_v / B`` with ``c_v = 1 / lambda_v`` for every ``v``, and the
bound is ``max_v c_v / B`` over the nodes examined (any subset of nodes gives a valid bound).

Ring scope. ``"any"``: ``phi_g`` and ``pi_g`` are any distributions over the other members
with ``phi_gu + pi_gu <= 1`` when the group has ``k >= 3`` members (in every order the
successor and the predecessor of ``v`` are two different members, so the orders in which
``u`` follows ``v`` and those in which it precedes ``v`` are disjoint; a relaxation of any
split over any orders). ``"totient"``: they come from one split ``tau_g``
over the TotientPerms orders of :func:`~topoopt_milp.core.circulant.totient_orders` (the
successor of ``v`` in the order of step ``m`` is ``member[(j + m) mod k]``, its predecessor
``member[(j - m) mod k]``), shared by the successor and predecessor rows, so the ``"totient"``
value is at least the ``"any"`` one. No multiplicity cap is assumed, so both cover capped
instances too.

Reductions (exact, no loss): nodes ``u`` with the same ``(b_vu, b_uv, max(out_u, in_u),
ring roles)`` are interchangeable in ``v``'s MILP and at most ``d`` of them can be neighbours,
so ``d`` copies of each class are kept; nodes whose MILPs are identical (same classes and
own volumes; the coset symmetry of the co-optimized traffic) are solved once. Nodes are
examined from the busiest down until the time budget runs out.
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

SCOPES = ("any", "totient")
INF = math.inf


def _ring_roles(instance: Instance, v: int, scope: str):
    """For each group of ``v`` (positive edge bytes): ``(e_g, roles)`` with ``roles[u] =
    (successor orders, predecessor orders)`` as tuples of order indices (``"totient"``) or
    ``((0,), (0,))`` for every other member (``"any"``, whose order count is given as 0: the
    shares are then free distributions)."""
    out = []
    for gi, g in enumerate(instance.allreduce):
        if g.edge_bytes <= 0 or v not in g.members:
            continue
        ms = sorted(g.members)
        k, j = len(ms), sorted(g.members).index(v)
        roles: dict[int, tuple[list[int], list[int]]] = {}
        if scope == "any":
            for u in ms:
                if u != v:
                    roles[u] = ([0], [0])
            norders = 1
        else:
            steps = [m for m in range(1, k) if gcd(m, k) == 1]
            for c, m in enumerate(steps):
                roles.setdefault(ms[(j + m) % k], ([], []))[0].append(c)
                roles.setdefault(ms[(j - m) % k], ([], []))[1].append(c)
            norders = len(steps)
        # "any": 0 orders (free shares), -1 when k >= 3 (and then no 2-cycle: below)
        out.append((g.edge_bytes, norders if scope == "totient" else (-1 if k >= 3 else 0),
                    {u: (tuple(a), tuple(b), True) for u, (a, b) in roles.items()}
                    | {u: ((), (), True) for u in ms if u != v and u not in roles}, gi))
    return out


class _Rows:
    def __init__(self):
        self.r, self.c, self.v, self.lo, self.up = [], [], [], [], []

    def add(self, idx, val, lo, up):
        k = len(self.lo)
        self.r.extend([k] * len(idx))
        self.c.extend(idx)
        self.v.extend(val)
        self.lo.append(lo)
        self.up.append(up)


def node_problem(instance: Instance, v: int, scope: str = "any"):
    """``v``'s MILP data in units of ``V`` (the ideal-switch capacity): a hashable key (equal
    keys, equal MILPs) and the arguments of :func:`_solve_node`."""
    n, d = instance.n, instance.degree
    mp = instance.mp_matrix()
    out, inn = instance.node_out_in_bytes()
    load = np.maximum(out, inn)
    V = float(load.max()) / d
    rings = _ring_roles(instance, v, scope)
    classes: dict[tuple, int] = {}
    for u in range(n):
        if u == v:
            continue
        role = tuple(r[2].get(u, ((), (), False)) for r in rings)
        key = (round(mp[v, u] / V, 12), round(mp[u, v] / V, 12), round(load[u] / V, 12), role)
        classes[key] = min(d, classes.get(key, 0) + 1)
    cand = tuple(sorted(classes.items(), key=repr))
    ring_data = tuple((round(e / V, 12), no) for e, no, _, _ in rings)
    key = (d, round(out[v] / V, 12), round(inn[v] / V, 12), ring_data, cand)
    return key, V, tuple(gi for *_, gi in rings)


def _solve_node(key, time_limit: float | None, c_min: float = 0.0,
                gateway: tuple[int, bool] | None = None) -> float:
    """Least ``c >= c_min`` (units of ``V``) of one node's MILP (module docstring), as
    ``1 / lambda`` of its throughput form; from the dual bound on ``lambda`` when the time
    limit stops it. ``gateway = (g, True)`` adds the row "at least one link to a node outside
    the node's ``g``-th group", ``(g, False)`` "no such link" (:mod:`.gateway`)."""
    d, out_v, in_v, ring_data, cand = key
    J = [k for k, cnt in cand for _ in range(cnt)]
    nj = len(J)
    # columns: lambda | x[j] | D,G,A,H[j] | ring shares (all scaled by lambda = 1 / c)
    x0, f0 = 1, 1 + nj
    share_cols = []  # per group: ("free", S[j] start, P[j] start) or ("tau", start, orders)
    col = f0 + 4 * nj
    for _e, norders in ring_data:
        if norders <= 0:  # "any": free successor and predecessor distributions
            share_cols.append(("free", col, col + nj))
            col += 2 * nj
        else:
            share_cols.append(("tau", col, norders))
            col += norders
    nc = col
    rows = _Rows()
    rows.add(list(range(x0, x0 + nj)), [1.0] * nj, -INF, d)
    for j, (bo, bi, load_u, role) in enumerate(J):
        D, G, A, H = f0 + 4 * j, f0 + 4 * j + 1, f0 + 4 * j + 2, f0 + 4 * j + 3
        rows.add([D, G, x0 + j], [1.0, 1.0, -1.0], -INF, 0.0)
        rows.add([A, H, x0 + j], [1.0, 1.0, -1.0], -INF, 0.0)
        rows.add([G, H, 0], [1.0, 1.0, load_u], -INF, float(d))
        di, dv, ai, av = [D, 0], [1.0, -bo], [A, 0], [1.0, -bi]
        for g, (e, _no) in enumerate(ring_data):
            kind, a, b = share_cols[g]
            succ, pred = role[g][:2]
            if kind == "free":
                if succ:
                    di.append(a + j)
                    dv.append(-1.0)
                if pred:
                    ai.append(b + j)
                    av.append(-1.0)
            else:
                di += [a + c for c in succ]
                dv += [-e] * len(succ)
                ai += [a + c for c in pred]
                av += [-e] * len(pred)
        rows.add(di, dv, -INF, 0.0)
        rows.add(ai, av, -INF, 0.0)
    col_up = np.full(nc, INF)
    for g, (e, _no) in enumerate(ring_data):
        kind, a, b = share_cols[g]
        if kind == "free":
            rows.add(list(range(a, a + nj)) + [0], [1.0] * nj + [-e], -INF, 0.0)
            rows.add(list(range(b, b + nj)) + [0], [1.0] * nj + [-e], -INF, 0.0)
            for j, k in enumerate(J):
                succ, pred = k[3][g][:2]
                col_up[a + j] = INF if succ else 0.0
                col_up[b + j] = INF if pred else 0.0
                if _no < 0 and succ and pred:  # k >= 3: u never both follows and precedes
                    rows.add([a + j, b + j, 0], [1.0, 1.0, -e], -INF, 0.0)
        else:
            rows.add(list(range(a, a + b)) + [0], [1.0] * b + [-1.0], 0.0, 0.0)
    own_out = [f0 + 4 * j for j in range(nj)] + [f0 + 4 * j + 1 for j in range(nj)]
    own_in = [f0 + 4 * j + 2 for j in range(nj)] + [f0 + 4 * j + 3 for j in range(nj)]
    rows.add(own_out + [0], [1.0] * len(own_out) + [-out_v], 0.0, INF)
    rows.add(own_in + [0], [1.0] * len(own_in) + [-in_v], 0.0, INF)
    integer = np.zeros(nc, bool)
    integer[x0:f0] = True
    col_up[x0:f0] = float(d)
    if gateway is not None:
        g0, leaves = gateway
        out_j = [x0 + j for j, k in enumerate(J) if not k[3][g0][2]]
        if leaves:
            rows.add(out_j, [1.0] * len(out_j), 1.0, INF)
        else:
            col_up[out_j] = 0.0
    # c >= the ideal switch of v and of every candidate, and >= c_min
    c_lo = max(c_min, max(out_v, in_v, max((k[2] for k in J), default=0.0)) / d)
    if c_lo <= 0:
        return 0.0
    col_up[0] = 1.0 / c_lo
    cost = np.zeros(nc)
    cost[0] = 1.0
    A_ = coo_matrix((rows.v, (rows.r, rows.c)), shape=(len(rows.lo), nc)).tocsc()
    model = MatrixModel(A_, cost, np.zeros(nc), col_up, np.array(rows.lo), np.array(rows.up),
                        integer, [], maximize=True)
    h = new_highs()
    h.setOptionValue("output_flag", False)
    h.setOptionValue("mip_rel_gap", 1e-6)
    if time_limit is not None:
        h.setOptionValue("time_limit", max(float(time_limit), 0.05))
    h.passModel(highs_lp(model))
    h.run()
    status = h.getModelStatus()
    if status not in (highspy.HighsModelStatus.kOptimal, highspy.HighsModelStatus.kTimeLimit,
                      highspy.HighsModelStatus.kInterrupt):
        raise RuntimeError(f"neighbourhood MILP: {h.modelStatusToString(status)}")
    # the dual bound on lambda (an upper bound: maximisation) gives c >= 1 / lambda_ub
    lam_ub = float(h.getInfo().mip_dual_bound)
    if not math.isfinite(lam_ub) or lam_ub <= 0:  # no dual bound yet: the floor is valid
        return c_lo
    return max(c_lo, 1.0 / min(lam_ub, col_up[0]))


def _pass(instance: Instance, scope: str, nodes, budget: float,
          floor: dict[int, float]) -> dict[int, float]:
    """Least ``c`` (units of ``V``) of each node of ``nodes`` in turn until ``budget`` seconds
    are spent; ``floor[v]`` is a known lower bound on it (the ``"any"`` value)."""
    t0 = time.perf_counter()
    solved: dict[tuple, float] = {}
    values: dict[int, float] = {}
    for v in nodes:
        left = budget - (time.perf_counter() - t0)
        if left <= 0:
            break
        key, _V, _groups = node_problem(instance, int(v), scope)
        lo = floor.get(int(v), 0.0)
        if (key, lo) not in solved:
            solved[key, lo] = max(lo, _solve_node(key, left, lo))
        values[int(v)] = solved[key, lo]
    return values


def neighbourhood_bound(instance: Instance, scope: str = "any", time_limit: float = 30.0,
                        info: dict | None = None) -> float:
    """``max_v c_v / B`` over the nodes examined within ``time_limit`` seconds (module
    docstring); seconds. The ``"any"`` MILPs run first, busiest node first; for ``"totient"``
    they get half the budget, and the ``"totient"`` MILPs then run from the node with the
    highest ``"any"`` value down, each started from that value (a valid floor: the
    ``"any"`` MILP relaxes the ``"totient"`` one). ``info`` (if given)
    receives the nodes examined per scope and the node that attains the bound."""
    if scope not in SCOPES:
        raise ValueError(f"scope: unknown {scope!r} (known: {', '.join(SCOPES)})")
    t0 = time.perf_counter()
    out, inn = instance.node_out_in_bytes()
    load = np.maximum(out, inn)
    if instance.total_bytes() <= 0 or instance.degree < 1:
        return 0.0
    V = float(load.max()) / instance.degree
    busy = [int(v) for v in np.argsort(-load, kind="stable") if load[v] > 0]
    values = _pass(instance, "any", busy, time_limit * (0.5 if scope == "totient" else 1.0), {})
    examined = {"any": len(values)}
    if scope == "totient":
        nodes = sorted(values, key=lambda v: (-values[v], -load[v]))
        left = time_limit - (time.perf_counter() - t0)
        tot = _pass(instance, "totient", nodes, left, values)
        examined["totient"] = len(tot)
        values.update(tot)
    arg = max(values, key=values.get) if values else -1
    best = values[arg] * V if values else 0.0
    if info is not None:
        info.update(examined=examined, node=arg, seconds=time.perf_counter() - t0)
    return float(best / instance.link_bytes_per_s)
