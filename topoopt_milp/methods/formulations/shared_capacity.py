"""Shared (SNDlib) link capacities conditioned for the LP solvers, with the proofs.

The route models write one row per undirected link ``r``, ``load(r) <= U cap(r) / c0``
(capacities normalised by ``c0``). HiGHS drops matrix entries below ``1e-9`` and works to a
feasibility tolerance of ``1e-7``, so capacities that span more than about seven orders of
magnitude make it answer "infeasible" (a 4-cycle with one link of ``1e12`` among links of
``10``; links of ``1e-300`` beside links of ``1``) or stop without a solution (ratios
``1e7``-``1e8``). Normalising by another single scale cannot help: the rows themselves span the
range. :func:`condition` brings the capacities into a range of at most ``R_MAX`` without
changing the problem's optimum (step 1) or with a stated, valid loss in the bound (step 2):

**1. Clipping large capacities (exact).** Let ``T`` be the total demand and ``U_lo <= U*`` a
valid lower bound on the minimum congestion: for every node set ``X``,
``U* >= demand(X, V \\ X) / cap(delta(X))`` (all the demand between ``X`` and the rest crosses
the cut, whose links share ``U* cap`` each), taken over the single nodes and the cuts of a
Gomory-Hu tree (networkx; the cut capacity is re-summed from the links, so the bound does not
rest on the max-flow's float accuracy). Replace every capacity by ``min(cap, T / U_lo)``.
*Proof that the optimum is unchanged:* the clipped problem has smaller capacities, so its
optimum is ``>= U*``. Conversely some optimal routing of the original problem uses simple
paths only (cancelling a cycle lowers every load); a simple path crosses a link at most once,
so every link's load (both directions) is at most ``T = U_lo (T / U_lo) <= U* (T / U_lo)``:
the routing meets the clipped capacities at congestion ``U*``. A routing found on the clipped
capacities is valid on the original ones (they are larger), and its reported congestion is
recomputed on the original ones.

**2. Leaving out insignificant links (valid bound).** After clipping, a link ``r`` whose
capacity is below ``cmax / R_MAX`` is left out of the model (set ``S``; ``G'`` the rest).
Routings of ``G'`` are routings of ``G``. For the bound, take an optimal simple-path routing of
``G`` and move the flow ``x_r <= U* c_r`` of every ``r`` in ``S`` onto a widest path of ``G'``
between its end nodes (bottleneck ``w_r``, read from a maximum spanning forest). An edge ``e``
of that path gains at most ``U* c_r <= U* c_e (c_r / w_r)``, so ``G'`` has a routing of
congestion at most ``U* (1 + rho)`` with ``rho = sum_{r in S} c_r / w_r``, i.e.
``U* >= U*(G') / (1 + rho)``: a model bound times ``bound_factor = 1 / (1 + rho)`` is a valid
bound of the original problem. A left-out link whose end nodes ``G'`` separates: if some
demand crosses the components of ``G'``, no valid model exists within the tolerances and the
instance is refused (:class:`~topoopt_milp.core.errors.InputError`). Otherwise a simple path
can use such links only on an *excursion* that leaves a component ``X`` at node ``a`` and
re-enters it at another node ``b``; replacing it by an ``a``-``b`` path inside ``X`` moves at
most ``x_r`` of the exit link's flow onto edges of capacity at least ``w_X`` (the smallest
edge of ``X``'s maximum spanning tree), and the exit link adds ``c_r / w_X`` to ``rho``. A
component with a single such end node has no excursion (it would be a cycle).

Capacities within ``R_MAX`` of each other are returned unchanged (the common case: no work).
"""

from __future__ import annotations

from dataclasses import dataclass

import networkx as nx
import numpy as np

from ...core.errors import InputError

R_MAX = 1e6  # the capacity range the LP models are given (HiGHS failed from ~1e8 on)
GH_MAX_N = 400  # Gomory-Hu cuts up to this many nodes (n - 1 max flows); node cuts beyond
CLIP_SAFETY = 1e-9  # relative: the clip level is raised by this much against rounding


@dataclass(frozen=True)
class Conditioned:
    """Capacities for the model (same order as given), the links left out of it, the factor
    that makes a model bound valid for the original problem, and a note for the result."""

    caps: np.ndarray
    dropped: np.ndarray  # bool per link
    bound_factor: float = 1.0
    note: str = ""


def congestion_lower_bound(n: int, pairs: list[tuple[int, int]], caps: np.ndarray,
                           D: np.ndarray) -> float:
    """``max_X demand(X, V \\ X) / cap(delta(X))`` over single nodes and, for
    ``n <= GH_MAX_N``, the cuts of a Gomory-Hu tree (module docstring, step 1): a valid lower
    bound on the minimum congestion with shared capacities ``caps`` of the links ``pairs``.
    ``D`` is the demand matrix in any unit; the bound is in demand units per capacity unit."""
    sym = D + D.T
    cap_at = np.zeros(n)
    for (i, j), c in zip(pairs, caps, strict=True):
        cap_at[i] += c
        cap_at[j] += c
    cross = sym.sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        node = np.where(cap_at > 0, cross / np.where(cap_at > 0, cap_at, 1.0), 0.0)
    best = float(node.max()) if n else 0.0
    if n > GH_MAX_N:
        return best
    g = nx.Graph()
    g.add_nodes_from(range(n))
    for (i, j), c in zip(pairs, caps, strict=True):
        g.add_edge(i, j, capacity=float(c))
    for comp in nx.connected_components(g):
        if len(comp) < 3:
            continue  # a cut of a 2-node component is a single-node cut, done above
        tree = nx.gomory_hu_tree(g.subgraph(comp), capacity="capacity")
        for u, v in list(tree.edges()):
            tree.remove_edge(u, v)
            side = np.zeros(n, dtype=bool)
            side[list(nx.node_connected_component(tree, u))] = True
            tree.add_edge(u, v)
            demand = float(sym[side][:, ~side].sum())
            if demand <= 0:
                continue
            cut = sum(c for (i, j), c in zip(pairs, caps, strict=True) if side[i] != side[j])
            best = max(best, demand / cut)
    return best


def condition(n: int, pairs: list[tuple[int, int]], caps: np.ndarray,
              D: np.ndarray) -> Conditioned:
    """Capacities of the links ``pairs`` (bytes/s, all positive) within ``R_MAX`` of each
    other for the demand matrix ``D``, by the two steps of the module docstring."""
    caps = np.asarray(caps, dtype=float)
    none = np.zeros(len(caps), dtype=bool)
    if not len(caps) or caps.max() <= caps.min() * R_MAX:
        return Conditioned(caps, none)
    total = float(D.sum())
    if total <= 0:  # no traffic: every capacity gives the optimum 0
        return Conditioned(np.ones(len(caps)), none, 1.0, "no traffic: capacities set to 1")
    notes = []
    lower = congestion_lower_bound(n, pairs, caps, D)
    clip = total / lower * (1 + CLIP_SAFETY) if lower > 0 else np.inf
    if caps.max() > clip:
        notes.append(f"{int((caps > clip).sum())} capacities above {clip:.6g} (total demand / "
                     "a cut lower bound) clipped to it, which leaves the optimum unchanged")
        caps = np.minimum(caps, clip)
    cmax = float(caps.max())
    tiny = caps < cmax / R_MAX
    if not tiny.any():
        return Conditioned(caps, none, 1.0, "; ".join(notes))
    rho = _rerouting_loss(n, pairs, caps, tiny, D, cmax)
    notes.append(f"{int(tiny.sum())} links below {cmax / R_MAX:.6g} (1/{R_MAX:g} of the "
                 f"largest capacity) left out of the model; bound divided by 1 + {rho:.3g}")
    return Conditioned(caps, tiny, 1.0 / (1.0 + rho), "; ".join(notes))


def _rerouting_loss(n: int, pairs, caps: np.ndarray, tiny: np.ndarray, D: np.ndarray,
                    cmax: float) -> float:
    """``rho`` of step 2 (module docstring); an input error when demand must cross a left-out
    link."""
    g = nx.Graph()
    g.add_nodes_from(range(n))
    for (i, j), c, t in zip(pairs, caps, tiny, strict=True):
        if not t:
            g.add_edge(i, j, weight=float(c))
    forest = nx.maximum_spanning_tree(g, weight="weight")
    comp = np.full(n, -1)
    for k, nodes in enumerate(nx.connected_components(forest)):
        comp[list(nodes)] = k
    src, dst = np.nonzero(D)
    crossing = comp[src] != comp[dst]
    if crossing.any():
        s, t = int(src[crossing][0]), int(dst[crossing][0])
        k = next(r for r, ((i, j), x) in enumerate(zip(pairs, tiny, strict=True))
                 if x and comp[i] != comp[j])
        i, j = pairs[k]
        raise InputError(
            f"topology: link ({i}, {j}) has capacity {caps[k]:.6g}, below 1/{R_MAX:g} of the "
            f"largest capacity that can matter ({cmax:.6g}), yet demand {s}->{t} must cross "
            "links this small; the LP solvers' tolerances cannot represent capacities this far "
            "apart (rescale or drop them)")
    # smallest edge of each component's maximum spanning tree (the widest-path floor)
    floor = np.full(n, np.inf)
    for u, _v, w in forest.edges(data="weight"):
        floor[comp[u]] = min(floor[comp[u]], w)
    ends: dict[int, set[int]] = {}
    for (i, j), x in zip(pairs, tiny, strict=True):
        if x and comp[i] != comp[j]:
            ends.setdefault(comp[i], set()).add(i)
            ends.setdefault(comp[j], set()).add(j)
    rho = 0.0
    for (i, j), c, x in zip(pairs, caps, tiny, strict=True):
        if not x:
            continue
        if comp[i] == comp[j]:
            rho += c / _bottleneck(forest, i, j)
            continue
        for a in (i, j):  # an excursion out of a's component through this link
            if len(ends[comp[a]]) > 1:
                rho += c / floor[comp[a]]
    return rho


def _bottleneck(forest: nx.Graph, a: int, b: int) -> float:
    """The widest-path capacity between ``a`` and ``b``: the smallest weight on their path in
    a maximum spanning forest."""
    path = nx.shortest_path(forest, a, b)
    return min(forest[u][v]["weight"] for u, v in zip(path, path[1:]))
