"""The one status vocabulary, solve results and the solution file.

Every method (heuristic or exact) takes an :class:`~topoopt_milp.core.instance.Instance` and
:class:`~topoopt_milp.core.params.SolveOptions` and returns a :class:`SolveResult`. The solution
file ``"format": "topoopt-solution/1"`` is written from a result plus the metrics computed by
:mod:`topoopt_milp.core.evaluate`.

Statuses: ``optimal`` means proven within the method's own problem (DESIGN.md section
10: every topology for alloc and joint, the candidate circulants for select, the fixed
topology for route). A restricted model that proves the optimum of its own model reports
``status = feasible`` and ``scope_status = optimal``; its ``scope`` says which model.

Gap convention (as python-mip): ``gap = (objective - bound) / objective``; ``None`` when
either is missing or when the result's own bound does not cover its solution, ``0`` when
both are zero.
"""

from __future__ import annotations

import enum
import json
import math
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from .errors import InputError
from .instance import MAX_N, Instance
from .jsonfile import read_json
from .outfile import write_text
from .scope import Features, Scope
from .topology import Routing, Topology

SOLUTION_FORMAT = "topoopt-solution/1"


class SolutionError(InputError):
    """A solution file is malformed or does not belong to the instance."""


class Status(enum.StrEnum):
    """Outcome of a solve. Heuristics report ``FEASIBLE``."""

    OPTIMAL = "optimal"
    FEASIBLE = "feasible"
    INFEASIBLE = "infeasible"
    NO_SOLUTION = "no_solution"
    ERROR = "error"

    @property
    def has_solution(self) -> bool:
        return self in (Status.OPTIMAL, Status.FEASIBLE)


@dataclass(frozen=True, repr=False)
class SolveResult:
    """What a method returns.

    ``print(result)`` shows a summary (status, objective, bound and its scope, gap, runtime,
    topology, routing, the checker's verdict); ``repr`` is one line; :meth:`to_dict` is the
    ``topoopt-solution/1`` object and :meth:`save` writes it.

    ``objective`` and ``bound`` are communication times in seconds (for ``--objective
    diameter`` / ``total_hops`` they are in hops / byte-hops and ``objective_kind`` says so).
    ``topology`` and ``routing`` are ``None`` only when no solution was found. ``scope`` is
    the set of solutions ``bound`` is valid for (``None``: no bound, a heuristic);
    ``scope_status`` the status within that scope for restricted models. ``metrics``,
    ``features`` and ``violations`` are filled in by the independent check
    (:func:`topoopt_milp.pipeline.solve_checked`). ``constraints`` are the constraints the
    run was solved under (a multiplicity cap, fixed rings: :meth:`SolveOptions.constraints
    <topoopt_milp.core.params.SolveOptions.constraints>`); the checker enforces them."""

    method: str
    status: Status
    objective: float | None
    bound: float | None
    runtime_s: float
    topology: Topology | None = None
    routing: Routing | None = None
    seed: int = 0
    params: dict[str, Any] = field(default_factory=dict)
    backend: str | None = None
    backend_version: str | None = None
    objective_kind: str = "comm_time"
    scale: float | None = None  # CP-SAT: bytes per integer unit
    message: str = ""
    scope: Scope | None = None
    scope_status: str | None = None
    info: dict[str, Any] = field(default_factory=dict)  # method outputs (jumps, trajectory...)
    metrics: dict[str, Any] | None = None
    features: Features | None = None
    violations: tuple[str, ...] = ()
    # the constraints the run was solved under (SolveOptions.constraints: a multiplicity cap,
    # fixed rings), written to the solution file and enforced by the independent checker
    constraints: dict[str, Any] = field(default_factory=dict)

    @property
    def gap(self) -> float | None:
        """The relative gap against the result's own bound.

        Returns
        -------
        float or None
            ``(objective - bound) / |objective|``; ``0`` when both are 0, ``inf`` for a zero
            objective above a positive bound; ``None`` without objective or bound. The bound's
            scope (:attr:`scope`) contains the solution by construction (a method drops a bound
            that does not cover its own solution); tables measure against other bounds only
            where :meth:`Scope.covers <topoopt_milp.core.scope.Scope.covers>` says so.
        """
        if self.objective is None or self.bound is None:
            return None
        if self.objective == 0:
            return 0.0 if self.bound == 0 else math.inf
        return (self.objective - self.bound) / abs(self.objective)

    def summary(self) -> str:
        obj = "-" if self.objective is None else f"{self.objective:.6g}"
        bnd = "-" if self.bound is None else f"{self.bound:.6g}"
        gap = "-" if self.gap is None else f"{max(0.0, 100 * self.gap):.2f}%"
        within = f" ({self.scope_status} within its restricted model)" if self.scope_status else ""
        return (
            f"{self.method:<18} {self.status.value:<11} obj={obj:<12} bound={bnd:<12} "
            f"gap={gap:<8} time={self.runtime_s:.3f}s{within}"
        )

    def with_(self, **changes: Any) -> SolveResult:
        return replace(self, **changes)

    def __repr__(self) -> str:
        def num(v):
            return "None" if v is None else f"{v:.6g}"

        gap = "None" if self.gap is None else f"{max(0.0, 100 * self.gap):.2f}%"
        return (f"SolveResult(method={self.method!r}, status={self.status.value!r}, "
                f"objective={num(self.objective)}, bound={num(self.bound)}, gap={gap}, "
                f"runtime_s={self.runtime_s:.3g})")

    def __str__(self) -> str:
        unit = {"comm_time": "s"}.get(self.objective_kind, self.objective_kind)
        backend = (f" ({' '.join(filter(None, (self.backend, self.backend_version)))})"
                   if self.backend else "")
        rows = [f"{self.method}: {self.status.value}{backend}"]
        if self.scope_status:
            rows[0] += f", {self.scope_status} within its restricted model"

        def row(label, text):
            rows.append(f"  {label:<10} {text}")

        row("objective", "-" if self.objective is None else f"{self.objective:.6g} {unit}"
            + (" (communication time)" if self.objective_kind == "comm_time" else ""))
        if self.bound is not None:
            scope = "" if self.scope is None else f" (valid for {self.scope.describe()})"
            row("bound", f"{self.bound:.6g} {unit}{scope}")
            row("gap", "-" if self.gap is None else f"{max(0.0, 100 * self.gap):.2f}%")
        row("runtime", f"{self.runtime_s:.3g} s")
        if self.topology is not None:
            links = int(self.topology.links.sum()) // 2
            jumps = "" if self.topology.jumps is None else f", jumps {list(self.topology.jumps)}"
            row("topology", f"n = {self.topology.n}, {links} links{jumps}")
        if self.routing is not None:
            row("routing", f"{len(self.routing.commodities)} commodities, "
                           f"{len(self.routing.rings)} AllReduce rings")
        m = self.metrics or {}
        if m.get("ideal_switch_time_s") is not None:
            row("metrics", f"ideal switch {m['ideal_switch_time_s']:.4g} s, diameter "
                           f"{m.get('diameter', float('nan')):g}, avg hops "
                           f"{m.get('avg_hops', float('nan')):.3g}")
        if self.metrics is not None or self.violations:
            row("check", "OK (independent checker)" if not self.violations
                else f"{len(self.violations)} violation(s): " + "; ".join(self.violations[:3]))
        if self.message:
            row("message", self.message)
        return "\n".join(rows)

    def to_dict(self, instance: Instance | None = None) -> dict:
        """The ``topoopt-solution/1`` object of this result (what :meth:`save` writes), with
        the metrics of the independent check; without ``instance`` it lacks the ``instance``
        entry (name and content hash) that a solution file needs."""
        out = finite_json(solution_dict(self, instance, self.metrics))
        return out if instance is not None else {k: v for k, v in out.items() if k != "instance"}

    def save(self, path: str | Path, instance: Instance) -> Path:
        """Write the solution file of this result on ``instance``; return its path."""
        write_solution(path, self, instance)
        return Path(path)


def versions() -> dict[str, str]:
    """Versions of this package and of the solver libraries, for the solution file."""
    from importlib import metadata

    out = {}
    for dist in ("topoopt-milp", "pulp", "highspy", "ortools", "networkx", "numpy"):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[dist] = "not installed"
    return out


_HASHES: list[tuple[Instance, dict]] = []  # the last instance's entry: hashing it twice (a
# fixed topology: rebuilding the instance without it) cost 0.2 s per call at n = 128


def _instance_entry(instance: Instance) -> dict:
    """The ``instance`` entry of a solution file: name, content hash and, with a fixed
    topology, the hash of the instance without it."""
    if _HASHES and _HASHES[0][0] is instance:
        return dict(_HASHES[0][1])
    entry = {"name": instance.name, "hash": instance.content_hash(),
             **({} if instance.topology is None
                else {"base_hash": instance.without_topology().content_hash()})}
    _HASHES[:] = [(instance, entry)]
    return dict(entry)


def solution_dict(result: SolveResult, instance: Instance | None, metrics: dict | None) -> dict:
    """The ``topoopt-solution/1`` JSON object of a result on ``instance`` (``None``: the
    ``instance`` entry is ``None``)."""
    topo = result.topology
    return {
        "format": SOLUTION_FORMAT,
        "instance": None if instance is None else _instance_entry(instance),
        "method": result.method,
        "params": result.params,
        "seed": result.seed,
        "status": result.status.value,
        "objective": result.objective,
        "objective_kind": result.objective_kind,
        "bound": result.bound,
        "gap": result.gap,
        "runtime_s": result.runtime_s,
        "backend": result.backend,
        "backend_version": result.backend_version,
        "scale": result.scale,
        "message": result.message,
        "scope": None if result.scope is None else {**result.scope.to_dict(),
                                                    "text": result.scope.describe()},
        "scope_status": result.scope_status,
        "constraints": dict(result.constraints),
        "info": result.info,
        "features": None if result.features is None else result.features.to_dict(),
        "versions": versions(),
        "topology": None
        if topo is None
        else {
            "n": topo.n,
            "links": topo.link_list(),
            "jumps": None if topo.jumps is None else list(topo.jumps),
        },
        "routing": None if result.routing is None else result.routing.to_dict(),
        "metrics": metrics,
    }


def write_solution(path: str | Path, result: SolveResult, instance: Instance,
                   metrics: dict | None = None) -> None:
    """Write the solution file (``metrics`` default: the result's own): the text of
    :func:`solution_text`, so the file holds exactly what the checker was shown."""
    write_text(path, solution_text(result, instance, metrics))  # a failed write keeps it


# The last text made, with the very objects it was made from: certification
# (:func:`topoopt_milp.pipeline.certify_solution`) serialises the result to check the file's
# own text; writing it next reuses that text instead of a second pass over ~10^6 values
# (n = 128). Results are frozen; their dicts (``info``, ``params``) are not changed after
# certification, which is what makes the identity test sufficient.
_LAST_TEXT: list[tuple[SolveResult, Instance, dict | None, str]] = []
LAYOUT_DEPTH = 3  # top level, its objects, their lists: one commodity or link per line


def solution_text(result: SolveResult, instance: Instance, metrics: dict | None = None) -> str:
    """The text of the solution file of ``result`` on ``instance``: :func:`solution_dict`
    through :func:`finite_json`, as JSON indented to :data:`LAYOUT_DEPTH` levels (deeper
    values on one line each, written by the C encoder: the pure-Python indenting encoder
    took 3 s of the 5 s of writing an n = 128 file)."""
    metrics = result.metrics if metrics is None else metrics
    if _LAST_TEXT:
        r, i, m, text = _LAST_TEXT[0]
        if r is result and i is instance and m is metrics:
            return text
    obj = solution_dict(result, instance, metrics)
    try:
        text = _layout(obj, LAYOUT_DEPTH, "")
    except ValueError:  # a non-finite float somewhere: written as null (finite_json)
        text = _layout(finite_json(obj), LAYOUT_DEPTH, "")
    text += "\n"
    _LAST_TEXT[:] = [(result, instance, metrics, text)]
    return text


def _scalar(value: Any) -> Any:
    """``default`` of the encoder: a numpy scalar as its Python number (as finite_json)."""
    if hasattr(value, "item") and not isinstance(value, dict | list | str):
        return value.item()
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


def _key(key: Any) -> str:
    """An object key as JSON writes it (a non-string key becomes its JSON text, quoted)."""
    return json.dumps(key if isinstance(key, str) else json.dumps(key))


def _layout(obj: Any, depth: int, pad: str) -> str:
    """``obj`` as JSON, objects and lists broken one item per line for ``depth`` levels;
    a ``ValueError`` on a non-finite float (``allow_nan=False``)."""
    if depth > 0 and isinstance(obj, dict) and obj:
        inner = pad + " "
        return "{\n" + ",\n".join(
            f"{inner}{_key(k)}: {_layout(v, depth - 1, inner)}"
            for k, v in obj.items()) + f"\n{pad}}}"
    if depth > 0 and isinstance(obj, list | tuple) and obj:
        inner = pad + " "
        return "[\n" + ",\n".join(f"{inner}{_layout(v, depth - 1, inner)}"
                                  for v in obj) + f"\n{pad}]"
    return json.dumps(obj, allow_nan=False, default=_scalar)


def finite_json(obj: Any) -> Any:
    """``obj`` as written to a file: non-finite floats (an infinite diameter) become null,
    keeping the file valid JSON; numpy scalars become Python numbers."""
    if hasattr(obj, "item") and not isinstance(obj, dict | list | str):
        obj = obj.item()
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, dict):
        return {k: finite_json(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [finite_json(v) for v in obj]
    return obj


def read_solution(path: str | Path) -> dict:
    """Load a solution file as its JSON object, refusing unknown formats by name.

    The file is read strictly (:func:`~topoopt_milp.core.jsonfile.read_json`) and its shape checked
    (:func:`_check_shape`); every defect is a :class:`SolutionError` naming the file and the
    field. Whether the solution is *right* for an instance is the independent checker's job."""
    data = read_json(path, SolutionError)
    if not isinstance(data, dict) or data.get("format") != SOLUTION_FORMAT:
        got = data.get("format") if isinstance(data, dict) else None
        raise SolutionError(f"{path}: format: expected {SOLUTION_FORMAT!r}, got {got!r}")
    try:
        _check_shape(data)
    except SolutionError as exc:
        raise SolutionError(f"{path}: {exc}") from None
    return data


# -- shape of a solution file: the readers below index it freely, so a malformed file must be
# refused here, naming the field, instead of surfacing as a KeyError deep inside a reader.
# Node ids and link counts are bounded by the largest instance (MAX_N) before anything is
# built from them: no array is ever sized by a number taken from the file.
def _need(obj: Any, key: str, kinds: tuple[type, ...], where: str, nullable: bool = False) -> Any:
    if not isinstance(obj, dict) or key not in obj:
        raise SolutionError(f"{where}.{key}: required field is missing".lstrip("."))
    return _typed(obj[key], kinds, f"{where}.{key}".lstrip("."), nullable)


def _typed(value: Any, kinds: tuple[type, ...], where: str, nullable: bool = False) -> Any:
    if value is None and nullable:
        return None
    if isinstance(value, bool) and bool not in kinds or not isinstance(value, kinds):
        names = {dict: "object", int: "integer", float: "number"}.get(kinds[-1], kinds[-1].__name__)
        raise SolutionError(f"{where}: expected {names}, got {_short(value)}")
    return value


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 24 else f"{text[:12]}...({len(text)} characters)"


def _ints(values: list, where: str, what: str = "node id") -> None:
    for v in values:
        if isinstance(v, bool) or not isinstance(v, int):
            raise SolutionError(f"{where}: expected {what}s (integers), got {_short(v)}")
        if not -MAX_N <= v <= MAX_N:
            raise SolutionError(f"{where}: {what} {_short(v)} is out of range (instances have "
                                f"at most {MAX_N} servers and ports)")


_NUM = (int, float)
# optional header fields: (key, kinds); all may be null except where noted in _check_shape
_HEADER = (("method", (str,)), ("params", (dict,)), ("objective_kind", (str,)),
           ("gap", _NUM), ("runtime_s", _NUM), ("backend", (str,)), ("backend_version", (str,)),
           ("scale", _NUM), ("message", (str,)), ("scope", (dict,)), ("scope_status", (str,)),
           ("info", (dict,)), ("features", (dict,)), ("versions", (dict,)), ("metrics", (dict,)),
           ("constraints", (dict,)))


def _check_shape(data: dict) -> None:
    """Raise :class:`SolutionError` naming the first field of a malformed solution object."""
    inst = _need(data, "instance", (dict,), "")
    for key in ("hash", "base_hash", "name"):
        if key in inst:
            _need(inst, key, (str,), "instance", nullable=key != "hash")
    _need(data, "status", (str,), "")
    for key in ("objective", "bound"):
        if key in data:
            _need(data, key, _NUM, "", nullable=True)
    for key, kinds in _HEADER:
        if key in data:
            _need(data, key, kinds, "", nullable=True)
    if "seed" in data:
        _need(data, "seed", (int,), "")
    topo = _need(data, "topology", (dict,), "", nullable=True)
    if topo is not None:
        n = _need(topo, "n", (int,), "topology")
        if not 2 <= n <= MAX_N:
            raise SolutionError(f"topology.n: {_short(n)} is out of range 2..{MAX_N}")
        for k, row in enumerate(_need(topo, "links", (list,), "topology")):
            if not isinstance(row, list) or len(row) != 3:
                raise SolutionError(f"topology.links[{k}]: expected [i, j, count]")
            _ints(row[:2], f"topology.links[{k}]")
            _ints(row[2:], f"topology.links[{k}][2]", "link count")
        jumps = topo.get("jumps")
        if jumps is not None:
            _ints(_typed(jumps, (list,), "topology.jumps"), "topology.jumps")
    routing = _need(data, "routing", (dict,), "", nullable=True)
    if routing is None:
        return
    for k, ring in enumerate(_need(routing, "rings", (list,), "routing")):
        where = f"routing.rings[{k}]"
        _need(ring, "group", (int,), where)
        _ints(_need(ring, "order", (list,), where), f"{where}.order")
        _need(ring, "share", _NUM, where)
    # a routing may give the rings only (a topology file with its rings): no commodities
    commodities = _need(routing, "commodities", (list,), "routing") \
        if "commodities" in routing else []
    for k, com in enumerate(commodities):
        where = f"routing.commodities[{k}]"
        for key in ("src", "dst"):
            _ints([_need(com, key, (int,), where)], f"{where}.{key}")
        _need(com, "tag", (int,), where)
        _need(com, "bytes", _NUM, where)
        _need(com, "kind", (str,), where)
        for q, path in enumerate(_need(com, "paths", (list,), where)):
            _ints(_need(path, "nodes", (list,), f"{where}.paths[{q}]"), f"{where}.paths[{q}].nodes")
            _need(path, "fraction", _NUM, f"{where}.paths[{q}]")


def result_from_solution(data: dict) -> SolveResult:
    """Rebuild a :class:`SolveResult` from a solution JSON object (for warm starts and
    ``--topology``)."""
    topo = None
    if data.get("topology") is not None:
        t = data["topology"]
        try:
            topo = Topology.from_link_list(int(t["n"]), t["links"], t.get("jumps"))
        except (KeyError, TypeError, ValueError) as exc:
            raise SolutionError(f"topology: {exc}") from None
    routing = None if data.get("routing") is None else Routing.from_dict(data["routing"])
    try:
        status = Status(data["status"])
    except (KeyError, ValueError):
        raise SolutionError(f"status: unknown value {data.get('status')!r}") from None
    return SolveResult(
        method=str(data.get("method", "?")),
        status=status,
        objective=data.get("objective"),
        bound=data.get("bound"),
        runtime_s=float(data.get("runtime_s") or 0.0),
        topology=topo,
        routing=routing,
        seed=int(data.get("seed", 0)),
        params=dict(data.get("params") or {}),
        backend=data.get("backend"),
        backend_version=data.get("backend_version"),
        objective_kind=data.get("objective_kind") or "comm_time",
        scale=data.get("scale"),
        message=data.get("message") or "",
        scope=_scope_from(data.get("scope")),
        scope_status=data.get("scope_status"),
        info=dict(data.get("info") or {}),
        constraints=dict(data.get("constraints") or {}),
    )


def _scope_from(data: Any) -> Scope | None:
    if data is None:
        return None
    try:
        return Scope.from_dict(data)
    except (TypeError, ValueError, KeyError):
        raise SolutionError(f"scope: not a valid scope object: {data!r}") from None
