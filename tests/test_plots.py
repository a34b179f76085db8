"""Figures: every kind writes a real PNG / PDF; performance ratios and the workload contract
checked by hand."""

from __future__ import annotations

import math

import pytest
from click.testing import CliRunner

from topoopt_milp.bench.plots import NoDataError, plot, profile_ratios, workload_rows
from topoopt_milp.bench.store import RunStore, load_runs
from topoopt_milp.cli import main


def _rec(key, inst, n, method, backend, status, obj, bound=None, rt=1.0, meta=None, gbps=100.0,
         it=None):
    return {
        "run_key": key, "instance_name": inst, "instance_hash": "h" + inst, "family": "f", "n": n,
        "degree": 4, "link_gbps": gbps, "instance_meta": meta or {}, "method": method,
        "method_problem": "x",
        "method_kind": "heuristic" if backend == "heuristic" else "exact",
        "method_backend": backend, "params": {}, "seed": 0, "status": status,
        "objective": obj, "bound": bound, "objective_kind": "comm_time", "runtime_s": rt,
        "metrics": {"lower_bound_s": 0.1, "iteration_time_s": it},
    }


@pytest.fixture
def store(tmp_path):
    recs = [
        _rec("1", "A", 8, "select-milp", "milp", "optimal", 1.0, 1.0, rt=0.2),
        _rec("2", "A", 8, "ring", "heuristic", "feasible", 2.0, rt=0.01),
        _rec("3", "B", 16, "select-milp", "milp", "feasible", 3.0, 2.0, rt=5.0),
        _rec("4", "B", 16, "ring", "heuristic", "feasible", 4.0, rt=0.02),
        _rec("5", "C", 16, "select-milp", "milp", "error", None, rt=None),
        _rec("6", "C", 16, "ring", "heuristic", "feasible", 1.0, rt=0.02),
        # workload rows: bandwidth from meta, or from link_gbps
        _rec("7", "W1", 16, "ring", "heuristic", "feasible", 0.5, meta={"workload": "dlrm",
             "bandwidth_gbps": 25.0}, it=0.8),
        _rec("8", "W2", 16, "ring", "heuristic", "feasible", 0.2, meta={"workload": "dlrm"},
             gbps=100.0, it=0.4),
    ]
    path = tmp_path / "runs.sqlite"
    with RunStore(path) as st:
        for r in recs:
            st.put(r)
    return path


def test_profile_ratios_by_hand(store):
    runs = load_runs(store)
    runs = runs[~runs["instance_name"].str.startswith("W")]
    r = profile_ratios(runs)
    assert r.loc["A", "select-milp"] == 1.0 and r.loc["A", "ring"] == 2.0
    assert r.loc["B", "ring"] == pytest.approx(4 / 3)
    assert math.isinf(r.loc["C", "select-milp"]) and r.loc["C", "ring"] == 1.0  # failure = inf
    rt = profile_ratios(runs, "runtime")
    assert rt.loc["A", "select-milp"] == pytest.approx(20.0)


def test_workload_contract(store):
    w = workload_rows(load_runs(store)).set_index("instance_name")
    assert list(w.index.sort_values()) == ["W1", "W2"]
    assert w.loc["W1", "bandwidth_gbps"] == 25.0 and w.loc["W2", "bandwidth_gbps"] == 100.0
    assert w.loc["W1", "iteration_time_s"] == 0.8


@pytest.mark.parametrize("kind", ["gap", "runtime", "profile", "iteration"])
@pytest.mark.parametrize("ext, magic", [("png", b"\x89PNG"), ("pdf", b"%PDF")])
def test_every_kind_writes_a_file(store, tmp_path, kind, ext, magic):
    out = tmp_path / f"{kind}.{ext}"
    plot(load_runs(store), kind, str(out))
    data = out.read_bytes()
    assert data.startswith(magic) and len(data) > 1000


def test_plot_cli_and_no_data(store, tmp_path):
    out = tmp_path / "p.png"
    r = CliRunner().invoke(main, ["plot", str(store), "--kind", "profile", "--out", str(out),
                                  "--measure", "runtime"])
    assert r.exit_code == 0, r.output
    assert out.read_bytes().startswith(b"\x89PNG")
    empty = tmp_path / "empty.sqlite"
    RunStore(empty).close()
    r = CliRunner().invoke(main, ["plot", str(empty), "--kind", "gap", "--out", str(out)])
    assert r.exit_code == 2 and "no runs" in r.output
    heuristics_only = load_runs(store)
    heuristics_only = heuristics_only[heuristics_only["instance_meta"].map(len) == 0]
    with pytest.raises(NoDataError, match="meta.workload"):
        plot(heuristics_only, "iteration", str(out))


def test_report_writes_every_table_and_figure(store, tmp_path):
    out = tmp_path / "results"
    r = CliRunner().invoke(main, ["report", str(store), "--out", str(out), "--figure-format", "png"])
    assert r.exit_code == 0, r.output
    names = sorted(p.name for p in out.iterdir())
    tables = [f"{t}.{e}" for t in ("instances", "gaps", "families") for e in ("md", "tex", "csv")]
    assert names == sorted(tables + [f"{k}.png" for k in ("gap", "runtime", "profile", "iteration")])
    assert r"\toprule" in (out / "gaps.tex").read_text()
    # Regenerating gives byte-identical tables (nothing depends on the time or the run order).
    first = {t: (out / t).read_text() for t in tables}
    CliRunner().invoke(main, ["report", str(store), "--out", str(out), "--figure-format", "png"])
    assert first == {t: (out / t).read_text() for t in tables}
