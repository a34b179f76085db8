"""alloc-alternate: an upper-bound method for the alloc problem by alternating topology and
routing steps (in the spirit of ATRO, arXiv 2507.13717).

The alloc problem (:mod:`.alloc`) chooses an integer link matrix ``L`` under the port budget,
AllReduce ring splits over the TotientPerms orders and a fractional routing, minimising
``T_comm``. Both halves are easy when the other is fixed:

* **routing step** -- on a fixed ``L``, the route LP with free ring shares over the
  TotientPerms orders (:func:`.ring_lp.route_rings`) is exact;
* **topology step** -- for the arc loads ``W`` of a fixed routing, the integer ``L``
  minimising ``max_a W_a / (L_a B)`` is found exactly by a binary search
  (:func:`.link_step.best_links`).

Alternating them cannot get worse: the topology step's ``L'`` carries the current routing at
``T* <= T`` (the current ``L`` is one of its candidates), and the routing step on ``L'`` is at
most ``T*`` (the current routing is one of its candidates). Every solution stays in
alloc-milp's space (port budget, multiplicity cap, TotientPerms ring orders with a free
split), so alloc-milp's and alloc-benders' bounds cover it and it can never beat their proven
optimum.

Start. The warm start first (by default best-start, :mod:`..alloc_search.starts`: the best
of TotientPerms, TopologyFinder, demand-greedy and random expanders, each re-routed by the
route LP with free ring shares), then TotientPerms, TopologyFinder, demand-greedy and a
random expander, each routed by the routing step (their ring orders lie in the TotientPerms
space, so the free split over that space is never worse than their own rings with LP
routing); the others are kept for restarts. (Issue 16: without the expander, a 300 s run on
uniform all-to-all traffic at n = 128, d = 8 ended 3.8% above a random expander with LP
routing.)

The plain alternation stalls at once (measured on every mixed and coopt instance tried,
n = 16 .. 32): with small ``d`` nearly every link is a single link and carries load in the
route LP's solution, so the topology step must keep every link (``l_ij >= 1``) and returns
the same ``L``. Progress needs the routing to give links up, so the topology step is fed
*release moves* (:func:`moves`): the loads of a few weakly used links at the ends of the
most critical pairs are forgotten, the exact topology step re-spends the freed ports, and the
routing step re-routes what those links carried. Each move is one routing step (one LP).

Guides. A pair's criticality and the value of a spare port come from the route LP's duals
(``prices``/``gains`` of :class:`.ring_lp.RingRoute`: first-order gain of one more link on an
arc, new or existing) or, as a second neighbourhood, from the loads (utilisation). The search
uses the duals first and switches to the loads when the dual-guided moves are exhausted
(measured: either guide alone stops earlier on some instances).

Batches. At large ``n`` a single 2-swap rarely changes ``T_comm`` (many pairs are critical)
and LPs are expensive, so the first moves release links for a batch of up to ``n / 16``
critical pairs at once (the number of pairs at the maximum utilisation); a rejected batch is
halved, down to single pairs.

Acceptance. A move's solution becomes the current one when it is no worse than the current
(``<=``: a plateau move may prepare a later gain). Progress means better than the best by a
relative ``1e-6``. After ``patience`` accepted moves without progress, or when no move of the
current batch size 1 is accepted, the search switches guide, then restarts from the next
start (``restarts``), then stops; it also stops at ``max_iterations`` routing steps or the
time limit. Within a chain of accepted moves the objective never increases; the best over all
chains is returned.

Routing with a hop penalty. An interior-point LP solution spreads flow over every arc some
optimal routing could use. The routing step minimises ``U`` plus ``hop_penalty`` times the
mean hop count (:mod:`.ring_lp`; the default ``1e-4`` costs at most ``1e-4`` times the mean hop
count, in units of the ideal-switch time), and the best topology is re-routed without the
penalty at the end (``polish``). Search LPs stop at an IPM optimality tolerance of ``1e-6``
(``lp_tolerance``; measured 40% faster than HiGHS' default ``1e-8`` at n = 64 under load,
about the same at n = 128, d = 8; the objective is 1e-8 relatively higher). Objectives are
always recomputed from the routing. At n = 128, d = 8 a routing step is one LP of 131k
columns: 16-22 s on the shared development machine (94% of a step; the link step takes
0.2 s, decomposition and checking 0.7 s), so the 120 s budget buys the first start and
about four moves there.

Every accepted solution has been re-verified by the independent checker
(:func:`~topoopt_milp.core.check.check_solution`); a rejected one is recorded in the trajectory
and skipped. The result is ``feasible`` with ``bound = None``; ``params["trajectory"]`` lists
every step ``(iteration, kind, objective_s, t_star_s, accepted, elapsed_s, note)``, ``kind``
one of ``start:<method>``, ``alternate:0:<guide>``, ``release:<links>:<guide>``,
``switch:<guide>``, ``restart``, ``polish``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass

import numpy as np

from ...core.check import check_solution
from ...core.evaluate import arc_loads, evaluate
from ...core.instance import Instance
from ...core.params import Params, SolveOptions, knob, max_multiplicity_knob
from ...core.result import SolveResult, Status, finite_json, solution_dict
from ...core.spec import MethodSpec
from ...core.topology import Ring, Routing, Topology
from .. import model_data as _exact
from .. import result_step as _certify
from ..formulations.ring_lp import RingRoute, candidate_orders, in_ring_space, route_rings
from ..heuristics.support import heuristic_memory
from .link_step import best_links, pair_loads

log = logging.getLogger(__name__)

STARTS = ("totientperms", "topologyfinder", "demand-greedy", "expander")
PROGRESS = 1e-6  # relative improvement that counts as progress
MOVE_KINDS = ("alternate", "release", "polish")  # trajectory steps that ran a routing step
CLOCKS = {"wall": time.perf_counter, "cpu": time.process_time}


@dataclass(frozen=True)
class AllocAlternateParams(Params):
    """alloc-alternate: the alternation of an exact link step and the route LP."""

    max_multiplicity: int | None = max_multiplicity_knob()
    max_iterations: int = knob(200, "alloc-alternate: most routing steps.", minimum=1)
    patience: int = knob(20, "alloc-alternate: steps without progress before a restart.",
                         minimum=1)
    max_moves: int = knob(50, "alloc-alternate: release moves tried per batch size.", minimum=1)
    batch: int | str = knob("critical", "alloc-alternate: critical pairs released per move: "
                                        "critical (n/16, halved on rejection) or a number.",
                            choices=("critical",), minimum=1)
    use_duals: bool = knob(True, "alloc-alternate: guide the moves by the route LP's duals.")
    restarts: bool = knob(True, "alloc-alternate: restart from the other starts when stuck.")
    hop_penalty: float = knob(1e-4, "alloc-alternate: cost per unit of flow per hop in the "
                                    "search LPs (prefers short routes).", minimum=0)
    polish: bool = knob(True, "alloc-alternate: re-route the best topology without the hop "
                              "penalty at the end.")
    lp_tolerance: float = knob(1e-6, "alloc-alternate: interior-point tolerance of the search "
                                     "LPs.", positive=True)
    starts: str = knob("totientperms,topologyfinder,demand-greedy,expander",
                       "alloc-alternate: start heuristics (comma-separated).")
    clock: str = knob("wall", "alloc-alternate: the time limit counts wall time, or this "
                              "process's CPU seconds (cpu: for shared machines).",
                      choices=("wall", "cpu"))


@dataclass(frozen=True)
class Step:
    """One trajectory entry (``kind``: see the module docstring); ``t_star_s`` is the
    topology step's optimum for the (modified) loads of the previous routing."""

    iteration: int
    kind: str
    objective_s: float | None
    t_star_s: float | None
    accepted: bool
    elapsed_s: float
    note: str = ""


@dataclass(frozen=True)
class Solution:
    """A checked solution; ``prices`` / ``gains`` are its route LP's duals (or ``None``);
    ``bound_s`` a certified lower bound on the route LP of its topology with the same ring
    candidates, when its router gave one (route-approx's)."""

    topology: Topology
    routing: Routing
    rings: tuple[Ring, ...]
    objective_s: float
    prices: np.ndarray | None = None
    gains: np.ndarray | None = None
    bound_s: float | None = None


def _checked(instance: Instance, sol: Solution) -> tuple[Solution | None, str]:
    """``sol`` if the independent checker accepts it, else ``None`` and the reason."""
    res = SolveResult("alloc-alternate", Status.FEASIBLE, sol.objective_s, None, 0.0,
                      topology=sol.topology, routing=sol.routing)
    problems = check_solution(instance.to_dict(), finite_json(solution_dict(
        res, instance, evaluate(instance, sol.topology, sol.routing))))
    if problems:
        return None, f"checker: {len(problems)} violation(s): {problems[0]}"
    return sol, ""


def _solution(rr: RingRoute) -> tuple[Solution | None, str]:
    if rr.routing is None:
        return None, f"routing step failed: {rr.outcome.status.value} {rr.outcome.message}"
    return Solution(rr.topology, rr.routing, rr.rings, float(rr.objective_s), rr.prices,
                    rr.gains), ""


@dataclass(frozen=True)
class Start:
    """A start heuristic's topology with its own (cheap, default) routing and objective."""

    method: str
    topology: Topology
    routing: Routing
    objective_s: float


def start_topologies(instance: Instance, run_method: Callable[..., SolveResult],
                     methods: Sequence[str] = STARTS, seed: int = 0) -> list[Start]:
    """Every start heuristic that runs, routed by its default routing; ``run_method`` runs a
    method by name (:attr:`SolveOptions.run_method`, handed in by the registry)."""
    out = []
    for m in methods:
        try:
            res = run_method(instance, m, {}, seed)
        except Exception as exc:  # a heuristic that cannot handle the instance is skipped
            log.warning("alloc-alternate: start %s failed: %s", m, exc)
            continue
        if res.topology is not None and res.routing is not None:
            out.append(Start(m, res.topology, res.routing, float(res.objective)))
    return out


def direct_demand(instance: Instance, rings: Sequence[Ring]) -> np.ndarray:
    """Bytes per ordered pair over the MP demands and the ring edges of ``rings``."""
    return _exact.demand_matrix(instance, rings)


def alternate(
    instance: Instance,
    starts: Sequence[tuple[str, Topology]],
    params: AllocAlternateParams | None = None,
    *,
    time_limit: float | None = None,
    lp_options: SolveOptions | None = None,
) -> tuple[Solution | None, list[Step]]:
    """Run the alternation of the module docstring from the ``starts`` ``(name, topology)``;
    return the best checked solution (``None`` if no start could be routed) and the
    trajectory. ``params`` holds the knobs (:class:`AllocAlternateParams`).

    ``params.clock`` measures the time limit and the trajectory times: wall time by default;
    ``cpu`` counts this process's CPU seconds instead (a shared machine's load then does not
    eat the budget; the LPs then run without a HiGHS time limit)."""
    p = params or AllocAlternateParams()
    clock = CLOCKS[p.clock]
    max_iterations, patience, max_moves = p.max_iterations, p.patience, p.max_moves
    batch, use_duals, restarts = p.batch, p.use_duals, p.restarts
    hop_penalty, polish = p.hop_penalty, p.polish
    t0 = clock()
    lp_options = lp_options or SolveOptions()
    cands = candidate_orders(instance)
    cap = instance.degree if p.max_multiplicity is None else int(p.max_multiplicity)
    traj: list[Step] = []

    last_lp = [0.0]  # clock time of the last routing step

    def left() -> float | None:
        return None if time_limit is None else time_limit - (clock() - t0)

    def room() -> bool:
        """Time for another routing step: an LP stopped by the time limit is wasted, so none
        is started with less than the last one's time left."""
        return left() is None or left() > last_lp[0]

    def routed(topo: Topology, penalty: float) -> tuple[Solution | None, str]:
        rem = left() if clock is time.perf_counter else None  # HiGHS limits are wall time
        opts = lp_options if rem is None else lp_options.with_(
            solver=lp_options.solver.with_(time_limit=max(rem, 1.0)), deadline=None)
        t = clock()
        rr = route_rings(instance, topo, cands, opts, penalty)
        last_lp[0] = clock() - t
        sol, why = _solution(rr)
        return (None, why) if sol is None else _checked(instance, sol)

    def elapsed() -> float:
        return clock() - t0

    def route_start(name: str, topo: Topology) -> Solution | None:
        note = ""
        if topo.links.max(initial=0) > cap:
            fixed = repair(instance, topo, cap, left())
            if fixed is None:
                traj.append(Step(0, f"start:{name}", None, None, False, elapsed(),
                                 f"multiplicity above the cap {cap}; no repair within the "
                                 "port budget"))
                return None
            topo, note = fixed, f"multiplicity above the cap {cap}: repaired by the link step"
        sol, why = routed(topo, hop_penalty)
        traj.append(Step(0, f"start:{name}", None if sol is None else sol.objective_s, None,
                         sol is not None, elapsed(), "; ".join(x for x in (note, why) if x)))
        return sol

    # Starts in the given order (best guess first); duplicates of a topology are dropped.
    # The first one that routes is routed at once; the others too when the first LP suggests
    # they cost at most a quarter of the time limit, else lazily, when a restart needs them.
    todo: list[tuple[str, Topology]] = []
    for name, topo in starts:
        if all((topo.links != t.links).any() for _, t in todo):
            todo.append((name, topo))
    pool: list[Solution] = []
    while todo and not pool and (not traj or room()):  # the first start always runs
        sol = route_start(*todo.pop(0))
        if sol is not None:
            pool.append(sol)
    if not pool:
        return None, traj
    lp_time = elapsed()
    if time_limit is None or lp_time * len(todo) <= 0.25 * time_limit:
        while todo and room():
            sol = route_start(*todo.pop(0))
            if sol is not None:
                pool.append(sol)
    pool.sort(key=lambda p: p.objective_s)
    best = pool[0]
    queue: list[Solution | tuple[str, Topology]] = [*pool[1:], *todo] if restarts else []
    current = best
    seen = {current.topology.links.tobytes()}

    def first_batch(sol: Solution) -> int:
        """The first batch size: the number of critical pairs (utilisation at the maximum),
        at most ``n / 16``; or the fixed ``batch``."""
        if batch is not None and batch != "critical":
            return max(1, int(batch))
        w = pair_loads(arc_loads(instance.n, sol.routing))
        L = sol.topology.links
        util = np.where(L > 0, w / np.maximum(L, 1), 0.0)
        crit = int(np.triu(util >= (1 - 1e-6) * util.max(), 1).sum())
        return max(1, min(crit, instance.n // 16))

    def explore(cur: Solution, q: int, guide: str) -> Solution | None:
        """Try the moves of ``cur`` (batch ``q``) until one is accepted: a solution no worse
        than ``cur``. A rejected batch of ``q > 1`` ends the try (the caller halves ``q``)."""
        nonlocal it
        W = arc_loads(instance.n, cur.routing)
        prio = direct_demand(instance, cur.rings)
        price = cur.prices if guide == "duals" else None
        value = cur.gains if guide == "duals" else None
        for kind, released in moves(W, cur.topology.links, q, max_moves, price):
            if it >= max_iterations or not room():
                return None
            Wm = W.copy()
            for a, b in released:
                Wm[a, b] = Wm[b, a] = 0.0
            step = best_links(Wm, instance.degree, instance.link_bytes_per_s, instance.regular,
                              cap, priority=prio, value=value, time_limit=left())
            key = step.links.tobytes()
            if key in seen:
                continue
            seen.add(key)
            it += 1
            try:
                sol, why = routed(Topology(step.links), hop_penalty)
            except ValueError as exc:  # the released links disconnected some demand
                sol, why = None, str(exc)
            ok = sol is not None and sol.objective_s <= cur.objective_s
            traj.append(Step(it, f"{kind}:{len(released)}:{guide}",
                             None if sol is None else sol.objective_s, step.t_star, ok,
                             elapsed(), why))
            if ok:
                return sol
            if kind == "release" and q > 1:
                return None  # a rejected batch: the caller retries with half the batch
        return None

    guides = ("duals", "loads") if use_duals and current.prices is not None else ("loads",)
    q0 = first_batch(current)
    q, g, idle, it = q0, 0, 0, 0
    while it < max_iterations and room():
        accepted = explore(current, q, guides[g])
        if accepted is not None:
            current = accepted
            if accepted.objective_s < best.objective_s * (1 - PROGRESS):
                best, idle, g = accepted, 0, 0
                q0 = first_batch(current)
                q = min(q0, 2 * q)
                continue
            idle += 1
            if idle < patience:
                continue
        elif q > 1:
            q //= 2
            continue
        # a local optimum of this neighbourhood, or a plateau walked for `patience` steps
        if g + 1 < len(guides):
            g, q, idle = g + 1, q0, 0
            traj.append(Step(it, f"switch:{guides[g]}", current.objective_s, None, True,
                             elapsed()))
            continue
        nxt = None
        while queue and nxt is None and room():
            item = queue.pop(0)
            nxt = item if isinstance(item, Solution) else route_start(*item)
        if nxt is None:
            break
        current = nxt
        if current.objective_s < best.objective_s:
            best = current
        q0 = first_batch(current)
        q, g, idle = q0, 0, 0
        traj.append(Step(it, "restart", current.objective_s, None, True, elapsed()))
    if polish and hop_penalty > 0 and room():
        sol, why = routed(best.topology, 0.0)
        ok = sol is not None and sol.objective_s < best.objective_s
        traj.append(Step(it, "polish", None if sol is None else sol.objective_s, None, ok,
                         elapsed(), why))
        if ok:
            best = sol
    return best, traj


def repair(instance: Instance, topology: Topology, cap: int,
           time_limit: float | None = None) -> Topology | None:
    """A start topology with pairs above the multiplicity ``cap`` brought within it: the
    exact link step (:func:`.link_step.best_links`) with the start's own link counts as the
    loads, so every pair the start links stays linked where the budget allows and the links
    above the cap are re-spent on other pairs (by the MP demand first). A start has at most
    ``d`` neighbours per node, so one link per linked pair fits the budget, but a regular
    instance may have no completion to degree ``d`` under the cap that keeps them all: then
    the link step spends every port afresh (by the MP demand). ``None`` when that fails too."""
    prio = _exact.demand_matrix(instance, [])
    for loads in (topology.links.astype(float), np.zeros_like(prio)):  # then: any within the cap
        try:
            step = best_links(loads, instance.degree, instance.link_bytes_per_s,
                              instance.regular, cap, priority=prio, time_limit=time_limit)
        except ValueError:
            continue
        if step.links.max(initial=0) <= cap:  # by construction; checked because it matters
            return Topology(step.links)
    return None


def moves(W: np.ndarray, L: np.ndarray, batch: int, max_moves: int,
          price: np.ndarray | None = None):
    """Candidate perturbations of the topology step, best first: ``(kind, released pairs)``.

    ``("alternate", ())`` is the plain step. Then the linked pairs, most critical first, are
    taken ``batch`` at a time; for each pair ``(i, j)`` of a batch the least critical other
    link at ``i``, ``(i, a)``, and at ``j``, ``(j, b)``, are released (skipping links of the
    batch's own pairs and links at least as critical as ``(i, j)``). Forgetting their loads
    frees one port at ``i, a, j, b``, so the exact topology step on the modified loads can
    give the critical pair another link (a degree-preserving 2-swap when the freed ports at
    ``a, b`` pair up) or spend the ports where the LP's duals value them most, and the
    routing step re-routes what the released links carried.

    Criticality of a pair: its route LP price ``pi_ij + pi_ji`` (the dual values of its
    capacity rows) when ``price`` is given, then its utilisation ``w_ij / L_ij``."""
    yield "alternate", ()
    w = pair_loads(W)
    util = np.where(L > 0, w / np.maximum(L, 1), -np.inf)
    if price is not None:  # lexicographic: price (to LP accuracy), then utilisation
        p = price + price.T
        p = np.round(p / max(p.max(), 1e-300), 6)
        util = np.where(L > 0, p + util / max(util.max(), 1e-300) * 1e-7, -np.inf)
    iu, ju = np.nonzero(np.triu(L > 0, 1))
    order = np.lexsort((ju, iu, -util[iu, ju]))
    pairs = [(int(iu[k]), int(ju[k])) for k in order]
    for start in range(0, min(len(pairs), max_moves * batch), batch):
        group = pairs[start:start + batch]
        own = {frozenset(p) for p in group}
        released = set()
        for i, j in group:
            for v in (i, j):
                cand = [int(a) for a in np.flatnonzero(L[v] > 0)
                        if frozenset((v, int(a))) not in own and util[v, a] < util[i, j]]
                if cand:
                    a = min(cand, key=lambda x: (util[v, x], x))
                    released.add((min(v, a), max(v, a)))
        if released:
            yield "release", tuple(sorted(released))


def solve(instance: Instance, options: SolveOptions) -> SolveResult:
    """``alloc-alternate``: thin adapter over :func:`alternate`. Reads the time limit (all of
    it: :meth:`SolveOptions.time_left`), the seed, the LP settings (``solver``,
    ``lp_algorithm``, ``threads``) and :class:`AllocAlternateParams`.
    The result has no bound (an upper-bound method); its rings stay in alloc-milp's ring
    space, so alloc-milp's and alloc-benders' bounds cover it."""
    t0, cpu0 = time.perf_counter(), time.process_time()
    p = options.method
    clock = CLOCKS[p.clock]
    c0 = clock()
    names = tuple(m.strip() for m in p.starts.split(",") if m.strip())
    # best guess first: the heuristics' own (cheap) routing ranks them; measured to agree
    # with the LP-routed ranking on the mixed and coopt instances at n = 16 .. 128
    starts = sorted(start_topologies(instance, options.run_method, names, options.seed),
                    key=lambda s: s.objective_s)
    ws = options.warm_start
    if ws is not None and ws.topology is not None and ws.routing is not None \
            and ws.objective is not None and ws.topology.n == instance.n:
        # the warm start (best-start by default: the best cheap heuristic, random expanders
        # included, re-routed) is routed first, so the search starts from the best of them
        starts.insert(0, Start(f"warm:{ws.method}", ws.topology, ws.routing, float(ws.objective)))
    sp = options.solver
    lp_solver = sp.with_(time_limit=None, ipm_tolerance=p.lp_tolerance) \
        if sp.lp_algorithm == "ipm" else sp.with_(time_limit=None)
    lp_opts = options.with_(solver=lp_solver, warm_start=None, deadline=None)
    left = options.time_left()
    best, traj = alternate(
        instance, [(s.method, s.topology) for s in starts], p,
        time_limit=None if left is None else left - (clock() - c0), lp_options=lp_opts)
    info = {"trajectory": [asdict(s) for s in traj], "cpu_s": time.process_time() - cpu0}
    own = {s.method: in_ring_space(instance, s.routing.rings) for s in starts}
    note = ""
    cap = instance.degree if p.max_multiplicity is None else int(p.max_multiplicity)
    within = [s for s in starts if s.topology.links.max(initial=0) <= cap]
    if best is None and within:
        # DESIGN: a time-limited run returns its incumbent. No routing step finished, so the
        # incumbent is the best start within the multiplicity cap with its own routing
        # (checked like every solution); a start above the cap answers another problem.
        s = within[0]
        best, why = _checked(instance, Solution(s.topology, s.routing, tuple(s.routing.rings),
                                                s.objective_s))
        note = f"; no routing step finished: {s.method} with its own routing {why}"
    elif best is None and starts:
        note = (f"; every start breaks the multiplicity cap {cap} and none could be repaired "
                "and routed")
    elif best is not None and ws is not None and starts and starts[0].method.startswith("warm:") \
            and starts[0].topology.links.max() <= cap \
            and starts[0].objective_s < best.objective_s * (1 - 1e-9) \
            and any(t.kind == f"start:{starts[0].method}" and t.accepted for t in traj):
        # the warm start's own routing (best-start: the route LP at HiGHS' default tolerance),
        # only when the start itself keeps the cap (a repaired start is another topology)
        # beats every routing step (at lp_tolerance): never return worse than the start
        s = starts[0]
        kept, why = _checked(instance, Solution(s.topology, s.routing, tuple(s.routing.rings),
                                                s.objective_s))
        if kept is not None:
            best, note = kept, f"; the warm start {s.method} with its own routing is the best"
    runtime = time.perf_counter() - t0
    if best is None:
        return SolveResult("alloc-alternate", Status.NO_SOLUTION, None, None, runtime,
                           seed=options.seed, params=options.as_params(), backend="highs",
                           message="no start topology could be routed" + note, info=info)
    steps = [s for s in traj if s.kind.startswith(MOVE_KINDS)]
    first = min((s.objective_s for s in traj if s.kind.startswith("start:") and s.accepted),
                default=best.objective_s)
    msg = (f"{len(steps)} step(s), {sum(s.accepted for s in steps)} accepted; best start "
           f"{first:.6g} s -> {best.objective_s:.6g} s; starts' own rings in the TotientPerms "
           f"space: {own}{note}")
    return _certify.heuristic("alloc-alternate", instance, options, best.topology,
                              best.routing, runtime, msg, info=info)


SPEC = MethodSpec(
    "alloc-alternate", "alloc", "heuristic", "highs", AllocAlternateParams, solve,
    "ATRO-style alternation of an exact link step and the route LP with free ring shares, from "
    "the best heuristic (an upper bound: no bound of its own)", memory=heuristic_memory,
    warm_start="best-start")
