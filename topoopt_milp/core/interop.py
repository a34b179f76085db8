"""Exports for other tools: the topology as a GraphML multigraph, the routing as CSV.

Both start from a ``topoopt-solution/1`` object (:func:`~topoopt_milp.core.result.solution_dict`,
or a solution file read with :func:`~topoopt_milp.core.result.read_solution`) and optionally its
instance, which adds the port budget and link rate. (Models go out as MPS/LP through
:func:`topoopt_milp.core.backends.pulp_backend.write_model`.)

GraphML (:func:`solution_multigraph`, :func:`write_graphml`; ``topoopt-graphml/1``)
    An undirected :class:`networkx.MultiGraph` with nodes ``0 .. n-1`` and **one edge per
    duplex link**: ``L[i][j]`` parallel edges join ``i`` and ``j``, so ``G.degree(v)`` is the
    number of ports in use at ``v`` (``d`` everywhere on a regular instance) and
    ``G.number_of_edges()`` the number of links. Read it back with
    ``networkx.read_graphml(path, node_type=int, force_multigraph=True)``.

    Graph data: ``format``, ``n``, ``links``, ``instance_name``, ``instance_hash``,
    ``method``, ``status``, ``comm_time_s`` (the solution's objective), ``bound_s`` (when the
    solution has one), ``jumps`` (space-separated, ``""`` when not circulant); with the
    instance also ``degree`` (``d``), ``link_gbps`` (per link and direction) and ``regular``.

    Edge data (per link; the load of arc ``i -> j`` is shared evenly by its parallel links,
    as the fluid cost model pools their capacity): ``lo``, ``hi`` (the endpoints,
    ``lo < hi``), ``load_lo_hi_bytes`` and ``load_hi_lo_bytes`` (bytes per iteration this link
    carries in each direction, 0 without a routing); with the instance also ``busy_s``, the
    larger of the two divided by the link rate. The largest ``busy_s`` is the bandwidth term
    of ``T_comm``.

Edge list (:func:`write_edgelist`)
    One line ``i j count`` per linked pair ``i < j`` (``networkx.read_edgelist(path,
    nodetype=int, data=[("count", int)])`` reads it).

Routing CSV (:func:`routing_rows`, :func:`write_routing_csv`)
    A header line and one row per (commodity, path)::

        commodity,kind,tag,src,dst,bytes,fraction,path
        0,mp,0,0,3,5e+07,0.5,0 1 3

    ``commodity`` indexes ``routing.commodities`` of the solution; ``kind`` is ``mp`` (``tag``
    = the MP demand's index in the instance) or ``ar`` (an AllReduce ring edge; ``tag`` = the
    group's index); ``bytes`` is the commodity's volume per iteration, ``fraction`` the share
    on this path (a commodity's fractions sum to 1), ``path`` the nodes from ``src`` to
    ``dst`` separated by spaces. ``bytes * fraction`` summed over the rows crossing an arc is
    that arc's load. Any CSV reader works (``csv.DictReader``, ``pandas.read_csv``). Ring
    orders and shares stay in the solution file (``routing.rings``).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from pathlib import Path

import networkx as nx
import numpy as np

from .evaluate import arc_loads
from .instance import Instance
from .outfile import write_text
from .result import SolutionError
from .topology import Routing, Topology

GRAPHML_FORMAT = "topoopt-graphml/1"
ROUTING_COLUMNS = ("commodity", "kind", "tag", "src", "dst", "bytes", "fraction", "path")


def _topology(solution: dict) -> Topology:
    t = solution.get("topology")
    if t is None:
        raise SolutionError(f"topology: the solution holds none (status {solution.get('status')})")
    try:
        return Topology.from_link_list(int(t["n"]), t["links"], t.get("jumps"))
    except ValueError as exc:  # a node out of range, a self-loop, a negative count
        raise SolutionError(f"topology.{exc}") from None


def _routing(solution: dict, n: int | None = None) -> Routing | None:
    """The solution's routing; with ``n``, every path node must be a server ``0 .. n-1``
    (the loads are an ``n x n`` array)."""
    r = solution.get("routing")
    if r is None:
        return None
    routing = Routing.from_dict(r)
    for k, c in enumerate(routing.commodities):
        # a negative volume or fraction would write negative loads (the checker refuses both)
        if c.bytes < 0:
            raise SolutionError(f"routing.commodities[{k}].bytes: negative volume {c.bytes}")
        for q, (_, fraction) in enumerate(c.paths):
            if fraction < -1e-12:  # the checker's tolerance (core/check.py ABS_TOL)
                raise SolutionError(f"routing.commodities[{k}].paths[{q}].fraction: negative "
                                    f"fraction {fraction}")
    for k, c in enumerate(routing.commodities if n is not None else ()):
        for q, (path, _) in enumerate(c.paths):
            if any(not 0 <= v < n for v in path):
                raise SolutionError(f"routing.commodities[{k}].paths[{q}]: a node is out of "
                                    f"range 0..{n - 1}")
    return routing


def _check_instance(solution: dict, instance: Instance) -> None:
    want = solution.get("instance", {}).get("hash")
    if want != instance.content_hash():
        raise SolutionError(f"instance: the solution was solved on instance hash {want}, not on "
                            f"{instance.name!r} ({instance.content_hash()})")


def solution_multigraph(solution: dict, instance: Instance | None = None) -> nx.MultiGraph:
    """The solution's topology as a multigraph, one edge per link (see the module docstring)."""
    topo = _topology(solution)
    n = topo.n
    routing = _routing(solution, n)
    loads = arc_loads(n, routing) if routing is not None else np.zeros((n, n))
    g = nx.MultiGraph()
    meta = {
        "format": GRAPHML_FORMAT,
        "n": n,
        "links": int(topo.links.sum() // 2),
        "instance_name": solution.get("instance", {}).get("name", ""),
        "instance_hash": solution.get("instance", {}).get("hash", ""),
        "method": solution.get("method", ""),
        "status": solution.get("status", ""),
        "comm_time_s": solution.get("objective"),
        "bound_s": solution.get("bound"),
        "jumps": " ".join(str(p) for p in topo.jumps or ()),
    }
    rate = None
    if instance is not None:
        _check_instance(solution, instance)
        if instance.n != n:
            raise SolutionError(f"topology: has n = {n}, the instance has {instance.n}")
        rate = instance.link_bytes_per_s
        meta.update(degree=instance.degree, link_gbps=instance.link_gbps,
                    regular=instance.regular)
    g.graph.update({k: v for k, v in meta.items() if v is not None})  # GraphML has no null
    g.add_nodes_from(range(n))
    for i, j, count in topo.link_list():
        fwd, back = float(loads[i, j]) / count, float(loads[j, i]) / count
        data = {"lo": i, "hi": j, "load_lo_hi_bytes": fwd, "load_hi_lo_bytes": back}
        if rate is not None:
            data["busy_s"] = max(fwd, back) / rate
        for _ in range(count):
            g.add_edge(i, j, **data)
    return g


def write_graphml(path: str | Path, solution: dict, instance: Instance | None = None) -> nx.MultiGraph:
    """Write :func:`solution_multigraph` to ``path``; returns the graph written."""
    g = solution_multigraph(solution, instance)
    write_text(path, "\n".join(nx.generate_graphml(g)) + "\n")
    return g


def write_edgelist(path: str | Path, solution: dict) -> int:
    """Write ``i j count`` lines (module docstring); returns the number of links."""
    topo = _topology(solution)
    rows = topo.link_list()
    write_text(path, "".join(f"{i} {j} {c}\n" for i, j, c in rows))
    return sum(c for _, _, c in rows)


def routing_rows(routing: Routing) -> Iterator[tuple]:
    """Rows of the routing CSV (without the header), in :data:`ROUTING_COLUMNS` order."""
    for k, c in enumerate(routing.commodities):
        for path, fraction in c.paths:
            yield (k, c.kind, c.tag, c.src, c.dst, repr(float(c.bytes)), repr(float(fraction)),
                   " ".join(str(v) for v in path))


def write_routing_csv(path: str | Path, solution: dict) -> int:
    """Write the solution's routing as CSV (module docstring); returns the number of rows."""
    routing = _routing(solution)
    if routing is None:
        raise SolutionError(f"routing: the solution holds none (status {solution.get('status')})")
    rows = 0
    f = io.StringIO(newline="")
    w = csv.writer(f)
    w.writerow(ROUTING_COLUMNS)
    for row in routing_rows(routing):
        w.writerow(row)
        rows += 1
    write_text(path, f.getvalue())
    return rows
