"""The run store: one embedded SQLite file holding one row per benchmark run.

A *run* is one (instance, method, parameters, seed). Its **run key** is the SHA-256 (first 24
hex digits) of the canonical JSON ``[instance_hash, method, params, seed]``; it is the primary
key, so a run can be recorded at most once and a sweep can ask which of its runs are finished.

Durability contract (what makes sweeps resumable):

* the database runs in WAL mode; every row is written by one ``INSERT`` inside its own
  transaction, so a reader sees either the whole row or nothing -- a sweep killed with SIGKILL
  at any moment leaves no half-written row, and every row committed before the kill survives;
* rows are written only when a run has *finished* (solved, failed, crashed or timed out), by
  sweep processes, never by the solver processes;
* a run key already present is finished: a re-run of the same sweep skips it (``--retry-errors``
  re-runs rows whose status is ``error``, replacing them);
* before a run starts its sweep **claims** it (table ``claims``: run key, owner, lease expiry;
  :meth:`RunStore.claim`), so two sweeps on one store never run the same run; recording the
  run removes the claim in the same transaction.

Faults. Any SQLite failure that is not a bug of ours -- a file that is not a database, a
corrupt or truncated one (``PRAGMA quick_check`` on opening), another program's SQLite
database, a read-only file or folder, a full disk, a store locked for a minute -- is a
:class:`StoreError`: one line naming the store and the cause (the command line exits with
code 2). A failed write rolls back its own transaction only, so no committed row is lost;
nothing is written into a file that is not a run store.

Readers (:func:`load_runs`, hence ``table``, ``plot``, ``report``) open the store read-only
(``mode=ro``) and never change it; a schema-1 store is read as it is (the columns it lacks
read as empty). Writers upgrade a schema-1 store (before bound scopes) in place: the new
columns are added empty, so their rows' bounds cover nothing and their solutions are compared
with the analytic bounds only.

Columns (see ``docs/benchmarking.md`` for how to read them): ``run_key``, ``instance_name``,
``instance_hash``, ``instance_path``, ``family``, ``n``, ``degree``, ``link_gbps``,
``instance_meta`` (JSON), ``method``, ``method_problem``, ``method_kind`` (heuristic, exact,
restricted), ``method_backend``, ``backend``, ``backend_version``, ``params`` (JSON), ``seed``,
``time_limit``, ``status``, ``scope_status`` (a restricted model's status within its model),
``objective``, ``objective_kind``, ``bound``, ``scope`` (JSON, the bound's
:class:`~topoopt_milp.core.scope.Scope`), ``features`` (JSON, the solution's
:class:`~topoopt_milp.core.scope.Features`), ``gap``, ``runtime_s`` (the method's own), ``wall_s``
(process wall clock), ``versions`` (JSON), ``host``, ``error``, ``message``, ``started_at``,
``finished_at`` (UTC ISO-8601) and ``metrics`` (JSON, the
:func:`~topoopt_milp.core.evaluate.evaluate` dictionary).
"""


from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import socket
import sqlite3
import time
import urllib.parse
import uuid
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.errors import InputError
from .names import display_path

if TYPE_CHECKING:  # pandas is imported lazily: sweep child processes never need it
    import pandas as pd

SCHEMA_VERSION = 2
READABLE_SCHEMAS = ("1", "2")

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
# Schema 1 had ``method_family`` (today's ``method_problem``) and no ``method_kind``: how the
# upgrade fills them, and how a reader computes them from a schema-1 store it may not change.
LEGACY = {
    "method_problem": "method_family",
    "method_kind": "CASE method_backend WHEN 'heuristic' THEN 'heuristic' ELSE 'exact' END",
}
CLAIMS_TABLE = ("CREATE TABLE IF NOT EXISTS claims (run_key TEXT PRIMARY KEY, owner TEXT NOT NULL, "
                "host TEXT, pid INTEGER, expires REAL NOT NULL)")


class StoreError(InputError):
    """The run store cannot be read or written: the message names the file and the cause."""


# SQLite result codes that mean "this file, this disk", not "our bug" -> a hint for the user.
_HINTS = (
    ("SQLITE_READONLY", "writing needs write access to the store and to its folder, where "
                        "SQLite keeps the -wal and -shm files"),
    ("SQLITE_CANTOPEN", "does the folder exist, and may you read (and write) it?"),
    ("SQLITE_FULL", "rows recorded so far are kept: free space and re-run to resume"),
    ("SQLITE_CORRUPT", "the file is damaged; `sqlite3 STORE .recover` may save its rows"),
    ("SQLITE_NOTADB", "not a run store"),
    ("SQLITE_BUSY", "another process held the store locked for a minute"),
)


def _is_fault(exc: BaseException) -> bool:
    # IntegrityError, ProgrammingError, InterfaceError... are our bugs, not the user's store.
    return isinstance(exc, sqlite3.OperationalError) or type(exc) is sqlite3.DatabaseError


def store_error(path: str | Path, doing: str, exc: sqlite3.Error) -> StoreError:
    """One line: the store, what failed, SQLite's reason and what it means."""
    name = getattr(exc, "sqlite_errorname", "") or ""
    hint = next((h for code, h in _HINTS if name.startswith(code)), None)
    return StoreError(f"{display_path(path)}: {doing}: {exc}" + (f" ({hint})" if hint else ""))


@dataclass(frozen=True)
class Owner:
    """Who holds a claim: a random token per sweep, its host and process id."""

    token: str
    host: str
    pid: int

    @classmethod
    def this_process(cls) -> Owner:
        owner = cls(uuid.uuid4().hex, socket.gethostname(), os.getpid())
        _ACTIVE.add(owner.token)
        return owner


_ACTIVE: set[str] = set()  # tokens of the sweeps running in this process


def _pid_running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's live process
    try:  # Linux: a zombie (killed, not yet reaped) is not running
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True
    return state not in ("Z", "X")


def claim_is_live(token: str, host: str, pid: int, expires: float, now: float) -> bool:
    """A claim holds while its lease has not expired and, on this host, its owner runs."""
    if expires < now:
        return False
    if host != socket.gethostname():
        return True  # cannot look: trust the lease
    if pid == os.getpid():
        return token in _ACTIVE
    return _pid_running(pid)


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
    """A SQLite run store (WAL). Use as a context manager or call :meth:`close`.

    ``readonly`` opens an existing store for reading only (``mode=ro``): nothing is created,
    upgraded or written. Otherwise the store is created if missing and upgraded from schema
    1; a file that is not a run store, or is corrupt, is refused before anything is written.
    Every SQLite fault is a :class:`StoreError`."""

    def __init__(self, path: str | Path, readonly: bool = False):
        self.path = Path(path)
        self.readonly = readonly
        if readonly:
            self.conn = self._connect_readonly()
        else:
            with self._faults("cannot open the run store"):
                # isolation_level=None: we open and commit every transaction explicitly.
                self.conn = sqlite3.connect(self.path, timeout=60.0, isolation_level=None)
        try:
            have = self._check()
            if not readonly:
                have = self._prepare_writing(have)
        except BaseException:
            self.conn.close()
            raise
        self._select = ", ".join(
            c if c in have else
            f"{LEGACY[c]} AS {c}" if c in LEGACY and "method_family" in have else
            f"NULL AS {c}"
            for c in COLUMN_NAMES)

    def _connect_readonly(self) -> sqlite3.Connection:
        if not self.path.is_file():
            raise FileNotFoundError(f"store: no such file {display_path(self.path)}")
        uri = "file:" + urllib.parse.quote(str(self.path.resolve())) + "?mode=ro"
        with self._faults("cannot open the run store"):
            conn = sqlite3.connect(uri, uri=True, timeout=60.0, isolation_level=None)
        try:
            conn.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchall()
            return conn
        except sqlite3.Error as exc:
            conn.close()
            name = getattr(exc, "sqlite_errorname", "")
            if not name.startswith(("SQLITE_READONLY", "SQLITE_CANTOPEN")) or \
                    Path(f"{self.path}-wal").exists():
                if _is_fault(exc):
                    raise store_error(self.path, "cannot read the run store", exc) from None
                raise
        # A WAL store in a folder we may not write: SQLite cannot create its -shm file. Without
        # a -wal file every committed row is in the main file, which nobody can be writing
        # (a writer would have created the -wal file): read it as immutable.
        with self._faults("cannot read the run store"):
            conn = sqlite3.connect(uri + "&immutable=1", uri=True, isolation_level=None)
            conn.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchall()
        return conn

    @contextlib.contextmanager
    def _faults(self, doing: str) -> Iterator[None]:
        try:
            yield
        except sqlite3.Error as exc:
            if _is_fault(exc):
                raise store_error(self.path, doing, exc) from None
            raise

    @contextlib.contextmanager
    def _transaction(self, doing: str) -> Iterator[sqlite3.Connection]:
        """One write transaction; on any failure it is rolled back and nothing else is."""
        with self._faults(doing):
            self.conn.execute("BEGIN IMMEDIATE")
            try:
                yield self.conn
                self.conn.execute("COMMIT")
            except BaseException:
                if self.conn.in_transaction:  # SQLite may have rolled back already (disk full)
                    with contextlib.suppress(sqlite3.Error):
                        self.conn.execute("ROLLBACK")
                raise

    def _tables(self) -> set[str]:
        cur = self.conn.execute("SELECT name FROM sqlite_master WHERE type='table'")
        return {r[0] for r in cur if not r[0].startswith("sqlite_")}

    def _check(self) -> set[str]:
        """Refuse what is not a readable run store; return the columns of ``runs`` (empty
        for a new, empty database)."""
        shown = display_path(self.path)
        with self._faults("cannot read the run store"):
            tables = self._tables()
            if not tables and not self.readonly:
                return set()  # a new store (or an empty file): created by _prepare_writing
            if "runs" not in tables or "store_info" not in tables:
                what = f"tables: {', '.join(sorted(tables))}" if tables else "no tables"
                raise StoreError(f"{shown}: not a run store (an SQLite database without our "
                                 f"runs and store_info schema; {what})")
            row = self.conn.execute("SELECT value FROM store_info WHERE key='schema'").fetchone()
            found = None if row is None else row[0]
            if found not in READABLE_SCHEMAS:
                raise StoreError(f"{shown}: run store schema {found!r}; this version reads "
                                 f"schemas {', '.join(READABLE_SCHEMAS)} (a newer topoopt-milp?)")
            problems = [r[0] for r in self.conn.execute("PRAGMA quick_check(3)")]
            if problems != ["ok"]:
                raise StoreError(f"{shown}: corrupt run store ({'; '.join(problems)}); "
                                 "`sqlite3 STORE .recover` may save its rows")
            return {r[1] for r in self.conn.execute("PRAGMA table_info(runs)")}

    def _prepare_writing(self, have: set[str]) -> set[str]:
        """WAL mode, then in one transaction: create the tables of a new store, upgrade a
        schema-1 one, add the claims table. A read-only store fails here, before any run."""
        with self._faults("cannot write the run store"):
            self.conn.execute("PRAGMA journal_mode=WAL")
            # NORMAL is durable against process death (the case that matters for sweeps); only
            # a power loss may drop the last commits in WAL mode.
            self.conn.execute("PRAGMA synchronous=NORMAL")
        with self._transaction("cannot write the run store") as conn:
            if "runs" not in self._tables():  # checked again under the lock: two new sweeps
                conn.execute(f"CREATE TABLE runs ({', '.join(f'{c} {t}' for c, t in COLUMNS)})")
                conn.execute("CREATE TABLE IF NOT EXISTS store_info (key TEXT PRIMARY KEY, value TEXT)")
                conn.execute("CREATE INDEX IF NOT EXISTS runs_instance ON runs (instance_hash)")
            else:
                have = {r[1] for r in conn.execute("PRAGMA table_info(runs)")}
                for col, typ in COLUMNS:
                    if col not in have:
                        conn.execute(f"ALTER TABLE runs ADD COLUMN {col} {typ}")
                if "method_family" in have and "method_kind" not in have:
                    conn.execute("UPDATE runs SET " + ", ".join(f"{c} = {e}" for c, e in LEGACY.items()))
            conn.execute("INSERT OR REPLACE INTO store_info VALUES ('schema', ?)", (str(SCHEMA_VERSION),))
            conn.execute(CLAIMS_TABLE)
            return {r[1] for r in conn.execute("PRAGMA table_info(runs)")}

    # -- writing ------------------------------------------------------------------------
    def put(self, record: Mapping[str, Any], replace: bool = False) -> bool:
        """Write one finished run (and drop its claim) in a single transaction.

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
        with self._transaction(f"cannot record run {record.get('run_key')}") as conn:
            cur = conn.execute(sql, row)
            conn.execute("DELETE FROM claims WHERE run_key = ?", (record.get("run_key"),))
        return cur.rowcount == 1

    def claim(self, key: str, owner: Owner, lease_s: float, *, retry: bool = False,
              finished_at: str | None = None) -> str | None:
        """Claim run ``key`` for ``owner`` for ``lease_s`` seconds, unless it is recorded or
        another live owner holds it (:func:`claim_is_live`). Returns ``None`` when claimed,
        else why not. ``retry``: the run's ``error`` row, finished at ``finished_at``, is to
        be replaced; a row other than that one means another sweep re-ran it meanwhile."""
        now = time.time()
        with self._transaction(f"cannot claim run {key}") as conn:
            row = conn.execute("SELECT status, finished_at FROM runs WHERE run_key = ?",
                               (key,)).fetchone()
            if row is not None and not (retry and row == ("error", finished_at)):
                return "finished by another sweep"
            held = conn.execute("SELECT owner, host, pid, expires FROM claims WHERE run_key = ?",
                                (key,)).fetchone()
            if held is not None and held[0] != owner.token and claim_is_live(*held, now):
                return f"held by another sweep (pid {held[2]} on {held[1]})"
            conn.execute("INSERT OR REPLACE INTO claims VALUES (?, ?, ?, ?, ?)",
                         (key, owner.token, owner.host, owner.pid, now + lease_s))
        return None

    def renew(self, owner: Owner, lease_s: float) -> None:
        """Extend every claim of ``owner`` to ``lease_s`` seconds from now (the heartbeat)."""
        with self._transaction("cannot renew claims") as conn:
            conn.execute("UPDATE claims SET expires = ? WHERE owner = ?",
                         (time.time() + lease_s, owner.token))

    def release(self, owner: Owner) -> None:
        """Drop every claim of ``owner`` (its sweep ends; unfinished runs are free again)."""
        _ACTIVE.discard(owner.token)
        with self._transaction("cannot release claims") as conn:
            conn.execute("DELETE FROM claims WHERE owner = ?", (owner.token,))

    # -- reading ------------------------------------------------------------------------
    def finished_keys(self, include_errors: bool = True) -> set[str]:
        """Run keys already recorded (optionally without ``error`` rows, to retry them)."""
        sql = "SELECT run_key FROM runs"
        if not include_errors:
            sql += " WHERE status != 'error'"
        with self._faults("cannot read the run store"):
            return {r[0] for r in self.conn.execute(sql)}

    def error_rows(self) -> dict[str, str | None]:
        """``run key -> finished_at`` of the ``error`` rows (the runs ``--retry-errors`` redoes)."""
        with self._faults("cannot read the run store"):
            return dict(self.conn.execute(
                "SELECT run_key, finished_at FROM runs WHERE status = 'error'").fetchall())

    def __len__(self) -> int:
        with self._faults("cannot read the run store"):
            return int(self.conn.execute("SELECT COUNT(*) FROM runs").fetchone()[0])

    def records(self) -> list[dict[str, Any]]:
        """Every row as a dict with JSON columns decoded, ordered by run key."""
        with self._faults("cannot read the run store"):
            rows = self.conn.execute(f"SELECT {self._select} FROM runs ORDER BY run_key").fetchall()
        out = []
        for row in rows:
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
    """Read one or several stores, read-only, into one DataFrame (rows with the same key:
    first wins)."""
    import pandas as pd

    if isinstance(paths, str | Path):
        paths = [paths]
    frames = []
    for p in paths:
        with RunStore(p, readonly=True) as store:
            frames.append(store.dataframe())
    df = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=list(COLUMN_NAMES))
    return df.drop_duplicates("run_key").reset_index(drop=True)
