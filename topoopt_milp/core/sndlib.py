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

Reading is strict
---------------
Every entry must have all its fields: a link ``id ( a b )`` is followed by exactly four
numbers and (optionally) its module list, a demand by ``routing_unit demand_value
max_path_length``. Numbers must be finite (``NaN``, ``inf`` and overflowing literals are
refused, never read as "no link"), a section may appear once, and the file must be UTF-8 (or
ASCII) text. Every error is one line naming the file, the line and the entry's field, e.g.
``net.txt: line 12: LINKS L3: setup cost: expected a number, got 'L4'``.

The optimum ``U`` is the minimum congestion ``max_links load / capacity`` (the result's
``objective_kind`` is ``"max_link_utilization"``); :func:`topoopt_milp.core.evaluate.shared_congestion`
recomputes it for any routing, and ``evaluate`` reports it as ``metrics.max_link_utilization``.
``comm_time_s`` of such a solution is the per-direction ``evaluate`` figure on unit links and
has no SNDlib meaning.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from pathlib import Path

import numpy as np

from .files import read_input_text
from .instance import BYTES_PER_GBPS, FixedTopology, Instance, InstanceError

CAPACITY_MODES = ("file", "unit")
LINK_FIELDS = ("pre-installed capacity", "pre-installed capacity cost", "routing cost",
               "setup cost")
DEMAND_FIELDS = ("routing_unit", "demand_value", "max_path_length")
READ_SECTIONS = ("NODES", "LINKS", "DEMANDS")


def read_sndlib(path: str | Path, capacity: str = "file") -> Instance:
    """Read an SNDlib native file as a route-only :class:`Instance` (module docstring).

    Every :class:`InstanceError` names ``path`` (and the line and field)."""
    text = read_input_text(path, InstanceError)  # a regular file, UTF-8 (core/files.py)
    return parse_sndlib(text, capacity=capacity, name=Path(path).stem, source=str(path))


def parse_sndlib(text: str, capacity: str = "file", name: str = "sndlib",
                 source: str = "") -> Instance:
    """Parse SNDlib native text; errors name the source (when given), the line, the section,
    the entry and the field."""
    try:
        return _parse(text, capacity, name, source)
    except InstanceError as exc:
        if source:
            raise InstanceError(f"{source}: {exc}") from None
        raise


def _parse(text: str, capacity: str, name: str, source: str) -> Instance:
    if capacity not in CAPACITY_MODES:
        raise InstanceError(f"capacity: expected one of {CAPACITY_MODES}, got {capacity!r}")
    m = re.search(r"#\s*network\s+(\S+)", text)
    if m:
        name = m.group(1)
    sections = _sections(text)
    for sec in READ_SECTIONS:
        if sec not in sections:
            raise InstanceError(f"{sec}: section missing in SNDlib file")
    nodes, node_lines = [], {}
    for eid, inner, _, ln in _entries(sections["NODES"], "NODES"):
        if eid in node_lines:
            raise InstanceError(f"line {ln}: NODES: node {eid!r} is listed twice (first at "
                                f"line {node_lines[eid]})")
        if len(inner) != 2:
            raise InstanceError(f"line {ln}: NODES {eid}: expected '( x y )' coordinates")
        for tok, what in zip(inner, ("x", "y"), strict=True):
            _number(tok, f"line {ln}: NODES {eid}: {what}")
        node_lines[eid] = ln
        nodes.append(eid)
    index = {v: k for k, v in enumerate(nodes)}
    n = len(nodes)
    if n < 2:
        raise InstanceError(f"NODES: need at least 2 nodes, got {n}")

    caps: dict[tuple[int, int], float] = defaultdict(float)
    for lid, inner, rest, ln in _entries(sections["LINKS"], "LINKS"):
        where = f"line {ln}: LINKS {lid}"
        i, j = _pair(index, inner, where)
        values = [_number(tok, f"{where}: {what}") for tok, what in zip(rest, LINK_FIELDS,
                                                                       strict=True)]
        c = 1.0 if capacity == "unit" else values[0]
        if c < 0:
            raise InstanceError(f"{where}: {LINK_FIELDS[0]}: negative capacity {c}")
        key = (min(i, j), max(i, j))
        caps[key] += c
        if not math.isfinite(caps[key]):
            raise InstanceError(f"{where}: {LINK_FIELDS[0]}: the parallel links' capacities "
                                "add up to more than a float holds")
    links = [[i, j, c] for (i, j), c in sorted(caps.items()) if c > 0]
    if not links:
        raise InstanceError("LINKS: no link has positive capacity (try --capacity unit)")

    mp = []
    for did, inner, rest, ln in _entries(sections["DEMANDS"], "DEMANDS"):
        where = f"line {ln}: DEMANDS {did}"
        s, t = _pair(index, inner, where)
        _number(rest[0], f"{where}: {DEMAND_FIELDS[0]}")
        value = _number(rest[1], f"{where}: {DEMAND_FIELDS[1]}")
        if rest[2].upper() != "UNLIMITED":
            _number(rest[2], f"{where}: {DEMAND_FIELDS[2]} (a number or UNLIMITED)")
        if value < 0:
            raise InstanceError(f"{where}: {DEMAND_FIELDS[1]}: negative demand {value}")
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
Token = tuple[str, int]  # (text, line number)


def _tokens(text: str) -> list[Token]:
    out: list[Token] = []
    for ln, line in enumerate(text.splitlines(), start=1):
        if line.lstrip().startswith("?"):
            continue  # "?SNDlib native format; type: network; version: 1.0"
        body = line.split("#", 1)[0].replace("(", " ( ").replace(")", " ) ")
        out.extend((tok, ln) for tok in body.split())
    return out


def _sections(text: str) -> dict[str, list[Token]]:
    """``SECTION ( ... )`` blocks by upper-case name; a section given twice is refused (the
    second would silently replace the first)."""
    toks = _tokens(text)
    out: dict[str, list[Token]] = {}
    first: dict[str, int] = {}
    k = 0
    while k < len(toks):
        name, ln = toks[k]
        if k + 1 >= len(toks) or toks[k + 1][0] != "(" or name in "()":
            raise InstanceError(f"line {ln}: expected 'SECTION (' at {name!r}")
        end = _close(toks, k + 1)
        if end is None:
            raise InstanceError(f"line {ln}: {name}: unbalanced parentheses")
        key = name.upper()
        if key in first:
            raise InstanceError(f"line {ln}: {key}: section given twice (first at line "
                                f"{first[key]}); merge them into one")
        first[key] = ln
        out[key] = toks[k + 2:end]
        k = end + 1
    return out


def _close(toks: list[Token], k: int) -> int | None:
    """Index of the ``)`` matching the ``(`` at ``k`` (``None``: unbalanced)."""
    depth = 0
    for j in range(k, len(toks)):
        depth += toks[j][0] == "("
        depth -= toks[j][0] == ")"
        if depth == 0:
            return j
    return None


FIELDS = {"NODES": (), "LINKS": LINK_FIELDS, "DEMANDS": DEMAND_FIELDS}
NUMERIC = {"NODES": 0, "LINKS": 4, "DEMANDS": 2}  # leading fields that must be numbers


def _entries(toks: list[Token], section: str) -> list[tuple[str, list[str], list[str], int]]:
    """``(id, inner, fields, line)`` per entry ``id ( inner ) field... [( modules )]``.

    An entry has exactly ``len(FIELDS[section])`` plain fields; a link may then have its
    module list (pairs of numbers, ignored). A short entry is refused: its last "field"
    would be the next entry's id (checked as a number by the caller) or a parenthesis."""
    names = FIELDS[section]
    k = 0
    out = []
    while k < len(toks):
        eid, ln = toks[k]
        if eid in "()" or k + 1 >= len(toks) or toks[k + 1][0] != "(":
            raise InstanceError(f"line {ln}: {section}: expected '<id> ( ... )', got {eid!r}")
        close = _close(toks, k + 1)
        inner = [t for t, _ in toks[k + 2:close]]
        if "(" in inner:
            raise InstanceError(f"line {ln}: {section} {eid}: nested '(' inside '( ... )'")
        k = close + 1
        rest: list[str] = []
        while len(rest) < len(names):
            if k >= len(toks) or toks[k][0] in "()":
                raise InstanceError(
                    f"line {ln}: {section} {eid}: {names[len(rest)]} missing (an entry has "
                    f"{len(names)} fields after its end nodes: {', '.join(names)})")
            rest.append(toks[k][0])
            k += 1
        for tok, what in zip(rest, names[:NUMERIC[section]], strict=False):
            if not _is_number(tok):
                raise InstanceError(
                    f"line {ln}: {section} {eid}: {what}: expected a number, got {tok!r} (an "
                    f"entry has {len(names)} fields after its end nodes: {', '.join(names)})")
        if names and section != "LINKS" and k < len(toks) and toks[k][0] == "(":
            raise InstanceError(  # the last "field" is the next entry's id
                f"line {ln}: {section} {eid}: {names[-1]} missing ({rest[-1]!r} starts the "
                f"next entry; an entry has {len(names)} fields: {', '.join(names)})")
        if section == "LINKS" and k < len(toks) and toks[k][0] == "(":
            end = _close(toks, k)
            modules = [t for t, _ in toks[k + 1:end]]
            if "(" in modules or len(modules) % 2:
                raise InstanceError(f"line {toks[k][1]}: LINKS {eid}: module list: expected "
                                    "'( {capacity cost}* )' pairs of numbers")
            for tok in modules:
                _number(tok, f"line {toks[k][1]}: LINKS {eid}: module list")
            k = end + 1
        out.append((eid, inner, rest, ln))
    return out


def _pair(index: dict[str, int], inner: list[str], where: str) -> tuple[int, int]:
    if len(inner) != 2:
        raise InstanceError(f"{where}: expected '( source target )'")
    a, b = inner
    for v in (a, b):
        if v not in index:
            raise InstanceError(f"{where}: unknown node {v!r}")
    if a == b:
        raise InstanceError(f"{where}: self-loop at node {a!r}")
    return index[a], index[b]


def _is_number(tok: str) -> bool:
    try:
        float(tok)
    except ValueError:
        return False
    return True


def _number(tok: str, where: str) -> float:
    """A finite float; ``NaN``, ``inf`` and overflowing literals (``1e400``) are refused."""
    try:
        value = float(tok)
    except ValueError:
        raise InstanceError(f"{where}: expected a number, got {tok!r}") from None
    if not math.isfinite(value):
        raise InstanceError(f"{where}: expected a finite number, got {tok!r}")
    return value
