"""Every ``--out`` write failure is one line naming the file (exit code 2), never a traceback,
and never loses the work: what can be known up front (an empty name, a name too long, a
missing folder) is refused before any work; what cannot (a full disk, a place that refuses
the file) keeps the content in a temporary file that the error names."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from test_tables import RECORDS

from topoopt_milp.bench.store import RunStore
from topoopt_milp.cli import main
from topoopt_milp.core.outfile import OutputError, check_writable, write_text
from topoopt_milp.workloads import generators

FULL = "/dev/full"  # every write fails with ENOSPC: a full disk
REFUSING = "/sys/topoopt-test.json"  # sysfs refuses new files, for root as well
LONG = "x" * 300 + ".json"  # longer than any file system's 255-byte names

needs_full = pytest.mark.skipif(not os.path.exists(FULL), reason="no /dev/full")
needs_sys = pytest.mark.skipif(not os.path.isdir("/sys/kernel"), reason="no sysfs")


@pytest.fixture
def files(tmp_path):
    inst = generators.sparse(8, 2, pairs=6, groups=1, group_size=4, seed=3)
    instance = tmp_path / "inst.json"
    inst.save(instance)
    store = tmp_path / "runs.sqlite"
    with RunStore(store) as st:
        for r in RECORDS:
            st.put(r)
    return {"instance": instance, "store": store, "tmp": tmp_path}


@pytest.fixture
def solution(files, runner):
    sol = files["tmp"] / "sol.json"
    r = runner.invoke(main, ["solve", str(files["instance"]), "-m", "ring", "--out", str(sol)])
    assert r.exit_code == 0, r.output
    return sol


def _commands(files, solution, target):
    return {
        "solve": ["solve", str(files["instance"]), "-m", "ring", "--out", target],
        "table": ["table", str(files["store"]), "--by", "family", "--out", target],
        "export": ["export", str(solution), "--format", "edgelist", "--out", target],
        "export-graphml": ["export", str(solution), "--out", target],
        "export-routing": ["export", str(solution), "--format", "routing", "--out", target],
        "generate": ["generate", "uniform", "--n", "8", "--degree", "2", "--gbps", "100",
                     "--out", target],
    }


def _error_line(result) -> str:
    assert result.exit_code == 2, (result.exit_code, result.output)
    assert isinstance(result.exception, SystemExit), result.exception  # no uncaught exception
    assert "Traceback" not in result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: --out: "), result.stderr
    return lines[0]


def _saved(line: str) -> Path:
    m = re.search(r"the output was saved to (\S+) instead", line)
    assert m, line
    return Path(m.group(1))


@pytest.mark.parametrize("command", ["solve", "table", "export", "export-graphml",
                                     "export-routing", "generate"])
@pytest.mark.parametrize("target", [pytest.param(FULL, marks=needs_full),
                                    pytest.param(REFUSING, marks=needs_sys)])
def test_a_failed_write_keeps_the_work(runner, files, solution, command, target):
    r = runner.invoke(main, _commands(files, solution, target)[command])
    line = _error_line(r)
    assert target in line
    spare = _saved(line)
    try:
        text = spare.read_text()
        assert text.strip()  # the content the command made, complete
        if command in ("solve", "generate"):
            assert json.loads(text)["format"].startswith("topoopt-")
        if command == "export":
            assert all(len(ln.split()) == 3 for ln in text.splitlines())
    finally:
        spare.unlink()


@pytest.mark.parametrize("command", ["solve", "table", "export", "generate"])
@pytest.mark.parametrize(("name", "expected"), [
    ("", "the file name is empty"),
    (LONG, "the file name is 305 bytes long"),
    ("y" * 300 + "/a.json", "a folder name is 300 bytes long"),
    ("missing-folder/a.json", "does not exist"),
])
def test_an_unwritable_name_is_refused_before_the_work(runner, files, solution, command, name,
                                                       expected, monkeypatch):
    monkeypatch.chdir(files["tmp"])
    if command == "solve":  # refused before solving: the method is never called
        import topoopt_milp.cli.core as cli_core

        monkeypatch.setattr(cli_core, "solve_checked", lambda *a, **k: pytest.fail("solved"))
    line = _error_line(runner.invoke(main, _commands(files, solution, name)[command]))
    assert expected in line and "saved to" not in line


def test_report_folder_errors(runner, files):
    r = runner.invoke(main, ["report", str(files["store"]), "--out", ""])
    assert "the folder name is empty" in _error_line(r)
    r = runner.invoke(main, ["report", str(files["store"]), "--out", "z" * 300])
    assert "cannot create the folder" in _error_line(r)
    if os.path.isdir("/sys/kernel"):
        r = runner.invoke(main, ["report", str(files["store"]), "--out", "/sys/topoopt-report"])
        assert "/sys/topoopt-report: cannot" in _error_line(r)


@needs_full
def test_write_text_removes_nothing_it_did_not_make_and_names_the_spare(tmp_path):
    with pytest.raises(OutputError, match="cannot write /dev/full") as info:
        write_text(FULL, "data")
    spare = _saved(str(info.value))
    assert spare.read_text() == "data"
    spare.unlink()
    assert os.path.exists(FULL)  # the device is not removed as a "partial file"
    assert check_writable(tmp_path / "ok.json") == tmp_path / "ok.json"
    with pytest.raises(OutputError, match="is a folder"):
        check_writable(tmp_path)
