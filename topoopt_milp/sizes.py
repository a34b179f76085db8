"""What each method can handle: its declared size limit and its memory estimate, checked at once.

A request beyond a method's reach used to run until the machine gave out: ``alloc-milp`` at
``n = 5000`` tries to build ``n^3`` flow variables, a heuristic on a dense ``n = 5000``
instance grows for minutes past 12 GB. :func:`check` refuses such a request before anything
is built, with a :class:`SizeError` (an input error: one line, exit code 2) naming the
method, the size, the estimate and the limit. Two limits apply:

* ``max_n`` -- declared in each method's registry row (:class:`~topoopt_milp.registry.Method`):
  the largest cluster its model is meant for. Without one, the instance limit
  :data:`~topoopt_milp.instance.MAX_N` applies.
* memory -- :func:`estimate` computes the model's size from its formula (variables and
  nonzeros, never by building it) and converts it to bytes with the per-nonzero cost measured
  here; the limit is ``$TOPOOPT_MEMORY_GB`` or 80% of the machine's physical memory.

Model sizes (``S`` sources with traffic, ``P`` ordered pairs with traffic, ``C`` commodities,
``A`` arcs of a fixed topology, ``J`` jump candidates, ``k`` candidate paths per pair), with
about three nonzeros per flow variable (two conservation rows, one capacity row):

* alloc-milp, joint-milp: source-aggregated flows on ``K_n``, ``S (n-1)^2`` (joint adds
  ``R k^2`` ring variables per group);
* alloc-cpsat, joint-cpsat: ``k`` paths of at most 3 hops per pair (joint: every ordered pair
  of a group, its ring order being free) plus ``(d + 2)`` value indicators per node pair;
* select-milp, select-cpsat: comm_time, flows of each source over ``2 J`` arc types,
  ``S n 2 J`` (``S = 1`` when the traffic is rotation invariant); hop objectives, reach
  variables over ``H`` hop layers, ``H (n/2 + 1) J`` with ``H ~ m (n/2)^(1/m)``, the
  diameter scale of a circulant with ``m = d/2`` jumps;
* route-milp, route-cpsat: fractional, ``S A`` arc flows (``A`` with the circulant symmetric
  reduction, ``P A`` per pair); path variants, ``k P`` paths;
* alloc-benders: the master's ``n^2`` link variables plus the route LP of a ``d``-regular
  topology, ``S n d`` arc flows;
* heuristics, lower-bounds and route-approx: six dense ``n x n`` arrays of 8 bytes (links,
  hop distances, MP matrix...) and about 1 kB per routed commodity.

Measured (2 cores, peak RSS minus the interpreter's, load ~11): alloc-milp with HiGHS
500-600 bytes per nonzero (PuLP objects, the matrix copy, branch and bound), route-milp's
array LP 400-700 (interior point fill-in), alloc-cpsat about 1 kB. The ``-lp`` heuristics'
route LP is checked when it is called, on the heuristic's topology.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from .errors import InputError
from .instance import MAX_N, Instance

if TYPE_CHECKING:
    from .params import SolveOptions
    from .registry import Method

BYTES_PER_NONZERO = {"milp": 700.0, "cpsat": 1000.0}
HEURISTIC_ARRAYS = 6  # dense n x n arrays of 8 bytes a heuristic run holds (links, distances...)
BYTES_PER_COMMODITY = 1000.0  # a routed commodity: object, path, solution and checker copies
MEMORY_SHARE = 0.8


class SizeError(InputError):
    """A request beyond what the method can handle (its ``max_n`` or the memory limit)."""


@dataclass(frozen=True)
class Estimate:
    """The memory a method run needs, ``bytes``, what dominates it, ``what``, and the model's
    estimated ``nonzeros`` (``None`` for heuristics, which build no model)."""

    bytes: float
    what: str
    nonzeros: float | None = None

    @classmethod
    def model(cls, nonzeros: float, backend: str, what: str) -> Estimate:
        return cls(BYTES_PER_NONZERO.get(backend, BYTES_PER_NONZERO["milp"]) * nonzeros, what,
                   nonzeros)


def memory_limit() -> float:
    """Bytes a single run may use: ``$TOPOOPT_MEMORY_GB`` GB, else 80% of physical memory."""
    text = os.environ.get("TOPOOPT_MEMORY_GB")
    if text:
        try:
            gb = float(text)
        except ValueError:
            gb = math.nan
        if not (math.isfinite(gb) and gb > 0):
            raise SizeError(f"TOPOOPT_MEMORY_GB: expected a positive number of GB, got {text!r}")
        return gb * 1e9
    return MEMORY_SHARE * os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def check(method: Method, instance: Instance, options: SolveOptions) -> Estimate:
    """Refuse (:class:`SizeError`) a run of ``method`` on ``instance`` beyond its ``max_n`` or
    the memory limit, naming both; returns the estimate otherwise."""
    n = instance.n
    limit_n = MAX_N if method.max_n is None else method.max_n
    if n > limit_n:
        est = estimate(method, instance, options, quick=True)
        raise SizeError(f"{method.name}: n = {n} is beyond the sizes it handles (n <= "
                        f"{limit_n}); it would need ~{_gb(est.bytes)} for {est.what}")
    est = estimate(method, instance, options)
    limit = memory_limit()
    if est.bytes > limit:
        raise SizeError(f"{method.name}: n = {n} needs ~{_gb(est.bytes)} for {est.what}; the "
                        f"memory limit is {_gb(limit)} ($TOPOOPT_MEMORY_GB, else 80% of physical "
                        "memory)")
    return est


def _gb(b: float) -> str:
    return f"{b / 1e9:.3g} GB"


# -- traffic counts (no n x n array: heuristics are estimated at any n) ---------------------------
@dataclass(frozen=True)
class _Traffic:
    sources: int  # S: servers that send (MP sources, members of AllReduce groups with volume)
    pairs: int  # P: ordered pairs with traffic under the default (bidirectional) rings
    free_pairs: int  # P when ring orders are free: every ordered pair inside a group
    commodities: int  # C: MP demands plus the ring edges of the default rings


def _traffic(instance: Instance) -> _Traffic:
    n = instance.n
    mp = np.array([(s, t) for s, t, b in instance.mp if b > 0], dtype=np.int64).reshape(-1, 2)
    senders = [mp[:, 0]]
    pairs, free = [mp[:, 0] * n + mp[:, 1]], [mp[:, 0] * n + mp[:, 1]]
    comms = len(mp)
    for g in instance.allreduce:
        if g.bytes <= 0:
            continue
        ms = np.array(sorted(g.members), dtype=np.int64)
        nxt = np.roll(ms, -1)
        senders.append(ms)
        pairs += [ms * n + nxt, nxt * n + ms]
        a, b = np.meshgrid(ms, ms)
        free.append((a * n + b)[a != b])
        comms += 2 * len(ms)
    return _Traffic(len(np.unique(np.concatenate(senders))), len(np.unique(np.concatenate(pairs))),
                    len(np.unique(np.concatenate(free))), comms)


# -- per model ------------------------------------------------------------------------------------
def estimate(method: Method, instance: Instance, options: SolveOptions,
             quick: bool = False) -> Estimate:
    """The memory estimate of ``method`` on ``instance`` (module docstring). ``quick``: skip
    the ``O(n^2)`` test for the symmetric reductions (select, route) and assume none applies
    (an upper estimate, for a size refused anyway)."""
    n = instance.n
    t = _traffic(instance)
    if method.kind == "heuristic" or method.backend in ("analytic", "approx"):
        # whatever solver a heuristic calls inside; the analytic bounds and route-approx's
        # column generation hold dense n x n arrays (distances, loads) and per-commodity paths
        dense = HEURISTIC_ARRAYS * 8.0 * n * n
        return Estimate(dense + BYTES_PER_COMMODITY * t.commodities,
                        f"{HEURISTIC_ARRAYS} dense {n} x {n} arrays and {t.commodities} routed "
                        "commodities")
    b = method.backend
    if method.name == "alloc-benders":
        # master: one integer per node pair (plus its cuts); subproblem: the route LP of a
        # d-regular topology, S source-aggregated flows over its n d arcs
        flows = t.sources * n * instance.degree
        return Estimate.model(3.0 * flows + 2.0 * n * n, b,
                              f"its route LP's S n d = {flows:.3g} arc flows and {n * n} link "
                              "variables")
    if method.problem in ("alloc", "joint") and method.backend == "milp":
        flows = t.sources * (n - 1) ** 2
        rings = 0
        if method.problem == "joint":
            R = options.method.rings_per_group
            rings = sum(R * len(g.members) ** 2 for g in instance.allreduce if g.bytes > 0)
        return Estimate.model(3.0 * flows + 10.0 * rings, b,
                              f"its S (n-1)^2 = {flows:.3g} flow variables (S = {t.sources} "
                              "sources)")
    if method.problem in ("alloc", "joint"):
        p = options.method
        pairs = t.free_pairs if method.problem == "joint" else t.pairs
        paths = pairs * (2 * n - 3 if p.cpsat_paths == "two_hop" else p.k_paths) * p.cpsat_splits
        links = n * (n - 1) / 2 * (instance.degree + 2)
        arcs = n * (n - 1)  # one load row per arc (with the value indicators of its link)
        return Estimate.model(4.0 * paths + 3.0 * links + 2.0 * arcs, b,
                              f"{paths:.3g} path choices ({pairs} pairs) and {links:.3g} "
                              "link-value indicators")
    if method.problem == "select":
        return _select(instance, options, t, b, quick)
    return _route(instance, options, t, b, quick)


def _select(instance: Instance, options: SolveOptions, t: _Traffic, backend: str,
            quick: bool) -> Estimate:
    from .formulations.select import candidate_jumps

    n, p = instance.n, options.method
    J = len(candidate_jumps(n, instance.degree, p.candidates))
    if p.objective != "comm_time":
        m = max(1, instance.degree // 2)
        H = math.ceil(m * (n / 2) ** (1 / m))  # about the diameter of a circulant of m jumps
        q = H * (n // 2 + 1) * J
        return Estimate.model(3.0 * q, backend, f"{q:.3g} reach variables (H ~ {H} hop layers "
                                                f"x {n // 2 + 1} residues x {J} jumps)")
    S = 1 if not quick and _select_symmetric(instance, p.rings) else t.sources
    flows = S * n * 2 * J
    return Estimate.model(3.0 * flows, backend, f"its S n 2J = {flows:.3g} flow variables "
                                                f"(S = {S} sources, J = {J} jump candidates)")


def _select_symmetric(instance: Instance, mode: str) -> bool:
    from .formulations import _exact
    from .formulations.select_flow import _rotation_invariant, choice_symmetric, ring_space

    rings, chosen = ring_space(instance, mode)
    return _rotation_invariant(_exact.demand_matrix(instance, rings)) \
        and choice_symmetric(instance, chosen)


def _route(instance: Instance, options: SolveOptions, t: _Traffic, backend: str,
           quick: bool) -> Estimate:
    from .formulations.route import build_problem, symmetric_applies

    p = options.method
    if instance.topology is None:  # the method refuses it by name, with the command to use
        return Estimate(0.0, "no fixed topology", 0.0)
    A = 2 * len(instance.topology.links)
    variant = getattr(p, "variant", "unsplittable")
    if variant != "fractional":
        paths = t.pairs * p.k_paths
        return Estimate.model(4.0 * paths, backend, f"{paths:.3g} candidate paths ({t.pairs} "
                                                    "pairs)")
    form = p.formulation
    if form == "auto":
        form = "symmetric" if not quick and symmetric_applies(build_problem(instance, options)) \
            else "source"
    rows = {"symmetric": 1, "source": t.sources, "per-pair": t.pairs}[form]
    flows = rows * A
    return Estimate.model(3.0 * flows, backend, f"its {form} LP's {flows:.3g} arc flows ({A} "
                                                "arcs)")
