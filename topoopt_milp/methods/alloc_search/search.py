"""alloc-search: a degree-preserving local search over link matrices, accepted on the exact
re-routed objective.

Problem: alloc-milp's (:mod:`..formulations.alloc`): an integer symmetric link matrix ``L``
with ``sum_j L_ij = d`` and ``L_ij <= cap``, AllReduce rings split over the TotientPerms
orders (``rings = choose``; ``given``: the orders of the instance's default rings, both
directions with a free split), fractional routing, minimising ``T_comm``.

Start. The best-start portfolio (:mod:`.starts`: TotientPerms, TopologyFinder,
demand-greedy, group-rings and random expanders, each re-routed by the route LP with free ring shares);
the current solution is the best re-routed one, and a warm start (``options.warm_start``,
e.g. alloc-alternate's result) joins the portfolio (with ``rings = tours`` re-routed with its
own ring orders among the candidates, so a continuation starts where the last run ended).
The search never returns anything worse than the best start, so it is never worse than
TotientPerms or TopologyFinder with LP routing whenever the portfolio routed them (see :mod:`.starts`).

Descent. Route LPs are expensive at n = 128 (one LP 16-80 s on the shared 2-core machine,
depending on its load), so the search first spends ``descent_share`` of the time limit
without any LP: degree-preserving swaps on the start with the lowest hop bound
(:func:`.starts.hop_bound`), each the one that lowers the hop volume ``H = sum D dist`` most
(:func:`.swaps.descend`). The result joins the portfolio as ``descent:<start>`` and is
re-routed first; like every start, it is kept only if its exact objective is the best.

Moves. Batches of the degree-preserving 2-swaps of :mod:`.swaps`, built greedily from the
current solution's arc loads, its route LP duals and the hop volume of its demand: drop the
links that cost least (lowest capacity price, or lowest utilisation), add links that
shortcut the heaviest far demands and the hottest paths (dual gains). A batch of ``q``
swaps costs one re-routing (:func:`.reroute.reroute`, the one evaluation call). The first
batch has ``n / 16`` swaps (``batch``); a rejected batch is halved (to half the swaps it
had, which may be fewer than asked for; a topology routed before is never routed again:
its solution is kept by its link matrix); at one swap, the
``tries`` best single swaps are tried one by one, each rejected one banned for the rest of
the chain.

Acceptance. A candidate becomes the current solution when its exact re-routed objective
(recomputed from the checked routing) is no worse than the current one (``<=``: plateau
moves are allowed, at most ``patience`` in a row); the best over the run is returned. After
an accepted improvement the batch size doubles again (up to the first one). A candidate
whose free-ring hop bound (:func:`.starts.free_hop_bound`: a lower bound on its route LP,
valid for every ring split the LP may choose) is above the current objective cannot be
accepted, so it is rejected without its LP (``info["evaluations"]["pruned"]`` counts them).

Large-neighbourhood moves (``lns_size > 0``). At a local optimum of the swaps (no single
swap of the ``tries`` accepted), up to ``lns_tries`` moves of :mod:`.lns`: the links among
the ``lns_size`` hottest nodes (by the route LP's arc prices) and their neighbours are
re-solved by a sub-MILP (alloc-milp's model with every other link fixed, ``lns_time``
seconds, the current links as its MIP start), its links re-routed and accepted when the
exact objective improves; the swaps then continue from there. A seed node is not used again
for the next ``n / 4`` moves.

Restarts. At a local optimum (no single swap of the ``tries`` accepted, or the batch
builder finds no predicted improvement) the search restarts from the next start of the
portfolio, then from the best solution perturbed by ``kick`` random admissible swaps
(seeded), until the time limit or ``max_iterations`` re-routings. With a time limit the
default sets no cap (0): at n = 32, d = 4 a route LP takes ~0.35-0.5 s, and the former cap
of 500 ended runs of a 300 s limit after 176 s (gpt3-13b) and 240 s (ncf, still improving:
results/bench_upper16/); without a time limit the cap is 500.

Scope. With ``rings = choose`` every solution's rings are TotientPerms orders with a free
split and its links satisfy the port budget and the cap: the search stays inside
alloc-milp's space, so alloc-milp's and alloc-benders' bounds cover its result
(``info["ring_space"]`` records the check of :func:`..formulations.ring_lp.in_ring_space`).
One exception: a start's own solution counts among the candidates, and group-split's own
rings are cycles of its link patterns, not TotientPerms orders; when it is the best, the
result lies outside that space, ``info["ring_space"]`` says so, and the result's scope
features (its rings) keep every gap honest.
With ``rings = tours`` the starts are routed in alloc-milp's space as above (a start whose
own rings lie outside it also with its own orders and tours, step ``start:NAME:own-rings``;
group-split runs once per ring pattern, port rule and cross rule, ``NAME`` =
``group-split:jumps``, ``:random``, ``:load``, ``:cycle``, ``:tour`` and ``:tour-nested`` (MP
tours, the nested layout), :data:`.starts.VARIANTS`), and
every later re-routing (the best start's own topology first, step ``tours``) offers the
route LP, besides the TotientPerms orders, tours of each group along the candidate
topology's links (:mod:`.tours`) and the ring orders of the solution it moves from (a swap
and a large-neighbourhood move: the current one; a kick and the polish: the best one), so a
move loses no ring order the current routing uses: the ring orders are then free (the
instance's own problem, "any ring order"), only bounds of that scope cover the result, and
``info["ring_space"]`` says so whenever a tour carries volume. It reports no bound of its
own (a heuristic). Without the current orders a group-split start (its rings are cycles of
its link patterns) could not be left: its own topology re-routed in the tours step came out
11-31% above it (mixed n = 16..128, d = 4), and so did the moves from it; same run and
load, mixed-n32-d4-g4-mp15, 90 s: 0.071613 s (the start) against 0.070229 s with them;
candle-n32-d4 0.70363 against 0.69577 s; mixed-n16-d4-g4-mp05, 15 s: 0.051474 against
0.051004 s.

Router. ``router = exact`` re-routes every move by the route LP; ``auto`` (the default) is
``approx`` from ``n = APPROX_MIN_N`` (64) on, where the exact LP takes tens of seconds.
``approx`` re-routes a move
by route-approx within ``1 + epsilon`` (1%) with the same ring candidates (free split),
warm-started from the nearest routed topology (:func:`.reroute.reroute_approx`), which
returns a checked routing and a certified lower bound on the move's LP: a routing at or
below the current objective is accepted as it is (a real, checked solution; the LP optimum
is at most its objective, so the exact router accepts it too), a bound above the current
objective rejects the move (the LP optimum is at least the bound, so the exact router
rejects it too), and a move in between -- routing above, bound not -- is re-routed within
``1.002`` (warm from the same topology's result), then, if still undecided, by the exact
LP, which decides. The two routers thus accept the same moves; an accepted move's routing
is within ``1 + epsilon`` of its LP optimum instead of at it. Starts and the final polish
stay exact. ``info["evaluations"]`` counts ``approx`` runs and ``exact`` fallbacks.

Time. The limit covers the whole run (:meth:`SolveOptions.time_left`); no re-routing starts
with less time left than the last one took; the portfolio takes at most ``lp_share`` of
the limit for its re-routings (it always routes the first start).
"""

from __future__ import annotations

import logging
import time
from dataclasses import asdict, dataclass

import numpy as np

from ...core.errors import InputError
from ...core.evaluate import arc_loads
from ...core.instance import Instance
from ...core.params import SolveOptions, knob, max_multiplicity_knob
from ...core.result import SolveResult, Status
from ...core.spec import MethodSpec
from ...core.topology import Topology
from .. import model_data as _exact
from .. import result_step as _certify
from ..alloc_alternate.search import Solution
from ..formulations.ring_lp import in_ring_space
from ..heuristics.support import heuristic_memory
from . import lns
from . import swaps as sw
from .reroute import RING_MODES, lp_options, reroute, reroute_approx, ring_candidates
from .starts import (
    BestStartParams,
    Candidate,
    as_solution,
    best_of,
    cheap_candidates,
    free_hop_bound,
    hop_bound,
    route_candidates,
)
from .tours import tour_candidates

log = logging.getLogger(__name__)

PROGRESS = 1e-6  # relative improvement that counts as progress
# route-approx's epsilons for a move, the next one only while the move is undecided (its
# routing above the current objective, its certified bound not); then the exact LP
APPROX_EPSILONS = (0.01, 0.002)
# router = auto: route-approx from this size. Measured (alloc-search, rings = tours, 300 s,
# load 4-6): candle-n128-d4 74 re-routings (1-5 s each) against 8 exact LPs (25-60 s), and
# 0.8560 s against 0.8651 s; mixed-n128-d4-g4-mp05 ~10 s against ~25 s per move; at
# ncf-n32-d4 107 against 91 re-routings in 60 s, so the exact LP stays below
APPROX_MIN_N = 64
SEARCH_STARTS = "totientperms,topologyfinder,demand-greedy,group-rings,group-split,expander"
START_CYCLES = 8  # per member: a start's group cycles offered with its own rings (tours.py)
MAX_ITERATIONS = 500  # re-routings without a time limit (max_iterations = 0)
DESCENT_S = 30.0  # hop-volume descent without a time limit: at most this many seconds


@dataclass(frozen=True)
class AllocSearchParams(BestStartParams):
    """alloc-search: the swap local search (and its best-start portfolio)."""

    max_multiplicity: int | None = max_multiplicity_knob()
    # without totientperms-lp: at n = 128 its LP alone can take the whole time limit
    start_methods: str = knob(SEARCH_STARTS, "alloc-search: cheap start heuristics "
                                             "(comma-separated; expander once per seed).")
    rings: str = knob("choose", "alloc-search: ring space: choose (TotientPerms orders, free "
                                "split: alloc-milp's), given (the default rings' two "
                                "directions, free split) or tours (TotientPerms orders "
                                "plus tours of each topology: any ring order, outside "
                                "alloc-milp's space).",
                      choices=(*RING_MODES, "tours"))
    batch: int = knob(0, "alloc-search: swaps in the first batch (0: n / 16).", minimum=0)
    tries: int = knob(3, "alloc-search: single swaps re-routed before a restart.", minimum=1)
    patience: int = knob(5, "alloc-search: accepted plateau moves in a row.", minimum=1)
    k_add: int = knob(24, "alloc-search: pairs to add considered per swap.", minimum=1)
    pool: int = knob(60, "alloc-search: swaps whose hop change is computed per swap.",
                     minimum=1)
    kick: int = knob(0, "alloc-search: random swaps of a perturbation restart (0: n / 8).",
                     minimum=0)
    max_iterations: int = knob(0, "alloc-search: most re-routings (0: none under a time "
                                  "limit, the limit ends the run; 500 without one).",
                               minimum=0)
    hop_penalty: float = knob(1e-4, "alloc-search: cost per unit of flow per hop in the "
                                    "search LPs (prefers short routes).", minimum=0)
    polish: bool = knob(True, "alloc-search: re-route the best topology without the hop "
                              "penalty, at HiGHS' default tolerance, at the end.")
    descent_share: float = knob(0.15, "alloc-search: share of the time limit for the "
                                      "hop-volume descent of the best start (0: none).",
                                minimum=0, maximum=1.0)
    lns_size: int = knob(0, "alloc-search: large-neighbourhood moves at a local optimum: "
                            "free the links among this many hot nodes and their neighbours "
                            "and re-solve them by a sub-MILP (lns.py; 0: off).", minimum=0)
    lns_time: float = knob(30.0, "alloc-search: seconds per sub-MILP of a "
                                 "large-neighbourhood move.", positive=True)
    lns_tries: int = knob(2, "alloc-search: large-neighbourhood moves tried at a local "
                             "optimum before a restart.", minimum=1)
    prune: bool = knob(True, "alloc-search: reject a move without its LP when its free-ring "
                             "hop bound (a lower bound on the LP) is above the current "
                             "objective.")
    router: str = knob("auto", "alloc-search: re-routing of the moves: exact (the route LP), "
                               "approx (route-approx within 1%, warm-started from the nearest "
                               "routed topology; the exact LP decides a move whose routing is "
                               "above the current objective and whose certified bound is not) "
                               f"or auto (approx from n = {APPROX_MIN_N}).",
                       choices=("auto", "exact", "approx"))


@dataclass(frozen=True)
class Step:
    """One trajectory entry: ``kind`` ``start:<name>``, ``swap:<count>``, ``restart:<from>``,
    ``kick:<count>`` or ``polish``."""

    iteration: int
    kind: str
    objective_s: float | None
    accepted: bool
    elapsed_s: float
    note: str = ""


def random_swaps(links: np.ndarray, cap: int, count: int, rng: np.random.Generator
                 ) -> np.ndarray:
    """``links`` after ``count`` random admissible 2-swaps (a perturbation; degrees kept)."""
    L = links.copy()
    done = 0
    for _ in range(50 * max(count, 1)):
        if done >= count:
            break
        iu, ju = np.nonzero(np.triu(L > 0, 1))
        k1, k2 = rng.choice(len(iu), size=2, replace=False)
        a, b, c, d = int(iu[k1]), int(ju[k1]), int(iu[k2]), int(ju[k2])
        if rng.random() < 0.5:
            c, d = d, c
        if len({a, b, c, d}) < 4 or L[a, c] >= cap or L[b, d] >= cap:
            continue
        L = sw.apply(L, (a, b, c, d))
        done += 1
    return L


def _names(p: AllocSearchParams) -> list[str]:
    return [m.strip() for m in p.start_methods.split(",") if m.strip()]


def _own(instance: Instance, options: SolveOptions, L: np.ndarray, rings) -> SolveResult | None:
    """A descended topology with shortest-path routing (its own routing as a start)."""
    routed = _certify.shortest_paths(instance, Topology(L), rings, options.seed)
    if routed is None:
        return None
    return _certify.heuristic("alloc-search", instance, options, routed[0], routed[1], 0.0)


def search(instance: Instance, options: SolveOptions, p: AllocSearchParams,
           time_limit: float | None, stats: dict | None = None
           ) -> tuple[Solution | None, list[Step], list[Candidate]]:
    """The local search of the module docstring; returns the best solution (``None`` when no
    start gave one), the trajectory and the portfolio. ``stats`` (a dict, filled in) counts
    the search's evaluations: ``lps`` re-routings solved, ``lp_s`` their wall seconds,
    ``cached`` topologies met again (their re-routing reused, no LP)."""
    t0 = time.perf_counter()
    stats = {} if stats is None else stats
    stats.update(lps=0, lp_s=0.0, cached=0, pruned=0, approx=0, exact=0)
    n = instance.n
    cap = instance.degree if p.max_multiplicity is None else int(p.max_multiplicity)
    lp, exact = lp_options(options), lp_options(options, None)  # moves; starts and polish
    traj: list[Step] = []
    last = [0.0]

    def elapsed() -> float:
        return time.perf_counter() - t0

    def left() -> float | None:
        return None if time_limit is None else time_limit - elapsed()

    def room() -> bool:
        return left() is None or left() > last[0]

    approx = p.router == "approx" or (p.router == "auto" and n >= APPROX_MIN_N)
    seen: dict[bytes, tuple[Solution | None, str]] = {}  # link matrix -> its re-routing
    hint: list[np.ndarray | None] = [None]  # the current solution's arc loads (tours' weights)

    def routed(L: np.ndarray, penalty: float, opts: SolveOptions = lp, own=(),
               cutoff: float | None = None, cycles: int = 0) -> tuple[Solution | None, str]:
        """``L`` re-routed (cached by its links); with ring tours, the orders of the rings
        ``own`` (a warm start's) join the candidates, so that it keeps its own rings. With a
        ``cutoff`` (seconds), a topology whose free-ring hop bound (:func:`free_hop_bound`,
        a lower bound on its LP) exceeds it is rejected without an LP."""
        key = np.ascontiguousarray(L, dtype=np.int64).tobytes() + repr((penalty, opts is lp)).encode()
        if key in seen:  # the same topology again (a batch rebuilt after a rejection): no LP
            stats["cached"] += 1
            return seen[key]
        rings = p.rings if p.rings != "tours" else tour_candidates(
            instance, L, hint[0], seed=options.seed, cycles_per_member=cycles)  # along L
        if p.rings == "tours":
            for r in own:
                orders = rings.get(r.group)
                if orders is not None and tuple(r.order) not in orders:
                    orders.append(tuple(r.order))
        if cutoff is not None and p.prune:
            bound = free_hop_bound(instance, L, ring_candidates(instance, rings))
            if bound > cutoff:
                stats["pruned"] += 1
                return None, f"hop bound {bound:.6g} s > {cutoff:.6g} s: no LP"
        t = time.perf_counter()
        rem = left()  # 0.75: model building, decomposition and check surround the LP
        sol = None
        if approx and opts is lp:  # the moves; starts and polish stay exact
            for eps in APPROX_EPSILONS:
                # a tighter epsilon re-routes warm from the same topology's last result
                stats["approx"] += 1
                sol, why = reroute_approx(instance, Topology(L), opts, epsilon=eps,
                                          time_limit=None if rem is None else 0.75 * rem,
                                          rings=rings)
                rem = left()
                undecided = (sol is not None and cutoff is not None
                             and sol.objective_s > cutoff
                             and (sol.bound_s is None or sol.bound_s <= cutoff))
                if sol is None or not undecided:
                    break
            if sol is None or undecided:
                # no answer, or its routing is above the cutoff while its certified bound is
                # not: only the exact LP tells whether L beats the current solution
                stats["exact"] += 1
                sol = None
        if sol is None:
            sol, why = reroute(instance, Topology(L), rings, opts, penalty,
                               None if rem is None else 0.75 * rem)
        last[0] = time.perf_counter() - t
        stats["lps"] += 1
        stats["lp_s"] += last[0]
        if sol is not None:  # a failure may be the time limit: not cached
            seen[key] = (sol, why)
        return sol, why

    budget = None if time_limit is None else p.lp_share * time_limit
    cands = cheap_candidates(instance, options.run_method, _names(p), p.expander_seeds,
                             options.seed, None if time_limit is None else t0 + time_limit)
    if cands and p.descent_share > 0:
        # the hop-volume descent of the best start by hop bound, routed first (module doc)
        seconds = DESCENT_S if time_limit is None else p.descent_share * time_limit
        c = cands[0]
        D = _exact.demand_matrix(instance, c.own.routing.rings)
        L, count = sw.descend(np.asarray(c.own.topology.links), D, cap, seconds, p.k_add,
                              p.pool)
        own = _own(instance, options, L, c.own.routing.rings) if count else None
        if own is not None:
            cands.insert(0, Candidate(f"descent:{c.name}", own, hop_bound(
                instance, L, c.own.routing.rings)))
        traj.append(Step(0, f"descent:{count}", None if own is None else own.objective,
                         own is not None, elapsed()))
    start_rings = "choose" if p.rings == "tours" else p.rings  # starts: alloc-milp's space
    cands = route_candidates(instance, cands, start_rings, exact, budget,  # see starts.portfolio
                             None if time_limit is None else t0 + time_limit)
    if p.rings == "tours":
        # a start whose own rings lie outside alloc-milp's space (group-split's cycles) is
        # routed with them and tours as well: its topology is built for those rings
        # (gpt3-13b-n128-d4: group-split's own shares with the route LP 0.4469 s, its own
        # orders and tours with a free split 0.4218 s; the best start before, TotientPerms
        # re-routed, 0.4449 s)
        for i, c in enumerate(cands):
            if in_ring_space(instance, c.own.routing.rings) or not room():
                continue
            sol, why = routed(np.asarray(c.own.topology.links), 0.0, exact, c.own.routing.rings,
                              cycles=START_CYCLES)
            if sol is not None and (c.routed is None or sol.objective_s < c.routed.objective_s):
                cands[i] = Candidate(c.name, c.own, c.hop_bound, sol)
            traj.append(Step(0, f"start:{c.name}:own-rings",
                             None if sol is None else sol.objective_s, sol is not None,
                             elapsed(), why))
    ws = options.warm_start
    if ws is not None and ws.topology is not None and ws.topology.n == n:
        # with tours, its own ring orders too: measured on ncf-n32-d4, a warm start of
        # 0.0109415 s re-routed over fresh tours alone came out at 0.0114853 s
        sol, why = routed(np.asarray(ws.topology.links), 0.0, exact,
                          ws.routing.rings if ws.routing is not None else ())
        traj.append(Step(0, f"start:warm:{ws.method}", None if sol is None else sol.objective_s,
                         sol is not None, elapsed(), why))
        if sol is not None:
            cands = [Candidate(f"warm:{ws.method}", ws, float("inf"), sol), *cands]
    for c in cands:
        traj.append(Step(0, f"start:{c.name}", None if c.routed is None else c.routed.objective_s,
                         c.routed is not None, elapsed()))
    first = best_of(cands)
    if first is None:
        return None, traj, cands
    label, top = first
    best = top if isinstance(top, Solution) else as_solution(instance, top)
    queue = sorted((c for c in cands if c.routed is not None),
                   key=lambda c: c.routed.objective_s)
    unrouted = [c for c in cands if c.routed is None]
    if not queue:
        return best, traj, cands
    current = queue.pop(0).routed
    if best is None or current.objective_s < best.objective_s:
        best = current
    if p.rings == "tours" and room():
        # the best start's topology with ring orders along its links (tours.py)
        hint[0] = arc_loads(n, current.routing)
        sol, why = routed(current.topology.links, p.hop_penalty, own=current.rings)
        ok = sol is not None and sol.objective_s < current.objective_s
        traj.append(Step(0, "tours", None if sol is None else sol.objective_s, ok, elapsed(), why))
        if ok:
            current = sol
            best = sol if sol.objective_s < best.objective_s else best
    q0 = p.batch or max(1, n // 16)
    q, fails, plateau, it, kicks = q0, 0, 0, 0, 0
    banned: set[tuple] = set()
    rng = np.random.default_rng(options.seed)

    def restart() -> Solution | None:
        nonlocal kicks
        while queue or unrouted:
            if not room():
                return None
            if queue:
                c = queue.pop(0)
                traj.append(Step(it, f"restart:{c.name}", c.routed.objective_s, True, elapsed()))
                return c.routed
            c = unrouted.pop(0)
            sol, why = routed(np.asarray(c.own.topology.links), p.hop_penalty,
                              own=() if c.own.routing is None else c.own.routing.rings)
            traj.append(Step(it, f"restart:{c.name}", None if sol is None else sol.objective_s,
                             sol is not None, elapsed(), why))
            if sol is not None:
                return sol
        while room():
            kicks += 1
            count = p.kick or max(2, n // 8)
            sol, why = routed(random_swaps(best.topology.links, cap, count, rng), p.hop_penalty,
                              own=best.rings)
            traj.append(Step(it, f"kick:{count}", None if sol is None else sol.objective_s,
                             sol is not None, elapsed(), why))
            if sol is not None:
                return sol
        return None

    tabu: list[int] = []  # recent seeds of the large-neighbourhood moves

    def lns_move() -> Solution | None:
        """One large-neighbourhood move on the current solution (lns.py): the sub-MILP on
        the hottest nodes not tried lately, its links re-routed and accepted on the exact
        objective when it improves."""
        nonlocal it
        L = current.topology.links
        heat = lns.node_heat(L, arc_loads(n, current.routing), current.prices)
        S, seed = lns.hot_set(L, heat, p.lns_size, tabu)
        if seed is None:
            return None
        tabu.append(seed)
        del tabu[:-max(1, n // 4)]
        rings = p.rings if p.rings != "tours" else tour_candidates(
            instance, L, hint[0], seed=options.seed)
        rem = left()
        limit = p.lns_time if rem is None else min(p.lns_time, 0.5 * rem)
        cands = ring_candidates(instance, rings)
        for r in current.rings:  # the current rings too: L is then feasible at its objective
            if r.group in cands and tuple(r.order) not in cands[r.group]:
                cands[r.group] = [*cands[r.group], tuple(r.order)]
        try:
            sub = lns.solve_sub(instance, L, S, cands, cap, lp, limit)
        except (ValueError, InputError) as exc:
            traj.append(Step(it, f"lns:{len(S)}", None, False, elapsed(), str(exc)))
            return None
        sol, why = None, "no new links"
        if sub.links is not None and not np.array_equal(sub.links, L):
            why = "no predicted improvement"
            if sub.objective_s is not None and \
                    sub.objective_s < current.objective_s * (1 - PROGRESS):
                it += 1
                sol, why = routed(sub.links, p.hop_penalty, own=current.rings,
                                  cutoff=current.objective_s)
        ok = sol is not None and sol.objective_s < current.objective_s * (1 - PROGRESS)
        note = f"{why or ''} sub-MILP {sub.status} {sub.runtime_s:.1f} s " \
               f"{sub.objective_s if sub.objective_s is not None else '-'}".strip()
        traj.append(Step(it, f"lns:{len(S)}", None if sol is None else sol.objective_s, ok,
                         elapsed(), note))
        return sol if ok else None

    cap_it = p.max_iterations or (MAX_ITERATIONS if time_limit is None else None)
    while (cap_it is None or it < cap_it) and room():
        D = _exact.demand_matrix(instance, current.rings)
        g = sw.guide(current.topology.links, D, arc_loads(n, current.routing), current.prices,
                     current.gains)
        L, done = sw.batch(current.topology.links, g, D, cap, q, p.k_add, p.pool, banned,
                           positive=q > 1)
        if not done:
            if q > 1:
                q = 1
                continue
            fails = p.tries  # nothing left to try here
        else:
            it += 1
            sol, why = routed(L, p.hop_penalty, own=current.rings,
                              cutoff=current.objective_s * (1 + 1e-12))
            ok = sol is not None and sol.objective_s <= current.objective_s * (1 + 1e-12)
            better = ok and sol.objective_s < current.objective_s * (1 - PROGRESS)
            if ok and not better:
                plateau += 1
                ok = plateau <= p.patience
            traj.append(Step(it, f"swap:{len(done)}", None if sol is None else sol.objective_s,
                             ok, elapsed(), why))
            if ok:
                current, fails = sol, 0
                hint[0] = None if p.rings != "tours" else arc_loads(n, current.routing)
                banned.clear()
                if better:
                    plateau = 0
                    q = min(q0, 2 * q)
                if current.objective_s < best.objective_s:
                    best = current
                continue
            if len(done) > 1:
                # halve the batch that was tried (it may have had fewer than q swaps: halving
                # q alone rebuilds the same batch and re-routes the same topology)
                q = max(1, len(done) // 2)
                continue
            banned.add(sw.swap_key(done[0]))
            fails += 1
        if fails < p.tries:
            continue
        sol = None
        for _ in range(p.lns_tries if p.lns_size else 0):  # large-neighbourhood moves
            if not room():
                break
            sol = lns_move()
            if sol is not None:
                break
        if sol is not None:
            current, fails, plateau, q = sol, 0, 0, q0
            hint[0] = None if p.rings != "tours" else arc_loads(n, current.routing)
            banned.clear()
            if current.objective_s < best.objective_s:
                best = current
            continue
        nxt = restart()
        if nxt is None:
            break
        current, q, fails, plateau = nxt, q0, 0, 0
        banned.clear()
        if current.objective_s < best.objective_s:
            best = current
    from_start = any(best is c.routed for c in cands)  # starts are routed exactly already
    if p.polish and not from_start and best.prices is not None and room():
        sol, why = routed(best.topology.links, 0.0, exact, own=best.rings)
        ok = sol is not None and sol.objective_s < best.objective_s
        traj.append(Step(it, "polish", None if sol is None else sol.objective_s, ok, elapsed(),
                         why))
        if ok:
            best = sol
    return best, traj, cands


def solve(instance: Instance, options: SolveOptions) -> SolveResult:
    """``alloc-search``: thin adapter over :func:`search`; the result is ``feasible`` without
    a bound, ``info`` holds the trajectory, the portfolio and ``ring_space``."""
    t0 = time.perf_counter()
    p = options.method
    stats: dict = {}
    best, traj, cands = search(instance, options, p, options.time_left(), stats)
    runtime = time.perf_counter() - t0
    info = {"trajectory": [asdict(s) for s in traj], "evaluations": stats,
            "starts": [{"name": c.name, "own_s": c.own.objective,
                        "routed_s": None if c.routed is None else c.routed.objective_s}
                       for c in cands]}
    if best is None:
        return SolveResult("alloc-search", Status.NO_SOLUTION, None, None, runtime,
                           seed=options.seed, params=options.as_params(), backend="highs",
                           message="no start could be built or routed", info=info)
    space = in_ring_space(instance, best.rings) if p.rings != "given" else None
    info["ring_space"] = "alloc-milp (TotientPerms orders, free split)" if space else (
        "given rings" if space is None else
        "any ring order (tours of the topology): outside alloc-milp's ring space")
    swaps = [s for s in traj if s.kind.startswith("swap:")]
    starts = [s.objective_s for s in traj if s.kind.startswith("start:") and s.objective_s]
    first = min(starts, default=best.objective_s)
    msg = (f"{len(swaps)} swap batch(es) re-routed, {sum(s.accepted for s in swaps)} accepted "
           f"({stats['lps']} LPs in {stats['lp_s']:.0f} s, {stats['cached']} met again, "
           f"{stats['pruned']} discarded by the hop bound); "
           f"best start {first:.6g} s -> {best.objective_s:.6g} s; rings: {info['ring_space']}")
    return _certify.heuristic("alloc-search", instance, options, best.topology, best.routing,
                              runtime, msg, info=info)


SPEC = MethodSpec(
    "alloc-search", "alloc", "heuristic", "highs", AllocSearchParams, solve,
    "degree-preserving 2-swap local search guided by arc loads, LP duals and hop counts, "
    "accepted on the exact re-routed objective, with restarts from the best cheap heuristics "
    "(an upper bound: no bound of its own)", memory=heuristic_memory, max_n=256)
