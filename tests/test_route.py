"""route family: closed-form max-concurrent-flow values, formulations that must agree, the
variants against each other and against the routing heuristics, and checker-clean results."""

from __future__ import annotations

import itertools
import json
import math
from pathlib import Path

import networkx as nx
import numpy as np
import pytest

from topoopt_milp import registry
from topoopt_milp.core.check import check_solution
from topoopt_milp.core.errors import InputError
from topoopt_milp.core.evaluate import comm_time, evaluate, ideal_switch_time
from topoopt_milp.core.instance import Instance, make_instance
from topoopt_milp.core.result import SolveResult, Status, finite_json, solution_dict
from topoopt_milp.core.routing import route as heuristic_route
from topoopt_milp.core.topology import Ring, Routing, Topology, default_rings
from topoopt_milp.methods.formulations import route

GBPS = 100.0
B = GBPS * 1.25e8
VOL = 1e6


def all_to_all(n, d, vol=VOL, **kw):
    return make_instance(n, d, GBPS, mp=[(i, j, vol) for i in range(n) for j in range(n) if i != j],
                         **kw)


def torus(a, b):
    links = []
    for x, y in itertools.product(range(a), range(b)):
        v = x * b + y
        links.append([v, ((x + 1) % a) * b + y, 1])
        links.append([v, x * b + (y + 1) % b, 1])
    return Topology.from_link_list(a * b, links)


def hypercube(dim):
    n = 2**dim
    return Topology.from_link_list(n, [[v, v ^ (1 << k), 1] for v in range(n) for k in range(dim)
                                       if v < v ^ (1 << k)])


def complete(n):
    return Topology.from_link_list(n, [[i, j, 1] for i in range(n) for j in range(i + 1, n)])


def random_regular(n, d, seed):
    g = nx.random_regular_graph(d, n, seed=seed)
    return Topology.from_link_list(n, [[u, v, 1] for u, v in g.edges()])


def assert_clean(inst, res: SolveResult):
    assert res.status.has_solution, res.message
    metrics = evaluate(inst, res.topology, res.routing)
    assert check_solution(inst.to_dict(), finite_json(solution_dict(res, inst, metrics))) == []
    assert res.objective == pytest.approx(comm_time(inst, res.topology, res.routing), rel=1e-12)
    assert res.bound is not None and res.bound <= res.objective * (1 + 1e-9)


# -- closed forms: uniform all-to-all on edge-transitive graphs ------------------------------
def byte_hop_value(topo: Topology, vol=VOL) -> float:
    """Total shortest-path byte-hops over the number of arcs: the max-concurrent-flow value on
    an arc-transitive graph (ECMP attains it; no routing beats the average arc load)."""
    arcs = int((topo.links > 0).sum())
    return vol * topo.hop_distances.sum() / (arcs * B)


@pytest.mark.parametrize(
    "name, topo, expected_hops",
    [
        ("ring8", Topology.circulant(8, [1]), 8.0),  # sum of distances 16 per node, 16 arcs
        ("complete6", complete(6), 1.0),
        ("hypercube16", hypercube(4), 8.0),  # 32 per node, 64 arcs
        ("torus4x4", torus(4, 4), 8.0),
        ("torus5x5", torus(5, 5), 15.0),  # 60 per node, 100 arcs
    ],
)
def test_closed_form_max_concurrent_flow(name, topo, expected_hops):
    n = topo.n
    d = int(topo.degrees().max())
    inst = all_to_all(n, d)
    expected = expected_hops * VOL / B
    assert byte_hop_value(topo) == pytest.approx(expected)
    res = registry.solve(inst.with_topology(topo.links), "route-milp", formulation='source')
    assert res.status is Status.OPTIMAL
    assert res.objective == pytest.approx(expected, rel=1e-6)
    assert_clean(inst, res)
    ecmp = heuristic_route(inst, topo, (), "ecmp")
    assert comm_time(inst, topo, ecmp) == pytest.approx(expected, rel=1e-9)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_lp_beats_heuristics_on_random_regular(seed):
    topo = random_regular(12, 3 if seed % 2 else 4, seed)
    inst = all_to_all(12, int(topo.degrees().max()))
    res = registry.solve(inst.with_topology(topo.links), "route-milp")
    assert_clean(inst, res)
    for method in ("shortest", "ecmp"):
        t = comm_time(inst, topo, heuristic_route(inst, topo, (), method, seed))
        assert res.objective <= t * (1 + 1e-7)
    # the bound is the LP optimum: no routing does better than it (here: ECMP, shortest)
    assert res.gap < 1e-5


# -- formulations agree -------------------------------------------------------------------
def test_per_pair_source_and_symmetric_agree():
    topo = Topology.circulant(12, [1, 5])
    inst = all_to_all(12, 4)
    vals = {}
    for form in ("source", "per-pair", "symmetric"):
        res = registry.solve(inst.with_topology(topo.links), "route-milp", formulation=form)
        assert_clean(inst, res)
        assert f"formulation={form}" in res.message
        vals[form] = res.objective
    assert vals["per-pair"] == pytest.approx(vals["source"], rel=1e-6)
    assert vals["symmetric"] == pytest.approx(vals["source"], rel=1e-6)


def test_symmetric_auto_with_rotation_invariant_allreduce():
    n = 10
    topo = Topology.circulant(n, [1, 3])
    # shift traffic (depends only on t - s) plus an AllReduce over everyone, ring order 0..n-1
    inst = make_instance(n, 4, GBPS, allreduce=[(range(n), 5e8)],
                         mp=[(i, (i + 2) % n, 3e6) for i in range(n)])
    res_auto = registry.solve(inst.with_topology(topo.links), "route-milp")
    assert "formulation=symmetric" in res_auto.message
    res_full = registry.solve(inst.with_topology(topo.links), "route-milp", formulation='source')
    assert res_auto.objective == pytest.approx(res_full.objective, rel=1e-6)
    assert_clean(inst, res_auto)


def test_symmetric_not_used_when_traffic_is_not_invariant():
    topo = Topology.circulant(8, [1, 3])
    inst = make_instance(8, 4, GBPS, mp=[(0, 4, 1e6), (1, 2, 5e5)])
    P = route.build_problem(inst.with_topology(topo.links),
                            registry.get("route-milp").options())
    assert not route.symmetric_applies(P)
    res = registry.solve(inst.with_topology(topo.links), "route-milp")
    assert "formulation=source" in res.message
    with pytest.raises(ValueError, match="symmetric"):
        registry.solve(inst.with_topology(topo.links), "route-milp", formulation='symmetric')
    # node 0 has 4 out-arcs, so 0 -> 4 alone needs 1e6 / 4 per arc; its 4 arc-disjoint two-hop
    # paths 0-1-4, 0-3-4, 0-7-4, 0-5-4 attain it, and 1 -> 2 fits beside them (1-2 direct
    # plus 1-6-7-... detours), so the optimum is exactly the cut bound
    assert_clean(inst, res)
    assert res.objective == pytest.approx(2.5e5 / B, rel=1e-6)


def test_highs_and_cbc_agree_on_lp_and_unsplittable():
    rng = np.random.default_rng(4)
    topo = random_regular(8, 3, 4)
    mp = [(int(s), int(t), float(rng.integers(1, 20)) * 1e5)
          for s, t in itertools.permutations(range(8), 2) if rng.random() < 0.3]
    inst = make_instance(8, 3, GBPS, mp=mp)
    for variant in ("fractional", "unsplittable"):
        objs = {}
        for solver in ("highs", "cbc"):
            res = registry.solve(inst.with_topology(topo.links), "route-milp", variant=variant,
                                 solver=solver, k_paths=3, mip_gap=0.0)
            # unsplittable is a restriction: proven within its path set, reported as such
            assert Status.OPTIMAL in (res.status, res.scope_status), res.message
            assert_clean(inst, res)
            objs[solver] = res.objective
        assert objs["highs"] == pytest.approx(objs["cbc"], rel=1e-6)


def test_cpsat_agrees_with_milp_within_scale():
    rng = np.random.default_rng(7)
    topo = random_regular(8, 4, 1)
    # volumes not multiples of one another: CP-SAT rounds them (down) to integer units
    mp = [(int(s), int(t), float(rng.uniform(1e5, 3e6)))
          for s, t in itertools.permutations(range(8), 2) if rng.random() < 0.25]
    inst = make_instance(8, 4, GBPS, mp=mp, allreduce=[([0, 2, 4, 6], 2e6)])
    milp = registry.solve(inst.with_topology(topo.links), "route-milp", variant='unsplittable', k_paths=3,
                          mip_gap=0.0)
    cp = registry.solve(inst.with_topology(topo.links), "route-cpsat", k_paths=3, mip_gap=0.0, time_limit=20)
    assert milp.status is Status.FEASIBLE and milp.scope_status == "optimal"
    assert cp.status is Status.FEASIBLE  # optimal only for the rounded volumes
    assert cp.scale is not None and cp.scale > 0
    assert_clean(inst, cp)
    n_comm = len(milp.routing.commodities)
    tol = n_comm * cp.scale / B  # every commodity's volume rounded by less than one unit
    assert abs(cp.objective - milp.objective) <= tol
    assert cp.bound <= milp.objective * (1 + 1e-9)  # floor rounding keeps the bound valid


def test_cpsat_exact_scale_is_optimal():
    topo = Topology.circulant(6, [1])
    inst = all_to_all(6, 2, vol=3e6)
    cp = registry.solve(inst.with_topology(topo.links), "route-cpsat", k_paths=2)
    milp = registry.solve(inst.with_topology(topo.links), "route-milp", variant='unsplittable', k_paths=2)
    assert cp.scope_status == "optimal" and milp.scope_status == "optimal"
    assert cp.status is Status.FEASIBLE and milp.status is Status.FEASIBLE  # restricted models
    assert cp.objective == pytest.approx(milp.objective, rel=1e-9)
    assert cp.scale == pytest.approx(3e6)


# -- variants -------------------------------------------------------------------------------
def test_variant_ordering_and_ksp_on_ring_equals_lp():
    topo = random_regular(10, 3, 3)
    inst = all_to_all(10, 3)
    res = {v: registry.solve(inst.with_topology(topo.links), "route-milp", variant=v, k_paths=3)
           for v in ("fractional", "ksp", "unsplittable")}
    for r in res.values():
        assert_clean(inst, r)
    assert res["fractional"].objective <= res["ksp"].objective * (1 + 1e-6)
    assert res["ksp"].objective <= res["unsplittable"].objective * (1 + 1e-6)
    ring = Topology.circulant(7, [1])  # two simple paths per pair: ksp with k = 2 is the LP
    inst7 = all_to_all(7, 2)
    lp = registry.solve(inst7.with_topology(ring.links), "route-milp")
    ksp = registry.solve(inst7.with_topology(ring.links), "route-milp", variant='ksp', k_paths=2)
    assert ksp.objective == pytest.approx(lp.objective, rel=1e-6)


def test_unsplittable_time_limit_returns_incumbent_not_optimal():
    topo = random_regular(16, 4, 0)
    rng = np.random.default_rng(0)
    mp = [(int(s), int(t), float(rng.uniform(1e5, 1e6)))
          for s, t in itertools.permutations(range(16), 2) if rng.random() < 0.5]
    inst = make_instance(16, 4, GBPS, mp=mp)
    res = registry.solve(inst.with_topology(topo.links), "route-milp", variant='unsplittable', k_paths=4,
                         time_limit=0.5, mip_gap=0.0)
    assert res.status in (Status.FEASIBLE, Status.NO_SOLUTION)
    if res.status is Status.FEASIBLE:
        assert_clean(inst, res)
        assert res.bound < res.objective


def test_coset_ring_orders_follow_jumps_and_warm_start_rings_are_used():
    topo = Topology.circulant(8, [3])  # one 8-cycle 0-3-6-1-4-7-2-5
    inst = make_instance(8, 2, GBPS, allreduce=[(range(8), 1e8)])
    rings = route.ring_orders(inst, topo, registry.get("route-milp").options())
    assert rings[0].order == (0, 3, 6, 1, 4, 7, 2, 5)
    assert rings[1].order == (0, 5, 2, 7, 4, 1, 6, 3)  # the reverse half of the default ring
    res = registry.solve(inst.with_topology(topo.links), "route-milp")
    assert_clean(inst, res)
    edge = inst.allreduce[0].edge_bytes
    # every ring edge is one link and each direction carries half the volume: edge / 2 per
    # arc, which is the ideal-switch time 2 (k-1)/k S / (d B)
    assert res.objective == pytest.approx(edge / 2 / B, rel=1e-6)
    assert res.objective == pytest.approx(ideal_switch_time(inst), rel=1e-6)
    # listed order 0..7 on the same topology would route i -> i+1 over 3 hops
    given = Routing((Ring(0, tuple(range(8)), 1.0),), ())
    ws = SolveResult("x", Status.FEASIBLE, 1.0, None, 0.0, topo, given)
    res2 = registry.solve(inst.with_topology(topo.links, ws.routing.rings), "route-milp")
    assert res2.routing.rings[0].order == tuple(range(8))
    # i -> i+1 is 3 hops forward or 5 back: 3x = 5 (1 - x), x = 5/8, load 15/8 of an edge
    assert res2.objective == pytest.approx(15 / 8 * edge / B, rel=1e-6)
    assert default_rings(inst)[0].order == tuple(range(8))


def test_missing_topology_is_a_clear_error():
    with pytest.raises(InputError, match="route family solves the routing on a fixed topology"):
        registry.solve(all_to_all(4, 2), "route-milp")


def test_disconnected_pair_is_a_clear_error():
    topo = Topology.from_link_list(4, [[0, 1, 1], [2, 3, 1]])
    inst = make_instance(4, 1, GBPS, regular=False, mp=[(0, 3, 1.0)])
    with pytest.raises(ValueError, match="no path from 0 to 3"):
        registry.solve(inst.with_topology(topo.links), "route-milp")


def test_parallel_links_add_capacity_and_export(tmp_path):
    topo = Topology.from_link_list(4, [[0, 1, 2], [1, 2, 1], [0, 2, 1]])  # node 3 unused
    inst = make_instance(4, 3, GBPS, regular=False, mp=[(0, 1, 6e6)])
    path = tmp_path / "route.mps"
    res = registry.solve(inst.with_topology(topo.links), "route-milp", export=str(path))
    # direct arc has 2 links, detour 0-2-1 has 1: split 4:2, load/cap = 2e6 / B
    assert res.objective == pytest.approx(2e6 / B, rel=1e-6)
    assert path.stat().st_size > 0
    assert_clean(inst, res)


def test_latency_makes_the_lp_a_feasible_answer_with_valid_bound():
    topo = Topology.circulant(6, [1])
    inst = all_to_all(6, 2, latency_us=5.0)
    res = registry.solve(inst.with_topology(topo.links), "route-milp")
    assert_clean(inst, res)
    assert res.bound >= 3 * 5e-6  # diameter 3 hops of latency at least
    assert math.isfinite(res.objective)


@pytest.mark.parametrize("algo", ["simplex", "ipm", "pdlp"])
def test_lp_algorithms_agree(algo):
    topo = random_regular(12, 4, 5)
    inst = all_to_all(12, 4)
    ref = registry.solve(inst.with_topology(topo.links), "route-milp", lp_algorithm='simplex')
    res = registry.solve(inst.with_topology(topo.links), "route-milp", lp_algorithm=algo)
    assert_clean(inst, res)
    assert res.objective == pytest.approx(ref.objective, rel=1e-4)


def test_default_crossover_returns_a_sparser_routing_of_the_same_value():
    """route-milp's routing is its result, so by default (crossover = auto) the interior point
    is crossed over to a vertex: the same optimum on fewer paths than without crossover."""
    inst = Instance.load(Path(__file__).parents[1] / "instances/coopt/bert-n16-d8.json")
    topo = registry.solve(inst, "topologyfinder").topology
    fixed = inst.with_topology(topo.links)

    def paths(res):
        return sum(len(c.paths) for c in res.routing.commodities)

    vertex = registry.solve(fixed, "route-milp")
    interior = registry.solve(fixed, "route-milp", crossover="off")
    assert_clean(fixed, vertex)
    assert_clean(fixed, interior)
    assert vertex.objective == pytest.approx(interior.objective, rel=1e-6)
    assert "without crossover" in interior.message and "without crossover" not in vertex.message
    assert paths(vertex) < paths(interior)


def test_decompose_flow_cancels_cycles_and_covers_noise():
    from topoopt_milp.methods.flow_paths import decompose_flow

    topo = Topology.from_link_list(4, [[0, 1, 1], [1, 2, 1], [2, 3, 1], [0, 3, 1], [1, 3, 1]])
    # source 0 sends 2 to node 2 and 1 to node 3, plus a cycle 1 -> 2 -> 3 -> 1 of 0.5 on
    # top of the real flow, and 1e-9 missing at node 3 (interior-point noise)
    flow = {(0, 1): 2.0, (1, 2): 2.5, (2, 3): 0.5, (3, 1): 0.5, (0, 3): 1.0 - 1e-9}
    paths = decompose_flow(0, flow, {2: 2.0, 3: 1.0}, topo)
    assert paths[2] == [((0, 1, 2), 1.0)]
    (p3, f3), *rest = paths[3]
    assert p3 == (0, 3) and f3 == pytest.approx(1.0)
    assert sum(f for _, f in paths[3]) == pytest.approx(1.0, abs=1e-15)


def test_cli_route_on_a_fixed_topology(runner, tmp_path):
    from topoopt_milp.cli import main

    inst = make_instance(8, 3, GBPS, mp=[(i, (i + 3) % 8, 1e6 * (1 + i % 3)) for i in range(8)],
                         allreduce=[([0, 2, 4, 6], 4e6)])
    ipath, heur, out = tmp_path / "i.json", tmp_path / "h.json", tmp_path / "r.json"
    inst.save(ipath)
    r = runner.invoke(main, ["solve", str(ipath), "-m", "expander", "--out", str(heur)])
    assert r.exit_code == 0, r.output
    heur_obj = json.loads(heur.read_text())["objective"]
    for method, extra in (("route-milp", []), ("route-milp", ["--variant", "ksp"]),
                          ("route-cpsat", ["--time-limit", "10"])):
        r = runner.invoke(main, ["solve", str(ipath), "-m", method, "--topology", str(heur),
                                 "--warm-start", str(heur), "--out", str(out), *extra])
        assert r.exit_code == 0, r.output
        sol = json.loads(out.read_text())
        assert sol["status"] in ("optimal", "feasible")
        assert sol["topology"]["links"] == json.loads(heur.read_text())["topology"]["links"]
        if method == "route-milp" and not extra:
            # same topology and ring orders (from the warm start): the LP can only improve
            assert sol["objective"] <= heur_obj * (1 + 1e-7)
    r = runner.invoke(main, ["solve", str(ipath), "-m", "route-milp", "--out", str(out)])
    assert r.exit_code == 2 and "--topology SOL.json" in r.output


def test_fractional_time_limit_is_never_optimal():
    topo = random_regular(48, 4, 2)
    inst = all_to_all(48, 4)
    res = registry.solve(inst.with_topology(topo.links), "route-milp", time_limit=0.02, formulation='source')
    assert res.status is Status.FEASIBLE, res.message
    assert_clean(inst, res)


@pytest.mark.parametrize("method", ["route-milp", "route-cpsat"])
def test_time_limit_returns_shortest_paths_and_a_bound(method):
    """Issue 9: a route model stopped before its solver has an incumbent (CP-SAT at n = 128
    spent a minute building candidate paths past a 10 s limit) returns shortest paths on the
    fixed topology and the analytic bound, never nothing."""
    topo = random_regular(48, 4, 2)
    fixed = all_to_all(48, 4).with_topology(topo.links)
    res = registry.solve(fixed, method, time_limit=0.02)
    assert res.status is Status.FEASIBLE and "incumbent: shortest paths" in res.message, \
        res.message
    assert np.array_equal(res.topology.links, topo.links)
    shortest = heuristic_route(fixed, res.topology, res.routing.rings, "shortest")
    assert res.objective == pytest.approx(comm_time(fixed, res.topology, shortest))
    assert 0 < res.bound <= res.objective
    assert_clean(fixed, res)


# -- shared capacities far apart (issue 20): right or clearly refused, never "infeasible" -----
def _shared(n, links, mp):
    """A route-only instance with shared (SNDlib) capacities ``links = [(i, j, cap)]``."""
    from topoopt_milp.core.instance import BYTES_PER_GBPS, FixedTopology, Instance

    deg = np.zeros(n, dtype=int)
    for i, j, _ in links:
        deg[i] += 1
        deg[j] += 1
    return Instance(n=n, degree=int(deg.max()), link_gbps=1.0 / BYTES_PER_GBPS, mp=tuple(mp),
                    regular=False, name="shared",
                    topology=FixedTopology(tuple((min(i, j), max(i, j), float(c))
                                                 for i, j, c in links), shared=True))


def _cycle(caps, mp):
    n = len(caps)
    return _shared(n, [(k, (k + 1) % n, c) for k, c in enumerate(caps)], mp)


def _assert_exact(inst, res, expected, solver):
    from topoopt_milp.core.evaluate import shared_congestion

    assert res.status is Status.OPTIMAL, (solver, res.status, res.message)
    assert res.objective == pytest.approx(expected, rel=1e-6), (solver, res.message)
    assert res.objective == pytest.approx(shared_congestion(inst, res.routing), rel=1e-12)
    assert res.bound <= expected * (1 + 1e-7) and res.bound >= expected * (1 - 1e-6)
    assert check_solution(inst.to_dict(), finite_json(solution_dict(res, inst, res.metrics))) == []


@pytest.mark.parametrize("big", [1e6, 1e8, 1e9, 1e12, 1e200])
@pytest.mark.parametrize("solver", ["highs", "cbc"])
def test_one_huge_link_keeps_the_cycle_optimum(big, solver):
    """The issue's 4-cycle: links of 10 and one of ``big``; A->C 12 splits 6/6, U* = 0.6.
    HiGHS said "infeasible" from 1e9 on and "no solution in time" at 1e8 (no limit set)."""
    inst = _cycle([10, 10, 10, big], [(0, 2, 12.0)])
    res = registry.solve(inst, "route-milp", solver=solver)
    _assert_exact(inst, res, 0.6, solver)
    assert ("clipped" in res.message) == (big / 10 > 1e6)  # only beyond R_MAX


@pytest.mark.parametrize("caps, mp, expected", [
    ([1e-300] * 4, [(0, 2, 12.0)], 6e300),  # uniformly tiny: one scale is enough
    ([1e-300, 1e-300, 1e-300, 10], [(0, 2, 12.0)], 6e300),  # the 10 is clipped to 2e-300
    ([1e-300, 1e-300, 1e-300, 1], [(0, 2, 12.0)], 6e300),
    ([1e-10, 1e-10, 1e-10, 1], [(0, 2, 12.0)], 6e10),
    ([1e-300, 10, 10, 10], [(0, 2, 12.0)], 1.2),  # the tiny link is left out, bound kept valid
])
@pytest.mark.parametrize("solver", ["highs", "cbc"])
def test_tiny_capacities_are_solved_right(caps, mp, expected, solver):
    inst = _cycle(caps, mp)
    _assert_exact(inst, registry.solve(inst, "route-milp", solver=solver), expected, solver)


def test_tiny_chord_and_tiny_leaf_left_out_with_a_valid_bound():
    # 4-cycle of 10s, E (4) hangs on A by 5, chord A-C of 1e-9: A->C 12 and E->B 1 give
    # max((x + 1) / 10, (12 - x) / 10, 1 / 5) -> x = 5.5, U* = 0.65 (the chord adds ~1e-10)
    ring = [(0, 1, 10), (1, 2, 10), (2, 3, 10), (3, 0, 10)]
    inst = _shared(5, [*ring, (4, 0, 5), (0, 2, 1e-9)], [(0, 2, 12.0), (4, 1, 1.0)])
    res = registry.solve(inst, "route-milp")
    _assert_exact(inst, res, 0.65, "highs")
    assert "left out of the model" in res.message
    # a leaf of 1e-300 without demand: no simple path can use it
    inst = _shared(5, [*ring, (4, 0, 1e-300)], [(0, 2, 12.0)])
    _assert_exact(inst, registry.solve(inst, "route-milp"), 0.6, "highs")


def test_capacities_no_model_can_hold_are_refused(tmp_path, runner):
    from topoopt_milp.cli import main

    ring = [(0, 1, 10), (1, 2, 10), (2, 3, 10), (3, 0, 10)]
    # demand must cross a 1e-300 link while demands differ by 1e24: refused, not "infeasible"
    inst = _shared(5, [*ring, (4, 0, 1e-300)], [(0, 2, 1e12), (4, 2, 1e-12)])
    with pytest.raises(InputError, match=r"link \(0, 4\) has capacity 1e-300.*cannot represent"):
        registry.solve(inst, "route-milp")
    path = tmp_path / "far.json"
    inst.save(path)
    r = runner.invoke(main, ["solve", str(path), "-m", "route-milp", "--out",
                             str(tmp_path / "o.json")])
    assert r.exit_code == 2 and "Traceback" not in r.output
    assert r.stderr.count("\n") == 1 and "cannot represent" in r.stderr
    # a congestion beyond the float range
    inst = _shared(5, [*ring, (4, 0, 1e-300)], [(0, 2, 12.0), (4, 2, 1e300)])
    with pytest.raises(InputError, match="overflows the float range"):
        registry.solve(inst, "route-milp")


def test_random_cycles_with_capacities_over_600_orders_of_magnitude():
    """Brute force by closed form: one commodity s->t on a cycle splits over the two arcs of
    the cycle with bottlenecks b1, b2 (shared capacities), U* = D / (b1 + b2); one path only
    (unsplittable) gives D / max(b1, b2). Capacities log-uniform in [1e-300, 1e300]."""
    rng = np.random.default_rng(20)
    for k in range(14):
        n = int(rng.integers(4, 8))
        caps = list(10.0 ** rng.uniform(-300, 300, size=n))
        s, t = (int(x) for x in rng.choice(n, size=2, replace=False))
        D = float(10.0 ** rng.uniform(-3, 3))
        lo, hi = min(s, t), max(s, t)
        b1, b2 = min(caps[lo:hi]), min(caps[hi:] + caps[:lo])
        inst = _cycle(caps, [(s, t, D)])
        solver = "cbc" if k % 3 == 0 else "highs"
        _assert_exact(inst, registry.solve(inst, "route-milp", solver=solver), D / (b1 + b2),
                      solver)
        res = registry.solve(inst, "route-milp", variant="unsplittable", k_paths=2)
        assert res.objective == pytest.approx(D / max(b1, b2), rel=1e-6)
        assert res.scope_status == "optimal"


def test_cut_lower_bound_never_exceeds_the_optimum():
    """shared_capacity.congestion_lower_bound (the clip level's proof rests on it) against
    the route LP on random well-conditioned shared networks (capacities in [1, 100])."""
    from topoopt_milp.methods.formulations.shared_capacity import congestion_lower_bound

    rng = np.random.default_rng(7)
    for _ in range(10):
        n = int(rng.integers(4, 8))
        g = nx.connected_watts_strogatz_graph(n, 2, 0.5, seed=int(rng.integers(1000)))
        links = [(u, v, float(rng.uniform(1, 100))) for u, v in g.edges()]
        mp = [(int(s), int(t), float(rng.uniform(1, 10)))
              for s, t in rng.integers(n, size=(4, 2)) if s != t]
        if not mp:
            continue
        inst = _shared(n, links, mp)
        D = np.zeros((n, n))
        for s, t, b in mp:
            D[s, t] += b
        lower = congestion_lower_bound(n, [(min(i, j), max(i, j)) for i, j, _ in links],
                                       np.array([c for *_, c in links]), D)
        res = registry.solve(inst, "route-milp")
        assert res.status is Status.OPTIMAL
        assert 0 < lower <= res.objective * (1 + 1e-9)
