"""User methods as plug-ins: the worked example of docs/plugins.md (tests/plugins/), installed
by this test into a private folder, appears in `methods` and works in solve, bench and table;
a method given as package.module:NAME loads without installing; a broken plug-in is one line
naming it, and every other method still works."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).parent / "plugins" / "topoopt-plugin-example"
ROOT = Path(__file__).resolve().parents[1]


def cli(*args, path: list[Path], cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([*map(str, path), *filter(None, [
        env.get("PYTHONPATH")])])
    cmd = [sys.executable, "-c", "from topoopt_milp.cli import main; main(prog_name='topoopt-milp')",
           *map(str, args)]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env, cwd=cwd)


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """The example package installed (pip, no dependencies) into a folder of its own."""
    target = tmp_path_factory.mktemp("site")
    proc = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps",
                           "--no-build-isolation", "--target", str(target), str(EXAMPLE)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert list(target.glob("topoopt_plugin_example-*.dist-info"))
    return target


def test_installed_plugin_is_listed_and_solves(installed, tmp_path):
    listed = cli("methods", path=[installed], cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    assert "chordal-ring" in listed.stdout and "ports-bound" in listed.stdout
    assert "bound scope: every topology with the port budget; any ring orders" in listed.stdout
    inst = ROOT / "instances" / "small" / "dlrm-n8-d4-s0.json"
    out = tmp_path / "sol.json"
    solved = cli("solve", inst, "--method", "chordal-ring", "--set", "stretch=1.5", "--out", out,
                 path=[installed], cwd=tmp_path)
    assert solved.returncode == 0, solved.stderr
    sol = json.loads(out.read_text())
    assert sol["method"] == "chordal-ring" and sol["status"] == "feasible"
    checked = cli("evaluate", inst, out, path=[installed], cwd=tmp_path)
    assert checked.returncode == 0 and "checker: OK" in checked.stdout, checked.stdout


def test_plugin_in_bench_and_table_is_measured_against_its_declared_bound(installed, tmp_path):
    inst = ROOT / "instances" / "small" / "dlrm-n8-d4-s0.json"
    store = tmp_path / "runs.sqlite"
    ran = cli("bench", inst, "--methods", "chordal-ring,ports-bound,topologyfinder",
              "--time-limit", "30", "--store", store, "--jobs", "1", "--no-progress",
              path=[installed], cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    table = cli("table", store, "--by", "instance", "--format", "csv", path=[installed],
                cwd=tmp_path)
    assert table.returncode == 0, table.stderr
    text = table.stdout
    assert "chordal-ring" in text and "ports-bound" in text


def test_a_reference_loads_without_installing(tmp_path):
    inst = ROOT / "instances" / "small" / "dlrm-n8-d4-s0.json"
    out = tmp_path / "sol.json"
    solved = cli("solve", inst, "--method", "topoopt_plugin_example:SPECS#chordal-ring",
                 "--out", out, path=[EXAMPLE], cwd=tmp_path)
    assert solved.returncode == 0, solved.stderr
    assert json.loads(out.read_text())["method"] == "chordal-ring"
    bad = cli("solve", inst, "--method", "no_such_module:SPEC", "--out", out,
              path=[EXAMPLE], cwd=tmp_path)
    assert bad.returncode == 2
    assert bad.stderr.strip().count("\n") == 0 and "no_such_module:SPEC" in bad.stderr


def test_a_broken_plugin_is_named_and_the_others_still_work(tmp_path):
    site = tmp_path / "site"
    dist = site / "broken_plugin-0.1.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: broken-plugin\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[topoopt_milp.methods]\nbroken = missing_mod:SPEC\n")
    listed = cli("methods", path=[site], cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    assert "totientperms" in listed.stdout
    lines = [x for x in listed.stderr.splitlines() if "broken" in x]
    assert len(lines) == 1 and "missing_mod:SPEC" in lines[0], listed.stderr
    inst = ROOT / "instances" / "small" / "dlrm-n8-d4-s0.json"
    solved = cli("solve", inst, "--method", "topologyfinder", "--out", tmp_path / "s.json",
                 path=[site], cwd=tmp_path)
    assert solved.returncode == 0, solved.stderr
