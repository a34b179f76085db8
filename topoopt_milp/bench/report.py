"""Every table and figure of a run store written into one folder (what ``results/`` holds).

:func:`write_report` is what ``topoopt-milp report`` (and a reproduction script) calls; it
only combines :mod:`.tables` and :mod:`.plots`, so every file it writes is regenerated from
the raw rows by one command.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from ..core.outfile import check_folder, write_text
from .plots import KINDS, NoDataError, plot
from .views import table

log = logging.getLogger(__name__)

TABLES = (  # file stem, table arguments
    ("instances", {"by": "instance"}),
    ("gaps", {"by": "instance", "wide": "gap_pct"}),
    ("families", {"by": "family"}),
    ("headline", {"by": "headline"}),
)
EXT = {"md": "md", "latex": "tex", "csv": "csv", "json": "json"}


def write_report(
    runs: pd.DataFrame,
    outdir: str | Path,
    table_formats: Sequence[str] = ("md", "latex", "csv"),
    figure_formats: Sequence[str] = ("png", "pdf"),
    kinds: Sequence[str] = KINDS,
    **bound_kw,
) -> list[Path]:
    """Write ``instances``, ``gaps`` (wide gap %), ``families`` and ``headline`` tables in
    every table format and every figure kind in every figure format into ``outdir``; return the paths.

    A figure kind without data (e.g. ``iteration`` when no run has a workload instance) is
    skipped with a log message, not an error."""
    out = check_folder(outdir)
    written: list[Path] = []
    for stem, kw in TABLES:
        for fmt in table_formats:
            path = out / f"{stem}.{EXT[fmt]}"
            write_text(path, table(runs, fmt=fmt, **kw, **bound_kw))
            written.append(path)
    for kind in kinds:
        paths = [out / f"{kind}.{ext}" for ext in figure_formats]
        try:
            written.extend(plot(runs, kind, paths, **(bound_kw if kind == "gap" else {})))
        except NoDataError as exc:
            log.warning("report: skipping %s: %s", kind, exc)
    return written
