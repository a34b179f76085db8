"""Laminar AllReduce member sets: a data-parallel group nested in a larger one.

Hybrid parallel strategies give a node several AllReduce groups, one per layer kind, and on
the co-optimised workloads every two member sets are disjoint or one contains the other
(candle, dlrm, ncf, some gpt3 strategies; ``instances/coopt``). A ring laid over a maximal
set can then carry the rings of the sets inside it: if each inner set's members are
consecutive in the outer ring's order, every edge of the inner ring but the one closing it
is an edge of the outer ring, so the inner set needs no ports of its own.
"""

from __future__ import annotations

from collections.abc import Iterable

Key = tuple[int, ...]


def nested_layout(sets: Iterable[Key]) -> tuple[dict[Key, Key], dict[Key, Key]] | None:
    """For a laminar family with some nesting: ``(layout, outer)``. ``layout`` maps every
    maximal set to its members in an order where every set inside it is contiguous
    (recursively; sets inside one set ordered by their smallest member, members in
    increasing order), ``outer`` maps every other set to the maximal set containing it.
    ``None`` when two sets overlap without one containing the other, or none is nested.

    Sets of one size in the same place of equal structures get the same order (coset
    groups: position ``i`` holds the ``i``-th member in every one), which keeps the
    alignment that group-split's patterns rely on."""
    family = sorted({tuple(sorted(s)) for s in sets}, key=lambda k: (-len(k), k))
    as_set = {k: frozenset(k) for k in family}
    parent: dict[Key, Key | None] = {}
    for i, key in enumerate(family):
        holders = [o for o in family[:i] if as_set[o] & as_set[key]]
        if any(not as_set[key] < as_set[o] for o in holders):
            return None  # overlapping, or the same member set twice
        parent[key] = min(holders, key=len) if holders else None  # the smallest holder
    if all(p is None for p in parent.values()):
        return None
    children: dict[Key, list[Key]] = {k: [] for k in family}
    for key, p in parent.items():
        if p is not None:
            children[p].append(key)

    def arrange(key: Key) -> list[int]:
        out: list[int] = []
        for child in sorted(children[key], key=min):
            out += arrange(child)
        placed = set(out)
        return out + [v for v in key if v not in placed]

    top = [k for k in family if parent[k] is None]
    outer: dict[Key, Key] = {}
    for key in family:
        root = key
        while parent[root] is not None:
            root = parent[root]
        if root != key:
            outer[key] = root
    return {k: tuple(arrange(k)) for k in top}, outer
