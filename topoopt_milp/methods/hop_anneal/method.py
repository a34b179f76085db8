"""hop-anneal: simulated annealing over degree-preserving 2-switches minimising the hop volume,
then the found topology routed by route-approx (or the route LP).

Problem. The alloc problem (every topology with the port budget, fractional routing,
minimising ``T_comm``), approached through its hop bound: for link matrix ``L``, demand
``D`` (MP bytes plus the edges of the instance's default rings) and any routing,

    T_comm(L) >= H(L) / (B sum_a L_a),   H(L) = sum_st D_st dist_L(s, t),

because every byte of ``D_st`` crosses at least ``dist_L(s, t)`` arcs and all arcs together
carry ``B sum_a L_a`` bytes per second (the hop bound of :mod:`..alloc_search.starts`). With
every port used, ``sum_a L_a = n d`` is the same for every candidate, so minimising ``H`` is
minimising that bound; on uniform all-to-all traffic ``H / sum D`` is the average
shortest-path length (the quantity of the Moore/Cerf bound and of the Graph Golf
competition), and a well-balanced routing comes close to the bound (the route LP then needs
only few non-shortest paths).

Search (:mod:`.kernel`). Start: the topology with the lowest ``H`` among ``starts`` seeded
random ``d``-regular expanders (seeds ``seed, seed + 1, ..``) and the warm start, when its
degrees are those of the expanders (every port used) and its multiplicity is within the cap.
Moves: random 2-switches (degrees kept exactly, multiplicity ``<= max_multiplicity``),
each evaluated exactly by bit-parallel breadth-first search (about 8 us at n = 128, d = 8),
accepted by the Metropolis rule on the change of ``H / sum D``. The temperature falls
geometrically from ``t_start`` to ``t_start * t_end_ratio`` over the annealing budget: the
fraction of ``anneal_share`` of the time limit spent, or of ``iterations`` moves when that is
set (then the run is reproducible: the same seed and iterations make the same moves;
under a time limit alone the number of moves depends on the machine's speed, and the
schedule also ends after ``MOVES_PER_PAIR`` moves per node pair, so that a small instance
does not spend its whole time limit). ``t_start =
0`` calibrates it: ``t_calibrate`` times the median rise of ``H / sum D`` over up to 200
random admissible moves of the start. The best topology seen is kept.

Routing. The best topology with the instance's default rings, routed by ``router``:
``approx`` (route-approx within ``epsilon``, with the time left), ``lp`` (route-milp, the
route LP) or ``shortest`` (shortest paths); a routing that fails or runs out of time falls
back to shortest paths. The objective is that routing's communication time, recomputed and
re-verified by the independent checker in the result step; the router's certified bound for
this topology is carried along (``info["route"]``). The method reports no bound of its own (a
heuristic). Its topology may have any ring-order scope: with default rings its rings are
TotientPerms orders (the ``m = 1`` order and its reverse), inside alloc-milp's ring space.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

import numpy as np

from ...core.errors import InputError
from ...core.hop_volume import neighbour_lists, work_arrays
from ...core.instance import Instance
from ...core.params import Params, SolveOptions, knob
from ...core.result import SolveResult, Status
from ...core.spec import MethodSpec
from ...core.topology import Topology, default_rings
from .. import model_data as _exact
from .. import result_step as _result
from ..heuristics.baselines import expander_links
from ..heuristics.support import heuristic_memory
from . import kernel as K

log = logging.getLogger(__name__)

ROUTERS = {"approx": "route-approx", "lp": "route-milp", "shortest": None}
MOVES_PER_LINK = 2000  # moves without a time limit or iterations: this many per link
# under a time limit, at most this many moves per node pair: a small instance stops long
# before its time is spent (n = 8: 140k moves, 0.1 s; never reached at n >= 128 in 600 s)
MOVES_PER_PAIR = 5000
CHUNK_S = 0.25  # seconds per compiled chunk (the clock is read between chunks)
CALIBRATION_MOVES = 200


@dataclass(frozen=True)
class HopAnnealParams(Params):
    """hop-anneal: the annealing and the routing of its result."""

    anneal_share: float = knob(0.6, "hop-anneal: share of the time limit for annealing (the "
                                    "rest routes the result).", positive=True, maximum=1.0)
    iterations: int = knob(0, "hop-anneal: annealing moves (0: until anneal_share of the time "
                              "limit; without one, 2000 per link). Set: reproducible.",
                           minimum=0)
    t_start: float = knob(0.0, "hop-anneal: start temperature in mean-distance units "
                               "(0: calibrated from the start's moves).", minimum=0)
    t_calibrate: float = knob(0.3, "hop-anneal: calibrated start temperature = this times "
                                   "the median rise of a random move.", positive=True)
    t_end_ratio: float = knob(1e-3, "hop-anneal: end temperature / start temperature.",
                              positive=True, maximum=1.0)
    starts: int = knob(3, "hop-anneal: seeded random expanders; the lowest hop volume is "
                          "annealed.", minimum=1)
    max_multiplicity: int = knob(1, "hop-anneal: most parallel links per pair.", minimum=1)
    router: str = knob("approx", "hop-anneal: routing of the found topology: approx "
                                 "(route-approx), lp (route-milp) or shortest.",
                       choices=tuple(ROUTERS))
    epsilon: float = knob(0.002, "hop-anneal: route-approx's target gap.", positive=True)


class State:
    """A graph as the kernels take it: link matrix, neighbour lists, one row per link."""

    def __init__(self, L: np.ndarray):
        L = np.asarray(L, dtype=np.int64)
        self.M = L.copy()
        self.nbr, self.deg = neighbour_lists(L)
        iu, ju = np.nonzero(np.triu(L))
        reps = L[iu, ju]
        self.edges = np.column_stack([np.repeat(iu, reps), np.repeat(ju, reps)]).astype(
            np.int64).reshape(-1, 2)
        self.R, self.Rn = work_arrays(L.shape[0])

    @staticmethod
    def links(n: int, edges: np.ndarray) -> np.ndarray:
        L = np.zeros((n, n), dtype=np.int64)
        np.add.at(L, (edges[:, 0], edges[:, 1]), 1)
        return L + L.T


@dataclass(frozen=True)
class Demand:
    """The demand the hop volume weighs: ``D`` (bytes per ordered pair), ``uniform`` (the
    common off-diagonal value when all are equal, else 0) and ``scale = sum D``."""

    D: np.ndarray
    uniform: float
    scale: float

    @classmethod
    def of(cls, instance: Instance) -> Demand:
        D = _exact.demand_matrix(instance, default_rings(instance))
        off = D[~np.eye(instance.n, dtype=bool)]
        c = float(off[0]) if off.size else 0.0
        uniform = c if c > 0 and np.all(off == c) else 0.0
        return cls(np.ascontiguousarray(D, dtype=np.float64), uniform, float(D.sum()))


def hop_volume(L: np.ndarray, demand: Demand) -> float:
    """``H(L) = sum_st D_st dist_L(s, t)`` by the compiled kernel (``inf``: disconnected)."""
    s = State(L)
    return float(K.hop_volume(s.nbr, s.deg, demand.D, demand.uniform, s.R, s.Rn))


def _calibrate(s: State, demand: Demand, cap: int, cost: float, factor: float) -> float:
    """``factor`` times the median rise of ``H / sum D`` over random admissible moves of
    ``s`` (each undone; :func:`.kernel.sample_rises`, numba's seeded generator)."""
    rises = K.sample_rises(s.M, s.nbr, s.deg, s.edges, demand.D, demand.uniform,
                           demand.scale, cap, cost, CALIBRATION_MOVES, s.R, s.Rn)
    return factor * float(np.median(rises)) if rises.size else 1.0 / max(demand.scale, 1.0)


def anneal(L: np.ndarray, demand: Demand, cap: int, p: HopAnnealParams, seed: int,
           seconds: float | None) -> tuple[np.ndarray, dict]:
    """The annealing of the module docstring from ``L``: the best link matrix and a summary
    (start and best hop volumes, moves, accepted moves, temperatures, seconds)."""
    t0 = time.perf_counter()
    n = L.shape[0]
    seconds = None if seconds is None else max(seconds, 1e-3)
    s = State(L)
    K.seed(int(seed))
    cost = float(K.hop_volume(s.nbr, s.deg, demand.D, demand.uniform, s.R, s.Rn))
    if not np.isfinite(cost):
        raise InputError("topology: the start of hop-anneal is disconnected")
    start = cost
    t_start = p.t_start or _calibrate(s, demand, cap, cost, p.t_calibrate)
    t_end = t_start * p.t_end_ratio
    total = p.iterations or (None if seconds is not None else MOVES_PER_LINK * len(s.edges))
    most = MOVES_PER_PAIR * n * (n - 1) // 2  # with the clock: the schedule's other end
    best, best_edges = cost, s.edges.copy()
    done = accepted = 0
    chunk = 256
    while True:
        frac = done / total if total else max((time.perf_counter() - t0) / seconds,
                                              done / most)
        if frac >= 1.0:
            break
        if total:
            k = min(chunk, total - done)
            frac_to = (done + k) / total
        else:
            k = chunk
            frac_to = min(1.0, max(frac + CHUNK_S / seconds, (done + k) / most))
        ta = t_start * (t_end / t_start) ** frac
        tb = t_start * (t_end / t_start) ** frac_to
        c = time.perf_counter()
        cost, best, acc, _ = K.anneal_chunk(s.M, s.nbr, s.deg, s.edges, demand.D,
                                            demand.uniform, demand.scale, cap, cost, k, ta, tb,
                                            best, best_edges, s.R, s.Rn)
        done += k
        accepted += acc
        if not total:  # chunks of about CHUNK_S seconds: the clock is read between them
            spent = max(time.perf_counter() - c, 1e-6)
            chunk = int(max(16, min(4 * chunk, k * CHUNK_S / spent)))
    out = State.links(n, best_edges)
    info = {"start_hop_volume": start, "hop_volume": best, "moves": done,
            "accepted": accepted, "t_start": t_start, "t_end": t_end,
            "anneal_s": time.perf_counter() - t0}
    return out, info


def _start(instance: Instance, options: SolveOptions, p: HopAnnealParams, demand: Demand,
           cap: int) -> tuple[np.ndarray, str, float]:
    """The start of the module docstring: ``(links, label, H)``."""
    n, d = instance.n, instance.degree
    cands = []
    for k in range(p.starts):
        L = expander_links(n, d, options.seed + k)
        if int(L.max()) <= cap:
            cands.append((L, f"expander:{options.seed + k}"))
    ws = options.warm_start
    if ws is not None and ws.topology is not None and ws.topology.n == n and cands:
        W = np.asarray(ws.topology.links, dtype=np.int64)
        if np.array_equal(W.sum(axis=1), cands[0][0].sum(axis=1)) and int(W.max()) <= cap:
            cands.append((W, f"warm:{ws.method}"))
    if not cands:
        raise InputError(f"max_multiplicity: no start within {cap} parallel link(s) per pair "
                         f"at n = {n}, d = {d}")
    scored = [(hop_volume(L, demand), label, L) for L, label in cands]
    H, label, L = min(scored, key=lambda t: t[0])
    return L, label, H


def _route(instance: Instance, options: SolveOptions, p: HopAnnealParams, topo: Topology,
           time_limit: float | None):
    """The found topology routed by ``router`` (module docstring): ``(routing, route result
    or None, note)``; shortest paths when the router fails."""
    rings = default_rings(instance)
    name = ROUTERS[p.router]
    note = "shortest paths"
    if name is not None:
        if options.run_method is None:
            raise InputError("hop-anneal: routing needs the route methods, which the registry "
                             "hands in (options.run_method); solve through topoopt_milp.solve")
        knobs = {} if time_limit is None else {"time_limit": max(0.5, time_limit)}
        if name == "route-approx":
            knobs["epsilon"] = p.epsilon
        res = options.run_method(instance.with_topology(topo.links, rings), name, knobs,
                                 options.seed)
        if res.routing is not None and res.objective is not None:
            return res.routing, res, f"{name}: {res.status.value}"
        note = f"{name} returned no routing ({res.status.value}); shortest paths"
    routed = _result.shortest_paths(instance, topo, rings, options.seed)
    return (None if routed is None else routed[1]), None, note


def solve(instance: Instance, options: SolveOptions) -> SolveResult:
    """``hop-anneal`` (module docstring); ``feasible`` without a bound, ``info`` holds the
    annealing summary and the router's result."""
    t0 = time.perf_counter()
    p: HopAnnealParams = options.method
    cap = int(p.max_multiplicity)
    demand = Demand.of(instance)
    L0, label, _ = _start(instance, options, p, demand, cap)
    left = options.time_left()
    seconds = None if left is None else p.anneal_share * max(left, 0.0)
    L, info = anneal(L0, demand, cap, p, options.seed, seconds)
    info["start"] = label
    topo = Topology(L)
    left = options.time_left()
    routing, res, note = _route(instance, options, p, topo, left)
    runtime = time.perf_counter() - t0
    if routing is None:
        return SolveResult("hop-anneal", Status.NO_SOLUTION, None, None, runtime,
                           seed=options.seed, params=options.as_params(), backend="highs",
                           message=f"no routing: {note}", info=info)
    if res is not None:
        info["route"] = {"method": res.method, "objective_s": res.objective,
                         "bound_s": res.bound, "status": res.status.value}
    mean = info["hop_volume"] / max(demand.scale, 1e-300)
    msg = (f"start {label}; {info['moves']} moves, {info['accepted']} accepted in "
           f"{info['anneal_s']:.1f} s; demand-weighted mean distance "
           f"{info['start_hop_volume'] / max(demand.scale, 1e-300):.6g} -> {mean:.6g}; {note}")
    return _result.heuristic("hop-anneal", instance, options, topo, routing, runtime, msg,
                             route_result=res, info=info)


SPEC = MethodSpec(
    "hop-anneal", "alloc", "heuristic", "highs", HopAnnealParams, solve,
    "simulated annealing over degree-preserving 2-switches minimising the hop volume "
    "sum D dist (average distance on all-to-all traffic), then route-approx routing "
    "(an upper bound: no bound of its own)", memory=heuristic_memory, max_n=1024)
