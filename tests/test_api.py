"""The Python API: the package docstring's example runs (doctest), and a SolveResult prints
a summary, has a one-line repr, and round-trips through to_dict / save."""

from __future__ import annotations

import doctest
import json
from pathlib import Path

import pytest

import topoopt_milp
from topoopt_milp import Instance, Status, solve
from topoopt_milp.core.check import check_solution
from topoopt_milp.core.result import read_solution, result_from_solution

REPO = Path(__file__).resolve().parents[1]
INSTANCE = REPO / "instances" / "small" / "dlrm-n8-d4-s0.json"


def test_package_docstring_example_runs(monkeypatch):
    monkeypatch.chdir(REPO)  # the example names a file of the bundled library
    failed, attempted = doctest.testmod(topoopt_milp, verbose=False, report=True)
    assert attempted >= 5 and failed == 0


@pytest.fixture(scope="module")
def results():
    inst = Instance.load(INSTANCE)
    return inst, solve(inst, "alloc-milp", time_limit=30), solve(inst, "topologyfinder")


def test_result_prints_a_summary_not_arrays(results):
    _, exact, heur = results
    text = str(exact)
    assert text.splitlines()[0].startswith("alloc-milp: optimal (highs")
    for word in ("objective", "bound", "valid for every topology", "gap        0.00%",
                 "n = 8", "AllReduce rings", "check      OK"):
        assert word in text, word
    assert "[[" not in text and "array" not in text
    assert "bound" not in str(heur) and "feasible (heuristic)" in str(heur)
    assert repr(exact).startswith("SolveResult(method='alloc-milp', status='optimal', objective=")
    assert "\n" not in repr(exact) and "array" not in repr(exact)


def test_to_dict_and_save_round_trip(results, tmp_path):
    inst, exact, _ = results
    d = exact.to_dict()
    assert "instance" not in d and d["status"] == "optimal" and d["metrics"]["comm_time_s"] > 0
    json.dumps(d)  # plain JSON: no numpy values, no NaN
    full = exact.to_dict(inst)
    assert full["instance"]["hash"] == inst.content_hash()
    path = exact.save(tmp_path / "sol.json", inst)
    data = read_solution(path)
    assert data == json.loads(json.dumps(full))
    assert check_solution(inst.to_dict(), data) == []
    back = result_from_solution(data)
    assert back.status is Status.OPTIMAL and back.objective == exact.objective
    assert back.topology.link_list() == exact.topology.link_list()
