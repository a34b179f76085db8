"""The plan of the ``certify`` portfolio (:mod:`.portfolio`): which runs, with which knobs,
in which order.

Which methods run, and in which order
-------------------------------------
:func:`plan` reads every spec of the registry (built-in and plug-in alike) and gives each a
*phase* from its declared properties, never from its name:

1. ``heuristic`` -- ``kind == "heuristic"`` with backend ``heuristic`` and its own routing;
2. ``heuristic-lp`` -- the same with the LP routing preset (``preset["routing"] == "lp"``);
3. ``bound`` -- ``kind == "exact"`` with backend ``analytic`` or without a warm start (a
   method that proves bounds and builds no incumbent, e.g. ``lower-bounds``), once per ring
   space of its ``rings`` knob whose scope differs (``choose``: TotientPerms orders,
   ``any``: every order), so both certified scopes get their bound;
4. ``search`` -- any other heuristic (an upper-bound search with its own solver, e.g.
   ``alloc-alternate``); a search whose ``rings`` knob offers ``tours`` (free ring orders,
   the instance's own scope: ``alloc-search``) runs with it, and first;
5. ``exact`` and 6. ``restricted`` -- the remaining exact / restricted models, only at
   ``n <= exact_max_n`` (the small instances they can prove); one with a ``probe_ideal`` knob
   first looks for a topology at the ideal switch in ``PROBE_SHARE`` of its budget; one whose
   ``rings`` knob offers a choice of scope ``any`` (every ring order, e.g. alloc-benders'
   ``all``) runs once more with it, where its size check admits it.

A method whose ``max_n`` or memory estimate (:func:`topoopt_milp.core.sizes.check`) refuses the
instance is left out; an instance with a fixed topology gets the ``route`` methods only, one
without gets every other problem. A spec with a ``warm_start`` starts from the best incumbent
found so far (it waits until phases 1-2 are done, so that it gets their best).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .. import registry
from ..core import sizes
from ..core.instance import Instance
from ..core.scope import space_features
from ..core.spec import MethodSpec

log = logging.getLogger(__name__)

PHASES = ("heuristic", "heuristic-lp", "bound", "search", "exact", "restricted")
# the ring mode of a search's ``rings`` knob whose ring orders are free (alloc-search: tours of the
# topology besides the TotientPerms orders): the instance's own scope. Measured (results/bench_search.md):
# dlrm-n128-d4 0.0241 s -> 0.0226 s, never worse than TotientPerms orders on the 36 open d = 4 instances
FREE_RINGS = "tours"
# the search whose objective is the hop bound (hop-anneal: the average distance on uniform
# traffic): it leads on all-to-all traffic (:func:`all_to_all`), where the hop bound is tight
# (measured: results/certify-alltoall.md); elsewhere it is one more search, in registry order
HOP_SEARCH = "hop-anneal"
EXACT_MAX_N = 24  # exact and restricted models run only up to this size
PROBE_SHARE = 0.25  # of an exact model's budget: first a topology at the ideal switch?


@dataclass(frozen=True)
class Entry:
    """One run of the portfolio: a method, the knobs it gets, its phase, whether it starts
    from the incumbent."""

    method: str
    phase: str
    knobs: dict[str, Any] = field(default_factory=dict)
    warm: bool = False

    @property
    def label(self) -> str:
        extra = ",".join(f"{k}={v}" for k, v in sorted(self.knobs.items()))
        return f"{self.method}[{extra}]" if extra else self.method


def phase_of(spec: MethodSpec, instance: Instance, exact_max_n: int = EXACT_MAX_N) -> str | None:
    """The phase of a spec on ``instance`` (module docstring), ``None`` when it does not run."""
    fixed = instance.topology is not None
    if fixed != (spec.problem == "route"):
        return None
    if spec.kind == "heuristic":
        if spec.backend != "heuristic":
            return "search"
        return "heuristic-lp" if spec.preset.get("routing") == "lp" else "heuristic"
    if not fixed and (spec.backend == "analytic" or spec.warm_start is None):
        return "bound"
    if instance.n > exact_max_n:
        return None
    return "exact" if spec.kind == "exact" else "restricted"


def _ring_choices(spec: MethodSpec) -> tuple[str, ...]:
    rings = next((f for f in spec.params.knobs() if f.name == "rings"), None)
    return tuple(rings.metadata.get("choices") or ()) if rings is not None else ()


def _variants(spec: MethodSpec, instance: Instance, phase: str) -> list[dict[str, Any]]:
    """The knob sets a method runs with: a bound method once per ring space of its ``rings`` knob
    with a distinct scope (each certified space gets its bound); a search offering ``tours`` with it
    (:data:`FREE_RINGS`); an exact model as it is (with :data:`PROBE_SHARE` for a ``probe_ideal``
    knob) and once more with each ``rings`` choice of scope ``any`` that its default lacks."""
    choices = _ring_choices(spec)

    def scope(mode: str | None = None):
        knobs = {} if mode is None else {"rings": mode}
        return spec.scope(instance, spec.options(knobs, strict=False))

    if phase == "search" and FREE_RINGS in choices:
        return [{"rings": FREE_RINGS}]
    if phase == "exact":
        base = ({"probe_ideal": PROBE_SHARE}
                if any(f.name == "probe_ideal" for f in spec.params.knobs()) else {})
        rings_of = {m: getattr(scope(m), "rings", None) for m in (None, *choices)}
        return [base] + [{"rings": m} for m in choices
                         if rings_of[m] == "any" != rings_of[None]]
    if phase != "bound":
        return [{}]
    out, seen = [], set()
    for mode in ("choose", "any"):
        if mode not in choices:
            continue
        key = repr(scope(mode))
        if key not in seen:
            seen.add(key)
            out.append({"rings": mode})
    return out or [{}]


def all_to_all(instance: Instance) -> bool:
    """Whether the traffic is all-to-all: every ordered pair of distinct nodes has MP demand
    and no AllReduce group carries bytes."""
    if any(g.bytes > 0 for g in instance.allreduce):
        return False
    has = instance.mp_matrix() > 0
    np.fill_diagonal(has, True)
    return bool(has.all())


def plan(instance: Instance, exact_max_n: int = EXACT_MAX_N,
         methods: dict[str, MethodSpec] | None = None) -> list[Entry]:
    """Every run of the portfolio on ``instance``, in phase order (module docstring); within
    a phase the models with the widest bound scope first, then registry order."""
    entries = []
    for spec in (methods or registry.methods()).values():
        phase = phase_of(spec, instance, exact_max_n)
        if phase is None:
            continue
        for knobs in _variants(spec, instance, phase):
            try:
                sizes.check(spec, instance, spec.options(knobs, strict=False))
            except sizes.SizeError as exc:
                log.info("certify: %s left out: %s", Entry(spec.name, phase, knobs).label, exc)
                continue
            entries.append(Entry(spec.name, phase, knobs, warm=spec.warm_start is not None
                                 and phase not in ("heuristic", "heuristic-lp")))
    return sorted(entries, key=lambda e: (PHASES.index(e.phase), _free(e), _reach(e, instance)))


def _free(entry: Entry) -> int:
    """Within the search phase, the searches with free ring orders first (0)."""
    return 0 if entry.phase == "search" and entry.knobs.get("rings") == FREE_RINGS else 1


def lead_first(entries: list[Entry], instance: Instance, jobs: int,
               exact_max_n: int = EXACT_MAX_N) -> list[Entry]:
    """``entries`` with the *lead* search first: with ``jobs >= 2`` above ``exact_max_n``, the
    first search that needs no incumbent (it builds its own starts) is launched at once and
    keeps one slot for the whole budget, while the other slots run the phases in order
    (module docstring). On :func:`all_to_all` traffic :data:`HOP_SEARCH` is first whatever
    ``jobs`` and ``n``: it builds its own start and returns within its time limit (at most
    ``MOVES_PER_PAIR`` moves per pair, so soon on a small instance)."""
    hop = next((e for e in entries if e.method == HOP_SEARCH), None)
    if hop is not None and all_to_all(instance):
        return [hop, *(e for e in entries if e is not hop)]
    if jobs < 2 or instance.n <= exact_max_n:
        return list(entries)
    lead = next((e for e in entries if e.phase == "search" and not e.warm), None)
    if lead is None:
        return list(entries)
    return [lead, *(e for e in entries if e is not lead)]


def _reach(entry: Entry, instance: Instance) -> int:
    """Within a phase, the models whose bound covers every ring order first (0), then those
    covering the TotientPerms orders (1), then the rest (2: circulants, restricted models)."""
    spec = registry.get(entry.method)
    scope = spec.scope(instance, spec.options(entry.knobs, strict=False))
    if scope is None:
        return 2
    if scope.covers(space_features("any")):
        return 0
    return 1 if scope.covers(space_features("totient")) else 2
