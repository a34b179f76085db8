"""The flow-level simulation (core/simulate.py, core/maxmin.py, `topoopt-milp simulate`):
hand-computable cases, max-min fairness against a one-level-per-round reference, and the
command line (JSON keys, trace, bad input)."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest

from topoopt_milp.cli import main
from topoopt_milp.core.instance import make_instance
from topoopt_milp.core.maxmin import MaxMin
from topoopt_milp.core.result import SolveResult, Status, write_solution
from topoopt_milp.core.routing import route
from topoopt_milp.core.simulate import SimulationError, simulate
from topoopt_milp.core.topology import Commodity, Ring, Routing, Topology, default_rings

GBPS = 8.0  # 1e9 bytes/s: times are bytes / 1e9
B = GBPS * 1.25e8


def _ring_case(k: int = 5, size: float = 6e8, latency_us: float = 0.0):
    inst = make_instance(k, 2, GBPS, allreduce=[(range(k), size)], latency_us=latency_us)
    topo = Topology.circulant(k, [1])
    rings = default_rings(inst)  # ascending and reverse order, half the volume each
    return inst, topo, route(inst, topo, rings, "shortest")


def test_single_ring_on_a_ring_equals_fluid():
    k, size = 5, 6e8
    inst, topo, routing = _ring_case(k, size)
    out = simulate(inst, topo, routing)
    # each arc carries one direction's ring: 2(k-1) steps of (S/2)/k bytes at B
    expect = 2 * (k - 1) * (size / 2 / k) / B
    assert out.simulated_s == pytest.approx(expect, rel=1e-12)
    assert out.fluid_s == pytest.approx(expect, rel=1e-12)
    assert out.ratio == pytest.approx(1.0, rel=1e-12)
    assert out.critical.startswith("ring ")


def test_two_flows_sharing_an_arc_split_it():
    # triangle; 0->1 direct (a bytes) and 0->2 forced over 0->1->2 (b bytes): both get B/2 on
    # arc 0->1 until the small one ends at 2a/B, then the big one runs alone at B
    a, b = 1e8, 3e8
    inst = make_instance(3, 2, GBPS, mp=[(0, 1, a), (0, 2, b)])
    topo = Topology.circulant(3, [1])
    routing = Routing((), (Commodity(0, 1, a, "mp", 0, (((0, 1), 1.0),)),
                           Commodity(0, 2, b, "mp", 1, (((0, 1, 2), 1.0),))))
    out = simulate(inst, topo, routing, trace=True)
    ends = sorted(row[-1] for row in out.trace)
    assert ends == pytest.approx([2 * a / B, (a + b) / B], rel=1e-12)
    assert out.simulated_s == pytest.approx(out.fluid_s, rel=1e-12)  # arc 0->1 never idles
    assert out.busiest_arc == (0, 1)


def test_latency_adds_hops_times_latency_per_step():
    k, size, lat = 4, 4e8, 3e-6
    inst, topo, routing = _ring_case(k, size)
    base = simulate(inst, topo, routing).simulated_s
    out = simulate(inst, topo, routing, latency=lat)
    # one-hop ring edges: every one of the 2(k-1) steps waits one hop's latency first
    assert out.simulated_s == pytest.approx(base + 2 * (k - 1) * lat, rel=1e-12)
    # the fluid model pays the latency once (max hops x latency)
    assert out.fluid_s == pytest.approx(base + lat, rel=1e-12)
    over = simulate(inst, topo, routing, latency=lat, overhead=1e-6)
    assert over.simulated_s == pytest.approx(base + 2 * (k - 1) * (lat + 1e-6), rel=1e-12)
    # the instance's latency is the default
    inst2, _, _ = _ring_case(k, size, latency_us=lat * 1e6)
    assert simulate(inst2, topo, routing).simulated_s == pytest.approx(out.simulated_s, rel=1e-12)


def test_two_hop_ring_edges_pay_two_latencies():
    # ring order 0,2,1,3 on the 4-cycle: edges 0->2 and 1->3 take two hops, so every step
    # waits two hops' latency (the slowest message of the step)
    inst = make_instance(4, 2, GBPS, allreduce=[(range(4), 4e8)])
    topo = Topology.circulant(4, [1])
    rings = (Ring(0, (0, 2, 1, 3), 1.0),)
    routing = route(inst, topo, rings, "shortest")
    base = simulate(inst, topo, routing).simulated_s
    lat = 1e-5
    assert simulate(inst, topo, routing, latency=lat).simulated_s == pytest.approx(
        base + 6 * 2 * lat, rel=1e-9)


def test_a_two_hop_mp_flow_shares_both_ring_arcs():
    # one ring (0,1,2) and an MP flow 0->2 over the two hops 0->1->2, which shares arc 0->1
    # with ring edge 0->1 and arc 1->2 with ring edge 1->2. Per step every ring edge sends
    # m = S/3; the MP flow of D = m/2 gets a max-min share on both arcs.
    S = 3e8
    m = S / 3
    D = m
    inst = make_instance(3, 2, GBPS, allreduce=[((0, 1, 2), S)], mp=[(0, 2, D)])
    topo = Topology.circulant(3, [1])
    rings = (Ring(0, (0, 1, 2), 1.0),)
    comms = [Commodity(0, 2, D, "mp", 0, (((0, 1, 2), 1.0),))]
    comms += [Commodity(s, t, 4 * m, "ar", 0, (((s, t), 1.0),)) for s, t in ((0, 1), (1, 2), (2, 0))]
    out = simulate(inst, topo, Routing(rings, tuple(comms)))
    # step 1: both shared arcs run ring edge and MP at B/2 -> the step takes 2m/B and the MP
    # flow ends with it (it sent m); steps 2-4 take m/B each: 5m/B in all
    assert out.simulated_s == pytest.approx(5 * m / B, rel=1e-12)
    assert out.fluid_s == pytest.approx(5 * m / B, rel=1e-12)  # arcs 0->1, 1->2: 4m + m


def _reference_max_min(paths, weights, cap):
    """Plain progressive filling, one saturated arc per round, in Python."""
    rate = {c: None for c in range(len(paths)) if weights[c] > 0}
    rem = list(cap)
    level = 0.0
    while any(r is None for r in rate.values()):
        load = [0.0] * len(cap)
        for c, r in rate.items():
            if r is None:
                for a in paths[c]:
                    load[a] += weights[c]
        delta = min(rem[a] / load[a] for a in range(len(cap)) if load[a] > 0)
        level += delta
        for a in range(len(cap)):
            rem[a] -= delta * load[a]
        full = {a for a in range(len(cap)) if load[a] > 0 and rem[a] <= 1e-9 * cap[a]}
        for c, r in rate.items():
            if r is None and full & set(paths[c]):
                rate[c] = level
    return rate


@pytest.mark.parametrize("seed", range(12))
def test_max_min_matches_plain_progressive_filling(seed):
    rng = np.random.default_rng(seed)
    m = int(rng.integers(3, 9))
    cap = rng.uniform(1.0, 5.0, m)
    paths = [rng.choice(m, size=int(rng.integers(1, min(4, m) + 1)), replace=False)
             for _ in range(int(rng.integers(2, 15)))]
    weights = rng.integers(0, 4, len(paths)).astype(float)
    got, _ = MaxMin(paths, cap).rates(weights)
    want = _reference_max_min(paths, weights, cap)
    for c, r in want.items():
        assert got[c] == pytest.approx(r, rel=1e-9)
    assert all(got[c] == 0 for c in range(len(paths)) if weights[c] == 0)
    used = np.zeros(m)
    for c, p in enumerate(paths):
        used[p] += weights[c] * got[c]
    assert (used <= cap * (1 + 1e-9)).all()


@pytest.mark.parametrize("name", ["sparse-n8-d4-s0", "dlrm-n8-d4-s0"])
def test_simulated_time_is_never_below_the_fluid_time(name, data_dir):
    from pathlib import Path

    from topoopt_milp.core.instance import Instance
    from topoopt_milp.pipeline import solve_checked

    path = Path(__file__).resolve().parents[1] / "instances" / "small" / f"{name}.json"
    inst = Instance.load(path)
    for method in ("topologyfinder", "expander"):
        res = solve_checked(inst, method)
        out = simulate(inst, res.topology, res.routing)
        assert out.simulated_s >= out.fluid_s * (1 - 1e-9)
        assert out.fluid_s == pytest.approx(res.objective, rel=1e-9)


def test_parts_split_rings_and_mp(instance_dict):
    from topoopt_milp.core.instance import Instance

    inst = Instance.from_dict(instance_dict)
    topo = Topology.circulant(6, [1, 3])
    routing = route(inst, topo, default_rings(inst), "shortest")
    both = simulate(inst, topo, routing)
    ar = simulate(inst, topo, routing, parts="ar")
    mp = simulate(inst, topo, routing, parts="mp")
    assert max(ar.simulated_s, mp.simulated_s) <= both.simulated_s * (1 + 1e-12)
    assert ar.mp_end_s == 0 and mp.ring_end_s == []


def test_unrouted_ring_edge_is_a_clear_error():
    inst, topo, routing = _ring_case(4)
    broken = Routing(routing.rings, routing.commodities[1:])
    with pytest.raises(SimulationError, match="ring edge .* has no routed commodity"):
        simulate(inst, topo, broken)
    off = Routing((), (Commodity(0, 2, 1e6, "mp", 0, (((0, 2), 1.0),)),))
    with pytest.raises(SimulationError, match="hop 0->2 is not a link"):
        simulate(inst, topo, off)
    with pytest.raises(SimulationError, match="--latency"):
        simulate(inst, topo, routing, latency=-1.0)


# -- command line ------------------------------------------------------------------------
def _files(tmp_path, runner):
    inst_path = tmp_path / "inst.json"
    sol = tmp_path / "sol.json"
    inst, topo, routing = _ring_case(5)
    inst_path.write_text(json.dumps(inst.to_dict()))
    from topoopt_milp.core.evaluate import evaluate

    res = SolveResult("ring", Status.FEASIBLE, simulate(inst, topo, routing).fluid_s, None, 0.0,
                      topology=topo, routing=routing)
    write_solution(sol, res, inst, evaluate(inst, topo, routing))
    return inst_path, sol


def test_cli_json_keys_and_trace(tmp_path, runner):
    inst, sol = _files(tmp_path, runner)
    trace = tmp_path / "trace.csv"
    r = runner.invoke(main, ["simulate", str(inst), str(sol), "--format", "json",
                             "--trace", str(trace), "--latency", "1e-6"])
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout)
    assert {"simulated_s", "fluid_s", "ratio", "critical", "busiest_arc"} <= set(data)
    assert data["ratio"] == pytest.approx(data["simulated_s"] / data["fluid_s"])
    rows = list(csv.DictReader(trace.open()))
    assert len(rows) == data["flows"] == 2 * 5 * 2 * 4  # 2 rings x 5 edges x 2(k-1) steps
    assert max(float(x["ended_s"]) for x in rows) == pytest.approx(data["simulated_s"])
    assert all(float(x["started_s"]) == pytest.approx(float(x["issued_s"]) + 1e-6)
               for x in rows)
    text = runner.invoke(main, ["simulate", str(inst), str(sol)])
    assert text.exit_code == 0 and "ratio 1.0" in text.stdout and "critical: ring" in text.stdout


@pytest.mark.parametrize("args, message", [
    (["--latency", "-1"], "--latency: expected a finite number >= 0"),
    (["--overhead", "nan"], "--overhead: expected a finite number >= 0"),
])
def test_cli_bad_numbers(tmp_path, runner, args, message):
    inst, sol = _files(tmp_path, runner)
    r = runner.invoke(main, ["simulate", str(inst), str(sol), *args])
    assert r.exit_code == 2 and message in r.output and "Traceback" not in r.output


def test_cli_bad_files(tmp_path, runner):
    inst, sol = _files(tmp_path, runner)
    r = runner.invoke(main, ["simulate", str(inst), str(tmp_path / "missing.json")])
    assert r.exit_code == 2 and "missing.json" in r.output
    data = json.loads(sol.read_text())
    data["routing"]["commodities"][0]["paths"][0]["nodes"] = [0, 2]
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(data))
    r = runner.invoke(main, ["simulate", str(inst), str(bad)])
    assert r.exit_code == 2 and "fails the independent check" in r.output
    other = tmp_path / "other.json"
    other.write_text(json.dumps({**json.loads(inst.read_text()), "link_gbps": 1.0}))
    r = runner.invoke(main, ["simulate", str(other), str(sol)])
    assert r.exit_code == 2 and "instance.hash" in r.output
