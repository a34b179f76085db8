"""Every gap valid by construction (issue 8): the six reported defects as regression tests,
and every exact and restricted method through every bound-using command without a negative
gap. (Cases 2 and 3 live beside their families: ``test_select.py`` and ``test_sndlib.py``.)"""

from __future__ import annotations

import copy
import io
import json
import math
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from topoopt_milp import registry
from topoopt_milp.bench.reproduce import reference_table
from topoopt_milp.bench.store import load_runs
from topoopt_milp.cli import main
from topoopt_milp.core.check import check_solution
from topoopt_milp.core.instance import Instance, make_instance
from topoopt_milp.core.result import finite_json, solution_dict
from topoopt_milp.core.topology import Topology
from topoopt_milp.pipeline import solve_checked

LIBRARY = Path(__file__).resolve().parents[1] / "instances"
DLRM8 = LIBRARY / "small" / "dlrm-n8-d4-s0.json"


def _cli(*args: str) -> str:
    r = CliRunner().invoke(main, list(args))
    assert r.exit_code == 0, r.output
    return r.stdout  # stderr holds the progress bar


# -- case 1: a restricted model's bound in the default best bound --------------------------------
def test_case1_restricted_bound_never_sets_the_gap(tmp_path):
    store = str(tmp_path / "s.sqlite")
    _cli("bench", str(DLRM8), "--methods", "topologyfinder,alloc-milp,alloc-cpsat", "--store",
         store, "--time-limit", "20", "--no-progress")
    rows = pd.read_csv(io.StringIO(_cli("table", store, "--format", "csv")))
    rows = rows.set_index("method")
    assert (rows["gap_pct"] >= 0).all()  # alloc-milp showed -70% against alloc-cpsat's bound
    assert rows.loc["alloc-milp", "gap_pct"] == pytest.approx(0.0)
    assert set(rows["bound_source"]) == {"alloc-milp"}
    assert rows.loc["alloc-milp", "status"] == "optimal"
    assert rows.loc["alloc-cpsat", "status"] == "feasible"  # proven within its model only
    # the user may ask for the restricted bound: it then bounds its own run, nobody else's
    only = pd.read_csv(io.StringIO(_cli("table", store, "--format", "csv", "--bound-methods",
                                        "alloc-cpsat", "--no-analytic"))).set_index("method")
    assert only.loc["alloc-cpsat", "bound_source"] == "alloc-cpsat"
    assert math.isnan(only.loc["alloc-milp", "gap_pct"])


# -- case 4: non-finite numbers in a solution ------------------------------------------------------
@pytest.mark.parametrize("breakage", ["objective", "fraction", "bound", "share"])
def test_case4_checker_rejects_non_finite_numbers(breakage):
    inst = Instance.load(DLRM8)
    res = registry.solve(inst, "topologyfinder")
    sol = finite_json(solution_dict(res, inst, None))
    assert check_solution(inst.to_dict(), sol) == []
    bad = copy.deepcopy(sol)
    if breakage == "objective":
        bad["objective"] = math.inf
    elif breakage == "fraction":
        bad["routing"]["commodities"][0]["paths"][0]["fraction"] = math.inf
    elif breakage == "bound":
        bad["bound"] = math.nan
    else:
        bad["routing"]["rings"][0]["share"] = math.nan
    problems = check_solution(inst.to_dict(), bad)
    assert problems and any("non-finite" in p for p in problems), problems
    # also when read back from a file that spells them out (JSON accepts Infinity / NaN)
    assert check_solution(inst.to_dict(), json.loads(json.dumps(bad)))


def test_checker_checks_every_objective_kind():
    inst = make_instance(8, 4, 100.0, mp=[(i, j, 1e6) for i in range(8) for j in range(8) if i != j])
    for objective in ("diameter", "total_hops"):
        res = solve_checked(inst, "select-milp", objective=objective, candidates="all")
        assert not res.violations
        sol = finite_json(solution_dict(res, inst, res.metrics))
        sol["objective"] *= 0.5
        assert any(objective in p for p in check_solution(inst.to_dict(), sol))


def test_optimal_claim_needs_a_meeting_bound_and_an_unrestricted_scope():
    inst = Instance.load(DLRM8)
    res = solve_checked(inst, "alloc-milp", time_limit=20)
    sol = finite_json(solution_dict(res, inst, res.metrics))
    assert sol["status"] == "optimal" and check_solution(inst.to_dict(), sol) == []
    loose = dict(sol, bound=sol["objective"] * 0.5)
    assert any("optimal" in p for p in check_solution(inst.to_dict(), loose))
    restricted = solve_checked(inst, "alloc-cpsat", time_limit=20)
    lied = finite_json(solution_dict(restricted, inst, restricted.metrics)) | {"status": "optimal"}
    assert any("restricted" in p for p in check_solution(inst.to_dict(), lied))


# -- case 5: reference values mixing ring spaces -------------------------------------------------
def test_case5_reference_bound_never_exceeds_its_objective(tmp_path):
    from test_tables import RECORDS  # joint-milp's free rings beat the TotientPerms-space bounds

    from topoopt_milp.bench.store import RunStore

    path = tmp_path / "r.sqlite"
    with RunStore(path) as st:
        for r in RECORDS:
            st.put(r)
    ref = reference_table(load_runs(path)).set_index("instance")
    assert ref.loc["A", "objective"] == pytest.approx(0.95)  # joint-milp's solution
    assert ref.loc["A", "bound"] == pytest.approx(0.5)  # only the analytic bound covers it
    assert (ref["bound"].fillna(0) <= ref["objective"] * (1 + 1e-9)).all()
    assert "analytic" in ref.loc["A", "source"]


# -- case 6: a fixed topology keeps the solution's rings -----------------------------------------
@pytest.mark.parametrize("name", ["dlrm-n16-d4", pytest.param("dlrm-n128-d4",
                                                              marks=pytest.mark.slow)])
def test_case6_route_on_a_solution_keeps_its_rings(tmp_path, name):
    inst = str(LIBRARY / "dnn" / f"{name}.json")
    tp, lp, dflt = (str(tmp_path / f) for f in ("tp.json", "lp.json", "default.json"))
    _cli("solve", inst, "-m", "totientperms", "--out", tp)
    _cli("solve", inst, "-m", "route-milp", "--topology", tp, "--out", lp)
    _cli("solve", inst, "-m", "route-milp", "--topology", tp, "--rings", "default", "--out", dflt)
    heur, opt, other = (json.loads(Path(p).read_text()) for p in (tp, lp, dflt))
    assert opt["routing"]["rings"] == heur["routing"]["rings"]
    # the optimal routing of TotientPerms' topology and rings can only improve on its own
    assert opt["objective"] <= heur["objective"] * (1 + 1e-7)
    assert other["objective"] > opt["objective"]  # n = 128: 0.0963 vs 0.0525 s
    assert opt["scope"]["topology"] == "fixed" and opt["scope"]["rings"] == "fixed"
    assert other["scope"]["rings_hash"] != opt["scope"]["rings_hash"]
    # the route solution is a solution of the original instance too
    assert "checker: OK" in _cli("evaluate", inst, lp)


# -- every exact / restricted method x every bound-using command ---------------------------------
@pytest.fixture(scope="module")
def mixed_store(tmp_path_factory):
    """A store with every registered exact and restricted method (and the heuristics) on a
    small instance mix: an n = 6 sparse instance (alloc, joint, select, CP-SAT models) and the
    same instance with TotientPerms' topology fixed (route models)."""
    root = tmp_path_factory.mktemp("trust")
    lib = root / "lib" / "mix"
    lib.mkdir(parents=True)
    free = make_instance(6, 2, 100.0, allreduce=[([0, 2, 4], 3e8)],
                         mp=[(0, 3, 1e8), (1, 5, 4e7), (5, 1, 2e7)], name="mix6")
    free.save(lib / "mix6.json")
    tp = registry.solve(free, "totientperms")
    fixed = free.with_topology(tp.topology.links, tp.routing.rings)
    Instance.from_dict({**fixed.to_dict(), "name": "mix6-fixed"}).save(lib / "fixed.json")
    ring = Instance.from_dict({**free.with_topology(Topology.circulant(6, [1]).links).to_dict(),
                               "name": "mix6-ring"})
    ring.save(lib / "ring.json")
    store = str(root / "s.sqlite")
    exact = [m for m, e in registry.METHODS.items() if e.kind != "heuristic"]
    heuristics = ["totientperms", "topologyfinder", "expander", "demand-greedy", "ring",
                  "topologyfinder-lp"]
    free_methods = [m for m in exact if registry.get(m).problem != "route"] + heuristics
    route_methods = [m for m in exact if registry.get(m).problem == "route"]
    _cli("bench", str(lib / "mix6.json"), "--methods", ",".join(free_methods), "--store", store,
         "--time-limit", "10", "--no-progress", "--jobs", "2")
    _cli("bench", str(lib / "fixed.json"), str(lib / "ring.json"), "--methods",
         ",".join(route_methods + ["totientperms"]), "--store", store, "--time-limit", "10",
         "--no-progress", "--jobs", "2")
    return root, store, lib


GAP_COLUMNS = ("gap_pct", "mean_gap_pct", "max_gap_pct", "routing_gap_pct")


def _assert_no_negative_gap(df: pd.DataFrame, where: str) -> None:
    cols = [c for c in df.columns if c in GAP_COLUMNS or c.endswith("_gap_pct")]
    assert cols, where
    for c in cols:
        values = pd.to_numeric(df[c], errors="coerce").dropna()
        assert (values >= -1e-6).all(), f"{where}: {c} has {values.min()}"
    if "gap_error" in df:
        assert df["gap_error"].isna().all(), f"{where}: {df['gap_error'].dropna().tolist()}"


def test_every_method_every_command_no_negative_gap(mixed_store):
    root, store, lib = mixed_store
    runs = load_runs(store)
    assert set(runs["status"]) <= {"optimal", "feasible", "no_solution"}, \
        runs[runs["status"] == "error"][["method", "error"]].to_string()
    for by in ("instance", "family"):
        _assert_no_negative_gap(pd.read_csv(io.StringIO(_cli("table", store, "--by", by,
                                                             "--format", "csv"))), f"table {by}")
    wide = pd.read_csv(io.StringIO(_cli("table", store, "--wide", "gap_pct", "--format", "csv")))
    methods = [c for c in wide.columns if c in registry.METHODS]
    assert methods and (wide[methods].stack().dropna() >= -1e-6).all()
    for m in [m for m, e in registry.METHODS.items() if e.kind != "heuristic"]:
        df = pd.read_csv(io.StringIO(_cli("table", store, "--format", "csv",
                                          "--bound-methods", m)))
        _assert_no_negative_gap(df, f"table --bound-methods {m}")
    out = root / "report"
    _cli("report", store, "--out", str(out), "--figure-format", "png")
    for name in ("instances", "families"):
        _assert_no_negative_gap(pd.read_csv(out / f"{name}.csv"), f"report {name}")
    ref = reference_table(runs)
    assert (ref["bound"].dropna() <= ref.set_index(ref.index)["objective"][
        ref["bound"].notna()] * (1 + 1e-9)).all()
    cmp = json.loads(_cli("compare", str(lib / "mix6.json"), "--methods",
                          "totientperms,topologyfinder,alloc-milp,alloc-cpsat,joint-milp,"
                          "joint-cpsat,select-milp,select-cpsat", "--time-limit", "10",
                          "--format", "json"))
    _assert_no_negative_gap(pd.DataFrame(cmp), "compare")


# -- topology vs routing (issue 11): LP routing on a heuristic's own topology and rings ---------
@pytest.mark.parametrize("name", ["totientperms", "topologyfinder", "expander", "demand-greedy"])
@pytest.mark.parametrize("path", [DLRM8, LIBRARY / "mixed" / "mixed-n16-d4-g4-mp30.json"])
def test_lp_routing_is_never_worse_than_the_heuristics_own(name, path):
    inst = Instance.load(path)
    own = solve_checked(inst, name)
    lp = solve_checked(inst, f"{name}-lp")
    assert not own.violations and not lp.violations
    assert (lp.topology.links == own.topology.links).all()  # the heuristic's own topology
    assert lp.routing.rings == own.routing.rings  # ... and its own ring orders and shares
    assert lp.objective <= own.objective * (1 + 1e-7)
    # the route LP's optimum bounds the heuristic's routing on that topology: its scope is
    # the fixed topology and rings, which contain the heuristic's own solution
    assert lp.scope.topology == "fixed" and lp.scope.covers(own.features)
    assert lp.bound == pytest.approx(lp.objective, rel=1e-6)
