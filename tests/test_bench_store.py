"""The SQLite run store: keys, one-transaction rows, resumability, schema guard."""

from __future__ import annotations

import math
import sqlite3

import pytest

from topoopt_milp.bench.store import COLUMN_NAMES, RunStore, StoreError, load_runs, run_key


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
