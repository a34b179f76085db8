"""`compare`: one instance, several methods, each heuristic's gap to the best exact bound."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from topoopt_milp import registry
from topoopt_milp.bench.compare import compare_methods
from topoopt_milp.cli import main
from topoopt_milp.core.instance import make_instance

EXACT = "select-milp"


@pytest.fixture
def inst_path(tmp_path):
    inst = make_instance(8, 4, 100.0, allreduce=[(range(8), 4e8)],
                         mp=[(0, 4, 5e7), (2, 7, 2e7), (5, 1, 1e7)], name="cmp8")
    path = tmp_path / "cmp8.json"
    inst.save(path)
    return path


@pytest.mark.skipif(not registry.available(EXACT), reason=f"{EXACT} not available")
def test_compare_json_gaps_against_exact_bound(inst_path):
    r = CliRunner().invoke(main, ["compare", str(inst_path), "--methods",
                                  f"ring,totientperms,expander,{EXACT}", "--time-limit", "20",
                                  "--format", "json"])
    assert r.exit_code == 0, r.output
    rows = {row["method"]: row for row in json.loads(r.stdout)}
    assert set(rows) == {"ring", "totientperms", "expander", EXACT}
    exact = rows[EXACT]
    assert exact["status"] == "optimal"
    assert exact["gap_pct"] == pytest.approx(0, abs=1e-9)
    # select-milp's bound covers circulants with distinct coprime jumps and TotientPerms rings:
    # TotientPerms' solution lies in that space, the ring (jump 1 doubled) and the expander do
    # not, so they are measured against the analytic bound -- and no gap is ever negative
    assert rows["totientperms"]["bound_source"] == EXACT
    assert rows["totientperms"]["best_bound"] == pytest.approx(exact["objective"])
    for name in ("ring", "expander"):
        assert rows[name]["bound_source"] == "analytic", name
        assert "every topology" in rows[name]["bound_scope"]
    for row in rows.values():
        gap = 100 * (row["objective"] - row["best_bound"]) / row["objective"]
        assert row["gap_pct"] == pytest.approx(gap) and row["gap_pct"] >= 0


def test_compare_heuristics_only_uses_the_analytic_bound(inst_path):
    from topoopt_milp.core.instance import Instance

    df = compare_methods(Instance.load(inst_path), ["ring", "totientperms"], time_limit=5)
    assert list(df["method"]) == ["ring", "totientperms"]
    assert (df["bound_source"] == "analytic").all()
    assert (df["gap_pct"] > 0).all() and (df["status"] == "feasible").all()


def test_compare_markdown_and_user_errors(inst_path):
    r = CliRunner().invoke(main, ["compare", str(inst_path), "--methods", "ring"])
    assert r.exit_code == 0 and "| ring" in r.output and "gap [%]" in r.output
    r = CliRunner().invoke(main, ["compare", str(inst_path), "--methods", "ring,nope"])
    assert r.exit_code == 2 and "unknown method 'nope'" in r.output
