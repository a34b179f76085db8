"""``compare``: one instance, several methods, solved in this process, side by side.

No isolation and no store: a quick look, not a benchmark (use ``bench`` for that). Each
solution is solved, evaluated and independently checked exactly as in a sweep
(:func:`~topoopt_milp.bench.child.solve_record`, i.e.
:func:`~topoopt_milp.pipeline.solve_checked`), and each method's best bound follows the rule
of the tables (:mod:`.gaps`: only bounds whose scope contains that method's solution).
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from collections.abc import Sequence
from typing import Any

import pandas as pd

from .. import registry
from ..core.instance import Instance
from .child import solve_record
from .gaps import run_gaps
from .runner import check_settings, make_options

log = logging.getLogger(__name__)

COLUMNS = ["method", "kind", "status", "objective", "bound", "best_bound", "bound_source",
           "bound_scope", "gap_pct", "ratio", "runtime_s", "error", "gap_error"]


def compare_methods(
    instance: Instance,
    methods: Sequence[str],
    seed: int = 0,
    time_limit: float | None = None,
    settings: dict[str, Any] | None = None,
    bound_methods: Sequence[str] | None = None,
    analytic: bool = True,
    progress=None,
) -> pd.DataFrame:
    """Solve one instance with several methods in this process (no isolation) and return a
    DataFrame: each method's status, objective, own bound, the best bound whose scope contains
    its solution (exact methods' bounds and the analytic lower bound, see :mod:`.gaps`) and
    the gap to it. ``progress(name, record)`` is called after each method."""
    check_settings(methods, dict(settings or {}))
    ihash = instance.content_hash()
    rows = []
    for k, name in enumerate(methods):
        m = registry.get(name)
        rec = {"run_key": f"compare-{k}", "instance_name": instance.name, "instance_hash": ihash,
               "method": name, "method_kind": m.kind, "method_backend": m.backend,
               "objective_kind": None, "objective": None, "bound": None, "runtime_s": None,
               "metrics": None, "scope": None, "features": None, "error": None}
        with _stdout_to_stderr():  # solver banners must not corrupt `compare --format json`
            rec.update(solve_record(instance, name, make_options(name, seed, time_limit, settings)))
        log.info("compare: %s -> %s", name, rec.get("status"))
        rows.append(rec)
        if progress is not None:
            progress(name, rec)
    df = run_gaps(pd.DataFrame(rows), bound_methods=bound_methods, analytic=analytic)
    return df.rename(columns={"method_kind": "kind"})[COLUMNS]


@contextlib.contextmanager
def _stdout_to_stderr():
    sys.stdout.flush()
    saved = os.dup(1)
    try:
        os.dup2(2, 1)
        yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)
