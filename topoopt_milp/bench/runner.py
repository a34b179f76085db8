"""Resumable benchmark sweeps: instances x methods x seeds, every run in its own process.

Execution model
---------------
A sweep expands ``instances x methods x seeds`` into :class:`~.child.Task` objects and runs
each one in a fresh child process (:func:`.child.execute`: hard wall-clock limit, crash and
timeout as ``error`` rows, nothing left behind, see :mod:`.child`). The sweep always goes on.

Only sweep processes write to the store (one transaction per row, see :mod:`.store`).
Finished run keys are skipped on start, so re-running the same command resumes a killed
sweep.

Bad input files
---------------
Folders are searched for ``*.json``; a JSON object that does not claim an instance format
(notes, solutions) is skipped. Any other file that cannot be read as an instance (not UTF-8,
not JSON, not an object, an invalid instance, not a regular file) becomes one ``error`` row
per (method, seed) naming the file and the cause; its run key is derived from the file's path,
and every other instance still runs.

Concurrent sweeps on one store
------------------------------
Before a run starts, its sweep takes a **lease** on the run key in the store's ``claims``
table (:meth:`.store.RunStore.claim`), in the same transaction that checks that no row
exists yet; the row that records the run removes the lease. A lease names its owner (host,
pid, a random token) and expires :data:`LEASE_S` seconds after the owner last renewed it (every
:data:`HEARTBEAT_S` s): a second ``bench`` on the same store skips runs that a live sweep holds
and runs the others, so two sweeps split the work and no run executes twice. The lease of a
dead owner (same host, pid gone) or an expired one is taken over at once.

Engines
-------
``local`` (default): a thread pool of ``jobs`` threads in the parent, each babysitting one child
process at a time. ``dask``: the same :func:`~.child.execute` function is submitted to a Dask
distributed cluster (``distributed.Client(address)``, or ``DASK_SCHEDULER_ADDRESS``); each
worker runs the task in its own child process with the same hard limit, returns the record and
the parent writes it. The records are identical up to ``host``, timestamps and timings. Both
engines keep at most as many runs in flight as there are workers, so that a lease is only
taken for a run about to start.
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import hashlib
import json
import logging
import os
import signal
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import registry
from ..core.errors import InputError
from ..core.files import read_input
from ..core.instance import Instance, InstanceError
from ..core.params import ParamError, SolveOptions, SolverParams
from .child import Task, error_record, execute, kill_live_children
from .names import display_path
from .progress import progress_bar
from .store import Owner, RunStore, StoreError, run_key

log = logging.getLogger(__name__)

HARD_FACTOR = 1.5
HARD_SLACK_S = 30.0
NO_LIMIT_HARD_S = 600.0  # hard limit of a run without a time limit
LEASE_S = 120.0  # a claim expires this long after its owner last renewed it
HEARTBEAT_S = 20.0  # how often a sweep renews its claims


# -- building tasks ---------------------------------------------------------------------

@dataclass(frozen=True)
class InstanceFile:
    """A file found by :func:`find_instances`: its instance, or why it is not one."""

    path: Path
    instance: Instance | None
    error: str | None = None


def read_instance_file(path: Path, explicit: bool = True) -> Instance | None:
    """The instance in ``path``; ``None`` for a JSON object that does not claim an instance
    format when the file was found by a folder search (``explicit`` false). Raises
    :class:`~topoopt_milp.core.instance.InstanceError` naming the file and the cause otherwise."""
    shown = display_path(path)
    raw = read_input(path, InstanceError, shown=shown)  # the one rule: core/files.py
    try:
        data = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise InstanceError(f"{shown}: not valid JSON (not UTF-8 text)") from None
    except json.JSONDecodeError as exc:
        raise InstanceError(f"{shown}: not valid JSON ({exc.msg} at line {exc.lineno})") from None
    except RecursionError:
        raise InstanceError(f"{shown}: not valid JSON (nested too deep)") from None
    fmt = data.get("format") if isinstance(data, dict) else None
    if not explicit and isinstance(data, dict) and not str(fmt).startswith("topoopt-instance"):
        return None  # other JSON beside the instances: notes, solutions, references
    try:
        return Instance.from_dict(data)
    except InputError as exc:
        raise InstanceError(f"{shown}: {exc}") from None
    except Exception as exc:  # noqa: BLE001 - a validation bug must not end the sweep either
        log.debug("reading %s", shown, exc_info=True)
        raise InstanceError(f"{shown}: {type(exc).__name__}: {exc}") from None


def find_instances(paths: Iterable[str | Path]) -> list[InstanceFile]:
    """Instance files named by ``paths``: files as given, folders searched recursively for
    ``*.json`` (JSON objects that do not claim an instance format are skipped). A file that
    cannot be read as an instance is returned with its ``error``, not raised."""
    out: list[InstanceFile] = []
    for p in map(Path, paths):
        if p.is_dir():
            found = ((f, False) for f in sorted(p.rglob("*.json")) if not f.is_dir())
        elif p.exists():
            found = iter([(p, True)])
        else:
            raise FileNotFoundError(f"instances: no such file or folder {display_path(p)}")
        for f, explicit in found:
            try:
                inst = read_instance_file(f, explicit)
            except InstanceError as exc:
                log.warning("instances: %s (recorded as error rows)", exc)
                out.append(InstanceFile(f, None, f"instance file {exc}"))
                continue
            if inst is None:
                log.debug("skipping %s: not an instance", display_path(f))
            else:
                out.append(InstanceFile(f, inst))
    if not out:
        raise InstanceError("instances: no topoopt-instance/1 files found in "
                            + ", ".join(display_path(p) for p in paths))
    return out


def instance_family(instance: Instance | None, path: Path | None) -> str:
    """``meta["family"]`` if the instance names one, else the name of its folder."""
    fam = instance.meta.get("family") if instance is not None else None
    if isinstance(fam, str) and fam:
        return fam
    return display_path(path.parent.name) if path is not None else "-"
def check_settings(methods: Sequence[str], settings: dict[str, Any]) -> None:
    """Refuse a knob that no method of the sweep (nor the solver) has, naming it; each method
    then takes the knobs its own parameter classes define."""
    known = set(SolverParams.names())
    for m in methods:
        known |= set(registry.get(m).params.names())
    unknown = sorted(set(settings) - known)
    if unknown:
        raise ParamError(f"{unknown[0]}: not a parameter of {', '.join(methods)} "
                         f"(known: {', '.join(sorted(known))})")


def make_options(method: str, seed: int, time_limit: float | None,
                 settings: dict[str, Any] | None = None) -> SolveOptions:
    """The :class:`SolveOptions` of one run of ``method`` in a sweep: ``settings`` are flat
    knobs shared by the sweep's methods (each takes its own; see :func:`check_settings`)."""
    knobs = dict(settings or {})
    knobs["time_limit"] = time_limit
    return registry.get(method).options(knobs, seed=seed, strict=False)


def method_record(spec) -> dict[str, Any]:
    """What a task carries of its method: the columns of its run record and where a child
    process loads its spec from (``ref``)."""
    return {"name": spec.name, "problem": spec.problem, "kind": spec.kind,
            "backend": spec.backend, "ref": spec.ref}


def hard_limit_for(
    time_limit: float | None, factor: float = HARD_FACTOR, slack: float = HARD_SLACK_S
) -> float:
    """``time_limit * factor + slack``; :data:`NO_LIMIT_HARD_S` without a time limit."""
    if time_limit is None:
        return NO_LIMIT_HARD_S
    return float(time_limit) * factor + slack




def build_tasks(
    instance_paths: Iterable[str | Path],
    methods: Sequence[str],
    seeds: int | Sequence[int] = 1,
    time_limit: float | None = None,
    settings: dict[str, Any] | None = None,
    hard_limit: float | None = None,
) -> list[Task]:
    """Expand instances x methods x seeds into tasks (instance-major order). A file that is
    not a valid instance gives tasks that record its error (see :func:`find_instances`); a
    method that does not apply to an instance (:meth:`MethodSpec.refusal
    <topoopt_milp.core.spec.MethodSpec.refusal>`: the fixed- vs free-topology families) gives
    none."""
    seed_list = list(range(seeds)) if isinstance(seeds, int) else [int(s) for s in seeds]
    entries = [registry.get(m) for m in methods]  # unknown names fail before anything runs
    check_settings(methods, dict(settings or {}))
    hard = hard_limit if hard_limit is not None else hard_limit_for(time_limit)
    tasks = []
    for found in find_instances(instance_paths):
        shown = display_path(found.path)
        if found.instance is None:
            # No content to hash: the run key comes from the file's path.
            ihash = "file:" + hashlib.sha256(shown.encode()).hexdigest()[:16]
            data: dict[str, Any] = {"name": display_path(found.path.name)}
        else:
            ihash = found.instance.content_hash()
            data = found.instance.to_dict()
        fam = instance_family(found.instance, found.path)
        for m in entries:
            if found.instance is not None and m.refusal(found.instance) is not None:
                # the family rule (core/spec.py): a route method on a free instance, a
                # free-topology method on a fixed one -- not a run, so not an error row
                log.info("%s: %s does not apply, skipped", shown, m.name)
                continue
            for s in seed_list:
                params = make_options(m.name, s, time_limit, settings).as_params()
                tasks.append(Task(
                    run_key=run_key(ihash, m.name, params, s, fam), instance=data,
                    instance_path=shown, family=fam, method=method_record(m),
                    params=params, seed=s, hard_limit_s=hard, instance_hash=ihash,
                    input_error=found.error,
                ))
    return tasks


# -- sweeps -----------------------------------------------------------------------------

@dataclass
class SweepSummary:
    total: int
    skipped: int
    ran: int
    errors: int
    wall_s: float
    held: int = 0  # runs another live sweep on the same store was running


def run_sweep(
    tasks: Sequence[Task],
    store_path: str | Path,
    jobs: int = 1,
    engine: str = "local",
    address: str | None = None,
    retry_errors: bool = False,
    progress: bool = True,
    on_record: Callable[[dict[str, Any]], None] | None = None,
    label: str = "bench",
) -> SweepSummary:
    """Run every task not already finished in the store; write each record as it arrives.

    Each run is claimed in the store before it starts (see the module docstring): runs that
    another live sweep holds are skipped and counted in ``held``; a run that another sweep
    finished meanwhile counts as skipped. A store that cannot be written (full disk, read-only,
    corrupt) stops the sweep with a :class:`~.store.StoreError`; running children are killed
    and every row committed before stays. ``progress`` draws
    :func:`~topoopt_milp.bench.progress.progress_bar` named ``label``."""
    t0 = time.perf_counter()
    if engine not in ("local", "dask"):
        raise InputError(f"engine: unknown engine {engine!r} (known: local, dask)")
    if engine == "local" and jobs < 1:
        raise InputError(f"jobs: must be >= 1, got {jobs}")
    with RunStore(store_path) as store:
        finished = store.finished_keys()
        retry = store.error_rows() if retry_errors else {}  # run key -> finished_at
        todo: list[Task] = []
        seen: set[str] = set()
        for t in tasks:  # duplicate paths to one instance give one run
            if t.run_key not in seen and (t.run_key not in finished or t.run_key in retry):
                todo.append(t)
            seen.add(t.run_key)
        total = len(seen)
        skipped = total - len(todo)
        log.info("sweep: %d runs, %d already finished, %d to run (%s engine)", total,
                 skipped, len(todo), engine)
        owner = Owner.this_process()
        lost = {"finished": 0, "held": 0}
        counts = {"ran": 0, "errors": 0}

        def claim(task: Task) -> bool:
            why = store.claim(task.run_key, owner, LEASE_S, retry=task.run_key in retry,
                              finished_at=retry.get(task.run_key))
            if why is not None:
                log.info("run %s: %s, skipped", task.label, why)
                lost["held" if why.startswith("held") else "finished"] += 1
            return why is None

        name = f"{label} ({skipped} of {total} done before)" if skipped else label
        with progress_bar(len(todo), name, _run_text, enabled=progress) as advance:
            def record(rec: dict[str, Any]) -> None:
                if not store.put(rec, replace=rec["run_key"] in retry):
                    log.warning("run %s was recorded by another sweep meanwhile; kept its row",
                                rec["run_key"])
                counts["ran"] += 1
                counts["errors"] += rec.get("status") == "error"
                advance((rec, counts["errors"]))
                if on_record is not None:
                    on_record(rec)

            try:
                with _sigterm_as_exit(), _engine(engine, jobs, address) as eng:
                    _drive(todo, eng, claim, record, lambda: store.renew(owner, LEASE_S))
            finally:
                with contextlib.suppress(StoreError):  # never hide why the sweep stopped
                    store.release(owner)
    return SweepSummary(total, skipped + lost["finished"], counts["ran"], counts["errors"],
                        time.perf_counter() - t0, lost["held"])


def _run_text(item: tuple[dict[str, Any], int]) -> str:
    """The progress bar's text: the errors so far and the last run with its status."""
    rec, errors = item
    run = (f"{rec.get('instance_name')}/{rec.get('method')}/seed{rec.get('seed')}: "
           f"{rec.get('status')}")
    return f"{errors} errors | {run}" if errors else run


@contextlib.contextmanager
def _sigterm_as_exit():
    """SIGTERM ends the sweep like Ctrl-C: running children are killed (unfinished runs are
    not recorded and run again on resume). SIGKILL cannot be caught; then each child's guard
    kills it (see :mod:`.child`) and the store is consistent anyway."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum, frame):
        raise SystemExit(128 + signum)

    old = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)


@dataclass(frozen=True)
class Engine:
    """How a sweep starts runs: ``submit(task)`` returns a future of the record, ``limit()``
    runs may be in flight, ``label`` prefixes an error row when the engine itself fails a run,
    and ``abort()`` stops everything running (the sweep is interrupted)."""

    submit: Callable[[Task], cf.Future]
    limit: Callable[[], int]
    label: str
    abort: Callable[[], None]


def _drive(todo: Sequence[Task], engine: Engine, claim: Callable[[Task], bool],
           record: Callable[[dict], None], renew: Callable[[], None]) -> None:
    """Keep up to ``engine.limit()`` claimed runs in flight, record each as it finishes and
    renew the claims every :data:`HEARTBEAT_S` seconds; on any exception abort the running
    runs and re-raise."""
    pending = deque(todo)
    running: dict[cf.Future, Task] = {}
    renewed = time.monotonic()
    try:
        while pending or running:
            while pending and len(running) < engine.limit():
                task = pending.popleft()
                if not claim(task):
                    continue
                if task.input_error is not None:
                    record(execute(task))  # nothing to run: the row names the bad file
                else:
                    running[engine.submit(task)] = task
            if running:
                done, _ = cf.wait(running, timeout=HEARTBEAT_S, return_when=cf.FIRST_COMPLETED)
                for fut in done:
                    task = running.pop(fut)
                    try:
                        rec = fut.result()
                    except Exception as exc:  # noqa: BLE001 - e.g. cannot start a process
                        rec = error_record(task, f"{engine.label}: {type(exc).__name__}: {exc}")
                    record(rec)
            if time.monotonic() - renewed >= HEARTBEAT_S:
                renew()
                renewed = time.monotonic()
    except BaseException:
        for fut in running:
            fut.cancel()
        engine.abort()
        raise


@contextlib.contextmanager
def _engine(name: str, jobs: int, address: str | None) -> Iterator[Engine]:
    if name == "local":
        stop = threading.Event()  # set before the kill: no run starts after it (child.execute)

        def abort() -> None:
            stop.set()
            kill_live_children()

        with cf.ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="bench") as pool:
            yield Engine(lambda t: pool.submit(execute, t, stop), lambda: jobs, "runner", abort)
        return
    try:
        from distributed import Client
    except ImportError:  # pragma: no cover - depends on the install
        raise InputError("engine: dask needs the 'distributed' package "
                         "(pip install 'topoopt-milp[dask]')") from None
    address = address or os.environ.get("DASK_SCHEDULER_ADDRESS")
    if not address:
        raise InputError("address: --engine dask needs --address tcp://HOST:PORT "
                         "or DASK_SCHEDULER_ADDRESS")
    try:
        client = Client(address, timeout="30s")
    except (OSError, TimeoutError) as exc:
        raise InputError(f"address: cannot reach the Dask scheduler at {address} ({exc})") from None
    with client:
        pool = client.get_executor(pure=False)
        # One run per worker thread, counted afresh as workers come and go; an abort cancels
        # the futures (the workers' own hard limits end runs already started).
        yield Engine(lambda t: pool.submit(execute, t),
                     lambda: max(1, sum(client.nthreads().values())), "dask", lambda: None)
