"""The validation table's summaries (bench/simulation.py): ratio statistics per method, the
sign checks of the headline comparisons, the figure, and one real instance end to end."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from topoopt_milp.bench.simulation import (
    COLUMNS,
    instance_rows,
    plot_simulation,
    ranking_checks,
    ratio_summary,
    summary_lines,
)

REPO = Path(__file__).resolve().parents[1]


def _df(values):
    rows = []
    for inst, per_method in values.items():
        for method, (fluid, sim) in per_method.items():
            rows.append({c: None for c in COLUMNS} | {
                "family": "coopt", "instance": inst, "method": method, "fluid_s": fluid,
                "simulated_s": sim, "sim_ratio": sim / fluid, "ar_sim_ratio": 1.0,
                "mp_sim_ratio": sim / fluid, "latency_sim_ratio": sim / fluid})
    return pd.DataFrame(rows, columns=COLUMNS)


def test_ratio_summary_and_sign_checks(tmp_path):
    df = _df({
        # TF faster than TP in both models; own routing slower than LP in both
        "a": {"topologyfinder": (2.0, 2.0), "totientperms": (3.0, 3.0),
              "topologyfinder-lp": (1.0, 1.3), "totientperms-lp": (1.5, 1.6), "best": (0.9, 1.2)},
        # simulation flips TF+LP vs TP+LP and TF+LP vs best
        "b": {"topologyfinder": (2.0, 2.0), "totientperms": (2.0, 2.0),
              "topologyfinder-lp": (1.0, 1.1), "totientperms-lp": (1.2, 1.05), "best": (0.9, 1.2)},
    })
    s = ratio_summary(df).set_index("method")
    assert s.loc["TF+LP", "median_sim_ratio"] == pytest.approx((1.3 + 1.1) / 2)
    assert s.loc["TF+LP", "max_sim_ratio"] == pytest.approx(1.3)
    checks = ranking_checks(df)
    assert checks["TF vs TP (own routing)"] == (2, 2)  # a tie stays a tie
    assert checks["TF+LP vs TP+LP"] == (1, 2)
    assert checks["TF own vs TF+LP (routing gap)"] == (2, 2)
    assert checks["TF+LP vs best (topology gap)"] == (1, 2)
    assert "TF+LP vs TP+LP: 1/2" in " ".join(summary_lines(df))
    paths = plot_simulation(df, tmp_path / "sim.png")
    assert [p.suffix for p in paths] == [".png", ".pdf"] and all(p.stat().st_size for p in paths)


@pytest.mark.slow
def test_one_instance_end_to_end():
    rows = instance_rows(REPO / "instances" / "coopt" / "resnet50-n16-d4.json", "coopt", None, 2.0)
    got = {r["method"]: r for r in rows}
    assert set(got) == {"topologyfinder", "totientperms", "topologyfinder-lp", "totientperms-lp",
                        "best"}
    for r in rows:  # one ring per group on its own links: the fluid time is exact
        assert r["simulated_s"] >= r["fluid_s"] * (1 - 1e-9)
        assert r["latency_sim_ratio"] >= 1.0


def test_cached_only_keeps_the_cached_instances_and_simulates_nothing(tmp_path, monkeypatch):
    from topoopt_milp.bench import simulation

    cached = _df({"a": {m: (1.0, 1.0) for m in simulation.METHODS}})
    cached.to_csv(tmp_path / "simulation.csv", index=False)
    runs = pd.DataFrame({"family": ["coopt", "coopt"], "instance_hash": ["ha", "hb"],
                         "instance_name": ["a", "b"], "n": [16, 128],
                         "instance_path": [str(REPO / "instances" / "coopt" / "bert-n16-d4.json")] * 2})
    monkeypatch.setattr(simulation, "headline_table", lambda runs, families: pd.DataFrame(
        columns=["family", "n", "degree", "link_gbps", "workload"]))

    def no_solve(*args, **kwargs):
        raise AssertionError("cached_only must not solve or simulate")

    monkeypatch.setattr(simulation, "instance_rows", no_solve)
    df = simulation.simulation_table(runs, tmp_path, cached_only=True)
    assert sorted(set(df["instance"])) == ["a"] and len(df) == len(simulation.METHODS)
    with pytest.raises(AssertionError, match="cached_only"):
        simulation.simulation_table(runs, tmp_path)


def test_cached_only_needs_simulation_only():
    from click.testing import CliRunner

    from topoopt_milp.cli import main

    r = CliRunner().invoke(main, ["reproduce", "--cached-only"])
    assert r.exit_code == 2 and "--cached-only" in r.output


def test_a_solution_met_again_is_not_simulated_again(monkeypatch):
    """The best row, and TF+LP = TP+LP where the LP routes the same topology, reuse the
    simulation of the first row with the same topology and routing."""
    from topoopt_milp.bench import simulation
    from topoopt_milp.core.instance import Instance
    from topoopt_milp.pipeline import solve_checked

    path = REPO / "instances" / "small" / "dlrm-n8-d4-s0.json"
    tf = solve_checked(Instance.load(path), "topologyfinder")
    monkeypatch.setattr(simulation, "solve_checked", lambda inst, method, time_limit: tf)
    calls = []
    real = simulation.simulate_solution
    monkeypatch.setattr(simulation, "simulate_solution",
                        lambda inst, res: calls.append(res) or real(inst, res))
    rows = instance_rows(path, "coopt", None, 1.0)
    assert len(rows) == len(simulation.METHODS) and len(calls) == 1
    assert len({(r["simulated_s"], r["ar_sim_ratio"], r["latency_sim_ratio"]) for r in rows}) == 1


def test_a_run_keeps_the_cached_rows_of_instances_it_has_not_reached(tmp_path, monkeypatch):
    from topoopt_milp.bench import simulation

    _df({"z": {m: (1.0, 1.0) for m in simulation.METHODS}}).to_csv(
        tmp_path / "simulation.csv", index=False)
    runs = pd.DataFrame({"family": ["coopt"], "instance_hash": ["ha"], "instance_name": ["a"],
                         "n": [16], "instance_path": [str(REPO / "instances" / "coopt" /
                                                          "bert-n16-d4.json")]})
    monkeypatch.setattr(simulation, "headline_table", lambda runs, families: pd.DataFrame(
        columns=["family", "n", "degree", "link_gbps", "workload"]))
    monkeypatch.setattr(simulation, "instance_rows", lambda *a: _df(
        {"a": {m: (2.0, 2.0) for m in simulation.METHODS}}).to_dict(orient="records"))
    simulation.simulation_table(runs, tmp_path)
    kept = pd.read_csv(tmp_path / "simulation.csv")
    assert sorted(set(kept["instance"])) == ["a", "z"] and len(kept) == 2 * len(simulation.METHODS)


def test_cached_rows_show_todays_headline(tmp_path, monkeypatch):
    """A cached row keeps its simulation but takes the headline's numbers of today: a better
    best solution in the store must not leave the old best_headline_s beside it."""
    from topoopt_milp.bench import simulation

    cached = _df({"a": {m: (1.0, 1.0) for m in simulation.METHODS}})
    cached = cached.assign(workload="bert", n=16, degree=4, link_gbps=100.0,
                           headline_s=9.0, best_headline_s=9.0)
    cached.to_csv(tmp_path / "simulation.csv", index=False)
    runs = pd.DataFrame({"family": ["coopt"], "instance_hash": ["ha"], "instance_name": ["a"],
                         "n": [16], "instance_path": ["unused.json"]})
    head = pd.DataFrame([{"family": "coopt", "n": 16, "degree": 4, "link_gbps": 100.0,
                          "workload": "bert", "tf_s": 2.0, "tp_s": 3.0, "tf_lp_s": 1.5,
                          "tp_lp_s": 1.6, "best_s": 0.8}])
    monkeypatch.setattr(simulation, "headline_table", lambda runs, families: head)
    df = simulation.simulation_table(runs, tmp_path, cached_only=True)
    got = dict(zip(df["method"], df["headline_s"]))
    assert got == {"topologyfinder": 2.0, "totientperms": 3.0, "topologyfinder-lp": 1.5,
                   "totientperms-lp": 1.6, "best": 0.8}
    assert set(df["best_headline_s"]) == {0.8} and set(df["simulated_s"]) == {1.0}
