"""Figures: every kind writes a real PNG / PDF; performance ratios and the workload contract
checked by hand."""

from __future__ import annotations

import math

import pandas as pd
import pytest
from click.testing import CliRunner

from topoopt_milp import registry
from topoopt_milp.bench.plots import (
    NoDataError,
    choose_axes,
    coinciding,
    instance_parameters,
    method_style,
    plot,
    profile_ratios,
    workload_rows,
)
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
@pytest.mark.parametrize("ext, magic", [("png", b"\x89PNG"), ("pdf", b"%PDF"), ("svg", b"<?xml")])
def test_every_kind_writes_a_file(store, tmp_path, kind, ext, magic):
    out = tmp_path / f"{kind}.{ext}"
    written = plot(load_runs(store), kind, str(out))
    data = out.read_bytes()
    assert data.startswith(magic) and len(data) > 1000
    # a PNG gets its vector twin beside it
    assert written == ([out, out.with_suffix(".pdf")] if ext == "png" else [out])
    assert all(p.stat().st_size > 1000 for p in written)


def _params(rows):
    cols = ["n", "degree", "link_gbps", "instance_meta"]
    return instance_parameters(pd.DataFrame([dict(zip(cols, r, strict=True)) for r in rows]))


def test_x_axis_is_the_parameter_that_varies():
    # bandwidth family: n fixed, five link rates
    x, panel = choose_axes(_params([(16, 4, b, {}) for b in (10, 25, 40, 100, 200)]))
    assert (x.key, panel) == ("link_gbps", None)
    # dnn: n and d both vary, each n at both d: x = n, one panel per d
    x, panel = choose_axes(_params([(n, d, 100, {}) for n in (16, 128) for d in (4, 8)]))
    assert (x.key, panel.key) == ("n", "degree")
    # n and d vary together (d = 8 only at n = 128): no panel of a single point
    x, panel = choose_axes(_params([(16, 4, 100, {}), (16, 4, 100, {}), (128, 8, 100, {})]))
    assert (x.key, panel) == ("n", None)
    # mixed: the MP share (from the generator's parameters) at fixed n
    mixed = [(16, 4, 100, {"params": {"mp_share": s}}) for s in (0.05, 0.15, 0.3, 0.5)]
    assert choose_axes(_params(mixed))[0].key == "mp_share"
    # only the model differs: its parameter count
    models = [(16, 4, 100, {"params": p}) for p in (1.3e9, 6.7e9, 13e9)]
    assert choose_axes(_params(models))[0].key == "model_params"
    assert choose_axes(_params([(8, 4, 100, {})]))[0].key == "n"  # nothing varies


def test_coinciding_series_and_distinct_styles():
    a = pd.Series([1.0, 2.0], index=[8, 16])
    same = coinciding({"totientperms": a, "topologyfinder": a * (1 + 1e-12),
                       "ring": a + 1, "other": pd.Series([1.0], index=[8])})
    assert same == {"topologyfinder": "totientperms"}
    styles = {tuple(method_style(m).items()) for m in registry.METHODS}
    assert len(styles) == len(registry.METHODS)  # every method looks different
    assert method_style("unknown-method") == method_style("unknown-method")


def test_coinciding_methods_are_named_in_the_legend(store, tmp_path):
    runs = load_runs(store)
    twin = runs[runs["method"] == "ring"].assign(method="totientperms",
                                                 run_key=lambda d: d["run_key"] + "t")
    both = pd.concat([runs, twin], ignore_index=True)
    import matplotlib.pyplot as plt

    seen = {}
    orig = plt.Figure.legend

    def spy(self, handles, labels, **kw):
        seen["labels"] = list(labels)
        return orig(self, handles, labels, **kw)

    plt.Figure.legend = spy
    try:
        plot(both, "gap", str(tmp_path / "g.svg"))
    finally:
        plt.Figure.legend = orig
    assert "ring (= totientperms)" in seen["labels"] and "select-milp" in seen["labels"]


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
    tables = [f"{t}.{e}" for t in ("instances", "gaps", "families", "headline")
              for e in ("md", "tex", "csv")]
    figures = [f"{k}.{e}" for k in ("gap", "runtime", "profile", "iteration") for e in ("png", "pdf")]
    assert names == sorted(tables + figures)  # a PDF beside every PNG
    assert r"\toprule" in (out / "gaps.tex").read_text()
    # Regenerating gives byte-identical tables (nothing depends on the time or the run order).
    from topoopt_milp.bench.report import write_report

    first = {t: (out / t).read_text() for t in tables}
    write_report(load_runs(store), out, kinds=())
    assert first == {t: (out / t).read_text() for t in tables}
