"""The solution file's text (core/result.py ``solution_text``): the same JSON object as
``finite_json(solution_dict(...))``, the text the checker is shown is the text written, and
the memo never hands back the text of another result."""

from __future__ import annotations

import json
import math

import numpy as np

from topoopt_milp.core.check import check_solution
from topoopt_milp.core.result import (
    finite_json,
    read_solution,
    solution_dict,
    solution_text,
    write_solution,
)
from topoopt_milp.pipeline import solve_checked
from topoopt_milp.workloads import generators


def _solved():
    inst = generators.sparse(8, 4, pairs=8, groups=1, group_size=4, seed=3)
    return inst, solve_checked(inst, "ring")


def test_text_is_the_object_of_solution_dict(tmp_path):
    inst, res = _solved()
    text = solution_text(res, inst)
    assert json.loads(text) == json.loads(json.dumps(finite_json(
        solution_dict(res, inst, res.metrics))))
    write_solution(tmp_path / "s.json", res, inst)
    assert (tmp_path / "s.json").read_text() == text
    assert read_solution(tmp_path / "s.json")["status"] == res.status.value
    assert check_solution(inst.to_dict(), json.loads(text)) == []
    # one commodity per line: the file stays readable (and diffable) line by line
    lines = text.splitlines()
    assert sum('"src":' in ln for ln in lines) == len(res.routing.to_dict()["commodities"])


def test_non_finite_and_numpy_values_are_written_as_json():
    inst, res = _solved()
    odd = res.with_(info={"inf": math.inf, "nan": math.nan, "np": np.float64(2.5),
                          "npint": np.int64(3), "keys": {1: "a", 2.5: "b"}})
    data = json.loads(solution_text(odd, inst))
    assert data["info"]["inf"] is None and data["info"]["nan"] is None
    assert data["info"]["np"] == 2.5 and data["info"]["npint"] == 3
    assert data["info"]["keys"] == {"1": "a", "2.5": "b"}


def test_memo_is_by_identity():
    inst, res = _solved()
    first = solution_text(res, inst)
    other = res.with_(message="another result")
    assert '"another result"' in solution_text(other, inst)
    assert solution_text(res, inst) == first
    assert '"another result"' not in solution_text(res, inst)
    # other metrics given for the same result: a new text
    changed = dict(res.metrics, comm_time_s=123.0)
    assert json.loads(solution_text(res, inst, changed))["metrics"]["comm_time_s"] == 123.0


def test_checker_walk_names_non_finite_numbers():
    # the C-encoder fast path only says "all finite"; when it fails the walk names each one
    inst, res = _solved()
    data = json.loads(solution_text(res, inst))
    data["objective"] = math.nan
    data["metrics"]["comm_time_s"] = math.inf
    problems = check_solution(inst.to_dict(), data)
    assert any(p.startswith("objective: non-finite") for p in problems)
    assert any(p.startswith("metrics.comm_time_s: non-finite") for p in problems)
