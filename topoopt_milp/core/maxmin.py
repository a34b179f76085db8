"""Max-min fair rates of flows on capacitated arcs, by progressive filling (vectorised).

Flows are grouped in *classes*: all flows of one class follow the same path (the same
multiset of arcs), so max-min fairness gives them the same rate. With ``P`` the ``classes x
arcs`` incidence matrix (``P[c, a]`` = times path ``c`` crosses arc ``a``), ``w_c`` the number
of live flows of class ``c`` and ``cap_a`` the arc capacities, the max-min fair allocation is
the limit of *progressive filling*:

1. every unfrozen flow's rate rises at the same speed from the current level;
2. an arc saturates when ``sum_c w_c P[c, a] r_c = cap_a``; the level at which the next arc
   saturates is ``min_a rem_a / load_a`` with ``load_a = sum_{c unfrozen} w_c P[c, a]``;
3. every class crossing a saturated arc is frozen at that level; repeat until all are frozen.

:class:`MaxMin` computes this fixed point without one round per level: each round freezes
every *local bottleneck* (an arc whose saturation level is the lowest among all arcs of the
classes crossing it; see :meth:`MaxMin.rates` for why that is exact), so the round count is
the length of the longest chain of bottlenecks. A round is a few gathers, scatters and two
scatters over the (arc, class) entries of the classes still open; shares within a
relative ``tie`` of each other saturate together. tests/test_simulate.py checks it against
plain one-arc-per-round progressive filling.

This is the allocation of SimGrid's ``CM02`` model with equal sharing penalties (its LMM
solver computes the same fixed point); :mod:`topoopt_milp.core.simgrid_ref` checks it.
"""

from __future__ import annotations

import numpy as np
from scipy.sparse import csr_matrix

TIE = 1e-12  # relative: shares this close to the minimum saturate in the same round


class MaxMin:
    """The max-min fair rates of flow classes on fixed paths (module docstring), prepared
    once per set of paths and solved for any flow counts by :meth:`rates`.

    Data layout (all numpy, no per-class Python loop in a round): the ``arcs x classes``
    incidence matrix ``PT`` in CSR form; each stored entry is one (arc, class) pair with the
    times the class crosses the arc, and ``rowid`` holds its arc. A round works on the
    entries of the open classes only: a class's lowest arc level is one gather and one
    ``minimum.at`` scatter, and the frozen bandwidth and open flows of the arcs are updated by
    ``bincount`` over the entries of the classes it freezes (no product over all classes)."""

    def __init__(self, paths: list[np.ndarray], cap: np.ndarray) -> None:
        self.m = len(cap)
        self.k = len(paths)
        self.cap = np.asarray(cap, dtype=float)
        lens = np.fromiter((len(p) for p in paths), dtype=np.int64, count=len(paths))
        if (lens == 0).any():
            raise ValueError("max-min: every path needs at least one arc")
        cols = np.concatenate(paths) if paths else np.zeros(0, dtype=np.int64)
        rows = np.repeat(np.arange(self.k), lens)
        P = csr_matrix((np.ones(len(cols)), (rows, cols)), shape=(self.k, self.m))
        P.sum_duplicates()
        self.PT = P.T.tocsr()
        self.PT.sort_indices()
        self.indices = self.PT.indices
        self.rowid = np.repeat(np.arange(self.m), np.diff(self.PT.indptr))

    def rates(self, weights: np.ndarray, tie: float = TIE) -> tuple[np.ndarray, int]:
        """Per-flow rate of every class for ``weights`` flows per class (``0``: idle, rate
        0) and the number of rounds.

        Rounds saturate every *local bottleneck* at once. With ``F_a`` the bandwidth of
        frozen classes on arc ``a`` and ``load_a`` its open flows, arc ``a`` saturates when the
        open flows reach ``level_a = (cap_a - F_a) / load_a``. Freezing a class at a rate at
        or below ``level_a`` moves that rate from ``cap_a - F_a`` and one flow from
        ``load_a``, which cannot lower ``level_a``: arc levels never decrease. An arc whose
        level is the lowest among all arcs of all open classes crossing it therefore
        saturates before (or with) each of them, whatever happens elsewhere, so its classes
        are frozen at ``level_a`` at once. The result is the progressive-filling allocation,
        in as many rounds as the longest chain of bottlenecks rather than one round per
        distinct level."""
        w = np.asarray(weights, dtype=float)
        open_ = w > 0
        rate = np.zeros(self.k)
        # the (arc, class) entries of the open classes, with the times the class crosses the
        # arc: compacted after every round, so later rounds cost what is left
        keep = open_[self.indices]
        ind, row, mult = self.indices[keep], self.rowid[keep], self.PT.data[keep]
        wm = w[ind] * mult
        load = np.bincount(row, weights=wm, minlength=self.m)
        frozen = np.zeros(self.m)
        low = np.empty(self.k)
        rounds = 0
        while len(ind):
            rounds += 1
            with np.errstate(divide="ignore", invalid="ignore"):
                lvl = np.maximum(self.cap - frozen, 0.0) / load
            lvl[load <= 0] = np.inf
            # a class's level is the lowest level of its arcs
            low[ind] = np.inf
            e_lvl = lvl[row]
            np.minimum.at(low, ind, e_lvl)
            e_low = low[ind]
            # an arc is blocked if an open class through it has a lower level elsewhere
            blocked = np.zeros(self.m, dtype=bool)
            blocked[row[e_low * (1 + tie) < e_lvl]] = True
            hit = np.zeros(self.k, dtype=bool)
            hit[ind[~blocked[row]]] = True
            if not hit.any():  # cannot happen: the arc of the lowest level is a bottleneck
                raise RuntimeError("max-min: progressive filling made no progress")
            rate[hit] = low[hit]
            gone = hit[ind]
            rg, wg = row[gone], wm[gone]
            frozen += np.bincount(rg, weights=wg * e_low[gone], minlength=self.m)
            load -= np.bincount(rg, weights=wg, minlength=self.m)
            load[load < 0.5] = 0.0  # flow counts are integers: clear rounding residue
            stay = ~gone
            ind, row, wm = ind[stay], row[stay], wm[stay]
        return rate, rounds


def max_min_rates(paths: list[np.ndarray], weights: np.ndarray, cap: np.ndarray,
                  tie: float = TIE) -> tuple[np.ndarray, int]:
    """One-off :meth:`MaxMin.rates` for ``paths`` (arrays of arc indices)."""
    return MaxMin(paths, cap).rates(weights, tie)
