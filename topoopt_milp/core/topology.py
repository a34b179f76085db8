"""Topologies (the link matrix ``L``) and routings (paths with split fractions).

A :class:`Topology` is a symmetric non-negative integer matrix ``L`` with zero diagonal:
``L[i, j]`` duplex links join servers ``i`` and ``j``, so arc ``(i, j)`` has capacity
``L[i, j] * B``. Circulant topologies also carry their ring ``jumps``.

A :class:`Routing` turns an instance's traffic into routed commodities. AllReduce groups are
first given ring orders (:class:`Ring`, with a ``share`` of the group's volume; shares of one
group sum to 1); every ring edge and every MP demand is then a :class:`Commodity` with paths
and fractions summing to 1. :func:`commodities_for` is the single place that expands an
instance plus ring orders into commodities.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property

import networkx as nx
import numpy as np

from .instance import Instance

Path = tuple[int, ...]


@dataclass(frozen=True, eq=False)
class Topology:
    """A multigraph of duplex links as a symmetric integer matrix (read-only)."""

    links: np.ndarray
    jumps: tuple[int, ...] | None = None

    def __post_init__(self) -> None:
        L = self.links
        if not (isinstance(L, np.ndarray) and L.dtype == np.int64 and L.flags.owndata
                and not L.flags.writeable):
            L = np.array(L, dtype=np.int64)  # a read-only int64 matrix is kept, not copied
        if L.ndim != 2 or L.shape[0] != L.shape[1]:
            raise ValueError(f"links: expected a square matrix, got shape {L.shape}")
        if L.size and L.min() < 0:
            raise ValueError("links: link counts must be non-negative")
        # symmetric iff every nonzero entry equals its mirror (a dense L != L.T took 1-2 s
        # at n = 10^4, twice per route problem)
        nz = np.flatnonzero(L)
        i, j = np.divmod(nz, max(L.shape[0], 1))
        if (L[j, i] != L.flat[nz]).any():
            raise ValueError("links: the link matrix must be symmetric (links are duplex)")
        if np.diag(L).any():
            raise ValueError("links: self-loops are not allowed")
        L.setflags(write=False)
        object.__setattr__(self, "links", L)
        if self.jumps is not None:
            object.__setattr__(self, "jumps", tuple(int(p) for p in self.jumps))

    # -- constructors -------------------------------------------------------------------
    @classmethod
    def from_link_list(cls, n: int, links: Iterable[Sequence[int]], jumps=None) -> Topology:
        """From ``[[i, j, count], ...]`` (each unordered pair once; repeats add up)."""
        L = np.zeros((n, n), dtype=np.int64)
        for k, row in enumerate(links):
            if len(row) != 3:
                raise ValueError(f"links[{k}]: expected [i, j, count]")
            i, j, c = (int(x) for x in row)
            if not (0 <= i < n and 0 <= j < n):
                raise ValueError(f"links[{k}]: node out of range 0..{n - 1}")
            if i == j:
                raise ValueError(f"links[{k}]: self-loop at node {i}")
            L[i, j] += c
            L[j, i] += c
        return cls(L, jumps)

    @classmethod
    def circulant(cls, n: int, jumps: Iterable[int], multiplicity: int = 1) -> Topology:
        """Union of bidirectional rings ``i -- i+p mod n`` for each jump ``p``.

        A jump with ``2p == n`` pairs each node with one partner (a perfect matching) and uses
        one port; every other jump uses two ports per node."""
        jumps = tuple(int(p) % n for p in jumps)
        L = np.zeros((n, n), dtype=np.int64)
        idx = np.arange(n)
        for p in jumps:
            if p == 0:
                raise ValueError("jumps: a jump of 0 (mod n) is a self-loop")
            if 2 * p == n:
                L[idx, (idx + p) % n] += multiplicity  # each pair hit once from each end
            else:
                L[idx, (idx + p) % n] += multiplicity
                L[(idx + p) % n, idx] += multiplicity
        return cls(L, jumps)

    # -- views and metrics --------------------------------------------------------------
    @property
    def n(self) -> int:
        return self.links.shape[0]

    def degrees(self) -> np.ndarray:
        """Ports used per node, ``sum_j L[i, j]``."""
        return self.links.sum(axis=1)

    def link_list(self) -> list[list[int]]:
        """``[[i, j, count], ...]`` with ``i < j``, sorted."""
        i, j = np.nonzero(np.triu(self.links))
        return [[int(a), int(b), int(self.links[a, b])] for a, b in zip(i, j, strict=True)]

    def graph(self) -> nx.Graph:
        """Simple undirected networkx graph; edge attribute ``count`` holds the multiplicity."""
        g = nx.Graph()
        g.add_nodes_from(range(self.n))
        g.add_edges_from((i, j, {"count": c}) for i, j, c in self.link_list())
        return g

    @cached_property
    def hop_distances(self) -> np.ndarray:
        """All-pairs hop distances (``inf`` between disconnected nodes; :mod:`.bfs`)."""
        from .bfs import hop_distances

        return hop_distances(self.links)

    def diameter(self) -> float:
        """Largest hop distance (``inf`` if disconnected)."""
        return float(self.hop_distances.max()) if self.n > 1 else 0.0

    def is_connected(self) -> bool:
        return bool(np.isfinite(self.hop_distances).all())

    def with_jumps(self, jumps: Iterable[int] | None) -> Topology:
        return Topology(self.links, None if jumps is None else tuple(jumps))  # links kept


@dataclass(frozen=True)
class Ring:
    """A ring order for AllReduce group ``group`` carrying ``share`` of its volume."""

    group: int
    order: tuple[int, ...]
    share: float = 1.0


@dataclass(frozen=True)
class Commodity:
    """A routed flow of ``bytes`` from ``src`` to ``dst``.

    ``kind`` is ``"mp"`` or ``"ar"``; ``tag`` is the MP demand index or the AllReduce group
    index. ``paths`` are node sequences from ``src`` to ``dst`` with split fractions."""

    src: int
    dst: int
    bytes: float
    kind: str
    tag: int
    paths: tuple[tuple[Path, float], ...] = ()


@dataclass(frozen=True)
class Routing:
    """Ring orders for every AllReduce group plus every commodity's paths."""

    rings: tuple[Ring, ...]
    commodities: tuple[Commodity, ...]

    def to_dict(self) -> dict:
        return {
            "rings": [
                {"group": r.group, "order": list(r.order), "share": r.share} for r in self.rings
            ],
            "commodities": [
                {
                    "src": c.src,
                    "dst": c.dst,
                    "bytes": c.bytes,
                    "kind": c.kind,
                    "tag": c.tag,
                    "paths": [{"nodes": list(p), "fraction": f} for p, f in c.paths],
                }
                for c in self.commodities
            ],
        }

    @classmethod
    def from_dict(cls, data: dict) -> Routing:
        rings = tuple(
            Ring(int(r["group"]), tuple(int(x) for x in r["order"]), float(r["share"]))
            for r in data.get("rings", [])
        )
        comms = tuple(
            Commodity(
                int(c["src"]),
                int(c["dst"]),
                float(c["bytes"]),
                str(c["kind"]),
                int(c["tag"]),
                tuple((tuple(int(x) for x in p["nodes"]), float(p["fraction"])) for p in c["paths"]),
            )
            for c in data.get("commodities", [])
        )
        return cls(rings, comms)


def fixed_topology(instance: Instance) -> Topology | None:
    """The topology an instance fixes (:class:`~topoopt_milp.core.instance.FixedTopology`), or
    ``None``: link counts, or one link per linked pair when capacities are shared (SNDlib; the
    real capacities are :func:`link_capacities`)."""
    fixed = instance.topology
    if fixed is None:
        return None
    L = np.zeros((instance.n, instance.n), dtype=np.int64)
    if fixed.links:
        i, j, c = (np.array(col) for col in zip(*fixed.links, strict=True))
        i, j = i.astype(np.int64), j.astype(np.int64)
        L[i, j] = L[j, i] = 1 if fixed.shared else c.astype(np.int64)
    L.setflags(write=False)  # kept without a copy (800 MB at n = 10^4)
    return Topology(L)


def fixed_rings(instance: Instance) -> tuple[Ring, ...] | None:
    """The ring orders and shares an instance fixes, or ``None``."""
    if instance.topology is None or instance.topology.rings is None:
        return None
    return tuple(Ring(g, order, share) for g, order, share in instance.topology.rings)


def link_capacities(instance: Instance) -> dict[tuple[int, int], float]:
    """``{(i, j): bytes/s}`` (``i < j``) of an instance's fixed topology: per direction for a
    duplex topology, shared by both directions when ``topology.shared``."""
    if instance.topology is None:
        raise ValueError("topology: the instance fixes no topology")
    B = instance.link_bytes_per_s
    return {(int(i), int(j)): float(c) * B for i, j, c in instance.topology.links}


def default_rings(instance: Instance) -> tuple[Ring, ...]:
    """The plain bidirectional ring of every AllReduce group: members in ascending order,
    half the volume each way round (``m0 -> m1 -> ... -> m0`` and the reverse).

    Using both directions is what NCCL does on a ring and keeps both halves of every duplex
    link busy; it is also the TotientPerms candidate order with ``m = 1`` and ``m = k - 1``,
    so every heuristic's ring choice lies in the ring space of the exact ``alloc`` model."""
    rings = []
    for gi, g in enumerate(instance.allreduce):
        rings.extend(bidirectional_rings(gi, tuple(sorted(g.members))))
    return tuple(rings)


def bidirectional_rings(group: int, order: tuple[int, ...], share: float = 1.0) -> list[Ring]:
    """``order`` and its reverse with ``share / 2`` each (one ring with the whole ``share``
    for two members, whose reverse is the same pair of edges)."""
    if len(order) == 2:
        return [Ring(group, order, share)]
    return [Ring(group, order, share / 2), Ring(group, (order[0], *reversed(order[1:])), share / 2)]


def commodities_for(instance: Instance, rings: Sequence[Ring]) -> list[Commodity]:
    """Unrouted commodities: every MP demand, then every ring edge of every ring.

    A ring edge of ring ``r`` of group ``g`` carries ``share_r * 2(k-1)/k * S_g`` bytes.
    Zero-byte demands are dropped (they load nothing and need no path)."""
    out = [Commodity(s, t, b, "mp", k) for k, (s, t, b) in enumerate(instance.mp) if b > 0]
    for r in rings:
        vol = r.share * instance.allreduce[r.group].edge_bytes
        if vol <= 0:
            continue
        k = len(r.order)
        out.extend(
            Commodity(r.order[i], r.order[(i + 1) % k], vol, "ar", r.group) for i in range(k)
        )
    return out


def rings_along_jumps(rings: Sequence[Ring], topology: Topology) -> tuple[Ring, ...]:
    """Lay rings of coset groups along a circulant topology's jumps.

    A group that is a coset ``{s, s + n/g, ...}`` gets the order ``s, s + p, s + 2p, ...`` for
    the smallest topology jump ``p = (n/g) m`` with ``gcd(m, g) = 1`` whose links exist, so
    every ring edge is one link; the reverse half of a default ring (its order is not
    ascending) gets that order backwards. Other rings are returned unchanged."""
    if not topology.jumps:
        return tuple(rings)
    out = []
    for r in rings:
        order = _coset_order(topology, r.order)
        if order is not None and r.order != tuple(sorted(r.order)):
            order = (order[0], *reversed(order[1:]))
        out.append(r if order is None else Ring(r.group, order, r.share))
    return tuple(out)


def _coset_order(topology: Topology, members: Sequence[int]) -> tuple[int, ...] | None:
    n, g = topology.n, len(members)
    if n % g:
        return None
    step = n // g
    s = min(members)
    if sorted(members) != sorted((s + k * step) % n for k in range(g)):
        return None
    for p in sorted({min(p % n, -p % n) for p in topology.jumps}):
        if p % step or math.gcd(p // step, g) != 1:
            continue
        order = tuple((s + k * p) % n for k in range(g))
        if all(topology.links[order[k], order[(k + 1) % g]] > 0 for k in range(g)):
            return order
    return None
