"""Which side of a d = 4 gap is loose? The best topology among those with a shift symmetry,
proven by the orbit MILP (issue 16, item 5: an account of each open instance; a script).

alloc-orbit's model (``topoopt_milp/methods/alloc_orbit/model.py``) is alloc-milp restricted to
link matrices invariant under ``v -> v + s (mod n)``, with the invariant TotientPerms ring
orders (free split) and at most ``--max-multiplicity`` parallel links. Solved to optimality it
gives the best value of *every* topology with that symmetry, so when it equals the record
solution the upper side cannot improve inside that space, and a better solution must break
the symmetry (or the bound is what is loose). Larger periods hold more topologies (a period
``2 s`` contains every topology of period ``s``) and the model grows with ``s``.

For each instance and each period (the instance's own, :func:`.symmetry.period`, times each
``--factors`` entry, as long as it divides ``n`` and is a symmetry) the MILP runs with
``--time-limit`` seconds, from no start, single-threaded; the table gives its status, the best
invariant solution it found, its dual bound (valid only for the invariant topologies), the
ideal switch (valid for all) and the record solution over ``results/headline.csv`` and
``results/certify*.csv`` (``bench_alloc_orbit.record``). Usage::

    python benchmarks/bench_orbit_exact.py [--instances a.json,b.json] [--factors 1,2]
        [--time-limit 300] [--max-multiplicity 1] [--out results/orbit-exact.md]
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import pandas as pd
from bench_alloc_orbit import record  # the record solution and bound of the stored tables

from topoopt_milp.core.backends.pulp_backend import solve_matrix
from topoopt_milp.core.evaluate import ideal_switch_time
from topoopt_milp.core.instance import Instance
from topoopt_milp.core.params import SolveOptions
from topoopt_milp.methods.alloc_orbit import model as M
from topoopt_milp.methods.alloc_orbit.symmetry import is_symmetry, period, ring_orders

REPO = Path(__file__).resolve().parents[1]
DEFAULT = ("bert-n32-d4", "gpt3-1.3b-n32-d4", "gpt3-13b-n32-d4")


def prove(inst: Instance, s: int, time_limit: float, mult: int) -> dict:
    """The orbit MILP of period ``s``: status, best invariant time, its invariant-only bound."""
    om = M.build(inst, s, ring_orders(inst, s), mult)
    base = SolveOptions()
    opts = base.with_(solver=base.solver.with_(time_limit=time_limit))
    t0 = time.perf_counter()
    out = solve_matrix(om.model, opts, None)
    best = om.time_s(out.x) if out.x is not None else float("nan")
    bound = om.bound_time_s(out.bound)
    return {"status": out.status.value, "wall_s": time.perf_counter() - t0,
            "orbits": om.orbits.size, "best_s": best,
            "bound_s": float("nan") if bound is None else bound}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--instances", default=None, help="comma-separated instance files")
    ap.add_argument("--factors", default="1,2", help="periods: the instance's own times these")
    ap.add_argument("--time-limit", type=float, default=300.0, help="seconds per MILP")
    ap.add_argument("--max-multiplicity", type=int, default=1)
    ap.add_argument("--out", default=str(REPO / "results" / "orbit-exact.md"))
    args = ap.parse_args()
    paths = (args.instances.split(",") if args.instances else
             [str(REPO / "instances" / "coopt" / f"{name}.json") for name in DEFAULT])
    rows = []
    started = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
    for path in paths:
        inst = Instance.load(path)
        own = period(inst)
        ideal = ideal_switch_time(inst)
        best_known = record(REPO / "results", inst).get("best_s", float("nan"))
        for f in (int(x) for x in args.factors.split(",")):
            s = own * f
            if s >= inst.n or inst.n % s or not is_symmetry(inst, s):
                continue
            load = os.getloadavg()[0]
            row = {"instance": inst.name, "period": s, **prove(inst, s, args.time_limit,
                                                                 args.max_multiplicity),
                   "ideal_s": ideal, "record_s": best_known, "load_1min": round(load, 2)}
            row["best_vs_record_pct"] = 100 * (row["best_s"] / best_known - 1)
            row["bound_vs_ideal_pct"] = 100 * (row["bound_s"] / ideal - 1)
            print(row, flush=True)
            rows.append(row)
    df = pd.DataFrame(rows)
    text = (f"# The best shift-symmetric topology, proven (orbit MILP)\n\n"
            f"`python benchmarks/bench_orbit_exact.py --factors {args.factors} --time-limit "
            f"{args.time_limit:g} --max-multiplicity {args.max_multiplicity}` started {started}; "
            "machine: 2 cores, 24 GiB, shared (1-minute load before each MILP in `load_1min`).\n\n"
            "`best_s`: the best topology invariant under `v -> v + period` the MILP found; "
            "`bound_s`: its dual bound, valid for those topologies only (`status` optimal: "
            "equal to `best_s`); `record_s`: the best solution any stored table holds; "
            "`ideal_s`: the ideal switch, a bound for every topology.\n\n"
            + df.to_markdown(index=False, floatfmt=".6g") + "\n")
    Path(args.out).write_text(text)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
