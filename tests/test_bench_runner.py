"""Sweeps: process isolation (crash, hang, exception, checker rejection -> error rows),
resuming, SIGKILL of the sweep mid-run, and the Dask engine against the local pool."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time

import pytest

from topoopt_milp import registry
from topoopt_milp.bench.runner import build_tasks, find_instances, run_sweep
from topoopt_milp.bench.store import RunStore, load_runs
from topoopt_milp.bench.tables import instance_table
from topoopt_milp.core.spec import MethodSpec
from topoopt_milp.methods.heuristics.support import RoutingParams

# Columns that do not depend on timing, host or the engine.
DETERMINISTIC = ["run_key", "instance_name", "instance_hash", "family", "n", "method", "method_backend",
                 "params", "seed", "status", "objective", "bound", "gap", "objective_kind", "error"]


# -- test-only methods: resolved in the child through the target "module:function" -------

def crash(instance, options):
    os._exit(3)  # a hard crash: no exception, no result


def hang(instance, options):
    time.sleep(10_000)


def boom(instance, options):
    raise RuntimeError("boom in the solver")


def lie(instance, options):
    """A real ring solution whose reported objective is half the true one."""
    res = registry.solve(instance, "ring", options)
    return res.with_(objective=res.objective / 2)


TEST_SPECS = tuple(MethodSpec(f"test-{f.__name__}", "alloc", "heuristic", "heuristic",
                              RoutingParams, f, "test only") for f in (crash, hang, boom, lie))


@pytest.fixture
def bad_methods(monkeypatch):
    for spec in registry.load_ref(f"{__name__}:TEST_SPECS"):
        monkeypatch.setitem(registry.METHODS, spec.name, spec)


def _frame(path):
    df = load_runs(path)
    return df[DETERMINISTIC].sort_values("run_key").reset_index(drop=True)


def test_find_instances_and_family(library):
    found = find_instances([library])
    assert [f.path.name for f in found] == ["tiny6.json", "tiny8.json"]
    assert all(f.error is None for f in found)
    tasks = build_tasks([library], ["ring"], seeds=2, time_limit=5)
    assert len(tasks) == 4 and {t.family for t in tasks} == {"tiny"}
    assert len({t.run_key for t in tasks}) == 4
    assert tasks[0].hard_limit_s == pytest.approx(5 * 1.5 + 30)


def test_crash_hang_exception_and_checker_are_error_rows(tmp_path, library, bad_methods):
    inst = library / "tiny" / "tiny6.json"
    # Generous hard limit for the runs that finish (the machine may be loaded), short for the hang.
    tasks = build_tasks([inst], ["test-crash", "test-boom", "test-lie", "ring"], time_limit=1,
                        hard_limit=120)
    tasks += build_tasks([inst], ["test-hang"], time_limit=1, hard_limit=2.5)
    t0 = time.perf_counter()
    summary = run_sweep(tasks, tmp_path / "s.sqlite", jobs=2, progress=False)
    assert time.perf_counter() - t0 < 30  # the hang was killed, not waited for
    assert (summary.total, summary.ran, summary.errors) == (5, 5, 4)
    rows = {r["method"]: r for r in RunStore(tmp_path / "s.sqlite").records()}
    assert rows["test-crash"]["status"] == "error"
    assert rows["test-crash"]["error"].startswith("crash: child process exit code 3")
    assert rows["test-hang"]["error"].startswith("timeout: killed after")
    assert 2.4 < rows["test-hang"]["wall_s"] < 15
    assert "RuntimeError: boom in the solver" in rows["test-boom"]["error"]
    assert rows["test-lie"]["error"].startswith("checker:")
    assert "objective" in rows["test-lie"]["error"]
    # The sweep went on: the good run is recorded with its metrics, checked and evaluated.
    ok = rows["ring"]
    assert ok["status"] == "feasible" and ok["error"] is None
    assert ok["objective"] == pytest.approx(ok["metrics"]["comm_time_s"])
    assert ok["versions"]["topoopt-milp"]


def test_rerun_skips_finished_and_retry_errors(tmp_path, library, bad_methods):
    tasks = build_tasks([library / "tiny" / "tiny6.json"], ["ring", "test-boom"], time_limit=1)
    store = tmp_path / "s.sqlite"
    first = run_sweep(tasks, store, jobs=2, progress=False)
    assert (first.ran, first.skipped) == (2, 0)
    again = run_sweep(tasks, store, progress=False)
    assert (again.ran, again.skipped) == (0, 2)
    retry = run_sweep(tasks, store, progress=False, retry_errors=True)
    assert (retry.ran, retry.skipped) == (1, 1)
    assert len(RunStore(store)) == 2


SWEEP_SCRIPT = """
import sys
sys.path.insert(0, {tests!r})
from topoopt_milp import registry
from topoopt_milp.bench.runner import build_tasks, run_sweep
registry.METHODS[{name!r}] = registry.get({target!r})
s = run_sweep(build_tasks([{inst!r}], [{name!r}], seeds={seeds}, time_limit=1, hard_limit=600),
              {store!r}, jobs={jobs}, progress=False)
print("RAN", s.ran, "HELD", s.held)
"""


def sweep_script(inst, store, target="test_bench_runner:hang", seeds=2, jobs=None) -> str:
    """Python source of a sweep of one test-only method ``target`` ("module:function" in
    tests/) with ``seeds`` seeds, ``jobs`` runs at once (default: all), a hard limit far beyond
    any test; it prints ``RAN <runs> HELD <runs>``."""
    return SWEEP_SCRIPT.format(tests=os.path.dirname(__file__), inst=str(inst), store=str(store),
                               name="test-" + target.split(":")[1],
                               target=target.replace(":", ":TEST_SPECS#test-"), seeds=seeds,
                               jobs=jobs or seeds)


def test_sigterm_kills_the_running_children(tmp_path, library):
    psutil = pytest.importorskip("psutil")
    script = sweep_script(library / "tiny" / "tiny6.json", tmp_path / "s.sqlite")
    proc = subprocess.Popen([sys.executable, "-c", script], stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    children: list = []
    while len(children) < 2 and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.1)
        children = psutil.Process(proc.pid).children()  # the runs (their guards are below)
    assert len(children) >= 2, proc.stderr.read() if proc.poll() is not None else "no children"
    children = psutil.Process(proc.pid).children(recursive=True)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=30) == 128 + signal.SIGTERM
    gone, alive = psutil.wait_procs(children, timeout=10)
    assert not alive
    assert len(RunStore(tmp_path / "s.sqlite")) == 0  # unfinished runs are not recorded


def _count(store) -> int:
    try:
        con = sqlite3.connect(f"file:{store}?mode=ro", uri=True, timeout=5)
        try:
            return con.execute("SELECT COUNT(*) FROM runs").fetchone()[0]
        finally:
            con.close()
    except sqlite3.Error:
        return 0


# ~7 s idle: 14 runs, each its own process. Kept in the default run: it is the evidence that
# an interrupted sweep loses and duplicates nothing.
def test_sigkill_mid_sweep_then_resume_equals_uninterrupted(tmp_path, library):
    args = ["bench", str(library), "--methods", "ring,expander,totientperms", "--num-seeds", "1",
            "--time-limit", "5", "--no-progress"]
    total = 6
    killed = tmp_path / "killed.sqlite"
    cmd = [sys.executable, "-c", "from topoopt_milp.cli import main; main()"]
    proc = subprocess.Popen(cmd + args + ["--store", str(killed), "--jobs", "1"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while _count(killed) < 2 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)  # the sweep process only; its current child is orphaned
    proc.wait()
    assert proc.returncode == -signal.SIGKILL
    con = sqlite3.connect(killed)
    assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    con.close()
    before = load_runs(killed)
    assert 2 <= len(before) < total, "the kill must land mid-sweep"
    assert before["status"].notna().all() and before["objective"].notna().all()

    resumed = subprocess.run(cmd + args + ["--store", str(killed), "--jobs", "2"],
                             capture_output=True, text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    assert f"{len(before)} already finished" in resumed.stdout
    after = load_runs(killed)
    assert len(after) == total and after["run_key"].is_unique
    # No finished run lost or rewritten.
    kept = after.set_index("run_key").loc[before["run_key"], "finished_at"]
    assert list(kept) == list(before["finished_at"])

    clean = tmp_path / "clean.sqlite"
    run_sweep(build_tasks([library], ["ring", "expander", "totientperms"], time_limit=5), clean,
              jobs=2, progress=False)
    assert _frame(killed).equals(_frame(clean))
    cols = [c for c in instance_table(after).columns if c != "runtime_s"]
    assert instance_table(after)[cols].equals(instance_table(load_runs(clean))[cols])


# Starts a 2-worker LocalCluster (~6 s idle). Kept in the default run: the Dask engine must
# give the same records as the local pool.
def test_dask_local_cluster_gives_the_same_records(tmp_path, library):
    distributed = pytest.importorskip("distributed")
    tasks = build_tasks([library], ["ring", "totientperms"], time_limit=5)
    run_sweep(tasks, tmp_path / "local.sqlite", jobs=2, progress=False)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster:
        summary = run_sweep(tasks, tmp_path / "dask.sqlite", engine="dask",
                            address=cluster.scheduler_address, progress=False)
    assert (summary.ran, summary.errors) == (4, 0)
    local, dask = _frame(tmp_path / "local.sqlite"), _frame(tmp_path / "dask.sqlite")
    assert len(local) == 4 and local.equals(dask)
    metrics = load_runs(tmp_path / "dask.sqlite").set_index("run_key")["metrics"]
    assert metrics.equals(load_runs(tmp_path / "local.sqlite").set_index("run_key")["metrics"])


def test_dask_engine_needs_an_address(tmp_path, library, monkeypatch):
    monkeypatch.delenv("DASK_SCHEDULER_ADDRESS", raising=False)
    tasks = build_tasks([library / "tiny" / "tiny6.json"], ["ring"])
    with pytest.raises(ValueError, match="address"):
        run_sweep(tasks, tmp_path / "s.sqlite", engine="dask", progress=False)
