"""A topoopt_milp plug-in: two methods in one small package (see docs/plugins.md).

``chordal-ring`` (a heuristic)
    The circulant whose ``m = d/2`` jumps grow geometrically, ``p_k = round(n^(k/m))`` for
    ``k = 0..m-1`` (a ring plus chords: the diameter falls to about ``m n^(1/m) / 2``), routed
    by shortest paths, optionally with the chord ratio changed by the knob ``stretch``.
``ports-bound`` (a bound, no solution)
    ``T >= max_i max(out_i, in_i) / (d B)``: every byte a server sends or receives crosses one
    of its ``d`` ports. Valid for every topology with the port budget, every ring order and
    every routing, and it declares exactly that scope.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from topoopt_milp.core.evaluate import ideal_switch_time, objective_value
from topoopt_milp.core.params import Params, knob
from topoopt_milp.core.result import SolveResult, Status
from topoopt_milp.core.routing import route
from topoopt_milp.core.scope import Scope
from topoopt_milp.core.spec import MethodSpec
from topoopt_milp.core.topology import Topology, default_rings


@dataclass(frozen=True)
class ChordalParams(Params):
    """The knobs of ``chordal-ring``: each one field, validated on construction."""

    stretch: float = knob(1.0, "chordal-ring: chord lengths are round(stretch * n^(k/m)).",
                          positive=True)


def chordal_jumps(n: int, d: int, stretch: float = 1.0) -> tuple[int, ...]:
    """``d/2`` distinct jumps below ``n/2``, ``round(stretch * n^(k/m))`` with ``p_0 = 1``
    (the jump ``n/2`` would use one port per node, not two)."""
    m = max(1, d // 2)
    jumps: list[int] = []
    for k in range(m):
        p = 1 if k == 0 else round(stretch * n ** (k / m))
        top = (n - 1) // 2
        p = min(max(p, 1), top)
        while p in jumps and p < top:
            p += 1
        if p not in jumps:
            jumps.append(p)
    return tuple(jumps)


def solve_chordal(instance, options) -> SolveResult:
    """The chordal ring (module docstring), routed by shortest paths."""
    t0 = time.perf_counter()
    topo = Topology.circulant(instance.n, chordal_jumps(instance.n, instance.degree,
                                                       options.method.stretch))
    rings = default_rings(instance)
    routing = route(instance, topo, rings, "shortest", options.seed)
    return SolveResult("chordal-ring", Status.FEASIBLE,
                       objective_value(instance, topo, routing), None,
                       time.perf_counter() - t0, topology=topo, routing=routing,
                       seed=options.seed, params=options.as_params(), backend="heuristic")


def solve_ports_bound(instance, options) -> SolveResult:
    """``ports-bound``: no solution, only the bound with its scope."""
    t0 = time.perf_counter()
    return SolveResult("ports-bound", Status.NO_SOLUTION, None, ideal_switch_time(instance),
                       time.perf_counter() - t0, seed=options.seed,
                       params=options.as_params(), backend="analytic", scope=PORTS_SCOPE,
                       message="bound only")


# every topology with the port budget, any ring order, fractional routing (the widest scope)
PORTS_SCOPE = Scope(topology="any", rings="any", routing="fractional")

SPECS = (
    MethodSpec("chordal-ring", "alloc", "heuristic", "heuristic", ChordalParams, solve_chordal,
               "ring plus geometric chords (plug-in example), shortest-path routing"),
    MethodSpec("ports-bound", "alloc", "exact", "analytic", Params, solve_ports_bound,
               "port bound max_i max(out_i, in_i) / (d B) (plug-in example)",
               scope=lambda instance, options: PORTS_SCOPE),
)
