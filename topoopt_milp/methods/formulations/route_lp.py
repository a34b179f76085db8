"""The route family's fractional models: the source-aggregated, per-pair and circulant
symmetric arc LPs (:mod:`.route` states the formulations), their matrix assembly and the
decomposition of their flows into paths."""

from __future__ import annotations

import numpy as np
from scipy.sparse import coo_matrix

from ...core.backends.pulp_backend import MatrixModel, solve_model
from ...core.errors import InputError
from ...core.params import SolveOptions
from ...core.topology import Path
from ..flow_paths import decompose_flow
from .route_problem import INF, RouteProblem, dropped_arcs, model_caps


# -- matrix assembly helpers -----------------------------------------------------------------
def _capacity_rows(P: RouteProblem, arc_cols: list[tuple[np.ndarray, np.ndarray]], row0: int,
                   u_col: int):
    """Entries of ``sum_{cols on arcs of r} coef * x - cap(r) U <= 0`` for every resource.

    ``arc_cols`` lists ``(arc index, column)`` pairs per block (coefficient 1) or with a third
    coefficient array."""
    arc_of_res = np.full(len(P.arcs), -1)
    for r, arcs in enumerate(P.res_arcs):
        arc_of_res[arcs] = r
    rows, cols, vals = [], [], []
    for block in arc_cols:
        a, c = block[0], block[1]
        w = block[2] if len(block) > 2 else np.ones(len(a))
        rows.append(row0 + arc_of_res[a])
        cols.append(c)
        vals.append(w)
    nres = len(P.res_arcs)
    rows.append(row0 + np.arange(nres))
    cols.append(np.full(nres, u_col))
    vals.append(-model_caps(P))
    return rows, cols, vals, nres


def _model(rows, cols, vals, ncol, row_lo, row_up, names, integer=None, col_up=None):
    r = np.concatenate(rows)
    c = np.concatenate(cols)
    v = np.concatenate(vals).astype(float)
    A = coo_matrix((v, (r, c)), shape=(len(row_lo), ncol)).tocsc()
    cost = np.zeros(ncol)
    cost[ncol - 1] = 1.0  # U is always the last column
    return MatrixModel(
        A=A, cost=cost, col_lower=np.zeros(ncol),
        col_upper=np.full(ncol, INF) if col_up is None else col_up,
        row_lower=np.asarray(row_lo, dtype=float), row_upper=np.asarray(row_up, dtype=float),
        integer=np.zeros(ncol, dtype=bool) if integer is None else integer, names=names,
    )


def _values(outcome, names: list[str]) -> np.ndarray:
    """Column values in model order: HiGHS' vector itself, or by name (CBC)."""
    if outcome.x is not None and len(outcome.x) == len(names):
        return np.asarray(outcome.x, dtype=float)
    vals = outcome.values
    return np.array([vals.get(nm, 0.0) for nm in names])


# -- fractional: source-aggregated, per-pair and symmetric arc LPs ----------------------------
def symmetric_applies(P: RouteProblem) -> bool:
    """Circulant topology and circulant aggregated demand (and no shared SNDlib capacity)."""
    if P.shared:
        return False
    L, D, n = P.topology.links, P.D, P.instance.n
    for i in range(1, n):
        if not np.array_equal(L[i], np.roll(L[0], i)):
            return False
        if not np.allclose(D[i], np.roll(D[0], i), rtol=1e-12, atol=0):
            return False
    return True


def _flow_lp(P: RouteProblem, sources: np.ndarray, demand: np.ndarray,
             symmetric: bool = False) -> tuple[MatrixModel, int]:
    """Arc LP with one flow per row of ``demand`` (``demand[k, v]`` enters ``v``, leaves
    ``sources[k]``). Returns the model and the number of flow columns."""
    n, m = P.instance.n, len(P.arcs)
    K = len(sources)
    tails, heads = P.arcs[:, 0], P.arcs[:, 1]
    col = (np.arange(K)[:, None] * m + np.arange(m)[None, :]).ravel()
    kk = np.repeat(np.arange(K), m)
    aa = np.tile(np.arange(m), K)
    rows = [kk * n + heads[aa], kk * n + tails[aa]]
    cols = [col, col]
    vals = [np.ones(K * m), -np.ones(K * m)]
    row_lo = demand.ravel().copy()
    row_up = demand.ravel().copy()
    src_rows = np.arange(K) * n + sources
    # The source's own row is implied by the others; leaving it free keeps the matrix full rank.
    row_lo[src_rows], row_up[src_rows] = -INF, INF
    u_col = K * m
    if symmetric:
        # capacity per difference class delta: all arcs (i, i + delta) share one row
        delta = (heads - tails) % n
        classes = np.unique(delta)
        cls_row = {int(d): k for k, d in enumerate(classes)}
        r0 = K * n
        rows.append(r0 + np.array([cls_row[int(d)] for d in delta]))
        cols.append(np.arange(m))
        vals.append(np.ones(m))
        rows.append(r0 + np.arange(len(classes)))
        cols.append(np.full(len(classes), u_col))
        vals.append(-P.topology.links[0, classes].astype(float))
        nres = len(classes)
    else:
        r, c, v, nres = _capacity_rows(P, [(aa, col)], K * n, u_col)
        rows += r
        cols += c
        vals += v
    row_lo = np.concatenate([row_lo, np.full(nres, -INF)])
    row_up = np.concatenate([row_up, np.zeros(nres)])
    names = [f"f{j}" for j in range(K * m)] + ["U"]
    col_up = None
    if P.dropped is not None:  # links left out (.shared_capacity): no flow on their arcs
        col_up = np.full(K * m + 1, INF)
        col_up[:K * m][np.tile(dropped_arcs(P), K)] = 0.0
    return _model(rows, cols, vals, K * m + 1, row_lo, row_up, names, col_up=col_up), K * m


def _decompose(P: RouteProblem, sources, demand, flows: np.ndarray, pairs_of_row=None):
    """Paths per ``(s, t)`` from per-row arc flows (model units)."""
    pair_paths: dict[tuple[int, int], list[tuple[Path, float]]] = {}
    arcs = [(int(u), int(v)) for u, v in P.arcs]
    for k, s in enumerate(sources):
        f = flows[k]
        nz = np.flatnonzero(f > 0)
        arc_flow = {arcs[a]: float(f[a]) for a in nz}
        dem = {int(t): float(demand[k, t]) for t in np.flatnonzero(demand[k] > 0)}
        for t, paths in decompose_flow(int(s), arc_flow, dem, P.topology).items():
            key = (int(s), t) if pairs_of_row is None else pairs_of_row[k]
            pair_paths[key] = paths
    return pair_paths


def _solve_fractional(P: RouteProblem, options: SolveOptions):
    form = options.method.formulation
    n = P.instance.n
    if form == "symmetric" and not symmetric_applies(P):
        raise InputError("formulation: the symmetric reduction needs a circulant topology and "
                         "rotation-invariant traffic")
    if form == "symmetric" or (form == "auto" and symmetric_applies(P)):
        sources, demand = np.array([0]), P.D[:1]
        model, nf = _flow_lp(P, sources, demand, symmetric=True)
        outcome = solve_model(model, options)
        if not outcome.status.has_solution:
            return outcome, None, "symmetric"
        f0 = _values(outcome, model.names)[:nf].reshape(1, -1)
        base = _decompose(P, sources, demand, f0)
        pair_paths = {}
        for s in range(n):
            for (_, t), paths in base.items():
                pair_paths[(s, (t + s) % n)] = [
                    (tuple((x + s) % n for x in p), fr) for p, fr in paths
                ]
        return outcome, pair_paths, "symmetric"
    if form == "per-pair":
        pairs = [tuple(int(x) for x in st) for st in np.argwhere(P.D > 0)]
        sources = np.array([s for s, _ in pairs], dtype=int)
        demand = np.zeros((len(pairs), n))
        for k, (s, t) in enumerate(pairs):
            demand[k, t] = P.D[s, t]
        model, nf = _flow_lp(P, sources, demand)
        outcome = solve_model(model, options)
        if not outcome.status.has_solution:
            return outcome, None, "per-pair"
        flows = _values(outcome, model.names)[:nf].reshape(len(pairs), len(P.arcs))
        return outcome, _decompose(P, sources, demand, flows, pairs), "per-pair"
    sources = np.flatnonzero(P.D.sum(axis=1) > 0)
    demand = P.D[sources]
    model, nf = _flow_lp(P, sources, demand)
    outcome = solve_model(model, options)
    if not outcome.status.has_solution:
        return outcome, None, "source"
    # (rows, arcs): a reshape by -1 fails for traffic without any source (all volumes 0)
    flows = _values(outcome, model.names)[:nf].reshape(len(sources), len(P.arcs))
    return outcome, _decompose(P, sources, demand, flows), "source"

