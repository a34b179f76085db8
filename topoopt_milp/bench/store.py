"""The run store: one embedded SQLite file holding one row per benchmark run.

A *run* is one (instance, method, parameters, seed). Its **run key** is the SHA-256 (first 24
hex digits) of the canonical JSON ``[instance_hash, method, params, seed]``; it is the primary
key, so a run can be recorded at most once and a sweep can ask which of its runs are finished.

Durability contract (what makes sweeps resumable):

* the database runs in WAL mode; every row is written by one ``INSERT`` inside its own
  transaction, so a reader sees either the whole row or nothing -- a sweep killed with SIGKILL
  at any moment leaves no half-written row, and every row committed before the kill survives;
* rows are written only when a run has *finished* (solved, failed, crashed or timed out), by
  a single writer: the sweep's parent process, never the solver processes;
* a run key already present is finished: a re-run of the same sweep skips it (``--retry-errors``
  re-runs rows whose status is ``error``, replacing them).

Columns (see ``docs/benchmarking.md`` for how to read them): ``run_key``, ``instance_name``,
``instance_hash``, ``instance_path``, ``family``, ``n``, ``degree``, ``link_gbps``,
``instance_meta`` (JSON), ``method``, ``method_problem``, ``method_kind`` (heuristic, exact,
restricted), ``method_backend``, ``backend``, ``backend_version``, ``params`` (JSON), ``seed``,
``time_limit``, ``status``, ``scope_status`` (a restricted model's status within its model),
``objective``, ``objective_kind``, ``bound``, ``scope`` (JSON, the bound's
:class:`~topoopt_milp.scope.Scope`), ``features`` (JSON, the solution's
:class:`~topoopt_milp.scope.Features`), ``gap``, ``runtime_s`` (the method's own), ``wall_s``
(process wall clock), ``versions`` (JSON), ``host``, ``error``, ``message``, ``started_at``,
``finished_at`` (UTC ISO-8601) and ``metrics`` (JSON, the
:func:`~topoopt_milp.evaluate.evaluate` dictionary).

Schema 1 stores (before bound scopes) are upgraded in place when opened for writing: the new
columns are added empty, so their rows' bounds cover nothing and their solutions are compared
with the analytic bounds only.
"""

from __future__ import annotations

import hashlib
import json
import math
import sqlite3
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import InputError

if TYPE_CHECKING:  # pandas is imported lazily: sweep child processes never need it
    import pandas as pd

SCHEMA_VERSION = 2

# (column, SQL type); JSON columns hold text.
COLUMNS: tuple[tuple[str, str], ...] = (
    ("run_key", "TEXT PRIMARY KEY"),
    ("instance_name", "TEXT NOT NULL"),
    ("instance_hash", "TEXT NOT NULL"),
    ("instance_path", "TEXT"),
    ("family", "TEXT"),
    ("n", "INTEGER"),
    ("degree", "INTEGER"),
    ("link_gbps", "REAL"),
    ("instance_meta", "TEXT"),
    ("method", "TEXT NOT NULL"),
    ("method_problem", "TEXT"),
    ("method_kind", "TEXT"),
    ("method_backend", "TEXT"),
    ("backend", "TEXT"),
    ("backend_version", "TEXT"),
    ("params", "TEXT NOT NULL"),
    ("seed", "INTEGER NOT NULL"),
    ("time_limit", "REAL"),
    ("status", "TEXT NOT NULL"),
    ("scope_status", "TEXT"),
    ("objective", "REAL"),
    ("objective_kind", "TEXT"),
    ("bound", "REAL"),
    ("scope", "TEXT"),
    ("features", "TEXT"),
    ("gap", "REAL"),
    ("runtime_s", "REAL"),
    ("wall_s", "REAL"),
    ("versions", "TEXT"),
    ("host", "TEXT"),
    ("error", "TEXT"),
    ("message", "TEXT"),
    ("started_at", "TEXT"),
    ("finished_at", "TEXT"),
    ("metrics", "TEXT"),
)
COLUMN_NAMES = tuple(c for c, _ in COLUMNS)
JSON_COLUMNS = ("instance_meta", "params", "versions", "metrics", "scope", "features")


class StoreError(InputError):
    """The file is not a run store this version can read."""


def canonical_json(obj: Any) -> str:
    """Sorted, compact JSON with non-finite floats as null (keys and params compare as text)."""
    return json.dumps(_finite(obj), sort_keys=True, separators=(",", ":"))


def run_key(instance_hash: str, method: str, params: Mapping[str, Any], seed: int,
            family: str = "") -> str:
    """The primary key of a run: hash of ``[instance_hash, method, params, seed, family]``.

    The family is part of the key because one instance may belong to two families of a
    library (DLRM at 100 Gbps is in ``dnn/`` and in ``bandwidth/``): each family's tables
    need their own row."""
    text = canonical_json([instance_hash, method, dict(params), int(seed), family])
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def _finite(obj: Any) -> Any:
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, dict):
        return {str(k): _finite(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_finite(v) for v in obj]
    return obj


class RunStore:
    """A SQLite run store (WAL). Use as a context manager or call :meth:`close`."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        # isolation_level=None: we open and commit every transaction explicitly.
        self.conn = sqlite3.connect(self.path, timeout=60.0, isolation_level=None)
        self.conn.execute("PRAGMA journal_mode=WAL")
        # NORMAL is durable against process death (the case that matters for sweeps); only a
        # power loss may drop the last commits in WAL mode.
        self.conn.execute("PRAGMA synchronous=NORMAL")
        self._init_schema()

    def _init_schema(self) -> None:
        cur = self.conn.execute(
            "SELECT name FROM sqlite_master WHERE type='table' AND name IN ('runs','store_info')"
        )
        tables = {r[0] for r in cur}
        if "runs" in tables:
            row = self.conn.execute("SELECT value FROM store_info WHERE key='schema'").fetchone() \
                if "store_info" in tables else None
            found = None if row is None else row[0]
            if found == "1":
                self._upgrade_from_1()
            elif found != str(SCHEMA_VERSION):
                raise StoreError(f"{self.path}: run store schema {found!r}, expected {SCHEMA_VERSION}")
            return
        cols = ", ".join(f"{c} {t}" for c, t in COLUMNS)
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            self.conn.execute(f"CREATE TABLE IF NOT EXISTS runs ({cols})")
            self.conn.execute("CREATE TABLE IF NOT EXISTS store_info (key TEXT PRIMARY KEY, value TEXT)")
            self.conn.execute(
                "INSERT OR REPLACE INTO store_info VALUES ('schema', ?)", (str(SCHEMA_VERSION),)
            )
            self.conn.execute("CREATE INDEX IF NOT EXISTS runs_instance ON runs (instance_hash)")
            self.conn.execute("COMMIT")
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise

    def _upgrade_from_1(self) -> None:
        have = {r[1] for r in self.conn.execute("PRAGMA table_info(runs)")}
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            for col, typ in COLUMNS:
                if col not in have:
                    self.conn.execute(f"ALTER TABLE runs ADD COLUMN {col} {typ}")
            if "method_family" in have:
                self.conn.execute("UPDATE runs SET method_problem = method_family, method_kind = "
                                  "CASE method_backend WHEN 'heuristic' THEN 'heuristic' "
                                  "ELSE 'exact' END")
            self.conn.execute("UPDATE store_info SET value = ? WHERE key = 'schema'",
                              (str(SCHEMA_VERSION),))
            self.conn.execute("COMMIT")
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise

    # -- writing ------------------------------------------------------------------------
    def put(self, record: Mapping[str, Any], replace: bool = False) -> bool:
        """Write one finished run in a single transaction.

        Returns ``False`` (and writes nothing) when the run key is already stored and
        ``replace`` is false. Unknown keys in ``record`` are an error (a typo would otherwise
        silently drop a column)."""
        unknown = set(record) - set(COLUMN_NAMES)
        if unknown:
            raise KeyError(f"record: unknown column(s) {sorted(unknown)}")
        row = []
        for c in COLUMN_NAMES:
            v = record.get(c)
            if c in JSON_COLUMNS and v is not None and not isinstance(v, str):
                v = canonical_json(v)
            elif isinstance(v, float) and not math.isfinite(v):
                v = None  # SQLite has no inf/nan; None means "not available"
            row.append(v)
        # ON CONFLICT covers only the primary key: a NOT NULL violation still aborts (an
        # "INSERT OR IGNORE" would silently drop such a row).
        if replace:
            sets = ", ".join(f"{c} = excluded.{c}" for c in COLUMN_NAMES[1:])
            conflict = f"ON CONFLICT(run_key) DO UPDATE SET {sets}"
        else:
            conflict = "ON CONFLICT(run_key) DO NOTHING"
        marks = ", ".join("?" for _ in COLUMN_NAMES)
        sql = f"INSERT INTO runs ({', '.join(COLUMN_NAMES)}) VALUES ({marks}) {conflict}"
        self.conn.execute("BEGIN IMMEDIATE")  # one transaction per row
        try:
            cur = self.conn.execute(sql, row)
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        self.conn.execute("COMMIT")
        return cur.rowcount == 1

    # -- reading ------------------------------------------------------------------------
    def finished_keys(self, include_errors: bool = True) -> set[str]:
        """Run keys already recorded (optionally without ``error`` rows, to retry them)."""
        sql = "SELECT run_key FROM runs"
        if not include_errors:
            sql += " WHERE status != 'error'"
        return {r[0] for r in self.conn.execute(sql)}

    def __len__(self) -> int:
        return int(self.conn.execute("SELECT COUNT(*) FROM runs").fetchone()[0])

    def records(self) -> list[dict[str, Any]]:
        """Every row as a dict with JSON columns decoded, ordered by run key."""
        cur = self.conn.execute(f"SELECT {', '.join(COLUMN_NAMES)} FROM runs ORDER BY run_key")
        out = []
        for row in cur:
            rec = dict(zip(COLUMN_NAMES, row, strict=True))
            for c in JSON_COLUMNS:
                if rec[c] is not None:
                    rec[c] = json.loads(rec[c])
            out.append(rec)
        return out

    def dataframe(self) -> pd.DataFrame:
        """Every row as a DataFrame (JSON columns decoded to dicts)."""
        import pandas as pd

        return pd.DataFrame(self.records(), columns=list(COLUMN_NAMES))

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> RunStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def load_runs(paths: str | Path | Iterable[str | Path]) -> pd.DataFrame:
    """Read one or several stores into one DataFrame (rows with the same key: first wins)."""
    import pandas as pd

    if isinstance(paths, str | Path):
        paths = [paths]
    frames = []
    for p in paths:
        if not Path(p).is_file():
            raise FileNotFoundError(f"store: no such file {p}")
        with RunStore(p) as store:
            frames.append(store.dataframe())
    df = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=list(COLUMN_NAMES))
    return df.drop_duplicates("run_key").reset_index(drop=True)
