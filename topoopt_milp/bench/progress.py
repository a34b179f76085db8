"""The one progress bar of the package (sweeps, ``compare``, ``cooptimize``): click's, on
stderr, so that stdout stays the command's result. On a terminal it is redrawn in place
with the position, the percentage and the ETA; elsewhere (a log file, CI) click prints the
label once, and each finished item is logged at INFO level (``topoopt-milp -v``)."""

from __future__ import annotations

import contextlib
import logging
import sys
from collections.abc import Callable, Iterator
from typing import Any

import click

log = logging.getLogger(__name__)


@contextlib.contextmanager
def progress_bar(length: int, label: str, show: Callable[[Any], str | None] | None = None,
                 enabled: bool = True) -> Iterator[Callable[[Any], None]]:
    """Yield ``advance(item)``: one step done, ``show(item)`` the text after the bar (and the
    log line). ``enabled = False`` draws nothing and logs only."""
    def note(item) -> None:
        text = show(item) if show is not None and item is not None else None
        if text:
            log.info("%s: %s", label, text)

    if not enabled:
        yield note
        return
    with click.progressbar(length=length, label=label, file=sys.stderr, show_pos=True,
                           item_show_func=lambda item: show(item) if show and item else None
                           ) as bar:
        def advance(item=None) -> None:
            bar.update(1, item)
            note(item)

        yield advance
