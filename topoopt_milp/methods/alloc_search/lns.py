"""Large-neighbourhood moves of alloc-search: free the links among a set of hot nodes and
their neighbours, re-solve that sub-problem exactly as a MILP, keep every other link.

Neighbourhood. ``S`` = hot nodes and their neighbours in the current topology ``L``, at
most ``size`` nodes. A node's heat is the sum of the route LP's capacity prices ``pi`` of its
arcs, in and out (``sum_a pi_a L_a = 1``: the arcs that hold the communication time up;
without duals, the arcs' utilisation). The hottest nodes not used as a seed in the last
rounds (``tabu``) are taken in order, each with its neighbours, until ``S`` is full.

Sub-problem. Every pair ``(i, j)`` with both ends in ``S`` gets an integer ``x_ij in
{0, .., cap}``; every other pair keeps ``L_ij``. Node ``i`` in ``S`` keeps its links to
nodes outside ``S``, so its free ports are ``d - sum_{j not in S} L_ij``::

    max lambda
    s.t. sum_{a into v} f[s, a] - sum_{a out of v} f[s, a]
             - sum_{g, c: (s -> v) an edge of c} e_g tau_c = lambda D_mp[s, v]    all s, v != s
         sum_s f[s, a] <= L_a      arcs a with an end outside S
         sum_s f[s, a] <= x_ij     arcs a = (i, j), (j, i) with i, j in S
         sum_{j in S} x_ij = d - sum_{j not in S} L_ij                      all i in S
         sum_{c in C_g} tau_c = lambda,  f, tau >= 0,  x integer

This is the route LP with free ring shares of :mod:`..formulations.ring_lp` in throughput
form (``lambda = 1 / U``, ``f <- f / U``, ``tau_c = lambda sigma_c``, exact because the ring
edges and the MP demand scale together), with the capacities of the pairs inside ``S`` as
integer variables: alloc-milp's model (:mod:`..formulations.alloc`) restricted to the
topologies that agree with ``L`` outside ``S``, on the arcs of the complete graph on ``S``
plus ``L``'s arcs (a path through a pair with no link carries nothing). The matrix is
ring_lp's, transformed column by column (:func:`sub_model`), so the two cannot drift apart.
``L`` itself is feasible (it is handed to HiGHS as a partial MIP start), so the sub-MILP's
incumbent is never worse than ``L`` with the same ring candidates.

Acceptance. The MILP only proposes: its links are re-routed by the search's own evaluation
(:func:`.reroute.reroute`, checked by the independent checker) and accepted on that exact
objective (:mod:`.search`).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from scipy.sparse import coo_matrix, hstack, vstack

from ...core.backends.pulp_backend import MatrixModel, solve_model
from ...core.instance import Instance
from ...core.params import SolveOptions
from ...core.topology import Topology
from ..formulations import ring_lp

INF = float("inf")


@dataclass(frozen=True)
class SubResult:
    """A sub-MILP's outcome: the proposed ``links`` (``None``: no incumbent), its model time
    ``objective_s`` (seconds, from ``lambda``), the MILP's ``status``, wall time, and ``S``."""

    links: np.ndarray | None
    objective_s: float | None
    status: str
    runtime_s: float
    nodes: tuple[int, ...]


def node_heat(links: np.ndarray, loads: np.ndarray, prices: np.ndarray | None) -> np.ndarray:
    """Per node, the sum of its arcs' capacity prices (in and out), or of their utilisation
    ``load / L`` relative to the hottest arc without prices (module docstring)."""
    if prices is not None:
        w = np.where(links > 0, prices, 0.0)
    else:
        util = np.where(links > 0, loads / np.maximum(links, 1), 0.0)
        w = util / max(float(util.max()), 1e-300)
    return w.sum(axis=0) + w.sum(axis=1)


def hot_set(links: np.ndarray, heat: np.ndarray, size: int, tabu: Sequence[int] = ()
            ) -> tuple[list[int], int | None]:
    """``(S, seed)``: the hottest nodes outside ``tabu`` in order, each with its neighbours,
    until ``S`` holds ``size`` nodes (the last group cut by heat); ``seed`` is the first."""
    order = [int(v) for v in np.argsort(-heat, kind="stable") if int(v) not in set(tabu)]
    S: list[int] = []
    seed = order[0] if order else None
    for v in order:
        if len(S) >= size:
            break
        group = [v, *(int(u) for u in np.flatnonzero(links[v] > 0))]
        group = sorted((u for u in group if u not in S), key=lambda u: -heat[u])
        S.extend(group[: size - len(S)])
    return sorted(S), seed


def sub_model(instance: Instance, links: np.ndarray, S: Sequence[int],
              cands: Mapping[int, Sequence[tuple[int, ...]]], cap: int):
    """The sub-MILP of the module docstring as an array model: ``(model, layout)``, with
    ``layout["pairs"]`` the free pairs (column ``x{k}``) and ``layout["P"]`` the route
    problem (its ``sec_per_unit`` converts ``1 / lambda`` to seconds)."""
    n, d = instance.n, instance.degree
    S = sorted(int(v) for v in S)
    inS = np.zeros(n, dtype=bool)
    inS[S] = True
    aug = np.array(links, dtype=np.int64, copy=True)
    pairs = [(i, j) for a, i in enumerate(S) for j in S[a + 1:]]
    for i, j in pairs:  # every pair inside S gets its arcs (capacity from x)
        aug[i, j] = aug[j, i] = max(int(aug[i, j]), 1)
    base, lay = ring_lp.build(instance, Topology(aug), cands, 0.0)
    P, nf = lay["P"], lay["nf"]
    K = len(lay["sources"])
    ncons, narc = K * n, len(P.arcs)
    nsig, ngrp = len(lay["sigma"]), base.A.shape[0] - ncons - narc
    A = base.A.tocsc()
    R, C = A.shape
    if nf + 1 + nsig != C or len(P.res_arcs) != narc:
        raise RuntimeError("lns: ring_lp.build's layout changed (flows, U, sigma columns)")
    row_lo, row_up = base.row_lower.copy(), base.row_upper.copy()
    # lambda: -D_mp on the conservation rows (their right-hand side moves left), -1 on the
    # share rows (sum tau = lambda)
    dm = np.where(np.isfinite(row_lo[:ncons]), row_lo[:ncons], 0.0)
    lam_rows = np.concatenate([np.flatnonzero(dm), ncons + narc + np.arange(ngrp)])
    lam_vals = np.concatenate([-dm[dm != 0], -np.ones(ngrp)])
    lam_col = coo_matrix((lam_vals, (lam_rows, np.zeros(len(lam_rows), dtype=int))),
                         shape=(R, 1))
    fin = np.isfinite(row_lo[:ncons])
    row_lo[:ncons][fin], row_up[:ncons][fin] = 0.0, 0.0
    row_lo[ncons + narc:], row_up[ncons + narc:] = 0.0, 0.0
    # capacities: the U column leaves (fixed to 0); a fixed arc's row is bounded by L_a,
    # a free arc's by its x column
    arc_index = {(int(u), int(v)): a for a, (u, v) in enumerate(P.arcs)}
    free = np.array([inS[u] and inS[v] for u, v in P.arcs], dtype=bool)
    caps = np.asarray(P.res_cap, dtype=float)
    row_up[ncons:ncons + narc] = np.where(free, 0.0, caps)
    xr, xc = [], []
    for k, (i, j) in enumerate(pairs):
        for a in (arc_index[(i, j)], arc_index[(j, i)]):
            xr.append(ncons + a)
            xc.append(k)
    X = coo_matrix((-np.ones(len(xr)), (xr, xc)), shape=(R, len(pairs)))
    full = hstack([A, lam_col, X]).tocsc()
    # port rows of S: sum_j x_ij = free ports (<= for an instance that is not regular)
    pos = {v: a for a, v in enumerate(S)}
    pr, pc = [], []
    for k, (i, j) in enumerate(pairs):
        for v in (i, j):
            pr.append(pos[v])
            pc.append(C + 1 + k)
    ports = coo_matrix((np.ones(len(pr)), (pr, pc)), shape=(len(S), C + 1 + len(pairs)))
    outside = np.array([int(links[v][~inS].sum()) for v in S], dtype=float)
    need = d - outside
    M = vstack([full, ports]).tocsc()
    col_lo = np.concatenate([base.col_lower, [0.0], np.zeros(len(pairs))])
    col_up = np.concatenate([base.col_upper, [INF], np.full(len(pairs), float(cap))])
    col_up[nf] = 0.0  # U
    col_up[nf + 1: nf + 1 + nsig] = INF  # tau = lambda sigma
    cost = np.zeros(C + 1 + len(pairs))
    cost[C] = -1.0  # max lambda
    integer = np.zeros(C + 1 + len(pairs), dtype=bool)
    integer[C + 1:] = True
    model = MatrixModel(
        A=M, cost=cost, col_lower=col_lo, col_upper=col_up,
        row_lower=np.concatenate([row_lo, need if instance.regular else np.full(len(S), -INF)]),
        row_upper=np.concatenate([row_up, need]),
        integer=integer,
        names=[*base.names, "lam", *(f"x{k}" for k in range(len(pairs)))])
    return model, {"P": P, "pairs": pairs, "lam": C, "x0": C + 1, "S": S}


def solve_sub(instance: Instance, links: np.ndarray, S: Sequence[int],
              cands: Mapping[int, Sequence[tuple[int, ...]]], cap: int,
              options: SolveOptions, time_limit: float) -> SubResult:
    """Build and solve the sub-MILP on ``S`` within ``time_limit`` seconds, ``L``'s links
    inside ``S`` as the partial MIP start; the proposed links (``L`` outside ``S``)."""
    t0 = time.perf_counter()
    model, lay = sub_model(instance, links, S, cands, cap)
    start = {f"x{k}": float(links[i, j]) for k, (i, j) in enumerate(lay["pairs"])}
    opts = options.with_(solver=options.solver.with_(
        time_limit=max(0.5, time_limit - (time.perf_counter() - t0)), threads=1),
        deadline=None)
    out = solve_model(model, opts, warm_start=start)
    runtime = time.perf_counter() - t0
    S = tuple(lay["S"])
    if not out.status.has_solution or out.x is None:
        return SubResult(None, None, out.status.value, runtime, S)
    lam = float(out.x[lay["lam"]])
    L = np.array(links, dtype=np.int64, copy=True)
    for k, (i, j) in enumerate(lay["pairs"]):
        L[i, j] = L[j, i] = int(round(out.x[lay["x0"] + k]))
    obj = lay["P"].sec_per_unit / lam if lam > 0 else None
    return SubResult(L, obj, out.status.value, runtime, S)
