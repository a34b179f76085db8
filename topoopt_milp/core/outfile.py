"""Writing what a command produces (``--out``): checked before the work, never lost after it.

Every file a command writes goes through :func:`write_text` / :func:`write_bytes` (solution
files, instances, tables, exports, reports, figures), so that a write that fails is one
line naming the file -- an :class:`OutputError`, exit code 2 -- and not a traceback:

* **before the work**: :func:`check_writable` refuses what can be known up front -- an empty
  name, a folder, a missing or read-only folder, a name longer than the file system allows
  -- so that a solve is not run for a file that cannot be written;
* **after the work**: what cannot be known up front (a full disk, a quota, a file system
  that turns read-only) is caught when writing; the content, already in memory, is then
  saved to a fresh file in the temporary folder and the error says where, so the work is not
  lost. A partial file the failed write left behind is removed.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

from .errors import InputError


class OutputError(InputError):
    """An output file cannot be written; the message names it (and where its content went)."""


def _limit(folder: Path, name: str, default: int) -> int:
    try:
        return int(os.pathconf(folder, name))
    except (OSError, ValueError):
        return default


def check_writable(path: str | os.PathLike, what: str = "--out") -> Path:
    """``path`` as a :class:`Path` if a file can be written there; an :class:`OutputError`
    naming ``what`` and the file otherwise (checked before any work is done)."""
    text = os.fspath(path)
    if not text.strip():
        raise OutputError(f"{what}: the file name is empty")
    if "\0" in text:
        raise OutputError(f"{what}: {text!r}: a file name cannot contain a NUL character")
    p = Path(text)
    try:
        return _checked(p, text, what)
    except OSError as exc:  # a stat that fails (a folder name too long, a loop of links)
        raise OutputError(f"{what}: {text}: cannot write there ({_why(exc)})") from None


def _checked(p: Path, text: str, what: str) -> Path:
    if text.endswith(("/", os.sep)):
        raise OutputError(f"{what}: {text}: names a folder (it ends with a slash), not a file")
    for part in p.parts:  # every component, the folders' too (before any stat fails on them)
        if len(os.fsencode(part)) > 255 and part != p.name:
            raise OutputError(f"{what}: {text}: a folder name is {len(os.fsencode(part))} bytes "
                              "long, longer than file systems allow (255)")
    folder = p.parent
    if not folder.exists():
        raise OutputError(f"{what}: {text}: the folder {folder} does not exist")
    if not folder.is_dir():
        raise OutputError(f"{what}: {text}: {folder} is not a folder")
    name_max = _limit(folder, "PC_NAME_MAX", 255)
    if len(os.fsencode(p.name)) > name_max:
        raise OutputError(f"{what}: {text}: the file name is {len(os.fsencode(p.name))} bytes "
                          f"long, the file system allows {name_max}")
    path_max = _limit(folder, "PC_PATH_MAX", 4096)
    if len(os.fsencode(os.path.abspath(text))) >= path_max:
        raise OutputError(f"{what}: {text}: the path is longer than the file system allows "
                          f"({path_max} bytes)")
    if p.is_dir():
        raise OutputError(f"{what}: {text}: is a folder, not a file")
    if p.exists():
        if not os.access(p, os.W_OK):
            raise OutputError(f"{what}: {text}: cannot write it (read-only or no permission)")
    elif not os.access(folder, os.W_OK | os.X_OK):
        raise OutputError(f"{what}: {text}: cannot create a file in {folder} (read-only or no "
                          "permission)")
    return p


def check_folder(path: str | os.PathLike, what: str = "--out") -> Path:
    """The output folder ``path``, created if missing; an :class:`OutputError` when it cannot
    be created or written (checked before any work is done)."""
    text = os.fspath(path)
    if not text.strip():
        raise OutputError(f"{what}: the folder name is empty")
    if "\0" in text:
        raise OutputError(f"{what}: {text!r}: a folder name cannot contain a NUL character")
    p = Path(text)
    if os.path.exists(text) and not os.path.isdir(text):  # os.path: False on a failing stat
        raise OutputError(f"{what}: {text}: is a file, not a folder")
    try:
        p.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputError(f"{what}: {text}: cannot create the folder ({_why(exc)})") from None
    if not os.access(p, os.W_OK | os.X_OK):
        raise OutputError(f"{what}: {text}: cannot write in the folder (read-only or no "
                          "permission)")
    return p


def write_text(path: str | os.PathLike, text: str, what: str = "--out") -> Path:
    """Write ``text`` (UTF-8) to ``path``; see :func:`write_bytes`."""
    return write_bytes(path, text.encode("utf-8"), what)


def write_bytes(path: str | os.PathLike, data: bytes, what: str = "--out") -> Path:
    """Write ``data`` to ``path``. On failure, an :class:`OutputError` naming the file and
    the reason; the data is saved to a temporary file first and the message says where."""
    name = os.fspath(path)
    existed = os.path.lexists(name) if name and "\0" not in name else False
    try:
        if not name.strip() or "\0" in name:
            raise OSError(0, "the file name is empty" if not name.strip() else
                          "a file name cannot contain a NUL character")
        with open(name, "wb") as fh:
            fh.write(data)
        return Path(name)
    except OSError as exc:
        reason = _why(exc)
    if not existed and name and "\0" not in name and os.path.isfile(name):
        with contextlib.suppress(OSError):  # the partial file of a failed write is no output
            os.remove(name)
    raise OutputError(f"{what}: cannot write {name or repr(name)} ({reason}); "
                      f"{_save_elsewhere(name, data)}")


def _why(exc: OSError) -> str:
    return exc.strerror or str(exc)


def _save_elsewhere(name: str, data: bytes) -> str:
    """Save ``data`` to a new file in the temporary folder; the sentence saying where."""
    stem = Path(name).name[-40:] if name.strip() else "out"
    try:
        fd, spare = tempfile.mkstemp(prefix="topoopt-unsaved-", suffix="-" + stem)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
    except OSError as exc:
        return f"it could not be saved elsewhere either ({_why(exc)})"
    return f"the output was saved to {spare} instead"
