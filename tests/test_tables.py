"""Gap tables: best bound, gap formula, seed aggregation, family summary (shifted geometric
mean), and the md / latex / csv renderings, all against hand-computed values."""

from __future__ import annotations

import io
import math
import re

import pandas as pd
import pytest

from topoopt_milp.bench.gaps import bound_candidates, run_gaps
from topoopt_milp.bench.store import RunStore, load_runs
from topoopt_milp.bench.tables import (
    family_table,
    instance_table,
    render,
    shifted_geomean,
    wide_table,
)
from topoopt_milp.bench.views import table
from topoopt_milp.cli import main
from topoopt_milp.core.scope import Scope

ANY_TOTIENT = Scope(rings="totient").to_dict()
CIRCULANT = Scope(topology="circulant", candidates=(1, 3), rings="totient").to_dict()
RESTRICTED = Scope(routing="restricted", detail="k paths").to_dict()


def _feat(jumps=(1, 3), totient=True):
    return {"topology_hash": "t", "jumps": None if jumps is None else list(jumps),
            "max_multiplicity": 1, "rings_totient": totient, "orders_per_group": 2,
            "rings_hash": "r"}


def _rec(key, inst, method, backend, status, obj, bound=None, seed=0, rt=1.0, lb=None, fam="f1",
         n=8, scope=None, feat=None, kind=None):
    kind = kind or ("heuristic" if backend == "heuristic" else "exact")
    return {
        "run_key": key, "instance_name": inst, "instance_hash": "h" + inst, "family": fam, "n": n,
        "degree": 4, "link_gbps": 100.0, "instance_meta": {}, "method": method,
        "method_problem": "select", "method_kind": kind, "method_backend": backend,
        "params": {}, "seed": seed, "status": status, "objective": obj, "bound": bound,
        "objective_kind": "comm_time", "runtime_s": rt, "scope": scope,
        "features": feat if feat is not None else (_feat() if obj is not None else None),
        "metrics": None if lb is None else {"lower_bound_s": lb, "iteration_time_s": obj},
    }


RECORDS = [
    # instance A: an optimal circulant bound, a weaker bound on every topology, two ring seeds
    _rec("a1", "A", "select-milp", "milp", "optimal", 1.0, 1.0, rt=0.5, lb=0.5, scope=CIRCULANT),
    _rec("a2", "A", "alloc-milp", "milp", "feasible", 1.2, 0.9, rt=10.0, lb=0.5, scope=ANY_TOTIENT,
         feat=_feat(jumps=None)),
    _rec("a3", "A", "ring", "heuristic", "feasible", 2.0, seed=0, rt=0.0, lb=0.5),
    _rec("a4", "A", "ring", "heuristic", "feasible", 1.5, seed=1, rt=3.0, lb=0.5),
    # not a circulant: only the alloc-milp bound (0.9) and the analytic one cover it
    _rec("a5", "A", "expander", "heuristic", "feasible", 1.8, lb=0.5, feat=_feat(jumps=None)),
    # rings outside the TotientPerms orders: only the analytic bound covers it
    _rec("a6", "A", "joint-milp", "milp", "feasible", 0.95, lb=0.5, feat=_feat(None, False),
         scope=Scope(rings="orders", rings_per_group=2).to_dict()),
    # a restricted model's bound above everyone's objective: it must bound nothing but itself
    _rec("a7", "A", "alloc-cpsat", "cpsat", "feasible", 2.5, 2.4, lb=0.5, scope=RESTRICTED,
         kind="restricted", feat=_feat(jumps=None)),
    # instance B: heuristics only -> the analytic bound; one ring seed crashed
    _rec("b1", "B", "ring", "heuristic", "feasible", 4.0, seed=0, rt=1.0, lb=1.0, n=16),
    _rec("b2", "B", "ring", "heuristic", "error", None, seed=1, rt=None, n=16),
    # instance C (another family): an error row's bound must not count
    _rec("c1", "C", "select-milp", "milp", "error", None, 5.0, fam="f2", scope=CIRCULANT),
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


def test_bound_candidates_skip_errors_and_keep_scopes(runs):
    c = bound_candidates(runs)
    assert set(c[c.instance_hash == "hC"]["source"]) == {"analytic"}  # error row's 5.0 ignored
    assert set(c[c.instance_hash == "hA"]["source"]) == {"select-milp", "alloc-milp",
                                                       "alloc-cpsat", "analytic"}
    assert set(bound_candidates(runs, analytic=False)["source"]) == {"select-milp", "alloc-milp",
                                                                     "alloc-cpsat"}


def test_run_gaps_use_only_covering_bounds(runs):
    g = run_gaps(runs).set_index("run_key")
    gap, src = g["gap_pct"], g["bound_source"]
    assert gap["a1"] == pytest.approx(0.0) and src["a1"] == "select-milp"
    # alloc-milp's own solution is no circulant: select-milp's 1.0 does not cover it
    assert src["a2"] == "alloc-milp" and gap["a2"] == pytest.approx(100 * 0.3 / 1.2)
    assert src["a3"] == "select-milp"
    assert gap["a3"] == pytest.approx(50.0) and gap["a4"] == pytest.approx(100 / 3)
    assert src["a5"] == "alloc-milp" and gap["a5"] == pytest.approx(50.0)
    # joint-milp's free rings lie outside both ring spaces (a 1.0 bound would give a negative gap)
    assert src["a6"] == "analytic" and gap["a6"] == pytest.approx(100 * 0.45 / 0.95)
    # the restricted model's 2.4 bounds nobody, itself included by default
    assert src["a7"] == "alloc-milp" and (gap.drop("a7").dropna() >= 0).all()
    assert g["ratio"]["a3"] == pytest.approx(2.0)
    assert gap["b1"] == pytest.approx(75.0)
    assert math.isnan(gap["b2"]) and math.isnan(gap["c1"])
    only_alloc = run_gaps(runs, bound_methods=["alloc-milp"]).set_index("run_key")
    assert only_alloc["bound_source"]["a3"] == "alloc-milp"
    no_lb = run_gaps(runs, analytic=False).set_index("run_key")
    assert math.isnan(no_lb["gap_pct"]["b1"]) and math.isnan(no_lb["gap_pct"]["a6"])


def test_negative_gap_is_an_error_not_a_number():
    bad = pd.DataFrame([
        _rec("x1", "X", "alloc-milp", "milp", "feasible", 1.0, 1.5, scope=ANY_TOTIENT),
        _rec("x2", "X", "ring", "heuristic", "feasible", 1.2),
    ])
    g = run_gaps(bad).set_index("run_key")
    assert math.isnan(g["gap_pct"]["x2"]) and "exceeds the objective" in g["gap_error"]["x2"]
    assert family_table(bad).set_index("method").loc["ring", "gap_errors"] == 1


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
    assert "every topology" in ring_b["bound_scope"]
    assert list(t["instance"]) == ["A"] * 6 + ["B", "C", "C"]  # family, then n


def test_family_table(runs):
    f = family_table(runs).set_index(["family", "method"])
    ring = f.loc[("f1", "ring")]
    assert (ring["instances"], ring["runs"], ring["optimal"], ring["error"]) == (2, 4, 0, 1)
    assert ring["feasible"] == 3 and ring["infeasible"] == 0 and ring["no_solution"] == 0
    assert ring["bound_sources"] == "select-milp 2, analytic 1"
    assert ring["mean_gap_pct"] == pytest.approx((50 + 100 / 3 + 75) / 3)
    assert ring["max_gap_pct"] == pytest.approx(75.0)
    assert ring["sgm_runtime_s"] == pytest.approx(1.0)  # runtimes 0, 3, 1 with shift 1
    assert f.loc[("f1", "select-milp"), "optimal"] == 1
    assert f.loc[("f2", "select-milp"), "error"] == 1
    # a restricted model proving its own optimum is not counted as optimal
    assert f.loc[("f1", "alloc-cpsat"), "optimal"] == 0


def _tex_body(tex: str) -> str:
    """The LaTeX lines without comments (the header comment, a "}%" line end)."""
    return "\n".join(ln.removesuffix("%") for ln in tex.splitlines() if not ln.startswith("%"))


def test_latex_booktabs_and_escaping(runs):
    tex = table(runs, "instance", "latex")
    # one float per family, each with booktabs rules, a caption and a label
    for cmd in (r"\toprule", r"\midrule", r"\bottomrule", r"\begin{tabular}{", r"\caption{"):
        assert tex.count(cmd) == 2, cmd
    assert r"\label{tab:instances-f1}" in tex and r"\label{tab:instances-f2}" in tex
    assert "Family f1." in tex and "whose scope contains the solution" in tex
    assert r"gap\_pct" not in tex and r"gap \\ {[}\%{]}" in tex  # human headers with units
    assert "select-milp" in tex
    assert not re.search(r"(?<!\\)[_%#]", _tex_body(tex)), "unescaped LaTeX special character"
    rows = [ln for ln in tex.splitlines() if ln.endswith(r"\\") and "&" in ln
            and not ln.startswith(r"\begin{tabular}[b]")]
    assert len(rows) == 2 + len(instance_table(runs))  # a header per table + one line per row
    assert all(ln.count(" & ") == rows[0].count(" & ") for ln in rows)
    fam = table(runs, "family", "latex")
    assert fam.count(r"\caption{") == 1 and r"\label{tab:families}" in fam
    assert r"\multicolumn{" in fam and r"\textit{f2}" in fam  # family heading rows
    for status in ("optimal", "feasible", "infeasible", "no_solution", "error"):
        assert status in family_table(runs).columns  # every status has its column


def test_markdown_and_csv(runs):
    md = table(runs, "family", "md")
    lines = md.strip().splitlines()
    assert "whose scope contains the solution" in lines[0]  # the caption names the bounds
    assert lines[2].startswith("| family") and len(lines) == 4 + len(family_table(runs))
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
    w, key = wide_table(runs)
    w = w.set_index("instance")
    assert list(w.columns) == ["family", "n", "alloc-cpsat", "alloc-milp", "expander",
                               "joint-milp", "ring", "select-milp"]
    assert w.loc["A", "ring"] == pytest.approx((50 + 100 / 3) / 2)
    assert w.loc["A", "select-milp"] == pytest.approx(0.0)
    assert math.isnan(w.loc["B", "select-milp"])  # never run there
    letters = key["legend"]
    assert letters[key["cells"][("f1", "A", "ring")]].startswith("select-milp [circulants")
    assert letters[key["cells"][("f1", "A", "joint-milp")]].startswith("analytic")
    no_bound, _ = wide_table(runs, "objective", analytic=False)
    assert no_bound.set_index("instance").loc["B", "ring"] == 4.0
    tex = table(runs, "instance", "latex", wide="gap_pct")
    assert r"\toprule" in tex and "ring" in tex and "41.67" in tex and r"\textsuperscript{" in tex
    assert not re.search(r"(?<!\\)[_%#]", _tex_body(tex)), "unescaped LaTeX special ([%])"
    assert r"\label{tab:gaps-f1}" in tex and r"\label{tab:gaps-f2}" in tex
    f2 = tex[tex.index("tab:gaps-f2"):]
    # f2 ran ring only (select-milp errored): its table has no empty method columns, and one
    # bound (the analytic one) is named in the caption instead of a letter on every cell
    assert "alloc-milp" not in f2 and r"\textsuperscript" not in f2
    assert "measured against one bound: analytic" in tex
    md = table(runs, "instance", "md", wide="gap_pct")
    assert "A letter names the bound: a = " in md and "41.67 (" in md
    with pytest.raises(ValueError, match="value"):
        wide_table(runs, "bound")


def test_latex_tables_compile(runs, compile_latex):
    compile_latex([table(runs, "instance", "latex"), table(runs, "family", "latex"),
                   table(runs, "instance", "latex", wide="gap_pct")])


def test_bounds_only_runs_count_as_bound_not_no_solution():
    # lower-bounds (backend analytic) returns a bound and never a solution: the status columns
    # say "bound"; an exact method that found nothing in time still says "no_solution"
    recs = [_rec(f"l{i}", inst, "lower-bounds", "analytic", "no_solution", None, 0.4,
                 scope=ANY_TOTIENT) for i, inst in enumerate("PQR")]
    recs += [_rec("m1", "P", "alloc-milp", "milp", "no_solution", None, 0.3, scope=ANY_TOTIENT),
             _rec("m2", "Q", "ring", "heuristic", "feasible", 1.0, lb=0.2),
             # a bounds-only run that returned no bound is no bound
             _rec("l9", "S", "lower-bounds", "analytic", "no_solution", None, None)]
    runs = pd.DataFrame(recs)
    f = family_table(runs).set_index("method")
    assert (f.loc["lower-bounds", "bound_only"], f.loc["lower-bounds", "no_solution"]) == (3, 1)
    assert (f.loc["alloc-milp", "bound_only"], f.loc["alloc-milp", "no_solution"]) == (0, 1)
    assert f.loc["ring", "feasible"] == 1 and f.loc["ring", "bound_only"] == 0
    t = instance_table(runs).set_index(["instance", "method"])
    assert t.loc[("P", "lower-bounds"), "status"] == "bound"
    assert t.loc[("S", "lower-bounds"), "status"] == "no_solution"
    assert t.loc[("P", "alloc-milp"), "status"] == "no_solution"
    # the lower-bounds bound still bounds the heuristic's run
    assert t.loc[("Q", "ring"), "best_bound"] == pytest.approx(0.4)
    md = table(runs, "family", "md")
    header = next(ln for ln in md.splitlines() if ln.startswith("| family"))
    cells = [c.strip() for c in header.strip("|").split("|")]
    assert "bound" in cells and "no solution" in cells
    row = next(ln for ln in md.splitlines() if "lower-bounds" in ln)
    values = [c.strip() for c in row.strip("|").split("|")]
    assert values[cells.index("bound")] == "3" and values[cells.index("no solution")] == "1"
