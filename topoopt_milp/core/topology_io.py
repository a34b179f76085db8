"""Topologies in: a solution file, an edge list, GraphML, or a networkx graph.

:func:`read_topology` is the one loader behind ``--topology FILE`` (``solve``, ``certify``)
and ``evaluate INSTANCE FILE``; :func:`topology_from_graph` does the same for a graph built in
Python. The formats (:data:`FORMATS`; detected by suffix, :func:`topology_format`, or named):

``json`` -- a ``topoopt-solution/1`` file, with or without a routing
    Read strictly (:func:`~topoopt_milp.core.result.read_solution`); it must name the
    instance it was solved on (its content hash, or the base hash of a fixed-topology
    instance). With a routing (``routing.commodities``) the independent checker checks all of
    it (:func:`~topoopt_milp.core.check.check_solution`); without one (``routing`` null, or
    ``routing`` holding only ``rings``) only the topology, the rings if any and the recorded
    constraints (:func:`~topoopt_milp.core.check.check_topology`).
``edgelist`` -- ``i j [count]`` lines (``.edgelist``, ``.edges``)
    What ``export --format edgelist`` writes: one line per linked pair with its link count.
    ``count`` may be left out (one link; ``networkx.write_edgelist(g, path, data=False)``
    writes one line per edge, parallel edges repeated) or given as networkx's data dict
    (``0 1 {'count': 2}``; other keys are ignored). Lines ``i j`` and ``j i`` are the same
    pair and add up; ``#`` starts a comment.
``graphml`` -- an undirected (multi)graph, one edge per link (``.graphml``)
    What ``export`` writes (:func:`~topoopt_milp.core.interop.write_graphml`); node ids are
    the integers ``0 .. n-1``; an edge with an integer ``count`` attribute stands for that
    many links. A directed graph is refused (links are duplex).

In every format the topology is checked against the instance before anything is built from
it, and refused (:class:`TopologyFileError`, an input error: one line naming the file and the
line or edge, exit code 2) when a link is a self-loop, names a node outside ``0 .. n-1``, has
a count that is not a positive integer, or gives a node more links than its ``d`` ports; on a
regular instance every node must use exactly ``d`` ports. A topology file is read only if it
is a regular file (:func:`~topoopt_milp.core.files.read_input`) of a size an instance of this
``n`` and ``d`` can need.

On a network with shared capacities (an SNDlib instance, ``topology.shared``) the file picks
which of the network's links are used, each at the network's capacity
(:func:`fix_topology`): a link the network does not have, or more than one link on a pair,
is refused by name -- the capacities are the problem's, not the file's.
"""

from __future__ import annotations

import ast
import io
import operator
import re
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .check import check_solution, check_topology
from .errors import InputError
from .files import read_input
from .instance import FixedTopology, Instance
from .result import SolutionError, SolveResult, read_solution, result_from_solution
from .topology import Ring, Topology

FORMATS = ("json", "edgelist", "graphml")
SUFFIXES = {".json": "json", ".edgelist": "edgelist", ".edges": "edgelist",
            ".graphml": "graphml"}
MAX_LINE = 1000  # characters of one edge-list line (a networkx data dict included)
_INT = re.compile(r"[+-]?\d{1,18}")


class TopologyFileError(SolutionError):
    """A topology file that cannot be used on the instance; the message names the file and
    the line or edge."""


@dataclass(frozen=True)
class TopologyFile:
    """What :func:`read_topology` found: the ``topology``, the AllReduce ``rings`` the file
    gives (``None``: none), the instance it was checked against (``solved_on``: for a
    solution file, the instance or its base whose hash the file records) and, for a solution
    file with a routing, the full ``result``."""

    path: str
    format: str
    topology: Topology
    rings: tuple[Ring, ...] | None
    solved_on: Instance
    result: SolveResult | None = None

    def describe(self) -> str:
        links = int(self.topology.links.sum()) // 2
        rings = "" if not self.rings else f", {len(self.rings)} AllReduce rings"
        return f"{self.path} ({self.format}): n = {self.topology.n}, {links} links{rings}"


def topology_format(path: str | Path, fmt: str | None = None) -> str:
    """The format of topology file ``path``: ``fmt`` when given, else by suffix (``.json``,
    ``.edgelist`` / ``.edges``, ``.graphml``; any other suffix: ``json``)."""
    if fmt is not None:
        if fmt not in FORMATS:
            raise InputError(f"--topology-format: {fmt!r} is not one of {', '.join(FORMATS)}")
        return fmt
    return SUFFIXES.get(Path(path).suffix.lower(), "json")


def has_routing(solution: dict) -> bool:
    """Whether a solution object has a routing to check (``routing.commodities``), not just
    a topology (and perhaps its rings)."""
    routing = solution.get("routing")
    return isinstance(routing, dict) and "commodities" in routing


def solved_on(data: dict, instance: Instance, path: str, instance_path: str = "INSTANCE",
              what: str = "") -> Instance:
    """The instance (``instance``, or it without its fixed topology) whose content hash the
    solution ``data`` records; a :class:`SolutionError` naming the file when it records
    neither."""
    prefix = f"{what}: {path}" if what else str(path)
    ref = data["instance"]
    if ref.get("hash") is None:
        raise SolutionError(f"{prefix}: instance.hash: required field is missing (the solution "
                            "must name the instance it was solved on)")
    candidates = [instance] if instance.topology is None else [instance,
                                                                instance.without_topology()]
    for inst in candidates:
        if inst.content_hash() in (ref.get("hash"), ref.get("base_hash")):
            return inst
    raise SolutionError(f"{prefix}: instance.hash: was solved on instance hash {ref['hash']}, "
                        f"not on {instance_path} ({instance.content_hash()})")


def accept_solution(data: dict, instance: Instance, path: str, what: str = "",
                    instance_path: str = "INSTANCE", topology_only: bool = False) -> Instance:
    """Refuse (:class:`SolutionError`) solution ``data`` unless it is of ``instance``'s size,
    was solved on it and passes the independent checker -- all of it, or with
    ``topology_only`` and no routing in the file, its topology, rings and constraints.
    Returns the instance it was solved on."""
    prefix = f"{what}: {path}" if what else str(path)
    topo = data.get("topology")
    if topo is not None and topo["n"] != instance.n:
        raise SolutionError(f"{prefix}: topology.n: the topology has n = {topo['n']}, "
                            f"the instance {instance.n}")
    inst = solved_on(data, instance, path, instance_path, what)
    if topology_only and topo is not None and not has_routing(data):
        problems = check_topology(inst.to_dict(), data)
    else:
        problems = check_solution(inst.to_dict(), data)
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise SolutionError(f"{prefix} fails the independent check: {problems[0]}{more}")
    return inst


def read_topology(path: str | Path, instance: Instance, fmt: str | None = None, *,
                  what: str = "", instance_path: str = "INSTANCE") -> TopologyFile:
    """Read and check the topology file ``path`` for ``instance`` (module docstring).

    Parameters
    ----------
    path : str or Path
        A solution file (with or without a routing), an edge list or a GraphML file.
    instance : Instance
        The instance the topology is for: its ``n`` and port budget ``d`` (regular or not).
    fmt : {"json", "edgelist", "graphml"}, optional
        The format; default from the suffix (:func:`topology_format`).
    what : str
        The option that named the file (``"--topology"``), put before the file in errors.

    Returns
    -------
    TopologyFile

    Raises
    ------
    TopologyFileError, SolutionError
        One line naming the file and the line, edge or field at fault.
    """
    fmt = topology_format(path, fmt)
    shown = f"{what}: {path}" if what else str(path)
    if fmt == "json":
        data = read_solution(path)
        inst = accept_solution(data, instance, str(path), what, instance_path, topology_only=True)
        if data.get("topology") is None:
            raise TopologyFileError(f"{shown}: holds no topology (status {data.get('status')})")
        try:
            res = result_from_solution(data)
        except SolutionError as exc:
            raise SolutionError(f"{shown}: {exc}") from None
        rings = res.routing.rings if res.routing is not None and res.routing.rings else None
        return TopologyFile(str(path), fmt, res.topology, rings, inst,
                            res if has_routing(data) else None)
    base = instance.without_topology()
    limit = 100_000 + 2_000 * instance.n * max(1, instance.degree)
    raw = read_input(path, TopologyFileError, max_bytes=limit, shown=shown)
    pairs = _edgelist_pairs(raw, shown) if fmt == "edgelist" else _graph_pairs(
        _graphml(raw, shown), shown, base.n)
    return TopologyFile(str(path), fmt, _build(pairs, base, shown), None, base)


def fix_topology(instance: Instance, links: np.ndarray, rings=None,
                 shown: str = "--topology") -> Instance:
    """``instance`` with the topology ``links`` (link counts) and ``rings`` fixed.

    On an instance with shared capacities (``instance.topology.shared``, SNDlib) the links
    keep the network's capacities (a count of 1 uses the network's link of that pair), so
    the problem stays the instance's; a :class:`TopologyFileError` naming ``shown`` and the
    pair refuses a link the network does not have or a count above 1."""
    top = instance.topology
    if top is None or not top.shared:
        return instance.with_topology(links, rings)
    caps = {(i, j): c for i, j, c in top.links}
    L = np.asarray(links)
    kept = []
    for i, j in zip(*np.nonzero(np.triu(L)), strict=True):
        a, b = int(i), int(j)
        if (a, b) not in caps:
            raise TopologyFileError(f"{shown}: link {a}-{b} is not a link of the instance's "
                                    "network (its capacities are shared: only its own links "
                                    "can be used)")
        if L[a, b] > 1:
            raise TopologyFileError(f"{shown}: link {a}-{b}: {int(L[a, b])} links, but the "
                                    f"network has one link of capacity {caps[a, b]:g} there")
        kept.append((a, b, caps[a, b]))
    fixed = FixedTopology(tuple(kept), shared=True, rings=None if rings is None else tuple(
        (int(r.group), tuple(int(v) for v in r.order), float(r.share)) for r in rings))
    return Instance.from_dict({**instance.to_dict(), "topology": fixed.to_dict()})


def topology_from_graph(graph: Any, instance: Instance, where: str = "graph") -> Topology:
    """The topology of a networkx graph (``Graph`` or ``MultiGraph``: one edge per link; an
    integer ``count`` edge attribute stands for that many links), checked for ``instance``
    exactly as a file is (module docstring); a :class:`TopologyFileError` naming ``where``
    and the edge otherwise."""
    if getattr(graph, "is_directed", lambda: False)():
        raise TopologyFileError(f"{where}: a directed graph; links are duplex: give an "
                                "undirected graph (networkx Graph or MultiGraph)")
    return _build(_graph_pairs(graph, where, instance.n), instance.without_topology(), where)


# -- formats ---------------------------------------------------------------------------------
Pair = tuple[str, Any, Any, Any]  # (where in the file, node, node, link count)


def _edgelist_pairs(raw: bytes, shown: str) -> Iterator[Pair]:
    try:
        text = raw.decode("utf-8-sig")  # a byte order mark (Windows editors) is not a node
    except UnicodeDecodeError as exc:
        raise TopologyFileError(f"{shown}: not UTF-8 text (byte {exc.start})") from None
    for lineno, line in enumerate(text.splitlines(), 1):
        where = f"line {lineno}"
        if len(line) > MAX_LINE:
            raise TopologyFileError(f"{shown}: {where}: longer than {MAX_LINE} characters")
        body = line.split("#", 1)[0].strip()
        if not body:
            continue
        parts = body.split(None, 2)
        if len(parts) < 2:
            raise TopologyFileError(f"{shown}: {where}: expected 'i j [count]', got {body!r}")
        count: Any = 1
        if len(parts) == 3:
            rest = parts[2].strip()
            if rest.startswith("{"):
                count = _data_count(rest, shown, where)
            elif _INT.fullmatch(rest):
                count = int(rest)
            else:
                raise TopologyFileError(f"{shown}: {where}: expected 'i j [count]', the count "
                                        f"{rest[:20]!r} is not an integer")
        yield where, parts[0], parts[1], count


def _data_count(text: str, shown: str, where: str) -> Any:
    """The ``count`` of a networkx edge-data dict (``{'count': 2}``; 1 without one)."""
    try:
        data = ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        raise TopologyFileError(f"{shown}: {where}: the edge data {text[:20]!r} is not a "
                                "dict") from None
    if not isinstance(data, dict):
        raise TopologyFileError(f"{shown}: {where}: the edge data {text[:20]!r} is not a dict")
    return data.get("count", 1)


def _graphml(raw: bytes, shown: str) -> Any:
    import networkx as nx

    try:
        g = nx.read_graphml(io.BytesIO(raw))
    except Exception as exc:  # noqa: BLE001 - any parse failure of a user file is an input error
        reason = str(exc).splitlines()[0][:80] if str(exc) else type(exc).__name__
        raise TopologyFileError(f"{shown}: not a GraphML file ({reason})") from None
    if g.is_directed():
        raise TopologyFileError(f"{shown}: a directed graph; links are duplex: write it "
                                "undirected (edgedefault=\"undirected\")")
    return g


def _graph_pairs(graph: Any, shown: str, n: int) -> Iterator[Pair]:
    for v in graph.nodes:
        _node(v, shown, "graph nodes", n)  # unknown nodes are refused even without edges
    multi = graph.is_multigraph()
    edges = graph.edges(keys=True, data=True) if multi else graph.edges(data=True)
    for e in edges:
        u, v, data = e[0], e[1], e[-1]
        count = data.get("count", 1) if isinstance(data, dict) else 1
        yield f"edge {u}-{v}", u, v, count


# -- the checks every format shares ----------------------------------------------------------
def _node(x: Any, shown: str, where: str, n: int | None) -> int:
    """Node id ``x`` as an integer (``n``: also in range ``0 .. n-1``)."""
    value = None
    if isinstance(x, str) and _INT.fullmatch(x.strip()):
        value = int(x)
    elif not isinstance(x, bool | float | str):
        try:
            value = operator.index(x)
        except TypeError:
            value = None
    if value is None:
        raise TopologyFileError(f"{shown}: {where}: node {str(x)[:20]!r} is not an integer "
                                "node id")
    if n is not None and not 0 <= value < n:
        raise TopologyFileError(f"{shown}: {where}: unknown node {value} (the instance has "
                                f"nodes 0..{n - 1})")
    return value


def _index(x: Any) -> int | None:
    try:
        return operator.index(x)
    except TypeError:
        return None


def _build(pairs: Iterable[Pair], instance: Instance, shown: str) -> Topology:
    """The link matrix of ``pairs``, refusing self-loops, unknown nodes, bad counts and more
    links than a node has ports at the first line or edge that shows it; then the degree of
    every node against the instance (all ``d`` ports on a regular instance)."""
    n, d = instance.n, instance.degree
    counts: dict[tuple[int, int], int] = defaultdict(int)
    ports = [0] * n
    for where, a, b, c in pairs:
        i, j = _node(a, shown, where, n), _node(b, shown, where, n)
        if i == j:
            raise TopologyFileError(f"{shown}: {where}: self-loop at node {i}")
        count = None if isinstance(c, bool | float | str) else _index(c)
        if count is None or count < 1:
            raise TopologyFileError(f"{shown}: {where}: link count {repr(c)[:20]} is not a "
                                    "positive integer")
        for v in (i, j):
            ports[v] += count
            if ports[v] > d:
                raise TopologyFileError(f"{shown}: {where}: node {v} has {ports[v]} links, "
                                        f"more than its {d} ports")
        counts[min(i, j), max(i, j)] += count
    for v, p in enumerate(ports):
        if instance.regular and p != d:
            raise TopologyFileError(f"{shown}: node {v} uses {p} of its {d} ports; the instance "
                                    "is regular (every port is linked)")
    links = np.zeros((n, n), dtype=np.int64)
    if counts:
        ij = np.array(list(counts), dtype=np.int64)
        c = np.array(list(counts.values()), dtype=np.int64)
        links[ij[:, 0], ij[:, 1]] = links[ij[:, 1], ij[:, 0]] = c
    links.setflags(write=False)  # Topology keeps it without a copy (800 MB at n = 10^4)
    return Topology(links)
