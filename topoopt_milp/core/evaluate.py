"""The cost model of DESIGN.md section 2 and the lower bounds every result is compared with.

Communication time (fluid, bandwidth-bound)::

    load(a)  = sum over commodities c, paths P of c containing arc a:  bytes_c * fraction_P
    cap(a)   = L[i, j] * B            (bytes/s, arc a = (i, j))
    T_comm   = max_a load(a) / cap(a)  (+ max_hops * latency when the instance has a latency)

``max_link_utilization`` is the congestion ``max_a load(a) / cap(a)`` itself: the number of
seconds the busiest arc needs per iteration. For byte volumes it equals the bandwidth term of
``T_comm``; for rate demands on a fixed topology with capacities shared by both directions
(SNDlib) it is the classic utilisation ``max_links (load(i->j) + load(j->i)) / cap(i, j)``
(:func:`shared_congestion`).

:func:`objective_value` is the one definition of every objective kind a method reports
(``comm_time``, ``max_link_utilization``, ``diameter``, ``total_hops``); results and the
independent checker both recompute objectives from the returned topology and routing.

Lower bounds (no ``d``-port direct-connect topology beats them):

* ideal switch: ``T_ideal = max_i max(out_i, in_i) / (d B)``;
* Moore-type: a node has at most ``d (d-1)^(h-1)`` others at distance ``h``, so giving a
  source's largest demands its nearest slots minimises its byte-hops; summing over sources and
  dividing by the total arc capacity ``n d B`` bounds ``T_comm`` from below. (AllReduce ring
  edges are counted at one hop and take no slot, which keeps the bound valid for any ring.)
"""

from __future__ import annotations

from itertools import chain

import numpy as np

from .instance import Instance
from .topology import Routing, Topology, link_capacities

OBJECTIVE_KINDS = ("comm_time", "max_link_utilization", "diameter", "total_hops")


def arc_loads(n: int, routing: Routing) -> np.ndarray:
    """``n x n`` matrix of bytes carried by each directed arc (one pass over the paths in
    Python, the rest in numpy: routings of large instances have millions of hops)."""
    paths: list[tuple[int, ...]] = []
    weights: list[float] = []
    for c in routing.commodities:
        for path, frac in c.paths:
            if len(path) > 1:
                paths.append(path)
                weights.append(c.bytes * frac)
    if not paths:
        return np.zeros((n, n))
    lens = np.fromiter(map(len, paths), dtype=np.int64, count=len(paths))
    flat = np.fromiter(chain.from_iterable(paths), dtype=np.int64, count=int(lens.sum()))
    hop = np.ones(len(flat) - 1, dtype=bool)
    hop[np.cumsum(lens)[:-1] - 1] = False  # the step from one path's end to the next start
    w = np.repeat(np.asarray(weights), lens - 1)
    arcs = flat[:-1][hop] * n + flat[1:][hop]
    return np.bincount(arcs, weights=w, minlength=n * n).reshape(n, n)


def congestion(topology: Topology, loads: np.ndarray, link_bytes_per_s: float) -> float:
    """``max_a load(a) / cap(a)``; infinite if any load sits on an arc without a link."""
    used = np.flatnonzero(loads > 0)  # only the used arcs: no n x n capacity matrix
    if not len(used):
        return 0.0
    cap = topology.links.flat[used] * link_bytes_per_s
    if (cap <= 0).any():
        return float("inf")
    return float((loads.flat[used] / cap).max())


def max_path_hops(routing: Routing) -> int:
    return max((len(p) - 1 for c in routing.commodities for p, f in c.paths if f > 0), default=0)


def comm_time(instance: Instance, topology: Topology, routing: Routing) -> float:
    """``T_comm`` of a routing on a topology (bandwidth term plus optional latency term)."""
    loads = arc_loads(instance.n, routing)
    t = congestion(topology, loads, instance.link_bytes_per_s)
    if instance.latency_us > 0:
        t += max_path_hops(routing) * instance.latency_us * 1e-6
    return t


def shared_congestion(instance: Instance, routing: Routing) -> float:
    """``max`` over the fixed topology's links of ``(load(i->j) + load(j->i)) / capacity``
    (capacities shared by both directions); infinite if a path uses a pair without a link."""
    caps = link_capacities(instance)
    both = arc_loads(instance.n, routing)
    both = both + both.T
    worst = 0.0
    for i, j in np.argwhere(np.triu(both, 1) > 0):
        c = caps.get((int(i), int(j)), 0.0)
        if c <= 0:
            return float("inf")
        worst = max(worst, float(both[i, j]) / c)
    return worst


def total_hops(topology: Topology, routing: Routing) -> float:
    """Traffic-weighted hop distance ``sum_c bytes_c * dist(src_c, dst_c)`` (select's
    ``total_hops`` objective; the distances are the topology's, whatever the paths)."""
    dist = topology.hop_distances
    return float(sum(c.bytes * dist[c.src, c.dst] for c in routing.commodities))


def objective_value(instance: Instance, topology: Topology, routing: Routing,
                    kind: str = "comm_time") -> float:
    """The value of objective ``kind`` for a topology and routing (module docstring)."""
    if kind == "comm_time":
        return comm_time(instance, topology, routing)
    if kind == "max_link_utilization":
        if instance.topology is not None and instance.topology.shared:
            return shared_congestion(instance, routing)
        return congestion(topology, arc_loads(instance.n, routing), instance.link_bytes_per_s)
    if kind == "diameter":
        return topology.diameter()
    if kind == "total_hops":
        return total_hops(topology, routing)
    raise ValueError(f"objective_kind: unknown {kind!r} (known: {', '.join(OBJECTIVE_KINDS)})")


def iteration_time(instance: Instance, t_comm: float, overlap: bool = False) -> float:
    """Compute plus communication, or their maximum under full overlap."""
    return max(instance.compute_s, t_comm) if overlap else instance.compute_s + t_comm


def ideal_switch_time(instance: Instance, per_server_gbps: float | None = None) -> float:
    """``max_i max(out_i, in_i) / (per-server bandwidth)``; default bandwidth ``d * B``."""
    gbps = instance.degree * instance.link_gbps if per_server_gbps is None else per_server_gbps
    out, inn = instance.node_out_in_bytes()
    return float(max(out.max(), inn.max()) / (gbps * 1.25e8))


def moore_slots(n: int, d: int) -> np.ndarray:
    """Hop distance of the ``k``-th nearest other node in the best case (Moore bound):
    ``d`` nodes at 1 hop, ``d (d-1)`` at 2 hops, ... ; length ``n - 1``."""
    slots = []
    h, width = 1, d
    while len(slots) < n - 1:
        slots.extend([h] * width)
        h += 1
        width = width * (d - 1) if d > 1 else 0
        if width == 0 and len(slots) < n - 1:
            # d = 1: a matching reaches one node; the rest is unreachable in a 1-regular graph.
            slots.extend([np.inf] * (n - 1 - len(slots)))
    return np.array(slots[: n - 1], dtype=float)


def moore_lower_bound(instance: Instance) -> float:
    r"""Moore/Cerf average-distance bound on ``T_comm``, valid for every topology with the
    port budget, every routing and every AllReduce ring order.

    .. math::

        T_{comm} \ge \frac{\sum_i \sum_{k=1}^{n-1} b_{i(k)} h_k + E_{ring}}{n d B}

    where ``b_{i(k)}`` is node ``i``'s ``k``-th largest MP demand, ``h_k`` the ``k``-th entry of
    :func:`moore_slots` (``d`` slots at 1 hop, ``d (d-1)`` at 2, ``d (d-1)^2`` at 3, ...) and
    ``E_ring`` the bytes of all AllReduce ring edges.

    Proof. (i) *Distance counting* (Moore; Cerf et al., 1974, for the average distance): in a
    multigraph where every node has at most ``d`` ports, node ``i`` reaches at most ``d``
    nodes in one hop, and every node at distance ``j >= 1`` spends at least one port on a
    link towards distance ``j - 1``, so it adds at most ``d - 1`` new nodes at distance
    ``j + 1``; parallel links only reduce these counts. So at most ``d (d-1)^{h-1}`` nodes lie
    at distance ``h`` and the ``k``-th nearest node to ``i`` is at distance ``>= h_k``. (ii)
    *Byte-hops*: whatever the routing, a byte from ``i`` to ``t`` crosses at least
    ``dist(i, t)`` arcs (a fractional routing is a convex combination of paths, each at least
    that long); pairing ``i``'s distances in ascending order with its demands in descending
    order minimises ``sum_t b_it dist(i, t)`` (rearrangement inequality), which by (i) is at
    least ``sum_k b_{i(k)} h_k``. A ring edge joins two distinct servers, so its bytes cross
    at least one arc, whatever the ring order. (iii) *Capacity*: in time ``T`` arc ``(i, j)``
    carries at most ``L_ij B T`` bytes, and ``sum_{ij} L_ij <= n d``; the total byte-hops are
    therefore at most ``n d B T``, and ``T`` is at least the byte-hops over ``n d B``. (The
    latency term of the cost model only adds to ``T_comm``.)

    For uniform all-to-all traffic of ``b`` bytes per pair this is ``b (n - 1) \bar h / (d B)``
    with ``\bar h`` = the mean of :func:`moore_slots`, the Moore/Cerf lower bound on the average
    shortest-path length of a ``d``-regular graph on ``n`` nodes (the figure the Graph Golf
    competition measures its graphs against). It is attained exactly when some graph meets
    the distance counts at every node and a routing loads every arc equally (the Petersen
    graph, ``n = 10``, ``d = 3``).

    Parameters
    ----------
    instance : Instance
        The instance (its MP demands, AllReduce groups, ``n``, ``d`` and link rate).

    Returns
    -------
    float
        The bound in seconds.
    """
    n, d = instance.n, instance.degree
    slots = moore_slots(n, d)
    # each node's positive demands in descending order (the sorted dense row's leading
    # part: zeros contribute nothing), summed as the dense rows were, without n x n arrays
    byte_hops = 0.0
    if instance.mp:
        s, t, b = (np.array(col) for col in zip(*instance.mp, strict=True))
        key = s.astype(np.int64) * n + t.astype(np.int64)
        pairs, inv = np.unique(key, return_inverse=True)
        vol = np.zeros(len(pairs))
        np.add.at(vol, inv, b.astype(float))  # repeated pairs summed in file order
        src = pairs // n
        keep = vol > 0
        src, vol = src[keep], vol[keep]
        order = np.lexsort((-vol, src))
        src, vol = src[order], vol[order]
        bounds = np.searchsorted(src, np.arange(n + 1))
        for i in np.flatnonzero(np.diff(bounds)).tolist():
            row = vol[bounds[i]:bounds[i + 1]]
            byte_hops += float((row * slots[:len(row)]).sum())
    byte_hops += instance.allreduce_bytes()  # ring edges: at least one hop each
    return byte_hops / (n * d * instance.link_bytes_per_s)


def lower_bound(instance: Instance) -> float:
    """The best of the analytic lower bounds."""
    return max(ideal_switch_time(instance), moore_lower_bound(instance))


def unroutable(instance: Instance) -> str | None:
    """Why no topology under the instance's port budget routes all its traffic (``None``:
    some topology does). The proof behind each answer:

    * ``d >= 2`` (so ``n >= 3``): the ring ``0 - 1 - ... - (n-1) - 0`` connects every server
      with 2 ports each; the other ``d - 2`` ports fill up with parallel ring links (and, for
      odd ``d``, which a regular instance allows only for even ``n``, one perfect matching), so
      a connected topology exists and every demand has a path.
    * ``d = 1``: every topology is a matching, whose components have at most 2 servers. Servers
      joined by traffic (a positive MP demand, or membership in an AllReduce group with a
      positive volume) must share a component; a traffic component of 3 or more servers is
      therefore unroutable on every topology, and one of at most 2 is routed by linking them.

    This holds for every family (select's circulants and a fixed topology are special cases of
    "a topology under the port budget"), so any method may report ``infeasible`` on it."""
    if instance.degree >= 2:
        return None
    parent = list(range(instance.n))

    def root(v: int) -> int:
        while parent[v] != v:
            parent[v] = parent[parent[v]]
            v = parent[v]
        return v

    pairs = [(s, t) for s, t, b in instance.mp if b > 0]
    pairs += [(g.members[0], m) for g in instance.allreduce if g.bytes > 0 for m in g.members[1:]]
    members: dict[int, set[int]] = {}
    for s, t in pairs:
        a, b = root(s), root(t)
        parent[b] = a
        group = members.setdefault(a, {a}) | members.pop(b, {b}) | {s, t}
        members[a] = group
        if len(group) >= 3:
            some = ", ".join(map(str, sorted(group)[:3]))
            return (f"infeasible: with degree 1 every topology is a matching, but servers "
                    f"{some} exchange traffic and no matching connects three servers")
    return None


def avg_hops(routing: Routing) -> float:
    """Traffic-weighted mean routed path length in hops."""
    total = sum(c.bytes for c in routing.commodities)
    if total == 0:
        return 0.0
    hop_bytes = sum(c.bytes * f * (len(p) - 1) for c in routing.commodities for p, f in c.paths)
    return hop_bytes / total


def evaluate(instance: Instance, topology: Topology, routing: Routing) -> dict[str, float]:
    """All metrics of a (topology, routing) pair on an instance, as stored in solution files."""
    loads = arc_loads(instance.n, routing)
    t_comm = congestion(topology, loads, instance.link_bytes_per_s)
    shared = instance.topology is not None and instance.topology.shared
    congest = shared_congestion(instance, routing) if shared else t_comm
    if instance.latency_us > 0:
        t_comm += max_path_hops(routing) * instance.latency_us * 1e-6
    ideal = ideal_switch_time(instance)
    return {
        "comm_time_s": t_comm,
        "iteration_time_s": iteration_time(instance, t_comm),
        "max_link_utilization": congest,
        "diameter": topology.diameter(),
        "avg_hops": avg_hops(routing),
        "ideal_switch_time_s": ideal,
        "moore_bound_s": moore_lower_bound(instance),
        "lower_bound_s": lower_bound(instance),
        "slowdown_vs_ideal": t_comm / ideal if ideal > 0 else float("nan"),
        "ports_used_max": int(topology.degrees().max()),
    }
