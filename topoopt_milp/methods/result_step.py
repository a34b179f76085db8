"""The one step that turns a backend outcome into an honest :class:`SolveResult`.

Every formulation (and every heuristic, through :func:`heuristic`) ends in
:func:`honest_result`:

* **objective recomputed** -- the reported objective is never the solver's number: it is
  :func:`~topoopt_milp.core.evaluate.objective_value` of the returned topology and routing, so the
  independent checker agrees with it by construction;
* **bound clipped and scoped** -- a bound above the recomputed objective by less than
  ``OBJ_TOL`` (solver tolerance) is clipped to it; a larger excess is kept, so that the checker
  flags it. A bound whose scope does not contain the returned solution (a warm-start incumbent
  outside the model's ring space, say) is dropped from the result, with a note;
* **optimal -> feasible downgrades**, each with a note: the recomputed objective drifts from
  the model's by more than ``OBJ_TOL`` (routing extraction lost quality), integer-scaled
  volumes (CP-SAT) leave a gap above the tolerance, a latency term the models do not optimise,
  a bound missing or farther than the requested MIP gap;
* **restricted models** -- a model whose scope is restricted (candidate paths, unsplittable
  flows, integer flows, equal ring shares) never says ``optimal``: the proof holds for its own
  model only, so ``status = feasible`` and ``scope_status = optimal``. Its infeasibility proves
  nothing about the problem either: ``no_solution``;
* **incumbent, never nothing** -- a solver stopped without a solution returns the ``fallback``
  incumbent (the warm start) when one is given, with status ``feasible`` and the solver's
  bound when the bound's scope covers it; a communication-time result without a usable solver
  bound reports the analytic lower bound (ideal switch / Moore), valid for every solution;
* **interrupted** -- a solver stopped by the user (Ctrl-C) returns its incumbent with status
  ``feasible`` and ``info["interrupted"]``.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import numpy as np

from ..core.evaluate import arc_loads, congestion, lower_bound, objective_value, unroutable
from ..core.instance import Instance
from ..core.params import SolveOptions
from ..core.result import SolveResult, Status
from ..core.routing import RoutingError, route
from ..core.scope import Features, Scope
from ..core.topology import Ring, Routing, Topology

log = logging.getLogger(__name__)

OBJ_TOL = 1e-5  # relative: LP tolerances are ~1e-7; routing extraction must not lose more


def honest_result(
    method: str,
    instance: Instance,
    options: SolveOptions,
    outcome,
    topology: Topology | None,
    routing: Routing | None,
    *,
    scope: Scope | None,
    runtime: float,
    bound: float | None = None,
    model_objective: float | None = None,
    objective_kind: str = "comm_time",
    exact_model: bool = True,
    scale: float | None = None,
    notes: Sequence[str] = (),
    info: dict | None = None,
    fallback: tuple[Topology, Routing] | None = None,
) -> SolveResult:
    """The :class:`SolveResult` of a method run (module docstring).

    ``outcome`` is the backend's :class:`~topoopt_milp.core.backends.pulp_backend.BackendOutcome`
    (``None`` for a heuristic: status ``feasible``); ``bound`` and ``model_objective`` are the
    solver's bound and objective converted to the objective's unit (seconds for
    ``comm_time``); ``fallback`` is the incumbent to return when the solver found none."""
    notes = [x for x in ([outcome.message] if outcome is not None else []) + list(notes) if x]
    status = Status.FEASIBLE if outcome is None else outcome.status
    info = dict(info or {})
    if outcome is not None and outcome.interrupted:
        info["interrupted"] = True
        notes.append("interrupted by the user: incumbent and bound so far")
    restricted = scope is not None and scope.restricted
    if routing is None or topology is None or not status.has_solution:
        if restricted and status is Status.INFEASIBLE:
            status = Status.NO_SOLUTION
            notes.append("the restricted model is infeasible (this proves nothing about the problem)")
        if fallback is None or status not in (Status.NO_SOLUTION, Status.INFEASIBLE) or (
                status is Status.INFEASIBLE and not restricted):
            return _result(method, options, outcome, status, None, bound, runtime, objective_kind,
                           scale, notes, scope, None, info)
        topology, routing = fallback
        # "in time" only when there was a time limit (a solver may also stop for numerics)
        where = " in its restricted model" if status is not Status.NO_SOLUTION else (
            " in time" if options.solver.time_limit is not None else "")
        notes.append(f"solver found no solution{where}: warm-start incumbent returned")
        status, model_objective = Status.FEASIBLE, None
        if restricted:
            bound = None  # a restricted model's bound need not hold outside its model
    obj = objective_value(instance, topology, routing, objective_kind)
    if bound is not None and obj < bound <= obj * (1 + OBJ_TOL) + 1e-15:
        bound = obj
    if scope is not None and bound is not None and not restricted \
            and not scope.covers(Features.of(instance, topology, routing)):
        notes.append(f"bound {bound:.9g} dropped: its scope ({scope.describe()}) does not "
                     "contain the returned solution")
        bound = None
    if scope is not None and objective_kind == "comm_time":
        # the analytic bound (ideal switch / Moore) is valid for every solution: a solver bound
        # below it (or none, e.g. stopped early) gives way to it
        analytic = min(lower_bound(instance), obj)
        if bound is None or analytic > bound:
            notes.append("bound: the analytic lower bound" + (
                " (the solver gave none)" if bound is None else f" (above the solver's {bound:.6g})"))
            bound = analytic
    scope_status = None
    if status is Status.OPTIMAL:
        status = _downgrade(instance, options, topology, routing, obj, bound, model_objective,
                            objective_kind, exact_model, notes)
    if restricted:
        scope_status, status = status.value, Status.FEASIBLE
    return _result(method, options, outcome, status, obj, bound, runtime, objective_kind, scale,
                   notes, scope, scope_status, info, topology, routing)


def _downgrade(instance, options, topology, routing, obj, bound, model_objective, kind,
               exact_model, notes) -> Status:
    """OPTIMAL, or FEASIBLE with the reason appended to ``notes``."""
    if model_objective is not None:
        # the models optimise the bandwidth term; a latency term (max hops x latency) is added
        # on top by the cost model, so the drift check compares bandwidth terms only
        value = obj
        if kind == "comm_time":
            value = congestion(topology, arc_loads(instance.n, routing), instance.link_bytes_per_s)
        if value > model_objective * (1 + OBJ_TOL) + 1e-15:
            notes.append(f"routing extraction gives {obj:.9g}, model said {model_objective:.9g}")
            return Status.FEASIBLE
    if kind == "comm_time" and instance.latency_us > 0:
        notes.append("latency term not modelled (bandwidth term optimised, latency added)")
        return Status.FEASIBLE
    tol = max(options.solver.mip_gap, OBJ_TOL)
    gap = None if bound is None else ((obj - bound) / obj if obj > 0 else 0.0)
    if not exact_model and (gap is None or gap > tol):
        notes.append("optimal for the integer-scaled model only (volumes rounded)")
        return Status.FEASIBLE
    if gap is None or gap > tol + 1e-12:
        notes.append("solver said optimal, but its bound does not meet the objective")
        return Status.FEASIBLE
    return Status.OPTIMAL


def _result(method, options, outcome, status, obj, bound, runtime, kind, scale, notes, scope,
            scope_status, info, topology=None, routing=None) -> SolveResult:
    return SolveResult(
        method=method, status=status, objective=obj, bound=bound, runtime_s=runtime,
        topology=topology, routing=routing, seed=options.seed, params=options.as_params(),
        backend="heuristic" if outcome is None else outcome.backend,
        backend_version=None if outcome is None else outcome.version, objective_kind=kind,
        scale=scale, message="; ".join(dict.fromkeys(notes)), scope=scope,
        scope_status=scope_status, info=dict(info or {}),
    )


def out_of_time(backend: str, instance: Instance, options: SolveOptions, reason: str,
                runtime: float, fallback: tuple[Topology, Routing] | None = None) -> SolveResult:
    """The result of a method whose time limit ran out before its solver started (model
    building): the warm start's solution, else ``fallback`` (a route model's shortest paths
    on its fixed topology) with status ``feasible`` and the analytic bound (valid for every
    solution), or ``no_solution`` without either."""
    from ..core.backends.pulp_backend import BackendOutcome
    from ..core.scope import ANALYTIC

    ws = options.warm_start
    if ws is not None and ws.topology is not None and ws.routing is not None \
            and ws.topology.n == instance.n:
        fallback = (ws.topology, ws.routing)
    elif fallback is not None:
        reason += "; incumbent: shortest paths"
    outcome = BackendOutcome(Status.NO_SOLUTION, None, None, runtime, backend, "", {}, reason)
    return honest_result("?", instance, options, outcome, None, None, scope=ANALYTIC,
                   runtime=runtime, fallback=fallback)


def heuristic(method: str, instance: Instance, options: SolveOptions, topology: Topology,
              routing: Routing, runtime: float, message: str = "",
              route_result: SolveResult | None = None, info: dict | None = None) -> SolveResult:
    """A heuristic's result: status ``feasible``, objective recomputed; with LP routing
    (``route_result``) the route LP's bound and its fixed-topology scope come along: the
    optimum routing for this topology and these rings, which bounds the heuristic's own
    routing on the same topology."""
    bound = scope = None
    if route_result is not None and route_result.scope is not None:
        bound, scope = route_result.bound, route_result.scope
    return honest_result(method, instance, options, None, topology, routing, scope=scope,
                   runtime=runtime, bound=bound, notes=[message] if message else [], info=info)


def unrouted(method: str, instance: Instance, options: SolveOptions, runtime: float,
             failure: str, message: str = "") -> SolveResult:
    """A heuristic whose topology cannot carry the traffic (``failure`` says why): status
    ``infeasible`` when no topology under the port budget can
    (:func:`~topoopt_milp.core.evaluate.unroutable` proves it), else ``no_solution``."""
    reason = unroutable(instance)
    status = Status.INFEASIBLE if reason else Status.NO_SOLUTION
    return _result(method, options, None, status, None, None, runtime, "comm_time", None,
                   [x for x in (message, reason or failure) if x], None, None, None)


def warm_incumbent(instance: Instance, options: SolveOptions, rings: Sequence[Ring],
                   cap: int | None = None) -> tuple[Topology, Routing] | None:
    """The warm start's topology, if it fits the instance's port budget (and the multiplicity
    cap ``cap``), routed by shortest paths with ``rings``: the incumbent a solver that finds
    nothing returns."""
    topo = warm_topology(instance, options, cap)
    return None if topo is None else shortest_paths(instance, topo, rings, options.seed)


def warm_topology(instance: Instance, options: SolveOptions, cap: int | None = None):
    """``options.warm_start``'s topology when it fits the port budget (and ``cap``), else
    ``None``."""
    ws = options.warm_start
    topo = None if ws is None else ws.topology
    if topo is None or topo.n != instance.n:
        return None
    deg = topo.degrees()
    fits = (deg == instance.degree).all() if instance.regular else (deg <= instance.degree).all()
    if not fits or (cap is not None and int(np.max(topo.links)) > cap):
        return None
    return topo


def shortest_paths(instance: Instance, topology: Topology, rings: Sequence[Ring],
                   seed: int = 0) -> tuple[Topology, Routing] | None:
    """``topology`` routed by shortest paths with ``rings`` (``None`` when a pair is
    disconnected): the incumbent a solver that finds nothing returns (the warm start's
    topology, or a route model's fixed one), so a time limit still gives a routing and a
    bound."""
    try:
        return topology, route(instance, topology, rings, "shortest", seed)
    except RoutingError:
        return None


def no_worse_than_warm(result: SolveResult, instance: Instance, options: SolveOptions) -> SolveResult:
    """``result``, or its warm start's solution when that is strictly better.

    An exact method starts from its warm start (``options.warm_start``: the best cheap
    heuristic by default), so it must never hand back a worse incumbent -- a MIP solver stopped
    by its time limit may still hold only a poor solution of its own (issue 16: alloc-milp at
    n = 64 returned a ring, 5.3x TotientPerms). The warm start replaces the incumbent when its
    topology fits the port budget (:func:`warm_topology`; the multiplicity cap of the result's
    scope), the independent checker accepts it on *this* instance, and its recomputed
    objective is lower by more than ``OBJ_TOL`` (relative); a result proven optimal in its
    scope is kept (a better start then lies outside that scope, e.g. more ring orders per
    group than ``joint-milp --rings-per-group 1`` allows). The result keeps its bound where
    its scope covers the warm solution (:func:`honest_result` drops it otherwise), and its
    status becomes ``feasible``."""
    from ..core.backends.pulp_backend import BackendOutcome
    from ..core.check import check_solution
    from ..core.evaluate import evaluate
    from ..core.result import finite_json, solution_dict

    ws = options.warm_start
    cap = None if result.scope is None else result.scope.max_multiplicity
    if result.status is Status.OPTIMAL:
        return result  # proven optimal in its scope: a better start lies outside it, and stays
    if ws is None or ws.routing is None or warm_topology(instance, options, cap) is None:
        return result
    topo, routing = ws.topology, ws.routing
    try:
        obj = objective_value(instance, topo, routing, result.objective_kind)
        problems = check_solution(instance.to_dict(), finite_json(solution_dict(
            ws.with_(objective=obj), instance, evaluate(instance, topo, routing))))
    except (KeyError, ValueError, RoutingError) as exc:  # a warm start of another instance
        log.info("warm start not comparable: %s", exc)
        return result
    if problems or (result.objective is not None and obj >= result.objective * (1 - OBJ_TOL)):
        return result  # not better beyond the solver's tolerance: the solver's result stands
    before = "no incumbent" if result.objective is None else f"{result.objective:.6g} s"
    note = (f"the warm start ({ws.method}, {obj:.6g} s) is better than the solver's incumbent "
            f"({before}): returned")
    outcome = BackendOutcome(Status.FEASIBLE, None, None, result.runtime_s, result.backend or "?",
                             result.backend_version or "", {}, result.message)
    out = honest_result(result.method, instance, options, outcome, topo, routing,
                        scope=result.scope, runtime=result.runtime_s, bound=result.bound,
                        objective_kind=result.objective_kind, notes=[note], info=result.info)
    return out.with_(info={**out.info, "warm_start_returned": ws.method})
