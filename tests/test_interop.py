"""Exports read back with their native libraries: highspy for MPS/LP models, networkx for
GraphML and edge lists, the csv module for the routing."""

from __future__ import annotations

import csv
from collections import defaultdict

import highspy
import networkx as nx
import numpy as np
import pytest
from click.testing import CliRunner

from topoopt_milp import registry
from topoopt_milp.cli import main
from topoopt_milp.core import interop
from topoopt_milp.core.backends.pulp_backend import solve_pulp
from topoopt_milp.core.evaluate import arc_loads, evaluate
from topoopt_milp.core.instance import make_instance
from topoopt_milp.core.params import SolveOptions
from topoopt_milp.core.result import Status, solution_dict, write_solution
from topoopt_milp.methods import model_data as _exact
from topoopt_milp.methods.formulations import alloc


def small_instance():
    return make_instance(6, 2, 8e-9, allreduce=[(range(6), 100.0)],
                         mp=[(0, 3, 50.0), (1, 4, 20.0)], regular=False, name="interop-n6")


def read_and_solve(path) -> tuple[float, highspy.ObjSense]:
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    assert h.readModel(str(path)) == highspy.HighsStatus.kOk
    h.run()
    assert h.getModelStatus() == highspy.HighsModelStatus.kOptimal
    return h.getInfo().objective_function_value, h.getLp().sense_


# -- models ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("ext", ["mps", "lp"])
def test_alloc_model_round_trip(tmp_path, ext):
    # PuLP export path: the max-throughput alloc MILP keeps its sense in both formats (the old
    # PuLP MPS writer marked it with a comment only, and HiGHS read a minimisation: 0)
    inst = small_instance()
    prob, _parts = alloc.build_milp(inst, registry.get("alloc-milp").options())
    path = tmp_path / f"alloc.{ext}"
    out = solve_pulp(prob, SolveOptions(export=str(path)))
    assert out.status is Status.OPTIMAL
    value, sense = read_and_solve(path)
    assert sense == highspy.ObjSense.kMaximize
    assert value == pytest.approx(out.objective, rel=1e-7)
    assert value > 0
    if ext == "mps":
        assert "OBJSENSE" in path.read_text().split("ROWS")[0]
    # the toolkit's answer in seconds: throughput units -> seconds per unit / objective
    res = registry.solve(inst, 'alloc-milp', export=str(tmp_path / f'b.{ext}'))
    assert res.status is Status.OPTIMAL
    assert _exact.seconds_per_unit(inst) / read_and_solve(tmp_path / f"b.{ext}")[0] == \
        pytest.approx(res.objective, rel=1e-6)


@pytest.mark.parametrize("ext", ["mps", "lp"])
def test_route_model_round_trip(tmp_path, ext):
    # HiGHS export path (solve_matrix): the min-congestion route LP, in units of V / B
    inst = small_instance()
    tp = registry.solve(inst, 'totientperms')
    path = tmp_path / f"route.{ext}"
    res = registry.solve(inst.with_topology(tp.topology.links), 'route-milp', export=str(path))
    assert res.status is Status.OPTIMAL
    value, sense = read_and_solve(path)
    assert sense == highspy.ObjSense.kMinimize
    assert value * _exact.seconds_per_unit(inst) == pytest.approx(res.objective, rel=1e-6)


# -- GraphML, edge list, routing CSV ---------------------------------------------------------------
def ring_solution():
    # the ring heuristic with d = 4 doubles every link of the ring
    inst = make_instance(8, 4, 100.0, allreduce=[(range(8), 1e9)], mp=[(0, 4, 1e8), (5, 1, 3e8)],
                         name="ring-n8")
    res = registry.solve(inst, 'ring')
    assert (res.topology.links[res.topology.links > 0] == 2).all()
    return inst, res, solution_dict(res, inst, evaluate(inst, res.topology, res.routing))


def test_graphml_multigraph_has_degree_d_and_metadata(tmp_path):
    inst, res, sol = ring_solution()
    path = tmp_path / "ring.graphml"
    interop.write_graphml(path, sol, inst)
    g = nx.read_graphml(path, node_type=int, force_multigraph=True)
    assert sorted(g.nodes) == list(range(8))
    assert dict(g.degree) == {v: 4 for v in range(8)}
    assert g.number_of_edges() == 16 and g.number_of_edges(0, 1) == 2
    meta = g.graph
    assert meta["format"] == "topoopt-graphml/1"
    assert (meta["n"], meta["degree"], meta["link_gbps"], meta["links"]) == (8, 4, 100.0, 16)
    assert meta["instance_name"] == "ring-n8" and meta["instance_hash"] == inst.content_hash()
    assert meta["method"] == "ring" and meta["status"] == "feasible"
    assert meta["comm_time_s"] == pytest.approx(res.objective)
    # per-link loads: the busiest link's busy time is T_comm; loads add up to the arc loads
    busy = [d["busy_s"] for _, _, d in g.edges(data=True)]
    assert max(busy) == pytest.approx(res.objective)
    loads = arc_loads(8, res.routing)
    per_pair = defaultdict(float)
    for u, v, d in g.edges(data=True):
        lo, hi = d["lo"], d["hi"]
        assert {lo, hi} == {u, v} and lo < hi
        per_pair[lo, hi] += d["load_lo_hi_bytes"]
        per_pair[hi, lo] += d["load_hi_lo_bytes"]
    for (i, j), b in per_pair.items():
        assert b == pytest.approx(loads[i, j])
    assert sum(per_pair.values()) == pytest.approx(loads.sum())


def test_graphml_without_instance_and_wrong_instance(tmp_path):
    inst, res, sol = ring_solution()
    g = interop.solution_multigraph(sol)
    assert "degree" not in g.graph and dict(g.degree) == {v: 4 for v in range(8)}
    other = make_instance(8, 4, 100.0, mp=[(0, 1, 1.0)])
    with pytest.raises(ValueError, match="instance: the solution was solved on"):
        interop.solution_multigraph(sol, other)


def test_routing_csv_reproduces_the_loads(tmp_path):
    inst, res, sol = ring_solution()
    path = tmp_path / "ring.routing.csv"
    rows = interop.write_routing_csv(path, sol)
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        assert tuple(reader.fieldnames) == interop.ROUTING_COLUMNS
        table = list(reader)
    assert len(table) == rows == sum(len(c.paths) for c in res.routing.commodities)
    loads = np.zeros((8, 8))
    frac = defaultdict(float)
    for r in table:
        path_nodes = [int(v) for v in r["path"].split()]
        assert (path_nodes[0], path_nodes[-1]) == (int(r["src"]), int(r["dst"]))
        assert r["kind"] in ("mp", "ar")
        frac[int(r["commodity"])] += float(r["fraction"])
        for a, b in zip(path_nodes, path_nodes[1:], strict=False):
            loads[a, b] += float(r["bytes"]) * float(r["fraction"])
    assert all(v == pytest.approx(1.0) for v in frac.values())
    assert np.allclose(loads, arc_loads(8, res.routing))
    cap = res.topology.links * inst.link_bytes_per_s
    assert (loads[cap > 0] / cap[cap > 0]).max() == pytest.approx(res.objective)


def test_export_command_writes_all_formats(tmp_path):
    inst, res, _sol = ring_solution()
    inst_path, sol_path = tmp_path / "inst.json", tmp_path / "sol.json"
    inst.save(inst_path)
    write_solution(sol_path, res, inst, evaluate(inst, res.topology, res.routing))
    runner = CliRunner()
    r = runner.invoke(main, ["export", str(sol_path), "--instance", str(inst_path)])
    assert r.exit_code == 0, r.output
    g = nx.read_graphml(tmp_path / "sol.graphml", node_type=int, force_multigraph=True)
    assert set(dict(g.degree).values()) == {4} and g.graph["degree"] == 4
    r = runner.invoke(main, ["export", str(sol_path), "--format", "routing"])
    assert r.exit_code == 0, r.output
    assert (tmp_path / "sol.routing.csv").read_text().startswith(",".join(interop.ROUTING_COLUMNS))
    r = runner.invoke(main, ["export", str(sol_path), "--format", "edgelist"])
    assert r.exit_code == 0, r.output
    e = nx.read_edgelist(tmp_path / "sol.edgelist", nodetype=int, data=[("count", int)])
    assert sum(d["count"] for _, _, d in e.edges(data=True)) == 16
