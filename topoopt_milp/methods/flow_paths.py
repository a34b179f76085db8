"""Flow decomposition: a single-source arc flow into simple paths with split fractions.

The one decomposition of the package: every exact family (route LPs, the alloc / joint /
select MILPs) turns its source-aggregated arc flows into a
:class:`~topoopt_milp.core.topology.Routing` here. Any decomposition of an optimal flow is optimal
(dropping cycle flow only lowers loads); this one is chosen for speed on the dense flows an
interior-point solution has. Arcs without a link in the topology are ignored: a MILP link
variable within the integrality tolerance of 0 may still carry a sliver of flow in a
time-limited incumbent, and a path over it would have no capacity.
"""

from __future__ import annotations

import numpy as np

from ..core.topology import Path, Topology

LEFTOVER = 1e-6  # relative unrouted demand absorbed by normalisation (solver noise)


def flows_by_source(flow_vars: dict, values) -> dict[int, dict[tuple[int, int], float]]:
    """``{s: {(i, j): value}}`` from arc-flow variables keyed ``(s, i, j)`` and a
    ``name -> value`` mapping, in one pass (a filter per source would walk every variable
    ``n`` times: a second at ``n = 64``, on the time after the solver)."""
    out: dict[int, dict[tuple[int, int], float]] = {}
    for (s, i, j), v in flow_vars.items():
        out.setdefault(s, {})[i, j] = values.get(v.name, 0.0)
    return out


def decompose_flow(s: int, flow: dict[tuple[int, int], float], demand: dict[int, float],
                   topology: Topology) -> dict[int, list[tuple[Path, float]]]:
    """Paths with fractions per destination from a single-source arc flow.

    For each destination ``t`` (largest demand first), walk back from ``t`` along the in-arc
    with the largest residual flow until ``s`` is reached and push the path's bottleneck.
    Conservation guarantees that a node other than ``s`` reached this way has positive
    residual inflow; if the walk meets a node twice it has found a cycle, whose flow is
    cancelled (it only adds load). Interior-point flows violate conservation by ~1e-8: a
    remainder below ``LEFTOVER`` of the demand is absorbed by normalising the fractions, a
    larger one goes to a shortest path, so the fractions always sum to 1.
    ``O(paths x length x degree)``, far faster than a BFS per path on the dense flows an
    interior-point solution has."""
    total = sum(demand.values())
    thr = 1e-10 * total
    links = topology.links
    into: dict[int, dict[int, float]] = {}
    for (u, v), f in flow.items():
        if f > thr and links[u, v] > 0:
            into.setdefault(v, {})[u] = f
    result: dict[int, list[tuple[Path, float]]] = {}
    for t, want in sorted(demand.items(), key=lambda kv: -kv[1]):
        if want <= 0 or t == s:
            continue
        left = want
        got: dict[Path, float] = {}
        while left > 1e-9 * want:
            path = _walk_back(s, t, into, thr)
            if path is None:
                break
            arcs = list(zip(path, path[1:], strict=False))
            push = min(left, min(into[v][u] for u, v in arcs))
            for u, v in arcs:
                into[v][u] -= push
            got[path] = got.get(path, 0.0) + push
            left -= push
        if left > LEFTOVER * want:
            if not np.isfinite(topology.hop_distances[s, t]):
                continue  # unreachable: left to the caller (and to the checker)
            sp = _shortest_path(topology, s, t)
            got[sp] = got.get(sp, 0.0) + left
        result[t] = [(p, f / want) for p, f in sorted(got.items()) if f > 1e-12 * want]
        norm = sum(f for _, f in result[t])
        result[t] = [(p, f / norm) for p, f in result[t]]
    return result


def _walk_back(s: int, t: int, into, thr: float) -> Path | None:
    path = [t]
    pos = {t: 0}
    v = t
    while v != s:
        cand = into.get(v)
        if not cand:
            return None
        u = max(cand, key=cand.__getitem__)
        if cand[u] <= thr:
            return None
        if u in pos:  # a cycle u -> v -> ... -> u: cancel its flow, resume from u
            k = pos[u]
            cyc = [u, *reversed(path[k:])]  # u, v, ..., u in flow direction
            arcs = list(zip(cyc, cyc[1:], strict=False))
            m = min(into[b][a] for a, b in arcs)
            for a, b in arcs:
                into[b][a] -= m
            for x in path[k + 1:]:
                del pos[x]
            del path[k + 1:]
            v = u
            continue
        pos[u] = len(path)
        path.append(u)
        v = u
    return tuple(reversed(path))


def _shortest_path(topology: Topology, s: int, t: int) -> Path:
    """A hop-shortest path, walking back from ``t`` along decreasing distance from ``s``."""
    dist = topology.hop_distances[s]
    path = [t]
    while path[-1] != s:
        nbrs = np.flatnonzero(topology.links[path[-1]])
        path.append(int(nbrs[np.argmin(dist[nbrs])]))
    return tuple(reversed(path))
