"""best-start: the best cheap heuristic, re-routed exactly -- the start of every search and
the default warm start of the exact alloc methods.

Portfolio. ``totientperms-lp`` (TotientPerms with its route LP: on circulant traffic its LP
is the cheap circulant reduction, 1.5 s against 7 s for the free-split LP at n = 64 under
load), the cheap constructions TotientPerms, TopologyFinder, demand-greedy, group-rings and
``expander_seeds`` seeded random expanders (``start_methods``; each with its own rings and
default routing, milliseconds each), then their topologies re-routed by :func:`.reroute`
(the route LP with free ring shares over the TotientPerms orders, ``start_rings = choose``).
The result is the best checked solution over all of them, re-routed or not.

Never worse than TotientPerms or TopologyFinder with LP routing. ``totientperms-lp`` routes
TotientPerms' topology with its own rings by the route LP; the re-routing here optimises the
routing *and* the ring split over a ring space that contains those rings (TotientPerms'
orders are TotientPerms orders; TopologyFinder builds its AllReduce rings by TotientPerms;
the default bidirectional ring of the other constructions is the order ``m = 1`` and its
reverse ``m = k - 1``), so on the same topology its value is at most theirs. Both are
re-routed (below), so the claim holds in every run whose LPs finish in time.

Order and time. Without a time limit every start is re-routed. With one, re-routing stops
once ``lp_share`` of it is spent, except for the first start, TotientPerms,
TopologyFinder and group-rings, which are re-routed while the time left exceeds the last
LP's time (so the
guarantee above holds whenever the time limit allows three LPs; one LP at n = 128, d = 8
takes 16-170 s on the shared development machine, depending on its load). The first start is
the one with the lowest **hop bound** ``H(L) = sum_st D_st dist_L(s, t) / (B sum_a L_a)`` of
its topology with its own rings (ties: its own objective), then come TotientPerms and
TopologyFinder (and group-rings, whose balanced rings its hop bound does not see), then the
rest by hop bound. ``H(L)`` is a lower bound on the communication
time of ``L`` with those rings under any routing: every byte of ``D_st`` crosses at least
``dist_L(s, t)`` arcs, and all arcs together carry ``B sum_a L_a`` bytes per second. (On
uniform all-to-all traffic the first start is a random expander: its hop bound is the
lowest, and its re-routed objective too.) A later start whose :func:`free_hop_bound` (the
same count with the ring split the LP may choose, a lower bound on its re-routed
objective) is not below the best re-routed objective so far is not re-routed: its LP cannot
win, so the guarantee above holds without it.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import shortest_path

from ...core.instance import Instance
from ...core.params import Params, SolveOptions, knob
from ...core.result import SolveResult, Status
from ...core.spec import MethodSpec
from ...core.topology import Ring, Topology
from .. import model_data as _exact
from .. import result_step as _certify
from ..alloc_alternate.search import Solution, _checked
from ..heuristics.support import heuristic_memory
from .reroute import RING_MODES, lp_options, reroute, ring_candidates

log = logging.getLogger(__name__)

START_METHODS = "totientperms-lp,totientperms,topologyfinder,demand-greedy,group-rings,expander"
# routed early (docstring); group-rings: on coset groups with little MP it is the best start
# by far (mixed-n128-d4-g4-mp05: 0.0771 s against 0.0963 s) but its hop bound ranks it late
FIRST = ("totientperms-lp", "totientperms", "topologyfinder", "group-rings")


# starts run once per knob set: group-split's own choice between its ring patterns ranks
# them under its shortest-path routing, which on bert-n128-d4 keeps the random pattern
# (0.0177 s under the route LP) over the jumps (0.0155 s); as separate starts, the search's LP
# decides (a variant that builds a topology met before is dropped). The tour rule with each
# layout: sorted is the better start on candle-n32/n64-d4 and dlrm-n64-d4, nested on
# candle-n128-d4 and dlrm-n128-d4 (benchmarks/bench_nested_tour.py)
VARIANTS = {"group-split": (("jumps", {"pattern": "jumps"}), ("random", {"pattern": "random"}),
                            ("load", {"pattern": "jumps", "port_rule": "load"}),
                            ("cycle", {"pattern": "jumps", "cross": "cycle"}),
                            ("tour", {"pattern": "jumps", "cross": "tour"}),
                            ("tour-nested", {"pattern": "jumps", "cross": "tour",
                                             "layout": "nested"}))}


@dataclass(frozen=True)
class BestStartParams(Params):
    """best-start: the cheap portfolio and its exact re-routing."""

    start_methods: str = knob(START_METHODS, "best-start: cheap heuristics (comma-separated; "
                                             "expander runs once per seed).")
    expander_seeds: int = knob(3, "best-start: random expanders (seeds seed, seed+1, ..).",
                               minimum=0)
    start_rings: str = knob("choose", "best-start: ring space of the re-routing: choose "
                                      "(TotientPerms orders, free split) or given.",
                            choices=RING_MODES)
    lp_share: float = knob(0.3, "best-start: share of the time limit for re-routing starts.",
                           positive=True, maximum=1.0)


@dataclass(frozen=True)
class Candidate:
    """A cheap heuristic's topology with its own routing (``own``, a checked result), the hop
    bound of its topology with its own rings, and its re-routed solution (once routed)."""

    name: str
    own: SolveResult
    hop_bound: float
    routed: Solution | None = None


def hop_distances(links: np.ndarray) -> np.ndarray:
    """All-pairs hop counts of the link matrix (``inf`` between components)."""
    return shortest_path(csr_matrix((links > 0).astype(float)), method="D", unweighted=True)


def hop_bound(instance: Instance, links: np.ndarray, rings: Sequence[Ring]) -> float:
    """``sum_st D_st dist(s, t) / (B sum_a L_a)`` seconds (module docstring): a lower bound on
    the communication time of ``links`` with ``rings`` under any routing."""
    D = _exact.demand_matrix(instance, rings)
    dist = hop_distances(links)
    cap = float(links.sum()) * instance.link_bytes_per_s
    pos = D > 0
    if not pos.any():
        return 0.0
    return float((D[pos] * dist[pos]).sum() / cap) if cap > 0 else float("inf")


def free_hop_bound(instance: Instance, links: np.ndarray,
                   candidates: Mapping[int, Sequence[Sequence[int]]]) -> float:
    """A lower bound (seconds) on the route LP with free ring shares over ``candidates`` on
    ``links`` (:func:`..formulations.ring_lp.route_rings`)::

        T*(L) >= [sum_st D_st dist_L(s, t) + sum_g e_g min_{c in C_g} hops_L(c)] / (B sum_a L_a)

    with ``D`` the MP demand, ``e_g`` a group's ring-edge volume, ``C_g`` its candidate orders
    and ``hops_L(c) = sum_{(u, v) in c} dist_L(u, v)``. Proof: a routing of time ``T`` with
    ring shares ``sigma`` puts ``sum_k b_k h_k`` bytes on the arcs, a byte of commodity ``k``
    counted once per hop (``h_k >= dist_L`` of its ends), and the arcs carry at most
    ``T B sum_a L_a`` bytes; a group's ring bytes cross ``e_g sum_c sigma_c hops_L(c) >=
    e_g min_c hops_L(c)`` arcs since ``sum_c sigma_c = 1``. Unlike :func:`hop_bound` (fixed
    rings) it holds for every split the LP may choose, so a topology whose value here is not
    below an incumbent can be discarded before its LP (``inf`` when some demand or ring edge
    is unreachable)."""
    L = np.asarray(links)
    cap = float(L.sum()) * instance.link_bytes_per_s
    if cap <= 0:
        return float("inf")
    dist = hop_distances(L)
    H = 0.0
    if instance.mp:
        mp = np.asarray(instance.mp, dtype=float)
        s, t = mp[:, 0].astype(np.int64), mp[:, 1].astype(np.int64)
        pos = mp[:, 2] > 0
        H += float((mp[pos, 2] * dist[s[pos], t[pos]]).sum())
    for g, orders in candidates.items():
        e = instance.allreduce[g].edge_bytes
        if e <= 0 or not orders:
            continue
        succ = np.asarray([list(o) for o in orders], dtype=np.int64)
        H += e * float(dist[succ, np.roll(succ, -1, axis=1)].sum(axis=1).min())
    return H / cap


def cheap_candidates(instance: Instance, run_method: Callable[..., SolveResult],
                     methods: Sequence[str], expander_seeds: int, seed: int = 0,
                     deadline: float | None = None) -> list[Candidate]:
    """Run the cheap heuristics (``expander`` once per seed, a method of :data:`VARIANTS` once
    per knob set; an ``-lp`` variant with half the time left before ``deadline``); the ones
    that return a solution, in the routing order of the module docstring."""
    runs = []
    for m in methods:
        seeds = [seed + k for k in range(expander_seeds)] if m == "expander" else [seed]
        for s, (tag, extra) in ((s, v) for s in seeds for v in VARIANTS.get(m, (("", {}),))):
            label = f"{m}:{s}" if m == "expander" else f"{m}:{tag}" if tag else m
            knobs = dict(extra)
            if m.endswith("-lp") and deadline is not None:
                knobs["time_limit"] = max(1.0, 0.5 * (deadline - time.perf_counter()))
            try:
                res = run_method(instance, m, knobs, s)
            except Exception as exc:  # noqa: BLE001 - a construction that cannot apply is skipped
                log.info("best-start: %s skipped: %s", label, exc)
                continue
            if res.topology is None or res.routing is None or res.objective is None:
                continue
            if any((res.topology.links == c.own.topology.links).all() for c in runs):
                continue  # the same topology twice (e.g. TotientPerms = TopologyFinder)
            runs.append(Candidate(label, res, hop_bound(instance, res.topology.links,
                                                        res.routing.rings)))
    runs.sort(key=lambda c: (c.hop_bound, c.own.objective))
    return runs[:1] + sorted(runs[1:], key=lambda c: c.name not in FIRST)  # stable


def route_candidates(instance: Instance, cands: Sequence[Candidate], rings: str,
                     options: SolveOptions, budget: float | None,
                     deadline: float | None = None) -> list[Candidate]:
    """Re-route the candidates in order while ``budget`` seconds last (a next one only when
    the last LP's time is still left); the first one, TotientPerms and TopologyFinder beyond
    the budget (the guarantee of the module docstring) -- but no LP runs past ``deadline`` (a
    ``time.perf_counter()`` value; an LP stopped there leaves its start un-routed)."""
    t0, last, out = time.perf_counter(), 0.0, []
    best = math.inf  # the best re-routed objective so far
    free = ring_candidates(instance, rings)
    for k, c in enumerate(cands):
        spent = time.perf_counter() - t0
        must = k == 0 or c.name in FIRST  # the guarantee of the module docstring
        if not must and budget is not None and budget - spent < last:
            out.append(c)
            continue
        if k > 0 and free_hop_bound(instance, c.own.topology.links, free) >= best:
            # its LP cannot beat the best so far (nor can TotientPerms' or TopologyFinder's
            # LP: the guarantee holds without it)
            log.info("best-start: %s not re-routed: its hop bound is not below %.6g s",
                     c.name, best)
            out.append(c)
            continue
        t = time.perf_counter()
        if deadline is not None and deadline - t < max(0.5, last):
            out.append(c)  # too late for one more LP (its model building alone overruns)
            continue
        # 0.75: the LP's model building, path decomposition and check surround its solve
        sol, why = reroute(instance, c.own.topology, rings, options,
                           time_limit=None if deadline is None else 0.75 * (deadline - t))
        last = time.perf_counter() - t
        if sol is None:
            log.info("best-start: %s not re-routed: %s", c.name, why)
        else:
            best = min(best, sol.objective_s)
        out.append(Candidate(c.name, c.own, c.hop_bound, sol))
    return out


def best_of(cands: Sequence[Candidate]) -> tuple[str, Solution | SolveResult] | None:
    """The best solution over every candidate's own and re-routed solution, ``(label,
    solution)``; labels of re-routed ones end in ``+lp``."""
    best = None
    for c in cands:
        for label, obj, sol in ((c.name, c.own.objective, c.own),
                                (f"{c.name}+lp", None if c.routed is None else
                                 c.routed.objective_s, c.routed)):
            if obj is not None and (best is None or obj < best[0]):
                best = (obj, label, sol)
    return None if best is None else (best[1], best[2])


def portfolio(instance: Instance, options: SolveOptions, p: BestStartParams,
              budget: float | None, deadline: float | None = None) -> list[Candidate]:
    """The cheap candidates, re-routed within ``budget`` seconds (module docstring)."""
    names = [m.strip() for m in p.start_methods.split(",") if m.strip()]
    if options.run_method is None:
        raise ValueError("best-start: needs options.run_method (handed in by the registry)")
    cands = cheap_candidates(instance, options.run_method, names, p.expander_seeds,
                             options.seed, deadline)
    # HiGHS' default interior-point tolerance here: at 1e-6 the recomputed objective of
    # TotientPerms' topology re-routed was measured 0.14% above totientperms-lp (bert,
    # n = 128, d = 4), which would break the guarantee
    return route_candidates(instance, cands, p.start_rings, lp_options(options, None), budget,
                            deadline)


def solve(instance: Instance, options: SolveOptions) -> SolveResult:
    """``best-start``: the best solution of the portfolio (module docstring); ``feasible``
    without a bound (a heuristic). ``info["starts"]`` lists every candidate's objectives."""
    t0 = time.perf_counter()
    p = options.method
    left = options.time_left()
    cands = portfolio(instance, options, p, None if left is None else p.lp_share * left,
                      None if left is None else t0 + left)
    info = {"starts": [{"name": c.name, "own_s": c.own.objective, "hop_bound_s": c.hop_bound,
                        "routed_s": None if c.routed is None else c.routed.objective_s}
                       for c in cands]}
    best = best_of(cands)
    runtime = time.perf_counter() - t0
    if best is None:
        return SolveResult("best-start", Status.NO_SOLUTION, None, None, runtime,
                           seed=options.seed, params=options.as_params(), backend="highs",
                           message="no cheap heuristic returned a solution", info=info)
    label, sol = best
    topo, routing = sol.topology, sol.routing
    routed = sum(c.routed is not None for c in cands)
    msg = f"best of {len(cands)} cheap start(s), {routed} re-routed: {label}"
    return _certify.heuristic("best-start", instance, options, topo, routing, runtime, msg,
                              info=info)


def as_solution(instance: Instance, res: SolveResult) -> Solution | None:
    """A result's topology and routing as a checked :class:`Solution` (no duals)."""
    if res.topology is None or res.routing is None or res.objective is None:
        return None
    sol, _ = _checked(instance, Solution(Topology(res.topology.links), res.routing,
                                         tuple(res.routing.rings), float(res.objective)))
    return sol


SPEC = MethodSpec(
    "best-start", "alloc", "heuristic", "highs", BestStartParams, solve,
    "best of TotientPerms, TopologyFinder, demand-greedy, group-rings and random expanders, each re-routed "
    "by the route LP with free ring shares (the exact methods' warm start)",
    memory=heuristic_memory)
