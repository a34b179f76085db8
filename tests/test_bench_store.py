"""The SQLite run store: keys, one-transaction rows, resumability, schema guard, and fault
injection: corrupt, truncated, foreign, newer and read-only stores (a full disk under a
sweep: tests/test_bench_faults.py)."""

from __future__ import annotations

import hashlib
import json
import math
import os
import random
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from test_cli_errors import one_error_line

from topoopt_milp.bench.store import COLUMN_NAMES, RunStore, StoreError, load_runs, run_key
from topoopt_milp.cli import main

CLI = [sys.executable, "-c", "from topoopt_milp.cli import main; main()"]


def _rec(key="k1", **over):
    rec = {
        "run_key": key, "instance_name": "tiny", "instance_hash": "abc", "family": "small",
        "n": 6, "degree": 4, "link_gbps": 100.0, "instance_meta": {"family": "small"},
        "method": "ring", "method_problem": "alloc", "method_kind": "heuristic",
        "method_backend": "heuristic",
        "params": {"time_limit": 5.0}, "seed": 0, "status": "feasible", "objective": 0.5,
        "bound": None, "runtime_s": 0.01, "metrics": {"comm_time_s": 0.5, "diameter": math.inf},
    }
    rec.update(over)
    return rec


def test_run_key_is_canonical_and_sensitive():
    k = run_key("h", "ring", {"a": 1, "b": 2}, 0)
    assert k == run_key("h", "ring", {"b": 2, "a": 1}, 0)  # key order does not matter
    p = {"a": 1, "b": 2}
    others = {run_key("h", "ring", {"a": 1, "b": 3}, 0), run_key("h", "ring", p, 1),
              run_key("h", "expander", p, 0), run_key("g", "ring", p, 0)}
    assert len(others | {k}) == 5


def test_put_roundtrip_wal_and_json(tmp_path):
    path = tmp_path / "runs.sqlite"
    with RunStore(path) as st:
        assert st.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert st.put(_rec())
        assert len(st) == 1
        (r,) = st.records()
    assert r["params"] == {"time_limit": 5.0}
    assert r["metrics"]["diameter"] is None  # non-finite -> null, the JSON stays valid
    assert r["objective"] == 0.5 and r["bound"] is None
    assert set(r) == set(COLUMN_NAMES)
    df = load_runs(path)
    assert list(df["method"]) == ["ring"]


def test_duplicate_key_is_skipped_unless_replace(tmp_path):
    with RunStore(tmp_path / "s.sqlite") as st:
        assert st.put(_rec(objective=1.0))
        assert not st.put(_rec(objective=2.0))  # finished run: not written twice
        assert st.records()[0]["objective"] == 1.0
        assert st.put(_rec(objective=3.0, status="error"), replace=True)
        assert len(st) == 1 and st.records()[0]["objective"] == 3.0
        assert st.finished_keys() == {"k1"}
        assert st.finished_keys(include_errors=False) == set()


def test_failed_write_leaves_no_row(tmp_path):
    with RunStore(tmp_path / "s.sqlite") as st:
        with pytest.raises(sqlite3.IntegrityError):
            st.put(_rec(status=None))  # NOT NULL violated inside the transaction
        assert len(st) == 0
        with pytest.raises(KeyError, match="unknown column"):
            st.put({**_rec(), "objectiv": 1.0})
        assert len(st) == 0


def test_rows_visible_to_a_second_connection_immediately(tmp_path):
    path = tmp_path / "s.sqlite"
    with RunStore(path) as writer, RunStore(path) as reader:
        writer.put(_rec("a"))
        assert reader.finished_keys() == {"a"}


def test_schema_guard_and_missing_file(tmp_path):
    bad = tmp_path / "bad.sqlite"
    con = sqlite3.connect(bad)
    con.execute("CREATE TABLE runs (x)")
    con.commit()
    con.close()
    with pytest.raises(StoreError, match="schema"):
        RunStore(bad)
    with pytest.raises(FileNotFoundError, match="no such file"):
        load_runs(tmp_path / "nope.sqlite")


def test_load_runs_merges_stores(tmp_path):
    for name, keys in (("a.sqlite", ["k1", "k2"]), ("b.sqlite", ["k2", "k3"])):
        with RunStore(tmp_path / name) as st:
            for k in keys:
                st.put(_rec(k))
    df = load_runs([tmp_path / "a.sqlite", tmp_path / "b.sqlite"])
    assert sorted(df["run_key"]) == ["k1", "k2", "k3"]


# -- faults: every one is one line naming the store, and no committed row is lost ------------

def _digest(path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _store_with_rows(path, n=40) -> list[str]:
    keys = [f"k{i:03d}" for i in range(n)]
    with RunStore(path) as st:
        for k in keys:
            st.put(_rec(k, metrics={"comm_time_s": 0.5, "pad": "x" * 2000}))
    return keys


def _foreign(path):
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE moz_places (url TEXT)")
    con.execute("INSERT INTO moz_places VALUES ('https://example.org')")
    con.commit()
    con.close()


def _truncated(path):
    _store_with_rows(path, 200)
    os.truncate(path, os.path.getsize(path) // 2)


def _newer_schema(path):
    _store_with_rows(path, 1)
    con = sqlite3.connect(path)
    con.execute("UPDATE store_info SET value = '9' WHERE key = 'schema'")
    con.commit()
    con.close()


BAD_STORES = {  # how to make it -> what the one line must say
    "random": (lambda p: Path(p).write_bytes(random.Random(0).randbytes(16384)),
               "file is not a database"),
    "text": (lambda p: Path(p).write_text('{"format": "topoopt-instance/1"}\n'),
             "file is not a database"),
    "foreign": (_foreign, "not a run store"),
    "truncated": (_truncated, "malformed"),
    "newer": (_newer_schema, "run store schema '9'"),
}


@pytest.mark.parametrize("kind", sorted(BAD_STORES))
def test_bad_store_is_one_line_for_readers_and_writers_and_stays_untouched(
        tmp_path, kind, instance_dict):
    make, expected = BAD_STORES[kind]
    store = tmp_path / "bad.sqlite"
    make(store)
    before = _digest(store)
    inst = tmp_path / "inst.json"
    inst.write_text(json.dumps(instance_dict))
    runner = CliRunner()
    for args in (["table", str(store)],
                 ["bench", str(inst), "-m", "ring", "--store", str(store), "--no-progress"]):
        line = one_error_line(runner.invoke(main, args), expected)
        assert str(store) in line
        assert _digest(store) == before, args  # nothing written into it
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.sqlite", "inst.json"]


def test_readers_never_change_the_store(tmp_path):
    store = tmp_path / "runs.sqlite"
    _store_with_rows(store, 3)
    before, mtime = _digest(store), store.stat().st_mtime_ns
    runner = CliRunner()
    for args in (["table", str(store)], ["table", str(store), "--by", "family"],
                 ["report", str(store), "--out", str(tmp_path / "rep"), "--figure-format", "png"]):
        res = runner.invoke(main, args)
        assert res.exit_code == 0, res.output
    assert len(load_runs(store)) == 3
    assert (_digest(store), store.stat().st_mtime_ns) == (before, mtime)


SCHEMA1 = ("run_key TEXT PRIMARY KEY, instance_name TEXT NOT NULL, instance_hash TEXT NOT NULL, "
           "family TEXT, n INTEGER, method TEXT NOT NULL, method_family TEXT, method_backend TEXT, "
           "params TEXT NOT NULL, seed INTEGER NOT NULL, status TEXT NOT NULL, objective REAL, "
           "metrics TEXT")


def test_schema1_store_is_read_as_is_and_upgraded_only_by_a_writer(tmp_path):
    store = tmp_path / "old.sqlite"
    con = sqlite3.connect(store)
    con.execute(f"CREATE TABLE runs ({SCHEMA1})")
    con.execute("CREATE TABLE store_info (key TEXT PRIMARY KEY, value TEXT)")
    con.execute("INSERT INTO store_info VALUES ('schema', '1')")
    con.execute("INSERT INTO runs VALUES ('k', 'A', 'h', 'f', 6, 'ring', 'alloc', 'heuristic', "
                "'{}', 0, 'feasible', 0.5, '{\"comm_time_s\": 0.5}')")
    con.commit()
    con.close()
    before = _digest(store)
    (row,) = load_runs(store).to_dict("records")
    assert (row["method_problem"], row["method_kind"], row["scope"]) == ("alloc", "heuristic", None)
    assert row["metrics"] == {"comm_time_s": 0.5}
    assert _digest(store) == before  # no upgrade on read
    with RunStore(store) as st:  # a writer upgrades in place and keeps the row
        assert st.records()[0]["method_kind"] == "heuristic"
    con = sqlite3.connect(store)
    assert con.execute("SELECT value FROM store_info").fetchone() == ("2",)
    con.close()


def test_rows_committed_before_a_kill_are_read_from_the_wal(tmp_path):
    """A sweep killed with SIGKILL leaves a -wal file holding committed rows; a reader sees
    them and changes neither the store nor its -wal (the -shm file is SQLite's shared-memory
    index, in which every reader marks what it reads)."""
    store = tmp_path / "s.sqlite"
    script = (f"from topoopt_milp.bench.store import RunStore\nimport os, sys\n"
              f"sys.path.insert(0, {str(Path(__file__).parent)!r})\nfrom test_bench_store import _rec\n"
              f"st = RunStore({str(store)!r})\nst.put(_rec('a'))\nst.put(_rec('b'))\nos._exit(0)\n")
    subprocess.run([sys.executable, "-c", script], check=True)
    assert Path(f"{store}-wal").stat().st_size > 0
    files = [store, Path(f"{store}-wal")]
    before = [_digest(p) for p in files]
    assert sorted(load_runs(store)["run_key"]) == ["a", "b"]
    assert [_digest(p) for p in files] == before


def _unprivileged(cmd: list[str]) -> list[str]:
    """``cmd`` run so that file permissions apply (root in a user namespace of its own has no
    capability over our files); skip where that is not possible."""
    if os.geteuid() != 0:
        return cmd
    if shutil.which("unshare") and subprocess.run(["unshare", "--user", "true"]).returncode == 0:
        return ["unshare", "--user", *cmd]
    pytest.skip("root without unshare: permissions cannot make a store read-only here")


@pytest.mark.parametrize("what", ["file", "folder"])
def test_read_only_store_refuses_bench_and_serves_table(tmp_path, instance_dict, what):
    folder = tmp_path / "ro"
    folder.mkdir()
    store = folder / "runs.sqlite"
    keys = _store_with_rows(store, 3)
    inst = tmp_path / "inst.json"
    inst.write_text(json.dumps(instance_dict))
    before = _digest(store)
    (store if what == "file" else folder).chmod(0o444 if what == "file" else 0o555)
    try:
        bench = subprocess.run(_unprivileged(CLI + ["bench", str(inst), "-m", "ring", "--store",
                                                    str(store), "--no-progress"]),
                               capture_output=True, text=True, timeout=120)
        assert bench.returncode == 2, bench.stderr
        (line,) = bench.stderr.strip().splitlines()
        assert str(store) in line and "readonly" in line and "write access" in line
        table = subprocess.run(_unprivileged(CLI + ["table", str(store), "--format", "csv"]),
                               capture_output=True, text=True, timeout=120)
        assert table.returncode == 0, table.stderr
        assert table.stdout.count("\n") == 2  # header + one (instance, method) row
    finally:
        folder.chmod(0o755)
        store.chmod(0o644)
    assert _digest(store) == before and sorted(load_runs(store)["run_key"]) == keys
