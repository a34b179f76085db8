"""The one clock of a solve (core/deadline.py): its arithmetic, that start-up and the
reserves count, and that a method whose limit ran out before its solver returns its warm
start at once instead of starting the solver late. (Wall-clock behaviour under load is
measured in benchmarks/bench_time_limits.py, not here.)"""

from __future__ import annotations

import time

import pytest

from topoopt_milp import registry
from topoopt_milp.core import deadline as dl
from topoopt_milp.core.deadline import Deadline, allowance, process_started
from topoopt_milp.core.params import DeadlineExceeded, ParamError
from topoopt_milp.pipeline import certify_reserve, solve_checked, with_reserve
from topoopt_milp.workloads import generators


def test_allowance_is_the_promise():
    assert allowance(10) == 15 and allowance(60) == 72 and allowance(1) == 6


def test_deadline_arithmetic(monkeypatch):
    now = [100.0]
    monkeypatch.setattr(dl.time, "perf_counter", lambda: now[0])
    d = Deadline(10.0, start=98.0)
    assert d.end == 108.0 and d.spent() == 2.0 and d.left() == 8.0
    kept = d.keeping(3.0).keeping(-5.0)  # a negative reserve keeps nothing
    assert kept.reserve == 3.0 and kept.left() == 5.0 and kept.left(keep=1.0) == 4.0
    assert d.budget() == 8.0 and Deadline(5.0, start=100.0).budget() == 5.0  # at most limit
    now[0] = 107.5
    assert not d.expired() and kept.expired()
    assert kept.budget() == dl.MIN_BUDGET_S


def test_process_start_is_in_the_past():
    started = process_started()
    assert started <= time.perf_counter()
    assert time.perf_counter() - started < 3600  # this process's age, not the machine's


def test_load_factor_is_at_least_one():
    assert dl.load_factor() >= 1.0


def test_solve_checked_keeps_the_certification_reserve():
    inst = generators.uniform(8, 3)
    m = registry.get("alloc-milp")
    opts = with_reserve(inst, m.options({"time_limit": 5}))
    assert opts.deadline.limit == 5 and opts.deadline.reserve == pytest.approx(
        certify_reserve(inst), rel=0.5)
    assert opts.time_left() <= 5 - opts.deadline.reserve + 1e-6
    assert with_reserve(inst, m.options({})).deadline is None  # no limit: no clock


def test_a_bigger_instance_reserves_more(monkeypatch):
    monkeypatch.setattr("topoopt_milp.core.deadline.load_factor", lambda: 1.0)
    small, big = generators.uniform(16, 4), generators.uniform(128, 4)
    # 240 and 16256 commodities: 0.32 s and 1.44 s at load 1
    assert certify_reserve(big) > 4 * certify_reserve(small)
    assert certify_reserve(big) == pytest.approx(
        dl.AFTER_S + dl.AFTER_S_PER_COMMODITY * 128 * 127)


def test_a_reserve_beyond_the_allowance_is_refused_up_front(monkeypatch):
    monkeypatch.setattr("topoopt_milp.core.deadline.load_factor", lambda: 8.0)
    inst = generators.uniform(128, 4)  # (0.3 + 7e-5 * 16256) * 8 = 11.5 s after the solver
    m = registry.get("alloc-benders")
    with pytest.raises(ParamError, match=r"--time-limit 2: cannot be honoured.*give "
                                         r"--time-limit 7 or more"):
        with_reserve(inst, m.options({"time_limit": 2}))
    opts = with_reserve(inst, m.options({"time_limit": 10}))  # 11.5 <= 15: kept back
    assert opts.deadline.reserve == pytest.approx(certify_reserve(inst))


def test_refusal_counts_what_was_spent_before():
    started = time.perf_counter() - 1.9  # a start-up of 1.9 s
    assert dl.Deadline(3.0, started).refusal(5.5) is None  # 7.4 <= allowance(3) = 8
    why = dl.Deadline(3.0, started).refusal(7.0)  # 8.9 > 8; allowance(4) = 9 >= 8.9
    assert why is not None and why.endswith("give --time-limit 4 or more")
    # a clock already past its allowance is the caller's: the method returns what it has
    assert dl.Deadline(1.0, time.perf_counter() - 60).refusal(100.0) is None
    # a limit below what start-up took is refused, not run past its allowance (issue 20)
    why = dl.Deadline(0.5, time.perf_counter() - 0.9).refusal(6.0)  # 6.9 > allowance(0.5) = 5.5
    assert why is not None and why.endswith("give --time-limit 2 or more")



@pytest.mark.parametrize("method", ["alloc-milp", "alloc-cpsat", "select-milp"])
def test_a_limit_spent_before_the_solver_returns_the_warm_start_at_once(method):
    # the clock started 60 s ago (a long start-up): the model is not built, the solver not
    # started, and the warm start comes back as the incumbent with the analytic bound
    inst = generators.uniform(12, 4)
    m = registry.get(method)
    opts = m.options({"time_limit": 10}).with_(
        deadline=Deadline(10.0, start=time.perf_counter() - 60))
    t0 = time.perf_counter()
    res = solve_checked(inst, method, opts)
    assert time.perf_counter() - t0 < 5
    assert res.status.value == "feasible" and res.objective is not None
    assert "time limit of 10 s reached" in res.message and not res.violations


def test_check_deadline_raises_once_the_reserve_is_reached():
    m = registry.get("alloc-milp")
    live = m.options({"time_limit": 10}).with_(deadline=Deadline(10.0))
    live.check_deadline()  # 10 s left
    with pytest.raises(DeadlineExceeded, match="time limit of 10 s"):
        live.with_(deadline=live.deadline.keeping(10.0)).check_deadline()
