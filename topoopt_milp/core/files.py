"""The one rule for reading an input file a user names: it must be a regular file.

A FIFO, a character device (``/dev/zero``, a terminal) or a socket given as an instance, a
solution, a topology or a strategy file would block the reader forever (a FIFO without a
writer) or feed it without end (``/dev/zero``); a directory cannot be read at all. Every
reader of user files goes through :func:`read_input`, which

* asks what the path names (``stat``) and refuses anything but a regular file with the error
  class the caller names, in one line naming the file; then
* opens it without blocking (``O_NONBLOCK``: were it swapped for a FIFO since, opening it for
  reading returns at once instead of waiting for a writer) and asks the *open* descriptor
  again (``fstat``), so no race between the check and the open lets a FIFO through;
* optionally refuses a file larger than ``max_bytes`` before reading it (readers whose size
  is bounded by the instance, such as topology files).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from .errors import InputError

_KINDS = ((stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISDIR, "a directory"),
          (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISSOCK, "a socket"))


def file_kind(mode: int) -> str:
    """What a non-regular file is, in words (``"a FIFO (named pipe)"``)."""
    return next((text for test, text in _KINDS if test(mode)), "not a regular file")


def read_input(path: str | Path, error: type[InputError] = InputError,
               max_bytes: int | None = None, shown: str | None = None) -> bytes:
    """The bytes of the regular file ``path``.

    Parameters
    ----------
    path : str or Path
        The file a user named.
    error : type of InputError
        The error class raised (``InstanceError``, ``SolutionError``...).
    max_bytes : int, optional
        Refuse a larger file before reading it.
    shown : str, optional
        How the file is named in messages (default: ``path`` as given).

    Raises
    ------
    InputError
        ``"<file>: not a regular file (a FIFO (named pipe))"``, ``"<file>: cannot read
        (<reason>)"`` or ``"<file>: too large (...)"``; one line, naming the file.
    """
    name = str(path) if shown is None else shown
    try:
        # what the path names, before opening it (a socket cannot even be opened)
        mode = os.stat(path).st_mode
        if not stat.S_ISREG(mode):
            raise error(f"{name}: not a regular file ({file_kind(mode)})")
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise error(f"{name}: cannot read ({exc.strerror or exc})") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise error(f"{name}: not a regular file ({file_kind(info.st_mode)})")
        if max_bytes is not None and info.st_size > max_bytes:
            raise error(f"{name}: too large ({info.st_size} bytes; at most {max_bytes} for "
                        "this input)")
        # a regular file never blocks, O_NONBLOCK or not; read it whole through a file object
        with os.fdopen(fd, "rb", closefd=True) as f:
            fd = -1
            return f.read()
    except OSError as exc:
        raise error(f"{name}: cannot read ({exc.strerror or exc})") from None
    finally:
        if fd >= 0:
            os.close(fd)


def read_input_text(path: str | Path, error: type[InputError] = InputError,
                    max_bytes: int | None = None, shown: str | None = None) -> str:
    """:func:`read_input` decoded as UTF-8 (an error naming the file otherwise)."""
    name = str(path) if shown is None else shown
    data = read_input(path, error, max_bytes, name)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise error(f"{name}: line {line}: not UTF-8 text (byte 0x{data[exc.start]:02x} at "
                    f"offset {exc.start})") from None
