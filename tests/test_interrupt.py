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
                            stderr=subprocess.STDOUT, text=True, env={**os.environ})
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
