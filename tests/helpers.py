"""Helpers shared by the test modules (importable from any test folder: conftest.py puts
this folder on the path)."""

from __future__ import annotations

from topoopt_milp.core.check import check_solution
from topoopt_milp.core.evaluate import evaluate
from topoopt_milp.core.result import SolveResult, Status, finite_json, solution_dict


def checked(inst, result):
    """``result`` (a :class:`SolveResult`, or anything with ``topology``, ``routing`` and
    ``objective_s``) after asserting that its solution file passes the independent checker."""
    res = result
    if not isinstance(result, SolveResult):
        res = SolveResult("test", Status.FEASIBLE, result.objective_s, None, 0.0,
                          topology=result.topology, routing=result.routing)
    metrics = None if res.topology is None else evaluate(inst, res.topology, res.routing)
    problems = check_solution(inst.to_dict(), finite_json(solution_dict(res, inst, metrics)))
    assert problems == [], problems
    return result


# -- the fuzz corpus' counts per class, printed in pytest's terminal summary ----------------
FUZZ_SUMMARY: list[str] = []


def fuzz_summary(title: str, table: dict, columns: tuple[str, ...]) -> None:
    """Record (and print) one fuzz test's counts per class: ``table`` maps a class to a
    ``Counter``; ``columns`` are the counter keys shown. tests/conftest.py prints every
    recorded table at the end of the run (``pytest -q`` shows it, no ``-s`` needed)."""
    width = max([18, *(len(str(c)) for c in table)])
    head = f"{'class':<{width}} " + " ".join(f"{c:>10}" for c in columns)
    lines = [title, head]
    totals: dict[str, int] = {c: 0 for c in columns}
    for cls, counts in table.items():
        lines.append(f"{cls!s:<{width}} " + " ".join(f"{counts.get(c, 0):>10}" for c in columns))
        for c in columns:
            totals[c] += counts.get(c, 0)
    lines.append(f"{'total':<{width}} " + " ".join(f"{totals[c]:>10}" for c in columns))
    FUZZ_SUMMARY.append("\n".join(lines))
    print("\n" + FUZZ_SUMMARY[-1])
