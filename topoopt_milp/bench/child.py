"""One benchmark run in its own process, and nothing left of it afterwards.

:func:`execute` runs a :class:`Task` in a **fresh Python process** (``python -m
topoopt_milp.bench.child``, started with :class:`subprocess.Popen`, i.e. fork + exec: nothing
of the sweep's state, threads or solver handles is inherited). The child reads its task (the
instance JSON object, the method's registry entry, the options) from stdin, solves, evaluates
and re-checks through :func:`topoopt_milp.pipeline.solve_checked`, and writes one JSON line to
its original stdout (solver chatter goes to stderr).

What a run may leave behind, and who removes it
-----------------------------------------------
*Processes.* The child leads its own session and process group; solver binaries it starts
(CBC) join that group. Three exits, three cleaners:

* the hard limit ``hard = time_limit * factor + slack``: the sweep kills the group (the
  run becomes an ``error`` row "timeout: killed after ...");
* the child finishes or crashes: it has waited for its solver (PuLP waits for CBC); a crash
  that leaves a solver running is handled like the next case once the sweep closes the
  lifeline;
* **the sweep dies** (kill -9 of the sweep or of its process group, OOM, a Dask worker
  killed): the child cannot notice, as it is busy in the solver, so a **guard** notices for
  it. The sweep hands each child the read end of a pipe, the *lifeline*, whose only write end
  the sweep holds; the child forks the guard first thing, and the guard blocks reading the
  lifeline. End of file there means the sweep closed it or died (the kernel closes the file
  descriptors of a dead process, whatever killed it), and the guard SIGKILLs the run's process
  group, so no solver outlives its sweep. The guard is a separate process, so a solver that
  holds the GIL in C code cannot stall it. A child that finishes normally kills and reaps its
  guard. ``alarm(hard + 10)`` in the child stays as a last backstop.

*Files.* Every run gets a private temporary folder from the sweep (``TMPDIR`` of the child:
PuLP's ``*-pulp.*`` model and solution files and CBC's log are written below it). The sweep
removes it after every run, whatever the outcome (SIGKILLed children cannot clean up after
themselves); the guard removes it when the sweep died.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import io
import json
import logging
import math
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TextIO

from .. import registry
from ..core.deadline import Deadline, note_startup
from ..core.instance import Instance
from ..core.params import SolveOptions
from ..core.result import finite_json

log = logging.getLogger(__name__)

STDERR_TAIL = 1500  # characters of a crashed child's stderr kept in the error text


@dataclass(frozen=True)
class Task:
    """One run: everything the child needs, JSON-serialisable (it crosses process and
    machine boundaries). ``input_error`` marks an instance file that could not be read: the
    run is recorded as an ``error`` row naming the file, without starting a process."""

    run_key: str
    instance: dict[str, Any]  # the topoopt-instance/1 object (workers may not share files)
    instance_path: str | None
    family: str
    method: dict[str, Any]  # runner.method_record: name, problem, kind, backend, ref
    params: dict[str, Any]  # SolveOptions.as_params(): the method's flat knobs (seed excluded)
    seed: int
    hard_limit_s: float
    instance_hash: str = ""
    extra_env: dict[str, str] = field(default_factory=dict)
    input_error: str | None = None
    # the portfolio (``certify``): a solution file to start from (the incumbent so far), and
    # where to write the run's own solution file, so that the parent can keep the best one
    warm_start_path: str | None = None
    solution_out: str | None = None

    @property
    def label(self) -> str:
        return f"{self.instance.get('name')}/{self.method['name']}/seed{self.seed}"


# -- records ------------------------------------------------------------------------------

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


# -- the sweep's side -----------------------------------------------------------------------

def _child_env(task: Task, workdir: str) -> dict[str, str]:
    env = dict(os.environ)
    # The child sees the parent's import path (as multiprocessing's spawn does), so methods
    # registered from importable modules outside the package (plugins, tests) resolve there.
    paths = [p for p in sys.path if p and os.path.isdir(p)]
    if env.get("PYTHONPATH"):
        paths.append(env["PYTHONPATH"])
    env["PYTHONPATH"] = os.pathsep.join(paths)
    env.update(task.extra_env)
    env["TMPDIR"] = workdir  # tempfile (PuLP, CBC's log) writes below the run's own folder
    return env


_LIVE: set[subprocess.Popen] = set()
_LIVE_LOCK = threading.Lock()


def _kill_group(proc: subprocess.Popen) -> None:
    # The whole group: the solver may have children of its own (the CBC binary). Called only
    # while the child is alive or unreaped, so the group id is still this run's.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


_STOPPED: set[subprocess.Popen] = set()  # runs their caller ended with kill_run


def kill_run(proc: subprocess.Popen) -> None:
    """Kill one run started by :func:`execute` (its whole process group) because its caller
    has no more use for it; its record becomes an ``error`` row that says so ("stopped: ended
    by its caller ..."), not a crash."""
    with _LIVE_LOCK:
        _STOPPED.add(proc)
    _kill_group(proc)


def kill_live_children() -> None:
    """Kill every child process started by :func:`execute` in this process (sweep aborted)."""
    with _LIVE_LOCK:
        procs = list(_LIVE)
    for p in procs:
        _kill_group(p)


def _remove_tree(path: str) -> None:
    # A SIGKILLed solver may still be finishing a system call that creates a file: try twice.
    for delay in (0.0, 0.2):
        time.sleep(delay)
        shutil.rmtree(path, ignore_errors=True)
        if not os.path.exists(path):
            return
    log.warning("could not remove the run folder %s", path)


def execute(task: Task, stop: threading.Event | None = None,
            on_start: Callable[[subprocess.Popen], None] | None = None) -> dict[str, Any]:
    """Run one task in a fresh child process under its hard wall-clock limit and return the
    complete store record. Never raises for a failing run: failures are ``error`` records.

    ``stop``: once set (by an aborting sweep, before :func:`kill_live_children`), no process
    is started any more; checked under the same lock that registers started processes, so
    an abort never misses a child that is just starting. ``on_start`` is called with the
    child process once it runs (under that lock), so that a caller can end its own runs
    early with :func:`kill_run` (the portfolio, once its gap is closed)."""
    started = _now()
    if task.input_error is not None:
        return error_record(task, task.input_error, started_at=started, finished_at=started,
                            wall_s=0.0)
    t0 = time.perf_counter()
    payload = json.dumps(asdict(task))
    workdir = tempfile.mkdtemp(prefix="topoopt-run-")
    lifeline, lifeline_w = os.pipe()  # both ends close-on-exec: only the child gets `lifeline`
    try:
        with _LIVE_LOCK:
            try:
                if stop is not None and stop.is_set():
                    return error_record(task, "runner: the sweep stopped before this run started")
                proc = subprocess.Popen(
                    [sys.executable, "-m", "topoopt_milp.bench.child", str(lifeline), workdir],
                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                    env=_child_env(task, workdir), start_new_session=True, text=True,
                    pass_fds=(lifeline,),
                )
            finally:
                os.close(lifeline)
            _LIVE.add(proc)
            if on_start is not None:
                on_start(proc)
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
    finally:
        os.close(lifeline_w)  # a guard still running (the child crashed) cleans up now
        _remove_tree(workdir)
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
    with _LIVE_LOCK:
        stopped = proc in _STOPPED
        _STOPPED.discard(proc)
    if result is None and stopped:
        return error_record(task, f"stopped: ended by its caller after {wall:.1f} s wall "
                            "clock, no result", **times)
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


# -- the child's side -----------------------------------------------------------------------

def solve_record(instance: Instance, method: str, options: SolveOptions,
                 solution_out: str | None = None) -> dict[str, Any]:
    """Solve in this process through :func:`topoopt_milp.pipeline.solve_checked`; the result
    columns of a store record (``status``, ``objective``, ``bound``, ``gap``, ``runtime_s``,
    ``backend``, ``metrics``, ``scope``, ``features``, ``error``, ...). A method that raises,
    or a solution the checker rejects, is an ``error`` with the reason in ``error``. With
    ``solution_out``, a solution the checker accepts is also written there as a solution
    file (``solution_file`` in the record)."""
    from ..core.result import versions, write_solution
    from ..pipeline import solve_checked

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
    if solution_out and error is None and result.topology is not None \
            and result.routing is not None:
        write_solution(solution_out, result, instance)
        out["solution_file"] = solution_out
    return finite_json(out)


def child_main(stdin: TextIO, result_out: TextIO) -> int:
    """Body of the child process: read the task, :func:`solve_record`, write one JSON line."""
    task = json.loads(stdin.read())
    m = task["method"]
    # The task names the method and where its spec is loaded from: a plug-in given by
    # reference in the parent resolves here too, through the same registry.solve entry point.
    try:
        if m["name"] not in registry.METHODS and m.get("ref"):
            registry.METHODS[m["name"]] = registry.get(m["ref"])
        instance = Instance.from_dict(task["instance"])
        options = registry.get(m["name"]).options(task["params"], seed=int(task["seed"]))
        if options.solver.time_limit is not None:
            # the limit counts from this process's start, as a command-line solve's does:
            # start-up, reading the task and the warm start are inside it, and the pipeline
            # keeps the work after the solver inside it too (core/deadline.py)
            note_startup()
            options = options.with_(deadline=Deadline.since_process_start(
                options.solver.time_limit))
        if task.get("warm_start_path"):
            from ..core.result import read_solution, result_from_solution

            start = result_from_solution(read_solution(task["warm_start_path"]))
            options = options.with_(warm_start=start)
    except Exception as exc:  # noqa: BLE001
        out = {"status": "error", "error": f"task: {type(exc).__name__}: {exc}"}
    else:
        out = solve_record(instance, m["name"], options, task.get("solution_out"))
    result_out.write(json.dumps(out) + "\n")
    return 0


def start_guard(lifeline: int, workdir: str) -> int:
    """Fork the guard of this process group and return its pid (see the module docstring).

    The guard keeps no file of the child open (else the sweep would wait for its end of
    stdout), blocks until end of file on ``lifeline``, then leaves the group, SIGKILLs it and
    removes ``workdir``. Returns 0 when no process can be forked (the run goes on unguarded,
    with the alarm as its backstop)."""
    try:
        pid = os.fork()
    except OSError as exc:
        print(f"bench child: no guard process ({exc})", file=sys.stderr)
        os.close(lifeline)
        return 0
    if pid:
        os.close(lifeline)
        return pid
    try:  # the guard: only os calls from here on, and never a return into the child's code
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        os.closerange(3, lifeline)
        os.closerange(lifeline + 1, os.sysconf("SC_OPEN_MAX"))
        while os.read(lifeline, 4096):
            pass
        group = os.getpgrp()
        os.setpgid(0, 0)  # out of the group it kills
        with contextlib.suppress(OSError):
            os.killpg(group, signal.SIGKILL)
        shutil.rmtree(workdir, ignore_errors=True)
    finally:
        os._exit(0)


def _child_entry(argv: list[str]) -> int:
    lifeline, workdir = int(argv[1]), argv[2]
    guard = start_guard(lifeline, workdir)
    try:
        task_text = sys.stdin.read()
        hard = float(json.loads(task_text)["hard_limit_s"])
        # Last backstop, should the guard be gone too: the kernel ends this process even when
        # the interpreter is stuck in C code holding the GIL.
        signal.signal(signal.SIGALRM, signal.SIG_DFL)
        signal.alarm(int(math.ceil(hard)) + 10)
        # Solvers print to fd 1; keep the real stdout for the result line only.
        result_fd = os.dup(1)
        os.dup2(2, 1)
        sys.stdout = sys.stderr
        with os.fdopen(result_fd, "w") as result_out:
            return child_main(io.StringIO(task_text), result_out)
    finally:
        if guard:
            with contextlib.suppress(OSError):
                os.kill(guard, signal.SIGKILL)
                os.waitpid(guard, 0)


if __name__ == "__main__":
    sys.exit(_child_entry(sys.argv))
