"""Strict reading of the JSON files users hand the toolkit (instances and solutions).

Python's :func:`json.loads` accepts what a file format must not: the non-standard tokens
``NaN`` and ``Infinity``, numbers that overflow (``1e400`` becomes ``inf``), integers of any
length (``10**400``, which no float can hold, and a 5000-digit one, which ``int()`` refuses
with a ``ValueError``), duplicate keys (the last one wins silently), lone UTF-16 surrogates in
strings (``"\\ud800"``, which cannot be encoded as UTF-8 and breaks every later writer), and
nesting deep enough to exhaust the interpreter's stack (``RecursionError``).
:func:`read_json` refuses each of them with an :class:`~topoopt_milp.core.errors.InputError`
whose one-line message names the file and the field (a JSON path such as
``mp[3][2]`` or ``meta.seed``).

The parser hooks cannot know where they are, so they leave markers (:class:`_Bad` values,
:class:`_Pairs` objects remembering their duplicate keys); one iterative walk over the
parsed document then reports the first marker with its path, checks strings and bounds the
depth. The walk is iterative so that it cannot itself run out of stack.
"""

from __future__ import annotations

import json
import math
import re
import sys
from pathlib import Path
from typing import Any

import numpy as np

from .errors import InputError
from .files import read_input

MAX_DEPTH = 64  # the formats nest 5 levels deep; free-form ``meta`` gets ample room
MAX_INT_DIGITS = 309  # 1.8e308 is the largest float: refuse longer integers before int() does


class _Bad:
    """A value the parser refused; ``reason`` says why (reported with the value's path)."""

    def __init__(self, reason: str) -> None:
        self.reason = reason


class _Pairs(dict):
    """A JSON object that remembers the keys it saw more than once."""

    duplicates: tuple[str, ...] = ()


def _object(pairs: list[tuple[str, Any]]) -> _Pairs:
    obj = _Pairs(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        obj.duplicates = tuple(k for k, _ in pairs if k in seen or seen.add(k))
    return obj


def _int(text: str) -> int | _Bad:
    digits = len(text.lstrip("-"))
    if digits > MAX_INT_DIGITS or abs(int(text)) > sys.float_info.max:
        return _Bad(f"integer of {digits} digits is too large for a number (at most ~1.8e308)")
    return int(text)


def _float(text: str) -> float | _Bad:
    value = float(text)
    if math.isinf(value):
        return _Bad(f"number {_short(text)} overflows to infinity")
    return value


def _constant(text: str) -> _Bad:
    return _Bad(f"{text} is not a JSON number (JSON has no NaN or Infinity)")


def _short(text: str, limit: int = 24) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def text_problem(text: str) -> str | None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return (f"not valid Unicode text (lone surrogate U+{ord(text[exc.start]):04X} at "
                f"character {exc.start})")
    return None


def _join(path: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else key


def _clean(data: Any) -> bool:
    """Whether ``data`` has no defect :func:`problem` would report: one quick pass that
    checks the leaves of a container in place (a clean document, the usual case, then costs
    no path strings; an instance at n = 10^4 has 400k leaves)."""
    stack: list[tuple[Any, int]] = [(data, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, dict):
            if getattr(value, "duplicates", ()) or any(text_problem(k) for k in value):
                return False
            children = value.values()
        elif isinstance(value, list):
            children = value
        else:
            children = (value,)
            depth = 0
        if depth > MAX_DEPTH:
            return False
        for v in children:
            t = type(v)
            if t is int or t is bool or v is None:
                continue
            if t is float:
                if not math.isfinite(v):
                    return False
            elif t is str:
                if text_problem(v):
                    return False
            elif isinstance(v, dict | list):
                stack.append((v, depth + 1))
            else:  # a _Bad number, or another object about to be written
                return False
    return True


def problem(data: Any) -> str | None:
    """The first defect of a parsed document (or of a Python object about to be written as
    JSON: non-finite floats count too), as ``"field: reason"`` (``None``: clean)."""
    if _clean(data):
        return None
    stack: list[tuple[Any, str, int]] = [(data, "", 1)]
    while stack:
        value, path, depth = stack.pop()
        where = path or "(top level)"
        if isinstance(value, _Bad):
            return f"{where}: {value.reason}"
        if isinstance(value, float) and not math.isfinite(value):
            return f"{where}: {value} is not a finite number"
        if isinstance(value, str):
            bad = text_problem(value)
            if bad:
                return f"{where}: {bad}"
            continue
        if not isinstance(value, dict | list):
            continue
        if depth > MAX_DEPTH:
            return f"{where}: nested too deeply (the limit is {MAX_DEPTH} levels)"
        if isinstance(value, dict):
            dups = getattr(value, "duplicates", ())
            if dups:
                return f"{_join(path, dups[0])}: duplicate key (a key may appear once per object)"
            items = list(value.items())
            for key, _ in items:
                bad = text_problem(key)
                if bad:
                    return f"{where}: a key is {bad}"
        else:
            items = list(enumerate(value))
        stack.extend((v, _join(path, k), depth + 1) for k, v in reversed(items))
    return None


def _deep_line(text: str) -> str:
    """``"line L"`` where the nesting of ``text`` first exceeds :data:`MAX_DEPTH` (strings
    blanked out first, so brackets inside them do not count)."""
    bare = re.sub(r'"(?:[^"\\]|\\.)*"', lambda m: "_" * len(m.group()), text)
    chars = np.frombuffer(bare.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    step = np.isin(chars, (ord("["), ord("{"))).astype(np.int64) \
        - np.isin(chars, (ord("]"), ord("}")))
    over = np.flatnonzero(np.cumsum(step) > MAX_DEPTH)
    return f"line {bare.count(chr(10), 0, int(over[0])) + 1}" if len(over) else "(top level)"


def loads(text: str) -> Any:
    """Parse ``text`` strictly; raises :class:`InputError` ``"field: reason"`` (no file name)
    or :class:`json.JSONDecodeError`."""
    try:
        data = json.loads(text, object_pairs_hook=_object, parse_int=_int, parse_float=_float,
                          parse_constant=_constant)
    except RecursionError:
        raise InputError(f"{_deep_line(text)}: nested too deeply (the limit is {MAX_DEPTH} "
                         "levels)") from None
    bad = problem(data)
    if bad:
        raise InputError(bad)
    return data


def read_json(path: str | Path, error: type[InputError] = InputError) -> Any:
    """Read and strictly parse the JSON file ``path``; every defect is an ``error`` whose
    message starts with the file name (and names the field)."""
    raw = read_input(path, error)  # a regular file only: a FIFO would block (core/files.py)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise error(f"{path}: not valid JSON (not UTF-8 text)") from None
    try:
        return loads(text)
    except json.JSONDecodeError as exc:
        raise error(f"{path}: not valid JSON ({exc.msg} at line {exc.lineno})") from None
    except InputError as exc:
        raise error(f"{path}: {exc}") from None
