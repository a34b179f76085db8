"""The bundled instance library: every file is valid, regenerates byte for byte from the
documented generator commands, and its reference values hold (proven optima are reproduced
and never beaten by a heuristic)."""

from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from topoopt_milp import Instance
from topoopt_milp.cli import main
from topoopt_milp.core.check import check_solution
from topoopt_milp.core.evaluate import evaluate
from topoopt_milp.core.result import Status, finite_json, solution_dict
from topoopt_milp.registry import solve

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
    "alltoall/alltoall-n64-d4.json": ["generate", "uniform", "--n", "64", "--degree", "4", "--gbps",
                                      "100", "--bytes", "1e6", "--name", "alltoall-n64-d4"],
    "mixed/mixed-n12-d4-g2-mp35.json": ["generate", "mixed", "--n", "12", "--degree", "4", "--gbps",
                                        "100", "--seed", "0", "--groups", "2", "--mp-share", "0.35",
                                        "--name", "mixed-n12-d4-g2-mp35"],
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


# -- coopt/ and mixed/ (no reference.csv yet: the lead adds them to the experiment plan) --------
@pytest.mark.parametrize("family", ["coopt", "mixed"])
def test_new_families_have_a_readme_and_files(family):
    assert (LIBRARY / family / "README.md").is_file()
    assert len(list((LIBRARY / family).glob("*.json"))) >= 30


def test_mixed_files_hold_their_mp_share_on_coset_groups():
    for f in sorted((LIBRARY / "mixed").glob("*.json")):
        inst = Instance.load(f)
        p = inst.meta["params"]
        assert inst.mp_bytes() / inst.total_bytes() == pytest.approx(p["mp_share"], rel=1e-12), f
        stride = inst.n // p["group_size"]
        assert [g.members for g in inst.allreduce] == [
            tuple(range(r, inst.n, stride)) for r in range(p["groups"])], f


def test_coopt_files_record_a_search_that_never_lost():
    files = sorted((LIBRARY / "coopt").glob("*.json"))
    for f in files:
        rec = Instance.load(f).meta["cooptimize"]
        assert rec["method"] == "topologyfinder" and rec["seed"] == 0, f
        assert rec["final_iteration_s"] <= rec["initial_iteration_s"], f
        assert rec["command"].startswith("topoopt-milp cooptimize "), f


def test_a_coopt_file_regenerates_from_its_recorded_command(tmp_path):
    import shlex

    rel = LIBRARY / "coopt" / "bert-n16-d4.json"
    cmd = shlex.split(Instance.load(rel).meta["cooptimize"]["command"])
    out = tmp_path / rel.name  # the default name is the file stem
    r = CliRunner().invoke(main, [*cmd[1:], "--instance-out", str(out)])
    assert r.exit_code == 0, r.output
    assert out.read_bytes() == rel.read_bytes()


def test_alltoall_reference_rows():
    """The four uniform all-to-all rows of issue 16, 1e6 bytes per pair, no AllReduce."""
    assert (LIBRARY / "alltoall" / "README.md").is_file()
    got = {}
    for f in sorted((LIBRARY / "alltoall").glob("*.json")):
        inst = Instance.load(f)
        assert not inst.allreduce and len(inst.mp) == inst.n * (inst.n - 1), f
        assert {float(b) for _, _, b in inst.mp} == {1e6}, f
        got[(inst.n, inst.degree)] = f.stem
    assert set(got) == {(64, 4), (128, 4), (128, 8), (256, 8)}
