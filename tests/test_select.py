"""select family: exact ring-jump selection against hand-computed and published optima."""

from __future__ import annotations

import math

import numpy as np
import pytest
from helpers import checked

from topoopt_milp import registry
from topoopt_milp.core.circulant import totient_orders
from topoopt_milp.core.evaluate import evaluate
from topoopt_milp.core.instance import make_instance
from topoopt_milp.core.result import Status
from topoopt_milp.methods.formulations import select, select_flow
from topoopt_milp.workloads import generators

S = 1.0e6  # bytes per all-to-all demand
B = 100.0  # Gbps


def a2a(n: int, d: int):
    return make_instance(n, d, B, mp=[(i, j, S) for i in range(n) for j in range(n) if i != j])


def ring_traffic(n: int, d: int):
    """Cheap traffic (n demands) for diameter runs, which ignore the volumes."""
    return make_instance(n, d, B, mp=[(i, (i + 1) % n, S) for i in range(n)])




def boesch_wang(n: int) -> int:
    """Optimal diameter of a degree-4 circulant on n nodes (Boesch and Wang 1985)."""
    return math.ceil((math.sqrt(2 * n - 1) - 1) / 2)


@pytest.mark.parametrize("n", range(5, 41))
def test_boesch_wang_cpsat(n):
    inst = ring_traffic(n, 4)
    res = checked(inst, registry.solve(inst, "select-cpsat", objective='diameter', candidates='all',
                                       time_limit=20))
    assert res.status is Status.OPTIMAL
    assert res.objective == boesch_wang(n) == res.bound
    assert res.topology.diameter() == boesch_wang(n)
    assert res.objective_kind == "diameter"
    assert res.info["diameter"] == boesch_wang(n)


@pytest.mark.parametrize("n", [5, 6, 9, 12, 17, 24, 25, 31, 40])
@pytest.mark.parametrize("symmetry", [True, False])
def test_boesch_wang_milp(n, symmetry):
    inst = ring_traffic(n, 4)
    res = checked(inst, registry.solve(inst, "select-milp", objective="diameter",
                                       candidates="all", time_limit=20, symmetry=symmetry))
    assert res.status is Status.OPTIMAL
    assert res.objective == boesch_wang(n)
    assert res.bound == pytest.approx(boesch_wang(n))


def test_ball_and_residue_distances_by_hand():
    assert [select.ball(2, h) for h in range(4)] == [1, 5, 13, 25]  # 2h^2 + 2h + 1
    assert select.ball(4, 3) == 129
    # C_8(1, 3): residues 1, 3, 5, 7 at one hop, 2, 4, 6 at two
    assert list(select.residue_distances(8, (1, 3))) == [0, 1, 2, 1, 2, 1, 2, 1]
    assert select.candidate_jumps(12, 4, "coprime") == [1, 5]
    assert select.candidate_jumps(12, 3, "coprime") == [1, 5, 6]  # n/2 for odd d
    assert select.candidate_jumps(7, 4, "all") == [1, 2, 3]


def test_total_hops_matches_moore_bound_n8():
    # 4 residues at one hop and the other 3 at two: 10 hops per source (Moore bound, attained)
    inst = a2a(8, 4)
    for res in (registry.solve(inst, "select-milp", objective='total_hops', candidates='all'),
                registry.solve(inst, "select-cpsat", objective='total_hops', candidates='all')):
        checked(inst, res)
        assert res.status is Status.OPTIMAL
        assert res.objective == pytest.approx(10 * 8 * S)
        assert res.bound == pytest.approx(10 * 8 * S)
        assert res.info["avg_hops"] == pytest.approx(10 / 7)


@pytest.mark.parametrize("solver", ["highs", "cbc"])
def test_comm_time_a2a_n8_hand_optimum(solver):
    # total byte-hops >= 80 S (Moore), capacity n d B: T >= 80 S / (32 B) = 2.5 S / B, attained
    inst = a2a(8, 4)
    want = 2.5 * S / inst.link_bytes_per_s
    res = checked(inst, registry.solve(inst, "select-milp", candidates='all', solver=solver))
    assert res.status is Status.OPTIMAL
    assert res.objective == pytest.approx(want, rel=1e-6)
    assert res.bound == pytest.approx(want, rel=1e-6)
    cp = checked(inst, registry.solve(inst, "select-cpsat", candidates='all', time_limit=20))
    # integer flows: proven within that restricted model, never reported as optimal
    assert cp.status is Status.FEASIBLE and cp.scope_status == "optimal" and cp.scope.restricted
    assert cp.objective == pytest.approx(want, rel=1e-6)


def test_comm_time_mixed_traffic_not_rotation_invariant():
    inst = make_instance(8, 4, B, allreduce=[(range(8), 1e8)], mp=[(0, 5, 3e7), (2, 7, 1e7)])
    # CP-SAT takes the given rings: compare it with the MILP on the same (given) rings
    res = checked(inst, registry.solve(inst, "select-milp", candidates='all', rings='given'))
    assert res.status is Status.OPTIMAL
    assert "sources=8" in res.message
    choose = checked(inst, registry.solve(inst, "select-milp", candidates='all'))
    assert choose.status is Status.OPTIMAL and "rings=choose" in choose.message
    assert choose.objective <= res.objective * (1 + 1e-9)  # given rings are in the ring space
    cp = checked(inst, registry.solve(inst, "select-cpsat", candidates='all', time_limit=20))
    # integer flow units restrict splits: never better than the MILP optimum, and close to it
    assert cp.objective >= res.objective * (1 - 1e-6)
    assert cp.objective <= res.objective * 1.01
    # its bound is that of the integer-unit model: below its own objective, and within the
    # flow resolution of the fractional optimum
    assert cp.bound <= cp.objective
    assert cp.bound == pytest.approx(res.objective, rel=1e-4)


@pytest.mark.parametrize("objective", ["diameter", "total_hops", "comm_time"])
def test_totientperms_never_beats_proven_optimum(objective):
    if not registry.available("totientperms"):
        pytest.skip("totientperms not available")
    inst = a2a(12, 4)
    # comm_time: the exact model is the MILP (CP-SAT's integer flows are a restriction)
    method = "select-milp" if objective == "comm_time" else "select-cpsat"
    res = checked(inst, registry.solve(inst, method, objective=objective, candidates='coprime',
                                       time_limit=20))
    assert res.status is Status.OPTIMAL
    heur = registry.solve(inst, 'totientperms')
    m = evaluate(inst, heur.topology, heur.routing)
    value = {"diameter": m["diameter"], "comm_time": m["comm_time_s"],
             "total_hops": m["avg_hops"] * inst.total_bytes()}[objective]
    assert value >= res.objective * (1 - 1e-9)


def test_infeasible_candidate_set():
    # Z_6 has units 1 and 5 = -1: one ring only, but 4 ports need two
    inst = ring_traffic(6, 4)
    res = checked(inst, registry.solve(inst, "select-milp", objective='diameter'))
    assert res.status is Status.INFEASIBLE
    assert res.topology is None and res.objective is None


def test_odd_degree_uses_the_matching():
    inst = ring_traffic(10, 3)
    res = checked(inst, registry.solve(inst, "select-cpsat", objective='diameter', candidates='all'))
    assert res.status is Status.OPTIMAL
    assert 5 in res.topology.jumps
    assert (res.topology.degrees() == 3).all()
    # jumps {a, 5}: within two hops only 0, +-a, 5, +-2a, 5 +- a -- 8 < 10 residues; C_10(3, 5)
    # reaches 1 = 3 + 3 + 5 in three
    assert res.objective == 3 == res.bound


@pytest.mark.slow
def test_time_limited_run_returns_incumbent_and_bound():
    # n = 128, d = 8, all candidates: HiGHS cannot rule out diameter 3 within 2 s
    inst = ring_traffic(128, 8)
    res = checked(inst, registry.solve(inst, "select-milp", objective='diameter', candidates='all',
                                       time_limit=2))
    assert res.status is Status.FEASIBLE
    assert res.objective == 4
    assert res.bound is not None and res.bound < res.objective


@pytest.mark.parametrize("how", ["shortest", "ecmp", "coin-change"])
def test_hop_objectives_return_the_requested_routing(how):
    inst = a2a(9, 4)
    res = checked(inst, registry.solve(inst, "select-cpsat", objective='total_hops', candidates='all',
                                       routing=how))
    # every routing here is shortest-path: avg hops equals the optimal byte-hops / bytes
    assert res.info["avg_hops"] == pytest.approx(res.objective / inst.total_bytes())


def test_cpsat_time_limited_run_returns_incumbent_and_bound():
    # n = 128, d = 8, all candidates: CP-SAT needs ~20 s to rule out diameter 3
    inst = ring_traffic(128, 8)
    res = checked(inst, registry.solve(inst, "select-cpsat", objective='diameter', candidates='all',
                                       time_limit=1))
    assert res.status is Status.FEASIBLE
    assert res.objective == 4 and res.bound == 3


def _brute_force(inst, objective, mode="all"):
    """Best value over every feasible jump set, by enumeration."""
    from itertools import combinations

    n, d = inst.n, inst.degree
    W = select.residue_weights(inst)
    best = math.inf
    cands = select.candidate_jumps(n, d, mode)
    for k in range(1, d + 1):
        for js in combinations(cands, k):
            if sum(select.port_cost(n, p) for p in js) != d:
                continue
            dist = select.residue_distances(n, js)
            if not np.isfinite(dist).all():
                continue
            best = min(best, dist.max() if objective == "diameter" else float(np.dot(W, dist)))
    return best


@pytest.mark.parametrize(("n", "d", "seed"), [(9, 4, 0), (12, 4, 1), (14, 5, 2), (16, 6, 3)])
@pytest.mark.parametrize("objective", ["diameter", "total_hops"])
def test_matches_enumeration_on_random_traffic(n, d, seed, objective):
    rng = np.random.default_rng(seed)
    mp = [(i, j, float(rng.integers(1, 50)) * 1e5) for i in range(n) for j in range(n)
          if i != j and rng.random() < 0.5]
    inst = make_instance(n, d, B, mp=mp)
    want = _brute_force(inst, objective)
    for m in ("select-milp", "select-cpsat"):
        res = checked(inst, registry.solve(inst, m, objective=objective, candidates="all",
                                           time_limit=20))
        assert res.status is Status.OPTIMAL
        assert res.objective == pytest.approx(want, rel=1e-9)


@pytest.mark.parametrize("objective", ["diameter", "comm_time"])
def test_warm_start_from_totientperms(objective):
    if not registry.available("totientperms"):
        pytest.skip("totientperms not available")
    inst = a2a(16, 4)
    warm = registry.solve(inst, 'totientperms')
    assert select.start_jumps(inst, select.candidate_jumps(16, 4, "coprime"), warm)
    res = checked(inst, registry.solve(inst, "select-milp", objective=objective, warm_start=warm,
                                       time_limit=20))
    assert res.status is Status.OPTIMAL
    warm_value = warm.topology.diameter() if objective == "diameter" else warm.objective
    assert res.objective <= warm_value * (1 + 1e-9)


@pytest.mark.parametrize(("n", "d"), [(16, 4), (20, 6), (24, 4), (30, 6), (32, 8)])
@pytest.mark.parametrize("objective", ["diameter", "total_hops"])
def test_coprime_parity_cuts_match_enumeration(n, d, objective):
    # even n, odd jumps: the per-parity counting cuts are active
    assert select.parity_cuts(n, select.candidate_jumps(n, d, "coprime"))
    inst = a2a(n, d)
    want = _brute_force(inst, objective, "coprime")
    for m in ("select-milp", "select-cpsat"):
        res = checked(inst, registry.solve(inst, m, objective=objective, candidates="coprime",
                                           time_limit=20, symmetry=False))
        assert res.status is Status.OPTIMAL
        assert res.objective == pytest.approx(want, rel=1e-9)


# -- ring choice (extra["rings"] = "choose", the MILP default) -----------------------------------
def _circulant_heuristic_values(inst):
    """comm_time of every heuristic whose topology is a circulant with d/2 distinct jumps from
    select's default (coprime) candidate set -- topologies inside select's space."""
    cands = set(select.candidate_jumps(inst.n, inst.degree, "coprime"))
    values = {}
    for name, meth in registry.METHODS.items():
        if meth.kind != "heuristic" or not registry.available(name):
            continue
        try:
            heur = registry.solve(inst, name)
        except ValueError:  # e.g. torus / hypercube on a size they do not support
            continue
        topo = heur.topology
        if topo is None or not topo.jumps:
            continue
        js = {select.rep(inst.n, p) for p in topo.jumps}
        if len(js) != inst.degree // 2 or not js <= cands or not (
                select.Topology.circulant(inst.n, tuple(js)).links == topo.links).all():
            continue
        values[name] = evaluate(inst, topo, heur.routing)["comm_time_s"]
    assert "totientperms" in values
    return values


def _sparse_full_allreduce(n, d, seed):
    rng = np.random.default_rng(seed)
    mp = [(i, j, float(rng.integers(1, 50)) * 1e6) for i in range(n) for j in range(n)
          if i != j and rng.random() < 0.3]
    return make_instance(n, d, B, allreduce=[(range(n), float(rng.integers(1, 20)) * 1e8)], mp=mp)


def test_dlrm_n8_choose_beats_every_circulant_heuristic():
    if not registry.available("totientperms"):
        pytest.skip("totientperms not available")
    inst = generators.generate("dlrm", 8, 4, 100, seed=0, tables=8)
    res = checked(inst, registry.solve(inst, "select-milp"))
    assert res.status is Status.OPTIMAL and "rings=choose" in res.message
    assert res.bound == pytest.approx(res.objective, rel=1e-6)
    for name, value in _circulant_heuristic_values(inst).items():
        assert value >= res.objective * (1 - 1e-9), name
    # the chosen rings are candidate orders, shares sum to 1 and none is ~0
    rings = res.routing.rings
    assert rings and all(r.share > select_flow.SHARE_EPS for r in rings)
    assert sum(r.share for r in rings) == pytest.approx(1.0)
    cand = set(totient_orders(range(8)))
    assert {r.order for r in rings} <= cand
    given = checked(inst, registry.solve(inst, "select-milp", rings='given'))
    assert given.status is Status.OPTIMAL and "rings=given" in given.message
    assert {(r.order, r.share) for r in given.routing.rings} == {
        ((0, 1, 2, 3, 4, 5, 6, 7), 0.5), ((0, 7, 6, 5, 4, 3, 2, 1), 0.5)}
    # the default-ring optimum is attained by a point of the choose space
    assert res.objective <= given.objective * (1 + 1e-9)
    # here choosing reaches the ideal-switch time, which the given rings do not
    ideal = res.objective
    assert given.objective > ideal * 1.2


@pytest.mark.parametrize(("n", "d", "seed"), [(9, 4, 0), (10, 4, 1), (11, 4, 2)])
def test_random_sparse_with_full_allreduce_choose_is_optimal(n, d, seed):
    if not registry.available("totientperms"):
        pytest.skip("totientperms not available")
    inst = _sparse_full_allreduce(n, d, seed)
    res = checked(inst, registry.solve(inst, "select-milp", time_limit=20))
    assert res.status is Status.OPTIMAL
    assert f"sources={n}" in res.message  # random MP: not rotation invariant
    for name, value in _circulant_heuristic_values(inst).items():
        assert value >= res.objective * (1 - 1e-9), name
    given = checked(inst, registry.solve(inst, "select-milp", time_limit=20, rings='given'))
    assert given.status is Status.OPTIMAL
    assert res.objective <= given.objective * (1 + 1e-9)


def test_choose_rotation_invariant_fast_path_is_exact():
    # all-to-all + AllReduce over everybody: every candidate ring is circulant, one source
    n, d = 9, 4
    inst = make_instance(n, d, B, allreduce=[(range(n), 4e8)],
                         mp=[(i, j, S) for i in range(n) for j in range(n) if i != j])
    res = checked(inst, registry.solve(inst, "select-milp", candidates='all'))
    assert res.status is Status.OPTIMAL and "sources=1" in res.message
    # the same model over every source gives the same optimum
    rings, chosen = select_flow.ring_space(inst, "choose")
    V = select._exact.volume_unit(inst)
    w = select._exact.demand_matrix(inst, rings) / V
    cands = select.candidate_jumps(n, d, "all")
    full = [(g, vol / V, orders) for g, vol, orders in chosen]
    lam = {}
    for sym, sources in ((True, [0]), (False, list(range(n)))):
        prob, *_ = select_flow.build_flow_milp(n, d, True, cands, w, sources, sym, full)
        out = select.solve_pulp(prob, registry.get("select-milp").options(), None)
        assert out.status is Status.OPTIMAL
        lam[sym] = out.objective
    assert lam[True] == pytest.approx(lam[False], rel=1e-6)
    assert res.objective == pytest.approx(select._exact.seconds_per_unit(inst) / lam[True],
                                          rel=1e-5)


def test_sub_cluster_allreduce_uses_per_source_model():
    # a group that is not the whole cluster: its candidate rings are not circulant
    inst = make_instance(8, 4, B, allreduce=[([0, 2, 4, 6], 1e8)],
                         mp=[(i, (i + 1) % 8, S) for i in range(8)])
    assert not select_flow.choice_symmetric(inst, select_flow.ring_space(inst, "choose")[1])
    res = checked(inst, registry.solve(inst, "select-milp", candidates='all'))
    assert res.status is Status.OPTIMAL and "sources=8" in res.message
    given = checked(inst, registry.solve(inst, "select-milp", candidates='all', rings='given'))
    assert res.objective <= given.objective * (1 + 1e-9)


def test_ring_mode_errors():
    inst = make_instance(8, 4, B, allreduce=[(range(8), 1e8)])
    with pytest.raises(ValueError, match="rings"):
        registry.solve(inst, "select-milp", rings='bogus')
    with pytest.raises(ValueError, match="rings"):
        registry.solve(inst, "select-cpsat", rings='choose')


def test_cpsat_flow_model_long_paths_are_not_infeasible():
    # n = 11, d = 2: the only circulant is the ring; in the symmetric reduction an arc type
    # carries (n^2 - 1)/8 = 15 demand units of source 0, more than its 10 units in total. The
    # load variable's domain once stopped at the total, making the model infeasible.
    inst = generators.generate("uniform", n=11, degree=2, gbps=100, bytes=1e7)
    ring = 15 * 1e7 / (100 * 1.25e8)  # (n^2-1)/8 demands of 1e7 bytes on one 100 Gbps arc
    res = registry.solve(inst, "select-cpsat", time_limit=30, candidates='all')
    assert res.scope_status == "optimal"
    assert res.objective == pytest.approx(ring, rel=1e-6)


def test_cpsat_integer_flows_are_not_claimed_optimal_above_the_true_optimum():
    """Regression (issue 8, case 2): on uniform traffic at n = 23, d = 4 select-cpsat's
    integer-flow model said "optimal" at 0.0101333 s with bound = objective, while select-milp
    proves 0.01008 s. Integer flows are a restriction of fractional routing: the CP-SAT result
    is feasible, its optimality and bound are scoped to that model, and no table lets its bound
    cover another method's solution."""
    inst = generators.generate("uniform", n=23, degree=4, gbps=100, bytes=1e7)
    milp = checked(inst, registry.solve(inst, "select-milp", time_limit=60))
    cp = checked(inst, registry.solve(inst, "select-cpsat", time_limit=60))
    assert milp.status is Status.OPTIMAL
    assert milp.objective == pytest.approx(0.01008, rel=1e-4)
    assert cp.objective == pytest.approx(0.0101333, rel=1e-5)  # the integer-flow optimum
    assert cp.status is Status.FEASIBLE and cp.scope.restricted
    assert "integer flows" in cp.scope.describe()
    from topoopt_milp.core.scope import Features

    assert not cp.scope.covers(Features.of(inst, milp.topology, milp.routing))


def test_totient_order_count_counts_without_building():
    from topoopt_milp.core.circulant import totient_order_count, totient_orders

    for k in (1, 2, 3, 4, 6, 8, 12, 32, 97):
        assert totient_order_count(k) == len(totient_orders(range(k)))
