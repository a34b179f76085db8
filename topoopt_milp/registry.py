"""Method name -> solver callable, with what each method solves and how far its bound reaches.

Every method is a function ``solve(instance: Instance, options: SolveOptions) -> SolveResult``
living in a heuristics or formulations module. Each row of :data:`METHODS` states

* ``problem`` -- the family whose solutions it returns (select, alloc, route, joint), which
  fixes what "optimal" means for it (DESIGN.md section 10);
* ``kind`` -- ``heuristic`` (no bound), ``exact`` (its bound is valid for its family's
  problem) or ``restricted`` (its optimum and bound hold only for its own restricted model);
* ``backend`` and the ``module:function`` implementing it; ``params``, the parameter class
  of its knobs (:mod:`topoopt_milp.params`); ``preset``, knobs fixed by this row (the ``-lp``
  variants of the heuristics);
* ``scope`` -- its bound's scope in words, as ``topoopt-milp methods`` prints it; every result
  carries its scope as data (:class:`~topoopt_milp.scope.Scope`), which the tables use;
* ``warm_start`` -- the heuristic whose solution starts it when the caller gives none
  (``SolverParams.auto_warm_start``). Warm starts are computed here and passed in, so no
  formulation imports a heuristic;
* ``max_n`` -- the largest cluster the method is meant for (``None``: the instance limit).
  :func:`solve` refuses a larger one, and one whose estimated memory exceeds the limit, at
  once (:func:`topoopt_milp.sizes.check`).

Modules are imported only when a method is used, so listing methods costs nothing. Adding a
method means adding its module and one row here.
"""

from __future__ import annotations

import importlib
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from . import params as P
from . import sizes
from .errors import InputError
from .instance import Instance
from .params import DeadlineExceeded, ParamError, SolveOptions, SolverParams
from .result import SolveResult

log = logging.getLogger(__name__)

class UnknownMethodError(InputError):
    """The method name is not in the registry."""


KINDS = ("heuristic", "exact", "restricted")
PROBLEMS = ("select", "alloc", "route", "joint")


@dataclass(frozen=True)
class Method:
    name: str
    problem: str
    kind: str
    backend: str  # heuristic | milp | cpsat | approx | analytic
    target: str  # "module:function", relative to the package
    params: type[P.Params]
    description: str
    scope: str = ""
    warm_start: str | None = None
    preset: Mapping[str, Any] = field(default_factory=dict)
    max_n: int | None = None

    def __post_init__(self) -> None:
        assert self.kind in KINDS and self.problem in PROBLEMS, self

    @property
    def solve(self) -> Callable[[Instance, SolveOptions], SolveResult]:
        module, func = self.target.split(":")
        return getattr(importlib.import_module(module, __package__), func)

    @property
    def exact(self) -> bool:
        return self.kind != "heuristic"

    def to_dict(self) -> dict[str, Any]:
        """JSON form (sweep tasks carry it to child processes and Dask workers)."""
        return {"name": self.name, "problem": self.problem, "kind": self.kind,
                "backend": self.backend, "target": self.target,
                "params": f"{self.params.__module__}:{self.params.__qualname__}",
                "description": self.description, "scope": self.scope,
                "warm_start": self.warm_start, "preset": dict(self.preset),
                "max_n": self.max_n}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Method:
        module, name = str(data["params"]).split(":")
        params = getattr(importlib.import_module(module), name)
        return cls(**{**dict(data), "params": params})

    def options(self, knobs: Mapping[str, Any] | None = None, *, seed: int = 0,
                warm_start: SolveResult | None = None, export: str | None = None,
                strict: bool = True) -> SolveOptions:
        """:class:`SolveOptions` for this method from flat ``knobs`` (solver and method knobs
        by name). ``strict``: a knob this method does not have is an error naming it
        (``False``: ignored, for sweeps whose ``--set`` serves several methods). A preset knob
        cannot be overridden."""
        knobs = dict(knobs or {})
        clash = sorted(k for k in knobs if k in self.preset and knobs[k] != self.preset[k])
        if clash:
            raise ParamError(f"{clash[0]}: {self.name} fixes {clash[0]} = {self.preset[clash[0]]!r}")
        knobs.update(self.preset)
        solver_keys, own = set(SolverParams.names()), set(self.params.names())
        unknown = sorted(set(knobs) - solver_keys - own)
        if unknown and strict:
            known = ", ".join(sorted(solver_keys | own))
            raise ParamError(f"{unknown[0]}: not a parameter of {self.name} (known: {known})")
        return SolveOptions(
            seed=seed,
            solver=SolverParams.from_mapping({k: v for k, v in knobs.items() if k in solver_keys}),
            method=self.params.from_mapping({k: v for k, v in knobs.items() if k in own},
                                            self.name),
            warm_start=warm_start, export=export)


_H = "heuristic"
_ANY = "every topology with the port budget"
_TOTIENT = "TotientPerms ring orders, free split"
_ALLOC_SCOPE = f"{_ANY}; {_TOTIENT} (rings=choose; a fixed ring set otherwise); fractional routing"
_ROUTE_SCOPE = "the instance's fixed topology and rings; fractional routing"


def _heuristic(name, target, params, description, problem="alloc", preset=None) -> Method:
    return Method(name, problem, _H, _H, target, params, description, preset=preset or {})


_LP = {"routing": "lp"}
METHODS: dict[str, Method] = {
    m.name: m
    for m in (
        _heuristic("totientperms", ".heuristics.totient:solve", P.TotientParams,
                   "TotientPerms: d/2 coprime ring jumps (SelectPermutations), coin-change routing",
                   problem="select"),
        _heuristic("topologyfinder", ".heuristics.topology_finder:solve", P.TopologyFinderParams,
                   "TopologyFinder: degree split, TotientPerms for AllReduce, Blossom rounds for MP"),
        _heuristic("expander", ".heuristics.baselines:solve_expander", P.RoutingParams,
                   "seeded random d-regular graph (expander), shortest-path routing"),
        _heuristic("demand-greedy", ".heuristics.baselines:solve_demand_greedy", P.RoutingParams,
                   "OCS-style greedy: heaviest demands first, merging components, then fill ports"),
        _heuristic("ring", ".heuristics.baselines:solve_ring", P.RoutingParams,
                   "bidirectional ring i -- i+1 with d/2 parallel links"),
        _heuristic("torus", ".heuristics.baselines:solve_torus", P.RoutingParams,
                   "2-D torus (d = 4, n = a*b with a, b >= 3)"),
        _heuristic("hypercube", ".heuristics.baselines:solve_hypercube", P.RoutingParams,
                   "hypercube (n = 2^d)"),
        _heuristic("totientperms-lp", ".heuristics.totient:solve", P.TotientParams,
                   "TotientPerms' topology and rings, optimal fractional routing (route LP)",
                   problem="select", preset=_LP),
        _heuristic("topologyfinder-lp", ".heuristics.topology_finder:solve",
                   P.TopologyFinderParams,
                   "TopologyFinder's topology and rings, optimal fractional routing (route LP)",
                   preset=_LP),
        _heuristic("expander-lp", ".heuristics.baselines:solve_expander", P.RoutingParams,
                   "the expander's topology and rings, optimal fractional routing", preset=_LP),
        _heuristic("demand-greedy-lp", ".heuristics.baselines:solve_demand_greedy",
                   P.RoutingParams,
                   "demand-greedy's topology and rings, optimal fractional routing", preset=_LP),
        Method("select-milp", "select", "exact", "milp", ".formulations.select:solve_milp",
               P.SelectParams, "choose d/2 ring jumps: MILP (PuLP; HiGHS or CBC)", max_n=1024,
               scope="circulants with jumps from the candidate set; TotientPerms ring orders "
                     "(comm_time, rings=choose); fractional routing",
               warm_start="totientperms"),
        Method("select-cpsat", "select", "exact", "cpsat", ".formulations.select:solve_cpsat",
               P.SelectCpsatParams, "choose d/2 ring jumps: CP-SAT", max_n=1024,
               scope="diameter / total_hops: circulants with jumps from the candidate set; "
                     "comm_time: restricted (integer flows, default rings)",
               warm_start="totientperms"),
        Method("alloc-milp", "alloc", "exact", "milp", ".formulations.alloc:solve_milp",
               P.AllocMilpParams, "integer link matrix under the port budget with routing: MILP",
               scope=_ALLOC_SCOPE, warm_start="topologyfinder", max_n=64),
        Method("alloc-benders", "alloc", "exact", "milp", ".formulations.alloc_benders:solve",
               P.AllocBendersParams,
               "alloc-milp's problem by metric-inequality (Benders) decomposition: MILP master",
               scope=_ALLOC_SCOPE, warm_start="topologyfinder", max_n=256),
        Method("lower-bounds", "alloc", "exact", "analytic", ".bounds:solve",
               P.LowerBoundParams,
               "lower bounds only (no solution): port-aware hop counting, cut-sets, ideal "
               "switch, Moore, optionally the Benders master",
               scope=f"{_ANY}; {_TOTIENT} (rings=choose) or any ring orders; fractional "
                     "routing"),
        Method("alloc-alternate", "alloc", _H, "highs", ".heuristics.alloc_alternate:solve",
               P.AllocAlternateParams,
               "ATRO-style alternation of an exact link step and the route LP with free ring "
               "shares, from the best heuristic (an upper bound: no bound of its own)",
               warm_start=None),
        Method("alloc-cpsat", "alloc", "restricted", "cpsat", ".formulations.alloc:solve_cpsat",
               P.AllocCpsatParams,
               "integer link matrix under the port budget with path choice: CP-SAT",
               scope="restricted: candidate paths of K_n, pieces per commodity, integer volumes",
               warm_start="topologyfinder", max_n=64),
        Method("route-milp", "route", "exact", "milp", ".formulations.route:solve_milp",
               P.RouteMilpParams,
               "min-congestion routing on a fixed topology: LP / path LP / unsplittable MILP",
               scope=_ROUTE_SCOPE + " (variants ksp / unsplittable: restricted)", max_n=2048),
        Method("route-approx", "route", "exact", "approx", ".formulations.route_approx:solve",
               P.RouteApproxParams,
               "(1+eps)-approximate min-congestion routing on a fixed topology: path column "
               "generation with a certified Lagrangian bound",
               scope=_ROUTE_SCOPE),
        Method("route-cpsat", "route", "restricted", "cpsat", ".formulations.route_cpsat:solve",
               P.RouteCpsatParams,
               "unsplittable min-congestion routing on a fixed topology: CP-SAT",
               scope="restricted: one of k candidate paths per commodity", max_n=1024),
        Method("joint-milp", "joint", "exact", "milp", ".formulations.joint:solve_milp",
               P.JointMilpParams,
               "links + routing + AllReduce ring orders: MILP with subtour elimination",
               scope=f"{_ANY}; any rings_per_group ring orders per group, free split; "
                     "fractional routing", warm_start="topologyfinder", max_n=32),
        Method("joint-cpsat", "joint", "restricted", "cpsat", ".formulations.joint:solve_cpsat",
               P.JointCpsatParams,
               "links + routing + AllReduce ring orders: CP-SAT with circuit constraints",
               scope="restricted: equal ring shares, candidate paths, integer volumes",
               warm_start="topologyfinder", max_n=32),
    )
}


def get(name: str) -> Method:
    try:
        return METHODS[name]
    except KeyError:
        known = ", ".join(METHODS)
        raise UnknownMethodError(f"method: unknown method {name!r} (known: {known})") from None


def available(name: str) -> bool:
    """True when the method's module can be imported."""
    try:
        get(name).solve  # noqa: B018 - importing is the check
    except (ImportError, AttributeError):
        return False
    return True


def knob_names() -> set[str]:
    """Every knob any method (or the solver) has."""
    names = set(SolverParams.names())
    for m in METHODS.values():
        names |= set(m.params.names())
    return names


def solve(instance: Instance, method: str, options: SolveOptions | None = None, *,
          seed: int = 0, warm_start: SolveResult | None = None, export: str | None = None,
          **knobs: Any) -> SolveResult:
    """Solve ``instance`` with the named method (no independent check; see
    :func:`topoopt_milp.pipeline.solve_checked` for that).

    Either pass ``options`` or give the knobs as keywords:
    ``solve(inst, "alloc-milp", time_limit=5, rings="given")``. When the method has a default
    warm-start heuristic, none is given and ``auto_warm_start`` is on, the heuristic runs first
    and its runtime is added to the result's."""
    m = get(method)
    started = time.perf_counter()
    if options is None:
        options = m.options(knobs, seed=seed, warm_start=warm_start, export=export)
    elif knobs:
        raise ParamError(f"{next(iter(knobs))}: give the knobs either in options or as keywords")
    sizes.check(m, instance, options)  # refuse what the method cannot handle, before any work
    if options.deadline is None and options.solver.time_limit is not None:
        # the time limit covers the whole solve: warm start, model building, solver, extraction
        options = options.with_(deadline=started + options.solver.time_limit)
    warm_s = 0.0
    if options.warm_start is None and m.warm_start and options.solver.auto_warm_start:
        t0 = time.perf_counter()
        heuristic = get(m.warm_start)
        try:
            start = heuristic.solve(instance, heuristic.options(seed=options.seed))
        except ValueError as exc:  # a heuristic that cannot build a start must not stop the model
            log.warning("%s: no %s warm start: %s", method, m.warm_start, exc)
        else:
            options = options.with_(warm_start=start)
        warm_s = time.perf_counter() - t0
    try:
        result = m.solve(instance, options)
    except DeadlineExceeded as exc:
        from .formulations.certify import out_of_time

        result = out_of_time(m.backend, instance, options, str(exc),
                             time.perf_counter() - started - warm_s)
    result = result.with_(method=m.name)
    if warm_s:
        result = result.with_(runtime_s=result.runtime_s + warm_s)
    return result
