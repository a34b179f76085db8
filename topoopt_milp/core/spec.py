"""What a method is: one :class:`MethodSpec` object, exported by the method's own module.

A method module (built in, or in any installed package: see ``docs/plugins.md``) exports its
spec under the name ``SPEC`` (or several under ``SPECS``); the registry is only the list of
those modules plus the plug-ins. Everything the toolkit needs to know of a method lives in its
spec, next to the code it describes:

* ``name``, ``problem`` (select, alloc, route, joint: what "optimal" means for it, DESIGN.md
  section 10), ``kind`` (``heuristic``: no bound; ``exact``: its bound is valid for its
  problem; ``restricted``: its optimum and bound hold only for its own restricted model) and
  ``backend``;
* ``params``, the :class:`~topoopt_milp.core.params.Params` class of its knobs; ``preset``, knobs
  this spec fixes (the ``-lp`` variants of the heuristics);
* ``solve(instance, options) -> SolveResult``;
* ``scope(instance, options) -> Scope | None``, the set of solutions its bound is valid for.
  It is the one source for ``topoopt-milp methods`` (called with ``instance=None``: the
  scope for a generic instance) and for gaps (every result carries the scope its module
  computed with the same function);
* ``memory(instance, options) -> Estimate``, its model's size from the model's formula (see
  :mod:`topoopt_milp.core.sizes`), and ``max_n``, the largest cluster it is meant for;
* ``warm_start``: the heuristic whose solution starts it when the caller gives none.

A method never imports the registry: what it needs of another method (the route LP of the
``-lp`` variants, the start heuristics of a search) is handed in through
:attr:`SolveOptions.run_method <topoopt_milp.core.params.SolveOptions.run_method>`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .errors import InputError
from .params import Params, SolveOptions

if TYPE_CHECKING:
    from .instance import Instance
    from .result import SolveResult
    from .scope import Scope
    from .sizes import Estimate

KINDS = ("heuristic", "exact", "restricted")
PROBLEMS = ("select", "alloc", "route", "joint")

Solver = Callable[["Instance", SolveOptions], "SolveResult"]
ScopeRule = Callable[["Instance | None", SolveOptions], "Scope | None"]
MemoryRule = Callable[["Instance", SolveOptions], "Estimate"]


def no_scope(instance: Instance | None, options: SolveOptions) -> Scope | None:
    """The scope rule of a method without a bound (heuristics)."""
    return None


class NotApplicableError(InputError):
    """A method asked to solve an instance of the other family: a free-topology method on an
    instance that fixes its topology, or a route method on one that fixes none."""


class SpecError(ValueError):
    """A method spec that cannot be used (wrong kind, problem or types); names the method."""


@dataclass(frozen=True)
class MethodSpec:
    """One method (module docstring). ``ref`` is where it is loaded from,
    ``"package.module:NAME"`` (set by the registry), so that a child process or a Dask
    worker finds a plug-in method too."""

    name: str
    problem: str
    kind: str
    backend: str  # heuristic | milp | cpsat | approx | analytic | highs | ...
    params: type[Params]
    solve: Solver
    description: str
    scope: ScopeRule = no_scope
    memory: MemoryRule | None = None
    max_n: int | None = None
    warm_start: str | None = None
    preset: Mapping[str, Any] = field(default_factory=dict)
    ref: str | None = None

    def __post_init__(self) -> None:
        what = f"method {self.name!r}"
        if not isinstance(self.name, str) or not self.name or any(c.isspace() for c in self.name):
            raise SpecError(f"{what}: name must be a non-empty word")
        if self.kind not in KINDS:
            raise SpecError(f"{what}: kind {self.kind!r} is not one of {', '.join(KINDS)}")
        if self.problem not in PROBLEMS:
            raise SpecError(f"{what}: problem {self.problem!r} is not one of {', '.join(PROBLEMS)}")
        if not (isinstance(self.params, type) and issubclass(self.params, Params)):
            raise SpecError(f"{what}: params must be a Params subclass")
        for attr in ("solve", "scope"):
            if not callable(getattr(self, attr)):
                raise SpecError(f"{what}: {attr} must be callable")
        if self.memory is not None and not callable(self.memory):
            raise SpecError(f"{what}: memory must be callable or None")

    def refusal(self, instance: Instance) -> str | None:
        """Why this method does not apply to ``instance`` (``None``: it does) -- the one rule
        of which family solves which instance, checked by the registry before any work:

        * the route problem routes a *fixed* topology: the instance must fix one;
        * every other problem (select, alloc, joint) *chooses* the topology: an instance that
          fixes one is a route problem, on which such a method could only return a topology
          the checker rejects (or ignore the instance's)."""
        fixed = instance.topology is not None
        if self.problem == "route" and not fixed:
            return (f"{self.name}: topology: the route family solves the routing on a fixed "
                    "topology; the instance has none (on the command line: --topology SOL.json, or an "
                    "edge list or GraphML file)")
        if self.problem != "route" and fixed:
            return (f"{self.name}: topology: the instance fixes its topology (a route problem), "
                    f"but {self.problem} methods choose the topology themselves: route it "
                    "with a route method (route-milp, route-approx, route-cpsat), or remove "
                    "the instance's topology")
        return None

    def check_applies(self, instance: Instance) -> None:
        """Raise :class:`NotApplicableError` with :meth:`refusal`'s reason, if any."""
        reason = self.refusal(instance)
        if reason is not None:
            raise NotApplicableError(reason)

    @property
    def exact(self) -> bool:
        """Whether the method reports a bound (exact or restricted)."""
        return self.kind != "heuristic"

    def with_(self, **changes: Any) -> MethodSpec:
        from dataclasses import replace

        return replace(self, **changes)

    def lp_variant(self) -> MethodSpec:
        """The ``<name>-lp`` method: this heuristic's topology and rings with the optimal
        fractional routing (the route LP, handed in by the registry)."""
        return self.with_(name=f"{self.name}-lp", preset={**self.preset, "routing": "lp"},
                          description=f"{self.name}'s topology and rings, optimal fractional "
                                      "routing (route LP)")

    def scope_text(self) -> str:
        """The scope line ``topoopt-milp methods`` prints (the scope of default options)."""
        scope = self.scope(None, self.options(strict=False))
        if scope is None:
            return "" if self.kind == "heuristic" else "declared by each run"
        return scope.describe()

    def options(self, knobs: Mapping[str, Any] | None = None, *, seed: int = 0,
                warm_start: SolveResult | None = None, export: str | None = None,
                strict: bool = True) -> SolveOptions:
        """:class:`SolveOptions` for this method from flat ``knobs`` (solver and method knobs
        by name). ``strict``: a knob this method does not have is an error naming it
        (``False``: ignored, for sweeps whose ``--set`` serves several methods). A preset knob
        cannot be overridden."""
        from .params import ParamError, SolverParams

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
