"""How long does `topoopt-milp simulate` take at n = 128 on coopt traffic (issue 19), and is
SimGrid fast enough to be the engine instead (a script).

For each instance (default: every ``instances/coopt/*-n128-*.json``) it solves ``--method``
(default TopologyFinder with its own routing, the headline's TF column; ``topologyfinder-lp``
gives LP routings with many more paths), re-checks the solution, and simulates one
iteration with the toolkit's engine; with ``--simgrid`` the same scenario also runs in
SimGrid (core/simgrid_ref.py) and the two times are compared. Printed per instance: flows,
path classes, events, max-min solves and rounds, the engine's wall and CPU seconds, the
simulated / fluid ratio, SimGrid's wall seconds and the relative difference, and the
1-minute load average (the machine: 2 cores, 24 GiB, shared with 7 other agents, so wall
times are noisy; CPU seconds are the engine's own). Usage::

    python benchmarks/bench_simulate.py [--instances a.json,b.json] [--method M] [--simgrid]
        [--kernels levels,classes]

With ``--kernels`` the scenario is also played by each named engine of
:func:`~topoopt_milp.core.simulate.simulate_scenario` in turn (one row each, same process,
after a warm-up on a small instance so that no numba compilation is timed), and the
simulated times are compared with the first kernel's.

Earlier (numpy loop, load 0.5-0.7): dlrm-n128-d8 24.5 CPU s, ncf-n128-d4 21.1 CPU s,
ncf-n128-d8 > 500 s (timeout). With the compiled loop and incremental bookkeeping
(2026-12-04, this script, load 2-4): every coopt n = 128 instance in <= 0.6 CPU s except
ncf-n128-d8, 35.2 CPU s (85,013 events, 84,461 max-min solves, 40.9 M saturations).
With tight refills (core/flowsim.py): ncf-n128-d8 44.0 CPU s at load 8.3 in this script
(27.3 M saturations, first run after an edit, so numba compiles); one-off runs of the same
scenario at load ~1-2, compiled code cached: 31.2 CPU s against 35.9 s before.

Bottleneck lists and grown tight sets (core/maxmin_kernel.py), 2026-12-04, this script on
ncf-n128-d8 only, main's code and this code alternating in one shell loop (second run of
each, numba cache warm): 34.9 CPU s (67 s wall, load 3.3) before, 23.0 CPU s (58 s wall,
load 4.1) after, 1.5x; the same simulated time to 1.5e-15 relative (85,013 events instead
of 85,012). The target (seconds) is still not met on this instance: all 1024 arcs are saturated at 1023
distinct levels, the 85,013 flow ends are distinct (only 10 pairs lie within 1e-9 relative
of each other), and a flow end changes the rates of 1,252 of the 9,491 classes on average
(105.8 M rate changes in all; the tight set holds 1,215 classes, so it is as small as the
change). Every exact event-by-event simulation must make those changes; at the 220 ns
per change measured here (23.0 s / 105.8 M, solver, heap and bookkeeping together), that
is the 20-odd seconds, and seconds need about 10x less work per change.

The level engine (core/levelsim.py: rates kept per bottleneck arc, so an event re-solves the
levels that change, not the rates of every class whose rate changes), 2026-12-05, this
script with ``--instances instances/coopt/ncf-n128-d8.json --kernels levels,classes,levels``
(one process, cache warm, load 2.8-3.2): levels 8.87 and 8.81 CPU s (13.7 and 14.2 s wall),
classes 29.34 CPU s (47.6 s wall), 3.3x; 85,005 events instead of 85,013, 0 fallbacks to a
solve from scratch, 222,967 pivots; the simulated times agree to 2.3e-15.

LP routing (``--method topologyfinder-lp``), 2026-12-05. Profile of bert-n128-d8 TF+LP with
the level engine of 55c9b6a (128.3 CPU s, load 1.8; counters added to a copy of the kernel):
693,254 flows on 5,629 path classes, and every flow slot has a class of its own (a ring
edge is split over up to 17 paths of up to 27 hops), so no two flows share a path and a
start: merging interchangeable flows into weighted ones has nothing to merge (likewise on
dlrm-n128-d4 TF+LP: 9,250 MP flows on 9,250 distinct (class, bytes) pairs). The flows end at
693,211 distinct times, so there are as many events and max-min solves. A flow end changes
the levels of 290 of the 1,024 arcs on average (201 M level changes; the relative changes
are mostly 1e-3 to 1e-5, so real ones, not rounding), which costs 6,088 updates of ``R`` on
the arcs those groups' classes cross, 1,787 entries of scans for faster classes, 594 heap
pops and 13 pivots per event; the 2,056 fallbacks to a solve from scratch cost 1.5 ms each
(about 3 s). dlrm-n128-d4 TF+LP (paths up to 59 hops): 485,413 events, 210 level changes,
25.7 k ``R`` updates and 14.4 k scan entries per event, 280 CPU s with the counters. So the
cost is the max-min cascade itself, not Python, not a quadratic pass: every exact
event-by-event engine must change those 200-290 levels per event, and "seconds" would need
about 30x less work per level change than this engine does.

What was tried on it (same process, the engine of 955ea86 against the new one, alternating,
load 2.7-2.9): arcs whose ``R`` changed but that have no group, level 0 and room left are no
longer pushed on the solve's heap (half of all pops on bert-n64-d8 TF+LP), and each arc
keeps its classes with flows first, so the scans for faster classes skip the idle ones:
bert-n64-d8 TF+LP 8.53 -> 8.14 CPU s, dlrm-n64-d4 TF+LP 3.67 -> 3.42 CPU s (5-10%).
At n = 128 (``--instances instances/coopt/dlrm-n128-d4.json,instances/coopt/bert-n128-d8.json
--method topologyfinder-lp --kernels classes``, load 5.2-6.3): dlrm-n128-d4, the slowest,
486,798 flows, 485,413 events: level engine 261.8 CPU s (535 s wall), class engine 255.9
CPU s (755 s wall) in the same run (level / class 1.02), times 2.4e-13 apart: on these long multi-path
routings the level engine is no faster than the class engine it replaced, and the target
(seconds) is not met. bert-n128-d8 in the same run (load 4.2-5.3): 693,254 flows, 693,211
events, level engine 130.5 CPU s (299 s wall), class engine 220.0 CPU s (512 s wall), 1.69x,
times 5.3e-14 apart; 128.3 CPU s before this session's two changes (load 1.8), so at n = 128
they are lost in the noise.

Vertex LP routings (route-milp runs crossover since 2026-12-05), this script with
``--method topologyfinder-lp,totientperms-lp`` on all 16 coopt n = 128 instances (load
2.1-4.9): 14 instances in <= 4.4 CPU s per simulation (dlrm-n128-d4 0.3 s: 77,900 flows,
30,382 events, against 486,798 flows and 261.8 s on the interior-point routing; bert-n128-d8
4.2-4.4 s), ncf-n128-d4 11.4-11.9 s, ncf-n128-d8 TF+LP 10.6 s and TP+LP 52.4 s, the slowest.
On that one scenario the class engine is 12x faster (``--instances
instances/coopt/ncf-n128-d8.json --method totientperms-lp,topologyfinder-lp,topologyfinder
--kernels levels,classes``, load 1.1-2.7): levels 54.8, classes 4.5 CPU s (times 6.3e-16
apart; 454 fallbacks to a solve from scratch, 18,292 pivots), while on TF+LP and TF of the
same instance the level engine is 3.2x and 3.7x faster (9.6 vs 31.0, 7.7 vs 28.4 CPU s).
Tried there and not kept: the lowest target kept per class, so that an event scans a group's
classes instead of its flows (bit-identical times, 54.8 CPU s: not where the time goes).

Where those 52 s went (2026-12-05 evening, one scenario pickled, load 1.0): the 454 level
solves that fell back to a solve from scratch had first pivoted up to the cap of 512, about
0.1 s each. Pivot caps of 512 / 128 / 64 / 32 / 16 / 8 gave 51.0 / 15.3 / 7.9 / 5.4 / 4.2 /
4.1 CPU s on it, but 9.5 / 9.4 / 9.3 / 11.0 / 15.1 / 25.2 s on TF+LP of the same instance
(more fallbacks), and giving up when a class moves twice gave 5.1 / 16.6 s. Kept: a work
budget (``levels_kernel.WORK``): a level solve gives up once it has visited more than twice
the path entries a solve from scratch visits. Counted first on every path (budget 1 / 2 / 4:
4.1-4.3 / 4.7 / 5.9 s on TP+LP, 10.8-10.9 / 9.1 / 9.4 on TF+LP, 5.8-6.0 / 5.8 / 6.8 on
ncf-n128-d4 TP+LP, 2.2-2.3 / 2.6 / 3.4 on bert-n128-d8 TF+LP, against 11.1 and 4.3 before),
then, as kept, on the paths of the classes with flows plus one per arc (budget 1 / 2 / 4:
4.0 / 4.4 / 5.6, 11.1 / 9.1 / 9.9, 6.1 / 5.6 / 6.4, 2.2 / 2.5 / 3.2 s, and on
mixed-n128-d4-g4-mp05 TF+LP 24.2 / 27.1 / 32.8 s against 34.5-36.0 with the first count).

With it, this script with ``--method topologyfinder-lp,totientperms-lp`` on all 16 instances
(19:06-19:19, load 1.2-2.0, a mixed-instance run beside it): every simulation <= 10.0 CPU s,
the slowest ncf-n128-d8 TF+LP (10.0 s), then ncf-n128-d4 (6.2-6.4 s), ncf-n128-d8 TP+LP (4.4
s, was 52.4), bert-n128-d8 (2.5-2.7 s), the other 12 <= 1.2 s. ``--instances
instances/coopt/ncf-n128-d8.json --method totientperms-lp,topologyfinder-lp,topologyfinder
--kernels levels,classes`` (19:17-19:19, load 1.0-1.2): levels / classes 4.11 / 4.07 (TP+LP,
0.99x), 9.88 / 31.93 (TF+LP, 3.23x), 8.12 / 28.11 CPU s (TF, 3.46x), simulated times at most
1.1e-14 apart.

The mixed n = 128, d = 4 instances (not a target; 16.5k path classes from 16k MP pairs),
``--instances instances/mixed/mixed-n128-d4-*.json --method
topologyfinder-lp,totientperms-lp --kernels levels,classes`` (19:06-19:19, load 1.6-2.0,
beside the run above): level engine 3.2-31.0 CPU s per simulation (mp05 28.3-31.0, mp15
15.1-15.7, mp30 13.1-16.0, mp50 3.2 and 14.4), class engine 0.76-0.81x of that on mp05 and
1.01-2.47x on the others; with the budget on every path (18:36-18:50) mp05 took 34.5-36.0 s
and mp15 17.8-18.0 s, and the reproduce run of 2026-12-05 (no budget, load about 2) 324 s
wall for mp05 TF+LP. On mp50 TF+LP the engines differ by 1.4e-8 relative (the only row above
1e-13); the numpy reference (246.7 CPU s) gives 0.5629259059231059 s: the level engine is
5.9e-11 from it (6.1e-9 with the budget on every path, 7.5e-9 without a budget), the class
engine 1.4e-8: ends within ``DONE_TOL`` (1e-9 of an interval) are grouped differently.
"""


from __future__ import annotations

import argparse
import glob
import os
import time
from pathlib import Path

from topoopt_milp.core.instance import Instance
from topoopt_milp.core.simulate import KERNELS, simulate, simulate_scenario
from topoopt_milp.pipeline import solve_checked

REPO = Path(__file__).resolve().parents[1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--instances", default=None, help="comma-separated instance files")
    ap.add_argument("--method", default="topologyfinder", help="one method, or several "
                    "comma-separated (e.g. topologyfinder,topologyfinder-lp): one row each")
    ap.add_argument("--simgrid", action="store_true", help="also run SimGrid on each scenario")
    ap.add_argument("--kernels", default="", help="comma-separated engines to time each "
                    f"scenario with ({', '.join(KERNELS)})")
    args = ap.parse_args()
    kernels = [k for k in args.kernels.split(",") if k]
    if kernels:
        _warm_up(kernels)
    paths = args.instances.split(",") if args.instances else sorted(
        glob.glob(str(REPO / "instances" / "coopt" / "*-n128-*.json")))
    print(f"# {args.method}; machine: 2 cores, 24 GiB, shared; load = 1-minute load average")
    print("instance,method,flows,classes,events,solves,rounds,sim_wall_s,sim_cpu_s,fluid_s,"
          "simulated_s,ratio,simgrid_wall_s,simgrid_rel_diff,load")
    for path, method in ((p, m) for p in paths for m in args.method.split(",")):
        inst = Instance.load(path)
        res = solve_checked(inst, method, time_limit=300)
        if res.violations or res.routing is None:
            print(f"{inst.name}: no checked solution ({res.status.value})")
            continue
        w0, c0 = time.perf_counter(), time.process_time()
        out = simulate(inst, res.topology, res.routing)
        wall, cpu = time.perf_counter() - w0, time.process_time() - c0
        sg_wall = sg_diff = ""
        if args.simgrid:
            from topoopt_milp.core.simgrid_ref import run_simgrid

            ref = run_simgrid(out.scenario, timeout=7200)
            sg_wall = f"{ref['wall_s']:.1f}"
            sg_diff = f"{abs(out.simulated_s - ref['time']) / ref['time']:.2g}"
        print(f"{inst.name},{method},{out.flows},{len(out.scenario.paths)},{out.events},{out.solves},"
              f"{out.rounds},{wall:.1f},{cpu:.1f},{out.fluid_s:.6g},{out.simulated_s:.6g},"
              f"{out.ratio:.4f},{sg_wall},{sg_diff},{os.getloadavg()[0]:.1f}", flush=True)
        first = None
        for kernel in kernels:
            cpu_k = _time_kernel(out.scenario, kernel, out.simulated_s, first)
            first = cpu_k if first is None else first


def _warm_up(kernels: list[str]) -> None:
    """Compile (or load from numba's cache) every engine of ``kernels`` on a small scenario."""
    inst = Instance.load(REPO / "instances" / "small" / "dlrm-n8-d4-s0.json")
    res = solve_checked(inst, "topologyfinder")
    out = simulate(inst, res.topology, res.routing)
    for kernel in kernels:
        simulate_scenario(out.scenario, kernel=kernel)


def _time_kernel(scenario, kernel: str, reference_s: float, first_cpu: float | None) -> float:
    """One row: ``kernel``'s wall and CPU seconds on ``scenario`` (and their ratio to the first
    kernel's CPU seconds ``first_cpu``) and its counts, and its simulated time's relative
    difference from ``reference_s``; returns the CPU seconds."""
    w0, c0 = time.perf_counter(), time.process_time()
    t, det = simulate_scenario(scenario, kernel=kernel)
    wall, cpu = time.perf_counter() - w0, time.process_time() - c0
    counts = " ".join(f"{key}={det[key]}" for key in (
        "events", "solves", "rounds", "partial_solves", "fallbacks", "retries") if key in det)
    ratio = "" if first_cpu is None else f" ({cpu / first_cpu:.2f}x the first kernel's)"
    print(f"  kernel {kernel}: wall {wall:.2f} s, CPU {cpu:.2f} s{ratio}, simulated {t!r} s "
          f"(rel diff {abs(t - reference_s) / reference_s:.2g}), {counts}, "
          f"load {os.getloadavg()[0]:.1f}", flush=True)
    return cpu


if __name__ == "__main__":
    main()
