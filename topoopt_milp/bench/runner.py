"""Resumable benchmark sweeps: every (instance, method, seed) in its own process.

Execution model
---------------
A sweep expands ``instances x methods x seeds`` into :class:`Task` objects. Each task runs in
a **fresh Python process** (``python -m topoopt_milp.bench.runner``, started with
:class:`subprocess.Popen`, i.e. fork+exec: nothing of the parent's state, threads or solver
handles is inherited, and no ``multiprocessing`` start-method or ``__main__`` guard issue
arises). The child

1. reads its task (the instance JSON object itself, the method's registry entry, the options)
   from stdin,
2. solves, evaluates and re-checks through :func:`topoopt_milp.pipeline.solve_checked` (any
   violation of the independent checker turns the run into an ``error`` with the violations
   as its reason), and
4. writes one JSON result to its original stdout (solver chatter is redirected to stderr).

The child has a **hard wall-clock limit** ``hard = time_limit * factor + slack`` (defaults 1.5
and 30 s; ``hard_limit`` overrides): the parent kills the child's whole process group beyond it
and the run becomes an ``error`` row "timeout: killed after ...". The child also arms
``alarm(hard + 10)`` with the default SIGALRM action, so even an orphan (its sweep killed)
dies on its own. A crash (non-zero exit, a signal, no result) is an ``error`` row with the
exit code and the tail of stderr. The sweep always goes on.

Only the parent writes to the store (single writer, one transaction per row, see
:mod:`.store`). Finished run keys are skipped on start, so re-running the same command resumes
a killed sweep.

Engines
-------
``local`` (default): a thread pool of ``jobs`` threads in the parent, each babysitting one child
process at a time. ``dask``: the same :func:`execute` function is submitted to a Dask
distributed cluster (``distributed.Client(address)``, or ``DASK_SCHEDULER_ADDRESS``); each
worker runs the task in its own child process with the same hard limit, returns the record and
the parent writes it. The records are identical up to ``host``, timestamps and timings.
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import datetime as _dt
import json
import logging
import math
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TextIO

from .. import registry
from ..errors import InputError
from ..instance import FORMAT as INSTANCE_FORMAT
from ..instance import Instance, InstanceError
from ..params import ParamError, SolveOptions, SolverParams
from ..progress import progress_bar
from ..result import finite_json
from .store import RunStore, run_key

log = logging.getLogger(__name__)

HARD_FACTOR = 1.5
HARD_SLACK_S = 30.0
NO_LIMIT_HARD_S = 600.0  # hard limit of a run without a time limit
STDERR_TAIL = 1500  # characters of a crashed child's stderr kept in the error text


@dataclass(frozen=True)
class Task:
    """One run: everything the child needs, JSON-serialisable (it crosses process and
    machine boundaries)."""

    run_key: str
    instance: dict[str, Any]  # the topoopt-instance/1 object (workers may not share files)
    instance_path: str | None
    family: str
    method: dict[str, Any]  # registry entry (registry.Method.to_dict)
    params: dict[str, Any]  # SolveOptions.as_params(): the method's flat knobs (seed excluded)
    seed: int
    hard_limit_s: float
    instance_hash: str = ""
    extra_env: dict[str, str] = field(default_factory=dict)

    @property
    def label(self) -> str:
        return f"{self.instance.get('name')}/{self.method['name']}/seed{self.seed}"


# -- building tasks ---------------------------------------------------------------------

def find_instances(paths: Iterable[str | Path]) -> list[tuple[Path, Instance]]:
    """Instance files named by ``paths``: files as given, folders searched recursively for
    ``*.json`` files whose ``format`` is ``topoopt-instance/1`` (other JSON is skipped)."""
    out: list[tuple[Path, Instance]] = []
    for p in map(Path, paths):
        if p.is_dir():
            for f in sorted(p.rglob("*.json")):
                try:
                    data = json.loads(f.read_text())
                except (OSError, json.JSONDecodeError):
                    log.debug("skipping %s: not JSON", f)
                    continue
                if isinstance(data, dict) and data.get("format") == INSTANCE_FORMAT:
                    out.append((f, Instance.from_dict(data)))
        elif p.is_file():
            out.append((p, Instance.load(p)))
        else:
            raise FileNotFoundError(f"instances: no such file or folder {p}")
    if not out:
        raise InstanceError("instances: no topoopt-instance/1 files found in " + ", ".join(map(str, paths)))
    return out


def instance_family(instance: Instance, path: Path | None) -> str:
    """``meta["family"]`` if the instance names one, else the name of its folder."""
    fam = instance.meta.get("family")
    if isinstance(fam, str) and fam:
        return fam
    return path.parent.name if path is not None else "-"


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
    """Expand instances x methods x seeds into tasks (instance-major order)."""
    seed_list = list(range(seeds)) if isinstance(seeds, int) else [int(s) for s in seeds]
    entries = [registry.get(m) for m in methods]  # unknown names fail before anything runs
    check_settings(methods, dict(settings or {}))
    hard = hard_limit if hard_limit is not None else hard_limit_for(time_limit)
    tasks = []
    for path, inst in find_instances(instance_paths):
        ihash = inst.content_hash()
        data = inst.to_dict()
        fam = instance_family(inst, path)
        for m in entries:
            for s in seed_list:
                params = make_options(m.name, s, time_limit, settings).as_params()
                tasks.append(Task(
                    run_key=run_key(ihash, m.name, params, s, fam), instance=data,
                    instance_path=str(path), family=fam,
                    method=m.to_dict(),
                    params=params, seed=s, hard_limit_s=hard, instance_hash=ihash,
                ))
    return tasks


# -- one run ----------------------------------------------------------------------------

def _now() -> str:
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="milliseconds")


def base_record(task: Task) -> dict[str, Any]:
    """The columns a run has whatever its outcome."""
    inst = task.instance
    return {
        "run_key": task.run_key, "instance_name": inst.get("name"),
        "instance_hash": task.instance_hash, "instance_path": task.instance_path,
        "family": task.family, "n": inst.get("n"), "degree": inst.get("degree"),
        "link_gbps": inst.get("link_gbps"), "instance_meta": inst.get("meta", {}),
        "method": task.method["name"], "method_problem": task.method["problem"],
        "method_kind": task.method["kind"], "method_backend": task.method["backend"],
        "params": task.params, "seed": task.seed,
        "time_limit": task.params.get("time_limit"), "host": socket.gethostname(),
    }


def error_record(task: Task, reason: str, **more: Any) -> dict[str, Any]:
    rec = base_record(task)
    rec.update(status="error", error=reason, **more)
    return rec


def _child_env(task: Task) -> dict[str, str]:
    env = dict(os.environ)
    # The child sees the parent's import path (as multiprocessing's spawn does), so methods
    # registered from importable modules outside the package (plugins, tests) resolve there.
    paths = [p for p in sys.path if p and os.path.isdir(p)]
    if env.get("PYTHONPATH"):
        paths.append(env["PYTHONPATH"])
    env["PYTHONPATH"] = os.pathsep.join(paths)
    env.update(task.extra_env)
    return env


_LIVE: set[subprocess.Popen] = set()
_LIVE_LOCK = threading.Lock()


def _kill_group(proc: subprocess.Popen) -> None:
    # The whole group: the solver may have children of its own (the CBC binary).
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


def kill_live_children() -> None:
    """Kill every child process started by :func:`execute` in this process (sweep aborted)."""
    with _LIVE_LOCK:
        procs = list(_LIVE)
    for p in procs:
        _kill_group(p)


def execute(task: Task) -> dict[str, Any]:
    """Run one task in a fresh child process under its hard wall-clock limit and return the
    complete store record. Never raises for a failing run: failures are ``error`` records."""
    started = _now()
    t0 = time.perf_counter()
    payload = json.dumps(asdict(task))
    proc = subprocess.Popen(
        [sys.executable, "-m", "topoopt_milp.bench.runner"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        env=_child_env(task), start_new_session=True, text=True,
    )
    with _LIVE_LOCK:
        _LIVE.add(proc)
    try:
        out, err = proc.communicate(payload, timeout=task.hard_limit_s)
        timed_out = False
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        out, err = proc.communicate()
        timed_out = True
    finally:
        with _LIVE_LOCK:
            _LIVE.discard(proc)
    wall = time.perf_counter() - t0
    times = {"wall_s": wall, "started_at": started, "finished_at": _now()}
    if timed_out:
        return error_record(task, f"timeout: killed after {wall:.1f} s wall clock "
                            f"(hard limit {task.hard_limit_s:g} s)", **times)
    result = None
    lines = (out or "").strip().splitlines()
    if proc.returncode == 0 and lines:
        try:
            result = json.loads(lines[-1])
        except json.JSONDecodeError:
            result = None
    if result is None:
        rc = proc.returncode
        how = f"killed by signal {signal.Signals(-rc).name}" if rc < 0 else f"exit code {rc}"
        tail = (err or "").strip()[-STDERR_TAIL:]
        return error_record(task, f"crash: child process {how}, no result"
                            + (f"; stderr: {tail}" if tail else ""), **times)
    rec = base_record(task)
    rec.update(result)
    rec.update(times)
    return rec


# -- the child process ------------------------------------------------------------------

def solve_record(instance: Instance, method: str, options: SolveOptions) -> dict[str, Any]:
    """Solve in this process through :func:`topoopt_milp.pipeline.solve_checked`; the result
    columns of a store record (``status``, ``objective``, ``bound``, ``gap``, ``runtime_s``,
    ``backend``, ``metrics``, ``scope``, ``features``, ``error``, ...). A method that raises,
    or a solution the checker rejects, is an ``error`` with the reason in ``error``."""
    from ..pipeline import solve_checked
    from ..result import versions

    out: dict[str, Any] = {"versions": versions()}
    try:
        result = solve_checked(instance, method, options)
    except Exception as exc:  # noqa: BLE001 - any failure of the method is this run's error
        log.debug("method %s failed", method, exc_info=True)
        frame = traceback.extract_tb(exc.__traceback__)[-1]
        out.update(status="error", error=f"exception: {type(exc).__name__}: {exc} "
                   f"(at {Path(frame.filename).name}:{frame.lineno})")
        return out
    error = None
    if result.violations:
        error = f"checker: {len(result.violations)} violation(s): " + "; ".join(
            result.violations[:5])
    out.update(
        status=result.status.value, objective=result.objective,
        objective_kind=result.objective_kind, bound=result.bound, gap=result.gap,
        runtime_s=result.runtime_s, backend=result.backend,
        backend_version=result.backend_version, message=result.message or None, error=error,
        metrics=result.metrics, scope_status=result.scope_status,
        scope=None if result.scope is None else result.scope.to_dict(),
        features=None if result.features is None else result.features.to_dict(),
    )
    return finite_json(out)


def child_main(stdin: TextIO, result_out: TextIO) -> int:
    """Body of the child process: read the task, :func:`solve_record`, write one JSON line."""
    task = json.loads(stdin.read())
    m = task["method"]
    # The task carries the method's registry entry: a method registered at run time in the
    # parent (plugins, tests) resolves here too, through the same registry.solve entry point.
    if m["name"] not in registry.METHODS:
        registry.METHODS[m["name"]] = registry.Method.from_dict(m)
    try:
        instance = Instance.from_dict(task["instance"])
        options = registry.get(m["name"]).options(task["params"], seed=int(task["seed"]))
    except Exception as exc:  # noqa: BLE001
        out = {"status": "error", "error": f"task: {type(exc).__name__}: {exc}"}
    else:
        out = solve_record(instance, m["name"], options)
    result_out.write(json.dumps(out) + "\n")
    return 0


def _child_entry() -> int:
    task_text = sys.stdin.read()
    hard = float(json.loads(task_text).get("hard_limit_s", NO_LIMIT_HARD_S))
    # Backstop: the kernel ends this process even when the parent is gone (sweep killed) or
    # the interpreter is stuck in C code holding the GIL.
    signal.signal(signal.SIGALRM, signal.SIG_DFL)
    signal.alarm(int(math.ceil(hard)) + 10)
    # Solvers print to fd 1; keep the real stdout for the result line only.
    result_fd = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    import io

    with os.fdopen(result_fd, "w") as result_out:
        return child_main(io.StringIO(task_text), result_out)


# -- sweeps -----------------------------------------------------------------------------

@dataclass
class SweepSummary:
    total: int
    skipped: int
    ran: int
    errors: int
    wall_s: float


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
    ``progress`` draws :func:`~topoopt_milp.progress.progress_bar` named ``label``."""
    t0 = time.perf_counter()
    with RunStore(store_path) as store:
        done = store.finished_keys(include_errors=not retry_errors)
        seen: set[str] = set()
        todo = []
        for t in tasks:  # duplicate paths to one instance give one run
            if t.run_key not in done and t.run_key not in seen:
                todo.append(t)
                seen.add(t.run_key)
        total = len({t.run_key for t in tasks})
        skipped = total - len(todo)
        log.info("sweep: %d runs, %d already finished, %d to run (%s engine)", total,
                 skipped, len(todo), engine)
        if engine not in ("local", "dask"):
            raise InputError(f"engine: unknown engine {engine!r} (known: local, dask)")
        counts = {"ran": 0, "errors": 0}
        name = f"{label} ({skipped} of {total} done before)" if skipped else label
        with progress_bar(len(todo), name, _run_text, enabled=progress) as advance:
            def record(rec: dict[str, Any]) -> None:
                store.put(rec, replace=True)
                counts["ran"] += 1
                counts["errors"] += rec.get("status") == "error"
                advance((rec, counts["errors"]))
                if on_record is not None:
                    on_record(rec)

            with _sigterm_as_exit():
                if engine == "local":
                    _run_local(todo, jobs, record)
                else:
                    _run_dask(todo, address, jobs, record)
    return SweepSummary(total, skipped, counts["ran"], counts["errors"], time.perf_counter() - t0)


def _run_text(item: tuple[dict[str, Any], int]) -> str:
    """The progress bar's text: the errors so far and the last run with its status."""
    rec, errors = item
    run = (f"{rec.get('instance_name')}/{rec.get('method')}/seed{rec.get('seed')}: "
           f"{rec.get('status')}")
    return f"{errors} errors | {run}" if errors else run


@contextlib.contextmanager
def _sigterm_as_exit():
    """SIGTERM ends the sweep like Ctrl-C: running children are killed (unfinished runs are
    not recorded and run again on resume). SIGKILL cannot be caught; then the orphaned
    children end at their own alarm and the store is consistent anyway."""
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


def _run_local(todo: Sequence[Task], jobs: int, record: Callable[[dict], None]) -> None:
    if jobs < 1:
        raise InputError(f"jobs: must be >= 1, got {jobs}")
    pool = cf.ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="bench")
    futures: dict[cf.Future, Task] = {}
    try:
        futures.update({pool.submit(execute, t): t for t in todo})
        for fut in cf.as_completed(futures):
            try:
                rec = fut.result()
            except Exception as exc:  # noqa: BLE001 - e.g. cannot start a process
                rec = error_record(futures[fut], f"runner: {type(exc).__name__}: {exc}")
            record(rec)
    except BaseException:
        for f in futures:
            f.cancel()
        kill_live_children()
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _run_dask(todo: Sequence[Task], address: str | None, jobs: int, record: Callable[[dict], None]) -> None:
    try:
        from distributed import Client, as_completed
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
        futures = client.map(execute, list(todo), pure=False)
        by_key = {f.key: t for f, t in zip(futures, todo, strict=True)}
        try:
            for fut in as_completed(futures):
                try:
                    rec = fut.result()
                except Exception as exc:  # noqa: BLE001 - a worker died under the task
                    rec = error_record(by_key[fut.key], f"dask: {type(exc).__name__}: {exc}")
                record(rec)
        except BaseException:
            client.cancel(futures)
            raise


if __name__ == "__main__":
    sys.exit(_child_entry())
