"""Routing heuristics on a given topology: shortest path, ECMP and coin-change.

All three route every commodity of :func:`~topoopt_milp.core.topology.commodities_for` (MP demands
and AllReduce ring edges for the given ring orders):

* ``shortest`` -- one shortest path per commodity; ties are broken uniformly at random at each
  hop while walking back from the destination (``seed`` makes it reproducible);
* ``ecmp`` -- equal split over *all* shortest paths (per path, as DESIGN.md asks, not per hop);
* ``coin-change`` -- for circulant topologies: the jumps and their negatives are coins, a BFS
  over ``Z_n`` gives each residue ``r`` a fewest-coin decomposition, and the path from ``x`` to
  ``x + r`` adds the coins one after another (TopoOpt's routing over its rings).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence

import numpy as np

from .instance import Instance
from .topology import Commodity, Path, Ring, Routing, Topology, commodities_for

ROUTINGS = ("shortest", "ecmp", "coin-change")
MAX_ECMP_PATHS = 10_000  # per commodity; hypercube antipodes at n = 128 have 5040


class RoutingError(ValueError):
    """The routing cannot be built on this topology (disconnected pair, not circulant...)."""


def route(
    instance: Instance,
    topology: Topology,
    rings: Sequence[Ring],
    method: str = "shortest",
    seed: int = 0,
) -> Routing:
    """Route the instance's commodities (for these ring orders) with a named heuristic."""
    comms = commodities_for(instance, rings)
    if method == "shortest":
        routed = _shortest(topology, comms, np.random.default_rng(seed))
    elif method == "ecmp":
        routed = _ecmp(topology, comms)
    elif method == "coin-change":
        routed = _coin_change(topology, comms)
    else:
        raise RoutingError(f"routing: unknown method {method!r} (known: {', '.join(ROUTINGS)})")
    return Routing(tuple(rings), tuple(routed))


def check_reachable(topology: Topology, comms: Sequence[Commodity]) -> None:
    """A :class:`RoutingError` naming the first commodity whose ends ``topology`` does not
    connect (what every routing, heuristic or LP, needs first)."""
    dist = topology.hop_distances
    for c in comms:
        _check_reachable(dist, c)


def _neighbours(topology: Topology) -> list[np.ndarray]:
    return [np.flatnonzero(topology.links[v]) for v in range(topology.n)]


def _check_reachable(dist: np.ndarray, c: Commodity) -> None:
    if not np.isfinite(dist[c.src, c.dst]):
        raise RoutingError(
            f"routing: no path from {c.src} to {c.dst} ({c.kind} demand {c.tag}); "
            "the topology is disconnected"
        )


def _shortest(topology: Topology, comms: list[Commodity], rng) -> list[Commodity]:
    dist = topology.hop_distances
    nbrs = _neighbours(topology)
    out = []
    for c in comms:
        _check_reachable(dist, c)
        ds = dist[c.src]
        path = [c.dst]
        v = c.dst
        while v != c.src:
            cand = nbrs[v][ds[nbrs[v]] == ds[v] - 1]
            v = int(cand[rng.integers(len(cand))]) if len(cand) > 1 else int(cand[0])
            path.append(v)
        out.append(_with_paths(c, [(tuple(reversed(path)), 1.0)]))
    return out


def all_shortest_paths(topology: Topology, src: int, dst: int, limit: int = MAX_ECMP_PATHS):
    """Every shortest ``src -> dst`` path (raises if there are more than ``limit``)."""
    dist = topology.hop_distances
    nbrs = _neighbours(topology)
    ds = dist[src]
    paths: list[Path] = []
    stack = [(dst, (dst,))]
    while stack:
        v, suffix = stack.pop()
        if v == src:
            paths.append(suffix)
            if len(paths) > limit:
                raise RoutingError(
                    f"routing: more than {limit} shortest paths from {src} to {dst}; "
                    "use --routing shortest or lp"
                )
            continue
        for u in nbrs[v][ds[nbrs[v]] == ds[v] - 1]:
            stack.append((int(u), (int(u), *suffix)))
    return sorted(paths)


def _ecmp(topology: Topology, comms: list[Commodity]) -> list[Commodity]:
    dist = topology.hop_distances
    cache: dict[tuple[int, int], list[Path]] = {}
    out = []
    for c in comms:
        _check_reachable(dist, c)
        key = (c.src, c.dst)
        if key not in cache:
            cache[key] = all_shortest_paths(topology, c.src, c.dst)
        paths = cache[key]
        out.append(_with_paths(c, [(p, 1.0 / len(paths)) for p in paths]))
    return out


def coin_change_table(n: int, jumps: Sequence[int]) -> list[tuple[int, ...] | None]:
    """Fewest-coin decomposition of every residue ``r`` of ``Z_n`` into coins ``+-p``.

    BFS from 0 over ``Z_n``; coins are tried in a fixed order (ascending jump, ``+p`` before
    ``-p``) so the table is deterministic. ``None`` marks residues the coins cannot reach."""
    coins = []
    for p in sorted({int(p) % n for p in jumps}):
        coins.extend([p, (-p) % n] if 2 * p != n else [p])
    table: list[tuple[int, ...] | None] = [None] * n
    table[0] = ()
    queue = deque([0])
    while queue:
        r = queue.popleft()
        for c in coins:
            s = (r + c) % n
            if table[s] is None:
                table[s] = (*table[r], c)
                queue.append(s)
    return table


def _coin_change(topology: Topology, comms: list[Commodity]) -> list[Commodity]:
    n = topology.n
    if not topology.jumps:
        raise RoutingError("routing: coin-change needs a circulant topology (one with jumps)")
    idx = np.arange(n)
    for p in topology.jumps:
        if (topology.links[idx, (idx + p) % n] == 0).any():
            raise RoutingError(
                f"routing: coin-change needs jump {p} at every node; this topology has it "
                "only on some cosets"
            )
    table = coin_change_table(n, topology.jumps)
    out = []
    for c in comms:
        coins = table[(c.dst - c.src) % n]
        if coins is None:
            raise RoutingError(f"routing: jumps {topology.jumps} cannot reach {c.dst} from {c.src}")
        path = [c.src]
        for coin in coins:
            path.append((path[-1] + coin) % n)
        out.append(_with_paths(c, [(tuple(path), 1.0)]))
    return out


def _with_paths(c: Commodity, paths) -> Commodity:
    return Commodity(c.src, c.dst, c.bytes, c.kind, c.tag, tuple(paths))
