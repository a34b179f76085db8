"""The headline table (bench/headline.py) on real runs of the coopt and mixed families: LP
routing of a heuristic's own topology is never worse than its own routing, every gap is
measured against a bound that covers the solution, and the table compiles."""

from __future__ import annotations

from pathlib import Path

import pytest

from topoopt_milp.bench.headline import COLUMNS, headline, headline_table, summary_lines
from topoopt_milp.bench.report import write_report
from topoopt_milp.bench.runner import build_tasks, run_sweep
from topoopt_milp.bench.store import load_runs

REPO = Path(__file__).resolve().parents[1]
FILES = [REPO / "instances" / "mixed" / "mixed-n12-d4-g2-mp35.json",
         REPO / "instances" / "coopt" / "dlrm-n16-d4.json"]
METHODS = ("totientperms", "totientperms-lp", "topologyfinder", "topologyfinder-lp",
           "lower-bounds")


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    store = tmp_path_factory.mktemp("headline") / "runs.sqlite"
    summary = run_sweep(build_tasks(FILES, METHODS, 1, 30.0, {}), store, jobs=2, progress=False)
    assert summary.errors == 0
    return load_runs(store)


def test_one_row_per_instance_with_valid_gaps(runs):
    df = headline_table(runs)
    assert list(df.columns) == COLUMNS
    assert sorted(df["family"]) == ["coopt", "mixed"]
    for _, row in df.iterrows():
        for short in ("tf", "tp"):
            # LP routing on the heuristic's own topology and rings never loses to its routing
            assert row[f"{short}_lp_s"] <= row[f"{short}_s"] * (1 + 1e-6)
            assert row[f"{short}_routing_gap_pct"] >= 0
            assert 0 <= row[f"{short}_topology_gap_pct"] <= 100
        assert row["bound_s"] <= row["best_s"] * (1 + 1e-6)
        assert row["best_s"] <= min(row["tf_lp_s"], row["tp_lp_s"]) * (1 + 1e-9)
        # the bound covering a TotientPerms-ring solution comes from lower-bounds or the
        # analytic bounds, never from the fixed-topology scope of the -lp runs
        assert not str(row["bound_by"]).endswith("-lp")
    assert df.loc[df["family"] == "coopt", "workload"].iloc[0] == "dlrm"
    assert df.loc[df["family"] == "mixed", "workload"].iloc[0] == "mixed, MP 35%"


def test_summary_and_formats(runs, tmp_path, compile_latex):
    df = headline_table(runs)
    lines = summary_lines(df)
    assert lines[0].startswith("TopologyFinder's topology") and "(2 instances)" in lines[0]
    md = headline(runs, "md")
    assert "How far is TopoOpt from optimal" in md and "dlrm" in md
    written = write_report(runs, tmp_path, table_formats=("latex",), kinds=())
    tex = [p for p in written if p.name == "headline.tex"]
    assert tex and r"\label{tab:headline}" in tex[0].read_text()
    compile_latex([tex[0].read_text()])


def test_no_designed_family_gives_an_empty_table(runs):
    other = runs.assign(family="small")
    assert headline_table(other).empty
    assert summary_lines(headline_table(other)) == [
        "no co-optimized or mixed instance in the store"]
