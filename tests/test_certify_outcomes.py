"""certify says how each member that did not hand back a result ended: a member killed at
the portfolio's hard end was "stopped at the limit", one that died on its own "crashed: <why>"
(issue 20). Real child processes: the test-only methods of test_bench_runner crash
(``os._exit(3)``), sleep forever, or SIGKILL themselves (as the kernel's out-of-memory killer
would: a SIGKILL nobody of ours sent)."""

from __future__ import annotations

import os
import signal

from topoopt_milp import registry
from topoopt_milp.bench import portfolio
from topoopt_milp.core.instance import make_instance
from topoopt_milp.core.spec import MethodSpec
from topoopt_milp.methods.heuristics.support import RoutingParams


def oom(instance, options):
    os.kill(os.getpid(), signal.SIGKILL)


OOM_SPEC = MethodSpec("test-oom", "alloc", "heuristic", "heuristic", RoutingParams, oom,
                      "test only")


def test_report_tells_stopped_at_the_limit_from_crashed(monkeypatch):
    specs = {s.name: s for s in registry.load_ref("test_bench_runner:TEST_SPECS")
             if s.name in ("test-crash", "test-hang")}
    specs.update({s.name: s for s in registry.load_ref(f"{__name__}:OOM_SPEC")})
    monkeypatch.setattr(registry, "methods", lambda: specs)
    inst = make_instance(6, 2, 100.0, mp=[(i, (i + 1) % 6, 1e8) for i in range(6)], name="r6")
    cert = portfolio.certify(inst, 3.0, jobs=3)
    by = {r["method"]: r for r in cert.to_json()["runs"]}
    assert set(by) == {"test-crash", "test-hang", "test-oom"}, by
    assert by["test-hang"]["outcome"].startswith("stopped at the limit: killed after"), by
    assert by["test-crash"]["outcome"] == "crashed: child process exit code 3, no result", by
    assert by["test-oom"]["outcome"].startswith(
        "crashed: child process killed by signal SIGKILL"), by
    text = "\n".join(cert.lines())
    assert "run test-hang: stopped at the limit" in text
    assert "run test-crash: crashed: child process exit code 3" in text
    assert portfolio.outcome({"status": "feasible"}) == "returned"
    assert cert.runtime_s <= portfolio.hard_end_s(3.0)


def test_a_member_the_portfolio_ends_is_stopped_not_crashed(monkeypatch):
    """kill_run (the portfolio's early stop) is not a crash, though the child dies of the
    same SIGKILL."""
    import threading
    import time

    from topoopt_milp.bench.child import Task, execute, kill_run
    from topoopt_milp.bench.runner import method_record

    spec = next(s for s in registry.load_ref("test_bench_runner:TEST_SPECS")
                if s.name == "test-hang")
    inst = make_instance(6, 2, 100.0, mp=[(0, 1, 1e8)], name="h6")
    task = Task(run_key="k", instance=inst.to_dict(), instance_path=None, family="",
                method=method_record(spec), params={}, seed=0, hard_limit_s=60)
    procs = []
    out = {}
    th = threading.Thread(target=lambda: out.update(execute(task, None, procs.append)))
    th.start()
    t0 = time.perf_counter()
    while not procs and time.perf_counter() - t0 < 30:
        time.sleep(0.05)
    time.sleep(0.5)
    kill_run(procs[0])
    th.join(30)
    assert out["error"].startswith("stopped: ended by its caller after"), out
    assert portfolio.outcome(out) == "stopped at the limit"
    assert portfolio.outcome({**out, "error": "certify: stopped once the gap was closed; "
                              + out["error"]}) == "stopped once the gap was closed"
