"""Topologies in (core/topology_io.py), through the real command line: solution files with and
without a routing, edge lists and GraphML, each checked against the instance; and the fixes
that came with them: negative volumes, recorded constraints, the family rule, unroutable
instances, evaluate --routing on rejected files, and non-regular input files."""

from __future__ import annotations

import json
import os
import threading

import networkx as nx
import numpy as np
import pytest

from topoopt_milp import registry
from topoopt_milp.bench.runner import build_tasks, read_instance_file
from topoopt_milp.cli import main
from topoopt_milp.core.check import check_solution, check_topology
from topoopt_milp.core.errors import InputError
from topoopt_milp.core.instance import Instance, InstanceError, make_instance
from topoopt_milp.core.result import Status, write_solution
from topoopt_milp.core.spec import NotApplicableError
from topoopt_milp.core.topology_io import TopologyFileError, read_topology, topology_from_graph
from topoopt_milp.pipeline import solve_checked
from topoopt_milp.workloads import generators


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    root = tmp_path_factory.mktemp("topo")
    inst = generators.sparse(8, 4, pairs=8, groups=1, group_size=4, seed=3)
    inst.save(root / "inst.json")
    res = solve_checked(inst, "topologyfinder")
    write_solution(root / "tf.json", res, inst)
    return root, inst, res


def one_error_line(r, name: str) -> str:
    assert r.exit_code == 2, r.output
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: ") and name in lines[0], r.stderr
    assert "Traceback" not in r.output
    return lines[0]


def test_every_format_gives_the_same_topology(world, runner):
    root, inst, res = world
    for fmt in ("edgelist", "graphml"):
        r = runner.invoke(main, ["export", str(root / "tf.json"), "--format", fmt,
                                 "--instance", str(root / "inst.json")])
        assert r.exit_code == 0, r.output
    data = json.loads((root / "tf.json").read_text())
    data["routing"] = None
    (root / "bare.json").write_text(json.dumps(data))
    data["routing"] = {"rings": json.loads((root / "tf.json").read_text())["routing"]["rings"]}
    (root / "rings.json").write_text(json.dumps(data))
    for name in ("tf.json", "bare.json", "rings.json", "tf.edgelist", "tf.graphml"):
        tf = read_topology(root / name, inst)
        assert (tf.topology.links == res.topology.links).all(), name
        assert (tf.rings is not None) == (name in ("tf.json", "rings.json")), name
        assert (tf.result is not None) == (name == "tf.json")
    # networkx writes edge lists with data dicts by default, and multigraph edges one by one
    g = nx.read_graphml(root / "tf.graphml", node_type=int, force_multigraph=True)
    nx.write_edgelist(g, root / "nx.edgelist")
    assert "{" in (root / "nx.edgelist").read_text()
    assert (read_topology(root / "nx.edgelist", inst).topology.links == res.topology.links).all()
    assert (topology_from_graph(g, inst).links == res.topology.links).all()


def test_topology_only_solution_routes(world, runner):
    # the case: route-approx on a topology-only file failed the checker
    root, inst, res = world
    test_every_format_gives_the_same_topology(world, runner)
    for name in ("bare.json", "rings.json", "tf.edgelist", "tf.graphml"):
        r = runner.invoke(main, ["solve", str(root / "inst.json"), "-m", "route-approx",
                                 "--topology", str(root / name), "--out", str(root / "ra.json")])
        assert r.exit_code == 0, (name, r.output)
        assert r.stdout.split()[:2] in (["route-approx", "optimal"],
                                        ["route-approx", "feasible"]), r.stdout
    # the file's rings are the route's fixed rings, recorded as a constraint
    r = runner.invoke(main, ["solve", str(root / "inst.json"), "-m", "route-milp", "--topology",
                             str(root / "rings.json"), "--out", str(root / "rm.json")])
    assert r.exit_code == 0, r.output
    sol = json.loads((root / "rm.json").read_text())
    assert sol["constraints"]["rings"] == [
        {"group": x.group, "order": list(x.order), "share": x.share} for x in res.routing.rings]
    for name in ("bare.json", "tf.edgelist", "tf.graphml", "tf.json"):
        r = runner.invoke(main, ["evaluate", str(root / "inst.json"), str(root / name),
                                 "--routing", "lp"])
        assert r.exit_code == 0, (name, r.output)
        assert "route-milp on the topology and rings: optimal" in r.stdout, r.stdout
    r = runner.invoke(main, ["evaluate", str(root / "inst.json"), str(root / "tf.graphml")])
    assert r.exit_code == 0 and "--routing approx|lp routes it" in r.stdout, r.output


BAD_EDGELISTS = {
    "self-loop": ("0 1 2\n3 3 1\n", "line 2: self-loop at node 3"),
    "unknown": ("0 1\n0 8\n", "line 2: unknown node 8"),
    "negative": ("# comment\n-1 2\n", "line 2: unknown node -1"),
    "ports": ("0 1 3\n0 2 2\n", "line 2: node 0 has 5 links, more than its 4 ports"),
    "count": ("0 1 0\n", "line 1: link count 0 is not a positive integer"),
    "text": ("0 x 1\n", "line 1: node 'x' is not an integer node id"),
    "float": ("0 1 1.5\n", "line 1: expected 'i j [count]', the count '1.5' is not an integer"),
    "short": ("0\n", "line 1: expected 'i j [count]'"),
    "dict": ("0 1 {'count': -2}\n", "line 1: link count -2 is not a positive integer"),
    "degree": ("0 1 4\n", "node 2 uses 0 of its 4 ports; the instance is regular"),
    "binary": (b"\xff\xfe\x00\x01", "not UTF-8 text"),
}


@pytest.mark.parametrize("case", sorted(BAD_EDGELISTS))
def test_bad_edge_lists_are_refused_naming_the_line(world, runner, case):
    root, inst, _ = world
    text, want = BAD_EDGELISTS[case]
    path = root / f"bad-{case}.edgelist"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    with pytest.raises(TopologyFileError, match=want.replace("(", r"\(").replace("[", r"\[")):
        read_topology(path, inst)
    for argv in (["solve", str(root / "inst.json"), "-m", "route-milp", "--topology", str(path),
                  "--out", str(root / "o.json")],
                 ["evaluate", str(root / "inst.json"), str(path), "--routing", "approx"]):
        line = one_error_line(runner.invoke(main, argv), path.name)
        assert want in line


def graphml(edges, directed=False, nodes=None) -> str:
    g = (nx.MultiDiGraph if directed else nx.MultiGraph)()
    g.add_nodes_from(nodes if nodes is not None else range(8))
    g.add_edges_from(edges)
    return "\n".join(nx.generate_graphml(g))


def test_bad_graphml_is_refused_naming_the_edge(world, runner):
    root, inst, res = world
    good = [(i, j) for i, j, c in res.topology.link_list() for _ in range(c)]
    cases = {
        "loop": (graphml(good[:-1] + [(5, 5)]), "edge 5-5: self-loop at node 5"),
        "unknown": (graphml(good, nodes=range(9)), "unknown node 8"),
        "ports": (graphml(good + [(0, 1)]), "more than its 4 ports"),
        "directed": (graphml(good, directed=True), "a directed graph"),
        "xml": ("<graphml><graph", "not a GraphML file"),
        "names": (graphml([("a", "b")], nodes=["a", "b"]), "node 'a' is not an integer node id"),
    }
    for case, (text, want) in cases.items():
        path = root / f"bad-{case}.graphml"
        path.write_text(text)
        line = one_error_line(runner.invoke(main, [
            "solve", str(root / "inst.json"), "-m", "route-approx", "--topology", str(path),
            "--out", str(root / "o.json")]), path.name)
        assert want in line, (case, line)
    # --topology-format overrides the suffix
    path = root / "graph.txt"
    path.write_text(graphml(good))
    r = runner.invoke(main, ["evaluate", str(root / "inst.json"), str(path), "--topology-format",
                             "graphml"])
    assert r.exit_code == 0, r.output


def test_networkx_graphs_are_checked_like_files(world):
    _, inst, _ = world
    g = nx.random_regular_graph(4, 8, seed=2)
    assert topology_from_graph(g, inst).degrees().tolist() == [4] * 8
    g.add_edge(0, 0)
    with pytest.raises(TopologyFileError, match="graph: edge 0-0: self-loop"):
        topology_from_graph(g, inst)
    with pytest.raises(TopologyFileError, match="directed graph"):
        topology_from_graph(nx.DiGraph([(0, 1)]), inst)
    small = nx.relabel_nodes(nx.cycle_graph(8), {v: np.int64(v) for v in range(8)})
    loose = make_instance(8, 4, 100.0, mp=[(0, 4, 1e6)], regular=False)
    assert int(topology_from_graph(small, loose).links.sum()) == 16


def test_negative_volumes_are_refused_everywhere(world, runner):
    root, inst, _ = world
    sol = json.loads((root / "tf.json").read_text())
    com = sol["routing"]["commodities"]
    k = next(i for i, c in enumerate(com) if c["bytes"] > 0)
    # route +2x on the real path and -x on a copy: the volumes still add up to x
    twin = json.loads(json.dumps(com[k]))
    com[k]["bytes"] *= 2
    twin["bytes"] *= -1
    com.append(twin)
    problems = check_solution(inst.to_dict(), sol)
    assert any("negative volume" in p for p in problems), problems
    path = root / "negative.json"
    path.write_text(json.dumps(sol))
    r = runner.invoke(main, ["evaluate", str(root / "inst.json"), str(path)])
    assert r.exit_code == 1 and "negative volume" in r.stdout, r.output
    for argv in (["solve", str(root / "inst.json"), "-m", "route-milp", "--topology", str(path),
                  "--out", str(root / "o.json")],
                 ["solve", str(root / "inst.json"), "-m", "ring", "--warm-start", str(path),
                  "--out", str(root / "o.json")],
                 ["export", str(path), "--instance", str(root / "inst.json")],
                 ["export", str(path), "--out", str(root / "neg.graphml")]):
        assert "negative volume" in one_error_line(runner.invoke(main, argv), path.name)


def test_recorded_constraints_are_enforced(world):
    root, inst, _ = world
    res = solve_checked(inst, "alloc-milp", max_multiplicity=1, time_limit=20)
    assert res.constraints == {"max_multiplicity": 1} and not res.violations
    assert int(res.topology.links.max()) == 1
    sol = res.to_dict(inst)
    assert check_solution(inst.to_dict(), sol) == []
    ring = solve_checked(inst, "ring")  # the ring heuristic doubles every link at d = 4
    tampered = {**ring.to_dict(inst), "constraints": {"max_multiplicity": 1}}
    assert any(p.startswith("constraints.max_multiplicity: 2 parallel links")
               for p in check_solution(inst.to_dict(), tampered))
    assert check_solution(inst.to_dict(), {**tampered, "constraints": {"colour": 1}}) == [
        "constraints.colour: unknown constraint (the checker cannot verify it)"]
    # alloc-alternate under a cap it cannot meet: never an accepted answer
    alt = solve_checked(inst, "alloc-alternate", max_multiplicity=1, time_limit=10)
    assert alt.constraints == {"max_multiplicity": 1}
    assert alt.status is Status.ERROR or int(alt.topology.links.max()) <= 1, alt
    # fixed rings: a route solution records them; other rings are rejected
    fixed = inst.with_topology(ring.topology.links, ring.routing.rings)
    rt = solve_checked(fixed, "route-milp")
    assert rt.status is Status.OPTIMAL and "rings" in rt.constraints
    other = rt.to_dict(fixed)
    other["routing"]["rings"][0]["order"] = other["routing"]["rings"][0]["order"][::-1]
    assert any(p.startswith("constraints.rings") for p in check_topology(fixed.to_dict(), other))
    assert solve_checked(fixed, "route-milp", rings="default").constraints == {}


def test_family_rule_refuses_up_front(world, runner):
    root, inst, res = world
    fixed = inst.with_topology(res.topology.links)
    fixed.save(root / "fixed.json")
    for m in ("alloc-milp", "topologyfinder", "joint-milp", "select-milp", "lower-bounds"):
        with pytest.raises(NotApplicableError, match="the instance fixes its topology"):
            registry.solve(fixed, m)
        line = one_error_line(runner.invoke(main, ["solve", str(root / "fixed.json"), "-m", m,
                                                   "--out", str(root / "o.json")]), "fixed.json")
        assert f"{m}: topology: the instance fixes its topology" in line
    for m in ("route-milp", "route-approx", "route-cpsat"):
        with pytest.raises(NotApplicableError, match="route family solves the routing"):
            registry.solve(inst, m)
    # a sweep over both kinds of instance runs each method where it applies (no error rows)
    tasks = build_tasks([root / "inst.json", root / "fixed.json"], ["totientperms", "route-milp"])
    assert sorted((t.instance_path.rsplit("/", 1)[-1], t.method["name"]) for t in tasks) == [
        ("fixed.json", "route-milp"), ("inst.json", "totientperms")]


def test_unroutable_is_infeasible_for_every_method(tmp_path, runner):
    # n = 5, d = 1, one 5-member group: joint-milp said "error obj=0" with a bound of 2.77e10
    inst = make_instance(5, 1, 100.0, allreduce=[(range(5), 1e8)], regular=False, name="unr")
    inst.save(tmp_path / "unr.json")
    for m in ("joint-milp", "alloc-milp", "alloc-benders", "alloc-alternate", "topologyfinder",
              "lower-bounds"):
        r = runner.invoke(main, ["solve", str(tmp_path / "unr.json"), "-m", m, "--out",
                                 str(tmp_path / "o.json")])
        assert r.exit_code == 0, r.output
        assert r.stdout.split()[:2] == [m, "infeasible"], r.stdout
        sol = json.loads((tmp_path / "o.json").read_text())
        assert sol["objective"] is None and "no matching connects three servers" in sol["message"]
    for m in ("alloc-cpsat", "select-cpsat", "joint-cpsat"):  # restricted: proves nothing
        assert solve_checked(inst, m, time_limit=20).status is Status.NO_SOLUTION, m


def test_evaluate_routing_on_rejected_or_empty_files(world, runner):
    root, inst, _ = world
    sol = json.loads((root / "tf.json").read_text())
    sol["routing"]["commodities"].pop()
    (root / "rejected.json").write_text(json.dumps(sol))
    r = runner.invoke(main, ["evaluate", str(root / "inst.json"), str(root / "rejected.json"),
                             "--routing", "approx"])
    assert r.exit_code == 1 and "violation(s)" in r.stdout and r.exception is not None
    assert isinstance(r.exception, SystemExit), r.exception
    assert "--routing: not done" in r.stderr
    empty = {**json.loads((root / "tf.json").read_text()), "status": "infeasible",
             "topology": None, "routing": None, "objective": None, "bound": None}
    (root / "empty.json").write_text(json.dumps(empty))
    r = runner.invoke(main, ["evaluate", str(root / "inst.json"), str(root / "empty.json")])
    assert r.exit_code == 0 and "checker: OK" in r.stdout, r.output
    line = one_error_line(runner.invoke(main, ["evaluate", str(root / "inst.json"),
                                               str(root / "empty.json"), "--routing", "lp"]),
                          "empty.json")
    assert "holds no topology (status infeasible): nothing to route" in line


def _with_timeout(fn, seconds=20.0):
    """Run ``fn`` in a thread; fail (rather than hang the suite) if it blocks."""
    out = {}

    def run():
        try:
            out["r"] = fn()
        except Exception as exc:  # noqa: BLE001 - re-raised in the caller's thread
            out["e"] = exc

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(seconds)
    assert not t.is_alive(), "blocked on a non-regular file"
    if "e" in out:
        raise out["e"]
    return out["r"]


def test_fifos_are_refused_everywhere(world, runner):
    root, inst, _ = world
    fifo = root / "pipe.json"
    if not fifo.exists():
        os.mkfifo(fifo)
    calls = [
        ["solve", str(fifo), "-m", "ring", "--out", str(root / "o.json")],
        ["evaluate", str(fifo), str(root / "tf.json")],
        ["evaluate", str(root / "inst.json"), str(fifo)],
        ["solve", str(root / "inst.json"), "-m", "route-milp", "--topology", str(fifo), "--out",
         str(root / "o.json")],
        ["solve", str(root / "inst.json"), "-m", "ring", "--warm-start", str(fifo), "--out",
         str(root / "o.json")],
        ["export", str(fifo)],
        ["export", str(root / "tf.json"), "--instance", str(fifo)],
        ["evaluate", str(root / "inst.json"), str(fifo), "--topology-format", "edgelist"],
        ["evaluate", str(root / "inst.json"), str(fifo), "--topology-format", "graphml"],
        ["solve", str(fifo), "--input-format", "sndlib", "-m", "route-milp", "--out",
         str(root / "o.json")],
    ]
    for argv in calls:
        r = _with_timeout(lambda argv=argv: runner.invoke(main, argv))
        assert "not a regular file (a FIFO (named pipe))" in one_error_line(r, fifo.name), argv
    with pytest.raises(InstanceError, match="not a regular file"):
        _with_timeout(lambda: read_instance_file(fifo))
    with pytest.raises(InputError, match="a character device"):
        Instance.load("/dev/zero")
