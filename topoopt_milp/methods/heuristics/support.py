"""Building blocks shared by the topology heuristics: port filling, connectivity repair,
circulant detection, routing selection and the :class:`SolveResult` of a heuristic.

Port filling (:func:`fill_free_ports`)
    A regular instance needs every port used. Free ports are paired greedily: the node with
    the most free ports is linked to another node with free ports, preferring a node it is not
    yet adjacent to (a new neighbour adds path diversity; a parallel link only adds capacity).
    When a single node ``u`` is left with ``f >= 2`` free ports, a link ``(a, b)`` not touching
    ``u`` is replaced by ``(u, a), (u, b)``: ``a`` and ``b`` keep their degree and ``u`` gains
    two. Since ``n d`` is even for a regular instance, this always ends with every port used.

Connectivity repair (:func:`connect_components`)
    Two components ``X`` and ``Y`` are merged by a degree-preserving 2-swap: remove ``(a, b)``
    from ``X`` and ``(c, e)`` from ``Y``, add ``(a, c)`` and ``(b, e)``. If ``(a, b)`` is not a
    bridge of ``X`` the result is connected (``a`` and ``b`` stay joined inside ``X``, and ``Y``
    hangs off both). Every component of a graph with minimum degree 2 has a cycle, hence a
    non-bridge edge; a parallel link is never a bridge. Many components are joined at once by
    the cyclic version of this swap.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

import networkx as nx
import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import connected_components

from ...core.instance import Instance
from ...core.params import Params, SolveOptions, knob
from ...core.result import SolveResult
from ...core.routing import RoutingError, check_reachable, route
from ...core.sizes import dense_estimate
from ...core.topology import Ring, Routing, Topology, commodities_for
from .. import result_step as certify

log = logging.getLogger(__name__)

ROUTINGS = ("shortest", "ecmp", "coin-change", "lp")


@dataclass(frozen=True)
class RoutingParams(Params):
    """Heuristics: how the built topology is routed."""

    routing: str | None = knob(
        None, "Routing on the chosen topology: shortest (random ties, seeded), ecmp, coin-change "
        "(circulants), lp (optimal fractional routing, route-milp, with the method's own rings); "
        "default: the method's own.", choices=ROUTINGS)


def heuristic_memory(instance: Instance, options: SolveOptions):
    """The memory estimate of a heuristic (:func:`topoopt_milp.core.sizes.dense_estimate`)."""
    return dense_estimate(instance)


# -- ports --------------------------------------------------------------------------------
def fill_free_ports(links: np.ndarray, degree: int) -> np.ndarray:
    """Use every free port of ``links`` (in place and returned); see the module docstring.

    Raises ``ValueError`` when the free ports cannot all be paired (odd total, or a single
    node with free ports and no link elsewhere to split)."""
    L = links
    free = degree - L.sum(axis=1)
    if (free < 0).any():
        v = int(np.flatnonzero(free < 0)[0])
        raise ValueError(f"degree: node {v} already uses {int(L[v].sum())} > {degree} ports")
    if free.sum() % 2:
        raise ValueError("degree: an odd number of free ports cannot be paired into links")
    while free.sum() > 0:
        have = np.flatnonzero(free > 0)
        u = int(have[np.argmax(free[have])])
        others = have[have != u]
        if len(others):
            fresh = others[L[u, others] == 0]
            pool = fresh if len(fresh) else others
            v = int(pool[np.argmax(free[pool])])
            L[u, v] += 1
            L[v, u] += 1
            free[u] -= 1
            free[v] -= 1
            continue
        # u alone has (an even number >= 2 of) free ports: split a link (a, b) elsewhere.
        a, b = _splittable_link(L, u)
        L[a, b] -= 1
        L[b, a] -= 1
        for w in (a, b):
            L[u, w] += 1
            L[w, u] += 1
        free[u] -= 2
    return L


def _splittable_link(L: np.ndarray, u: int) -> tuple[int, int]:
    mask = np.triu(L > 0, 1)
    mask[u, :] = False
    mask[:, u] = False
    a_idx, b_idx = np.nonzero(mask)
    if not len(a_idx):
        raise ValueError(f"degree: node {u} has free ports and there is no link to split")
    # Prefer splitting a parallel link, then one whose ends are not yet neighbours of u.
    score = (L[a_idx, b_idx] > 1) * 4 + (L[u, a_idx] == 0) * 2 + (L[u, b_idx] == 0)
    k = int(np.argmax(score))
    return int(a_idx[k]), int(b_idx[k])


def components(links: np.ndarray) -> np.ndarray:
    """Component label of every node."""
    _, labels = connected_components(csr_matrix(links > 0), directed=False)
    return labels


def traffic_is_split(links: np.ndarray, instance: Instance) -> bool:
    """True when some MP demand or AllReduce group spans two components of ``links``."""
    labels = components(links)
    if any(b > 0 and labels[s] != labels[t] for s, t, b in instance.mp):
        return True
    return any(
        g.bytes > 0 and len({int(labels[m]) for m in g.members}) > 1 for g in instance.allreduce
    )


def connect_components(links: np.ndarray, degree: int | None = None) -> np.ndarray:
    """Merge all components (in place and returned), preserving every node's degree unless
    free ports are used.

    * With ``degree`` given (non-regular instances), free ports go first: components with a
      free port are linked pairwise; a component with two free ports and none elsewhere is
      spliced into a non-bridge link ``(a, b)`` of another (remove ``(a, b)``, add
      ``(u1, a), (u2, b)``).
    * Otherwise one cyclic swap joins all components at once: take a non-bridge link
      ``(a_i, b_i)`` of every component ``C_1..C_m`` (of at most one component whose links
      are all bridges, any link), remove them and add ``(b_i, a_{i+1 mod m})``. Each
      ``C_i`` stays connected without its link, and the new links chain all of them; with
      one bridge component the chain is a path, still connected. For ``m = 2`` this is the
      2-swap of the module docstring.

    Components that cannot be merged this way (only bridges, or a node without links and no
    free ports) are left alone and logged; routing then reports any unreachable demand."""
    L = links
    while True:
        labels = components(L)
        comps = [np.flatnonzero(labels == c) for c in range(labels.max() + 1)]
        if len(comps) <= 1:
            return L
        if degree is not None and _join_over_free_ports(L, comps, degree):
            continue
        chosen: list[tuple[int, int]] = []
        bridge_used = False
        for comp in sorted(comps, key=len, reverse=True):
            e = _non_bridge_link(L, comp)
            if e is None and not bridge_used:
                e = _any_link(L, comp)
                bridge_used = e is not None
            if e is not None:
                chosen.append(e)
        if len(chosen) < 2:
            log.warning("connect_components: %d components cannot be merged by swaps", len(comps))
            return L
        m = len(chosen)
        for k, (a, b) in enumerate(chosen):
            c = chosen[(k + 1) % m][0]
            for p, q, delta in ((a, b, -1), (b, c, 1)):
                L[p, q] += delta
                L[q, p] += delta
        if len(chosen) == len(comps):
            return L  # all joined in one cycle (or path)


def _free_slots(L: np.ndarray, nodes: np.ndarray, degree: int) -> list[int]:
    free = degree - L[nodes].sum(axis=1)
    return [int(v) for v, f in zip(nodes, free) for _ in range(max(int(f), 0))]


def _join_over_free_ports(L: np.ndarray, comps: list[np.ndarray], degree: int) -> bool:
    """One round of free-port joins (see :func:`connect_components`); False if none applies."""
    slots = [_free_slots(L, c, degree) for c in comps]
    open_ = [k for k, sl in enumerate(slots) if sl]
    edits: list[tuple[int, int, int]] = []
    if len(open_) >= 2:
        for k1, k2 in zip(open_[::2], open_[1::2]):
            edits.append((slots[k1][0], slots[k2][0], 1))
    else:
        for k in open_:
            if len(slots[k]) < 2:
                continue
            for other in range(len(comps)):
                if other != k and (e := _non_bridge_link(L, comps[other])) is not None:
                    (a, b), (u1, u2) = e, slots[k][:2]
                    edits = [(a, b, -1), (u1, a, 1), (u2, b, 1)]
                    break
            if edits:
                break
    for p, q, delta in edits:
        L[p, q] += delta
        L[q, p] += delta
    return bool(edits)


def _any_link(L: np.ndarray, nodes: np.ndarray) -> tuple[int, int] | None:
    sub = L[np.ix_(nodes, nodes)]
    i, j = np.nonzero(np.triu(sub, 1))
    return (int(nodes[i[0]]), int(nodes[j[0]])) if len(i) else None


def _non_bridge_link(L: np.ndarray, nodes: np.ndarray) -> tuple[int, int] | None:
    sub = L[np.ix_(nodes, nodes)]
    i, j = np.nonzero(np.triu(sub, 1))
    if not len(i):
        return None
    multi = np.flatnonzero(sub[i, j] > 1)
    if len(multi):
        return int(nodes[i[multi[0]]]), int(nodes[j[multi[0]]])
    g = nx.Graph()
    g.add_edges_from(zip(i.tolist(), j.tolist()))
    bridges = {frozenset(e) for e in nx.bridges(g)}
    for a, b in zip(i.tolist(), j.tolist()):
        if frozenset((a, b)) not in bridges:
            return int(nodes[a]), int(nodes[b])
    return None


# -- routing and results -------------------------------------------------------------------
class Routed(NamedTuple):
    """What :func:`route_with` returns: the ``routing`` (``None`` when the topology cannot
    carry the traffic, ``failure`` then says why) and, for ``"lp"``, the route LP's result."""

    routing: Routing | None
    lp: SolveResult | None = None
    failure: str = ""


def route_with(
    instance: Instance,
    topology: Topology,
    rings: Sequence[Ring],
    options: SolveOptions,
    default: str,
) -> Routed:
    """Route with the ``routing`` parameter if set, else the method's ``default``.

    ``"lp"`` solves ``route-milp`` (handed in as ``options.run_method``) on this topology
    with the heuristic's own ring orders and shares (the instance with this fixed topology and
    these rings), with the caller's solver parameters: the optimal fractional routing for
    this topology and these rings. A topology
    that cannot carry the traffic (disconnected, or not circulant for coin-change) gives a
    :class:`Routed` without routing, not an exception."""
    method = options.method.routing or default
    try:
        if method != "lp":
            return Routed(route(instance, topology, rings, method, options.seed))
        check_reachable(topology, commodities_for(instance, rings))
        if options.run_method is None:
            raise RoutingError("routing: lp needs the route LP, which the registry hands in "
                               "(options.run_method); solve through topoopt_milp.solve")
        fixed = instance.with_topology(topology.links, rings)
        res = options.run_method(fixed, "route-milp", options.solver.to_dict(), options.seed)
        if res.routing is None:
            raise RoutingError(f"routing: route-milp returned no routing (status "
                               f"{res.status.value}: {res.message})")
        return Routed(res.routing, res)
    except RoutingError as exc:
        return Routed(None, failure=str(exc))


def default_routing(topology: Topology) -> str:
    """Coin-change on circulant topologies, shortest path otherwise."""
    return "coin-change" if topology.jumps else "shortest"


def heuristic_result(
    method: str,
    instance: Instance,
    topology: Topology,
    routed: Routed,
    options: SolveOptions,
    started: float,
    message: str = "",
) -> SolveResult:
    """A FEASIBLE result whose objective is the routing's communication time (without a
    routing: infeasible or no solution, :func:`~topoopt_milp.methods.result_step.unrouted`);
    ``runtime_s`` runs from ``started`` (a ``time.perf_counter()`` value) to the end of
    routing. ``routed`` is what :func:`route_with` returned."""
    if routed.routing is None:
        return certify.unrouted(method, instance, options, time.perf_counter() - started,
                                routed.failure, message)
    return certify.heuristic(method, instance, options, topology, routed.routing,
                             time.perf_counter() - started, message, routed.lp)
