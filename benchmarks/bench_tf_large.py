"""TopologyFinder at the documented maximum n = 10^4, and the Blossom / greedy size switch.

Issue 20: the default split never finished at n = 10^4 (networkx's Blossom rounds; killed at
300 and 400 s). Above ``BLOSSOM_MAX_N`` nodes the MP rounds are greedy matchings (see
:mod:`topoopt_milp.methods.heuristics.topology_finder`, step 3). This script measures, in one
run (so the machine's load is shared by the peers):

1. at the switch point (n = 256, 8 MP pairs per node, d = 8): the method with Blossom rounds
   and with greedy rounds: runtime and communication time (the ratio is the price of the
   switch);
2. n = 1000: greedy rounds only (Blossom took 107 s for one round there at load 13);
3. n = 10^4, 8 MP pairs per node, d = 8, the default options: runtime.

Usage: ``python benchmarks/bench_tf_large.py [--skip-large]``. Records ``os.getloadavg`` and
the machine ("2 cores, 24 GiB, shared").
"""

from __future__ import annotations

import argparse
import os
import time

from topoopt_milp import registry
from topoopt_milp.workloads import generators


def run(inst, **knobs):
    t0 = time.perf_counter()
    res = registry.solve(inst, "topologyfinder", **knobs)
    return time.perf_counter() - t0, res


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--skip-large", action="store_true", help="skip n = 10^4")
    args = parser.parse_args()
    print(f"machine: 2 cores, 24 GiB, shared; load average before: {os.getloadavg()}")
    inst = generators.mixed(256, 8, mp_pattern="sparse", pairs=8 * 256, seed=1)
    tb, rb = run(inst, matching="blossom")
    tg, rg = run(inst, matching="greedy")
    print(f"n=256 blossom: {tb:.2f} s, T = {rb.objective:.6g} s ({rb.message})")
    print(f"n=256 greedy : {tg:.2f} s, T = {rg.objective:.6g} s ({rg.message})")
    print(f"n=256 greedy / blossom: time {tg / tb:.3f}, T {rg.objective / rb.objective:.4f}")
    inst = generators.mixed(1000, 8, mp_pattern="sparse", pairs=8000, seed=1)
    t, res = run(inst)
    print(f"n=1000 default: {t:.2f} s, T = {res.objective:.6g} s ({res.message})")
    if not args.skip_large:
        inst = generators.mixed(10_000, 8, mp_pattern="sparse", pairs=80_000, seed=1)
        t, res = run(inst)
        print(f"n=10000 default: {t:.1f} s, T = {res.objective:.6g} s ({res.message})")
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
