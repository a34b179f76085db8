"""One upper-side run for issue 16, item 3 (the d = 4 coopt gaps): a method on an instance
with a time limit and ``--threads 1``, its solution re-checked by the independent checker,
the trajectory, the evaluation counts (alloc-search: LPs, their seconds, cached topologies)
and the 1-minute load before and after, written as JSON (and the solution beside it,
``OUT.sol.json``). Usage::

    PYTHONPATH=. python benchmarks/bench_upper16.py INSTANCE METHOD TIME_LIMIT OUT.json [KNOBS]

e.g. ``instances/coopt/ncf-n32-d4.json alloc-search 600 out.json '{"rings": "tours"}'``
(``KNOBS``: a JSON object of method knobs). The figures of results/bench_upper16/ came from
this script.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

from topoopt_milp import registry
from topoopt_milp.core.check import check_solution
from topoopt_milp.core.evaluate import evaluate
from topoopt_milp.core.instance import Instance
from topoopt_milp.core.result import finite_json, solution_dict


def main(path: str, method: str, limit: float, out: str, knobs: dict) -> None:
    inst = Instance.from_dict(json.loads(Path(path).read_text()))
    load0, t0 = os.getloadavg()[0], time.perf_counter()
    res = registry.solve(inst, method, time_limit=limit, threads=1, **knobs)
    wall = time.perf_counter() - t0
    sol = finite_json(solution_dict(res, inst, evaluate(inst, res.topology, res.routing)))
    Path(out.replace(".json", ".sol.json")).write_text(json.dumps(sol))
    problems = check_solution(inst.to_dict(), sol)
    info = res.info or {}
    row = {"instance": inst.name, "method": method, "knobs": knobs, "objective": res.objective,
           "wall_s": wall, "load": [load0, os.getloadavg()[0]], "check": problems[:3],
           "message": res.message, "evaluations": info.get("evaluations"),
           "ring_space": info.get("ring_space"), "trajectory": info.get("trajectory"),
           "starts": info.get("starts")}
    Path(out).write_text(json.dumps(finite_json(row), indent=1, default=str))
    print(inst.name, method, res.objective, f"{wall:.1f}s", "check",
          "ok" if not problems else problems[:2], res.message)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4],
         json.loads(sys.argv[5]) if len(sys.argv) > 5 else {})
