"""``route-cpsat``: unsplittable min-congestion routing on a fixed topology with CP-SAT.

The problem, candidate paths and result assembly are :mod:`.route`'s; this module holds the
integer model only (one of ``k_paths`` candidates per commodity, integer volumes).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from ...core.backends.cpsat_backend import solve_cpsat as run_cpsat
from ...core.instance import Instance
from ...core.params import Params, SolveOptions, k_paths_knob, knob, route_rings_knob
from ...core.result import SolveResult
from ...core.spec import MethodSpec
from .. import model_data as _exact
from .route import (
    _path_columns,
    _start,
    _unsplit_items,
    _unsplit_routing,
    bound_scope,
    build_problem,
    candidate_paths,
    finish,
    memory,
    with_shortest_path_fallback,
)
from .route_problem import usable_topology

CPSAT_MAX_LCM = 10**4  # exact integer objective when lcm(capacities) stays this small
CPSAT_CAP_UNITS = 10**4  # otherwise: capacity resolution (of the largest capacity)


@dataclass(frozen=True)
class RouteCpsatParams(Params):
    rings: str = route_rings_knob()
    k_paths: int = k_paths_knob()
    cpsat_units: int = knob(10**5, "CP-SAT: integer volume units per largest commodity.", minimum=1)


@with_shortest_path_fallback
def solve(instance: Instance, options: SolveOptions) -> SolveResult:
    """``route-cpsat``: unsplittable routing over ``k_paths`` candidates with CP-SAT.

    Volumes become integers (:func:`_exact.integer_units`, rounded down so the bound stays
    valid); with integer capacities ``cap(r)`` and ``M = lcm(cap)`` (at most
    ``CPSAT_MAX_LCM``), the objective is the integer ``Z >= load(r) * M / cap(r)``, i.e.
    ``T = Z * scale / (M * cap_unit)`` seconds. Other capacities (SNDlib's real ones) are
    rounded up to integers and ``Z`` becomes a ceiling; the result is then at best feasible
    and its bound stays valid (see the code comments)."""
    from ortools.sat.python import cp_model  # lazily: 0.5 s to import
    t0 = time.perf_counter()
    P = build_problem(instance, options)
    items = _unsplit_items(P)
    vols = np.array([c.bytes for c in P.commodities])
    units, scale, exact = _exact.integer_units(vols, options.method.cpsat_units)
    # link counts, or SNDlib's own capacities (then cap_unit is 1 byte/s per unit)
    caps_f = P.res_cap * P.cap_unit if P.shared else P.res_cap
    denom = 1.0 if P.shared else P.cap_unit
    caps = np.round(caps_f).astype(np.int64)
    M = math.lcm(*caps.tolist()) if len(caps) and (caps > 0).all() else 0
    if np.allclose(caps, caps_f) and 0 < M <= CPSAT_MAX_LCM:
        Q, to_s, ceil_slack = M, scale / (M * denom), 0
    else:
        # Real-valued (or many different) capacities: round them *up* to integers of
        # resolution 1/CPSAT_CAP_UNITS of the largest, and let Z >= load * Q / cap; Z is then a
        # ceiling, so the bound subtracts one unit of Z (both keep the bound valid).
        cmax = float(caps_f.max())
        caps = np.ceil(caps_f / cmax * CPSAT_CAP_UNITS - 1e-9).astype(np.int64)
        Q = CPSAT_CAP_UNITS
        to_s = scale * CPSAT_CAP_UNITS / (Q * cmax * denom)
        ceil_slack = 1
        exact = False
    k = options.method.k_paths
    cands = candidate_paths(usable_topology(P), {(s, t) for s, t, _ in items}, k, options)
    owners, paths, a_idx, c_idx, _w = _path_columns(P, cands, items)
    options.check_deadline()
    model = cp_model.CpModel()
    y = [model.NewBoolVar(f"y{j}") for j in range(len(paths))]
    for k in range(len(items)):
        model.AddExactlyOne(y[j] for j in np.flatnonzero(owners == k))
    arc_of_res = np.full(len(P.arcs), -1)
    for r, arcs in enumerate(P.res_arcs):
        arc_of_res[arcs] = r
    total = int(units.sum()) * Q
    Z = model.NewIntVar(0, max(1, total), "Z")
    terms: list[list[tuple[int, int]]] = [[] for _ in range(len(P.res_arcs))]
    for a, j in zip(a_idx, c_idx, strict=True):
        terms[arc_of_res[a]].append((j, int(units[owners[j]])))
    for r, tr in enumerate(terms):
        if not tr:
            continue
        load = sum(u * y[j] for j, u in tr if u)
        if Q % int(caps[r]) == 0:  # exact: Z >= load * Q / cap
            model.Add(load * (Q // int(caps[r])) <= Z)
        else:
            model.Add(load * Q <= int(caps[r]) * Z)
    model.Minimize(Z)
    chosen = _start(P, options, cands, items)
    offsets = np.searchsorted(owners, np.arange(len(items)))
    hint = {y[int(offsets[k] + c)]: 1 for k, c in enumerate(chosen)}
    outcome, solver = run_cpsat(model, options, hint)
    routing = None
    if outcome.status.has_solution:
        choice = [0] * len(items)
        for j, var in enumerate(y):
            if solver.Value(var):
                choice[owners[j]] = j - int(offsets[owners[j]])
        routing = _unsplit_routing(P, cands, choice)
    obj = outcome.objective * to_s if outcome.objective is not None else None
    bound = max(0.0, outcome.bound - ceil_slack) * to_s if outcome.bound is not None else None
    return finish("route-cpsat", P, options, outcome, routing, obj if exact else None, bound,
                  time.perf_counter() - t0, scale=scale, exact_model=exact,
                  note=f"variant=unsplittable; scale={scale:.6g} bytes/unit",
                  restricted=f"one of the {k} shortest paths per commodity; volumes in units of "
                             f"{scale:.6g} bytes")


SPEC = MethodSpec(
    "route-cpsat", "route", "restricted", "cpsat", RouteCpsatParams, solve,
    "unsplittable min-congestion routing on a fixed topology: CP-SAT",
    scope=lambda i, o: bound_scope(i, o, f"one of {o.method.k_paths} candidate paths per "
                                         "commodity"),
    memory=lambda i, o: memory(i, o, "cpsat"), max_n=1024)
