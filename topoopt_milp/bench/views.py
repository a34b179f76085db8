"""The text of ``topoopt-milp table``: the per-instance and per-family gap tables
(:mod:`.tables`) or the headline (:mod:`.headline`), chosen by ``by``."""

from __future__ import annotations

import pandas as pd

from .headline import headline
from .tables import gap_table


def table(runs: pd.DataFrame, by: str, fmt: str, wide: str | None = None,
          label: str | None = None, **bound_kw) -> str:
    """``by`` = ``headline``: :func:`.headline.headline`; ``instance`` or ``family``:
    :func:`.tables.gap_table` (which explains ``wide``, ``label`` and the formats)."""
    if by == "headline":
        return headline(runs, fmt, **bound_kw)
    return gap_table(runs, by, fmt, wide, label, **bound_kw)
