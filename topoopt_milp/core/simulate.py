"""Flow-level simulation of one training iteration's communication on a solution.

The fluid objective (:mod:`.evaluate`) assumes every byte of the iteration is perfectly
pipelined: ``T_comm = max_a load(a) / cap(a)``. This module plays the same traffic out in time
on the same topology and routing:

* **AllReduce** ring ``r`` of group ``g`` (``k`` members, share ``sigma_r`` of ``S_g`` bytes)
  runs ring reduce-scatter then all-gather: ``2(k-1)`` steps; in every step each member sends
  ``sigma_r S_g / k`` bytes to its ring successor, split over the ring edge's routed paths
  with their fractions. The steps of one ring are **synchronised**: step ``t + 1`` starts
  when every message of step ``t`` has arrived. Rings run independently of each other.
  Over all steps a ring edge carries ``2(k-1)/k sigma_r S_g`` bytes, exactly its fluid load.
* **MP** demand ``(s, t, D)``: one flow of ``f_P D`` bytes on each routed path ``P``, all
  issued at time 0.
* **Sharing**: at every instant the flows in their bandwidth phase get max-min fair rates on
  the arcs (capacity ``L[i, j] B``; parallel links form one arc, as in the fluid model), by
  progressive filling (:mod:`.maxmin`), recomputed at every flow arrival and departure.
* **Latency and overhead**: a flow issued at time ``t0`` on a path of ``h`` hops first waits
  ``overhead + h * latency`` (it uses no bandwidth meanwhile), then sends its bytes; this is
  SimGrid's order (latency phase, then bandwidth phase).

The simulated time is when the last flow ends. Every arc must carry ``load(a)`` bytes at rate
at most ``cap(a)``, so the simulated time is never below the fluid bandwidth term: the ratio
``simulated / fluid >= 1`` measures what synchronisation, contention and latency cost.

The event loop is vectorised: flows live in numpy arrays, flows on one path form a class of
the max-min computation, and each event costs a few sparse products over the paths.
"""

from __future__ import annotations

import csv
import math
import time
from collections import defaultdict
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import numpy as np

from . import flowsim, levelsim
from .errors import InputError
from .evaluate import arc_loads, max_path_hops
from .instance import Instance
from .maxmin import MaxMin
from .topology import Routing, Topology

DONE_TOL = flowsim.DONE_TOL  # relative: a flow this close to its end has ended


class SimulationError(InputError):
    """The solution cannot be simulated (a ring edge without a route, a path off the links)."""


@dataclass(frozen=True)
class RingPlan:
    """One AllReduce ring: ``steps`` synchronised steps, each issuing the same flows (one per
    routed path of every ring edge): path class ``cls`` and ``bytes`` per flow."""

    label: str
    group: int
    members: int
    steps: int
    cls: np.ndarray
    bytes: np.ndarray


@dataclass(frozen=True, eq=False)
class Scenario:
    """Everything the engines need: arcs with capacities, the distinct paths (classes) as arc
    index arrays, the rings and the MP flows, and the latency model."""

    n: int
    arcs: np.ndarray  # (m, 2) node pairs
    cap: np.ndarray  # (m,) bytes/s
    paths: list[np.ndarray]  # arc indices of each class
    rings: tuple[RingPlan, ...]
    mp_cls: np.ndarray
    mp_bytes: np.ndarray
    mp_demand: np.ndarray  # index into instance.mp
    latency: float = 0.0  # seconds per hop
    overhead: float = 0.0  # seconds per message (flow)
    mp_names: tuple[str, ...] = ()

    @cached_property
    def hops(self) -> np.ndarray:
        return np.fromiter((len(p) for p in self.paths), dtype=np.int64, count=len(self.paths))

    def delay(self, cls: np.ndarray) -> np.ndarray:
        """Latency phase of flows of classes ``cls``: ``overhead + hops * latency``."""
        return self.overhead + self.hops[cls] * self.latency

    @property
    def flow_count(self) -> int:
        return len(self.mp_cls) + sum(r.steps * len(r.cls) for r in self.rings)


@dataclass
class SimResult:
    """Outcome of :func:`simulate`. ``critical`` names the ring (or MP demand) that ends last;
    ``busiest_arc`` is the arc busy longest (its busy seconds in ``busiest_busy_s``);
    ``events``, ``solves`` and ``rounds`` are the toolkit engine's counts (None when SimGrid
    played the scenario: it does not report them)."""

    simulated_s: float
    fluid_s: float
    critical: str
    busiest_arc: tuple[int, int] | None
    busiest_busy_s: float
    fluid_arc: tuple[int, int] | None
    ring_end_s: list[float]
    mp_end_s: float
    events: int | None
    solves: int | None
    rounds: int | None
    flows: int
    runtime_s: float
    latency_s: float
    overhead_s: float
    trace: list[tuple] | None = field(default=None, repr=False)
    scenario: Scenario | None = field(default=None, repr=False)

    @property
    def ratio(self) -> float:
        if self.fluid_s > 0:
            return self.simulated_s / self.fluid_s
        return 1.0 if self.simulated_s == 0 else math.inf

    def to_dict(self) -> dict:
        return {
            "simulated_s": self.simulated_s, "fluid_s": self.fluid_s, "ratio": self.ratio,
            "critical": self.critical,
            "busiest_arc": None if self.busiest_arc is None else list(self.busiest_arc),
            "busiest_arc_busy_s": self.busiest_busy_s,
            "fluid_critical_arc": None if self.fluid_arc is None else list(self.fluid_arc),
            "latency_s": self.latency_s, "overhead_s": self.overhead_s,
            "ring_end_s": self.ring_end_s, "mp_end_s": self.mp_end_s,
            "events": self.events, "max_min_solves": self.solves, "filling_rounds": self.rounds,
            "flows": self.flows,
            "runtime_s": self.runtime_s,
        }


# -- building the scenario -----------------------------------------------------------------
def build_scenario(instance: Instance, topology: Topology, routing: Routing,
                   latency: float | None = None, overhead: float = 0.0,
                   parts: str = "all") -> Scenario:
    """The flows of one iteration of ``routing`` on ``topology`` (module docstring).

    ``latency`` defaults to the instance's ``latency_us``. ``parts`` keeps ``all`` traffic,
    only the AllReduce rings (``ar``) or only the MP demands (``mp``). Ring edges take the
    paths of the commodities with their key ``(group, src, dst)``; several such commodities
    (two rings of a group sharing an edge) are pooled with byte weights, which keeps every
    arc's total load equal to the fluid one."""
    if parts not in ("all", "ar", "mp"):
        raise ValueError(f"parts: expected all, ar or mp, got {parts!r}")
    n = instance.n
    if topology.n != n:
        raise SimulationError(f"topology.n: {topology.n} != instance n {n}")
    lat = instance.latency_us * 1e-6 if latency is None else float(latency)
    for name, value in (("latency", lat), ("overhead", overhead)):
        if not (math.isfinite(value) and value >= 0):
            raise SimulationError(f"--{name}: expected a finite number >= 0, got {value}")
    ii, jj = np.nonzero(topology.links)
    arc_id = np.full(n * n, -1, dtype=np.int64)
    arc_id[ii * n + jj] = np.arange(len(ii))
    cap = topology.links[ii, jj] * instance.link_bytes_per_s
    classes: dict[tuple[int, ...], int] = {}
    paths: list[np.ndarray] = []

    def cls_of(nodes: tuple[int, ...], where: str) -> int:
        c = classes.get(nodes)
        if c is None:
            a = np.asarray(nodes, dtype=np.int64)
            if len(a) < 2 or a.min() < 0 or a.max() >= n:
                raise SimulationError(f"{where}: path {list(nodes)} is not a path of nodes 0..{n-1}")
            ids = arc_id[a[:-1] * n + a[1:]]
            if (ids < 0).any():
                k = int(np.argmax(ids < 0))
                raise SimulationError(f"{where}: hop {nodes[k]}->{nodes[k + 1]} is not a link")
            c = classes[nodes] = len(paths)
            paths.append(ids)
        return c

    edge_paths: dict[tuple[int, int, int], dict[tuple[int, ...], float]] = defaultdict(
        lambda: defaultdict(float))
    mp_cls, mp_bytes, mp_dem = [], [], []
    for k, com in enumerate(routing.commodities):
        where = f"routing.commodities[{k}]"
        for nodes, frac in com.paths:
            if frac <= 0 or com.bytes <= 0:
                continue
            if com.kind == "ar":
                edge_paths[(com.tag, com.src, com.dst)][tuple(nodes)] += frac * com.bytes
            elif parts != "ar":
                mp_cls.append(cls_of(tuple(nodes), where))
                mp_bytes.append(frac * com.bytes)
                mp_dem.append(com.tag)
    rings = []
    if parts != "mp":
        for r, ring in enumerate(routing.rings):
            rings.extend(_ring_plan(instance, r, ring, edge_paths, cls_of))
    names = tuple(f"MP demand {instance.mp[d][0]}->{instance.mp[d][1]} (#{d})"
                  if 0 <= d < len(instance.mp) else f"MP demand #{d}" for d in mp_dem)
    return Scenario(n, np.stack([ii, jj], axis=1), cap.astype(float), paths, tuple(rings),
                    np.asarray(mp_cls, dtype=np.int64), np.asarray(mp_bytes, dtype=float),
                    np.asarray(mp_dem, dtype=np.int64), lat, float(overhead), names)


def _ring_plan(instance, r, ring, edge_paths, cls_of) -> list[RingPlan]:
    if not 0 <= ring.group < len(instance.allreduce):
        raise SimulationError(f"routing.rings[{r}]: unknown group {ring.group}")
    k = len(ring.order)
    size = instance.allreduce[ring.group].bytes
    msg = ring.share * size / k  # bytes each member sends per step
    if msg <= 0 or k < 2:
        return []
    cls, vol = [], []
    for e in range(k):
        s, t = ring.order[e], ring.order[(e + 1) % k]
        dist = edge_paths.get((ring.group, s, t))
        if not dist:
            raise SimulationError(f"routing.rings[{r}]: ring edge {s}->{t} of group "
                                  f"{ring.group} has no routed commodity")
        total = sum(dist.values())
        for nodes, b in dist.items():
            cls.append(cls_of(nodes, f"routing.rings[{r}] edge {s}->{t}"))
            vol.append(msg * b / total)
    label = f"ring {r} (group {ring.group}, {k} members)"
    return [RingPlan(label, ring.group, k, 2 * (k - 1), np.asarray(cls, dtype=np.int64),
                     np.asarray(vol, dtype=float))]


# -- the event loop ------------------------------------------------------------------------
KERNELS = ("auto", "compiled", "levels", "classes", "numpy")


def simulate_scenario(sc: Scenario, trace: bool = False, kernel: str = "auto") -> tuple[float, dict]:
    """Run the event loop; returns the simulated time and the engine's details (end time of
    every ring and of the MP flows, busy seconds per arc, event, solve and bottleneck counts,
    and with ``trace`` the rows ``(kind, owner, step, class, bytes, issued, started, ended)``
    in order of their end).

    ``kernel``: ``levels`` (:mod:`.levelsim`, numba: rates kept per bottleneck arc, the
    default, also called ``compiled``), ``classes`` (:mod:`.flowsim`, numba: rates per path
    class, the engine before it, kept as its peer), ``numpy`` (:func:`simulate_scenario_numpy`,
    the reference) or ``auto`` (``levels`` where numba is installed, else ``numpy``). All play
    the same events with the same tolerances."""
    if kernel not in KERNELS:
        raise ValueError(f"kernel: expected one of {', '.join(KERNELS)}, got {kernel!r}")
    if kernel == "numpy" or (kernel == "auto" and not flowsim.HAVE_NUMBA):
        return simulate_scenario_numpy(sc, trace)
    return _simulate_compiled(sc, trace, levels=kernel != "classes")


def _simulate_compiled(sc: Scenario, trace: bool, levels: bool = True) -> tuple[float, dict]:
    m, R, M = len(sc.cap), len(sc.rings), len(sc.mp_cls)
    cptr, carc, cmult, aptr, acls = flowsim.csr_of_paths(sc.paths, m)
    widths = np.array([len(p.cls) for p in sc.rings], dtype=np.int64)
    steps = np.array([p.steps for p in sc.rings], dtype=np.int64)
    ring_off = M + np.concatenate([[0], np.cumsum(widths)]).astype(np.int64)
    flow_base = M + np.concatenate([[0], np.cumsum(widths * steps)[:-1]]).astype(np.int64) \
        if R else np.zeros(0, dtype=np.int64)
    slot_cls = np.concatenate([sc.mp_cls, *(p.cls for p in sc.rings)]).astype(np.int64)
    slot_bytes = np.concatenate([sc.mp_bytes, *(p.bytes for p in sc.rings)]).astype(float)
    slot_owner = np.concatenate([np.full(M, -1, dtype=np.int64),
                                 np.repeat(np.arange(R, dtype=np.int64), widths)])
    total = sc.flow_count if trace else 1
    issued, ready, ended = np.zeros(total), np.zeros(total), np.zeros(total)
    delay = sc.delay(np.arange(len(sc.paths), dtype=np.int64)).astype(float)
    run = levelsim._run_levels if levels else flowsim._run
    t, ring_end, mp_end, events, solves, rounds, partial, fallbacks, retries = run(
        cptr, carc, cmult, aptr, acls, sc.cap, delay, slot_cls, slot_bytes, slot_owner,
        ring_off, steps, flow_base, trace, issued, ready, ended)
    # every flow ends with all its bytes sent: an arc is busy for its total bytes / capacity
    cls_bytes = np.bincount(sc.mp_cls, weights=sc.mp_bytes, minlength=len(sc.paths)).astype(float)
    for p in sc.rings:
        cls_bytes += np.bincount(p.cls, weights=p.bytes * p.steps, minlength=len(sc.paths))
    arc_bytes = np.zeros(m)
    np.add.at(arc_bytes, carc, np.repeat(cls_bytes, np.diff(cptr)) * cmult)
    rows = None
    if trace:
        rows = [("mp", int(sc.mp_demand[f]), 0, int(sc.mp_cls[f]), float(sc.mp_bytes[f]),
                 float(issued[f]), float(ready[f]), float(ended[f])) for f in range(M)]
        for r, p in enumerate(sc.rings):
            for st in range(p.steps):
                base = flow_base[r] + st * len(p.cls)
                rows.extend(("ar", r, st, int(p.cls[q]), float(p.bytes[q]), float(issued[base + q]),
                             float(ready[base + q]), float(ended[base + q]))
                            for q in range(len(p.cls)))
        order = sorted(range(len(rows)), key=lambda i: rows[i][7])
        rows = [rows[i] for i in order]
    details = {"ring_end": ring_end, "mp_end": float(mp_end), "busy": arc_bytes / sc.cap,
               "events": int(events), "rounds": int(rounds), "solves": int(solves),
               "partial_solves": int(partial), "fallbacks": int(fallbacks),
               "retries": int(retries), "trace": rows}
    return float(t), details


def simulate_scenario_numpy(sc: Scenario, trace: bool = False) -> tuple[float, dict]:
    """The reference event loop in numpy (one max-min solve per changed event by
    :class:`.maxmin.MaxMin`); returns the simulated time and the engine's details (end time of
    every ring and of the MP flows, busy seconds per arc, event and round counts, and with
    ``trace`` the rows ``(flow, kind, owner, step, class, bytes, issued, started, ended)``)."""
    mm = MaxMin(sc.paths, sc.cap)
    R = len(sc.rings)
    # live flows: class, remaining bytes, time the bandwidth phase starts, owner (ring index
    # or -1 for MP), and (for the trace) id
    cls = [sc.mp_cls]
    rem = [sc.mp_bytes.copy()]
    ready = [sc.delay(sc.mp_cls)]
    owner = [np.full(len(sc.mp_cls), -1, dtype=np.int64)]
    left = np.zeros(R, dtype=np.int64)
    step = np.zeros(R, dtype=np.int64)
    ring_end = np.zeros(R)
    rows: list[tuple] = []
    ids = [np.arange(len(sc.mp_cls))]
    next_id = len(sc.mp_cls)
    meta: dict[int, tuple] = {}
    if trace:
        for f in range(len(sc.mp_cls)):
            meta[f] = ("mp", int(sc.mp_demand[f]), 0, int(sc.mp_cls[f]), float(sc.mp_bytes[f]), 0.0,
                       float(ready[0][f]))

    def issue(r: int, t: float) -> None:
        nonlocal next_id
        plan = sc.rings[r]
        cls.append(plan.cls)
        rem.append(plan.bytes.copy())
        rd = t + sc.delay(plan.cls)
        ready.append(rd)
        owner.append(np.full(len(plan.cls), r, dtype=np.int64))
        new = np.arange(next_id, next_id + len(plan.cls))
        ids.append(new)
        if trace:
            for q, f in enumerate(new):
                meta[int(f)] = ("ar", r, int(step[r]), int(plan.cls[q]), float(plan.bytes[q]), t,
                                float(rd[q]))
        next_id += len(plan.cls)
        left[r] = len(plan.cls)

    for r in range(R):
        issue(r, 0.0)
    c, b, rd, ow, fid = (np.concatenate(x) for x in (cls, rem, ready, owner, ids))
    busy = np.zeros(len(sc.cap))
    t = 0.0
    mp_end = 0.0
    events = rounds = solves = 0
    prev = crate = None
    while len(c):
        events += 1
        act = rd <= t
        dt, t_next, rate = math.inf, math.inf, None
        if act.any():
            counts = np.bincount(c[act], minlength=len(sc.paths)).astype(float)
            # the next step of a ring reuses the classes of the step that just ended: with
            # no latency the counts are often unchanged, and so are the rates
            if prev is None or not np.array_equal(counts, prev):
                crate, k = mm.rates(counts)
                rounds += k
                solves += 1
                prev = counts
            rate = crate[c[act]]
            tfin = b[act] / rate
            dt = float(tfin.min())
        if (~act).any():
            t_next = float(rd[~act].min())
        if t_next - t < dt:
            dt = t_next - t
        if rate is not None:
            busy += (mm.PT @ (counts * crate)) * dt / sc.cap
            b[act] -= rate * dt
            gone = np.zeros(len(c), dtype=bool)
            gone[act] = tfin <= dt * (1 + DONE_TOL)
        else:
            gone = np.zeros(len(c), dtype=bool)
        t = t_next if t_next - t <= dt else t + dt
        if gone.any():
            if trace:
                rows.extend((*meta.pop(int(f)), t) for f in fid[gone])
            mp_gone = gone & (ow < 0)
            if mp_gone.any():
                mp_end = t
            per_ring = np.bincount(ow[gone & (ow >= 0)], minlength=R)
            left -= per_ring
            finished = np.flatnonzero((per_ring > 0) & (left == 0))
            keep = ~gone
            cls, rem, ready, owner, ids = [c[keep]], [b[keep]], [rd[keep]], [ow[keep]], [fid[keep]]
            for r in finished:
                step[r] += 1
                if step[r] < sc.rings[r].steps:
                    issue(int(r), t)
                else:
                    ring_end[r] = t
            c, b, rd, ow, fid = (np.concatenate(x) for x in (cls, rem, ready, owner, ids))
    details = {"ring_end": ring_end, "mp_end": mp_end, "busy": busy, "events": events,
               "rounds": rounds, "solves": solves, "trace": rows if trace else None}
    return t, details


ENGINES = ("toolkit", "simgrid")


def simulate(instance: Instance, topology: Topology, routing: Routing,
             latency: float | None = None, overhead: float = 0.0, trace: bool = False,
             parts: str = "all", engine: str = "toolkit") -> SimResult:
    """Simulate one iteration of ``routing`` on ``topology`` and compare with the fluid
    ``T_comm = max_a load(a)/cap(a) + max_hops * latency`` of the same traffic (``parts``:
    see :func:`build_scenario`). ``engine="simgrid"`` plays the same scenario in SimGrid
    (:mod:`.simgrid_ref`; no trace, no busy times, byte counts rounded to integers)."""
    if engine not in ENGINES:
        raise SimulationError(f"--engine: unknown {engine!r} (known: {', '.join(ENGINES)})")
    t0 = time.perf_counter()
    sc = build_scenario(instance, topology, routing, latency, overhead, parts)
    if engine == "simgrid":
        if trace:
            raise SimulationError("--trace: only with the toolkit engine")
        from .simgrid_ref import run_simgrid

        ref = run_simgrid(sc, timeout=24 * 3600)
        sim = ref["time"]
        det = {"ring_end": np.asarray(ref["ring_end"]), "mp_end": ref["mp_end"],
               "busy": np.zeros(len(sc.cap)), "events": None, "solves": None,
               "rounds": None, "trace": None}
    else:
        sim, det = simulate_scenario(sc, trace)
    sub = routing if parts == "all" else Routing(routing.rings if parts == "ar" else (), tuple(
        c for c in routing.commodities if (c.kind == "ar") == (parts == "ar")))
    loads = arc_loads(instance.n, sub)
    capm = topology.links * instance.link_bytes_per_s
    util = np.divide(loads, capm, out=np.zeros_like(loads), where=capm > 0)
    fluid = float(util.max()) if util.size else 0.0
    if sc.latency > 0:
        fluid += max_path_hops(sub) * sc.latency
    fluid_arc = None if fluid == 0 else tuple(int(x) for x in np.unravel_index(util.argmax(), util.shape))
    ring_end = [float(x) for x in det["ring_end"]]
    if ring_end and max(ring_end) >= det["mp_end"]:
        critical = sc.rings[int(np.argmax(ring_end))].label
    elif len(sc.mp_cls):
        critical = "MP traffic"
    else:
        critical = "-"
    busy = det["busy"]
    arc = None if not len(busy) or busy.max() <= 0 else tuple(int(x) for x in sc.arcs[busy.argmax()])
    return SimResult(
        simulated_s=float(sim), fluid_s=fluid, critical=critical, busiest_arc=arc,
        busiest_busy_s=float(busy.max()) if len(busy) else 0.0, fluid_arc=fluid_arc,
        ring_end_s=ring_end, mp_end_s=float(det["mp_end"]), events=det["events"], solves=det["solves"],
        rounds=det["rounds"], flows=sc.flow_count, runtime_s=time.perf_counter() - t0,
        latency_s=sc.latency, overhead_s=sc.overhead, trace=det["trace"], scenario=sc)


TRACE_HEADER = ("flow", "kind", "owner", "step", "src", "dst", "hops", "bytes", "issued_s",
                "started_s", "ended_s")


def write_trace(path: str | Path, result: SimResult) -> int:
    """Write ``result.trace`` (from :func:`simulate` with ``trace=True``) as CSV, one row per
    flow: ``kind`` ar/mp, ``owner`` the ring index or MP demand index, ``step`` the ring step,
    the path's ends and hops, bytes, and the times the flow was issued, started sending
    (after its latency phase) and ended; returns the number of rows."""
    rows = result.trace or []
    sc = result.scenario
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(TRACE_HEADER)
        for k, (kind, own, stp, cl, nbytes, issued, started, ended) in enumerate(rows):
            arcs = sc.arcs[sc.paths[cl]]
            w.writerow((k, kind, own, stp, int(arcs[0, 0]), int(arcs[-1, 1]), len(arcs),
                        repr(nbytes), repr(issued), repr(started), repr(ended)))
    return len(rows)
