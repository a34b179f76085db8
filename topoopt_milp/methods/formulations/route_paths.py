"""The route family's path models: the LP over the ``k`` shortest paths of each pair
(``ksp``) and the unsplittable MILP (one candidate path per commodity; :mod:`.route` states
them), their candidate paths, columns, MIP start and routing."""

from __future__ import annotations

from collections.abc import Sequence

import networkx as nx
import numpy as np

from ...core.backends.pulp_backend import MatrixModel, solve_model
from ...core.params import SolveOptions
from ...core.topology import Commodity, Path, Routing, Topology
from .. import model_data as _exact
from .route_lp import _capacity_rows, _model, _values
from .route_problem import INF, RouteProblem, model_caps, usable_topology


# -- path formulations: ksp LP, unsplittable MILP / CP-SAT -------------------------------------
def candidate_paths(topology: Topology, pairs, k: int,
                    options: SolveOptions | None = None) -> dict[tuple[int, int], list[Path]]:
    """The ``k`` shortest simple paths (hops) of every pair, shortest first. With ``options``
    the time limit is checked per pair (at n = 128, all-to-all, this loop alone took a minute)."""
    g = topology.graph()
    out = {}
    for s, t in pairs:
        if options is not None:
            options.check_deadline()
        paths = []
        for p in nx.shortest_simple_paths(g, s, t):
            paths.append(tuple(int(x) for x in p))
            if len(paths) == k:
                break
        out[(s, t)] = paths
    return out


def _path_columns(P: RouteProblem, cands, items):
    """Columns ``(item, path)`` and their (arc index, column, volume) incidence."""
    arc_index = {(int(u), int(v)): a for a, (u, v) in enumerate(P.arcs)}
    owners, paths, a_idx, c_idx, w = [], [], [], [], []
    for k, (s, t, vol) in enumerate(items):
        for p in cands[(s, t)]:
            j = len(paths)
            owners.append(k)
            paths.append(p)
            for x, y in zip(p, p[1:], strict=False):
                a_idx.append(arc_index[(x, y)])
                c_idx.append(j)
                w.append(vol)
    return (np.array(owners), paths, np.array(a_idx, dtype=int), np.array(c_idx, dtype=int),
            np.array(w, dtype=float))


def _path_model(P: RouteProblem, cands, items, integer: bool) -> tuple[MatrixModel, tuple]:
    owners, paths, a_idx, c_idx, w = _path_columns(P, cands, items)
    npath, K = len(paths), len(items)
    rows = [owners]
    cols = [np.arange(npath)]
    vals = [np.ones(npath)]
    r, c, v, nres = _capacity_rows(P, [(a_idx, c_idx, w)], K, npath)
    rows += r
    cols += c
    vals += v
    row_lo = np.concatenate([np.ones(K), np.full(nres, -INF)])
    row_up = np.concatenate([np.ones(K), np.zeros(nres)])
    names = [f"x{j}" for j in range(npath)] + ["U"]
    ints = np.zeros(npath + 1, dtype=bool)
    ints[:npath] = integer
    col_up = np.full(npath + 1, INF)
    col_up[:npath] = 1.0
    model = _model(rows, cols, vals, npath + 1, row_lo, row_up, names, ints, col_up)
    return model, (owners, paths, a_idx, c_idx, w)


def _unsplit_items(P: RouteProblem):
    return [(c.src, c.dst, c.bytes / P.unit) for c in P.commodities]


def _start(P: RouteProblem, options: SolveOptions, cands, items) -> list[int]:
    """Candidate index per commodity for the MIP start: the warm start's single path when it
    is a candidate, else the shortest path (candidate 0)."""
    chosen = [0] * len(items)
    ws = options.warm_start
    if ws is not None and ws.routing is not None:
        single = {}
        for c in ws.routing.commodities:
            if len(c.paths) == 1:
                single.setdefault((c.src, c.dst, c.kind, c.tag), c.paths[0][0])
        for k, c in enumerate(P.commodities):
            p = single.get((c.src, c.dst, c.kind, c.tag))
            if p is not None and p in cands[(c.src, c.dst)]:
                chosen[k] = cands[(c.src, c.dst)].index(p)
    return chosen


def _unsplit_routing(P: RouteProblem, cands, choice: Sequence[int]) -> Routing:
    routed = tuple(
        Commodity(c.src, c.dst, c.bytes, c.kind, c.tag, ((cands[(c.src, c.dst)][j], 1.0),))
        for c, j in zip(P.commodities, choice, strict=True)
    )
    return Routing(P.rings, routed)


def _solve_paths(P: RouteProblem, options: SolveOptions, integer: bool):
    if integer:
        items = _unsplit_items(P)
    else:
        items = [(int(s), int(t), float(P.D[s, t])) for s, t in np.argwhere(P.D > 0)]
    # links left out of the models (.shared_capacity) are left out of the candidates too
    cands = candidate_paths(usable_topology(P), {(s, t) for s, t, _ in items},
                            options.method.k_paths)
    model, (owners, paths, *_rest) = _path_model(P, cands, items, integer)
    warm = None
    if integer:
        chosen = _start(P, options, cands, items)
        start = np.zeros(len(paths))
        offsets = np.searchsorted(owners, np.arange(len(items)))
        start[offsets + np.array(chosen, dtype=int)] = 1.0
        loads = model.A[len(items):, :-1] @ start
        warm = {nm: float(x) for nm, x in zip(model.names, start, strict=False)}
        warm["U"] = float(np.max(loads / model_caps(P))) if len(loads) else 0.0
    outcome = solve_model(model, options, warm)
    if not outcome.status.has_solution:
        return outcome, None
    x = _values(outcome, model.names)[:-1]
    if integer:
        choice = [0] * len(items)
        for j in np.flatnonzero(x > 0.5):
            k = owners[j]
            choice[k] = j - int(np.searchsorted(owners, k))
        return outcome, _unsplit_routing(P, cands, choice)
    pair_paths: dict[tuple[int, int], list[tuple[Path, float]]] = {}
    for k, (s, t, _vol) in enumerate(items):
        idx = np.flatnonzero(owners == k)
        fr = np.clip(x[idx], 0.0, None)
        keep = fr > _exact.FLOW_EPS
        tot = fr[keep].sum()
        pair_paths[(s, t)] = [(paths[j], float(f / tot)) for j, f in
                              zip(idx[keep], fr[keep], strict=True)]
    return outcome, _exact.routing_from_pair_paths(P.instance, P.topology, P.rings, pair_paths,
                                                   options.seed)

