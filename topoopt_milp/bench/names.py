"""Strings from instance files, made safe to become file names, paths and one-line messages.

An instance file is user input: its ``meta.family`` (or any other string) may hold ``/``,
``..``, NUL, newlines or thousands of characters, and its own file name may not even be valid
UTF-8. Nothing of it reaches the file system unsanitised:

* :func:`file_component` turns any string into one portable path component;
* :func:`inside` resolves a path and refuses it outside its root folder (``..``, symbolic
  links);
* :func:`display_path` renders a path as one printable line of valid UTF-8 (for error
  messages and the store's ``instance_path`` column).
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

from ..core.errors import InputError

_UNSAFE = re.compile(r"[^A-Za-z0-9._+-]+")
MAX_COMPONENT = 80  # characters: far below every file system's limit, suffix included


def file_component(text: object) -> str:
    """``text`` as one safe path component: letters, digits and ``._+-`` only, no leading
    dot, at most :data:`MAX_COMPONENT` characters. A string that is already safe is returned
    unchanged (so plain family names keep their file names); any other gets the unsafe runs
    replaced by ``_`` and the first 8 hex digits of its SHA-256 appended, so two different
    strings never share a file (``a/b`` and ``a_b`` differ).

    >>> file_component("dnn"), file_component("../../etc/x")
    ('dnn', 'etc_x-56da1a2e')
    """
    text = str(text)
    safe = _UNSAFE.sub("_", text).lstrip("._")[:MAX_COMPONENT - 9]
    if safe == text and safe:
        return safe
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return f"{safe}-{digest}" if safe else digest


def inside(root: str | Path, path: str | Path) -> Path:
    """``path`` resolved (symbolic links followed), after checking that it lies in ``root``.

    Raises :class:`~topoopt_milp.core.errors.InputError` for a path that leaves ``root``."""
    base = Path(root).resolve()
    full = (base / path).resolve()
    if not full.is_relative_to(base):
        raise InputError(f"{display_path(path)}: outside {display_path(base)}, not written "
                         "(a '..' or a symbolic link leads out of it)")
    return full


def display_path(path: str | Path) -> str:
    """``path`` as one line of printable UTF-8: undecodable bytes as ``\\xNN``, control
    characters (newline, tab, ...) escaped."""
    text = os.fsencode(path).decode("utf-8", "backslashreplace")
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)
