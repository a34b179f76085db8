"""TopologyFinder vs TotientPerms on coset-group AllReduce plus dense MP (issue 11, item 7).

Instances (built here, not by a generator): ``n`` servers, ``d = 4``, 100 Gbps; ``n/g``
AllReduce groups on the cosets ``{s, s + n/g, ...}`` of size ``g = 4``, each all-reducing
1 GB; dense MP (every ordered pair, uniform random weights, seed 0) scaled so that MP is
``frac`` of all injected bytes (``Instance.mp_bytes() / Instance.total_bytes()``).

Every row runs TotientPerms and TopologyFinder (``split=proportional``) with the method's
own routing and with ``routing=lp`` (route-milp on the heuristic's topology and rings) and
prints ``T_comm`` in seconds, the TF/TP ratios and TopologyFinder's degree split.

Usage: ``python benchmarks/bench_mixed_tf.py [--n 16 64] [--frac 0.05 0.15 0.25 0.3 0.35 0.45]
[--faithful]``.
"""

from __future__ import annotations

import argparse
import os

import numpy as np

from topoopt_milp import registry
from topoopt_milp.core.evaluate import ideal_switch_time
from topoopt_milp.core.instance import Instance, make_instance
from topoopt_milp.core.result import SolveOptions


def mixed_instance(n: int, frac: float, d: int = 4, g: int = 4, seed: int = 0,
                   ar_bytes: float = 1e9) -> Instance:
    """Coset AllReduce groups of size ``g`` plus dense random MP at ``frac`` of all bytes."""
    step = n // g
    groups = [(range(s, n, step), ar_bytes) for s in range(step)]
    ar_total = step * 2 * (g - 1) * ar_bytes  # sum_g k * 2 (k-1)/k * S
    w = np.random.default_rng(seed).uniform(0, 1, (n, n))
    np.fill_diagonal(w, 0)
    w *= ar_total * frac / (1 - frac) / w.sum()
    mp = [(i, j, float(w[i, j])) for i in range(n) for j in range(n) if i != j]
    return make_instance(n, d, 100.0, allreduce=groups, mp=mp,
                         name=f"mixed-n{n}-g{g}-f{frac:g}-s{seed}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, nargs="+", default=[16, 64])
    ap.add_argument("--frac", type=float, nargs="+", default=[0.05, 0.15, 0.25, 0.3, 0.35, 0.45])
    ap.add_argument("--faithful", action="store_true")
    ap.add_argument("--time-limit", type=float, default=300.0)
    args = ap.parse_args()
    print(f"load average: {os.getloadavg()[0]:.2f}; faithful={args.faithful}")
    print("| n | MP frac | ideal | TP | TP+lp | TF | TF+lp | TF/TP | TF/TP (lp) | TF split |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for n in args.n:
        for frac in args.frac:
            inst = mixed_instance(n, frac)
            t = {}
            for m in ("totientperms", "topologyfinder"):
                for r in (None, "lp"):
                    opts = SolveOptions(routing=r, time_limit=args.time_limit,
                                        faithful=args.faithful)
                    res = registry.solve(inst, m, opts)
                    t[m, r] = res.objective
                    if m == "topologyfinder":
                        split = " ".join(res.message.split()[1:3])
            tp, tpl = t["totientperms", None], t["totientperms", "lp"]
            tf, tfl = t["topologyfinder", None], t["topologyfinder", "lp"]
            print(f"| {n} | {frac:g} | {ideal_switch_time(inst):.4g} | {tp:.4g} | {tpl:.4g} | "
                  f"{tf:.4g} | {tfl:.4g} | {tf / tp:.2f} | {tfl / tpl:.2f} | {split} |",
                  flush=True)


if __name__ == "__main__":
    main()
