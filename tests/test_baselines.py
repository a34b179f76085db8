"""Baselines: expander, demand-greedy, ring, torus, hypercube, and the analytic references."""

import networkx as nx
import numpy as np
import pytest

from topoopt_milp import registry
from topoopt_milp.core.check import check_solution
from topoopt_milp.core.circulant import circulant_jumps
from topoopt_milp.core.evaluate import evaluate, ideal_switch_time
from topoopt_milp.core.instance import make_instance
from topoopt_milp.core.result import Status, finite_json, solution_dict
from topoopt_milp.core.topology import Topology
from topoopt_milp.methods.heuristics import baselines as bl
from topoopt_milp.methods.heuristics.support import components, connect_components, fill_free_ports
from topoopt_milp.registry import solve

B1 = 8e-9  # 1 byte/s: times equal bytes
D = 6.0  # bytes per ordered pair in the uniform all-to-all


def all_to_all(n, d, **kw):
    return make_instance(n, d, B1, mp=[(i, j, D) for i in range(n) for j in range(n) if i != j], **kw)


def assert_valid(inst, res):
    metrics = evaluate(inst, res.topology, res.routing)
    assert check_solution(inst.to_dict(), finite_json(solution_dict(res, inst, metrics))) == []
    assert res.status is Status.FEASIBLE and res.bound is None


# -- ring ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("n,d", [(5, 2), (7, 4), (8, 2), (10, 6), (9, 2)])
def test_ring_graph_and_ecmp_closed_form(n, d):
    inst = all_to_all(n, d)
    res = solve(inst, 'ring', routing='ecmp')
    topo = res.topology
    assert (topo.degrees() == d).all()
    assert topo.diameter() == n // 2
    assert topo.links[0, 1] == d // 2 and topo.links[0, n - 1] == d // 2
    # per arc: D * sum of ring distances crossing it; n odd: (n^2-1)/8, n even: n^2/8
    per_arc = D * ((n * n - 1) / 8 if n % 2 else n * n / 8)
    assert res.objective == pytest.approx(per_arc / (d // 2))
    assert_valid(inst, res)


def test_ring_odd_degree_and_errors():
    L, jumps = bl.ring_links(8, 3)
    assert jumps == (1, 4) and (L.sum(axis=1) == 3).all() and L[0, 4] == 1
    with pytest.raises(ValueError, match="degree"):
        bl.ring_links(8, 1)


# -- torus --------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "n,shape", [(9, (3, 3)), (12, (3, 4)), (16, (4, 4)), (36, (6, 6)), (15, (3, 5)), (64, (8, 8))]
)
def test_torus_shape_and_graph(n, shape):
    assert bl.torus_shape(n) == shape
    L = bl.torus_links(n)
    a, b = shape
    g = nx.from_numpy_array(L)
    assert (L.sum(axis=1) == 4).all() and L.max() == 1
    assert nx.diameter(g) == a // 2 + b // 2
    assert nx.is_isomorphic(g, nx.grid_2d_graph(a, b, periodic=True))


@pytest.mark.parametrize("n", [8, 14, 7, 10])
def test_torus_impossible_sizes(n):
    with pytest.raises(ValueError, match="n:"):
        bl.torus_shape(n)


def test_torus_needs_degree_4():
    with pytest.raises(ValueError, match="degree"):
        solve(all_to_all(9, 2), "torus")


@pytest.mark.parametrize("k", [3, 5])
def test_torus_ecmp_closed_form(k):
    # k x k torus, k odd, per-path ECMP: by symmetry every arc carries the same load,
    # total byte-hops D * n * 2k (k^2-1)/4 over 4n arcs -> D k (k^2-1)/8
    inst = all_to_all(k * k, 4)
    res = solve(inst, 'torus', routing='ecmp')
    assert res.objective == pytest.approx(D * k * (k * k - 1) / 8)
    assert_valid(inst, res)


# -- hypercube ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dim", [2, 3, 4])
def test_hypercube_graph_and_ecmp_closed_form(dim):
    n = 2**dim
    inst = all_to_all(n, dim)
    res = solve(inst, 'hypercube', routing='ecmp')
    g = res.topology.graph()
    assert nx.is_isomorphic(g, nx.hypercube_graph(dim))
    assert res.topology.diameter() == dim
    assert res.objective == pytest.approx(D * n / 2)  # every arc carries D n / 2
    assert_valid(inst, res)


def test_hypercube_impossible_sizes():
    with pytest.raises(ValueError, match=r"degree: hypercube needs n = 2\^degree"):
        solve(all_to_all(12, 3), "hypercube")
    with pytest.raises(ValueError, match=r"degree: hypercube needs n = 2\^degree"):
        solve(all_to_all(16, 3, regular=True), "hypercube")
    # a non-regular instance with spare ports is fine
    res = solve(all_to_all(8, 5, regular=False), "hypercube")
    assert (res.topology.degrees() == 3).all()


# -- expander -------------------------------------------------------------------------------------------
def test_expander_complete_graph_closed_form():
    n = 6
    inst = all_to_all(n, n - 1)
    res = solve(inst, 'expander', routing='ecmp')
    assert (res.topology.links == 1 - np.eye(n, dtype=int)).all()
    assert res.objective == pytest.approx(D)  # every arc carries exactly its own pair
    assert_valid(inst, res)


@pytest.mark.parametrize("n,d", [(10, 3), (16, 4), (20, 2), (9, 3)])
def test_expander_regular_seeded_connected(n, d):
    regular = n * d % 2 == 0
    inst = all_to_all(n, d, regular=regular)
    a = solve(inst, 'expander', seed=1)
    b = solve(inst, 'expander', seed=1)
    assert (a.topology.links == b.topology.links).all() and a.routing == b.routing
    deg = a.topology.degrees()
    if regular:
        assert (deg == d).all()
    else:
        assert deg.max() <= d and deg.sum() == n * d - 1
    assert a.topology.is_connected()
    assert_valid(inst, a)
    others = [solve(inst, 'expander', seed=s).topology.links for s in range(2, 6)]
    assert any((o != a.topology.links).any() for o in others)


# -- demand-greedy -----------------------------------------------------------------------------------------
def test_demand_greedy_by_hand():
    # heavy pairs 0-1, 2-3, then 1-2 (merges), d = 2: pass 1 links 01, 23, 12 (all merges),
    # then 0 and 3 have one free port each: pass 2 links 0-3 (demand 1) -> ring 0-1-2-3-0
    mp = [(0, 1, 100.0), (2, 3, 90.0), (1, 2, 50.0), (0, 3, 1.0)]
    inst = make_instance(4, 2, B1, mp=mp)
    L = bl.demand_greedy_links(bl.pair_weights(inst), 2)
    assert {(i, j) for i in range(4) for j in range(i + 1, 4) if L[i, j]} == {
        (0, 1), (2, 3), (1, 2), (0, 3)}
    res = solve(inst, "demand-greedy")
    assert res.objective == pytest.approx(100.0)
    assert_valid(inst, res)


def test_demand_greedy_parallel_links_and_fill():
    # one very heavy pair: pass 3 gives it every port, then components are joined and
    # the free ports of the other nodes are filled
    inst = make_instance(6, 3, B1, mp=[(0, 1, 300.0), (4, 5, 1.0)])
    L = bl.demand_greedy_links(bl.pair_weights(inst), 3)
    assert L[0, 1] == 3 and L[4, 5] == 3
    res = solve(inst, "demand-greedy")
    assert (res.topology.degrees() == 3).all()
    assert res.topology.is_connected()
    assert "1 component(s)" in res.message
    assert_valid(inst, res)


@pytest.mark.parametrize("seed", range(6))
def test_demand_greedy_random(seed):
    rng = np.random.default_rng(seed)
    n, d = 12, int(rng.choice([2, 3, 4]))
    mp = [(int(a), int(b), float(rng.uniform(1, 9))) for a, b in rng.integers(n, size=(20, 2))
          if a != b]
    inst = make_instance(n, d, B1, allreduce=[(rng.choice(n, 5, replace=False).tolist(), 40.0)],
                         mp=mp, regular=bool(seed % 2 == 0))
    res = solve(inst, 'demand-greedy', seed=seed)
    assert res.topology.degrees().max() <= d
    if inst.regular:
        assert (res.topology.degrees() == d).all()
    assert_valid(inst, res)


# -- every baseline on a mixed instance --------------------------------------------------------------------
@pytest.mark.parametrize("method", ["expander", "demand-greedy", "ring", "torus", "hypercube"])
@pytest.mark.parametrize("routing", [None, "shortest", "ecmp"])
def test_every_baseline_valid(method, routing):
    inst = make_instance(16, 4, B1, allreduce=[(range(0, 16, 2), 500.0)],
                         mp=[(1, 14, 30.0), (3, 8, 10.0), (15, 0, 5.0)])
    res = solve(inst, method, seed=2, routing=routing)
    assert res.method == method and res.seed == 2
    assert res.params == registry.get(method).options({"routing": routing}).as_params()
    assert res.runtime_s >= 0
    assert_valid(inst, res)


# -- analytic references --------------------------------------------------------------------------------
def test_ideal_switch_and_fat_tree():
    inst = make_instance(4, 2, 10.0, allreduce=[(range(4), 1e9)], mp=[(0, 1, 5e8)])
    assert bl.ideal_switch(inst) == ideal_switch_time(inst)
    # node 0 sends 2*3/4*1e9 + 5e8 = 2e9 bytes; at 20 Gbps (2.5e9 B/s) that is 0.8 s
    assert bl.ideal_switch(inst) == pytest.approx(0.8)
    assert bl.fat_tree_time(inst, 20.0) == pytest.approx(0.8)
    assert bl.fat_tree_time(inst, 40.0) == pytest.approx(0.4)
    assert bl.fat_tree_time(inst, 40.0, oversubscription=3.0) == pytest.approx(1.2)
    with pytest.raises(ValueError, match="oversubscription"):
        bl.fat_tree_time(inst, 40.0, oversubscription=0.5)
    with pytest.raises(ValueError, match="per_server_gbps"):
        bl.fat_tree_time(inst, 0.0)


# -- shared building blocks (heuristics/support.py) ------------------------------------------------------
def _links(n, pairs):
    L = np.zeros((n, n), dtype=np.int64)
    for a, b in pairs:
        L[a, b] += 1
        L[b, a] += 1
    return L


def test_fill_free_ports():
    L = fill_free_ports(np.zeros((6, 6), dtype=np.int64), 3)
    assert (L.sum(axis=1) == 3).all() and L.max() == 1  # fresh neighbours preferred
    # only node 3 has free ports: a link elsewhere is split into 3-a, 3-b
    L = fill_free_ports(_links(4, [(0, 1), (1, 2), (2, 0)]), 2)
    assert (L.sum(axis=1) == 2).all() and (L == L.T).all() and not np.diag(L).any()
    with pytest.raises(ValueError, match="degree"):
        fill_free_ports(_links(3, [(0, 1)]), 1)  # node 2 alone with one free port
    with pytest.raises(ValueError, match="degree"):
        fill_free_ports(_links(3, [(0, 1), (0, 2)]), 1)  # node 0 over budget


def test_connect_components_preserves_degrees():
    # two triangles and a square: one cyclic swap joins all three
    L = _links(10, [(0, 1), (1, 2), (2, 0), (3, 4), (4, 5), (5, 3), (6, 7), (7, 8), (8, 9), (9, 6)])
    deg = L.sum(axis=1).copy()
    connect_components(L)
    assert (L.sum(axis=1) == deg).all() and len(set(components(L))) == 1
    # a perfect matching (every link a bridge) cannot be joined by swaps: left alone
    M = _links(6, [(0, 1), (2, 3), (4, 5)])
    assert (connect_components(M.copy()) == M).all()
    # with free ports (non-regular) components are joined over them
    M = connect_components(M, degree=2)
    assert len(set(components(M))) == 1 and M.sum(axis=1).max() <= 2


def test_circulant_jumps_detection():
    assert circulant_jumps(Topology.circulant(12, [1, 5]).links) == (1, 5)
    assert circulant_jumps(Topology.circulant(12, [1, 1, 6]).links) == (1, 1, 6)
    assert circulant_jumps(_links(4, [(0, 1), (2, 3)])) is None
