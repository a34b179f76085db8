"""How a member of the ``certify`` portfolio ended, in the words of its report.

A member's record (:func:`topoopt_milp.bench.child.execute`) is either a result or an
``error`` row whose message starts with what ended it: the hard end's kill (``timeout:``),
the portfolio ending it (``certify: stopped ...``, or ``stopped:`` from
:func:`~topoopt_milp.bench.child.kill_run`), the child dying on its own (``crash:``), or an
error it returned. The portfolio's JSON runs and its text report both read it from here.
"""

from __future__ import annotations

from typing import Any


def outcome(rec: dict[str, Any]) -> str:
    """How a portfolio member ended, in the report's words.

    * ``returned`` -- it handed back a result (``optimal``, ``feasible``, a bound, ...);
    * ``stopped at the limit: ...`` -- killed at the hard end (``timeout`` of
      :func:`~topoopt_milp.bench.child.execute`) or ended by the portfolio when the budget
      was spent;
    * ``stopped once the gap was closed`` -- ended by the portfolio, its work no longer needed;
    * ``crashed: <reason>`` -- the child died on its own (an exit code, a signal nobody of
      ours sent, e.g. the kernel's out-of-memory SIGKILL), with its stderr's last line;
    * ``failed: <error>`` -- it returned an error (an exception, a solution the checker
      rejects)."""
    if rec.get("status") != "error":
        return "returned"
    err = str(rec.get("error") or "")
    if err.startswith("certify: stopped once the gap was closed"):
        return "stopped once the gap was closed"
    if err.startswith("timeout: killed after"):
        return "stopped at the limit: " + err.removeprefix("timeout: ")
    if err.startswith("certify: stopped at the limit") or err.startswith("stopped:"):
        return "stopped at the limit"
    if err.startswith("crash: "):
        head, _, tail = err.removeprefix("crash: ").partition("; stderr: ")
        last = tail.strip().splitlines()[-1] if tail.strip() else ""
        return "crashed: " + head + (f" ({last})" if last else "")
    return "failed: " + err


def run_summary(rec: dict[str, Any]) -> dict[str, Any]:
    """A member's line of the certificate: what it was, what it gave, how it ended."""
    out = {k: rec.get(k) for k in ("method", "status", "objective", "bound", "wall_s",
                                   "time_limit", "error")}
    out["outcome"] = outcome(rec)
    return out
