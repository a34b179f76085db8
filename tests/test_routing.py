"""Routing heuristics: shortest path (seeded ties), ECMP and coin-change."""

import pytest

from topoopt_milp.core.evaluate import comm_time
from topoopt_milp.core.instance import make_instance
from topoopt_milp.core.routing import RoutingError, all_shortest_paths, coin_change_table, route
from topoopt_milp.core.topology import Topology


def uniform(n, d, b=1.0):
    return make_instance(n, d, 8e-9, mp=[(i, j, b) for i in range(n) for j in range(n) if i != j])


def test_coin_change_table_fewest_coins():
    table = coin_change_table(16, [1, 5])
    assert table[0] == ()
    assert table[5] == (5,)
    assert table[11] == (-5 % 16,)  # 11 = -5 mod 16, one coin
    assert len(table[10]) == 2 and sum(table[10]) % 16 == 10
    # fewest coins: every residue at most the circulant's diameter
    assert max(len(t) for t in table) == Topology.circulant(16, [1, 5]).diameter()


def test_coin_change_paths_follow_jumps():
    inst = uniform(12, 4)
    t = Topology.circulant(12, [1, 5])
    r = route(inst, t, (), "coin-change")
    for c in r.commodities:
        (path, frac), = c.paths
        assert frac == 1.0 and path[0] == c.src and path[-1] == c.dst
        assert all(t.links[u, v] > 0 for u, v in zip(path, path[1:]))


def test_coin_change_needs_full_circulant():
    inst = uniform(6, 2)
    t = Topology.from_link_list(6, [[0, 1, 1], [1, 2, 1], [2, 3, 1], [3, 4, 1], [4, 5, 1],
                                    [5, 0, 1]])
    with pytest.raises(RoutingError, match="circulant"):
        route(inst, t, (), "coin-change")


def test_shortest_is_seeded():
    inst = uniform(16, 4)
    t = Topology.circulant(16, [1, 4])
    a = route(inst, t, (), "shortest", seed=3)
    b = route(inst, t, (), "shortest", seed=3)
    assert a == b
    for c in a.commodities:
        (path, _), = c.paths
        assert len(path) - 1 == t.hop_distances[c.src, c.dst]


def test_ecmp_splits_equally_over_all_shortest_paths():
    t = Topology.circulant(4, [1])  # 4-cycle: two shortest paths between antipodes
    assert all_shortest_paths(t, 0, 2) == [(0, 1, 2), (0, 3, 2)]
    inst = make_instance(4, 2, 8e-9, mp=[(0, 2, 2.0)])
    r = route(inst, t, (), "ecmp")
    assert [f for _, f in r.commodities[0].paths] == [0.5, 0.5]
    assert comm_time(inst, t, r) == pytest.approx(1.0)  # 1 byte per arc at 1 byte/s


def test_disconnected_pair_is_a_clear_error():
    inst = make_instance(4, 1, 10, mp=[(0, 2, 1.0)], regular=False)
    t = Topology.from_link_list(4, [[0, 1, 1], [2, 3, 1]])
    with pytest.raises(RoutingError, match="no path from 0 to 2"):
        route(inst, t, (), "shortest")


def test_unknown_routing_method():
    inst = uniform(4, 2)
    with pytest.raises(RoutingError, match="unknown method"):
        route(inst, Topology.circulant(4, [1]), (), "magic")
