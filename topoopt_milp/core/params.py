"""Typed, validated parameters: the base class, the solver's limits and the shared knobs.

Every knob a method reads is a field of a frozen dataclass declared with :func:`knob` (default,
help text, allowed values, bounds). The classes are the single definition of each knob:

* a value is validated when the object is built, so an unknown key or a bad value (a negative
  or NaN time limit, ``threads < 1``, ``mip_gap < 0``, an unknown ring mode) raises
  :class:`ParamError` naming the key;
* the run key of a benchmark run is derived from :meth:`Params.to_dict` (no hand-kept list);
* the command line builds its options, choices, defaults and help from the same fields
  (:func:`topoopt_milp.cli.options.knob_options`), so ``solve`` reaches every knob that
  ``bench --set`` reaches.

What a method receives is a :class:`SolveOptions`: the seed, the :class:`SolverParams`, the
method's own parameter object (its class lives in the method's module and is named by its
spec), and the inputs that are not parameters (a warm start, an export path, the hand-in of
other methods). Adding a knob to a method means adding one field to its class; nothing else
lists knobs. This module holds the base class, the solver's knobs and the knob definitions
that several methods share.
"""

from __future__ import annotations

import math
import typing
from collections.abc import Callable
from dataclasses import MISSING, dataclass, field, fields, replace
from types import NoneType, UnionType
from typing import TYPE_CHECKING, Any

from .deadline import Deadline
from .errors import InputError

if TYPE_CHECKING:  # a warm start is a result; results do not depend on parameters' internals
    from .result import SolveResult


class ParamError(InputError):
    """A parameter is unknown or has an invalid value; the message names the key."""


class DeadlineExceeded(Exception):
    """The time limit ran out before the solver started (see
    :meth:`SolveOptions.check_deadline`); the method returns its warm start instead."""


def knob(default: Any, help: str, *, choices: tuple | None = None,
         minimum: float | None = None, maximum: float | None = None,
         positive: bool = False, flag: str | None = None,
         constraint: Callable[[Any, Any], dict] | None = None) -> Any:
    """A parameter field: ``default``, one-line ``help``, allowed string ``choices`` and
    numeric bounds (``minimum <= value <= maximum``; ``positive``: ``value > 0``); ``flag``
    overrides the command-line spelling (default ``--name-with-dashes``). ``constraint``:
    ``constraint(value, instance) -> dict``, the constraints this value puts on every
    solution (recorded in the solution file and enforced by the independent checker: see
    :meth:`SolveOptions.constraints`)."""
    meta = {"help": help, "choices": choices, "minimum": minimum, "maximum": maximum,
            "positive": positive, "flag": flag, "constraint": constraint}
    return field(default=default, metadata=meta)


@dataclass(frozen=True)
class Params:
    """Base class of the parameter classes: validation on construction, dict round trip."""

    def __post_init__(self) -> None:
        hints = typing.get_type_hints(type(self))
        for f in fields(self):
            value = _validated(f.name, getattr(self, f.name), hints[f.name], f.metadata)
            object.__setattr__(self, f.name, value)

    @classmethod
    def names(cls) -> tuple[str, ...]:
        return tuple(f.name for f in fields(cls))

    @classmethod
    def knobs(cls) -> tuple:
        """The dataclass fields (with their :func:`knob` metadata)."""
        return fields(cls)

    @classmethod
    def from_mapping(cls, values: typing.Mapping[str, Any], what: str = "") -> Params:
        """Build from a mapping, refusing unknown keys by name."""
        unknown = sorted(set(values) - set(cls.names()))
        if unknown:
            owner = f" of {what}" if what else ""
            known = ", ".join(cls.names()) or "none"
            raise ParamError(f"{unknown[0]}: not a parameter{owner} (known: {known})")
        return cls(**dict(values))

    def to_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    def with_(self, **changes: Any) -> Params:
        return replace(self, **changes)


def _validated(name: str, value: Any, hint: Any, meta: typing.Mapping[str, Any]) -> Any:
    if hint is dict or typing.get_origin(hint) is dict:  # knobs passed on to another method
        if not isinstance(value, typing.Mapping):
            raise ParamError(f"{name}: expected an object of knobs, got {value!r}")
        return dict(value)
    kinds = typing.get_args(hint) if isinstance(hint, UnionType) else (hint,)
    if value is None:
        if NoneType in kinds:
            return None
        raise ParamError(f"{name}: a value is required")
    choices = meta.get("choices")
    if isinstance(value, str) and str in kinds:
        if choices and value not in choices:
            raise ParamError(f"{name}: {value!r} is not one of {', '.join(map(str, choices))}")
        return value
    if isinstance(value, bool):
        if bool in kinds:
            return value
        raise ParamError(f"{name}: expected {_kind_names(kinds)}, got {value!r}")
    number = None
    if int in kinds and isinstance(value, int | float) and float(value).is_integer() \
            and math.isfinite(float(value)):
        number = int(value)
    elif float in kinds and isinstance(value, int | float):
        number = float(value)
    if number is None:
        raise ParamError(f"{name}: expected {_kind_names(kinds)}, got {value!r}")
    if isinstance(number, float) and not math.isfinite(number):
        raise ParamError(f"{name}: must be finite, got {value!r}")
    lo, hi = meta.get("minimum"), meta.get("maximum")
    if lo is not None and number < lo:
        raise ParamError(f"{name}: must be >= {lo:g}, got {value!r}")
    if hi is not None and number > hi:
        raise ParamError(f"{name}: must be <= {hi:g}, got {value!r}")
    if meta.get("positive") and number <= 0:
        raise ParamError(f"{name}: must be > 0, got {value!r}")
    return number


def _kind_names(kinds) -> str:
    names = {int: "an integer", float: "a number", bool: "true or false", str: "a string"}
    return " or ".join(names[k] for k in kinds if k in names)


# -- solver limits and tolerances (every exact method) -------------------------------------------
@dataclass(frozen=True)
class SolverParams(Params):
    """Limits and tolerances of the exact backends (HiGHS, CBC, CP-SAT)."""

    time_limit: float | None = knob(
        None, "Time limit of the whole solve [s] (exact methods).", minimum=0)
    threads: int = knob(1, "Solver threads.", minimum=1)
    mip_gap: float = knob(1e-6, "Relative MIP gap at which exact solvers stop and claim optimality.",
                          minimum=0, maximum=1)
    solver: str = knob("highs", "MILP/LP solver behind PuLP models.", choices=("highs", "cbc"))
    lp_algorithm: str = knob(
        "ipm", "HiGHS LP algorithm for LPs (route-milp): ipm (interior point, the fastest "
        "measured from n = 32 on; practical to n ~ 128-256 on 2 cores; beyond, use "
        "route-approx), simplex (17-27x slower from n = 64), pdlp (first order: not practical "
        "at 1e-4..1e-6 tolerances on 2 cores).", choices=("ipm", "simplex", "pdlp"))
    crossover: str = knob(
        "auto", "Interior-point crossover: auto (on where the LP's routing is the result, as in "
        "route-milp and the -lp variants: a vertex solution splits far fewer commodities; off "
        "for the searches' inner route LPs, where only the value matters), on, off.",
        choices=("auto", "on", "off"))
    ipm_tolerance: float | None = knob(
        None, "HiGHS interior-point optimality tolerance (default HiGHS's own, 1e-8).",
        positive=True)
    auto_warm_start: bool = knob(
        True, "Start exact methods from their default heuristic when no warm start is given.")
    solver_log: bool = knob(False, "Show the solver's own log on stderr.")


# -- knobs shared by several methods ----------------------------------------------------------
RINGS_HELP = ("AllReduce ring space: choose (free split over the TotientPerms orders), given (the "
              "default bidirectional rings), warm (the warm start's rings); route: fixed (the "
              "topology's own rings, else the default ones laid along its jumps; route-approx "
              "also choose).")


def k_paths_knob() -> Any:
    """The one definition of ``k_paths`` (shared by every path-restricted model)."""
    return knob(4, "Candidate paths per commodity (ksp / unsplittable / CP-SAT models).", minimum=1)


def max_multiplicity_knob() -> Any:
    """The cap on parallel links per node pair, shared by every method that allocates links
    (a constraint every solution must meet: ``constraints.max_multiplicity``)."""
    return knob(None, "Most parallel links per node pair (default: the degree, i.e. no "
                      "restriction).", minimum=1, constraint=_multiplicity_constraint)


def _multiplicity_constraint(value: int | None, instance: Any) -> dict:
    return {} if value is None else {"max_multiplicity": int(value)}


def route_rings_knob(choose: bool = False) -> Any:
    """The ``rings`` knob of the route family: ``fixed`` routes the instance's fixed rings
    (orders and shares), a constraint every solution must meet (``constraints.rings``);
    ``default`` lays the default rings along the topology's jumps; with ``choose`` (a method
    that can) every group splits freely over its TotientPerms orders."""
    return knob("fixed", RINGS_HELP, choices=("fixed", "default", *(("choose",) if choose else ())),
                constraint=_fixed_rings_constraint)


def _fixed_rings_constraint(value: str, instance: Any) -> dict:
    topo = getattr(instance, "topology", None)
    if value != "fixed" or topo is None or topo.rings is None:
        return {}
    return {"rings": [{"group": g, "order": list(order), "share": share}
                      for g, order, share in topo.rings]}


# -- what a method receives ----------------------------------------------------------------------
@dataclass(frozen=True)
class SolveOptions:
    """Everything a method reads: ``seed``, ``solver`` limits, the method's own ``method``
    parameters (an instance of the class its spec names), and the inputs that are not
    parameters: ``warm_start`` (a :class:`~topoopt_milp.core.result.SolveResult` to start from),
    ``export`` (write the model to this ``.mps`` / ``.lp`` path) and ``run_method``, how a
    method runs another one by name, ``run_method(instance, name, knobs, seed)`` (handed in by
    the registry, so that no method imports it: the route LP of the ``-lp`` heuristics, the
    start heuristics of a search)."""

    seed: int = 0
    solver: SolverParams = field(default_factory=SolverParams)
    method: Params = field(default_factory=Params)
    warm_start: SolveResult | None = None
    export: str | None = None
    deadline: Deadline | None = None  # the one clock of the solve (core/deadline.py)
    run_method: Callable[..., SolveResult] | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        if isinstance(self.seed, bool) or not isinstance(self.seed, int):
            raise ParamError(f"seed: expected an integer, got {self.seed!r}")

    def with_(self, **changes: Any) -> SolveOptions:
        return replace(self, **changes)

    def check_deadline(self, keep: float = 0.0) -> None:
        """Raise :class:`DeadlineExceeded` when the time limit has run out, ``keep`` seconds
        kept back (model builders call this between their loops, so that building never runs
        far past the limit)."""
        if self.deadline is not None and self.deadline.expired(keep):
            raise DeadlineExceeded(f"time limit of {self.deadline.limit:g} s reached while "
                                   "building the model")

    def time_left(self, keep: float = 0.0) -> float | None:
        """Seconds the solver may still use: the time limit minus what the solve has spent so
        far (start-up, warm start, model building), minus the deadline's reserve (checking
        and writing) and ``keep`` (extracting the solution), never below a few milliseconds
        so that a solver asked too late still hands back its incumbent; ``None`` without a
        time limit. The time limit covers the whole solve (:mod:`topoopt_milp.core.deadline`;
        registry.solve starts the clock if the caller has not)."""
        limit = self.solver.time_limit
        if limit is None:
            return None
        if self.deadline is None:
            return float(limit)
        return self.deadline.budget(keep)

    def constraints(self, instance: Any) -> dict[str, Any]:
        """The constraints these options put on every solution on ``instance``: the union of
        the ``constraint`` rules of the method's knobs (:func:`knob`), e.g.
        ``{"max_multiplicity": 1}``. The registry records them in the result, the solution
        file carries them, and the independent checker enforces them."""
        out: dict[str, Any] = {}
        for f in fields(self.method):
            rule = f.metadata.get("constraint")
            if rule is not None:
                out.update(rule(getattr(self.method, f.name), instance))
        return out

    def as_params(self) -> dict[str, Any]:
        """The flat parameter dictionary recorded in solution files and run keys."""
        return {**self.solver.to_dict(), **self.method.to_dict()}


def default_of(cls: type[Params], name: str) -> Any:
    """The default value of knob ``name`` of ``cls``."""
    f = cls.__dataclass_fields__[name]
    return None if f.default is MISSING else f.default
