"""Read SNDlib native-format networks as route-only problems.

SNDlib (sndlib.zib.de) files have sections ``NODES ( ... )``, ``LINKS ( ... )``, ``DEMANDS
( ... )`` (and others we ignore: META, ADMISSIBLE_PATHS); ``#`` starts a comment. Lines::

    <node_id> ( <x> <y> )
    <link_id> ( <a> <b> ) <pre_cap> <pre_cap_cost> <routing_cost> <setup_cost> ( {<cap> <cost>}* )
    <demand_id> ( <s> <t> ) <routing_unit> <demand_value> <max_path_length>

How an SNDlib network becomes an :class:`~topoopt_milp.core.instance.Instance`
------------------------------------------------------------------------
SNDlib links are *undirected with one capacity shared by both directions*, capacities are
arbitrary reals and parallel links add capacity -- none of which the port-budget cost model
(integer duplex links of ``B`` per direction) expresses. So an SNDlib file is a **route-only
problem on a fixed topology**:

* nodes are numbered in file order; every demand is an MP demand ``(s, t, demand_value)``
  (routed from source to target; ``max_path_length`` is ignored);
* the topology has ``L[i, j] = 1`` for every node pair joined by at least one link with
  positive capacity (``degree`` = the largest node degree, ``regular = false``);
* ``link_gbps = 8e-9`` so that ``B = 1`` unit per second: a "byte" is one demand unit;
* the instance's fixed topology (:class:`~topoopt_milp.core.instance.FixedTopology`, ``shared``)
  holds ``[i, j, capacity]`` per linked pair (``i < j``, parallel links summed), ``capacity =
  "file"`` taking each link's pre-installed capacity and ``"unit"`` capacity 1 per link; the
  route model uses one capacity row per undirected link, ``load(i -> j) + load(j -> i) <= U
  cap(i, j)``. The capacities are part of the instance (and of its content hash), so the two
  capacity modes of one network are two problems; ``meta["sndlib"]`` only records provenance
  (source file, capacity mode, node names).

The optimum ``U`` is the minimum congestion ``max_links load / capacity`` (the result's
``objective_kind`` is ``"max_link_utilization"``); :func:`topoopt_milp.core.evaluate.shared_congestion`
recomputes it for any routing, and ``evaluate`` reports it as ``metrics.max_link_utilization``.
``comm_time_s`` of such a solution is the per-direction ``evaluate`` figure on unit links and
has no SNDlib meaning.
"""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path

import numpy as np

from .files import read_input_text
from .instance import BYTES_PER_GBPS, FixedTopology, Instance, InstanceError

CAPACITY_MODES = ("file", "unit")


def read_sndlib(path: str | Path, capacity: str = "file") -> Instance:
    """Read an SNDlib native file as a route-only :class:`Instance` (module docstring)."""
    text = read_input_text(path, InstanceError)  # a regular file, UTF-8 (core/files.py)
    return parse_sndlib(text, capacity=capacity, name=Path(path).stem, source=str(path))


def parse_sndlib(text: str, capacity: str = "file", name: str = "sndlib",
                 source: str = "") -> Instance:
    """Parse SNDlib native text; errors name the section and the entry."""
    if capacity not in CAPACITY_MODES:
        raise InstanceError(f"capacity: expected one of {CAPACITY_MODES}, got {capacity!r}")
    m = re.search(r"#\s*network\s+(\S+)", text)
    if m:
        name = m.group(1)
    sections = _sections(text)
    for sec in ("NODES", "LINKS", "DEMANDS"):
        if sec not in sections:
            raise InstanceError(f"{sec}: section missing in SNDlib file {source or name}")
    nodes = [entry[0] for entry in _entries(sections["NODES"], "NODES")]
    if len(set(nodes)) != len(nodes):
        dup = next(x for x in nodes if nodes.count(x) > 1)
        raise InstanceError(f"NODES: node {dup!r} is listed twice")
    index = {v: k for k, v in enumerate(nodes)}
    n = len(nodes)
    if n < 2:
        raise InstanceError(f"NODES: need at least 2 nodes, got {n}")

    caps: dict[tuple[int, int], float] = defaultdict(float)
    for entry in _entries(sections["LINKS"], "LINKS"):
        lid, (a, b), rest = entry
        i, j = _pair(index, a, b, f"LINKS {lid}")
        if capacity == "unit":
            c = 1.0
        else:
            if not rest:
                raise InstanceError(f"LINKS {lid}: pre-installed capacity missing")
            c = _number(rest[0], f"LINKS {lid}: pre-installed capacity")
            if c < 0:
                raise InstanceError(f"LINKS {lid}: negative capacity {c}")
        caps[(min(i, j), max(i, j))] += c
    links = [[i, j, c] for (i, j), c in sorted(caps.items()) if c > 0]
    if not links:
        raise InstanceError("LINKS: no link has positive capacity (try --capacity unit)")

    mp = []
    for entry in _entries(sections["DEMANDS"], "DEMANDS"):
        did, (a, b), rest = entry
        s, t = _pair(index, a, b, f"DEMANDS {did}")
        if len(rest) < 2:
            raise InstanceError(f"DEMANDS {did}: expected routing_unit demand_value ...")
        value = _number(rest[1], f"DEMANDS {did}: demand_value")
        if value < 0:
            raise InstanceError(f"DEMANDS {did}: negative demand {value}")
        mp.append((s, t, value))

    deg = np.zeros(n, dtype=int)
    for i, j, _ in links:
        deg[i] += 1
        deg[j] += 1
    return Instance(
        n=n, degree=max(1, int(deg.max())), link_gbps=1.0 / BYTES_PER_GBPS, mp=tuple(mp),
        regular=False, name=name,
        topology=FixedTopology(tuple((i, j, float(c)) for i, j, c in links), shared=True),
        meta={"generator": "sndlib", "sndlib": {"source": source, "capacity": capacity,
                                                "nodes": nodes}},
    )


# -- tokenizer ------------------------------------------------------------------------------
def _tokens(text: str) -> list[str]:
    lines = []
    for line in text.splitlines():
        if line.lstrip().startswith("?"):
            continue  # "?SNDlib native format; type: network; version: 1.0"
        lines.append(line.split("#", 1)[0])
    return " ".join(lines).replace("(", " ( ").replace(")", " ) ").split()


def _sections(text: str) -> dict[str, list[str]]:
    toks = _tokens(text)
    out: dict[str, list[str]] = {}
    k = 0
    while k < len(toks):
        name = toks[k]
        if k + 1 >= len(toks) or toks[k + 1] != "(":
            raise InstanceError(f"SNDlib: expected 'SECTION (' at {name!r}")
        depth, j = 0, k + 1
        while j < len(toks):
            depth += toks[j] == "("
            depth -= toks[j] == ")"
            if depth == 0:
                break
            j += 1
        if depth:
            raise InstanceError(f"{name}: unbalanced parentheses")
        out[name.upper()] = toks[k + 2:j]
        k = j + 1
    return out


FIELDS = {"NODES": 0, "LINKS": 4, "DEMANDS": 3}  # plain fields after "id ( a b )"


def _entries(toks: list[str], section: str):
    """``(id, inner, fields)`` per entry ``id ( inner ) field... [( group )]``. A plain token
    followed by ``(`` starts the next entry, except the 4th field of a link (its setup cost),
    which is followed by the module list."""
    want = FIELDS.get(section, 0)
    k = 0
    out = []
    while k < len(toks):
        eid = toks[k]
        if k + 1 >= len(toks) or toks[k + 1] != "(" or ")" not in toks[k + 2:]:
            raise InstanceError(f"{section}: expected '{eid} ( ... )'")
        close = toks.index(")", k + 2)
        inner = toks[k + 2:close]
        k = close + 1
        rest: list[str] = []
        while k < len(toks) and len(rest) < want and toks[k] not in "()":
            opens = k + 1 < len(toks) and toks[k + 1] == "("
            if opens and not (section == "LINKS" and len(rest) == 3):
                break  # the next entry's id
            rest.append(toks[k])
            k += 1
        if k < len(toks) and toks[k] == "(":  # trailing group: link modules (ignored)
            depth = 0
            while k < len(toks):
                depth += toks[k] == "("
                depth -= toks[k] == ")"
                k += 1
                if depth == 0:
                    break
        if section == "NODES":
            out.append((eid, tuple(inner), rest))
        else:
            if len(inner) != 2:
                raise InstanceError(f"{section} {eid}: expected '( source target )'")
            out.append((eid, (inner[0], inner[1]), rest))
    return out


def _pair(index: dict[str, int], a: str, b: str, where: str) -> tuple[int, int]:
    for v in (a, b):
        if v not in index:
            raise InstanceError(f"{where}: unknown node {v!r}")
    if a == b:
        raise InstanceError(f"{where}: self-loop at node {a!r}")
    return index[a], index[b]


def _number(tok: str, where: str) -> float:
    try:
        return float(tok)
    except ValueError:
        raise InstanceError(f"{where}: expected a number, got {tok!r}") from None
