"""Gap tables: best bound, gap formula, seed aggregation, family summary (shifted geometric
mean), and the md / latex / csv renderings, all against hand-computed values."""

from __future__ import annotations

import io
import math
import re
import shutil
import subprocess

import pandas as pd
import pytest

from topoopt_milp.bench.store import RunStore, load_runs
from topoopt_milp.bench.tables import (
    best_bounds,
    family_table,
    instance_table,
    render,
    run_gaps,
    shifted_geomean,
    table,
    wide_table,
)
from topoopt_milp.cli import main


def _rec(key, inst, method, backend, status, obj, bound=None, seed=0, rt=1.0, lb=None, fam="f1", n=8):
    return {
        "run_key": key, "instance_name": inst, "instance_hash": "h" + inst, "family": fam, "n": n,
        "degree": 4, "link_gbps": 100.0, "instance_meta": {}, "method": method,
        "method_family": "heuristic" if backend == "heuristic" else "select", "method_backend": backend,
        "params": {}, "seed": seed, "status": status, "objective": obj, "bound": bound,
        "objective_kind": "comm_time", "runtime_s": rt,
        "metrics": None if lb is None else {"lower_bound_s": lb, "iteration_time_s": obj},
    }


RECORDS = [
    # instance A: an optimal exact run, a feasible exact run with a weaker bound, two ring seeds
    _rec("a1", "A", "select-milp", "milp", "optimal", 1.0, 1.0, rt=0.5, lb=0.5),
    _rec("a2", "A", "alloc-milp", "milp", "feasible", 1.2, 0.9, rt=10.0, lb=0.5),
    _rec("a3", "A", "ring", "heuristic", "feasible", 2.0, seed=0, rt=0.0, lb=0.5),
    _rec("a4", "A", "ring", "heuristic", "feasible", 1.5, seed=1, rt=3.0, lb=0.5),
    # instance B: heuristics only -> the analytic bound; one ring seed crashed
    _rec("b1", "B", "ring", "heuristic", "feasible", 4.0, seed=0, rt=1.0, lb=1.0, n=16),
    _rec("b2", "B", "ring", "heuristic", "error", None, seed=1, rt=None, n=16),
    # instance C (another family): an error row's bound must not count
    _rec("c1", "C", "select-milp", "milp", "error", None, 5.0, fam="f2"),
    _rec("c2", "C", "ring", "heuristic", "feasible", 2.0, lb=1.0, fam="f2"),
]


@pytest.fixture
def runs(tmp_path):
    path = tmp_path / "runs.sqlite"
    with RunStore(path) as st:
        for r in RECORDS:
            st.put(r)
    return load_runs(path)


def test_shifted_geomean_formula():
    assert shifted_geomean([0.0, 3.0, 1.0]) == pytest.approx(1.0)  # (1*4*2)^(1/3) - 1
    assert shifted_geomean([2.0]) == pytest.approx(2.0)
    assert shifted_geomean([0.0, 8.0], shift=1.0) == pytest.approx(2.0)  # sqrt(1*9) - 1
    assert math.isnan(shifted_geomean([]))


def test_best_bound_sources(runs):
    bb = best_bounds(runs).set_index("instance_hash")
    assert bb.loc["hA", "best_bound"] == 1.0 and bb.loc["hA", "bound_source"] == "select-milp"
    assert bb.loc["hB", "best_bound"] == 1.0 and bb.loc["hB", "bound_source"] == "analytic"
    assert bb.loc["hC", "bound_source"] == "analytic"  # the error row's 5.0 is ignored
    only_alloc = best_bounds(runs, bound_methods=["alloc-milp"]).set_index("instance_hash")
    assert only_alloc.loc["hA", "best_bound"] == 0.9
    no_lb = best_bounds(runs, analytic=False)
    assert set(no_lb["instance_hash"]) == {"hA"}


def test_run_gaps(runs):
    g = run_gaps(runs).set_index("run_key")["gap_pct"]
    assert g["a1"] == pytest.approx(0.0)
    assert g["a2"] == pytest.approx(100 * 0.2 / 1.2)
    assert g["a3"] == pytest.approx(50.0) and g["a4"] == pytest.approx(100 / 3)
    assert g["b1"] == pytest.approx(75.0)
    assert math.isnan(g["b2"]) and math.isnan(g["c1"])


def test_instance_table_aggregates_seeds(runs):
    t = instance_table(runs)
    ring_a = t[(t.instance == "A") & (t.method == "ring")].iloc[0]
    assert ring_a["seeds"] == 2 and ring_a["status"] == "feasible"
    assert ring_a["objective"] == pytest.approx(1.75) and ring_a["objective_min"] == 1.5
    assert ring_a["gap_pct"] == pytest.approx((50 + 100 / 3) / 2)
    assert ring_a["runtime_s"] == pytest.approx(1.5)
    ring_b = t[(t.instance == "B") & (t.method == "ring")].iloc[0]
    assert ring_b["status"] in ("feasible 1, error 1", "error 1, feasible 1")
    assert ring_b["objective"] == 4.0 and ring_b["bound_source"] == "analytic"
    assert list(t["instance"]) == ["A", "A", "A", "B", "C", "C"]  # family, then n


def test_family_table(runs):
    f = family_table(runs).set_index(["family", "method"])
    ring = f.loc[("f1", "ring")]
    assert (ring["instances"], ring["runs"], ring["optimal"], ring["errors"]) == (2, 4, 0, 1)
    assert ring["mean_gap_pct"] == pytest.approx((50 + 100 / 3 + 75) / 3)
    assert ring["max_gap_pct"] == pytest.approx(75.0)
    assert ring["sgm_runtime_s"] == pytest.approx(1.0)  # runtimes 0, 3, 1 with shift 1
    assert f.loc[("f1", "select-milp"), "optimal"] == 1
    assert f.loc[("f2", "select-milp"), "errors"] == 1


def test_latex_booktabs_and_escaping(runs):
    tex = table(runs, "instance", "latex")
    for cmd in (r"\toprule", r"\midrule", r"\bottomrule", r"\begin{table}", r"\end{table}",
                r"\begin{tabular}", r"\end{tabular}", r"\caption{"):
        assert tex.count(cmd) == 1, cmd
    assert r"gap\_pct" in tex and "select-milp" in tex
    assert not re.search(r"(?<!\\)[_%#]", tex), "unescaped LaTeX special character"
    rows = [ln for ln in tex.splitlines() if ln.endswith(r"\\")]
    assert len(rows) == 1 + len(instance_table(runs))  # header + one line per row
    assert all(ln.count("&") == rows[0].count("&") for ln in rows)


def test_markdown_and_csv(runs):
    md = table(runs, "family", "md")
    lines = md.strip().splitlines()
    assert lines[0].startswith("| family") and len(lines) == 2 + len(family_table(runs))
    assert "52.78" in md  # mean gap of ring in f1, 2 decimals
    csv = table(runs, "family", "csv")
    back = pd.read_csv(io.StringIO(csv))
    assert back["mean_gap_pct"].iloc[list(back["method"]).index("ring")] == pytest.approx(
        (50 + 100 / 3 + 75) / 3)
    with pytest.raises(ValueError, match="format"):
        render(family_table(runs), "html")


def test_table_cli(runs, tmp_path):
    from click.testing import CliRunner

    store = tmp_path / "runs.sqlite"
    r = CliRunner().invoke(main, ["table", str(store), "--by", "instance", "--format", "csv"])
    assert r.exit_code == 0, r.output
    assert pd.read_csv(io.StringIO(r.output)).shape[0] == len(instance_table(runs))
    out = tmp_path / "t.tex"
    r = CliRunner().invoke(main, ["table", str(store), "--format", "latex", "--out", str(out),
                                  "--bound-methods", "select-milp"])
    assert r.exit_code == 0 and r"\toprule" in out.read_text()
    r = CliRunner().invoke(main, ["table", str(tmp_path / "missing.sqlite")])
    assert r.exit_code == 2 and "no such file" in r.output


def test_wide_table(runs):
    w = wide_table(runs).set_index("instance")
    assert list(w.columns) == ["family", "n", "best_bound", "bound_source",
                               "alloc-milp", "ring", "select-milp"]
    assert w.loc["A", "ring"] == pytest.approx((50 + 100 / 3) / 2)
    assert w.loc["A", "select-milp"] == pytest.approx(0.0)
    assert math.isnan(w.loc["B", "select-milp"])  # never run there
    assert w.loc["B", "best_bound"] == 1.0 and w.loc["B", "bound_source"] == "analytic"
    no_bound = wide_table(runs, "objective", analytic=False).set_index("instance")
    assert math.isnan(no_bound.loc["B", "best_bound"]) and no_bound.loc["B", "ring"] == 4.0
    tex = table(runs, "instance", "latex", wide="gap_pct")
    assert r"\toprule" in tex and "ring" in tex and "41.67" in tex
    assert not re.search(r"(?<!\\)[_%#]", tex), "unescaped LaTeX special (the caption says [%])"
    with pytest.raises(ValueError, match="value"):
        wide_table(runs, "bound")


@pytest.mark.skipif(shutil.which("pdflatex") is None, reason="pdflatex not installed")
def test_latex_tables_compile(runs, tmp_path):
    parts = [table(runs, "instance", "latex"), table(runs, "family", "latex"),
             table(runs, "instance", "latex", wide="gap_pct")]
    doc = ("\\documentclass{article}\n\\usepackage{booktabs}\n\\begin{document}\n\\tiny\n"
           + "\n".join(parts) + "\\end{document}\n")
    (tmp_path / "doc.tex").write_text(doc)
    r = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "doc.tex"],
                       cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout[-2000:]
    assert (tmp_path / "doc.pdf").stat().st_size > 1000
