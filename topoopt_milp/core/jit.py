"""numba's ``njit``, or a pass-through when numba is missing (one place for the compiled
kernels of :mod:`.maxmin_kernel`, :mod:`.bfs`, :mod:`.hop_volume`, :mod:`.tours`, the
simulators, ``methods/hop_anneal/kernel.py`` and ``methods/heuristics/cycle_descent.py``).

numba is a dependency (pyproject.toml); the fallback only keeps the modules importable, and
``HAVE_NUMBA`` lets a caller pick its pure-numpy path instead."""

from __future__ import annotations

try:
    from numba import njit

    HAVE_NUMBA = True
except ImportError:  # pragma: no cover - exercised only without numba
    HAVE_NUMBA = False

    def njit(*args, **kwargs):
        if args and callable(args[0]):
            return args[0]
        return lambda f: f

__all__ = ["HAVE_NUMBA", "njit"]
