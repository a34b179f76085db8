"""The up-front refusal of a time limit, end to end (issue 20): ``solve --time-limit 3`` on
an instance whose work after the solver (evaluating, checking and writing 159,600 routed
commodities: core/deadline.after_solver_s, >= 11.5 s on an idle core) exceeds the allowance
max(1.2 x 3, 3 + 5) = 8 s is refused before any work: exit 2, one line on stderr naming
the limit and the smallest one that would do, no traceback, no file written."""

from __future__ import annotations

import re
import subprocess
import sys

from topoopt_milp.core.deadline import after_solver_s, allowance

CLI = [sys.executable, "-c", "from topoopt_milp.cli import main; main()"]


def test_solve_refuses_a_limit_too_small_for_the_work_after_the_solver(tmp_path):
    inst, out = tmp_path / "u400.json", tmp_path / "sol.json"
    gen = subprocess.run([*CLI, "generate", "uniform", "--n", "400", "-d", "4", "--out",
                          str(inst)], capture_output=True, text=True, timeout=120)
    assert gen.returncode == 0, gen.stderr
    assert after_solver_s(400 * 399) > allowance(3)  # the case holds at any load
    res = subprocess.run([*CLI, "solve", str(inst), "-m", "select-milp", "--time-limit", "3",
                          "--out", str(out)], capture_output=True, text=True, timeout=300)
    assert res.returncode == 2, (res.returncode, res.stderr)
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1, res.stderr
    assert "Traceback" not in res.stderr
    m = re.search(r"--time-limit 3: cannot be honoured: .* give --time-limit (\d+) or more$",
                  lines[0])
    assert m, lines[0]
    assert "(n = 400)" in lines[0]  # names the instance
    assert allowance(int(m.group(1))) > allowance(3)
    assert not out.exists()
