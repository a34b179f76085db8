"""`certify` against brute force: on instances small enough to try every d-regular link
matrix, the portfolio's objective is never below the optimum, no bound it reports is above the
optimum of its scope, the gaps are percentages, the JSON keys are there and the --out file
passes the independent checker."""

from __future__ import annotations

import json
import time

import pytest
from click.testing import CliRunner
from test_alloc_benders import mixed, regular_multigraphs

from topoopt_milp.bench import portfolio
from topoopt_milp.cli import main
from topoopt_milp.core.check import check_solution
from topoopt_milp.core.instance import Instance, make_instance
from topoopt_milp.core.result import read_solution
from topoopt_milp.methods.alloc_benders import decomposition as alloc_benders

REL = 1e-6


def brute_force_optimum(inst) -> float:
    """The least communication time over every d-regular multigraph, each with its optimal
    fractional routing and ring split (alloc-benders' route evaluation). Every group has at
    most 3 members, so every ring order is a TotientPerms order: this is the optimum of both
    certified scopes."""
    assert all(len(g.members) <= 3 for g in inst.allreduce)
    P = alloc_benders.problem_of(inst)
    B = P.demand_basis()
    best = max(alloc_benders.max_lambda(P, L, B).lam for L in regular_multigraphs(inst.n, inst.degree))
    return P.sec_per_unit / best


def a2a(n, d):
    return make_instance(n, d, 100.0, mp=[(i, j, 1e8) for i in range(n) for j in range(n) if i != j],
                         name=f"a2a-n{n}-d{d}")


def run_certify(tmp_path, inst, time_limit, *extra):
    path = tmp_path / "inst.json"
    inst.save(path)
    out = tmp_path / "best.json"
    t0 = time.perf_counter()
    res = CliRunner().invoke(main, ["certify", str(path), "--time-limit", str(time_limit),
                                    "--format", "json", "--out", str(out), "--jobs", "2",
                                    *extra])
    wall = time.perf_counter() - t0
    assert res.exit_code == 0, res.output
    lines = [x for x in res.output.splitlines() if x.strip()]
    assert len(lines) == 1, res.output  # exactly one JSON object
    return json.loads(lines[0]), out, path, wall


def check_certificate(data, out, path, wall, time_limit, opt):
    for key in portfolio.JSON_KEYS:
        assert key in data, key
    assert data["objective"] >= opt * (1 - REL)
    for scope in ("any", "totient"):
        bound, gap = data[f"bound_{scope}"], data[f"gap_{scope}_pct"]
        assert bound is not None and bound <= opt * (1 + REL), scope
        assert gap is None or 0.0 <= gap <= 100.0, scope
    assert data["bound_totient"] >= data["bound_any"] * (1 - REL)  # every "any" bound holds there
    assert data["status"] in ("optimal", "feasible")
    if data["status"] == "optimal":
        assert data["objective"] == pytest.approx(opt, rel=1e-4)
    assert wall <= portfolio.hard_end_s(time_limit)
    inst = Instance.load(path)
    sol = read_solution(out)
    assert check_solution(inst.to_dict(), sol) == []
    assert sol["objective"] == pytest.approx(data["objective"], rel=1e-9)


def test_certify_a2a_n5_against_brute_force(tmp_path):
    """With --store, every run of the portfolio is a row of the run store too: the tables
    and `reproduce` see the runs certify made (its best solution among them)."""
    from topoopt_milp.bench.store import load_runs

    inst = a2a(5, 2)  # the 5-cycle is the only 2-regular simple graph; multigraphs are worse
    opt = brute_force_optimum(inst)
    store = tmp_path / "runs.sqlite"
    data, out, path, wall = run_certify(tmp_path, inst, 4, "--store", str(store))
    check_certificate(data, out, path, wall, 4, opt)
    runs = load_runs(store)
    assert len(runs) > 1 and runs["run_key"].is_unique
    assert set(runs["family"]) == {tmp_path.name}  # the folder, as `bench` records it
    assert runs["objective"].min() == pytest.approx(data["objective"], rel=1e-9)


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1])
def test_certify_mixed_n6_against_brute_force(tmp_path, seed):
    inst = mixed(6, 2, 2, 0.4, seed=seed)  # two groups of 3: every ring order is TotientPerms'
    opt = brute_force_optimum(inst)
    data, out, path, wall = run_certify(tmp_path, inst, 20)
    check_certificate(data, out, path, wall, 20, opt)


def test_plan_picks_methods_by_spec():
    """A spec registered under any name lands in the phase its properties say."""
    from topoopt_milp import registry

    inst = mixed(6, 2, 2, 0.4)
    entries = portfolio.plan(inst)
    phases = [portfolio.PHASES.index(e.phase) for e in entries]
    assert phases == sorted(phases)
    by_method = {e.method: e for e in entries}
    # by spec name: a spec loaded by its reference (registry.get("pkg.module:NAME"), as
    # test_sizes does) is also listed under that reference
    for spec in registry.methods().values():
        phase = portfolio.phase_of(spec, inst)
        if spec.problem == "route":
            assert phase is None and spec.name not in by_method
        elif phase is not None:
            assert by_method[spec.name].phase == phase
            assert by_method[spec.name].warm == (spec.warm_start is not None
                                                 and phase not in ("heuristic", "heuristic-lp"))
    # an exact model with the ideal-switch probe first looks for a topology at the ideal
    assert by_method["alloc-milp"].knobs == {"probe_ideal": portfolio.PROBE_SHARE}
    # an exact model whose rings knob offers every ring order runs once more with it
    assert sorted(str(e.knobs) for e in entries if e.method == "alloc-benders") == [
        "{'rings': 'all'}", "{}"]
    # a bound method with a rings knob runs once per ring scope
    bounds = [e for e in entries if e.method == "lower-bounds"]
    assert {e.knobs.get("rings") for e in bounds} == {"choose", "any"}
    # above exact_max_n only the scalable phases remain
    big = portfolio.plan(inst, exact_max_n=4)
    assert {e.phase for e in big} <= {"heuristic", "heuristic-lp", "bound", "search"}
    # a search with free ring orders (tours) runs with them, first among the searches, and
    # with two slots above exact_max_n it leads (one slot from the start)
    searches = [e for e in big if e.phase == "search"]
    assert searches[0].method == "alloc-search" and searches[0].knobs == {"rings": "tours"}
    assert not [e for e in big if e.method == "alloc-search" and e.knobs != {"rings": "tours"}]
    lead = portfolio.lead_first(big, inst, jobs=2, exact_max_n=4)
    assert lead[0] is searches[0] and sorted(map(id, lead)) == sorted(map(id, big))
    assert portfolio.lead_first(big, inst, jobs=1, exact_max_n=4) == big
    assert portfolio.lead_first(entries, inst, jobs=2) == entries  # n <= exact_max_n


def test_searches_behind_the_lead_share_the_budget(monkeypatch):
    """The lead search keeps the whole budget; each search behind it gets an equal part of
    what is left with the searches still waiting (the last one all of it), so that none is
    crowded out; other runs get the whole remaining budget. Children are faked: each hands
    back an error record at once, after its time limit is noted."""
    from topoopt_milp.bench.portfolio_plan import Entry

    inst = mixed(6, 2, 2, 0.4)
    entries = [Entry("alloc-search", "search", {"rings": "tours"}),
               Entry("totientperms", "heuristic", {}),
               Entry("alloc-alternate", "search", {}),
               Entry("hop-anneal", "search", {})]
    limits = {}

    def fake(task, stop, started):
        limits[task.method["name"]] = task.params["time_limit"]
        return {"status": "error", "error": "fake", "method": task.method["name"]}

    monkeypatch.setattr(portfolio, "plan", lambda *a, **k: list(entries))
    monkeypatch.setattr(portfolio, "lead_first", lambda pending, *a, **k: pending)
    monkeypatch.setattr(portfolio, "execute", fake)
    portfolio.certify(inst, 100.0, jobs=1)
    reserve = portfolio.certify_reserve(inst)
    assert limits["alloc-search"] == pytest.approx(100.0, abs=1.0)
    assert limits["totientperms"] == pytest.approx(100.0, abs=1.0)
    assert limits["alloc-alternate"] == pytest.approx(reserve + (100.0 - reserve) / 2, abs=1.0)
    assert limits["hop-anneal"] == pytest.approx(100.0, abs=1.0)


def test_certificate_measures_gaps_in_covering_scopes():
    from topoopt_milp.core.scope import ANALYTIC, Features, Scope

    cert = portfolio.Certificate("x", 10.0)
    tp = Features("h", None, 1, True, 1, "r")
    other = Features("h2", None, 1, False, 1, "r2")
    cert.best = portfolio.Incumbent(10.0, "a", other, "")
    cert.best_totient = portfolio.Incumbent(12.0, "b", tp, "")
    cert.bounds = [portfolio.Bound(8.0, "analytic", ANALYTIC),
                   portfolio.Bound(11.0, "alloc-milp", Scope(rings="totient")),
                   portfolio.Bound(99.0, "route", Scope(topology="fixed", topology_hash="h"))]
    assert cert.space_bound("any").value == 8.0
    assert cert.space_bound("totient").value == 11.0  # the fixed-topology bound covers neither
    assert cert.gap_pct("any") == pytest.approx(20.0)
    assert cert.gap_pct("totient") == pytest.approx(100 * 1 / 12)
    assert cert.status == "feasible"
    assert set(portfolio.JSON_KEYS) <= set(cert.to_json())


def test_reproduce_runs_the_portfolio_into_its_store_and_resumes(tmp_path):
    """`reproduce`'s Certify step: the portfolio's runs land in the run store as ordinary
    rows (the tables see them), and a second pass skips the certified instance."""
    from topoopt_milp.bench.reproduce import Certify, run_certify
    from topoopt_milp.bench.store import load_runs

    path = tmp_path / "a2a-n5-d2.json"
    a2a(5, 2).save(path)
    store = tmp_path / "runs.sqlite"
    run_certify([path], store, Certify("x", ("*.json",), 4), jobs=2)
    runs = load_runs(store)
    assert runs["objective"].notna().any()  # the solutions are stored, not only the answer
    assert runs["run_key"].is_unique
    run_certify([path], store, Certify("x", ("*.json",), 4), jobs=2)
    assert len(load_runs(store)) == len(runs)


def test_fixed_topology_report_names_the_scope_that_decides_the_status():
    """With a fixed topology the status comes from that topology's own bound (a route
    method's), which the two ring-order lines (bounds over every topology) do not show: the
    text report gives it a line of its own, so "optimal" never stands beside only a wide gap."""
    from topoopt_milp.core.scope import ANALYTIC, Features, Scope

    cert = portfolio.Certificate("x", 10.0, fixed_topology=True)
    cert.best = portfolio.Incumbent(10.0, "route-approx", Features("h", None, 1, True, 1, "r"), "")
    cert.bounds = [portfolio.Bound(5.0, "analytic", ANALYTIC),
                   portfolio.Bound(10.0, "route-milp", Scope(topology="fixed", topology_hash="h"))]
    assert cert.status == "optimal" and cert.gap_pct("any") == pytest.approx(50.0)
    lines = cert.lines()
    assert lines[-1] == ("scope fixed topology (the instance's own; decides the status): bound "
                         "10 s by route-milp; certified gap 0.00%")
    assert not any("fixed topology" in line
                   for line in portfolio.Certificate("y", 1.0).lines())
