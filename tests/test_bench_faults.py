"""Fault injection on sweeps: kill -9 of the sweep (orphan count zero, no temporary file
left), a hard-limit kill of a real CBC run, a crash that leaves a solver running, a poisoned
instance folder, two `bench` processes on one store, and a full disk under a sweep."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from test_bench_runner import sweep_script
from test_bench_store import CLI, _store_with_rows
from test_cli_errors import one_error_line

from topoopt_milp import registry
from topoopt_milp.bench.runner import build_tasks, run_sweep
from topoopt_milp.bench.store import Owner, RunStore, load_runs
from topoopt_milp.cli import main
from topoopt_milp.core.spec import MethodSpec
from topoopt_milp.methods.heuristics.support import RoutingParams

psutil = pytest.importorskip("psutil")  # a dependency of distributed (test extra)

LIBRARY = Path(__file__).resolve().parents[1] / "instances"


# -- test-only methods, resolved in the child through "test_bench_faults:<name>" -------------

def _footprint(suffix: str) -> None:
    """What a MILP solver leaves while it runs: a PuLP-style temporary file and a solver
    process of its own (its output not on our pipes, as PuLP starts CBC)."""
    fd, _ = tempfile.mkstemp(suffix=suffix)
    os.close(fd)
    sleeper = subprocess.Popen(["sleep", "1000"], stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    print(f"solver pid {sleeper.pid}", file=sys.stderr, flush=True)


def litter_and_hang(instance, options):
    _footprint("-pulp.mps")
    time.sleep(10_000)


def litter_and_crash(instance, options):
    _footprint("-pulp.sol")
    os._exit(3)


def nap(instance, options):
    time.sleep(0.3)  # long enough for two sweeps to overlap
    return registry.solve(instance, "ring", options)


TEST_SPECS = tuple(MethodSpec(f"test-{f.__name__}", "alloc", "heuristic", "heuristic",
                              RoutingParams, f, "test only")
                   for f in (litter_and_hang, litter_and_crash, nap))


@pytest.fixture
def fault_methods(monkeypatch):
    for spec in registry.load_ref(f"{__name__}:TEST_SPECS"):
        monkeypatch.setitem(registry.METHODS, spec.name, spec)


@pytest.fixture
def private_tmp(tmp_path, monkeypatch):
    """A TMPDIR of our own, to see every file a sweep leaves behind."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setenv("TMPDIR", str(tmp))
    monkeypatch.setattr(tempfile, "tempdir", None)  # tempfile caches its folder
    return tmp


def _running(procs) -> list:
    alive = []
    for p in procs:
        try:
            if p.status() != psutil.STATUS_ZOMBIE:
                alive.append(p)
        except psutil.NoSuchProcess:
            pass
    return alive


def _wait_gone(procs, timeout: float = 10.0) -> list:
    deadline = time.monotonic() + timeout
    while _running(procs) and time.monotonic() < deadline:
        time.sleep(0.05)
    alive = _running(procs)
    for p in alive:  # leave the machine clean whatever the test says
        p.kill()
    return alive


# -- processes and files ----------------------------------------------------------------------

@pytest.mark.parametrize("target", ["group", "sweep"])
def test_kill9_leaves_no_process_and_no_file(tmp_path, library, private_tmp, target):
    """kill -9 of the sweep's process group (or of the sweep alone) while three runs each
    have a solver process and a temporary file: within seconds nothing is left."""
    script = sweep_script(library / "tiny" / "tiny6.json", tmp_path / "s.sqlite",
                          target="test_bench_faults:litter_and_hang", seeds=3)
    proc = subprocess.Popen([sys.executable, "-c", script], start_new_session=True,
                            stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 90
    procs: list = []
    while time.monotonic() < deadline and proc.poll() is None:
        procs = psutil.Process(proc.pid).children(recursive=True)
        if sum(p.name() == "sleep" for p in _running(procs)) == 3 and \
                len(list(private_tmp.rglob("*-pulp.mps"))) == 3:
            break
        time.sleep(0.1)
    else:
        pytest.fail(f"the sweep did not start its runs: {proc.stderr.read() if proc.poll() else ''}")
    procs = psutil.Process(proc.pid).children(recursive=True)
    assert len(procs) == 9  # per run: the child, its guard, its solver
    if target == "group":
        os.killpg(proc.pid, signal.SIGKILL)
    else:
        os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    t0 = time.monotonic()
    alive = _wait_gone(procs)
    assert alive == [], f"orphans: {[p.name() for p in alive]}"
    assert time.monotonic() - t0 < 5
    deadline = time.monotonic() + 5
    while list(private_tmp.iterdir()) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert list(private_tmp.rglob("*")) == []


@pytest.mark.parametrize("method, hard, error", [
    ("test-litter_and_crash", 120, "crash: child process exit code 3"),
    ("test-litter_and_hang", 3, "timeout: killed after"),
])
def test_crash_or_hard_limit_with_a_running_solver_leaves_nothing(
        tmp_path, library, private_tmp, fault_methods, method, hard, error):
    tasks = build_tasks([library / "tiny" / "tiny6.json"], [method], time_limit=1, hard_limit=hard)
    run_sweep(tasks, tmp_path / "s.sqlite", progress=False)
    (row,) = RunStore(tmp_path / "s.sqlite").records()
    assert row["error"].startswith(error)
    if method.endswith("crash"):  # the timeout's error has no stderr tail: look at the tree
        pid = int(re.search(r"solver pid (\d+)", row["error"]).group(1))
        with contextlib.suppress(psutil.NoSuchProcess):  # already gone and reaped: fine
            assert _wait_gone([psutil.Process(pid)], timeout=5) == []
    assert _wait_gone([p for p in psutil.Process().children(recursive=True)
                       if p.name() == "sleep"], timeout=5) == []
    assert list(private_tmp.rglob("*")) == []


# ~20 s: a real CBC run on a MILP it cannot finish within the 20 s hard limit (CBC starts
# after about 5 s of imports and model building on a loaded machine).
@pytest.mark.slow
def test_hard_limit_kill_of_cbc_leaves_no_process_and_no_file(tmp_path, private_tmp):
    inst = LIBRARY / "dnn" / "dlrm-n16-d4.json"
    tasks = build_tasks([inst], ["alloc-milp"], time_limit=120, settings={"solver": "cbc"},
                        hard_limit=20)
    seen: dict[int, psutil.Process] = {}
    stop = threading.Event()

    def watch():  # every CBC process this sweep starts
        while not stop.is_set():
            for p in psutil.Process().children(recursive=True):
                try:
                    if "cbc" in p.name().lower():
                        seen.setdefault(p.pid, p)
                except psutil.NoSuchProcess:
                    pass
            time.sleep(0.05)

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        run_sweep(tasks, tmp_path / "s.sqlite", progress=False)
    finally:
        stop.set()
        watcher.join()
    (row,) = RunStore(tmp_path / "s.sqlite").records()
    assert row["error"].startswith("timeout: killed after")
    assert seen, "CBC never started: raise the hard limit on this machine"
    assert _wait_gone(list(seen.values()), timeout=5) == []
    assert list(private_tmp.rglob("*")) == []


# -- a poisoned instance folder -----------------------------------------------------------------

def test_poisoned_folder_gives_error_rows_and_runs_the_rest(tmp_path, library, data_dir, runner):
    folder = library / "tiny"
    bad = {}  # file name -> what its error row must say
    for name, why in (("binary.json", "not valid JSON (not UTF-8 text)"),
                      ("not_json.json", "not valid JSON"),
                      ("wrong_format.json", "format: expected"),
                      ("member_out_of_range.json", "out of range"),
                      ("top_level_list.json", "expected a JSON object")):
        (folder / name).write_bytes((data_dir / "broken" / name).read_bytes())
        bad[name] = why
    # a file name that is not UTF-8 and holds a newline; a FIFO (reading it would block)
    weird = os.fsdecode(b"bad\nname-\xff.json")
    (folder / weird).write_bytes(b"\x00\x01garbage")
    bad["bad\\nname-\\xff.json"] = "not valid JSON"
    os.mkfifo(folder / "fifo.json")
    bad["fifo.json"] = "not a regular file"
    (folder / "folder.json").mkdir()  # a folder named *.json is searched, not read
    store = tmp_path / "s.sqlite"
    args = ["bench", str(library), "-m", "ring", "--num-seeds", "2", "--store", str(store),
            "--time-limit", "5", "--no-progress"]
    res = runner.invoke(main, args)
    assert res.exit_code == 0, res.output
    runs = load_runs(store)
    errors = runs[runs["status"] == "error"]
    assert len(runs) == 2 * (2 + len(bad)) and len(errors) == 2 * len(bad)  # 2 seeds
    assert set(runs.loc[runs["status"] != "error", "instance_name"]) == {"tiny6", "tiny8"}
    for name, why in bad.items():
        rows = errors[errors["instance_name"] == name]
        assert sorted(rows["seed"]) == [0, 1], name  # one per (method, seed)
        for text in rows["error"]:
            assert text.startswith("instance file ") and name in text and why in text, text
            assert "\n" not in text
    assert (errors["family"] == "tiny").all()
    # The bad files' run keys are stable: a re-run skips them like any finished run.
    again = runner.invoke(main, args)
    assert again.exit_code == 0 and f"{len(runs)} already finished" in again.output


def test_an_explicit_bad_file_is_an_error_row_too(tmp_path, data_dir):
    tasks = build_tasks([data_dir / "broken" / "solution_wrong_format.json"], ["ring"])
    run_sweep(tasks, tmp_path / "s.sqlite", progress=False)
    (row,) = RunStore(tmp_path / "s.sqlite").records()
    assert row["status"] == "error" and "solution_wrong_format.json: format: expected" in row["error"]


# -- two sweeps on one store --------------------------------------------------------------------

def test_two_concurrent_benches_run_every_run_exactly_once(tmp_path, library):
    store = tmp_path / "s.sqlite"
    script = sweep_script(library, store, target="test_bench_faults:nap", seeds=3, jobs=1)
    procs = [subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outs = [p.communicate(timeout=300) for p in procs]
    assert all(p.returncode == 0 for p in procs), [e for _, e in outs]
    ran = [int(re.search(r"RAN (\d+)", o).group(1)) for o, _ in outs]
    runs = load_runs(store)
    assert len(runs) == 6 and runs["run_key"].is_unique
    assert sum(ran) == 6, ran  # no run executed twice
    assert set(runs["status"]) == {"feasible"}
    with RunStore(store) as st:  # every claim was released
        assert st.conn.execute("SELECT COUNT(*) FROM claims").fetchone()[0] == 0


def test_live_claims_are_skipped_and_dead_ones_taken_over(tmp_path, library):
    tasks = build_tasks([library / "tiny" / "tiny6.json"], ["ring"], seeds=2)
    store = tmp_path / "s.sqlite"
    other = subprocess.Popen(["sleep", "60"])  # a live "sweep" on this host
    dead = subprocess.Popen(["true"])
    dead.wait()  # a sweep that was killed
    try:
        with RunStore(store) as st:
            for task, pid in zip(tasks, (other.pid, dead.pid), strict=True):
                owner = Owner("someone-else", socket.gethostname(), pid)
                assert st.claim(task.run_key, owner, 600) is None
            assert st.claim(tasks[0].run_key, Owner.this_process(), 600).startswith("held")
        summary = run_sweep(tasks, store, progress=False)
        assert (summary.ran, summary.held) == (1, 1)
        assert set(load_runs(store)["run_key"]) == {tasks[1].run_key}
    finally:
        other.kill()
        other.wait()
    # the live owner is gone now: its run is free
    assert run_sweep(tasks, store, progress=False).ran == 1


def test_a_claim_expires(tmp_path, library):
    (task,) = build_tasks([library / "tiny" / "tiny6.json"], ["ring"])
    with RunStore(tmp_path / "s.sqlite") as st:
        far = Owner("elsewhere", "another-host", 1)
        assert st.claim(task.run_key, far, 0.2) is None
        assert st.claim(task.run_key, Owner.this_process(), 60).startswith("held")
        time.sleep(0.3)
        assert st.claim(task.run_key, Owner.this_process(), 60) is None
        # a recorded run cannot be claimed again
        st.put({"run_key": task.run_key, "instance_name": "x", "instance_hash": "h",
                "method": "ring", "params": {}, "seed": 0, "status": "feasible"})
        assert st.claim(task.run_key, Owner.this_process(), 60) == "finished by another sweep"
        assert st.conn.execute("SELECT COUNT(*) FROM claims").fetchone()[0] == 0


# -- a full disk under a sweep ------------------------------------------------------------------

def _fill_after(monkeypatch, extra_pages: int) -> None:
    """A writer whose database may grow by ``extra_pages`` pages only: SQLite itself then
    fails with SQLITE_FULL, "database or disk is full", exactly as on a full disk."""
    prepare = RunStore._prepare_writing

    def limited(self, have):
        have = prepare(self, have)
        pages = self.conn.execute("PRAGMA page_count").fetchone()[0]
        self.conn.execute(f"PRAGMA max_page_count = {pages + extra_pages}")
        return have

    monkeypatch.setattr(RunStore, "_prepare_writing", limited)


def test_full_disk_stops_the_sweep_with_one_line_and_keeps_every_row(tmp_path, monkeypatch):
    store = tmp_path / "s.sqlite"
    keys = _store_with_rows(store, 5)
    bad = tmp_path / "lib" / "bad.json"  # a bad file: 200 error rows without any process
    bad.parent.mkdir()
    bad.write_text("not json")
    _fill_after(monkeypatch, 3)
    res = CliRunner().invoke(main, ["bench", str(bad.parent), "-m", "ring", "--num-seeds", "200",
                                    "--store", str(store), "--no-progress"])
    line = one_error_line(res, "database or disk is full")
    assert str(store) in line and "re-run to resume" in line
    monkeypatch.undo()
    runs = load_runs(store)
    assert set(keys) <= set(runs["run_key"]) and 5 < len(runs) < 205
    con = sqlite3.connect(store)
    assert con.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    assert con.execute("SELECT COUNT(*) FROM claims").fetchone() == (0,)  # released
    con.close()
    res = CliRunner().invoke(main, ["bench", str(bad.parent), "-m", "ring", "--num-seeds", "200",
                                    "--store", str(store), "--no-progress"])
    assert res.exit_code == 0 and f"{len(runs) - 5} already finished" in res.output
    assert len(load_runs(store)) == 205


FULL_TMPFS = r"""
set -e
mount -t tmpfs -o size=512k tmpfs "$D"
cp "$SEED" "$D/s.sqlite"
dd if=/dev/zero of="$D/fill" bs=4k 2>/dev/null || true
truncate -s -160k "$D/fill"
set +e
"$@" --store "$D/s.sqlite" 2> "$OUT/stderr"
echo $? > "$OUT/rc"
cp "$D"/s.sqlite* "$OUT/"
"""


def test_full_tmpfs_stops_the_sweep_with_one_line_and_keeps_every_row(tmp_path):
    """A real full disk: a 512 KiB tmpfs in a private mount namespace (skipped where
    unprivileged user namespaces are not allowed)."""
    if not shutil.which("unshare") or subprocess.run(
            ["unshare", "-rm", "sh", "-c", f"mount -t tmpfs tmpfs {tmp_path}"]).returncode:
        pytest.skip("cannot mount a tmpfs in a user namespace here")
    seed = tmp_path / "seed.sqlite"
    keys = _store_with_rows(seed, 5)
    bad = tmp_path / "lib" / "bad.json"
    bad.parent.mkdir()
    bad.write_text("not json")
    mnt, out = tmp_path / "mnt", tmp_path / "out"
    mnt.mkdir()
    out.mkdir()
    env = {**os.environ, "D": str(mnt), "SEED": str(seed), "OUT": str(out)}
    subprocess.run(["unshare", "-rm", "sh", "-c", FULL_TMPFS, "sh", *CLI, "bench", str(bad.parent),
                    "-m", "ring", "--num-seeds", "2000", "--no-progress"], env=env, check=True, timeout=300)
    assert (out / "rc").read_text().strip() == "2"
    *warnings, line = (out / "stderr").read_text().strip().splitlines()
    assert all(w.startswith("WARNING") and "bad.json" in w for w in warnings)  # the bad file
    assert line.startswith("Error: ") and str(mnt / "s.sqlite") in line
    assert "database or disk is full" in line
    runs = load_runs(out / "s.sqlite")
    assert set(keys) <= set(runs["run_key"]) and 5 < len(runs) < 2005
