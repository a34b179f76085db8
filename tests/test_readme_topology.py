"""The README's "A topology from elsewhere" example runs exactly as written: its Python block
(route a networkx graph) and its command (the same graph as an edge list), from a folder
where the README's relative paths resolve."""

from __future__ import annotations

import contextlib
import io
import re
import shlex
from pathlib import Path

from topoopt_milp.cli import main

ROOT = Path(__file__).resolve().parents[1]


def example_blocks() -> dict[str, str]:
    text = (ROOT / "README.md").read_text()
    body = text.split("<!-- example: networkx-topology -->", 1)[1].split("<!-- end example -->")[0]
    blocks = dict(re.findall(r"```(python|bash)\n(.*?)```", body, re.S))
    assert set(blocks) == {"python", "bash"}
    return blocks


def test_readme_networkx_example_runs(tmp_path, monkeypatch, runner):
    blocks = example_blocks()
    (tmp_path / "instances").symlink_to(ROOT / "instances")
    monkeypatch.chdir(tmp_path)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(blocks["python"], "README.md", "exec"), {"__name__": "__readme__"})
    printed = out.getvalue().strip()
    # the comment after print() in the README is what it prints
    promised = re.search(r"print\(.*\)\s+# (.*)", blocks["python"]).group(1).strip()
    assert printed == promised, (printed, promised)
    assert (tmp_path / "g.edgelist").exists()

    argv = shlex.split(blocks["bash"].strip())
    assert argv[0] == "topoopt-milp"
    r = runner.invoke(main, argv[1:])
    assert r.exit_code == 0, r.output
    assert "checker: OK" in r.stdout
    # the command routes the same graph to the same optimum as the Python lines
    value = re.search(r"route-milp on the topology and rings: optimal, ([0-9.e-]+) s", r.stdout)
    assert value, r.stdout
    assert f"{float(value.group(1)):.4g} s" == printed.split(" ", 1)[1]
