"""group-split's nested layout (heuristics/laminar.py) and MP tours (cross_links.tour_links)."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import checked

from topoopt_milp import registry
from topoopt_milp.core.instance import make_instance
from topoopt_milp.methods.heuristics import group_split as gs
from topoopt_milp.methods.heuristics.cross_links import tour_links
from topoopt_milp.methods.heuristics.laminar import nested_layout


def nested(n=32, d=4, seed=0):
    """Candle's shape, scaled down: outer groups = residues mod 4 (heavy rings), inner groups
    = residues mod 8 inside them (light rings), MP chains along consecutive nodes of blocks
    of 8 (the members of a block are in different outer groups)."""
    rng = np.random.default_rng(seed)
    ar = [(tuple(range(r, n, 4)), 2e9) for r in range(4)]
    ar += [(tuple(range(r, n, 8)), 5e8) for r in range(8)]
    mp = [(b + i, b + i + 1 - o, float(1e9 * rng.uniform(0.8, 1.2)))
          for b in range(0, n, 8) for i in range(7) for o in (0, 1) if b + i + 1 - o != b + i]
    mp += [(b + 1 - o, b + o, 1e9) for b in range(0, n, 8) for o in (0, 1)]
    return make_instance(n, d, 100.0, allreduce=ar, mp=mp)


def test_layout_keeps_every_inner_set_contiguous():
    sets = [tuple(range(r, 32, 4)) for r in range(4)] + [tuple(range(r, 32, 8)) for r in range(8)]
    layout, outer = nested_layout(sets)
    assert sorted(layout) == sorted(sets[:4])
    assert outer == {tuple(range(r, 32, 8)): tuple(range(r % 4, 32, 4)) for r in range(8)}
    for top, order in layout.items():
        assert sorted(order) == list(top)
        for inner, o in outer.items():
            if o == top:
                pos = sorted(order.index(v) for v in inner)
                assert pos == list(range(pos[0], pos[0] + len(inner)))
    # equal structures get equal orders: position i holds the i-th member everywhere
    assert layout[tuple(range(0, 32, 4))] == tuple(v - 1 for v in layout[tuple(range(1, 32, 4))])


def test_layout_needs_a_laminar_family_with_nesting():
    assert nested_layout([(0, 1, 2), (2, 3, 4)]) is None  # overlapping, neither inside
    assert nested_layout([(0, 1), (2, 3)]) is None  # nothing nested
    assert nested_layout([(0, 1, 2, 3), (0, 1, 2, 3)]) is None  # the same set twice
    layout, outer = nested_layout([(0, 1, 2, 3, 4, 5), (1, 4), (1, 2, 4), (0, 5)])
    assert outer == {(1, 4): (0, 1, 2, 3, 4, 5), (1, 2, 4): (0, 1, 2, 3, 4, 5),
                     (0, 5): (0, 1, 2, 3, 4, 5)}
    assert layout == {(0, 1, 2, 3, 4, 5): (0, 5, 1, 4, 2, 3)}


def test_nested_sets_ride_the_outer_ring():
    """With the nested layout only the four outer groups lay patterns (two ring ports);
    each inner ring is one hop along them but for its closing edge."""
    inst = nested()
    L, rings, a, _ = gs.group_split_links(inst, 2, layout="nested")
    assert a == 2 and (L.sum(axis=1) == 4).all()
    inner = [r for r in rings if len(inst.allreduce[r.group].members) == 4]
    assert {r.group for r in inner} == set(range(4, 12))
    for r in inner:
        o = r.order
        assert sum(L[u, v] > 0 for u, v in zip(o, o[1:])) == len(o) - 1


def test_tours_link_the_mp_chains():
    """Two free ports per node: one Hamiltonian cycle through all of them, and every MP
    chain edge but one per block is a link (a 2-factor could close each block alone)."""
    inst = nested()
    L = np.zeros((32, 32), dtype=np.int64)
    L[np.arange(32), (np.arange(32) + 4) % 32] = L[(np.arange(32) + 4) % 32, np.arange(32)] = 1
    made = tour_links(inst, L, np.random.default_rng(0))
    assert made == 32 and (L.sum(axis=1) == 4).all()
    chain = [(b + i, b + i + 1) for b in range(0, 32, 8) for i in range(7)]
    assert sum(L[u, v] > 0 for u, v in chain) >= len(chain) - 4


@pytest.mark.parametrize("layout", gs.LAYOUTS)
@pytest.mark.parametrize("cross", gs.CROSS_RULES)
def test_every_rule_gives_a_checked_regular_solution(layout, cross):
    inst = nested(16, 4)
    res = checked(inst, registry.solve(inst, "group-split", layout=layout, cross=cross))
    assert res.objective > 0 and (np.asarray(res.topology.links).sum(axis=1) == 4).all()


def test_unknown_layout_is_refused():
    with pytest.raises(ValueError, match="layout"):
        gs.group_split_links(nested(), layout="spiral")
