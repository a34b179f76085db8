"""User-input errors on the command line: one line on stderr naming the field, exit code 2,
no traceback. Also the happy path the errors are measured against."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path

import pytest

from topoopt_milp.cli import main
from topoopt_milp.core.evaluate import evaluate
from topoopt_milp.core.result import SolveResult, Status, write_solution
from topoopt_milp.core.routing import route
from topoopt_milp.core.topology import Topology, default_rings
from topoopt_milp.workloads import generators

# broken instance file -> substring of the one error line
BROKEN_INSTANCES = {
    "unknown_field.json": "colour: unknown field",
    "unknown_group_field.json": "allreduce[0].weight: unknown field",
    "member_out_of_range.json": "allreduce[0].members: node 6 is out of range 0..5",
    "repeated_member.json": "allreduce[0].members: node 2 is listed twice",
    "self_demand.json": "mp[2]: self-demand 4 -> 4",
    "negative_bytes.json": "mp[1][2] (bytes): must be non-negative",
    "nan_bytes.json": "nan_bytes.json: allreduce[0].bytes: NaN is not a JSON number",
    "wrong_format.json": "format: expected 'topoopt-instance/1', got 'topoopt-instance/9'",
    "degree_too_large.json": "degree: must be smaller than n",
    "n_is_string.json": "n: expected an integer, got 'six'",
    "odd_regular.json": "regular: no 3-regular graph on n = 7",
    "top_level_list.json": "instance: expected a JSON object",
    "not_json.json": "not_json.json: not valid JSON",
    "binary.json": "binary.json: not valid JSON (not UTF-8 text)",
}

BROKEN_SOLUTIONS = {
    "solution_missing_paths.json": "routing.commodities[0].paths: required field is missing",
    "solution_wrong_format.json": "format: expected 'topoopt-solution/1', got 'topoopt-solution/0'",
    "solution_not_json.json": "solution_not_json.json: not valid JSON",
    "binary.json": "binary.json: not valid JSON (not UTF-8 text)",
}


def one_error_line(result, expected: str) -> str:
    """Assert the CliRunner result is a clean user error and return its line."""
    assert result.exit_code == 2, (result.exit_code, result.output)
    assert isinstance(result.exception, SystemExit)  # not an uncaught exception
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("Error: ") and expected in lines[0], lines[0]
    assert "Traceback" not in result.output
    return lines[0]


@pytest.fixture
def instance_file(tmp_path):
    inst = generators.sparse(8, 2, pairs=6, groups=1, group_size=4, seed=3)
    path = tmp_path / "inst.json"
    inst.save(path)
    return inst, path


@pytest.fixture
def solution_file(instance_file, tmp_path):
    """A valid solution (ECMP on the ring C8) written the way `solve` writes one."""
    inst, _ = instance_file
    topo = Topology.circulant(8, [1])
    routing = route(inst, topo, default_rings(inst), "ecmp")
    metrics = evaluate(inst, topo, routing)
    res = SolveResult("by-hand", Status.FEASIBLE, metrics["comm_time_s"], None, 0.0, topo, routing)
    path = tmp_path / "sol.json"
    write_solution(path, res, inst, metrics)
    return path


# -- solve ------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", list(BROKEN_INSTANCES))
def test_solve_broken_instance(runner, data_dir, tmp_path, name):
    out = tmp_path / "x.json"
    r = runner.invoke(main, ["solve", str(data_dir / "broken" / name), "--method", "ring",
                             "--out", str(out)])
    one_error_line(r, BROKEN_INSTANCES[name])
    assert not out.exists()


def test_solve_missing_instance_file(runner, tmp_path):
    r = runner.invoke(main, ["solve", str(tmp_path / "nope.json"), "-m", "ring", "--out", "x.json"])
    one_error_line(r, "nope.json: cannot read")


def test_solve_without_out_names_the_missing_option(runner, instance_file):
    """A missing required path option used to print ``Error: --out:`` and nothing more."""
    _, path = instance_file
    r = runner.invoke(main, ["solve", str(path), "-m", "ring"])
    assert r.exit_code == 2
    assert "Missing option '--out'" in r.output


def test_solve_unknown_method(runner, instance_file, tmp_path):
    _, path = instance_file
    r = runner.invoke(main, ["solve", str(path), "-m", "magic", "--out", str(tmp_path / "x.json")])
    one_error_line(r, "method: unknown method 'magic'")


def test_solve_topology_of_other_size(runner, instance_file, tmp_path, data_dir):
    _, path = instance_file
    other = generators.uniform(6, 2)
    topo = Topology.circulant(6, [1])
    routing = route(other, topo, (), "shortest")
    sol6 = tmp_path / "sol6.json"
    write_solution(sol6, SolveResult("x", Status.FEASIBLE, 1.0, None, 0.0, topo, routing), other, None)
    r = runner.invoke(main, ["solve", str(path), "-m", "ring", "--topology", str(sol6),
                             "--out", str(tmp_path / "x.json")])
    one_error_line(r, "sol6.json: topology.n: the topology has n = 6, the instance 8")
    r = runner.invoke(main, ["solve", str(path), "-m", "ring", "--warm-start",
                             str(data_dir / "broken" / "solution_missing_paths.json"),
                             "--out", str(tmp_path / "x.json")])
    one_error_line(r, "routing.commodities[0].paths: required field is missing")


def test_solve_ring_happy_path_then_evaluate(runner, instance_file, tmp_path):
    _, path = instance_file
    out = tmp_path / "ring.json"
    r = runner.invoke(main, ["solve", str(path), "--method", "ring", "--out", str(out)])
    assert r.exit_code == 0, r.output
    assert "ring" in r.stdout and "communication time" in r.stdout
    data = json.loads(out.read_text())
    assert data["status"] == "feasible" and data["objective"] > 0
    r = runner.invoke(main, ["evaluate", str(path), str(out)])
    assert r.exit_code == 0, r.output
    assert "checker: OK" in r.stdout


# -- evaluate ---------------------------------------------------------------------------------
def test_evaluate_valid_solution(runner, instance_file, solution_file):
    _, path = instance_file
    r = runner.invoke(main, ["evaluate", str(path), str(solution_file), "--json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert out["violations"] == [] and out["metrics"]["comm_time_s"] > 0


@pytest.mark.parametrize("name", list(BROKEN_INSTANCES))
def test_evaluate_broken_instance(runner, data_dir, solution_file, name):
    r = runner.invoke(main, ["evaluate", str(data_dir / "broken" / name), str(solution_file)])
    one_error_line(r, BROKEN_INSTANCES[name])


@pytest.mark.parametrize("name", list(BROKEN_SOLUTIONS))
def test_evaluate_broken_solution_file(runner, data_dir, instance_file, name):
    _, path = instance_file
    r = runner.invoke(main, ["evaluate", str(path), str(data_dir / "broken" / name)])
    one_error_line(r, BROKEN_SOLUTIONS[name])


def test_evaluate_solution_of_another_instance(runner, solution_file, tmp_path):
    other = tmp_path / "other.json"
    generators.sparse(8, 2, pairs=6, groups=1, group_size=4, seed=4).save(other)
    r = runner.invoke(main, ["evaluate", str(other), str(solution_file)])
    line = one_error_line(r, "was solved on instance hash")
    assert "other.json" in line


def _mutations():
    def drop(*path):
        def f(d):
            obj = d
            for k in path[:-1]:
                obj = obj[k]
            del obj[path[-1]]
        return f

    def put(value, *path):
        def f(d):
            obj = d
            for k in path[:-1]:
                obj = obj[k]
            obj[path[-1]] = value
        return f

    return {
        "no instance": (drop("instance"), "instance: required field is missing"),
        "no status": (drop("status"), "status: required field is missing"),
        "unknown status": (put("great", "status"), "status: unknown value 'great'"),
        "string topology": (put("ring", "topology"), "topology: expected object, got 'ring'"),
        "bool n": (put(True, "topology", "n"), "topology.n: expected integer"),
        "short link": (put([[0, 1]], "topology", "links"), "topology.links[0]: expected [i, j, count]"),
        "no rings": (drop("routing", "rings"), "routing.rings: required field is missing"),
        "string order": (put("abc", "routing", "rings", 0, "order"), "routing.rings[0].order: expected list"),
        "float node": (put([0, 1.5], "routing", "commodities", 0, "paths", 0, "nodes"),
                       "routing.commodities[0].paths[0].nodes: expected node ids"),
        "no nodes": (drop("routing", "commodities", 0, "paths", 0, "nodes"),
                     "routing.commodities[0].paths[0].nodes: required field is missing"),
        "string bytes": (put("x", "routing", "commodities", 1, "bytes"),
                         "routing.commodities[1].bytes: expected number, got 'x'"),
        "string objective": (put("fast", "objective"), "objective: expected number"),
    }


MUTATIONS = _mutations()


@pytest.mark.parametrize("case", list(MUTATIONS))
def test_evaluate_malformed_solution(runner, instance_file, solution_file, tmp_path, case):
    _, path = instance_file
    mutate, expected = MUTATIONS[case]
    data = copy.deepcopy(json.loads(solution_file.read_text()))
    mutate(data)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(data))
    r = runner.invoke(main, ["evaluate", str(path), str(bad)])
    one_error_line(r, expected)


def test_evaluate_violations_exit_1_and_are_listed(runner, instance_file, solution_file, tmp_path):
    # a well-formed solution that is wrong is not an input error: exit 1, every violation listed
    _, path = instance_file
    data = json.loads(solution_file.read_text())
    data["objective"] *= 2
    data["topology"]["links"].append([0, 4, 1])
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(data))
    r = runner.invoke(main, ["evaluate", str(path), str(bad)])
    assert r.exit_code == 1
    assert "checker: 3 violation(s)" in r.stdout
    assert "port budget: node 0 uses 3 ports > degree 2" in r.stdout
    assert "objective: " in r.stdout


# -- the real executable: stderr is exactly one line, no traceback ----------------------------
@pytest.mark.parametrize("name", ["nan_bytes.json", "not_json.json"])
def test_executable_prints_one_line(data_dir, tmp_path, name):
    # the console script the package installs, or the same entry point through the interpreter
    script = Path(sys.executable).with_name("topoopt-milp")
    entry = [str(script)] if script.exists() else [
        sys.executable, "-c", "from topoopt_milp.cli import main; main(prog_name='topoopt-milp')"]
    cmd = [*entry, "solve", str(data_dir / "broken" / name), "--method", "ring",
           "--out", str(tmp_path / "x.json")]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("Error: ")
    assert BROKEN_INSTANCES[name] in proc.stderr
    assert "Traceback" not in proc.stderr and proc.stdout == ""
