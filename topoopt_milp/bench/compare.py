"""``compare``: one instance, several methods, solved in this process, side by side.

No isolation and no store: a quick look, not a benchmark (use ``bench`` for that). Each
solution is evaluated and independently checked exactly as in a sweep
(:func:`~topoopt_milp.bench.runner.solve_record`), and the best bound follows the rule of the
tables (:func:`~topoopt_milp.bench.tables.best_bounds`).
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
from ..instance import Instance
from .runner import make_options, solve_record
from .tables import run_gaps

log = logging.getLogger(__name__)

COLUMNS = ["method", "backend", "status", "objective", "bound", "best_bound", "bound_source",
           "gap_pct", "runtime_s", "error"]


def compare_methods(
    instance: Instance,
    methods: Sequence[str],
    seed: int = 0,
    time_limit: float | None = None,
    settings: dict[str, Any] | None = None,
) -> pd.DataFrame:
    """Solve one instance with several methods in this process (no isolation) and return a
    DataFrame: each method's status, objective, own bound, the best bound found by any exact
    method (or the analytic lower bound, see :mod:`.tables`) and the gap to it in percent."""
    options = make_options(seed, time_limit, settings)
    ihash = instance.content_hash()
    rows = []
    for name in methods:
        m = registry.get(name)
        rec = {"instance_name": instance.name, "instance_hash": ihash, "method": name,
               "method_backend": m.backend, "objective_kind": None, "objective": None,
               "bound": None, "runtime_s": None, "metrics": None, "error": None}
        with _stdout_to_stderr():  # solver banners must not corrupt `compare --format json`
            rec.update(solve_record(instance, name, options))
        log.info("compare: %s -> %s", name, rec.get("status"))
        rows.append(rec)
    df = run_gaps(pd.DataFrame(rows))
    # "backend" in the table is the method's kind (heuristic / milp / cpsat), as in `table`.
    df = df.drop(columns=["backend"], errors="ignore").rename(columns={"method_backend": "backend"})
    return df[COLUMNS]


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
