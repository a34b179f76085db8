"""The methods: the built-in list, the plug-ins, and the one ``solve`` entry point.

A method is one :class:`~topoopt_milp.core.spec.MethodSpec`, exported by its own module (see
:mod:`topoopt_milp.core.spec`). The registry holds no knowledge of any method; it is

* :data:`BUILTIN`, one ``"module:NAME"`` reference per built-in method (adding a method means
  adding its module and one line here);
* the plug-ins: every entry point of the group ``topoopt_milp.methods`` of any installed
  package, whose value is such a reference to a spec (or to a tuple of specs); and a
  reference given as the method name itself (``--method package.module:NAME``), loaded on use.

A plug-in that cannot be loaded is left out with a one-line error naming it
(:func:`broken`); every other method still works. Specs are loaded on first use.
"""

from __future__ import annotations

import importlib
import logging
import time
from collections.abc import Mapping
from importlib.metadata import entry_points
from typing import Any

from .core import sizes
from .core.deadline import Deadline
from .core.errors import InputError
from .core.evaluate import unroutable
from .core.instance import Instance
from .core.params import DeadlineExceeded, ParamError, SolveOptions, SolverParams
from .core.result import SolveResult
from .core.spec import KINDS, PROBLEMS, MethodSpec  # noqa: F401 - re-exported vocabulary

log = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "topoopt_milp.methods"

BUILTIN = (
    "topoopt_milp.methods.heuristics.totient:SPEC",
    "topoopt_milp.methods.heuristics.topology_finder:SPEC",
    "topoopt_milp.methods.heuristics.baselines:EXPANDER",
    "topoopt_milp.methods.heuristics.baselines:DEMAND_GREEDY",
    "topoopt_milp.methods.heuristics.baselines:RING",
    "topoopt_milp.methods.heuristics.baselines:TORUS",
    "topoopt_milp.methods.heuristics.baselines:HYPERCUBE",
    "topoopt_milp.methods.heuristics.totient:SPEC_LP",
    "topoopt_milp.methods.heuristics.topology_finder:SPEC_LP",
    "topoopt_milp.methods.heuristics.baselines:EXPANDER_LP",
    "topoopt_milp.methods.heuristics.baselines:DEMAND_GREEDY_LP",
    "topoopt_milp.methods.heuristics.group_rings:SPEC",
    "topoopt_milp.methods.heuristics.group_rings:SPEC_LP",
    "topoopt_milp.methods.heuristics.group_split:SPEC",
    "topoopt_milp.methods.heuristics.group_split:SPEC_LP",
    "topoopt_milp.methods.formulations.select:MILP",
    "topoopt_milp.methods.formulations.select:CPSAT",
    "topoopt_milp.methods.formulations.alloc:MILP",
    "topoopt_milp.methods.alloc_benders.decomposition:SPEC",
    "topoopt_milp.methods.lower_bounds:SPEC",
    "topoopt_milp.methods.alloc_orbit.method:SPEC",
    "topoopt_milp.methods.alloc_alternate.search:SPEC",
    "topoopt_milp.methods.formulations.alloc:CPSAT",
    "topoopt_milp.methods.formulations.route:SPEC",
    "topoopt_milp.methods.route_approx.method:SPEC",
    "topoopt_milp.methods.formulations.route_cpsat:SPEC",
    "topoopt_milp.methods.formulations.joint:MILP",
    "topoopt_milp.methods.formulations.joint:CPSAT",
    "topoopt_milp.methods.alloc_search.starts:SPEC",
    "topoopt_milp.methods.alloc_search.search:SPEC",
    "topoopt_milp.methods.hop_anneal.method:SPEC",
)


class UnknownMethodError(InputError):
    """The method name is not in the registry (or its reference cannot be loaded)."""


_methods: dict[str, MethodSpec] | None = None
_broken: dict[str, str] = {}


def load_ref(ref: str) -> list[MethodSpec]:
    """The spec(s) at ``"package.module:NAME"``, each with ``ref`` set; an
    :class:`UnknownMethodError` naming the reference and the reason otherwise."""
    module, sep, attr = ref.partition(":")
    if not sep or not module or not attr:
        raise UnknownMethodError(f"method: {ref!r} is not a reference package.module:NAME")
    try:
        obj = getattr(importlib.import_module(module), attr)
    except Exception as exc:  # noqa: BLE001 - a broken plug-in is reported, never fatal
        raise UnknownMethodError(f"method: {ref} cannot be loaded: {type(exc).__name__}: "
                                 f"{exc}".splitlines()[0]) from None
    specs = list(obj) if isinstance(obj, tuple | list) else [obj]
    if not specs or not all(isinstance(s, MethodSpec) for s in specs):
        raise UnknownMethodError(f"method: {ref} is not a MethodSpec (nor a tuple of them)")
    many = len(specs) > 1
    return [s if s.ref else s.with_(ref=f"{ref}#{s.name}" if many else ref) for s in specs]


def _resolve(ref: str) -> MethodSpec:
    """One spec from a reference, ``"module:NAME"`` or ``"module:NAME#method"``."""
    base, _, name = ref.partition("#")
    specs = load_ref(base)
    if name:
        specs = [s for s in specs if s.name == name]
        if not specs:
            raise UnknownMethodError(f"method: {base} has no method {name!r}")
    elif len(specs) > 1:
        names = ", ".join(s.name for s in specs)
        raise UnknownMethodError(f"method: {ref} holds several methods ({names}): add #NAME")
    return specs[0].with_(ref=ref)


def methods() -> dict[str, MethodSpec]:
    """Every method by name: the built-in ones, then the plug-ins (loaded once)."""
    global _methods
    if _methods is None:
        found: dict[str, MethodSpec] = {}
        for ref in BUILTIN:
            for spec in load_ref(ref):  # a broken built-in is a bug: let it raise
                found[spec.name] = spec
        for ep in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
            try:
                specs = load_ref(ep.value)
            except UnknownMethodError as exc:
                _broken[ep.name] = str(exc)
                log.error("plug-in %s not loaded: %s", ep.name, exc)
                continue
            for spec in specs:
                if spec.name in found:
                    _broken[ep.name] = f"method {spec.name!r} is already defined"
                    log.error("plug-in %s not loaded: method %r is already defined", ep.name,
                              spec.name)
                    continue
                found[spec.name] = spec
        _methods = found
    return _methods


def broken() -> dict[str, str]:
    """Plug-ins that could not be loaded: entry-point name -> one-line reason."""
    methods()
    return dict(_broken)


def __getattr__(name: str) -> Any:
    if name == "METHODS":  # the mapping, loaded on first use
        return methods()
    raise AttributeError(name)


def get(name: str) -> MethodSpec:
    """The spec of a method name, or of a reference ``package.module:NAME`` (loaded, and
    kept, so a sweep's child processes resolve it the same way)."""
    table = methods()
    if name in table:
        return table[name]
    if ":" in name:
        spec = _resolve(name)
        table.setdefault(spec.name, spec)
        table[name] = spec
        return spec
    known = ", ".join(table)
    raise UnknownMethodError(f"method: unknown method {name!r} (known: {known})") from None


def available(name: str) -> bool:
    """True when the method exists and its module could be imported."""
    try:
        get(name)
    except UnknownMethodError:
        return False
    return True


def knob_names() -> set[str]:
    """Every knob any method (or the solver) has."""
    names = set(SolverParams.names())
    for m in methods().values():
        names |= set(m.params.names())
    return names


def run_method(instance: Instance, method: str, knobs: Mapping[str, Any] | None = None,
               seed: int = 0) -> SolveResult:
    """Solve ``instance`` with another method by name: what the registry hands a method in
    :attr:`SolveOptions.run_method` (a method never imports the registry)."""
    spec = get(method)
    return solve(instance, method, spec.options(dict(knobs or {}), seed=seed, strict=False))


def _restricted(spec: MethodSpec, instance: Instance, options: SolveOptions) -> bool:
    """Whether the run is a restricted model (by kind, or by its scope for these options:
    select-cpsat on comm_time), whose infeasibility proves nothing about the problem."""
    if spec.kind == "restricted":
        return True
    scope = spec.scope(instance, options)
    return scope is not None and scope.restricted


# The share of the time left that a method's default warm start may use: the model has to be
# built and solved in the rest (best-start's re-routings took 9 of 10 s at n = 64 under load,
# and alloc-milp then had nothing left to build its model in).
WARM_SHARE = 0.6


def warm_deadline(deadline: Deadline | None) -> Deadline | None:
    """The deadline a method's default warm start runs under: :data:`WARM_SHARE` of what
    ``deadline`` leaves now (the rest kept back for the method)."""
    if deadline is None:
        return None
    return deadline.keeping((1.0 - WARM_SHARE) * max(0.0, deadline.left()))


def solve(instance: Instance, method: str, options: SolveOptions | None = None, *,
          seed: int = 0, warm_start: SolveResult | None = None, export: str | None = None,
          **knobs: Any) -> SolveResult:
    """Solve ``instance`` with the named method (no independent check: see
    :func:`topoopt_milp.pipeline.solve_checked` for that).

    Parameters
    ----------
    instance : Instance
        The problem instance.
    method : str
        A method name (``topoopt-milp methods``) or a plug-in reference
        ``package.module:NAME``.
    options : SolveOptions, optional
        Seed, solver limits and the method's own parameters. Give either ``options`` or the
        knobs as keywords: ``solve(inst, "alloc-milp", time_limit=5, rings="given")``.
    seed, warm_start, export
        Used when ``options`` is not given: the seed, a result to start from, and a model
        export path (``.mps`` / ``.lp``).
    **knobs
        Solver and method knobs by name.

    Returns
    -------
    SolveResult
        Status, objective, bound and its scope, runtime, topology and routing. When the
        method has a default warm-start heuristic, none is given and ``auto_warm_start`` is
        on, the heuristic runs first and its runtime is added to the result's. The time limit
        covers the whole call.

    Raises
    ------
    UnknownMethodError
        ``method`` is not a known method nor a loadable reference.
    ParamError
        A knob is unknown to the method, or has an invalid value.
    SizeError
        The instance is beyond the method's ``max_n`` or its memory estimate is beyond the
        memory limit (refused before any work).
    NotApplicableError
        The method is of the other family: a route method on an instance that fixes no
        topology, a free-topology method on one that fixes it (:meth:`MethodSpec.refusal`).

    A provably unroutable instance (:func:`~topoopt_milp.core.evaluate.unroutable`) gives
    status ``infeasible`` at once for every exact method and heuristic; a restricted model
    runs (its infeasibility proves nothing about the problem).
    """
    m = get(method)
    started = time.perf_counter()
    if options is None:
        options = m.options(knobs, seed=seed, warm_start=warm_start, export=export)
    elif knobs:
        raise ParamError(f"{next(iter(knobs))}: give the knobs either in options or as keywords")
    sizes.check(m, instance, options)  # refuse what the method cannot handle, before any work
    m.check_applies(instance)  # the wrong family (fixed vs free topology): refused at once
    if (reason := unroutable(instance)) and not _restricted(m, instance, options):
        # no topology under the port budget routes the traffic (a proof, core/evaluate.py):
        # every exact method and heuristic says so, before its model can say anything else
        from .methods.result_step import unrouted

        return unrouted(m.name, instance, options, time.perf_counter() - started, reason) \
            .with_(constraints=options.constraints(instance))
    if options.deadline is None and options.solver.time_limit is not None:
        # the time limit covers the whole solve: warm start, model building, solver, extraction
        options = options.with_(deadline=Deadline(float(options.solver.time_limit), started))
    if options.run_method is None:
        options = options.with_(run_method=run_method)
    warm_s = 0.0
    if options.warm_start is None and m.warm_start and options.solver.auto_warm_start:
        t0 = time.perf_counter()
        heuristic = get(m.warm_start)
        limit = options.solver.time_limit
        # the start shares the caller's clock: a time-aware start (best-start) keeps to a part
        hopts = heuristic.options({} if limit is None else {"time_limit": limit}, seed=options.seed,
                                  strict=False).with_(run_method=run_method,
                                                      deadline=warm_deadline(options.deadline))
        try:
            start = heuristic.solve(instance, hopts)
        except (ValueError, DeadlineExceeded) as exc:  # no start must not stop the model
            log.warning("%s: no %s warm start: %s", method, m.warm_start, exc)
        else:
            options = options.with_(warm_start=start)
        warm_s = time.perf_counter() - t0
    if options.deadline is not None:
        log.debug("%s: %.2f s of the %g s limit spent before the method (%.2f s kept back)",
                  method, options.deadline.spent(), options.deadline.limit,
                  options.deadline.reserve)
    try:
        result = m.solve(instance, options)
    except DeadlineExceeded as exc:
        from .methods.result_step import out_of_time

        result = out_of_time(m.backend, instance, options, str(exc),
                             time.perf_counter() - started - warm_s)
    if options.deadline is not None:
        log.debug("%s: returned %.2f s into the %g s limit", method, options.deadline.spent(),
                  options.deadline.limit)
    result = result.with_(method=m.name, constraints=options.constraints(instance))
    if m.kind == "exact":
        from .methods.result_step import no_worse_than_warm

        # an exact method never returns an incumbent worse than the start it was given
        result = no_worse_than_warm(result, instance, options)
    if warm_s:
        result = result.with_(runtime_s=result.runtime_s + warm_s)
    return result
