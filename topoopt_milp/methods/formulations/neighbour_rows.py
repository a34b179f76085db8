"""Neighbourhood counting rows for alloc-milp: a node's ``d`` neighbours must forward its
traffic to everyone else, on top of their own.

Setting (alloc-milp's throughput form, :mod:`.alloc`): links ``x_ij`` (one link = capacity 1
volume unit per time unit), demand multiplier ``lambda``, demand ``D_st(lambda, tau)`` linear
in ``lambda`` and the ring shares ``tau``. Every node ``v`` sends ``o_v lambda`` and receives
``i_v lambda`` whatever the ring split: an AllReduce order is a cycle over the group, so each
member has exactly one successor and one predecessor per order, and the shares sum to 1
(``o_v = MP_out_v + sum_{g ni v} e_g``, likewise ``i_v``; with fixed rings, the row and column
sums of the fixed demand).

Claim (out-direction; the in-direction is its mirror image). Let ``N(s)`` be the neighbours of
``s`` (``y_sv = 1`` iff ``x_sv >= 1``) and ``z_st`` the part of commodity ``s -> t`` routed on
the direct arc ``(s, t)``. For every feasible routing at multiplier ``lambda``::

    sum_{v in N(s)} (d - o_v lambda)  >=  o_s lambda - sum_t z_st                        (N)

*Proof.* A byte of ``s`` not sent on its direct arc travels ``s -> v -> ... -> t`` with
``v in N(s)``, ``v != t``, so it leaves ``v`` on one of ``v``'s out-arcs. Those arcs also
carry ``v``'s own traffic ``o_v lambda`` (a different flow). Hence the out-arcs of ``N(s)``
carry at least ``sum_{v in N(s)} o_v lambda + (o_s lambda - sum_t z_st)``, and their capacity
is ``sum_{v in N(s)} sum_w x_vw <= d |N(s)|``. QED. Symmetrically, bytes for ``t`` not on a
direct arc reach ``t`` from some ``u in N(t)`` and entered ``u`` on an in-arc of ``u``::

    sum_{u in N(t)} (d - i_u lambda)  >=  i_t lambda - sum_s z_st                        (N')

Linear form. With binaries ``y_ij`` (``y <= x <= cap y``), ``w_ij = lambda y_ij`` (McCormick:
``w <= y``, ``w <= lambda``, ``w >= lambda + y - 1``, exact at integer ``y``) and
``0 <= z_st <= min(D_st(lambda, tau), x_st, Dmax_st y_st)`` (``Dmax_st`` the largest demand
``s -> t`` can have: its MP bytes plus every ring volume whose candidate orders contain the
edge, ``lambda, tau <= 1``), (N) reads ``sum_v (d y_sv - o_v w_sv) + sum_t z_st >= o_s lambda``.
Every integer solution of alloc-milp extends to these variables (take ``z`` the true direct
flows), so the rows cut off no solution and the optimum is unchanged; in the LP relaxation
they are what makes a fractional ``x`` spread over all pairs pay for its missing direct
links (``z_st <= Dmax_st y_st`` and ``sum_v y_sv`` counted with ``d`` each).
"""

from __future__ import annotations

from itertools import combinations, permutations

import numpy as np
import pulp

from ...core.circulant import totient_orders
from ...core.instance import Instance
from .. import model_data as _exact


def add_neighbour_rows(prob, n: int, d: int, cap: int, x, lam, demand, o_out: np.ndarray,
                       o_in: np.ndarray, dmax: np.ndarray) -> int:
    """Add the rows (N) and (N') of the module docstring to ``prob``; ``x[i, j]`` are the
    link variables, ``demand[s][t]`` the demand expressions (volume units), ``o_out`` /
    ``o_in`` the per-node coefficients of ``lambda``, ``dmax`` the largest demand per pair.
    Returns the number of rows added."""
    y, w, z = {}, {}, {}
    rows = 0
    for i, j in combinations(range(n), 2):
        y[i, j] = y[j, i] = prob.add_variable(f"ny_{i}_{j}", 0, 1, cat=pulp.LpBinary)
        prob += x[i, j] <= cap * y[i, j], f"ny_up_{i}_{j}"
        prob += y[i, j] <= x[i, j], f"ny_lo_{i}_{j}"
        w[i, j] = w[j, i] = prob.add_variable(f"nw_{i}_{j}", 0, 1)
        prob += w[i, j] <= y[i, j], f"nw_y_{i}_{j}"
        prob += w[i, j] <= lam, f"nw_l_{i}_{j}"
        prob += w[i, j] >= lam + y[i, j] - 1, f"nw_m_{i}_{j}"
        rows += 5
    for s, t in permutations(range(n), 2):
        if dmax[s, t] <= 0:
            continue
        z[s, t] = prob.add_variable(f"nz_{s}_{t}", 0)
        prob += z[s, t] <= demand.get(s, {}).get(t, 0), f"nz_d_{s}_{t}"
        prob += z[s, t] <= x[s, t], f"nz_x_{s}_{t}"
        prob += z[s, t] <= float(dmax[s, t]) * y[s, t], f"nz_y_{s}_{t}"
        rows += 3
    for s in range(n):
        others = [v for v in range(n) if v != s]
        if o_out[s] > 0:
            prob += (pulp.lpSum(d * y[s, v] - float(o_out[v]) * w[s, v] for v in others)
                     + pulp.lpSum(z[s, t] for t in others if (s, t) in z)
                     >= float(o_out[s]) * lam), f"nbr_out_{s}"
            rows += 1
        if o_in[s] > 0:
            prob += (pulp.lpSum(d * y[s, u] - float(o_in[u]) * w[s, u] for u in others)
                     + pulp.lpSum(z[u, s] for u in others if (u, s) in z)
                     >= float(o_in[s]) * lam), f"nbr_in_{s}"
            rows += 1
    return rows


def rows_for_model(prob, instance: Instance, cap: int, x, lam, demand, D, V) -> int:
    """The rows with alloc-milp's coefficients: per node the traffic it sends and receives
    per unit of ``lambda`` and the largest demand per pair (fixed rings: ``D``, the fixed
    demand in bytes; ``D = None`` for ``rings = choose``: MP plus, per group, its edge volume
    on every pair that is an edge of one of its candidate orders); volumes in units ``V``."""
    if D is not None:
        base = D / V
        o_out, o_in, dmax = base.sum(axis=1), base.sum(axis=0), base
    else:
        mp = _exact.demand_matrix(instance, []) / V
        o_out, o_in, dmax = mp.sum(axis=1), mp.sum(axis=0), mp.copy()
        for grp in instance.allreduce:
            if grp.edge_bytes <= 0:
                continue
            e = grp.edge_bytes / V
            edges = {(o[i], o[(i + 1) % len(o)]) for o in totient_orders(grp.members)
                     for i in range(len(o))}
            for a, b in edges:
                dmax[a, b] += e
            for v in grp.members:  # one successor and one predecessor per order; shares sum to 1
                o_out[v] += e
                o_in[v] += e
    return add_neighbour_rows(prob, instance.n, instance.degree, cap, x, lam, demand, o_out,
                              o_in, dmax)
