"""The toolkit's flow-level simulator against SimGrid (core/simgrid_ref.py) on the same
scenarios: rings, MP demands, both, multi-path (ECMP and LP routings) and latency. They must
agree to 1e-6 relative. Skips, saying so, only where SimGrid is not installed (.ci/run
installs Debian's python3-simgrid)."""

from __future__ import annotations

from dataclasses import replace
from functools import cache
from pathlib import Path

import numpy as np
import pytest

from topoopt_milp.core.instance import Instance, make_instance
from topoopt_milp.core.routing import route
from topoopt_milp.core.simgrid_ref import run_simgrid, simgrid_module_path
from topoopt_milp.core.simulate import build_scenario, simulate_scenario
from topoopt_milp.core.topology import Commodity, Ring, Routing, Topology, default_rings

if simgrid_module_path() is None:
    pytest.skip("SimGrid is not installed (apt-get install python3-simgrid, as .ci/run does; "
                "or pip install simgrid): the SimGrid cross-check does not run",
                allow_module_level=True)

REPO = Path(__file__).resolve().parents[1]
GBPS = 8.0
TOL = 1e-6


def _hand(name: str):
    """Hand-made scenarios: (instance, topology, routing)."""
    if name == "ring-on-ring":
        inst = make_instance(5, 2, GBPS, allreduce=[(range(5), 6e8)])
        topo = Topology.circulant(5, [1])
        return inst, topo, route(inst, topo, default_rings(inst), "shortest")
    if name == "two-flows-one-arc":
        inst = make_instance(3, 2, GBPS, mp=[(0, 1, 1e8), (0, 2, 3e8)])
        topo = Topology.circulant(3, [1])
        return inst, topo, Routing((), (Commodity(0, 1, 1e8, "mp", 0, (((0, 1), 1.0),)),
                                        Commodity(0, 2, 3e8, "mp", 1, (((0, 1, 2), 1.0),))))
    if name == "ring-and-two-hop-mp":
        inst = make_instance(3, 2, GBPS, allreduce=[((0, 1, 2), 3e8)], mp=[(0, 2, 7e7)])
        topo = Topology.circulant(3, [1])
        return inst, topo, route(inst, topo, (Ring(0, (0, 1, 2), 1.0),), "shortest")
    if name == "two-hop-ring-edges":
        inst = make_instance(4, 2, GBPS, allreduce=[(range(4), 4e8)])
        topo = Topology.circulant(4, [1])
        return inst, topo, route(inst, topo, (Ring(0, (0, 2, 1, 3), 1.0),), "shortest")
    if name == "two-groups-share-arcs":
        inst = make_instance(6, 2, GBPS, allreduce=[((0, 1, 2), 3e8), ((1, 2, 3, 4), 5e8)],
                             mp=[(5, 2, 2e8)])
        topo = Topology.circulant(6, [1])
        rings = (Ring(0, (0, 1, 2), 1.0), Ring(1, (1, 2, 3, 4), 0.25), Ring(1, (1, 4, 3, 2), 0.75))
        return inst, topo, route(inst, topo, rings, "shortest")
    if name == "ecmp-all-to-all":
        mp = [(s, t, 1e7 * (1 + (s * 7 + t) % 5)) for s in range(8) for t in range(8) if s != t]
        inst = make_instance(8, 3, GBPS, mp=mp)
        topo = Topology.circulant(8, [1, 4])
        return inst, topo, route(inst, topo, (), "ecmp")
    raise KeyError(name)


HAND = ("ring-on-ring", "two-flows-one-arc", "ring-and-two-hop-mp", "two-hop-ring-edges",
        "two-groups-share-arcs", "ecmp-all-to-all")
SOLVED = (  # (instance file, method): own routings, ECMP and LP (multi-path) routings
    ("small/sparse-n6-d2-s0.json", "topologyfinder"),
    ("small/sparse-n8-d4-s0.json", "topologyfinder"),
    ("small/sparse-n8-d4-s0.json", "expander"),
    ("small/sparse-n8-d4-s1.json", "demand-greedy"),
    ("small/dlrm-n8-d4-s0.json", "totientperms"),
    ("small/dlrm-n8-d4-s0.json", "topologyfinder-lp"),
    ("small/sparse-n10-d4-s0.json", "totientperms-lp"),
    ("coopt/resnet50-n16-d4.json", "totientperms"),
    ("coopt/bert-n16-d4.json", "topologyfinder"),
    ("coopt/bert-n16-d4.json", "topologyfinder-lp"),
    ("coopt/dlrm-n16-d4.json", "totientperms"),
    ("coopt/ncf-n16-d4.json", "topologyfinder"),
    ("mixed/mixed-n12-d4-g2-mp35.json", "topologyfinder"),
    ("mixed/mixed-n12-d4-g2-mp35.json", "totientperms-lp"),
    ("mixed/mixed-n16-d4-g4-mp30.json", "demand-greedy-lp"),
)
LATENCY = {"ring-on-ring": (2e-6, 1e-6), "ring-and-two-hop-mp": (5e-6, 0.0),
           "two-hop-ring-edges": (1e-6, 3e-6), "ecmp-all-to-all": (2e-6, 0.0)}
LATENCY_SOLVED = {("coopt/bert-n16-d4.json", "topologyfinder"): (2e-6, 5e-6),
                  ("small/dlrm-n8-d4-s0.json", "topologyfinder-lp"): (1e-6, 1e-6)}


@cache
def _scenario(case, latency=0.0, overhead=0.0):
    if isinstance(case, str):
        inst, topo, routing = _hand(case)
    else:
        from topoopt_milp.pipeline import solve_checked

        inst = Instance.load(REPO / "instances" / case[0])
        res = solve_checked(inst, case[1], time_limit=30)
        topo, routing = res.topology, res.routing
    sc = build_scenario(inst, topo, routing, latency=latency, overhead=overhead)
    # SimGrid sends whole bytes: both engines get the same rounded volumes
    rings = tuple(replace(r, bytes=np.round(r.bytes)) for r in sc.rings)
    return replace(sc, rings=rings, mp_bytes=np.round(sc.mp_bytes))


CASES = ([(c, 0.0, 0.0) for c in HAND] + [(c, 0.0, 0.0) for c in SOLVED]
         + [(c, *lo) for c, lo in LATENCY.items()] + [(c, *lo) for c, lo in LATENCY_SOLVED.items()])


def _id(case) -> str:
    c, lat, over = case
    name = c if isinstance(c, str) else f"{Path(c[0]).stem}-{c[1]}"
    return name + (f"-lat{lat:g}-over{over:g}" if lat or over else "")


def test_at_least_twenty_scenarios():
    assert len(CASES) >= 20
    kinds = {"ring": 0, "mp": 0, "multipath": 0}
    for c, lat, over in CASES:
        sc = _scenario(c, lat, over)
        kinds["ring"] += bool(sc.rings)
        kinds["mp"] += bool(len(sc.mp_cls))
        ends = {}
        for p, arcs in enumerate(sc.paths):
            ends.setdefault((int(sc.arcs[arcs[0], 0]), int(sc.arcs[arcs[-1], 1])), set()).add(p)
        kinds["multipath"] += any(len(v) > 1 for v in ends.values())
    assert min(kinds.values()) >= 4, kinds


@pytest.mark.parametrize("case", CASES, ids=[_id(c) for c in CASES])
def test_agrees_with_simgrid(case):
    c, lat, over = case
    sc = _scenario(c, lat, over)
    ours, det = simulate_scenario(sc)
    ref = run_simgrid(sc)
    rel = abs(ours - ref["time"]) / ref["time"]
    print(f"{_id(case)}: toolkit {ours!r} s, SimGrid {ref['time']!r} s, relative difference "
          f"{rel:.3g}")
    assert rel <= TOL
    for mine, theirs in zip(det["ring_end"], ref["ring_end"], strict=True):
        assert mine == pytest.approx(theirs, rel=TOL)


def test_cli_engine_simgrid_gives_the_toolkit_time(tmp_path):
    import json

    from click.testing import CliRunner

    from topoopt_milp.cli import main
    from topoopt_milp.core.evaluate import evaluate
    from topoopt_milp.core.result import SolveResult, Status, write_solution

    inst, topo, routing = _hand("two-groups-share-arcs")
    ipath, sol = tmp_path / "i.json", tmp_path / "s.json"
    ipath.write_text(json.dumps(inst.to_dict()))
    metrics = evaluate(inst, topo, routing)
    write_solution(sol, SolveResult("hand", Status.FEASIBLE, metrics["comm_time_s"], None, 0.0,
                                    topology=topo, routing=routing), inst, metrics)
    got = {}
    for engine in ("toolkit", "simgrid"):
        r = CliRunner().invoke(main, ["simulate", str(ipath), str(sol), "--format", "json",
                                      "--engine", engine])
        assert r.exit_code == 0, r.output
        got[engine] = json.loads(r.stdout)["simulated_s"]
    assert got["simgrid"] == pytest.approx(got["toolkit"], rel=TOL)
