"""The outer loop: Metropolis search over parallelization strategies, with the topology rebuilt
by any registered method (TopoOpt's alternating co-optimization, DESIGN.md section 5).

State and energy
    The state is a :class:`~topoopt_milp.workloads.strategy.Strategy`; its energy is the
    iteration time ``E = T_compute + T_comm`` (or ``max(T_compute, T_comm)`` under full
    overlap). ``T_compute`` comes from the compute model; ``T_comm`` is measured on the
    *current* topology with a fixed shortest-path routing (:class:`FastComm`: one sparse
    matrix-vector product per proposal), so thousands of proposals cost seconds.

Moves (one per step, drawn from an explicit ``numpy`` generator seeded by ``seed``)
    * ``degree``: a dense layer gets another divisor of ``n`` as degree (a neighbouring
      divisor with probability 0.7, any other with 0.3), keeping its offset modulo the new
      stride half of the time, otherwise a random offset;
    * ``place``: a layer (dense or embedding table) moves to another coset of its degree;
    * ``propagate``: a layer copies its degree and placement to a DAG neighbour (not onto an
      embedding table, which stays a single-server table);
    * ``segment``: a contiguous run of a chain of dense layers (a CANDLE tower, an MLP, a
      stretch of Transformer blocks; the whole chain half of the time) gets one new degree
      and placement. Single-layer moves rarely pay off alone under a max-congestion cost
      (the busiest arc keeps its load until *all* its traffic moves), so whole towers or
      pipeline stages have to move at once;
    * ``pipeline``: a chain is cut into ``q`` stages of consecutive layers (``q`` a divisor of
      ``n``, at most the chain length), stage ``j`` placed on the coset ``(o + j) mod q`` of
      degree ``n / q`` (data x pipeline parallelism for that chain, ``o`` random). Such a
      proposal needs rings the current topology lacks, so with ``true_pipeline`` (default)
      it is judged by a rebuild (its true iteration time) rather than the fast estimate.

Acceptance (Metropolis with a relative temperature ``T``)
    accept if ``E' <= E`` or with probability ``exp(-(E' - E) / (T * E))``.

Topology schedule (``schedule``)
    * ``accepted``: rebuild the topology for the new strategy after every accepted move;
    * ``every``: rebuild for the current strategy every ``k`` steps;
    * ``alternate``: coarse alternation, ``k`` rounds of ``budget / k`` steps on a fixed
      topology, each round restarting from the round's best strategy, which the next
      topology is built for.

    A rebuild calls :func:`topoopt_milp.pipeline.solve_checked` (``method`` with its
    ``method_knobs``) and yields the strategy's *true* iteration time (the method's own
    topology and routing, re-checked independently). The search returns the
    strategy with the best true iteration time among all rebuilt ones, the start included,
    so it never returns a strategy worse than its start; the same seed gives the same
    trajectory (the generator is the only randomness, solver seeds are fixed).
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import shortest_path

from .. import registry
from ..core.evaluate import comm_time, iteration_time
from ..core.instance import Instance
from ..core.params import Params, knob
from ..core.result import SolveResult
from ..core.topology import Topology
from ..pipeline import solve_checked
from .strategy import Strategy, divisors
from .traffic import Traffic, Workload
from .zoo import Model

log = logging.getLogger(__name__)
SCHEDULES = ("accepted", "every", "alternate")
MOVES = ("degree", "place", "propagate", "segment", "pipeline")
MOVE_PROBS = (0.25, 0.25, 0.15, 0.25, 0.1)


class FastComm:
    """``T_comm`` of any point-to-point demand matrix on a fixed topology, one shortest path
    per ordered pair (scipy's BFS predecessors, deterministic).

    The path-arc incidence ``P`` (pairs x arcs, sparse) is built once; then
    ``load = P^T vec(D)`` and ``T_comm = max_a load_a / (L_a B)``."""

    def __init__(self, topology: Topology, link_bytes_per_s: float) -> None:
        n = topology.n
        adj = csr_matrix((topology.links > 0).astype(np.int8))
        dist, pred = shortest_path(adj, directed=False, unweighted=True, return_predecessors=True)
        self.connected = bool(np.isfinite(dist).all())
        src, dst = np.divmod(np.arange(n * n), n)
        active = (src != dst) & np.isfinite(dist[src, dst])
        cur = dst.copy()
        rows, cols = [], []
        while active.any():  # walk every pair's path back from its destination, all at once
            idx = np.flatnonzero(active)
            u = pred[src[idx], cur[idx]]
            rows.append(idx)
            cols.append(u * n + cur[idx])
            cur[idx] = u
            active[idx] = u != src[idx]
        rows = np.concatenate(rows) if rows else np.zeros(0, dtype=np.int64)
        cols = np.concatenate(cols) if cols else np.zeros(0, dtype=np.int64)
        self._pt = csr_matrix((np.ones(len(rows)), (cols, rows)), shape=(n * n, n * n))
        self._reachable = np.isfinite(dist).ravel()
        cap = topology.links.ravel().astype(float) * link_bytes_per_s
        self._inv_cap = np.divide(1.0, cap, out=np.zeros_like(cap), where=cap > 0)

    def __call__(self, demand: np.ndarray) -> float:
        flat = demand.ravel()
        if (flat[~self._reachable] > 0).any():
            return math.inf
        return float((self._pt @ flat * self._inv_cap).max())


@dataclass(frozen=True)
class CoOptConfig(Params):
    """Search parameters (see the module docstring); the command line's options come from
    these fields."""

    method: str = knob("topologyfinder", "Registered method that builds the topology (see "
                                         "`topoopt-milp methods`).", flag="--topology-method")
    budget: int = knob(1000, "MCMC steps.", minimum=0)
    seed: int = knob(0, "Seed of the search (and of the topology method).")
    temperature: float = knob(0.05, "Relative Metropolis temperature: a move x percent worse is "
                                    "accepted with probability exp(-x / (100 T)).", minimum=0)
    schedule: str = knob("every", "Rebuild the topology after accepted moves, every K steps, or "
                                  "alternate K coarse rounds.", choices=SCHEDULES)
    k: int = knob(100, "Steps between rebuilds (every) or number of rounds (alternate).",
                  minimum=1)
    overlap: bool = knob(False, "Iteration time max(compute, comm) instead of compute + comm.")
    true_pipeline: bool = knob(True, "Judge pipeline moves by a topology rebuild (their true "
                                     "time) rather than the fast estimate.")
    method_knobs: dict = field(default_factory=dict, metadata={
        "help": "Knobs of the topology method (e.g. time_limit).", "cli": False})

    def __post_init__(self) -> None:
        super().__post_init__()
        registry.get(self.method).options(self.method_knobs)  # unknown method / knob: named


@dataclass
class Evaluated:
    """A strategy evaluated truly: its instance, the method's result and its times."""

    strategy: Strategy
    instance: Instance
    result: SolveResult
    comm_s: float
    iteration_s: float


@dataclass
class CoOptResult:
    initial: Evaluated
    final: Evaluated
    trajectory: list[dict]
    steps: int
    rebuilds: int
    runtime_s: float
    config: CoOptConfig
    model: Model | None = None


class _Search:
    def __init__(self, work: Workload, degree: int, gbps: float, cfg: CoOptConfig) -> None:
        self.work, self.degree, self.gbps, self.cfg = work, degree, gbps, cfg
        self.model = work.model
        self.n = work.n
        self.divs = divisors(self.n)
        self.nbrs = self.model.neighbours()
        self.dense = [i for i, L in enumerate(self.model.layers) if L.kind != "embedding"]
        self.chains = _chains(self.model)
        self.rng = np.random.default_rng(cfg.seed)
        self.link_bytes = gbps * 1.25e8
        self.rebuilds = 0
        self.fast: FastComm | None = None
        self._jumps: dict[int, tuple[int, ...]] = {}

    # -- evaluation ---------------------------------------------------------------------
    def ring_jumps(self, k: int) -> tuple[int, ...]:
        """Ring jumps a group of ``k`` members is estimated to use: TotientPerms' selection for
        ``d`` ports on ``Z_k`` (what TopologyFinder would build for it), each jump ``j`` in both
        directions (``j`` and ``k - j``: a duplex link carries a ring each way)."""
        if k not in self._jumps:
            base: tuple[int, ...] = (1,)
            if k > 2:
                try:
                    from ..methods.heuristics.totient import totient_jumps

                    base = tuple(j for j in totient_jumps(k, self.degree) if 0 < j < k) or (1,)
                except (ImportError, ValueError):
                    base = (1,)
            both = [x for j in base for x in ((j,) if 2 * j == k else (j, k - j))]
            self._jumps[k] = tuple(both)
        return self._jumps[k]

    def energy(self, t: Traffic) -> tuple[float, float]:
        comm = self.fast(t.pair_matrix(self.ring_jumps))
        total = max(t.compute_s, comm) if self.cfg.overlap else t.compute_s + comm
        return total, comm

    def rebuild(self, s: Strategy) -> Evaluated:
        """Build the topology for ``s`` with the chosen method and evaluate ``s`` on it."""
        inst = self.work.instance(s, self.degree, self.gbps,
                                  meta={"cooptimize_method": self.cfg.method})
        res = solve_checked(inst, self.cfg.method, seed=self.cfg.seed, **self.cfg.method_knobs)
        if not res.status.has_solution or res.topology is None:
            raise RuntimeError(f"{self.cfg.method} found no topology: {res.message}")
        comm = (comm_time(inst, res.topology, res.routing) if res.routing is not None
                else float(res.objective))
        self.fast = FastComm(res.topology, self.link_bytes)
        self.rebuilds += 1
        return Evaluated(s, inst, res, comm, iteration_time(inst, comm, self.cfg.overlap))

    # -- moves --------------------------------------------------------------------------
    def propose(self, s: Strategy) -> tuple[Strategy, str, int]:
        """A random move that changes ``s`` (no-op draws, e.g. propagating an equal placement,
        are redrawn up to 20 times)."""
        for _ in range(20):
            cand, move, layer = self._propose_once(s)
            if cand != s:
                break
        return cand, move, layer

    def _propose_once(self, s: Strategy) -> tuple[Strategy, str, int]:
        rng = self.rng
        move = MOVES[int(rng.choice(len(MOVES), p=MOVE_PROBS))]
        if move == "degree" and self.dense and len(self.divs) > 1:
            i = self.dense[int(rng.integers(len(self.dense)))]
            k = self.divs.index(s.degrees[i])
            if rng.random() < 0.7:
                nb = [x for x in (k - 1, k + 1) if 0 <= x < len(self.divs)]
                p = self.divs[nb[int(rng.integers(len(nb)))]]
            else:
                others = [d for d in self.divs if d != s.degrees[i]]
                p = others[int(rng.integers(len(others)))]
            stride = self.n // p
            o = s.offsets[i] % stride if rng.random() < 0.5 else int(rng.integers(stride))
            return s.replace_layer(i, p, o), move, i
        if move == "segment" and self.chains:
            chain = self.chains[int(rng.integers(len(self.chains)))]
            if rng.random() < 0.5:
                a, b = 0, len(chain) - 1
            else:
                a, b = sorted(int(x) for x in rng.integers(len(chain), size=2))
            p = self.divs[int(rng.integers(len(self.divs)))]
            o = int(rng.integers(self.n // p))
            out = s
            for i in chain[a:b + 1]:
                out = out.replace_layer(i, p, o)
            return out, move, chain[a]
        if move == "pipeline" and self.chains:
            chain = self.chains[int(rng.integers(len(self.chains)))]
            qs = [q for q in self.divs if 2 <= q <= len(chain)]
            if qs:
                q = qs[int(rng.integers(len(qs)))]
                o = int(rng.integers(q))
                out = s
                for pos, i in enumerate(chain):
                    out = out.replace_layer(i, self.n // q, (o + pos * q // len(chain)) % q)
                return out, move, chain[0]
        if move == "propagate":
            i = int(rng.integers(len(self.nbrs)))
            targets = [j for j in self.nbrs[i] if self.model.layers[j].kind != "embedding"]
            if targets and self.model.layers[i].kind != "embedding":
                j = targets[int(rng.integers(len(targets)))]
                return s.replace_layer(j, s.degrees[i], s.offsets[i]), move, j
        # place (also the fallback of moves that do not apply)
        i = int(rng.integers(len(s.degrees)))
        stride = self.n // s.degrees[i]
        if stride == 1:
            return s, "place", i
        o = (s.offsets[i] + 1 + int(rng.integers(stride - 1))) % stride
        return s.replace_layer(i, s.degrees[i], o), "place", i

    def accept(self, e_new: float, e_cur: float) -> bool:
        u = self.rng.random()  # always drawn: the random stream does not depend on energies
        if e_new <= e_cur:
            return True
        if self.cfg.temperature == 0 or not math.isfinite(e_new):
            return False
        return u < math.exp(-(e_new - e_cur) / (self.cfg.temperature * e_cur))


def cooptimize(
    work: Workload,
    degree: int,
    gbps: float,
    start: Strategy,
    config: CoOptConfig | None = None,
    progress: Callable[[int, dict], None] | None = None,
) -> CoOptResult:
    """Search strategies for ``work`` on ``degree``-port, ``gbps`` clusters from ``start``.

    ``progress(step, row)`` is called after every step (the CLI draws a progress bar)."""
    cfg = config or CoOptConfig()
    t0 = time.perf_counter()
    S = _Search(work, degree, gbps, cfg)
    initial = S.rebuild(start)
    best_true = initial
    cur = start
    cur_e, cur_comm = S.energy(work.traffic(cur))
    est_best, est_best_e = cur, cur_e
    # key -> (iteration_s, comm_s, topology) of every truly evaluated strategy; only the best
    # keeps its instance and routing (a routing at n = 128 holds ~16k commodities)
    seen_true = {_key(start): _brief(initial)}
    rows: list[dict] = []
    round_len = max(1, cfg.budget // cfg.k) if cfg.schedule == "alternate" else None
    for step in range(1, cfg.budget + 1):
        cand, move, layer = S.propose(cur)
        t = work.traffic(cand)
        true_s = None
        if move == "pipeline" and cfg.true_pipeline:
            # a re-staged chain needs rings the current topology lacks: judge it on its own
            prev_fast = S.fast
            e_new, comm_new, best_true = _true_eval(S, cand, seen_true, best_true)
            true_s = e_new
            ok = S.accept(e_new, cur_e)
            if not ok:
                S.fast = prev_fast
        else:
            e_new, comm_new = S.energy(t)
            ok = S.accept(e_new, cur_e)
        if ok:
            cur, cur_e, cur_comm = cand, e_new, comm_new
            if cur_e < est_best_e:
                est_best, est_best_e = cur, cur_e
        rebuild_for = None
        every = cfg.schedule == "every" and step % cfg.k == 0
        if every or (cfg.schedule == "accepted" and ok):
            rebuild_for = cur
        elif cfg.schedule == "alternate" and step % round_len == 0:
            cur = est_best  # each round restarts from its best strategy
            rebuild_for = cur
        if rebuild_for is not None:
            true_s, _, best_true = _true_eval(S, rebuild_for, seen_true, best_true)
            # energies are relative to the topology: rescore on the new one
            cur_e, cur_comm = S.energy(work.traffic(cur))
            est_best, est_best_e = cur, cur_e
        row = {
            "step": step, "move": move, "layer": S.model.layers[layer].name, "accepted": ok,
            "proposed_s": e_new, "current_s": cur_e, "current_comm_s": cur_comm,
            "proposed_compute_s": t.compute_s, "rebuilt": rebuild_for is not None,
            "true_iteration_s": true_s, "best_true_s": best_true.iteration_s,
            "elapsed_s": time.perf_counter() - t0,
        }
        rows.append(row)
        if step % max(1, cfg.budget // 20) == 0:
            log.info("step %d/%d: current %.5g s, best true %.5g s, %d rebuilds, %.1f s", step,
                     cfg.budget, cur_e, best_true.iteration_s, S.rebuilds, row["elapsed_s"])
        if progress is not None:
            progress(step, row)
    # the strategy the search ends on (or its estimated best) gets a true evaluation too
    for s in (est_best, cur):
        _, _, best_true = _true_eval(S, s, seen_true, best_true)
    log.info("cooptimize: %d steps, %d rebuilds, %.4g s -> %.4g s", cfg.budget, S.rebuilds,
             initial.iteration_s, best_true.iteration_s)
    return CoOptResult(initial, best_true, rows, cfg.budget, S.rebuilds,
                       time.perf_counter() - t0, cfg, work.model)


def _brief(ev: Evaluated) -> tuple[float, float, Topology]:
    return ev.iteration_s, ev.comm_s, ev.result.topology


def _true_eval(S: _Search, s: Strategy, seen: dict, best: Evaluated):
    """True ``(iteration_s, comm_s)`` of ``s`` (rebuilding unless cached; either way the fast
    estimator moves to ``s``'s topology) and the updated best evaluation."""
    hit = seen.get(_key(s))
    if hit is None:
        ev = S.rebuild(s)
        seen[_key(s)] = _brief(ev)
        if ev.iteration_s < best.iteration_s:
            best = ev
        return ev.iteration_s, ev.comm_s, best
    S.fast = FastComm(hit[2], S.link_bytes)
    return hit[0], hit[1], best


def _chains(model) -> list[list[int]]:
    """Maximal runs ``i, i+1, ...`` of dense layers in which each layer's only input is the
    previous one (the zoo builds towers, MLPs and block stacks this way); runs of length 1
    are left to the single-layer moves."""
    runs: list[list[int]] = []
    for i, L in enumerate(model.layers):
        if L.kind == "embedding":
            continue
        if runs and L.inputs == (runs[-1][-1],) and runs[-1][-1] == i - 1:
            runs[-1].append(i)
        else:
            runs.append([i])
    return [r for r in runs if len(r) > 1]


def _key(s: Strategy) -> tuple:
    return (s.degrees, s.offsets, s.tensor)


# -- reporting ------------------------------------------------------------------------------
def summary(res: CoOptResult, cost=None, fat_tree_gbps: float | None = None) -> dict:
    """The ``summary.json`` object: start and end iteration times and the baselines' iteration
    times for the final strategy (and the initial one, under ``initial_baselines_s``)."""
    from .fabrics import baselines

    cfg = res.config
    out = {
        "model": res.final.instance.meta.get("model"),
        "n": res.final.instance.n,
        "degree": res.final.instance.degree,
        "link_gbps": res.final.instance.link_gbps,
        "method": cfg.method,
        "schedule": cfg.schedule,
        "k": cfg.k,
        "temperature": cfg.temperature,
        "overlap": cfg.overlap,
        "seed": cfg.seed,
        "steps": res.steps,
        "rebuilds": res.rebuilds,
        "accepted": sum(1 for r in res.trajectory if r["accepted"]),
        "runtime_s": res.runtime_s,
        "initial_iteration_time_s": res.initial.iteration_s,
        "final_iteration_time_s": res.final.iteration_s,
        "initial_compute_s": res.initial.instance.compute_s,
        "final_compute_s": res.final.instance.compute_s,
        "initial_comm_s": res.initial.comm_s,
        "final_comm_s": res.final.comm_s,
        "speedup": res.initial.iteration_s / res.final.iteration_s if res.final.iteration_s else None,
    }
    for key, ev in (("baselines_s", res.final), ("initial_baselines_s", res.initial)):
        b = baselines(ev.instance, cost, fat_tree_gbps, cfg.seed)
        gbps_eq = b.pop("fat_tree_cost_equivalent_gbps")
        out[key] = {name: iteration_time(ev.instance, t, cfg.overlap) for name, t in b.items()}
        out["fat_tree_cost_equivalent_gbps"] = gbps_eq
    return out


def final_instance(res: CoOptResult, name: str | None = None,
                   provenance: dict | None = None) -> Instance:
    """The final strategy's traffic as a library instance.

    ``meta["cooptimize"]`` records how the search ran (model, cluster, method, budget, seed,
    temperature, schedule, ``k``, the start and final strategy summaries, the final
    per-layer degrees and offsets, the start and final iteration times, steps, rebuilds and
    accepted moves); ``provenance`` (e.g. the generating command) is merged into it. Nothing
    timing-dependent goes in, so the same search writes the same bytes."""
    inst, cfg, fin = res.final.instance, res.config, res.final.strategy
    model = res.model
    record = {
        "model": inst.meta.get("model"),
        "n": inst.n,
        "degree": inst.degree,
        "link_gbps": inst.link_gbps,
        "method": cfg.method,
        "budget": cfg.budget,
        "seed": cfg.seed,
        "temperature": cfg.temperature,
        "schedule": cfg.schedule,
        "k": cfg.k,
        "overlap": cfg.overlap,
        "true_pipeline": cfg.true_pipeline,
        "start_strategy": res.initial.strategy.summary(model) if model else None,
        "final_strategy": fin.summary(model) if model else None,
        "final_layers": {"degrees": list(fin.degrees), "offsets": list(fin.offsets),
                         "tensor": fin.tensor},
        "initial_iteration_s": res.initial.iteration_s,
        "final_iteration_s": res.final.iteration_s,
        "steps": res.steps,
        "rebuilds": res.rebuilds,
        "accepted": sum(1 for r in res.trajectory if r["accepted"]),
        **(provenance or {}),
    }
    data = {**inst.to_dict(), "name": name or inst.name,
            "meta": {**inst.meta, "cooptimize": record}}
    return Instance.from_dict(data)


def write_outputs(res: CoOptResult, out_dir, summary_obj: dict, name: str | None = None,
                  provenance: dict | None = None) -> None:
    """``summary.json``, ``trajectory.csv``, ``strategy.json``, ``instance.json`` (see
    :func:`final_instance`) and ``solution.json`` (the final strategy's topology and routing,
    with metrics) in ``out_dir``."""
    import json

    import pandas as pd

    from ..core.evaluate import evaluate
    from ..core.outfile import check_folder, write_text
    from ..core.result import write_solution

    out = check_folder(out_dir)
    write_text(out / "summary.json", json.dumps(summary_obj, indent=1) + "\n")
    write_text(out / "trajectory.csv", pd.DataFrame(res.trajectory).to_csv(index=False))
    res.final.strategy.save(out / "strategy.json", res.model)
    inst = final_instance(res, name, provenance)
    inst.save(out / "instance.json")
    r = res.final.result
    metrics = evaluate(inst, r.topology, r.routing) if r.routing is not None else None
    write_solution(out / "solution.json", r, inst, metrics)
