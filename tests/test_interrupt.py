"""Ctrl-C during `solve` stops the solver, writes the incumbent (status feasible) and exits 130."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from topoopt_milp.workloads import generators

CLI = [sys.executable, "-c", "from topoopt_milp.cli import main; main()"]


def _default_sigint():
    """In the child before exec: SIGINT back to its default. A shell without job control
    starts background commands (``cmd &``, nohup) with SIGINT ignored, children inherit
    that, and Python then installs no KeyboardInterrupt handler: the test would measure how
    pytest was launched, not the CLI."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.parametrize(("method", "marker"), [("alloc-milp", "MIP"), ("select-cpsat", "#")])
def test_ctrl_c_writes_the_incumbent_and_exits_130(tmp_path, method, marker):
    # instances no solver finishes in a minute: mixed n = 16 (alloc), uniform n = 96 (select)
    if method == "alloc-milp":
        inst = generators.generate("mixed", n=16, degree=4, gbps=100, seed=0, groups=4,
                                   mp_share=0.3)
    else:
        inst = generators.generate("uniform", n=96, degree=4, gbps=100, bytes=1e7)
    path, out = tmp_path / "inst.json", tmp_path / "sol.json"
    inst.save(path)
    proc = subprocess.Popen([*CLI, "solve", str(path), "-m", method, "--time-limit", "120",
                             "--solver-log", "--out", str(out)], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, env={**os.environ},
                            preexec_fn=_default_sigint)
    deadline = time.monotonic() + 90
    seen = 0
    for line in proc.stdout:  # the solver's own log: interrupt once it is searching
        seen += marker in line
        if seen >= 3 or time.monotonic() > deadline:
            break
    assert seen >= 3, "the solver never started"
    t0 = time.monotonic()
    proc.send_signal(signal.SIGINT)
    rest, _ = proc.communicate(timeout=60)
    assert proc.returncode == 130, rest[-2000:]
    assert time.monotonic() - t0 < 30
    sol = json.loads(out.read_text())
    assert sol["status"] == "feasible" and sol["info"]["interrupted"] is True
    assert sol["objective"] is not None and sol["bound"] <= sol["objective"]
    assert "interrupted" in rest


def _mixed16(tmp_path):
    inst = generators.generate("mixed", n=16, degree=4, gbps=100, seed=0, groups=4, mp_share=0.3)
    path = tmp_path / "inst.json"
    inst.save(path)
    return path


def test_sigterm_during_cbc_kills_cbc_and_removes_its_folder(tmp_path):
    psutil = pytest.importorskip("psutil")
    private = tmp_path / "tmp"
    private.mkdir()
    out = tmp_path / "sol.json"
    proc = subprocess.Popen([*CLI, "solve", str(_mixed16(tmp_path)), "-m", "alloc-milp",
                             "--solver", "cbc", "--time-limit", "300", "--out", str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "TMPDIR": str(private)})
    deadline = time.monotonic() + 120
    cbc = []
    while not cbc and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.2)
        cbc = [c for c in psutil.Process(proc.pid).children() if c.name() == "cbc"]
    assert cbc, "CBC never started: " + (proc.stderr.read() if proc.poll() is not None else "")
    time.sleep(1.0)  # CBC is searching, its folder full
    assert any(private.iterdir())
    t0 = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 143, err[-2000:]
    assert time.monotonic() - t0 < 20
    gone, alive = psutil.wait_procs(cbc, timeout=5)
    assert not alive, "CBC outlived the solve"
    assert not list(private.iterdir()), "CBC's temporary folder was left behind"
    assert "terminated (SIGTERM)" in err and "Traceback" not in err
    assert not out.exists()  # nothing half-written


def test_sigterm_during_highs_writes_the_incumbent_and_exits_143(tmp_path):
    out = tmp_path / "sol.json"
    proc = subprocess.Popen([*CLI, "solve", str(_mixed16(tmp_path)), "-m", "alloc-milp",
                             "--time-limit", "120", "--solver-log", "--out", str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    seen = 0
    deadline = time.monotonic() + 90
    for line in proc.stdout:  # the solver's own log: stop it once it is searching
        seen += "MIP" in line
        if seen >= 3 or time.monotonic() > deadline:
            break
    assert seen >= 3, "the solver never started"
    proc.send_signal(signal.SIGTERM)
    rest, _ = proc.communicate(timeout=60)
    assert proc.returncode == 143, rest[-2000:]
    sol = json.loads(out.read_text())
    assert sol["status"] == "feasible" and sol["info"]["interrupted"] is True
    assert "terminated (SIGTERM)" in rest


def test_ctrl_c_on_bench_exits_130_and_keeps_finished_runs(tmp_path, library):
    from topoopt_milp.bench.store import load_runs

    store = tmp_path / "s.sqlite"
    cmd = [*CLI, "bench", str(library), "--methods", "ring,expander,totientperms",
           "--time-limit", "5", "--no-progress", "--jobs", "1", "--store", str(store)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=_default_sigint)
    deadline = time.monotonic() + 120
    while proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)
        try:
            if len(load_runs(store)) >= 2:
                break
        except Exception:  # noqa: BLE001 - the store is still being created
            continue
    assert proc.poll() is None, "the sweep ended before it could be interrupted"
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err[-2000:]
    assert "Aborted!" not in err and "Traceback" not in err and "interrupted" in err
    kept = load_runs(store)
    assert len(kept) >= 2 and kept["status"].notna().all()
    resumed = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    assert f"{len(kept)} already finished" in resumed.stdout
