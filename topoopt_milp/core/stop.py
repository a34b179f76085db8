"""Stopping a command from outside: Ctrl-C (SIGINT) and a scheduler's kill (SIGTERM).

SIGTERM is turned into :class:`Terminated`, a :class:`KeyboardInterrupt`, so that it takes
every path Ctrl-C takes: HiGHS and CP-SAT stop and hand back their incumbent, a CBC child is
killed and its temporary folder removed, ``solve`` writes what it has, ``bench`` keeps its
finished runs. Only the exit code differs, by the shell's convention ``128 + signal``: 130
after Ctrl-C, 143 after SIGTERM (:func:`exit_code`). A solver that swallows the interrupt to
return its incumbent leaves the signal recorded here (:func:`terminated`).
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator

_RECEIVED: list[int] = []  # the SIGTERMs received while :func:`sigterm_as_interrupt` is active


class Terminated(KeyboardInterrupt):
    """The process received SIGTERM (handled as Ctrl-C; exit code 143)."""


def _on_sigterm(signum, frame) -> None:
    _RECEIVED.append(signum)
    raise Terminated(f"terminated by {signal.Signals(signum).name}")


@contextlib.contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """While active (main thread only), SIGTERM raises :class:`Terminated`."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = signal.signal(signal.SIGTERM, _on_sigterm)
    mark = len(_RECEIVED)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)
        del _RECEIVED[mark:]


def terminated() -> bool:
    """Whether SIGTERM arrived (while :func:`sigterm_as_interrupt` is active)."""
    return bool(_RECEIVED)


def exit_code(exc: BaseException | None = None) -> int:
    """130 (``128 + SIGINT``) after Ctrl-C, 143 (``128 + SIGTERM``) after SIGTERM."""
    term = isinstance(exc, Terminated) or terminated()
    return 128 + (signal.SIGTERM if term else signal.SIGINT)


def what(exc: BaseException | None = None) -> str:
    """``"terminated (SIGTERM)"`` or ``"interrupted (Ctrl-C)"``, for the message."""
    return "terminated (SIGTERM)" if exit_code(exc) == 143 else "interrupted (Ctrl-C)"
