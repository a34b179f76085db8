"""Method name -> solver callable: what the CLI, ``compare`` and ``bench`` enumerate.

Every method is a function ``solve(instance: Instance, options: SolveOptions) -> SolveResult``
living in a heuristics or formulations module. The table below names each method, its family
and backend, and the ``module:function`` implementing it; modules are imported only when a
method is used, so listing methods costs nothing.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass

from .instance import Instance
from .result import SolveOptions, SolveResult


class UnknownMethodError(ValueError):
    """The method name is not in the registry."""


@dataclass(frozen=True)
class Method:
    name: str
    family: str  # heuristic | select | alloc | route | joint
    backend: str  # heuristic | milp | cpsat
    target: str  # "module:function", relative to the package
    description: str

    @property
    def solve(self) -> Callable[[Instance, SolveOptions], SolveResult]:
        module, func = self.target.split(":")
        return getattr(importlib.import_module(module, __package__), func)

    @property
    def exact(self) -> bool:
        return self.backend != "heuristic"


_H = "heuristic"
METHODS: dict[str, Method] = {
    m.name: m
    for m in (
        Method("totientperms", _H, _H, ".heuristics.totient:solve",
               "TotientPerms: d/2 coprime ring jumps (SelectPermutations), coin-change routing"),
        Method("topologyfinder", _H, _H, ".heuristics.topology_finder:solve",
               "TopologyFinder: degree split, TotientPerms for AllReduce, Blossom rounds for MP"),
        Method("expander", _H, _H, ".heuristics.baselines:solve_expander",
               "seeded random d-regular graph (expander), shortest-path routing"),
        Method("demand-greedy", _H, _H, ".heuristics.baselines:solve_demand_greedy",
               "OCS-style greedy: heaviest demands first, merging components, then fill ports"),
        Method("ring", _H, _H, ".heuristics.baselines:solve_ring",
               "bidirectional ring i -- i+1 with d/2 parallel links"),
        Method("torus", _H, _H, ".heuristics.baselines:solve_torus",
               "2-D torus (d = 4, n = a*b with a, b >= 3)"),
        Method("hypercube", _H, _H, ".heuristics.baselines:solve_hypercube",
               "hypercube (n = 2^d)"),
        Method("select-milp", "select", "milp", ".formulations.select:solve_milp",
               "choose d/2 ring jumps: MILP (PuLP; HiGHS or CBC)"),
        Method("select-cpsat", "select", "cpsat", ".formulations.select:solve_cpsat",
               "choose d/2 ring jumps: CP-SAT"),
        Method("alloc-milp", "alloc", "milp", ".formulations.alloc:solve_milp",
               "integer link matrix under the port budget with routing: MILP"),
        Method("alloc-cpsat", "alloc", "cpsat", ".formulations.alloc:solve_cpsat",
               "integer link matrix under the port budget with path choice: CP-SAT"),
        # backend "heuristic": it proves no bound (Method.exact is False); its LPs run on HiGHS
        Method("alloc-alternate", "alloc", _H, ".formulations.alloc_alternate:solve",
               "alternate the exact link step and the route LP with free ring shares (upper bound)"),
        Method("route-milp", "route", "milp", ".formulations.route:solve_milp",
               "min-congestion routing on a fixed topology: LP / path LP / unsplittable MILP"),
        Method("route-cpsat", "route", "cpsat", ".formulations.route:solve_cpsat",
               "unsplittable min-congestion routing on a fixed topology: CP-SAT"),
        Method("joint-milp", "joint", "milp", ".formulations.joint:solve_milp",
               "links + routing + AllReduce ring orders: MILP with subtour elimination"),
        Method("joint-cpsat", "joint", "cpsat", ".formulations.joint:solve_cpsat",
               "links + routing + AllReduce ring orders: CP-SAT with circuit constraints"),
    )
}


def get(name: str) -> Method:
    try:
        return METHODS[name]
    except KeyError:
        known = ", ".join(METHODS)
        raise UnknownMethodError(f"method: unknown method {name!r} (known: {known})") from None


def available(name: str) -> bool:
    """True when the method's module can be imported (exact families land one by one)."""
    try:
        get(name).solve  # noqa: B018 - importing is the check
    except (ImportError, AttributeError):
        return False
    return True


def solve(instance: Instance, method: str, options: SolveOptions | None = None) -> SolveResult:
    """Solve ``instance`` with the named method; the one entry point for library users."""
    return get(method).solve(instance, options or SolveOptions())
