"""What a method can handle: its declared size limit and its memory estimate, checked at once.

A request beyond a method's reach used to run until the machine gave out: ``alloc-milp`` at
``n = 5000`` tries to build ``n^3`` flow variables, a heuristic on a dense ``n = 5000``
instance grows for minutes past 12 GB. :func:`check` refuses such a request before anything
is built, with a :class:`SizeError` (an input error: one line, exit code 2) naming the
method, the size, the estimate and the limit. Two limits apply:

* ``max_n`` -- declared in each method's spec (:class:`~topoopt_milp.core.spec.MethodSpec`): the
  largest cluster its model is meant for. Without one, the instance limit
  :data:`~topoopt_milp.core.instance.MAX_N` applies.
* memory -- each spec's ``memory(instance, options)`` computes its model's size from the
  model's formula (variables and nonzeros, never by building it; the formula lives beside the
  model it describes) and converts it to bytes with :meth:`Estimate.model`, at the
  per-nonzero cost measured here; the limit is ``$TOPOOPT_MEMORY_GB`` or 80% of the
  machine's physical memory. A spec without one is estimated as a heuristic
  (:func:`dense_estimate`).

The counts the formulas use (``S`` sources with traffic, ``P`` ordered pairs with traffic,
``C`` commodities) come from :func:`traffic_counts`, without any ``n x n`` array.

Measured (2 cores, peak RSS minus the interpreter's, load ~11): alloc-milp with HiGHS
500-600 bytes per nonzero (PuLP objects, the matrix copy, branch and bound), route-milp's
array LP 400-700 (interior point fill-in), alloc-cpsat about 1 kB. The ``-lp`` heuristics'
route LP is checked when it is called, on the heuristic's topology.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from .errors import InputError
from .instance import MAX_N, Instance

if TYPE_CHECKING:
    from .params import SolveOptions
    from .spec import MethodSpec

BYTES_PER_NONZERO = {"milp": 700.0, "cpsat": 1000.0}
HEURISTIC_ARRAYS = 6  # dense n x n arrays of 8 bytes a heuristic run holds (links, distances...)
BYTES_PER_COMMODITY = 1000.0  # a routed commodity: object, path, solution and checker copies
MEMORY_SHARE = 0.8


class SizeError(InputError):
    """A request beyond what the method can handle (its ``max_n`` or the memory limit)."""


@dataclass(frozen=True)
class Estimate:
    """The memory a method run needs, ``bytes``, what dominates it, ``what``, and the model's
    estimated ``nonzeros`` (``None`` for heuristics, which build no model)."""

    bytes: float
    what: str
    nonzeros: float | None = None

    @classmethod
    def model(cls, nonzeros: float, backend: str, what: str) -> Estimate:
        return cls(BYTES_PER_NONZERO.get(backend, BYTES_PER_NONZERO["milp"]) * nonzeros, what,
                   nonzeros)


def memory_limit() -> float:
    """Bytes a single run may use: ``$TOPOOPT_MEMORY_GB`` GB, else 80% of physical memory."""
    text = os.environ.get("TOPOOPT_MEMORY_GB")
    if text:
        try:
            gb = float(text)
        except ValueError:
            gb = math.nan
        if not (math.isfinite(gb) and gb > 0):
            raise SizeError(f"TOPOOPT_MEMORY_GB: expected a positive number of GB, got {text!r}")
        return gb * 1e9
    return MEMORY_SHARE * os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def estimate(method: MethodSpec, instance: Instance, options: SolveOptions) -> Estimate:
    """The memory estimate of ``method`` on ``instance``: its spec's ``memory`` rule, or the
    heuristic estimate when it declares none."""
    return dense_estimate(instance) if method.memory is None else method.memory(instance, options)


def check(method: MethodSpec, instance: Instance, options: SolveOptions) -> Estimate:
    """Refuse (:class:`SizeError`) a run of ``method`` on ``instance`` beyond its ``max_n`` or
    the memory limit, naming both; returns the estimate otherwise."""
    n = instance.n
    limit_n = MAX_N if method.max_n is None else method.max_n
    if n > limit_n:
        est = estimate(method, instance, options)
        raise SizeError(f"{method.name}: n = {n} is beyond the sizes it handles (n <= "
                        f"{limit_n}); it would need ~{_gb(est.bytes)} for {est.what}")
    est = estimate(method, instance, options)
    limit = memory_limit()
    if est.bytes > limit:
        raise SizeError(f"{method.name}: n = {n} needs ~{_gb(est.bytes)} for {est.what}; the "
                        f"memory limit is {_gb(limit)} ($TOPOOPT_MEMORY_GB, else 80% of physical "
                        "memory)")
    return est


def _gb(b: float) -> str:
    return f"{b / 1e9:.3g} GB"


# -- traffic counts (no n x n array: heuristics are estimated at any n) ---------------------------
@dataclass(frozen=True)
class TrafficCounts:
    sources: int  # S: servers that send (MP sources, members of AllReduce groups with volume)
    pairs: int  # P: ordered pairs with traffic under the default (bidirectional) rings
    free_pairs: int  # P when ring orders are free: every ordered pair inside a group
    commodities: int  # C: MP demands plus the ring edges of the default rings


def traffic_counts(instance: Instance) -> TrafficCounts:
    """``S``, ``P``, free-ring ``P`` and ``C`` of the module docstring."""
    n = instance.n
    mp = np.array([(s, t) for s, t, b in instance.mp if b > 0], dtype=np.int64).reshape(-1, 2)
    senders = [mp[:, 0]]
    pairs = [mp[:, 0] * n + mp[:, 1]]
    comms = len(mp)
    groups = [np.array(sorted(g.members), dtype=np.int64) for g in instance.allreduce
              if g.bytes > 0]
    for ms in groups:
        nxt = np.roll(ms, -1)
        senders.append(ms)
        pairs += [ms * n + nxt, nxt * n + ms]
        comms += 2 * len(ms)
    return TrafficCounts(len(np.unique(np.concatenate(senders))), len(np.unique(np.concatenate(pairs))),
                         _free_pairs(n, mp, groups), comms)


def _free_pairs(n: int, mp: np.ndarray, groups: list[np.ndarray]) -> int:
    """Ordered pairs inside some group, or with MP demand, counted without listing them.

    Each node gets the bit mask ``sig`` of the groups it belongs to; ``i != j`` share a group
    iff ``sig_i & sig_j != 0``. With ``c_s`` nodes of mask ``s``, the pairs inside groups are
    ``sum_{s & t != 0} c_s c_t - sum_{s != 0} c_s`` (the second term drops ``i = j``), over
    the distinct masks only; the MP pairs are added when their ends share no group. Listing
    the pairs took 25 s at n = 2000 (two disjoint groups of 1000) and 300 s CPU at
    n = 10^4 (two overlapping random groups: 10^8 pairs to unique), inside the memory check
    that runs before each method, i.e. inside its time limit."""
    codes = np.unique(mp[:, 0] * n + mp[:, 1])
    s, t = codes // n, codes % n
    if len(groups) > 62:  # more groups than bits: list the pairs (rare; small groups)
        free = [codes[s != t]]
        for ms in groups:
            a, b = np.meshgrid(ms, ms)
            free.append((a * n + b)[a != b])
        return len(np.unique(np.concatenate(free)))
    sig = np.zeros(n, dtype=np.int64)
    for k, ms in enumerate(groups):
        sig[ms] |= np.int64(1) << k
    masks, counts = np.unique(sig, return_counts=True)
    inside = 0
    for lo in range(0, len(masks), 512):  # rows of the mask x mask table, 512 at a time
        share = (masks[lo:lo + 512, None] & masks[None, :]) != 0
        inside += int(counts[lo:lo + 512] @ (share @ counts))
    inside -= int(counts[masks != 0].sum())
    outside = int(((sig[s] & sig[t]) == 0).sum())
    return inside + outside


def dense_estimate(instance: Instance) -> Estimate:
    """A heuristic's memory (whatever solver it calls inside; also the analytic bounds and
    route-approx's column generation): ``HEURISTIC_ARRAYS`` dense ``n x n`` arrays of 8 bytes
    (links, distances, loads) and about 1 kB per routed commodity."""
    n = instance.n
    t = traffic_counts(instance)
    return Estimate(HEURISTIC_ARRAYS * 8.0 * n * n + BYTES_PER_COMMODITY * t.commodities,
                    f"{HEURISTIC_ARRAYS} dense {n} x {n} arrays and {t.commodities} routed "
                    "commodities")
