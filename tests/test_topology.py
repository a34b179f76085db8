"""Topology and Routing basics: construction, validation, metrics, round trips."""

import numpy as np
import pytest

from topoopt_milp.core.instance import make_instance
from topoopt_milp.core.topology import Ring, Routing, Topology, commodities_for, default_rings


def test_circulant_ring_degrees_and_diameter():
    t = Topology.circulant(8, [1])
    assert (t.degrees() == 2).all()
    assert t.diameter() == 4
    assert t.jumps == (1,)


def test_circulant_half_jump_uses_one_port():
    t = Topology.circulant(8, [1, 4])
    assert (t.degrees() == 3).all()
    assert t.links[0, 4] == 1


def test_link_list_round_trip():
    t = Topology.circulant(6, [1, 2], multiplicity=2)
    t2 = Topology.from_link_list(6, t.link_list(), t.jumps)
    assert np.array_equal(t.links, t2.links)
    assert t2.jumps == (1, 2)


@pytest.mark.parametrize(
    "links, msg",
    [
        (np.array([[0, 1], [0, 0]]), "symmetric"),
        (np.array([[1, 0], [0, 1]]), "self-loops"),
        (np.array([[0, -1], [-1, 0]]), "non-negative"),
        (np.zeros((2, 3)), "square"),
    ],
)
def test_invalid_link_matrix_rejected(links, msg):
    with pytest.raises(ValueError, match=msg):
        Topology(links)


def test_from_link_list_rejects_out_of_range():
    with pytest.raises(ValueError, match="out of range"):
        Topology.from_link_list(3, [[0, 3, 1]])


def test_disconnected_diameter_is_infinite():
    t = Topology.from_link_list(4, [[0, 1, 1], [2, 3, 1]])
    assert not t.is_connected()
    assert t.diameter() == float("inf")


def test_commodities_for_ring_edges_and_mp():
    inst = make_instance(4, 2, 10, allreduce=[([0, 1, 2, 3], 8.0)], mp=[(0, 2, 5.0), (1, 3, 0.0)])
    comms = commodities_for(inst, [Ring(0, (0, 2, 1, 3), 0.5), Ring(0, (0, 1, 2, 3), 0.5)])
    mp = [c for c in comms if c.kind == "mp"]
    ar = [c for c in comms if c.kind == "ar"]
    assert [(c.src, c.dst, c.bytes) for c in mp] == [(0, 2, 5.0)]  # zero demand dropped
    assert len(ar) == 8
    # each ring edge: share * 2(k-1)/k * S = 0.5 * 1.5 * 8
    assert all(c.bytes == pytest.approx(6.0) for c in ar)
    assert {(c.src, c.dst) for c in ar[:4]} == {(0, 2), (2, 1), (1, 3), (3, 0)}


def test_routing_dict_round_trip():
    inst = make_instance(4, 2, 10, allreduce=[([0, 1, 2, 3], 8.0)])
    rings = default_rings(inst)
    r = Routing(rings, tuple(c for c in commodities_for(inst, rings)))
    assert Routing.from_dict(r.to_dict()) == r
