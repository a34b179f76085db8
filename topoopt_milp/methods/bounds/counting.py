"""Lower bounds on the communication time that stay cheap at n = 128 (issue 11, item 5).

Each bound is a function ``(instance, ...) -> float`` seconds with its proof below and a
*scope* (DESIGN.md section 10): ``"any"`` covers every topology with the port budget, every
routing and **every** ring order (like the analytic bounds of :mod:`.evaluate`); ``"totient"``
covers the alloc-milp / alloc-benders space (every topology with the port budget, fractional
routing, rings split freely over the TotientPerms candidate orders). A ``"totient"`` bound
does not cover a solution whose rings lie outside those orders (e.g. the expander's tours).

Notation: ``c = B T`` bytes is what one link carries per direction in time ``T``; a feasible
solution of time ``T`` puts at most ``x_a c`` bytes on arc ``a`` and at most ``sum_a x_a c <=
n d c`` bytes on all arcs together, counting a byte once per hop it travels.

port_hop_bound (per-source hop counting that respects the port budget)
    Fix a solution of time ``T`` and a source ``s`` with ``m`` distinct neighbours
    (``1 <= m <= d``; ``d - m`` of its ports are then parallel links). Its MP bytes ``b_st``
    and its ring bytes ``E_s = sum_{g ∋ s} e_g`` (sent to its ring successors) travel at least

    * 1 hop for a neighbour and, since a node other than ``s`` has at most ``d - 1`` further
      neighbours, at least ``h`` hops for all but ``m (d-1)^{h-2}`` of the nodes beyond level
      ``h - 1`` (Moore levels of width ``m, m(d-1), m(d-1)^2, ...``): by rearrangement the MP
      byte-hops are at least ``MP_m`` = the sorted demands laid on these levels, largest first;
    * a ring byte goes one hop only on a link from ``s`` to a ring successor; ``s`` has at most
      ``min(m, sigma_s)`` successor neighbours (``sigma_s`` the number of nodes that can be its
      successor: the TotientPerms successors ``member[(j + m) mod k]``, ``gcd(m, k) = 1``, for
      ``"totient"``, every other member for ``"any"``), joined by at most
      ``min(m, sigma_s) + d - m`` links, so at most ``rd_m = min(E_s, c (min(m, sigma_s) + d - m))``
      ring bytes go one hop and the rest at least two;
    * all one-hop bytes leave on ``s``'s ``d`` links: beyond ``d c`` (``rd_m`` plus the top-``m``
      MP demands) each costs at least one more hop.

    So the byte-hops of ``s`` are at least ``H_s(c) = min_m [MP_m + 2 E_s - rd_m +
    max(0, rd_m + MP1_m - d c)]``, and ``sum_s H_s(c) <= n d c - I`` (``I`` the capacity the
    nodes' imbalance keeps idle, :mod:`.idle`). ``H_s`` does not increase
    with ``c``, so the least ``c`` meeting the inequality is found by bisection and
    ``T >= c / B``. The same count over the bytes *arriving* at each node (predecessors,
    in-links) gives a second bound; the larger is returned. With ``m = d`` and ``rd_d = E_s``
    the count is the Moore bound's, and ``H_s`` is a minimum over terms each at least that, so
    this bound is never below :func:`~topoopt_milp.core.evaluate.moore_lower_bound`.

cut_bound (cut-set inequalities on structured node sets)
    For a node set ``S`` the arcs leaving ``S`` number at most ``d min(|S|, n - |S|)`` links
    (the ports of either side), so ``T >= D(S -> S̄) / (B d min(|S|, n - |S|))``. A ring of a
    group with members on both sides crosses from ``S`` to ``S̄`` at least once (``"any"``), or
    at least ``min_c cross_c(S)`` times over the candidate orders (``"totient"``); with a free
    split the group's crossing is at least ``e_g`` times that. ``S`` ranges over every group's
    member set, the residue classes ``{i : i = r mod q}`` for divisors ``q`` of ``n`` and their
    unions ``{i : i mod q < q/2}``, the halves ``{0..n/2-1}``, and both directions.

The matching bound of :mod:`.matching` (the one-hop bytes of all sources together fit in a
b-matching, beside the ring edges that can go one hop) is listed here too, as
``"matching_any"`` and ``"matching_totient"``.

The port-class bound of :mod:`.port_classes` (per AllReduce group, how many nodes have ``j``
ports out of it and what their other arcs must carry) is listed as ``"port_class_any"``.

The method ``lower-bounds`` (:mod:`topoopt_milp.methods.lower_bounds`) reports the best of them,
optionally with the alloc-benders master's bound
(:func:`topoopt_milp.methods.alloc_benders.decomposition.master_bound`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from math import gcd

import numpy as np

from ...core.evaluate import ideal_switch_time, moore_lower_bound
from ...core.instance import Instance
from .bisect import last_failing
from .idle import idle_capacity
from .matching import matching_bound
from .port_classes import port_class_bound

SCOPES = ("any", "totient")


def _check_scope(scope: str) -> None:
    if scope not in SCOPES:
        raise ValueError(f"scope: unknown {scope!r} (known: {', '.join(SCOPES)})")


def ring_successors(instance: Instance, scope: str = "totient") -> list[set[int]]:
    """Nodes that can be a ring successor of each node (``sigma_s`` is the set size)."""
    _check_scope(scope)
    succ: list[set[int]] = [set() for _ in range(instance.n)]
    for g in instance.allreduce:
        if g.edge_bytes <= 0:
            continue
        ms = sorted(g.members)
        k = len(ms)
        for j, s in enumerate(ms):
            if scope == "any":
                succ[s].update(m for m in ms if m != s)
            else:
                succ[s].update(ms[(j + m) % k] for m in range(1, k) if gcd(m, k) == 1)
    return succ


def _level_costs(b_sorted: np.ndarray, d: int) -> tuple[np.ndarray, np.ndarray]:
    """For ``m = 1..d`` distinct neighbours: the least MP byte-hops (Moore levels of widths
    ``m, m(d-1), ...``) and the bytes of the ``m`` one-hop destinations."""
    k = len(b_sorted)
    costs, one_hop = np.zeros(d), np.zeros(d)
    for m in range(1, d + 1):
        hops = np.empty(k)
        pos, h, width = 0, 1, m
        while pos < k:
            if width <= 0:  # d = 1: nothing beyond the neighbours is reachable
                hops[pos:] = math.inf
                break
            hops[pos:pos + width] = h
            pos += width
            h += 1
            width *= d - 1
        nz = b_sorted > 0
        costs[m - 1] = float((b_sorted[nz] * hops[nz]).sum())
        one_hop[m - 1] = float(b_sorted[:m].sum())
    return costs, one_hop


def port_hop_bound(instance: Instance, scope: str = "totient") -> float:
    """Per-source (and per-destination) hop counting under the port budget (module docstring);
    seconds. Never below the ideal-switch and Moore bounds' byte-hop count."""
    _check_scope(scope)
    n, d, B = instance.n, instance.degree, instance.link_bytes_per_s
    mp = instance.mp_matrix()
    succ = ring_successors(instance, scope)
    pred: list[set[int]] = [set() for _ in range(n)]
    for s, ts in enumerate(succ):
        for t in ts:
            pred[t].add(s)
    ring = np.zeros(n)
    for g in instance.allreduce:
        ring[list(g.members)] += g.edge_bytes
    best, idle = 0.0, idle_capacity(instance)
    for M, nbrs in ((mp, succ), (mp.T, pred)):
        terms = []
        for s in range(n):
            row = np.sort(np.delete(M[s], s))[::-1]
            costs, one_hop = _level_costs(row, d)
            sigma = len(nbrs[s])
            terms.append((costs, one_hop, ring[s], sigma))
        best = max(best, _least_capacity(terms, n, d, idle) / B)
    return max(best, ideal_switch_time(instance))


def _least_capacity(terms, n: int, d: int, idle: float) -> float:
    """The least ``c`` with ``sum_s H_s(c) <= n d c - idle`` (bisection; the returned value is
    a ``c`` at which the inequality still fails, so ``B T > c``)."""
    ms = np.arange(1, d + 1)

    def excess(c: float) -> float:
        total = 0.0
        for costs, one_hop, E, sigma in terms:
            rd = np.minimum(E, c * (np.minimum(ms, sigma) + d - ms))
            h = costs + 2 * E - rd + np.maximum(0.0, rd + one_hop - d * c)
            total += float(h.min())
        return total + idle - n * d * c

    return last_failing(excess)


def structured_sets(instance: Instance) -> list[np.ndarray]:
    """Node sets for :func:`cut_bound` (module docstring)."""
    n = instance.n
    idx = np.arange(n)
    sets = [idx < n // 2]
    for g in instance.allreduce:
        m = np.zeros(n, bool)
        m[list(g.members)] = True
        sets.append(m)
    for q in range(2, n + 1):
        if n % q:
            continue
        for r in range(min(q, 8)):
            sets.append(idx % q == r)
        sets.append(idx % q < q // 2)
    out, seen = [], set()
    for S in sets:
        key = S.tobytes()
        if 0 < S.sum() < n and key not in seen:
            seen.add(key)
            out.append(S)
    return out


def _ring_crossings(instance: Instance, S: np.ndarray, scope: str) -> float:
    """Least ring bytes crossing from ``S`` to its complement (module docstring)."""
    from ...core.circulant import totient_orders

    total = 0.0
    for g in instance.allreduce:
        inside = S[list(g.members)]
        if g.edge_bytes <= 0 or inside.all() or not inside.any():
            continue
        if scope == "any":
            total += g.edge_bytes
            continue
        least = min(sum(1 for i in range(len(o)) if S[o[i]] and not S[o[(i + 1) % len(o)]])
                    for o in totient_orders(g.members))
        total += g.edge_bytes * least
    return total


def cut_bound(instance: Instance, scope: str = "totient",
              sets: list[np.ndarray] | None = None) -> float:
    """Best cut-set bound over ``sets`` (default :func:`structured_sets`); seconds."""
    _check_scope(scope)
    n, d, B = instance.n, instance.degree, instance.link_bytes_per_s
    mp = instance.mp_matrix()
    best = 0.0
    for S in structured_sets(instance) if sets is None else sets:
        links = d * min(int(S.sum()), n - int(S.sum()))
        for side in (S, ~S):
            cross = float(mp[np.ix_(side, ~side)].sum()) + _ring_crossings(instance, side, scope)
            best = max(best, cross / (B * links))
    return best


# name -> (function, scope); the analytic bounds cover every ring order
BOUNDS: dict[str, tuple[Callable[[Instance], float], str]] = {
    "ideal_switch": (ideal_switch_time, "any"),
    "moore": (moore_lower_bound, "any"),
    "matching_any": (lambda inst: matching_bound(inst, "any"), "any"),
    "matching_totient": (lambda inst: matching_bound(inst, "totient"), "totient"),
    "port_hop_any": (lambda inst: port_hop_bound(inst, "any"), "any"),
    "port_hop_totient": (lambda inst: port_hop_bound(inst, "totient"), "totient"),
    "cut_any": (lambda inst: cut_bound(inst, "any"), "any"),
    "cut_totient": (lambda inst: cut_bound(inst, "totient"), "totient"),
    "port_class_any": (port_class_bound, "any"),
}


def all_bounds(instance: Instance) -> dict[str, float]:
    """Every cheap bound of :data:`BOUNDS` (seconds)."""
    return {name: f(instance) for name, (f, _scope) in BOUNDS.items()}


def best_bound(instance: Instance, scope: str = "totient") -> tuple[str, float]:
    """The largest cheap bound whose scope covers ``scope`` (``"totient"`` solutions are also
    covered by ``"any"`` bounds); ``(name, seconds)``."""
    _check_scope(scope)
    ok = {name: f(instance) for name, (f, sc) in BOUNDS.items() if sc == "any" or sc == scope}
    name = max(ok, key=ok.get)
    return name, ok[name]
