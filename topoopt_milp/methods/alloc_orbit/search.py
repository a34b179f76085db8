"""Annealing over link orbits: the invariant topologies searched move by move, each move
valued exactly by the route LP in the orbit space (:func:`.model.build` with a ``support``).

State: the link-orbit vector ``z`` (:class:`.model.Orbits`), every type at its port budget
and every orbit within the multiplicity cap. Moves keep every type's degree:

* *re-jump*: one link of orbit ``(t, t', j)`` moves to ``(t, t', j')``, another jump between
  the same two types (a matching orbit only swaps with its type's other orbits when the
  degree allows: it is skipped);
* *switch*: two links ``(a, b, j1)`` and ``(c, e, j2)`` become ``(a, c, x)`` and
  ``(b, e, y)`` (or ``(a, e, .)``, ``(b, c, .)``) with random jumps ``x, y``: each end type
  keeps one link end, as a degree-preserving 2-switch does on nodes.

A move is kept by the Metropolis rule on the LP value, with the temperature falling linearly
to 0 over the budget from ``t_start`` times the current value. An invariant topology whose
LP value is ``inf`` (disconnected traffic) is never kept. The best state seen is returned.

Measured on bert-n128-d4 (period 4): from a random start, 0.0128963 s after 21 s (565
moves); the orbit MILP reached the same value after 240 s.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

from .model import Orbits


def random_state(orb: Orbits, degree: int, cap: int, rng: np.random.Generator,
                 tries: int = 200) -> np.ndarray | None:
    """A random ``z`` with every type at ``degree`` links: orbits in random order, each
    added while it fits (``None`` when ``tries`` orders all leave a port free)."""
    for _ in range(tries):
        z = _complete(orb, np.zeros(orb.size, dtype=np.int64), degree, cap, rng)
        if z is not None:
            return z
    return None


def _fits(orb: Orbits, z: np.ndarray, o: int, degree: int) -> bool:
    one = np.zeros(orb.size, dtype=np.int64)
    one[o] = 1
    return bool((orb.degrees(z + one) <= degree).all())


def _complete(orb: Orbits, z: np.ndarray, degree: int, cap: int,
              rng: np.random.Generator) -> np.ndarray | None:
    """``z`` filled up to ``degree`` at every type by random orbits that fit."""
    z = z.copy()
    for o in rng.permutation(np.repeat(np.arange(orb.size), cap)):
        if z[o] < cap and _fits(orb, z, o, degree):
            z[o] += 1
    return z if (orb.degrees(z) == degree).all() else None


def move(orb: Orbits, z: np.ndarray, cap: int, rng: np.random.Generator) -> np.ndarray | None:
    """One random move of the module docstring (``None``: not admissible)."""
    units = np.repeat(np.arange(orb.size), z)
    if len(units) == 0:
        return None
    a = int(units[rng.integers(len(units))])
    if orb.matching[a]:
        return None
    out = z.copy()
    out[a] -= 1
    if rng.random() < 0.5:
        same = np.flatnonzero((orb.t == orb.t[a]) & (orb.t2 == orb.t2[a]) & ~orb.matching)
        b = int(rng.choice(same))
        if b == a:
            return None
        out[b] += 1
    else:
        c = int(units[rng.integers(len(units))])
        if c == a or orb.matching[c] or out[c] == 0:
            return None
        out[c] -= 1
        p, q = (orb.t[a], orb.t2[a]), (orb.t[c], orb.t2[c])
        if rng.random() < 0.5:
            q = q[::-1]
        for x, y in ((p[0], q[0]), (p[1], q[1])):
            cand = np.flatnonzero((((orb.t == x) & (orb.t2 == y)) | ((orb.t == y) & (orb.t2 == x)))
                                  & ~orb.matching)
            if len(cand) == 0:
                return None
            out[int(rng.choice(cand))] += 1
    return out if out.max() <= cap else None


def anneal(orb: Orbits, z0: np.ndarray, value: Callable[[np.ndarray], float], cap: int,
           seconds: float, rng: np.random.Generator, t_start: float = 0.02
           ) -> tuple[np.ndarray, float, dict]:
    """The annealing of the module docstring from ``z0``: ``(best z, its value, summary)``."""
    t0 = time.perf_counter()
    cur, cv = z0, value(z0)
    best, bv = cur, cv
    start = cv
    moves = kept = improved = 0
    while (elapsed := time.perf_counter() - t0) < seconds:
        cand = move(orb, cur, cap, rng)
        if cand is None:
            continue
        moves += 1
        v = value(cand)
        if not np.isfinite(v):
            continue
        temp = t_start * max(0.0, 1.0 - elapsed / seconds) * cv
        if v < cv or (temp > 0 and rng.random() < np.exp(-(v - cv) / temp)):
            cur, cv = cand, v
            kept += 1
            if v < bv * (1 - 1e-9):
                best, bv = cand, v
                improved += 1
    return best, bv, {"moves": moves, "kept": kept, "improved": improved,
                      "start_s": start, "best_s": bv,
                      "anneal_s": time.perf_counter() - t0}
