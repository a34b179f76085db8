"""The frozen problem instance: a cluster plus one training iteration's traffic.

An :class:`Instance` is what every method solves. It holds

* the cluster: ``n`` servers with ``degree`` ports of ``link_gbps`` Gbps each (per direction),
  whether the topology must be ``regular`` (every port used), an optional per-hop latency and
  the number of GPUs per server;
* the traffic of one iteration: AllReduce groups ``{members, bytes}`` (ring AllReduce, every
  member sends ``2 (k-1)/k * bytes`` to its ring successor) and model-parallel demands
  ``(src, dst, bytes)``;
* ``compute_s``, the compute time of one iteration, a ``name`` and free-form ``meta``;
* optionally a fixed ``topology`` (:class:`FixedTopology`): the links (and, for SNDlib
  networks, real capacities shared by both directions) and the AllReduce rings of a problem
  whose topology is given -- the route family.

Every input that changes an optimum is a typed field covered by :meth:`Instance.content_hash`;
``meta`` is free-form provenance that no model reads and the hash ignores.

Units follow DESIGN.md section 2: bytes, seconds, Gbps (1 Gbps = 1.25e8 bytes/s).

The JSON interchange format is ``"format": "topoopt-instance/1"``. Every field is validated
and an invalid file raises :class:`InstanceError` whose message names the offending field.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from types import MappingProxyType
from typing import Any

import numpy as np

from .errors import InputError
from .jsonfile import problem as json_problem
from .jsonfile import read_json, text_problem
from .outfile import write_text

FORMAT = "topoopt-instance/1"
BYTES_PER_GBPS = 1.25e8  # 1 Gbps = 1e9 bit/s = 1.25e8 byte/s
# The largest cluster an instance may describe. Topologies, hop distances and MP matrices are
# dense n x n arrays throughout (evaluating one solution holds about four of them): at
# n = 10^4 each is 0.8 GB, so a solution can still be evaluated on a workstation; beyond, the
# toolkit would need sparse structures everywhere. Methods declare their own, smaller limits
# (:mod:`topoopt_milp.core.sizes`).
MAX_N = 10_000
_FLOAT_MAX = 1.7976931348623157e308

_REQUIRED = ("format", "n", "degree", "link_gbps")
_OPTIONAL = (
    "name", "regular", "latency_us", "gpus_per_server", "allreduce", "mp", "compute_s", "meta",
    "topology",
)


class InstanceError(InputError):
    """An instance (or a file claiming to be one) is malformed; the message names the field."""


@dataclass(frozen=True)
class AllReduceGroup:
    """A ring AllReduce of ``bytes`` bytes over ``members`` (distinct server ids, >= 2)."""

    members: tuple[int, ...]
    bytes: float

    @property
    def edge_bytes(self) -> float:
        """Bytes each member sends to its ring successor: ``2 (k-1)/k * S``."""
        k = len(self.members)
        return 2.0 * (k - 1) / k * self.bytes


@dataclass(frozen=True)
class FixedTopology:
    """A topology the instance fixes (the route family's problem; SNDlib networks).

    ``links`` are ``(i, j, capacity)`` with ``i < j``, each pair once. Without ``shared`` the
    capacity is a count of duplex links of ``link_gbps`` each (per direction), an integer, and
    the links respect the port budget. With ``shared`` (SNDlib) the capacity is a real number
    of ``link_gbps`` units shared by both directions (``load(i->j) + load(j->i) <= cap``).
    ``rings`` fixes the AllReduce ring orders and shares, ``(group, order, share)``; ``None``
    lets the route model lay its default rings."""

    links: tuple[tuple[int, int, float], ...]
    shared: bool = False
    rings: tuple[tuple[int, tuple[int, ...], float], ...] | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "links": [[i, j, c] for i, j, c in self.links], "shared": self.shared,
            "rings": None if self.rings is None else [
                {"group": g, "order": list(o), "share": sh} for g, o, sh in self.rings],
        }

    @classmethod
    def from_dict(cls, data: Any) -> FixedTopology:
        if not isinstance(data, Mapping):
            raise InstanceError("topology: expected an object with 'links' (and 'shared', 'rings')")
        extra = sorted(set(data) - {"links", "shared", "rings"})
        if extra:
            raise InstanceError(f"topology.{extra[0]}: unknown field")
        links = data.get("links")
        if not isinstance(links, list):
            raise InstanceError("topology.links: expected a list of [i, j, capacity]")
        parsed = []
        for k, row in enumerate(links):
            if not isinstance(row, list) or len(row) != 3:
                raise InstanceError(f"topology.links[{k}]: expected [i, j, capacity]")
            parsed.append((_as_int(row[0], f"topology.links[{k}][0]"),
                           _as_int(row[1], f"topology.links[{k}][1]"),
                           _as_float(row[2], f"topology.links[{k}][2] (capacity)")))
        shared = data.get("shared", False)
        if not isinstance(shared, bool):
            raise InstanceError("topology.shared: expected true or false")
        rings = data.get("rings")
        if rings is not None:
            if not isinstance(rings, list):
                raise InstanceError("topology.rings: expected a list of {group, order, share}")
            out = []
            for k, r in enumerate(rings):
                where = f"topology.rings[{k}]"
                if not isinstance(r, Mapping) or set(r) != {"group", "order", "share"}:
                    raise InstanceError(f"{where}: expected an object with group, order, share")
                if not isinstance(r["order"], list):
                    raise InstanceError(f"{where}.order: expected a list of node ids")
                out.append((_as_int(r["group"], f"{where}.group"),
                            tuple(_as_int(v, f"{where}.order") for v in r["order"]),
                            _as_float(r["share"], f"{where}.share")))
            rings = tuple(out)
        return cls(tuple(parsed), shared, rings)


@dataclass(frozen=True)
class Instance:
    """A cluster and the traffic of one training iteration (immutable, validated)."""

    n: int
    degree: int
    link_gbps: float
    allreduce: tuple[AllReduceGroup, ...] = ()
    mp: tuple[tuple[int, int, float], ...] = ()
    regular: bool = True
    latency_us: float = 0.0
    gpus_per_server: int = 1
    compute_s: float = 0.0
    name: str = "instance"
    meta: Mapping[str, Any] = field(default_factory=dict)
    topology: FixedTopology | None = None

    def __post_init__(self) -> None:
        _validate(self)
        object.__setattr__(self, "meta", MappingProxyType(dict(self.meta)))

    # -- derived quantities -------------------------------------------------------------
    @property
    def link_bytes_per_s(self) -> float:
        """Capacity of one link in one direction, bytes/s."""
        return self.link_gbps * BYTES_PER_GBPS

    def mp_matrix(self) -> np.ndarray:
        """Dense ``n x n`` matrix of model-parallel bytes (repeated pairs are summed)."""
        m = np.zeros((self.n, self.n))
        for s, t, b in self.mp:
            m[s, t] += b
        return m

    def allreduce_bytes(self) -> float:
        """Total bytes sent by all AllReduce ring edges, ``sum_g k_g * 2(k_g-1)/k_g * S_g``."""
        return sum(len(g.members) * g.edge_bytes for g in self.allreduce)

    def mp_bytes(self) -> float:
        """Total model-parallel bytes."""
        return float(sum(b for _, _, b in self.mp))

    def total_bytes(self) -> float:
        """All bytes injected into the network in one iteration."""
        return self.allreduce_bytes() + self.mp_bytes()

    def node_out_in_bytes(self) -> tuple[np.ndarray, np.ndarray]:
        """Bytes each server sends and receives (AllReduce members send and receive one ring
        edge's volume regardless of the ring order)."""
        out = np.zeros(self.n)
        inn = np.zeros(self.n)
        for s, t, b in self.mp:
            out[s] += b
            inn[t] += b
        for g in self.allreduce:
            idx = list(g.members)
            out[idx] += g.edge_bytes
            inn[idx] += g.edge_bytes
        return out, inn

    def with_topology(self, links: np.ndarray, rings=None) -> Instance:
        """This instance with a fixed duplex topology (link counts ``links``) and, optionally,
        fixed ring orders ``rings`` (objects with ``group``, ``order``, ``share``)."""
        L = np.asarray(links)
        i, j = np.nonzero(L)
        up = i < j  # the upper triangle, row-major as np.triu's nonzeros
        i, j = i[up], j[up]
        fixed = FixedTopology(
            tuple((int(a), int(b), float(c)) for a, b, c in zip(i.tolist(), j.tolist(),
                                                              L[i, j].tolist(), strict=True)),
            rings=None if rings is None else tuple(
                (int(r.group), tuple(int(v) for v in r.order), float(r.share)) for r in rings))
        return self._replaced(fixed)

    def without_topology(self) -> Instance:
        """This instance without its fixed topology (the free-topology problem)."""
        return self._replaced(None)

    def _replaced(self, topology: FixedTopology | None) -> Instance:
        """This (validated) instance with ``topology``, of which only the topology is
        validated: a round trip through :meth:`from_dict` re-validated the whole traffic,
        1.8 s per call at n = 10^4 (three calls before a ``--topology`` solve starts)."""
        new = object.__new__(Instance)
        for f in fields(Instance):
            object.__setattr__(new, f.name, getattr(self, f.name))
        object.__setattr__(new, "topology", topology)
        if topology is not None:
            _validate_topology(new, topology)
        return new

    def scaled(self, bytes_factor: float = 1.0, gbps_factor: float = 1.0) -> Instance:
        """The same instance with all volumes times ``bytes_factor`` and the link rate times
        ``gbps_factor``; communication times scale by ``bytes_factor / gbps_factor``."""
        return Instance.from_dict(
            {
                **self.to_dict(),
                "link_gbps": self.link_gbps * gbps_factor,
                "allreduce": [
                    {"members": list(g.members), "bytes": g.bytes * bytes_factor}
                    for g in self.allreduce
                ],
                "mp": [[s, t, b * bytes_factor] for s, t, b in self.mp],
            }
        )

    # -- JSON ---------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """The ``topoopt-instance/1`` JSON object."""
        return {
            "format": FORMAT,
            "name": self.name,
            "n": self.n,
            "degree": self.degree,
            "link_gbps": self.link_gbps,
            "regular": self.regular,
            "latency_us": self.latency_us,
            "gpus_per_server": self.gpus_per_server,
            "allreduce": [{"members": list(g.members), "bytes": g.bytes} for g in self.allreduce],
            "mp": [[s, t, b] for s, t, b in self.mp],
            "compute_s": self.compute_s,
            "meta": dict(self.meta),
            # written only when present, so files and hashes of free-topology instances keep
            # the form they had before fixed topologies existed
            **({} if self.topology is None else {"topology": self.topology.to_dict()}),
        }

    def content_hash(self) -> str:
        """SHA-256 (first 16 hex digits) of the canonical JSON, excluding ``name`` and ``meta``,
        so that two files with the same cluster, traffic and fixed topology hash alike."""
        body = self.to_dict()
        body.pop("name")
        body.pop("meta")
        text = json.dumps(body, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    @classmethod
    def from_dict(cls, data: Any) -> Instance:
        """Build and validate an instance from its JSON object."""
        if not isinstance(data, Mapping):
            raise InstanceError("instance: expected a JSON object at the top level")
        fmt = data.get("format")
        if fmt != FORMAT:
            raise InstanceError(f"format: expected {FORMAT!r}, got {fmt!r}")
        unknown = sorted(set(data) - set(_REQUIRED) - set(_OPTIONAL))
        if unknown:
            raise InstanceError(f"{unknown[0]}: unknown field (known: {', '.join(_OPTIONAL)})")
        for key in _REQUIRED:
            if key not in data:
                raise InstanceError(f"{key}: required field is missing")
        groups = data.get("allreduce", [])
        if not isinstance(groups, list):
            raise InstanceError("allreduce: expected a list of {members, bytes} objects")
        parsed_groups = []
        for gi, g in enumerate(groups):
            where = f"allreduce[{gi}]"
            if not isinstance(g, Mapping):
                raise InstanceError(f"{where}: expected an object with 'members' and 'bytes'")
            extra = sorted(set(g) - {"members", "bytes"})
            if extra:
                raise InstanceError(f"{where}.{extra[0]}: unknown field")
            for key in ("members", "bytes"):
                if key not in g:
                    raise InstanceError(f"{where}.{key}: required field is missing")
            if not isinstance(g["members"], list):
                raise InstanceError(f"{where}.members: expected a list of node ids")
            members = tuple(_as_int(m, f"{where}.members") for m in g["members"])
            parsed_groups.append(AllReduceGroup(members, _as_float(g["bytes"], f"{where}.bytes")))
        demands = data.get("mp", [])
        if not isinstance(demands, list):
            raise InstanceError("mp: expected a list of [src, dst, bytes] triples")
        parsed_mp = []
        for k, row in enumerate(demands):
            if not isinstance(row, list | tuple) or len(row) != 3:
                raise InstanceError(f"mp[{k}]: expected [src, dst, bytes]")
            parsed_mp.append(
                (
                    _as_int(row[0], f"mp[{k}][0] (src)"),
                    _as_int(row[1], f"mp[{k}][1] (dst)"),
                    _as_float(row[2], f"mp[{k}][2] (bytes)"),
                )
            )
        meta = data.get("meta", {})
        if not isinstance(meta, Mapping):
            raise InstanceError("meta: expected a JSON object")
        name = data.get("name", "instance")
        if not isinstance(name, str):
            raise InstanceError("name: expected a string")
        regular = data.get("regular", True)
        if not isinstance(regular, bool):
            raise InstanceError("regular: expected true or false")
        return cls(
            n=_as_int(data["n"], "n"),
            degree=_as_int(data["degree"], "degree"),
            link_gbps=_as_float(data["link_gbps"], "link_gbps"),
            allreduce=tuple(parsed_groups),
            mp=tuple(parsed_mp),
            regular=regular,
            latency_us=_as_float(data.get("latency_us", 0.0), "latency_us"),
            gpus_per_server=_as_int(data.get("gpus_per_server", 1), "gpus_per_server"),
            compute_s=_as_float(data.get("compute_s", 0.0), "compute_s"),
            name=name,
            meta=meta,
            topology=None if data.get("topology") is None else FixedTopology.from_dict(
                data["topology"]),
        )

    def to_json(self) -> str:
        """Readable, diff-friendly JSON: one field, one AllReduce group or one MP demand per
        line (an all-to-all instance at n = 128 stays a few hundred kB)."""
        body = self.to_dict()
        lines = []
        for key, value in body.items():
            if key in ("allreduce", "mp") and value:
                rows = ",\n  ".join(json.dumps(v) for v in value)
                lines.append(f"{json.dumps(key)}: [\n  {rows}\n ]")
            else:
                lines.append(f"{json.dumps(key)}: {json.dumps(value)}")
        return "{\n " + ",\n ".join(lines) + "\n}\n"

    def save(self, path: str | Path) -> None:
        """Write the instance file (see :meth:`to_json`)."""
        write_text(path, self.to_json())

    @classmethod
    def load(cls, path: str | Path) -> Instance:
        """Read and validate an instance file. Every defect -- not JSON, not UTF-8, the JSON
        oddities :func:`~topoopt_milp.core.jsonfile.read_json` refuses, an invalid field -- is an
        :class:`InstanceError` whose one-line message names the file and the field."""
        data = read_json(path, InstanceError)
        try:
            return cls.from_dict(data)
        except InstanceError as exc:
            raise InstanceError(f"{path}: {exc}") from None


def make_instance(
    n: int,
    degree: int,
    link_gbps: float,
    *,
    allreduce: Iterable[tuple[Iterable[int], float]] = (),
    mp: Iterable[tuple[int, int, float]] = (),
    **kwargs: Any,
) -> Instance:
    """Convenience constructor from plain tuples: ``allreduce=[(members, bytes), ...]``."""
    return Instance(
        n=n,
        degree=degree,
        link_gbps=float(link_gbps),
        allreduce=tuple(AllReduceGroup(tuple(int(m) for m in ms), float(b)) for ms, b in allreduce),
        mp=tuple((int(s), int(t), float(b)) for s, t, b in mp),
        **kwargs,
    )


# -- validation ---------------------------------------------------------------------------
def _text(value: Any) -> str:
    """``value`` for an error message, at most ~24 characters (a 400-digit integer is not
    repeated back in full; a large one is shown as ``1e+20``)."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > 10**15 \
            and abs(value) < 1e308:
        return f"{value:.4g}"
    text = repr(value)
    return text if len(text) <= 24 else f"{text[:12]}...({len(text)} characters)"


def _as_int(value: Any, where: str) -> int:
    # bool is an int subclass in Python; a JSON true is never a node id or a count.
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        if isinstance(value, float) and value.is_integer():
            return int(value)
        raise InstanceError(f"{where}: expected an integer, got {_text(value)}")
    return int(value)


def _as_float(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float | np.integer | np.floating):
        raise InstanceError(f"{where}: expected a number, got {_text(value)}")
    try:
        return float(value)
    except OverflowError:  # an integer beyond 1.8e308 (library callers; files are refused earlier)
        raise InstanceError(f"{where}: {_text(value)} is too large for a number") from None


def _finite_nonneg(value: float, where: str) -> None:
    if math.isnan(value) or math.isinf(value):
        raise InstanceError(f"{where}: must be finite, got {value}")
    if value < 0:
        raise InstanceError(f"{where}: must be non-negative, got {value}")


def _finite_product(a: float, b: float) -> bool:
    with np.errstate(over="ignore"):
        return math.isfinite(a * b)


def _validate_derived(inst: Instance) -> None:
    """Every quantity the toolkit derives from the numbers must be a finite float too.

    With ``R = link_gbps * 1.25e8`` bytes/s and ``W`` the bytes injected per iteration (ring
    edges ``k * 2 (k-1)/k * S`` plus MP demands): a path has at most ``n - 1`` hops (a
    solution's loops at most revisit arcs), so byte-hops stay below ``W n``, arc loads below
    ``W n`` and the bandwidth time below ``W n / R``; the latency term is at most
    ``(n - 1) latency``. Requiring ``R`` normal (no subnormal rate to divide by), the total
    capacity ``n d R`` and ``W n``, ``W n / R``, ``n latency_us`` and their sum with
    ``compute_s`` finite keeps every time, bound and ratio finite. Each failure names the
    field that makes it overflow."""
    n = inst.n
    rate = inst.link_gbps * BYTES_PER_GBPS
    if not math.isfinite(rate):
        raise InstanceError(f"link_gbps: {inst.link_gbps:g} Gbps overflows to infinity in "
                            f"bytes/s (x {BYTES_PER_GBPS:g})")
    if not math.isfinite(rate * inst.degree * n):  # n d links: the total capacity
        raise InstanceError(f"link_gbps: {inst.link_gbps:g} Gbps times the {n * inst.degree} "
                            "link ends overflows to infinity in bytes/s")
    if rate < 2.2250738585072014e-308:
        raise InstanceError(f"link_gbps: {inst.link_gbps:g} Gbps is too small: the link rate "
                            f"{rate:g} bytes/s is not a normal float")
    total = 0.0
    entries = [(f"allreduce[{gi}].bytes", len(g.members) * g.edge_bytes)
               for gi, g in enumerate(inst.allreduce)]
    entries += [(f"mp[{k}][2] (bytes)", b) for k, (_, _, b) in enumerate(inst.mp)]
    for where, volume in entries:
        total += volume
        if not _finite_product(total, n):
            raise InstanceError(f"{where}: the instance's total volume overflows here (bytes "
                                f"times the n = {n} hops a path may take must stay finite)")
    bandwidth_s = total * n / rate
    if not math.isfinite(bandwidth_s):
        raise InstanceError(f"link_gbps: {inst.link_gbps:g} Gbps is too slow for "
                            f"{total:g} bytes: the communication time overflows to infinity")
    if not _finite_product(inst.latency_us, n):
        raise InstanceError(f"latency_us: {inst.latency_us:g} us over up to n = {n} hops "
                            "overflows to infinity")
    latency_s = inst.latency_us * n * 1e-6
    if not math.isfinite(bandwidth_s + latency_s + inst.compute_s):
        worst = max((bandwidth_s, "link_gbps"), (latency_s, "latency_us"),
                    (inst.compute_s, "compute_s"))[1]
        raise InstanceError(f"{worst}: the iteration time (compute plus communication) "
                            "overflows to infinity")


def _validate(inst: Instance) -> None:
    if isinstance(inst.n, bool) or not isinstance(inst.n, int) or inst.n < 2:
        raise InstanceError(f"n: need at least 2 servers, got {_text(inst.n)}")
    if inst.n > MAX_N:
        raise InstanceError(f"n: at most {MAX_N} servers are supported (dense n x n arrays), "
                            f"got {_text(inst.n)}")
    if not isinstance(inst.name, str):
        raise InstanceError(f"name: expected a string, got {_text(inst.name)}")
    if text_problem(inst.name):  # a lone surrogate: no UTF-8 file or table could hold it
        raise InstanceError(f"name: {text_problem(inst.name)}")
    bad = json_problem(dict(inst.meta))
    if bad:
        raise InstanceError(f"meta.{bad}")
    if isinstance(inst.degree, bool) or not isinstance(inst.degree, int) or inst.degree < 1:
        raise InstanceError(f"degree: need at least 1 port per server, got {_text(inst.degree)}")
    if inst.degree >= inst.n:
        raise InstanceError(
            f"degree: must be smaller than n (= {inst.n}); {inst.degree} ports would need "
            "parallel links to the same neighbour"
        )
    _finite_nonneg(inst.link_gbps, "link_gbps")
    if inst.link_gbps == 0:
        raise InstanceError("link_gbps: must be positive")
    _finite_nonneg(inst.latency_us, "latency_us")
    _finite_nonneg(inst.compute_s, "compute_s")
    if inst.gpus_per_server < 1:
        raise InstanceError(f"gpus_per_server: must be at least 1, got {inst.gpus_per_server}")
    if inst.regular and inst.n * inst.degree % 2:
        raise InstanceError(
            f"regular: no {inst.degree}-regular graph on n = {inst.n} servers exists "
            "(n * degree is odd); set regular to false"
        )
    for gi, g in enumerate(inst.allreduce):
        where = f"allreduce[{gi}]"
        if len(g.members) < 2:
            raise InstanceError(f"{where}.members: a group needs at least 2 members")
        if len(set(g.members)) != len(g.members):
            dup = next(m for m in g.members if g.members.count(m) > 1)
            raise InstanceError(f"{where}.members: node {dup} is listed twice")
        for m in g.members:
            if not 0 <= m < inst.n:
                raise InstanceError(f"{where}.members: node {m} is out of range 0..{inst.n - 1}")
        _finite_nonneg(g.bytes, f"{where}.bytes")
    for k, (s, t, b) in enumerate(inst.mp):
        for pos, v in ((0, s), (1, t)):
            if not 0 <= v < inst.n:
                raise InstanceError(f"mp[{k}][{pos}]: node {v} is out of range 0..{inst.n - 1}")
        if s == t:
            raise InstanceError(f"mp[{k}]: self-demand {s} -> {t} is not network traffic")
        _finite_nonneg(b, f"mp[{k}][2] (bytes)")
    _validate_derived(inst)
    if inst.topology is not None:
        _validate_topology(inst, inst.topology)


def _validate_topology(inst: Instance, topo: FixedTopology) -> None:
    seen = set()
    ports = np.zeros(inst.n)
    for k, (i, j, c) in enumerate(topo.links):
        where = f"topology.links[{k}]"
        if not (0 <= i < j < inst.n):
            raise InstanceError(f"{where}: need 0 <= i < j < n = {inst.n}, got [{i}, {j}]")
        if (i, j) in seen:
            raise InstanceError(f"{where}: pair ({i}, {j}) is listed twice")
        seen.add((i, j))
        _finite_nonneg(c, f"{where}[2] (capacity)")
        if c == 0:
            raise InstanceError(f"{where}[2] (capacity): must be positive")
        if not _finite_product(c, inst.link_bytes_per_s):
            raise InstanceError(f"{where}[2] (capacity): {c:g} links of {inst.link_gbps:g} "
                                "Gbps overflow to infinity in bytes/s")
        if not topo.shared and not float(c).is_integer():
            raise InstanceError(f"{where}[2] (capacity): a duplex topology counts whole links, "
                                f"got {c}")
        ports[i] += c
        ports[j] += c
    if not topo.shared:
        for v in range(inst.n):
            if ports[v] > inst.degree or (inst.regular and ports[v] != inst.degree):
                need = "exactly" if inst.regular else "at most"
                raise InstanceError(f"topology.links: node {v} has {ports[v]:g} links, the port "
                                    f"budget allows {need} {inst.degree}")
    if topo.rings is None:
        return
    total: dict[int, float] = {}
    for k, (g, order, share) in enumerate(topo.rings):
        where = f"topology.rings[{k}]"
        if not 0 <= g < len(inst.allreduce):
            raise InstanceError(f"{where}.group: no AllReduce group {g}")
        if sorted(order) != sorted(inst.allreduce[g].members):
            raise InstanceError(f"{where}.order: not a permutation of group {g}'s members")
        _finite_nonneg(share, f"{where}.share")
        total[g] = total.get(g, 0.0) + share
    for g, grp in enumerate(inst.allreduce):
        if grp.bytes > 0 and abs(total.get(g, 0.0) - 1.0) > 1e-6:
            raise InstanceError(f"topology.rings: shares of group {g} sum to "
                                f"{total.get(g, 0.0):g}, not 1")
