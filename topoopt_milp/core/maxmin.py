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

Each round is two sparse matrix-vector products (``P^T w`` and ``P s``), and every round
saturates at least one arc, so there are at most ``#arcs`` rounds. Arcs whose share is within
a relative ``tie`` of the minimum saturate in the same round (symmetric topologies have many
ties; treating them together is what keeps the round count small).

This is the allocation of SimGrid's ``CM02`` model with equal sharing penalties (its LMM
solver computes the same fixed point); :mod:`topoopt_milp.core.simgrid_ref` checks it.
"""

from __future__ import annotations

import numpy as np

TIE = 1e-12  # relative: shares this close to the minimum saturate in the same round


def padded(paths: list[np.ndarray], n_arcs: int) -> np.ndarray:
    """``paths`` (arrays of arc indices) as one ``classes x max_hops`` array, short rows
    padded with ``n_arcs``: a dummy arc of infinite capacity that every computation below
    ignores. Dense rows make each step of a round one vectorised gather or ``bincount``."""
    width = max((len(p) for p in paths), default=1)
    A = np.full((len(paths), max(width, 1)), n_arcs, dtype=np.int64)
    for c, p in enumerate(paths):
        A[c, : len(p)] = p
    return A


def max_min_rates(A: np.ndarray, weights: np.ndarray, cap: np.ndarray,
                  tie: float = TIE) -> tuple[np.ndarray, int]:
    """Per-flow rates of every class under max-min fairness (module docstring).

    Rounds saturate every *local bottleneck* at once. With ``F_a`` the bandwidth of frozen
    classes on arc ``a`` and ``load_a`` its open flows, arc ``a`` saturates when the open
    flows reach ``level_a = (cap_a - F_a) / load_a``. Freezing a class at rate ``r`` at or
    below ``level_a`` moves ``r`` from ``cap_a - F_a`` and one flow from ``load_a``, which
    cannot lower ``level_a``: arc levels never decrease. An arc whose level is the lowest among
    all arcs of all open classes crossing it therefore saturates before (or with) each of
    them, whatever happens elsewhere, so its classes are frozen at ``level_a`` at once. The
    result is the progressive-filling allocation, in as many rounds as the longest chain of
    bottlenecks instead of one round per distinct level.

    Parameters
    ----------
    A : ``classes x hops`` arc indices of every class's path (:func:`padded`).
    weights : number of flows in each class (``0``: the class is idle and gets rate 0).
    cap : arc capacities (bytes/s), all positive.

    Returns
    -------
    (rates, rounds): the rate of one flow of each class and the number of rounds.
    """
    m = len(cap)
    rate = np.zeros(A.shape[0])
    w = np.asarray(weights, dtype=float)
    idx = np.flatnonzero(w > 0)
    if not len(idx):
        return rate, 0
    sub = A[idx]
    wl = w[idx]
    H = sub.shape[1]
    capx = np.append(np.asarray(cap, dtype=float), np.inf)
    load = np.bincount(sub.ravel(), weights=np.repeat(wl, H), minlength=m + 1)
    load[m] = 0.0
    frozen_bw = np.zeros(m + 1)
    out = np.zeros(len(idx))
    live_rows = np.arange(len(idx))  # positions (in idx) of the open classes
    rounds = 0
    while len(live_rows):
        rounds += 1
        with np.errstate(divide="ignore", invalid="ignore"):
            lvl = np.where(load > 0, np.maximum(capx - frozen_bw, 0.0) / load, np.inf)
        lvl[m] = np.inf
        L = lvl[sub]  # level of every hop of every open class
        low = L.min(axis=1)  # the class's lowest arc level: its rate if it freezes now
        # arc a is not a bottleneck if some open class through it has a lower level elsewhere
        later = low[:, None] * (1 + tie) < L
        blocked = np.bincount(sub.ravel(), weights=later.ravel(), minlength=m + 1) > 0
        bottleneck = (load > 0) & ~blocked
        bottleneck[m] = False
        hit = bottleneck[sub].any(axis=1)
        if not hit.any():  # cannot happen: the arc of the lowest level is a bottleneck
            raise RuntimeError("max-min: progressive filling made no progress")
        out[live_rows[hit]] = low[hit]
        arcs = sub[hit].ravel()
        frozen_bw += np.bincount(arcs, weights=np.repeat(wl[hit] * low[hit], H), minlength=m + 1)
        load -= np.bincount(arcs, weights=np.repeat(wl[hit], H), minlength=m + 1)
        load[load < 0.5] = 0.0  # flow counts are integers: clear rounding residue
        keep = ~hit
        live_rows, sub, wl = live_rows[keep], sub[keep], wl[keep]
    rate[idx] = out
    return rate, rounds
