"""The bundled instance library: every file is valid, regenerates byte for byte from the
documented generator commands, and its reference values hold (proven optima are reproduced
and never beaten by a heuristic)."""

from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from topoopt_milp import Instance
from topoopt_milp.check import check_solution
from topoopt_milp.cli import main
from topoopt_milp.evaluate import evaluate
from topoopt_milp.registry import solve
from topoopt_milp.result import Status, finite_json, solution_dict

LIBRARY = Path(__file__).resolve().parents[1] / "instances"
FAMILIES = ("small", "circulant", "dnn", "llm")
HEURISTICS = ("totientperms", "topologyfinder", "expander", "demand-greedy", "ring")


def test_every_library_file_is_a_valid_instance():
    files = sorted(LIBRARY.glob("*/*.json"))
    assert len(files) >= 50
    for f in files:
        inst = Instance.load(f)
        assert inst.name == f.stem, f


@pytest.mark.parametrize("family", FAMILIES)
def test_each_family_has_readme_and_reference(family):
    assert (LIBRARY / family / "README.md").is_file()
    ref = pd.read_csv(LIBRARY / family / "reference.csv")
    assert list(ref.columns) == ["instance", "objective", "bound", "status", "source"]
    stems = {f.stem for f in (LIBRARY / family).glob("*.json")}
    assert set(ref["instance"]) == stems
    assert (ref["bound"] <= ref["objective"] * (1 + 1e-6)).all()
    assert set(ref["status"]) <= {"optimal", "feasible"}


# The same commands as instances/generate.sh (a sample of each generator).
COMMANDS = {
    "small/sparse-n6-d2-s1.json": ["generate", "sparse", "--n", "6", "--degree", "2", "--gbps", "100",
                                   "--seed", "1", "--pairs", "6", "--groups", "1", "--group-size", "4"],
    "small/dlrm-n8-d4-s0.json": ["generate", "dlrm", "--n", "8", "--degree", "4", "--gbps", "100",
                                 "--seed", "0", "--tables", "8"],
    "circulant/uniform-n16-d6.json": ["generate", "uniform", "--n", "16", "--degree", "6", "--gbps",
                                      "100", "--bytes", "1e7"],
    "dnn/vgg16-n16-d4.json": ["workload", "vgg16", "--n", "16", "--degree", "4", "--gbps", "100"],
    "llm/gpt3-1.3b-n16-d4-pp4tp4.json": ["workload", "gpt3-1.3b", "--n", "16", "--degree", "4",
                                         "--gbps", "100", "--strategy", "pp=4,tp=4"],
}


@pytest.mark.parametrize("rel", sorted(COMMANDS))
def test_library_files_regenerate_byte_identically(rel, tmp_path):
    out = tmp_path / Path(rel).name  # workload names the instance after its file
    r = CliRunner().invoke(main, [*COMMANDS[rel], "--out", str(out)])
    assert r.exit_code == 0, r.output
    assert out.read_bytes() == (LIBRARY / rel).read_bytes()


def _small_proven():
    ref = pd.read_csv(LIBRARY / "small" / "reference.csv")
    rows = ref[ref["status"] == "optimal"]
    return [r for r in rows.itertuples() if Instance.load(LIBRARY / "small" / f"{r.instance}.json").n <= 8]


@pytest.mark.parametrize("row", _small_proven(), ids=lambda r: r.instance)
def test_small_reference_optima_reproduced_and_never_beaten(row):
    inst = Instance.load(LIBRARY / "small" / f"{row.instance}.json")
    exact = solve(inst, 'alloc-milp', time_limit=60)
    assert exact.status is Status.OPTIMAL
    assert exact.objective == pytest.approx(row.objective, rel=1e-5)
    for method in HEURISTICS:
        res = solve(inst, method)
        metrics = evaluate(inst, res.topology, res.routing)
        assert check_solution(inst.to_dict(), finite_json(solution_dict(res, inst, metrics))) == []
        assert res.objective >= row.objective * (1 - 1e-6), method
