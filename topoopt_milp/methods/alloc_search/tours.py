"""Ring orders that follow a topology's links: the ``tours`` ring space of alloc-search.

Why. alloc-milp's ring space (the TotientPerms orders of a group, with a free split) fixes
the successors of every member up to the jump: on a topology that is not a circulant of the
group's coset, most of those orders are multi-hop, and the one-hop orders all load the same
links. On the coopt instances at n = 128, d = 4 the arcs at the maximum load carry their own
MP demand *and* the ring edges of the chain order (``results/bench_search.md``, diagnosis:
dlrm's ``i -> i+1`` arcs carry 134 MB of MP and 117 MB of the 128-member ring, 98.8% of
what an arc may carry at the ideal-switch time). Ring orders are free in the instance's own
problem (scope 1 of the design brief: "any ring order"), so a search may offer the route LP
other orders, whose successors are neighbours in the topology, and let it split the volume.

Tours. For a group with members ``M`` and a topology ``L``, a tour is a cyclic order of
``M`` minimising ``sum_e c(e)`` over its consecutive pairs with
``c(u, v) = dist_L(u, v) + w * u_L(u, v)``: hop distance in ``L`` plus ``w`` times the
utilisation of the link ``(u, v)`` relative to the hottest one (``0`` without loads; ``w``
< 1, so a shorter tour always wins and, among tours of the same length, the one on cooler
links). Nearest-neighbour construction from a seeded random member, improved by 2-opt until
no exchange lowers the cost (or ``max_passes``). A tour and its reverse are both offered.
These are heuristics: they only add candidates, the route LP decides their shares, and the
objective is the checked one (:func:`.reroute.reroute`).

Scope. A solution whose rings include a tour that is not a TotientPerms order lies outside
alloc-milp's ring space; only bounds valid for every ring order cover it (the analytic
bounds, joint-milp's), and alloc-search records that in ``info["ring_space"]``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from ...core.instance import Instance
from ...core.tours import HAM_STEPS, Order, canonical, hamiltonian_cycles, tour, tour_hops, two_opt
from ..formulations.ring_lp import candidate_orders
from .starts import hop_distances

__all__ = ["Order", "canonical", "hop_distances", "tour", "tour_candidates", "tour_hops",
           "two_opt"]





def tour_candidates(instance: Instance, links: np.ndarray, loads: np.ndarray | None,
                    count: int = 2, weight: float = 0.5, seed: int = 0,
                    cycles_per_member: int = 0) -> dict[int, list[Order]]:
    """alloc-milp's candidates (the TotientPerms orders) plus, per group with traffic,
    ``count`` tours of ``links`` and their reverses (module docstring); the first tour uses
    the plain hop distance, the others add ``weight`` times the link utilisation of
    ``loads`` (bytes per arc, or ``None``); with ``cycles_per_member``, the
    :func:`group_cycles` too. Duplicates are dropped."""
    dist = hop_distances(links)
    cap = np.maximum(links, 1)
    util = np.zeros_like(dist)
    if loads is not None:
        w = np.maximum(loads, loads.T) / cap
        util = np.where(links > 0, w / max(float(w.max()), 1e-300), 0.0)
    plain = np.where(np.isfinite(dist), dist, 1e6)
    rng = np.random.default_rng(seed)
    steps = HAM_STEPS // max(1, len(instance.allreduce))  # one budget for all (1-2 s)
    out: dict[int, list[Order]] = {}
    for g, orders in candidate_orders(instance).items():
        members = instance.allreduce[g].members
        have = {tuple(o) for o in orders}
        extra: list[Order] = []
        for t in range(count):
            cost = plain if t == 0 else plain + weight * util
            o = tour(members, cost, rng)
            o = canonical(o)
            for cand in (o, canonical((o[0], *reversed(o[1:])))):
                if cand not in have:
                    have.add(cand)
                    extra.append(cand)
        if cycles_per_member:
            for o in group_cycles(members, links, cycles_per_member, steps):
                for cand in (o, canonical((o[0], *reversed(o[1:])))):
                    if cand not in have:
                        have.add(cand)
                        extra.append(cand)
        out[g] = [*orders, *extra]
    return out


def group_cycles(members: Sequence[int], links: np.ndarray, per_member: int,
                 budget: int = HAM_STEPS) -> list[Order]:
    """Up to ``per_member k`` Hamiltonian cycles of the links among a group's ``k`` members
    (:func:`~topoopt_milp.core.tours.hamiltonian_cycles` within ``budget`` steps, canonical
    orders of member ids) when every member has at least two links in the group and one has
    an odd number (a ring plus a matching, as group-split lays on three ports); none
    otherwise.

    Why: a ring split over such a group's one-hop cycles loads all three of a member's
    arcs, but the tours find mostly the ring itself. On gpt3-1.3b-n32-d4 (group-split,
    cycle rule) the route LP over the tours and the start's own orders gives 0.0768 s,
    with the cycles 0.0746 s; gpt3-13b-n64-d4 0.4025 against 0.3899 s."""
    m = np.asarray(list(members), dtype=np.int64)
    sub = links[np.ix_(m, m)] > 0
    deg = sub.sum(axis=1)
    if len(m) < 4 or deg.min() < 2 or not (deg % 2 == 1).any():
        return []
    return [canonical(tuple(int(m[i]) for i in o))
            for o in hamiltonian_cycles(sub, per_member * len(m), budget)]


def extra_orders(cands: Mapping[int, Sequence[Order]], instance: Instance) -> int:
    """How many of ``cands``' orders are not TotientPerms orders."""
    base = candidate_orders(instance)
    return sum(len({tuple(o) for o in v} - {tuple(o) for o in base.get(g, ())})
               for g, v in cands.items())
