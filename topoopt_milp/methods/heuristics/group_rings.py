"""group-rings: every AllReduce group's rings inside the group on all ports, then a few cross
links for the MP traffic, in proportion to its share of the bytes.

Why. TopologyFinder splits the ``d`` ports of every node between AllReduce and MP (``d_AR``
even, at least 2), so at ``d = 4`` the split is 2 + 2 or 4 + 0, and when the groups are smaller
than the cluster the artifact gives 2 of the AllReduce ports to a whole-cluster ``+-1`` ring.
On coset groups with a little dense MP (``instances/mixed``, 5 % MP at ``n = 128, d = 4``) that
leaves the groups' rings half their ports, while the MP needs only a few links between the
groups. Measured with the route LP over the TotientPerms orders (the ``-lp`` variant), on
``mixed-n128-d4-g4-mp05``: this construction 0.0771 s, the best of TotientPerms,
TopologyFinder, demand-greedy and the expanders 0.0963 s (demand-greedy), the best of
``certify --time-limit 150`` 0.0915 s (alloc-search; results/certify-d4-n128.md).

Construction.

1. **Rings.** The groups with traffic are merged by member set as in TotientPerms
   (:mod:`.totient`), apportioned the ``d`` ports of each node in proportion to their ring
   volume (no whole-cluster ring), and each lays its TotientPerms jumps over its own members
   (:func:`.totient.totient_jumps` on the group: SelectPermutations over its coprime
   candidates). Ports still free (nodes in no group) are filled
   (:func:`.support.fill_free_ports`). Without AllReduce traffic: TotientPerms' circulant.
2. **Cross links.** The MP share ``s = MP / (MP + ring bytes)`` of the traffic (ring bytes:
   ``k e_g`` per group) is what TopologyFinder's proportional split measures, taken at the
   granularity of links instead of ports: ``2 q`` of the ``n d / 2`` links become cross links,
   ``q = round(cross_scale * s * n d / 4)``, by ``q`` degree-preserving 2-swaps. Each swap
   removes one link of the last (longest) jump of two groups ``g, h`` (every node's *primary*
   group is its heaviest) and joins their ends across: ``(a, b), (c, e) -> (a, c), (b, e)``.
   The ``q`` swaps are shared among the group pairs in proportion to the MP between them
   (largest remainder), interleaved, and each group's removed links are evenly spaced along
   its ring and node-disjoint, so the gateways spread over the group instead of piling onto a
   few nodes (the MP crossing at one gateway would saturate the ring links around it). A
   group with fewer such links than swaps makes fewer swaps.
3. Components that split some demand are joined (:func:`.support.connect_components`).

The rings are the groups' own TotientPerms rings (a swap only moves links of the last jump,
the other jumps' rings stay whole), so the ``-lp`` variant routes inside alloc-milp's ring
space. Own routing: shortest paths. A heuristic: no bound.
"""

from __future__ import annotations

import time
from collections import defaultdict
from dataclasses import dataclass

import numpy as np

from ...core.instance import Instance
from ...core.params import SolveOptions, knob
from ...core.result import SolveResult
from ...core.spec import MethodSpec
from ...core.topology import Ring, Topology
from .support import (
    RoutingParams,
    connect_components,
    fill_free_ports,
    heuristic_memory,
    heuristic_result,
    route_with,
    traffic_is_split,
)
from .totient import _apportion, _group_rings, _local_links, merged_groups, totient_jumps

Link = tuple[int, int]


@dataclass(frozen=True)
class GroupRingsParams(RoutingParams):
    cross_scale: float = knob(1.0, "group-rings: cross links = this times the MP share of the "
                                   "bytes times the links (0: rings only, components joined).",
                              minimum=0)


def mp_share(instance: Instance) -> float:
    """``MP / (MP + ring bytes)``, ring bytes ``k e_g`` per group (what every member sends)."""
    ring = sum(g.edge_bytes * len(g.members) for g in instance.allreduce)
    mp = instance.mp_bytes()
    return mp / (mp + ring) if mp + ring > 0 else 0.0


def primary_sets(instance: Instance) -> np.ndarray:
    """Per node the index of its heaviest member set (:func:`.totient.merged_groups`' order,
    by ring-edge volume, ties to the lower index; -1 for a node in no group with traffic)."""
    _, weight, _ = merged_groups(instance)
    primary = np.full(instance.n, -1)
    best = np.zeros(instance.n)
    for i, (key, w) in enumerate(weight.items()):
        idx = np.asarray(key)
        take = w > best[idx]
        primary[idx[take]] = i
        best[idx[take]] = w
    return primary


def _rings(instance: Instance, L: np.ndarray
           ) -> tuple[list[Ring], list[tuple[int, ...]], list[list[Link]]]:
    """Step 1 (in place on ``L``): the rings, the merged member sets, and per set the links
    of its last jump in ring order (the ones a swap may move)."""
    merged, weight, rings = merged_groups(instance)
    keys = list(merged)
    movable: list[list[Link]] = []
    if not keys:  # no AllReduce traffic: TotientPerms' circulant, as TotientPerms does
        L += Topology.circulant(instance.n, totient_jumps(instance.n, instance.degree)).links
        return rings, keys, movable
    alloc = _apportion(instance.n, merged, weight, instance.degree, False)
    for key in keys:
        k = len(key)
        jumps = totient_jumps(k, alloc[key], False)
        _local_links(L, key, jumps)
        own = _group_rings(merged[key], key, jumps)
        rings.extend(own if own else  # no Hamiltonian jump: the sorted order, multi-hop
                     [Ring(gi, key, 1.0) for gi in merged[key]])
        last = jumps[-1] if jumps else 0
        count = k // 2 if 2 * last == k else k
        movable.append([(key[i], key[(i + last) % k]) for i in range(count)] if last else [])
    rings.sort(key=lambda r: r.group)
    return rings, keys, movable


def _swap_plan(instance: Instance, keys: list[tuple[int, ...]], q: int
               ) -> list[tuple[int, int]]:
    """Step 2's group pairs, one per swap: ``q`` shared by the MP between primary groups (a
    node's heaviest set, :func:`primary_sets`), interleaved."""
    primary = primary_sets(instance)
    G = len(keys)
    W = np.zeros((G, G))
    for s, t, b in instance.mp:
        gs, gt = primary[s], primary[t]
        if b > 0 and gs >= 0 and gt >= 0 and gs != gt:
            W[min(gs, gt), max(gs, gt)] += b
    pairs = [(a, b) for a in range(G) for b in range(a + 1, G) if W[a, b] > 0]
    if not pairs or q <= 0:
        return []
    w = np.array([W[a, b] for a, b in pairs])
    quota = q * w / w.sum()
    count = np.floor(quota).astype(int)
    for i in np.argsort(-(quota - count), kind="stable")[: q - int(count.sum())]:
        count[i] += 1
    plan: list[tuple[int, int]] = []
    for r in range(int(count.max())):  # pair 1, pair 2, ..., pair 1, ...
        plan.extend(p for p, c in zip(pairs, count) if c > r)
    return plan


def _spread(links: list[Link], count: int) -> list[Link]:
    """Up to ``count`` of ``links`` (in ring order) evenly spaced and node-disjoint: from
    each of ``count`` evenly spaced positions, the next link whose ends are both untouched."""
    out: list[Link] = []
    touched: set[int] = set()
    taken = np.zeros(len(links), dtype=bool)
    for start in np.linspace(0, len(links), count, endpoint=False).astype(int):
        for k in range(len(links)):
            i = (start + k) % len(links)
            a, b = links[i]
            if not taken[i] and a not in touched and b not in touched:
                out.append(links[i])
                taken[i] = True
                touched.update((a, b))
                break
    return out


def group_ring_links(instance: Instance, cross_scale: float = 1.0
                     ) -> tuple[np.ndarray, list[Ring], int]:
    """The construction of the module docstring: ``(L, rings, swaps made)``."""
    n, d = instance.n, instance.degree
    L = np.zeros((n, n), dtype=np.int64)
    rings, keys, movable = _rings(instance, L)
    if instance.regular:
        fill_free_ports(L, d)
    q = int(round(cross_scale * mp_share(instance) * n * d / 4))
    plan = _swap_plan(instance, keys, q)
    need = np.zeros(len(keys), dtype=int)
    for a, b in plan:
        need[a] += 1
        need[b] += 1
    picks = {g: _spread(movable[g], int(need[g])) for g in range(len(keys)) if need[g]}
    used = defaultdict(int)
    made = 0
    for g, h in plan:
        if used[g] >= len(picks.get(g, ())) or used[h] >= len(picks.get(h, ())):
            continue
        (a, b), (c, e) = picks[g][used[g]], picks[h][used[h]]
        used[g] += 1
        used[h] += 1
        if len({a, b, c, e}) < 4 or L[a, b] == 0 or L[c, e] == 0 or L[a, c] or L[b, e]:
            continue  # a link moved already, or the cross pair is linked: skip this swap
        for u, v, delta in ((a, b, -1), (c, e, -1), (a, c, 1), (b, e, 1)):
            L[u, v] += delta
            L[v, u] += delta
        made += 1
    if traffic_is_split(L, instance):
        connect_components(L, None if instance.regular else d)
    return L, rings, made


def solve(instance: Instance, options: SolveOptions) -> SolveResult:
    started = time.perf_counter()
    L, rings, made = group_ring_links(instance, options.method.cross_scale)
    topo = Topology(L)
    routed = route_with(instance, topo, rings, options, "shortest")
    return heuristic_result("group-rings", instance, topo, routed, options, started,
                            f"{made} cross swap(s), MP share {mp_share(instance):.3f}")


SPEC = MethodSpec(
    "group-rings", "alloc", "heuristic", "heuristic", GroupRingsParams, solve,
    "each AllReduce group's TotientPerms rings inside the group on all ports, plus cross "
    "links in proportion to the MP share of the bytes", memory=heuristic_memory)
SPEC_LP = SPEC.lp_variant().with_(
    description="group-rings' topology and rings, optimal fractional routing")
