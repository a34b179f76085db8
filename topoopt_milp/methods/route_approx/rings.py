"""Free AllReduce ring shares in :mod:`.route_approx`: every group splits its volume over a
set of candidate ring orders, the shares chosen with the routing.

The problem (model units) is the ring LP of :mod:`..formulations.ring_lp` (``route_rings``)::

    min U  s.t.  every pair k = (s, t) sends d_k(sigma) = D_k + sum_g e_g sum_{c in C_g: k in c}
                 sigma_c on paths from s to t;  load(r) <= U cap(r);
                 sum_{c in C_g} sigma_c = 1,  sigma >= 0   (every group g)

``D`` the fixed (MP) demand, ``e_g`` the edge volume of group ``g``, ``k in c`` when ``s -> t``
is an edge of the cyclic order ``c``.

The certified lower bound
-------------------------
For lengths ``mu >= 0`` and any feasible routing with shares ``sigma`` and congestion ``U``::

    sum_r mu_r load(r) = sum over paths of flow x length >= sum_k d_k(sigma) dist_mu(k)
        = sum_k D_k dist_mu(k) + sum_g e_g sum_{c in C_g} sigma_c len_mu(c)
        >= sum_k D_k dist_mu(k) + sum_g e_g min_{c in C_g} len_mu(c)

with ``len_mu(c) = sum_{(u, v) in c} dist_mu(u, v)``, because every path is at least as long
as its pair's shortest path and the shares of a group are a convex combination. With
``sum_r mu_r load(r) <= U sum_r mu_r cap(r)``::

    U* >= LB(mu) = [sum_k D_k dist_mu(k) + sum_g e_g min_c len_mu(c)] / sum_r mu_r cap(r)

for every ``mu >= 0``: valid for the fixed topology and this candidate set (any ring order
outside it is not covered). Floating point: every ``len_mu(c)`` is a ``math.fsum`` (one
rounding) of computed distances, each at most ``(1 + u)^h`` times the true one
(:mod:`.method`); the product with ``e_g`` and the final ``fsum`` round once each, so the
margin ``1 - 4 (n + 8) u`` of :mod:`.method` (about ``4 n`` roundings) still covers the
``n + 6`` roundings of a term. The numerator is concave in ``mu`` and the loads of the
shortest-path routing with every group on its cheapest candidate are a supergradient
(:meth:`.common.Bound.ascend` uses them, :meth:`.common.Pricer.loads`).

The restricted master (:mod:`.paths`)
------------------------------------
Every pair with possible demand keeps a key path; ``dref_k = D_k + sum_{c: k in c} e_g``
(its largest demand) scales its columns: path ``p`` carries ``dref_k x_p``, the key path the
rest ``d_k(sigma) - sum_p dref_k x_p >= 0``. Then::

    min U  s.t.  base_D(r) + sum_c sigma_c e_g key_c(r)
                     + sum_p dref_k [|p ∩ r| - |key_k ∩ r|] x_p <= U cap(r)       (every r)
                 sum_{p of k} x_p - sum_{c: k in c} (e_g / dref_k) sigma_c <= D_k / dref_k
                                     (pairs with a column whose demand varies, or with two)
                 sum_{c in C_g} sigma_c = 1;   sigma, x >= 0

``base_D`` is the load of the fixed demand on the key paths and ``key_c(r)`` that of the ring
edges of ``c`` (one column per candidate: there are few). Pricing is :mod:`.paths`' own:
a pair's shortest path enters when it is shorter under the master's duals than every path
the pair has; the candidates' shares need no pricing, all are in every master.

The returned shares drop what is below ``SHARE_DUST`` (interior-point dust) and are
renormalised per group; the fractions and the loads are recomputed for them, so ``upper`` is
the congestion of the returned routing and rings (every ring one of the candidates).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

SHARE_DUST = 1e-6  # a share below this (of its group) is dropped, the rest renormalised
TIE = 1e-9  # candidates this close (relative) to a group's least length tie (RingChoice.tied)


class RingChoice:
    """Candidate orders of the groups with free shares (model units).

    ``groups[i]`` is the instance's group of share row ``i``, ``vol[i]`` its edge volume
    ``e_g``; candidate ``c`` (``orders[c]``) belongs to row ``cand_row[c]``; its edges are
    ``edge_src/edge_dst[eptr[c]:eptr[c + 1]]``. :meth:`bind` maps the edges' tails to the
    source indices of a run (the rows of its distance matrices)."""

    def __init__(self, candidates: Mapping[int, Sequence[Sequence[int]]],
                 volumes: Mapping[int, float]):
        groups, vol, rows, orders = [], [], [], []
        for g, cands in candidates.items():
            if volumes.get(g, 0.0) <= 0:
                continue
            if not cands:
                raise ValueError(f"candidates: group {g} has no candidate ring order")
            groups.append(int(g))
            vol.append(float(volumes[g]))
            for o in cands:
                o = tuple(int(v) for v in o)
                if len(set(o)) != len(o):
                    raise ValueError(f"candidates: group {g}: order {o} repeats a member")
                orders.append(o)
                rows.append(len(groups) - 1)
        self.groups, self.vol = tuple(groups), np.asarray(vol, float)
        self.orders, self.cand_row = tuple(orders), np.asarray(rows, np.int64)
        lens = [len(o) if len(o) > 1 else 0 for o in orders]
        self.eptr = np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)
        src = [v for o in orders if len(o) > 1 for v in o]
        dst = [v for o in orders if len(o) > 1 for v in (*o[1:], o[0])]
        self.edge_src = np.asarray(src, np.int64)
        self.edge_dst = np.asarray(dst, np.int64)
        self.edge_cand = np.repeat(np.arange(len(orders)), lens)
        self.edge_vol = self.vol[self.cand_row[self.edge_cand]]
        self.ks: np.ndarray | None = None  # source index of every edge's tail (bind)

    def __len__(self) -> int:
        return len(self.orders)

    def reference(self, n: int) -> np.ndarray:
        """``(n, n)``: every pair's ring part of ``dref`` (the sum of ``e_g`` over the
        candidates containing it: its ring demand when all of them carry everything)."""
        out = np.zeros((n, n))
        np.add.at(out, (self.edge_src, self.edge_dst), self.edge_vol)
        return out

    def bind(self, sources: np.ndarray, n: int) -> RingChoice:
        sidx = np.full(n, -1, np.int64)
        sidx[sources] = np.arange(len(sources))
        self.ks = sidx[self.edge_src]
        if (self.ks < 0).any():
            raise ValueError("rings: a ring member is not among the sources")
        return self

    def lengths(self, dist: np.ndarray) -> list[float]:
        """``len(c) = sum_{(u, v) in c} dist(u, v)`` per candidate, each an exactly rounded
        ``math.fsum`` (the bound's proof, module docstring)."""
        d = dist[self.ks, self.edge_dst].tolist()
        p = self.eptr.tolist()
        return [math.fsum(d[p[c]:p[c + 1]]) for c in range(len(self.orders))]

    def cheapest(self, dist: np.ndarray) -> tuple[list[float], np.ndarray]:
        """Per group: ``e_g min_c len(c)`` and the candidate attaining it."""
        lens = np.asarray(self.lengths(dist))
        best = np.full(len(self.groups), -1, np.int64)
        for c in np.argsort(lens, kind="stable").tolist():
            if best[self.cand_row[c]] < 0:
                best[self.cand_row[c]] = c
        return [float(v * lens[c]) for v, c in zip(self.vol, best, strict=True)], best

    def terms(self, dist: np.ndarray) -> tuple[list[float], np.ndarray]:
        """The ring terms of the bound's numerator (:meth:`.common.Pricer.__call__`)."""
        return self.cheapest(dist)

    def one_hot(self, chosen: np.ndarray) -> np.ndarray:
        sigma = np.zeros(len(self.orders))
        sigma[chosen] = 1.0
        return sigma

    def tied(self, dist: np.ndarray) -> np.ndarray:
        """Shares splitting every group equally over its cheapest candidates under ``dist``
        (within ``TIE`` of the least length).

        Why: a group's term ``e_g min_c len(c)`` has a kink wherever candidates tie, as a ring
        and its reverse always do at hop lengths. One cheapest candidate alone is a valid
        supergradient but an extreme one: on a mixed instance at n = 128 it put the whole
        ring volume on one direction's arcs (4.55 x the bound there), every ascent step
        along it lowered the bound (the group switched to the reverse order), and the bound
        stayed at the hop bound for 10 rounds. The equal split is a convex combination of
        the tied candidates' gradients: a supergradient too."""
        lens = np.asarray(self.lengths(dist))
        least = np.full(len(self.groups), np.inf)
        np.minimum.at(least, self.cand_row, lens)
        lo = least[self.cand_row]
        on = lens <= lo + TIE * np.abs(lo)
        sigma = on.astype(float)
        return sigma / np.bincount(self.cand_row, weights=sigma)[self.cand_row]

    def rows_at(self, dist: np.ndarray, fixed_rows: np.ndarray) -> np.ndarray:
        """The demand rows with every group split over its cheapest candidates under
        ``dist`` (:meth:`tied`)."""
        return self.demand_rows(self.tied(dist), fixed_rows)

    def demand_rows(self, sigma: np.ndarray, fixed_rows: np.ndarray) -> np.ndarray:
        """``(S, n)``: ``d_k(sigma)`` for the bound sources (fixed part plus ring edges)."""
        out = np.array(fixed_rows, dtype=float)
        np.add.at(out, (self.ks, self.edge_dst), self.edge_vol * sigma[self.edge_cand])
        return out

    def normalise(self, sigma: np.ndarray) -> np.ndarray:
        """Shares of a master solution: clipped at 0, dust (``< SHARE_DUST``) dropped,
        renormalised per group (a group without any share left takes its largest)."""
        s = np.clip(np.asarray(sigma, float), 0.0, None)
        tot = np.bincount(self.cand_row, weights=s, minlength=len(self.groups))
        s = np.where(s >= SHARE_DUST * tot[self.cand_row], s, 0.0)
        for g in np.flatnonzero(np.bincount(self.cand_row, weights=s,
                                            minlength=len(self.groups)) <= 0):
            cs = np.flatnonzero(self.cand_row == g)
            s[cs[np.argmax(np.asarray(sigma)[cs])]] = 1.0
        tot = np.bincount(self.cand_row, weights=s, minlength=len(self.groups))
        return s / tot[self.cand_row]

    def columns(self, base, n: int, res_of_arc: np.ndarray, R: int, cands: np.ndarray):
        """Capacity coefficients of the share columns of ``cands``: ``e_g`` times the
        key-path load of the candidate's edges (``base``: :class:`.base.Base` over flat pairs
        ``k n + t``), as ``(cres, cval, cptr)``, and the edges of ``cands`` (in order)."""
        edges = np.concatenate([np.arange(self.eptr[c], self.eptr[c + 1]) for c in cands])
        pos = np.repeat(np.arange(len(cands)), self.eptr[cands + 1] - self.eptr[cands])
        e, a, w = base.entries(self.ks[edges] * n + self.edge_dst[edges])
        keyv, inv = np.unique(pos[e] * R + res_of_arc[a], return_inverse=True)
        val = np.bincount(inv, weights=w * self.edge_vol[edges][e])
        own = keyv // R
        return keyv % R, val, np.searchsorted(own, np.arange(len(cands) + 1)), edges, pos


class MasterRings:
    """What the restricted master of :mod:`.paths` needs of a :class:`RingChoice` in one
    round: the share columns of the active candidates ``cands`` (capacity entries, entries in
    the pairs' rows, the share rows), the pairs whose demand varies and every pair's row
    bound ``D_k / dref_k``.

    Only active candidates have share columns (the others have share 0 in this master):
    a share column loads the key paths of all its edges, 300-350 entries for a group of
    128, and 69 of them made an interior-point master 17x slower (dlrm-n128-d4: 1.87
    against 0.11 CPU s with them fixed). A candidate becomes active when it is among its
    group's cheapest at a pricing point (:meth:`RingChoice.tied`): column generation over
    candidates, priced by the bound's own term ``e_g min_c len(c)``."""

    def __init__(self, ring: RingChoice, rows: np.ndarray, fixed: np.ndarray, base, n: int,
                 res_of_arc: np.ndarray, R: int, active: np.ndarray):
        self.ring, self.n = ring, n
        self.cand = np.flatnonzero(active)
        self.variable = np.zeros(rows.size, bool)
        self.variable[ring.ks * n + ring.edge_dst] = True  # any candidate: a row bounds it
        with np.errstate(invalid="ignore", divide="ignore"):
            self.rhs = np.where(rows > 0, fixed / rows, 1.0).ravel()
        self.cres, self.cval, self.cptr, edges, self.edge_pos = ring.columns(
            base, n, res_of_arc, R, self.cand)
        self.flat = ring.ks[edges] * n + ring.edge_dst[edges]  # pair of every active edge
        self.coef = ring.edge_vol[edges] / rows.ravel()[self.flat]  # -coef in the pair's row
        self.share_row = ring.cand_row[self.cand]

    def expand(self, tail: np.ndarray) -> np.ndarray:
        """Shares of every candidate from the active ones' master values."""
        out = np.zeros(len(self.ring))
        out[self.cand] = tail
        return out
