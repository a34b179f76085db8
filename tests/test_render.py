"""Table text: names from instance files cannot change a table's structure (Markdown rows,
LaTeX compilation, CSV formulas); LaTeX tables fit the page whatever their size (compiled);
JSON output; every table of the committed run store compiles without overflow."""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

import pandas as pd
import pytest

from topoopt_milp.bench.render import (
    ROWS_PORTRAIT,
    cell_text,
    csv_safe,
    estimated_width_pt,
    latex_escape,
    md_escape,
    render,
)
from topoopt_milp.bench.store import RunStore, load_runs
from topoopt_milp.bench.tables import family_table, instance_table
from topoopt_milp.bench.views import table
from topoopt_milp.cli import main
from topoopt_milp.core.scope import Scope

EVIL = "x|y\nz | ^~ $&%#_{}\\ [a] *--- <b> `c` é中 =1+1"
REPO = Path(__file__).resolve().parents[1]


def _rec(key, inst, method, status, obj, bound=None, fam="fam", n=8, lb=0.5, scope=None, seed=0):
    return {
        "run_key": key, "instance_name": inst, "instance_hash": "h" + inst, "family": fam, "n": n,
        "degree": 4, "link_gbps": 100.0, "instance_meta": {}, "method": method,
        "method_problem": "alloc", "method_kind": "heuristic" if bound is None else "exact",
        "method_backend": "heuristic" if bound is None else "milp", "params": {}, "seed": seed,
        "status": status, "objective": obj, "bound": bound, "objective_kind": "comm_time",
        "runtime_s": 0.5, "scope": scope,
        "features": None if obj is None else {"topology_hash": "t", "jumps": None,
                                              "max_multiplicity": 1, "rings_totient": True,
                                              "orders_per_group": 2, "rings_hash": "r"},
        "metrics": {"lower_bound_s": lb},
    }


def _store(tmp_path, records) -> pd.DataFrame:
    path = tmp_path / "runs.sqlite"
    with RunStore(path) as st:
        for r in records:
            st.put(r)
    return load_runs(path)


@pytest.fixture
def evil_runs(tmp_path):
    """Names with every special character, in a family named with specials too."""
    any_topo = Scope(rings="totient").to_dict()
    return _store(tmp_path, [
        _rec("e1", EVIL, "alloc-milp", "optimal", 1.0, 1.0, fam="f^~|1", scope=any_topo),
        _rec("e2", EVIL, "ring", "feasible", 2.0, fam="f^~|1"),
        _rec("e3", "-2+3", "ring", "feasible", 1.5, fam="=cmd|' /C calc'!A0"),
        _rec("e4", "@SUM(A1)", "ring", "infeasible", None, fam="=cmd|' /C calc'!A0"),
    ])


@pytest.fixture
def big_runs(tmp_path):
    """One family of 60 instances x 3 methods with long names (rotated, split tables) and a
    small one (upright)."""
    recs = []
    for i in range(60):
        name = f"a-rather-long-instance-name-{i}-n{8 + i}-d4"
        for m, obj in (("ring", 2.0), ("expander", 1.5), ("topologyfinder", 1.25)):
            recs.append(_rec(f"{i}{m}", name, m, "feasible", obj + i, fam="big", n=8 + i))
    recs += [_rec("s1", "s-n8", "ring", "feasible", 1.0, fam="small"),
             _rec("s2", "s-n8", "expander", "no_solution", None, fam="small")]
    return _store(tmp_path, recs)


def _md_rows(md: str) -> list[list[str]]:
    """Cells of a GitHub pipe table: split on unescaped ``|`` (a ``\\`` escapes one char)."""
    rows = []
    for line in md.splitlines():
        if not line.startswith("|"):
            continue
        cells, cur, k = [], "", 0
        while k < len(line):
            if line[k] == "\\" and k + 1 < len(line):
                cur += line[k:k + 2]
                k += 2
                continue
            if line[k] == "|":
                cells.append(cur)
                cur = ""
            else:
                cur += line[k]
            k += 1
        rows.append(cells[1:])
    return rows


def test_markdown_names_cannot_add_cells_or_rows(evil_runs):
    for text in (table(evil_runs, "instance", "md"), table(evil_runs, "family", "md"),
                 table(evil_runs, "instance", "md", wide="gap_pct")):
        rows = _md_rows(text)
        assert len({len(r) for r in rows}) == 1, "a name added a cell"
        body = [ln for ln in text.splitlines() if ln.startswith("|")]
        assert len(body) == len(rows)
    md = table(evil_runs, "instance", "md")
    assert len(_md_rows(md)) == 2 + len(instance_table(evil_runs))  # header, rule, rows
    assert md_escape("a|b\nc") == "a\\|b c" and md_escape("\\|") == "\\\\\\|"
    assert md_escape("[x](http://e) <script>") == "\\[x\\](http://e) \\<script\\>"


def test_latex_escapes_every_special():
    tex = latex_escape(EVIL)
    assert "\n" not in tex and "é" not in tex and "中" not in tex and "{[}U+4E2D{]}" in tex
    for ch in "^~|<>":
        assert ch not in tex.replace(r"\textasciicircum{}", "").replace(
            r"\textasciitilde{}", "").replace(r"\textbar{}", "").replace(
            r"\textless{}", "").replace(r"\textgreater{}", "")
    assert not re.search(r"(?<!\\)[_%#&$]", tex)
    assert "---" not in tex and "-{}-{}-" in tex  # no en/em dash ligature


def test_latex_with_hostile_names_compiles(evil_runs, compile_latex):
    compile_latex([table(evil_runs, "instance", "latex"), table(evil_runs, "family", "latex"),
                   table(evil_runs, "instance", "latex", wide="gap_pct"),
                   render(pd.DataFrame({EVIL: [EVIL], "x": [1.0]}), "latex", caption=EVIL,
                          label="tab:" + EVIL)])


def test_csv_cannot_start_a_formula(evil_runs):
    for text in (table(evil_runs, "instance", "csv"), table(evil_runs, "family", "csv"),
                 table(evil_runs, "instance", "csv", wide="gap_pct")):
        for row in csv.reader(io.StringIO(text)):
            for cell in row:
                assert not cell.startswith(("=", "+", "-", "@")), cell
    back = pd.read_csv(io.StringIO(table(evil_runs, "instance", "csv")))
    assert set(back["instance"]) == {"'-2+3", "'@SUM(A1)", "'" + EVIL if EVIL[0] in "=+-@" else EVIL}
    assert csv_safe(-1.5) == -1.5 and csv_safe("-x") == "'-x" and csv_safe("x-") == "x-"


def test_json_format(evil_runs):
    recs = json.loads(table(evil_runs, "instance", "json"))
    assert {r["instance"] for r in recs} == {EVIL, "-2+3", "@SUM(A1)"}  # JSON needs no escaping
    infeasible = next(r for r in recs if r["instance"] == "@SUM(A1)")
    assert infeasible["objective"] is None and infeasible["status"] == "infeasible"
    fam = json.loads(table(evil_runs, "family", "json"))
    assert sum(r["infeasible"] for r in fam) == 1
    wide = json.loads(table(evil_runs, "instance", "json", wide="gap_pct"))
    assert any(r.get("ring bound", "").startswith("alloc-milp") for r in wide)


def test_cells_never_read_minus_zero():
    assert cell_text(-1e-9, "{:.2f}") == "0.00" and cell_text(-0.0, "{:.3f}") == "0.000"
    assert cell_text(-0.5, "{:.2f}") == "-0.50" and cell_text(float("nan"), "{:.2f}") == "-"


def test_big_tables_are_rotated_and_split(big_runs, compile_latex):
    tex = table(big_runs, "instance", "latex")
    big = tex[:tex.index("tab:instances-small")]
    assert "sidewaystable" in big  # too wide for the portrait text width
    assert big.count(r"\caption[]{(continued)}") >= 180 // ROWS_PORTRAIT
    small = tex[:tex.index("tab:instances-small")]
    assert small.rindex(r"\begin{table}[htbp]") > small.rindex("sidewaystable")  # upright
    gaps = table(big_runs, "instance", "latex", wide="objective")
    logs = compile_latex([tex, gaps, table(big_runs, "family", "latex")])
    # the width estimate is right: the \resizebox guard shrinks by 5 % at most
    for w, line in re.findall(r"table of ([\d.]+)pt scaled to ([\d.]+)pt", "".join(logs)):
        assert float(w) <= 1.05 * float(line)


def test_width_estimate_matches_pdflatex(big_runs, tmp_path, compile_latex):
    df = family_table(big_runs)
    tex = render(df, "latex", caption="c", label="tab:w")
    tex = tex.replace(r"\ifdim\wd\topooptbox", r"\typeout{WIDTH \the\wd\topooptbox}\ifdim\wd\topooptbox")
    (log,) = compile_latex([tex])
    measured = float(re.search(r"WIDTH ([\d.]+)pt", log).group(1))
    assert estimated_width_pt(df) == pytest.approx(measured, rel=0.02)


def test_table_cli_json_and_labels(evil_runs, tmp_path):
    from click.testing import CliRunner

    store = tmp_path / "runs.sqlite"
    r = CliRunner().invoke(main, ["table", str(store), "--format", "json", "--by", "family"])
    assert r.exit_code == 0, r.output
    assert {row["method"] for row in json.loads(r.output)} == {"alloc-milp", "ring"}
    r = CliRunner().invoke(main, ["table", str(store), "--format", "latex", "--wide", "ratio",
                                  "--label", "tab:mine"])
    assert r.exit_code == 0 and r"\label{tab:mine-f-1}" in r.output


@pytest.mark.skipif(not (REPO / "results" / "runs.sqlite").exists(), reason="no committed store")
def test_committed_store_tables_compile(tmp_path, compile_latex):
    """Every .tex that `reproduce` writes, regenerated from the committed run store."""
    import shutil

    from topoopt_milp.bench.report import write_report

    store = tmp_path / "runs.sqlite"  # a copy: opening a store may upgrade its schema
    shutil.copy(REPO / "results" / "runs.sqlite", store)
    written = write_report(load_runs(store), tmp_path / "out", table_formats=("latex",), kinds=())
    assert sorted(p.name for p in written) == ["families.tex", "gaps.tex", "headline.tex",
                                             "instances.tex"]
    compile_latex([p.read_text() for p in written])
