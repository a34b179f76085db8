"""The cost model against textbook values, the lower bounds, the latency term, and scaling.

Notation: every ordered pair sends ``b`` bytes (uniform all-to-all), a link carries ``B`` bytes/s
per direction, ECMP splits each demand equally over *all* its shortest paths.

Symmetry argument used below. If the automorphism group of a graph acts transitively on its
directed arcs, then uniform traffic and the ECMP split (defined by shortest paths alone) are
both invariant under it, so every arc carries the same load, namely

    load = (total byte-hops) / (#arcs) = b * sum_{s != t} dist(s, t) / (n d)

and ``T_comm = load / B``. Rings, complete graphs, hypercubes, k x k tori and the Petersen graph
are arc-transitive. These are the classic channel loads under uniform traffic (Dally & Towles,
"Principles and Practices of Interconnection Networks", Morgan Kaufmann 2004: ch. 3 defines
channel load and the bisection bound, ch. 5 gives the k-ary n-cube (torus) load, k/8 per unit
injection rate for even k), and for even sizes they meet the bisection bound (bisection widths
of rings, tori and hypercubes: Leighton, "Introduction to Parallel Algorithms and
Architectures", Morgan Kaufmann 1992, ch. 1 and 3). On K_n every arc forwards exactly one
demand: edge-forwarding index 1 (Heydemann, Meyer & Sotteau, "On forwarding indices of
networks", Discrete Applied Mathematics 23, 1989).
"""

from __future__ import annotations

import itertools
import math

import networkx as nx
import numpy as np
import pytest

from topoopt_milp.core.evaluate import (
    arc_loads,
    comm_time,
    evaluate,
    ideal_switch_time,
    iteration_time,
    lower_bound,
    moore_lower_bound,
    moore_slots,
)
from topoopt_milp.core.instance import make_instance
from topoopt_milp.core.routing import route
from topoopt_milp.core.topology import Commodity, Ring, Routing, Topology, default_rings
from topoopt_milp.workloads import generators

B_BYTES = 3.7e6  # bytes per ordered pair: realistic, and not a power of two
GBPS = 100.0
RATE = GBPS * 1.25e8  # bytes/s per link direction


def uniform(n: int, d: int, b: float = B_BYTES, **kw):
    return generators.uniform(n, d, GBPS, bytes=b, **kw)


def from_graph(g: nx.Graph) -> Topology:
    idx = {v: k for k, v in enumerate(sorted(g.nodes))}
    return Topology.from_link_list(len(idx), [[idx[u], idx[v], 1] for u, v in g.edges])


def ecmp_time(inst, topo) -> float:
    return comm_time(inst, topo, route(inst, topo, default_rings(inst), "ecmp"))


def ring_sum(k: int) -> int:
    """``sum_{x in Z_k} min(x, k - x)``: (k^2 - 1)/4 for odd k, k^2/4 for even k."""
    return sum(min(x, k - x) for x in range(k))


# -- textbook values -------------------------------------------------------------------------
@pytest.mark.parametrize("n", [3, 4, 5, 6, 7, 8, 9, 10, 11, 16])
def test_ring(n):
    # Cycle C_n, d = 2, 2n arcs. Byte-hops = b n sum_x min(x, n-x), so the arc load is
    # b * ring_sum(n) / 2:  n odd (n = 2m+1): b (n^2 - 1)/8 (distances 1..m clockwise, each
    # unique);  n even: b n^2/8 (the antipode's two shortest paths share b/2 each).
    # Dally & Towles 2004, ch. 5 (k-ary 1-cube): channel load k/8 per unit injection, k even.
    expected = (n * n - (n % 2)) / 8 * B_BYTES / RATE
    assert ring_sum(n) / 2 == (n * n - (n % 2)) / 8
    assert ecmp_time(uniform(n, 2), Topology.circulant(n, [1])) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("n", [3, 4, 5, 6, 7, 8])
def test_complete_graph(n):
    # K_n (d = n - 1): every pair has a direct link and a unique shortest path, so every arc
    # carries exactly one demand: T = b / B (edge-forwarding index 1, Heydemann et al. 1989).
    topo = Topology.circulant(n, range(1, n // 2 + 1))  # jump n/2 is a matching: 1 port
    assert (topo.degrees() == n - 1).all()
    assert ecmp_time(uniform(n, n - 1), topo) == pytest.approx(B_BYTES / RATE, rel=1e-12)


@pytest.mark.parametrize("dim", [1, 2, 3, 4, 5])
def test_hypercube(dim):
    # Q_dim, n = 2^dim, n*dim arcs; dist = Hamming distance, sum over t of dist(s, t) is
    # sum_h h C(dim, h) = dim 2^(dim-1). Arc load = b n dim 2^(dim-1) / (n dim) = b n/2.
    # Bisection check (Leighton 1992, ch. 3; Dally & Towles 2004, ch. 3): n/2 * n/2 demands cross a
    # cut of n/2 links per direction, i.e. at least b n/2 per arc: ECMP meets the bound.
    n = 2**dim
    topo = from_graph(nx.hypercube_graph(dim))
    assert topo.n == n and (topo.degrees() == dim).all()
    # (dim = 1 is n = 2, d = 1: a single link, one demand per direction, b / B = b n/2 / B)
    assert ecmp_time(uniform(n, dim), topo) == pytest.approx(B_BYTES * n / 2 / RATE, rel=1e-12)


@pytest.mark.parametrize("k", [3, 4, 5, 6, 7])
def test_torus_2d(k):
    # k x k torus (C_k x C_k), d = 4, 4 k^2 arcs. dist = ring distance in x plus in y, so
    # byte-hops = b k^2 * 2 k ring_sum(k) and the arc load is b k ring_sum(k) / 2:
    # k even: b k^3/8, k odd: b k (k^2 - 1)/8 (Dally & Towles 2004, ch. 5, k-ary 2-cube:
    # gamma = k/8 per unit injection rate, here injection b k^2).
    topo = from_graph(nx.grid_2d_graph(k, k, periodic=True))
    assert (topo.degrees() == 4).all()
    expected = (k**3 if k % 2 == 0 else k * (k * k - 1)) / 8 * B_BYTES / RATE
    assert k * ring_sum(k) / 2 == (k**3 if k % 2 == 0 else k * (k * k - 1)) / 8
    assert ecmp_time(uniform(k * k, 4), topo) == pytest.approx(expected, rel=1e-12)


def test_torus_4x4_is_the_4_cube():
    # C4 x C4 is isomorphic to Q4: both formulas give 8 b / B.
    t = from_graph(nx.grid_2d_graph(4, 4, periodic=True))
    h = from_graph(nx.hypercube_graph(4))
    inst = uniform(16, 4)
    assert ecmp_time(inst, t) == pytest.approx(ecmp_time(inst, h), rel=1e-12)
    assert ecmp_time(inst, t) == pytest.approx(8 * B_BYTES / RATE, rel=1e-12)


@pytest.mark.parametrize(
    ("name", "topo"),
    [
        ("ring 9", Topology.circulant(9, [1])),
        ("ring 10", Topology.circulant(10, [1])),
        ("K_7", Topology.circulant(7, [1, 2, 3])),
        ("Q_4", from_graph(nx.hypercube_graph(4))),
        ("torus 5x5", from_graph(nx.grid_2d_graph(5, 5, periodic=True))),
        ("torus 6x6", from_graph(nx.grid_2d_graph(6, 6, periodic=True))),
        ("Petersen", from_graph(nx.petersen_graph())),
    ],
)
def test_symmetry_argument_every_arc_equally_loaded(name, topo):
    # The premise of the derivations above, checked directly: on an arc-transitive graph ECMP
    # loads every arc equally with total byte-hops / #arcs.
    n, d = topo.n, int(topo.degrees()[0])
    inst = uniform(n, d)
    loads = arc_loads(n, route(inst, topo, (), "ecmp"))
    on_arcs = loads[topo.links > 0]
    byte_hops = B_BYTES * topo.hop_distances.sum()
    np.testing.assert_allclose(on_arcs, byte_hops / (n * d), rtol=1e-12)
    assert (loads[topo.links == 0] == 0).all()


def test_parallel_links_add_capacity():
    # a ring with 2 parallel links per neighbour pair (d = 4) halves the ring's time
    inst = uniform(7, 4)
    t1 = ecmp_time(inst, Topology.circulant(7, [1]))
    t2 = ecmp_time(inst, Topology.circulant(7, [1], multiplicity=2))
    assert t2 == pytest.approx(t1 / 2, rel=1e-12) and t2 == pytest.approx(3 * B_BYTES / RATE)


def test_allreduce_ring_edges_on_matching_ring():
    # One AllReduce over all n servers of S bytes, default rings (0..n-1 and its reverse at
    # half share each) on the ring topology: each arc carries half a ring edge in each
    # direction, (n-1)/n S bytes -- the ideal-switch time 2 (n-1)/n S / (2 B).
    n, S = 8, 1.2e9
    inst = make_instance(n, 2, GBPS, allreduce=[(range(n), S)])
    topo = Topology.circulant(n, [1])
    r = route(inst, topo, default_rings(inst), "shortest")
    loads = arc_loads(n, r)
    for i in range(n):
        assert loads[i, (i + 1) % n] == pytest.approx((n - 1) / n * S, rel=1e-15)
        assert loads[(i + 1) % n, i] == pytest.approx((n - 1) / n * S, rel=1e-15)
    assert comm_time(inst, topo, r) == pytest.approx((n - 1) / n * S / RATE, rel=1e-12)
    assert comm_time(inst, topo, r) == pytest.approx(ideal_switch_time(inst), rel=1e-12)
    # one direction only (a single ring): twice as long
    one_way = route(inst, topo, (Ring(0, tuple(range(n)), 1.0),), "shortest")
    assert comm_time(inst, topo, one_way) == pytest.approx(2 * (n - 1) / n * S / RATE, rel=1e-12)


def test_load_on_missing_link_is_infinite():
    inst = make_instance(4, 2, GBPS, mp=[(0, 2, 1e6)])
    topo = Topology.circulant(4, [1])
    bad = Routing((), (Commodity(0, 2, 1e6, "mp", 0, (((0, 2), 1.0),)),))
    assert math.isinf(comm_time(inst, topo, bad))


# -- lower bounds by hand --------------------------------------------------------------------
def test_ideal_switch_by_hand():
    # n = 4, d = 2, B = 100 Gbps. AllReduce [1, 2, 3] of 3e9: each member sends and receives
    # 2 * 2/3 * 3e9 = 4e9. MP 0->1 1e9, 0->2 1e9, 3->0 5e8.
    # out = [2e9, 4e9, 4e9, 4.5e9], in = [5e8, 5e9, 5e9, 4e9]; max 5e9 over d B = 2.5e10 B/s.
    inst = make_instance(4, 2, 100.0, allreduce=[((1, 2, 3), 3e9)],
                         mp=[(0, 1, 1e9), (0, 2, 1e9), (3, 0, 5e8)])
    assert ideal_switch_time(inst) == pytest.approx(0.2, rel=1e-15)
    assert ideal_switch_time(inst, per_server_gbps=400.0) == pytest.approx(0.1, rel=1e-15)


@pytest.mark.parametrize(
    ("n", "d", "slots"),
    [
        (7, 2, [1, 1, 2, 2, 3, 3]),  # a path of width 2 at every distance
        (10, 3, [1, 1, 1, 2, 2, 2, 2, 2, 2]),  # 3 + 3*2 = 9: the Petersen graph's Moore bound
        (12, 3, [1, 1, 1, 2, 2, 2, 2, 2, 2, 3, 3]),
        (6, 5, [1, 1, 1, 1, 1]),
        (4, 1, [1, math.inf, math.inf]),  # a matching reaches one node
    ],
)
def test_moore_slots(n, d, slots):
    assert list(moore_slots(n, d)) == slots


def test_moore_bound_by_hand_and_tight_graphs():
    # Uniform n = 7, d = 2: every source puts its 6 demands at distances 1,1,2,2,3,3 = 12 hops,
    # byte-hops 7 * 12 b over total capacity n d B = 14 B: 6 b / B, exactly the ring's
    # (n^2 - 1)/8 b / B -- the ring is optimal for d = 2.
    inst = uniform(7, 2)
    assert moore_lower_bound(inst) == pytest.approx(6 * B_BYTES / RATE, rel=1e-12)
    assert ecmp_time(inst, Topology.circulant(7, [1])) == pytest.approx(moore_lower_bound(inst), rel=1e-12)
    # n = 10, d = 3: 3 * 1 + 6 * 2 = 15 hops per source, 150 b / (30 B) = 5 b / B, met by the
    # Petersen graph (a Moore graph: diameter 2, girth 5, unique shortest paths, arc-transitive).
    inst = uniform(10, 3)
    assert moore_lower_bound(inst) == pytest.approx(5 * B_BYTES / RATE, rel=1e-12)
    petersen = from_graph(nx.petersen_graph())
    assert ecmp_time(inst, petersen) == pytest.approx(5 * B_BYTES / RATE, rel=1e-12)
    # Here the ideal switch is weaker: max out = 9 b over d B = 3 B: 3 b / B.
    assert ideal_switch_time(inst) == pytest.approx(3 * B_BYTES / RATE, rel=1e-12)
    assert lower_bound(inst) == moore_lower_bound(inst)


def test_moore_bound_counts_allreduce_at_one_hop_and_sorts_demands():
    # n = 5, d = 2 slots [1, 1, 2, 2]. Source 0 demands 4e6, 3e6, 2e6, 1e6 -> the two largest at
    # 1 hop: 7e6 + 2 * 3e6 = 13e6 byte-hops. AllReduce of k = 4 members, S = 6e6: 4 ring edges
    # of 2 * 3/4 * 6e6 = 9e6 -> 36e6 byte-hops. Total 49e6 over n d B = 10 B.
    inst = make_instance(5, 2, GBPS, allreduce=[((1, 2, 3, 4), 6e6)],
                         mp=[(0, 1, 1e6), (0, 2, 4e6), (0, 3, 2e6), (0, 4, 3e6)])
    assert moore_lower_bound(inst) == pytest.approx(49e6 / (10 * RATE), rel=1e-15)


def test_latency_term_and_iteration_time():
    # ring n = 6 (even): bandwidth term 36/8 b / B; the longest ECMP path has 3 hops, so a
    # 5 us per-hop latency adds 15 us.
    inst = uniform(6, 2, latency_us=5.0, compute_s=0.02)
    topo = Topology.circulant(6, [1])
    r = route(inst, topo, (), "ecmp")
    bw = 36 / 8 * B_BYTES / RATE
    assert comm_time(inst, topo, r) == pytest.approx(bw + 15e-6, rel=1e-12)
    m = evaluate(inst, topo, r)
    assert m["comm_time_s"] == pytest.approx(bw + 15e-6, rel=1e-12)
    assert m["max_link_utilization"] == pytest.approx(bw, rel=1e-12)
    assert m["iteration_time_s"] == pytest.approx(0.02 + bw + 15e-6, rel=1e-12)
    assert iteration_time(inst, 0.5, overlap=True) == 0.5
    assert iteration_time(inst, 0.001, overlap=True) == 0.02


def test_evaluate_metrics_on_ring():
    n = 8
    inst = uniform(n, 2)
    topo = Topology.circulant(n, [1])
    m = evaluate(inst, topo, route(inst, topo, (), "ecmp"))
    assert m["diameter"] == n // 2
    assert m["avg_hops"] == pytest.approx(ring_sum(n) / (n - 1), rel=1e-12)  # 16/7
    assert m["ports_used_max"] == 2
    assert m["slowdown_vs_ideal"] == pytest.approx(m["comm_time_s"] / m["ideal_switch_time_s"])
    # ideal switch: out = 7 b per server over 2 B
    assert m["ideal_switch_time_s"] == pytest.approx(7 * B_BYTES / (2 * RATE), rel=1e-12)


# -- bounds never exceed achieved times ------------------------------------------------------
def _random_regular(n: int, d: int, seed: int) -> Topology:
    for s in range(seed, seed + 50):
        g = nx.random_regular_graph(d, n, seed=s)
        if nx.is_connected(g):
            return from_graph(g)
    raise AssertionError("no connected random regular graph found")


@pytest.mark.parametrize(("n", "d", "seed"), [(8, 3, 0), (10, 4, 1), (12, 3, 2), (16, 4, 3), (20, 5, 4)])
@pytest.mark.parametrize("family", ["uniform", "permutation", "sparse", "dlrm"])
def test_lower_bounds_below_heuristic_routings(n, d, seed, family):
    inst = generators.generate(family, n, d, GBPS, seed=seed)
    topo = _random_regular(n, d, seed)
    lb_ideal, lb_moore, lb = ideal_switch_time(inst), moore_lower_bound(inst), lower_bound(inst)
    assert lb == max(lb_ideal, lb_moore) > 0
    rings = default_rings(inst)
    for method in ("shortest", "ecmp"):
        t = comm_time(inst, topo, route(inst, topo, rings, method, seed=seed))
        assert lb <= t * (1 + 1e-12), (method, lb_ideal, lb_moore, t)


# -- realistic magnitudes: times scale exactly, hops do not ----------------------------------
SCALED_TIMES = ("comm_time_s", "max_link_utilization", "ideal_switch_time_s", "moore_bound_s",
                "lower_bound_s")
UNCHANGED = ("diameter", "avg_hops", "slowdown_vs_ideal", "ports_used_max")


@pytest.mark.parametrize(("bytes_factor", "gbps_factor"),
                         list(itertools.product([1e5, 3.3e8, 1e11], [10.0, 100.0, 400.0])))
def test_magnitudes_scale_exactly(bytes_factor, gbps_factor):
    # unit instance: volumes O(1) bytes, 1 Gbps links
    unit = generators.sparse(12, 4, 1.0, pairs=25, groups=2, seed=5, mp_bytes=(0.5, 5.0),
                             ar_bytes=(1.0, 20.0))
    big = unit.scaled(bytes_factor, gbps_factor)
    assert all(1e4 <= b <= 1e13 for *_, b in big.mp)
    topo = _random_regular(12, 4, 5)
    factor = bytes_factor / gbps_factor
    for method in ("shortest", "ecmp"):
        ru = route(unit, topo, default_rings(unit), method, seed=1)
        rb = route(big, topo, default_rings(big), method, seed=1)
        mu, mb = evaluate(unit, topo, ru), evaluate(big, topo, rb)
        for key in SCALED_TIMES:
            assert mb[key] == pytest.approx(mu[key] * factor, rel=1e-12), key
        for key in UNCHANGED:
            assert mb[key] == pytest.approx(mu[key], rel=1e-12), key
        # the busiest arcs are the same arcs
        lu, lb_ = arc_loads(12, ru), arc_loads(12, rb)
        np.testing.assert_allclose(lb_, lu * bytes_factor, rtol=1e-12)
