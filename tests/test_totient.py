"""TotientPerms: the candidate and SelectPermutations rule, its quirk fixes, and instances."""

from math import gcd

import numpy as np
import pytest

from topoopt_milp import registry
from topoopt_milp.core.check import check_solution
from topoopt_milp.core.evaluate import evaluate, ideal_switch_time
from topoopt_milp.core.instance import make_instance
from topoopt_milp.core.result import Status, finite_json, solution_dict
from topoopt_milp.core.topology import Topology
from topoopt_milp.methods.heuristics.totient import (
    allreduce_topology,
    candidates,
    select_permutations,
    totient_jumps,
)

B1 = 8e-9  # link_gbps giving 1 byte/s, so times equal bytes


def phi(g):
    return sum(1 for m in range(1, g + 1) if gcd(m, g) == 1)


def assert_valid(inst, res):
    metrics = evaluate(inst, res.topology, res.routing)
    problems = check_solution(inst.to_dict(), finite_json(solution_dict(res, inst, metrics)))
    assert problems == []


# -- candidates and the selection rule ------------------------------------------------------------
def test_candidates_by_hand():
    assert candidates(12, 4) == [3, 9]
    assert candidates(8, 8) == [1, 3, 5, 7]
    assert candidates(12, 6) == [2, 10]
    assert candidates(12, 3) == [4, 8]


@pytest.mark.parametrize("n,g", [(128, 128), (96, 12), (60, 15), (30, 30), (64, 2)])
def test_candidate_count_is_totient(n, g):
    c = candidates(n, g)
    assert len(c) == phi(g)
    assert all(p % (n // g) == 0 and gcd(p // (n // g), g) == 1 for p in c)


def test_candidates_reject_bad_group_sizes():
    with pytest.raises(ValueError, match="g:"):
        candidates(12, 5)
    with pytest.raises(ValueError, match="g:"):
        candidates(12, 1)


def test_n128_d8_is_the_artifacts_selection():
    assert totient_jumps(128, 8) == (1, 5, 13, 39)
    assert totient_jumps(128, 8, faithful=True) == (1, 5, 13, 39)
    # folding the list to p <= n/2 would give another selection: the test discriminates
    folded = [p for p in candidates(128, 128) if p <= 64]
    assert select_permutations(folded, 4, n=128) == [1, 3, 9, 23]


def test_faithful_walk_is_the_artifacts_float_product():
    # ratio = 25^(1/4) = sqrt 5: x_2 = 5 exactly, but the artifact's product x_1 * ratio is
    # 5.000000000000001 and its exact lower_bound skips 5 for 7
    assert totient_jumps(26, 8, faithful=True) == (1, 3, 7, 15)
    assert totient_jumps(26, 8) == (1, 3, 5, 15)  # default: the rule in exact arithmetic
    # n = 37, d = 16: x_4 = 36^(1/2) = 6; the product overshoots (7), pow(ratio, 4) does not
    assert totient_jumps(37, 16, faithful=True) == (1, 2, 3, 4, 7, 10, 15, 24)
    assert totient_jumps(37, 16) == (1, 2, 3, 4, 6, 10, 15, 24)
    assert totient_jumps(50, 8, faithful=True) == (1, 3, 9, 19)
    assert totient_jumps(50, 8) == (1, 3, 7, 19)


def test_faithful_whole_cluster_allreduce_uses_both_directions():
    # n = 16, d = 4, S = 1 GB at 100 Gbps: the artifact sends 1/(2m) of 2 (k-1)/k S along
    # each of +-p for both jumps, i.e. 1.875e9 / 4 bytes per arc = 0.0375 s (ideal switch)
    inst = make_instance(16, 4, 100.0, allreduce=[(range(16), 1e9)])
    default = registry.solve(inst, "totientperms")
    faithful = registry.solve(inst, "totientperms", faithful=True)
    assert faithful.topology.jumps == default.topology.jumps == (1, 5)
    assert default.objective == pytest.approx(0.0375)
    assert faithful.objective == pytest.approx(0.0375)
    assert faithful.objective == pytest.approx(ideal_switch_time(inst))
    assert len(faithful.routing.rings) == 4 and {r.share for r in faithful.routing.rings} == {0.25}
    assert_valid(inst, faithful)


def test_single_ring_takes_the_smallest_candidate():
    assert select_permutations([3, 9], 1) == [3]
    assert totient_jumps(10, 2) == (1,)


def _check_rule(cands, m, chosen, n):
    """Every pick is the smallest admissible candidate >= x_t, or (past the list) a fix."""
    ratio = (cands[-1] / cands[0]) ** (1 / m) if m > 1 else 1.0
    picked = []
    for t, p in enumerate(chosen):
        x = cands[0] * ratio**t
        admissible = [c for c in cands if c not in picked and (n - c) % n not in picked]
        above = [c for c in admissible if c >= x * (1 - 1e-9)]
        if above:
            assert p == above[0], (t, x, p, above[:3])
        elif admissible:
            assert p == admissible[-1]
        else:
            assert p in picked  # parallel ring
        picked.append(p)


@pytest.mark.parametrize(
    "n,d",
    [(n, d) for n in (8, 9, 12, 16, 20, 24, 30, 32, 36, 48, 60, 64, 100, 128, 256)
     for d in (2, 4, 6, 8, 10, 12) if d < n],
)
def test_selection_follows_the_rule(n, d):
    cands = candidates(n, n)
    jumps = totient_jumps(n, d)
    assert len(jumps) == d // 2
    _check_rule(cands, d // 2, list(jumps), n)
    distinct = set(jumps)
    if len({min(c, n - c) for c in cands}) >= d // 2:
        # enough distinct rings: no jump repeats and no +-p pair
        assert len(distinct) == d // 2
        assert not any((n - p) % n in distinct for p in distinct if 2 * p != n)
    topo = Topology.circulant(n, jumps)
    assert (topo.degrees() == d).all()
    assert topo.is_connected()  # jump candidates are coprime to n: every ring is Hamiltonian


@pytest.mark.parametrize("n,g", [(24, 12), (32, 8), (60, 20), (128, 32)])
def test_selection_on_group_cosets(n, g):
    cands = candidates(n, g)
    for m in (1, 2, 3):
        if m > len(cands) // 2:
            continue
        chosen = select_permutations(cands, m)
        _check_rule(cands, m, chosen, n)
        assert all(c in cands for c in chosen)


def test_plus_minus_quirk_fixed_and_kept_by_faithful():
    # n = 8, 3 rings: x = 1, 1.91, 3.66 -> the artifact takes 5 = -3 mod 8 (same ring as 3)
    assert select_permutations([1, 3, 5, 7], 3, faithful=True) == [1, 3, 5]
    fixed = select_permutations([1, 3, 5, 7], 3)
    assert fixed[:2] == [1, 3] and fixed[2] in (1, 3)  # only 2 distinct rings exist: repeat


def test_running_past_the_list():
    with pytest.raises(ValueError, match="degree"):
        select_permutations([1, 3], 3, faithful=True)
    assert select_permutations([1, 3], 3, n=4) == [1, 1, 1]  # 3 = -1 mod 4: one ring, thrice
    # fixed: past the end takes the largest admissible candidate below x
    cands = candidates(30, 30)  # 1 7 11 13 17 19 23 29
    assert select_permutations(cands, 4) == [1, 7, 11, 13]


def test_odd_degree():
    assert totient_jumps(16, 5) == (1, 5, 8)  # two rings + the n/2 matching
    assert (Topology.circulant(16, totient_jumps(16, 5)).degrees() == 5).all()
    with pytest.raises(ValueError, match="degree"):
        totient_jumps(16, 5, faithful=True)


# -- instances --------------------------------------------------------------------------------------
def test_whole_cluster_allreduce_by_hand():
    # n = 8, d = 4: jumps {1, 3}, each ring used in both directions: every ring edge carries
    # a quarter of 2*7/8*S, i.e. 0.4375 S bytes -- exactly the ideal switch time 1.75 S / (4 B).
    s = 1000.0
    inst = make_instance(8, 4, B1, allreduce=[(range(8), s)])
    res = registry.solve(inst, 'totientperms')
    assert res.status is Status.FEASIBLE and res.bound is None
    assert res.topology.jumps == (1, 3)
    assert [r.order for r in res.routing.rings] == [
        (0, 1, 2, 3, 4, 5, 6, 7), (0, 7, 6, 5, 4, 3, 2, 1),
        (0, 3, 6, 1, 4, 7, 2, 5), (0, 5, 2, 7, 4, 1, 6, 3)]
    assert [r.share for r in res.routing.rings] == [0.25] * 4
    assert res.objective == pytest.approx(0.4375 * s)
    assert res.objective == pytest.approx(ideal_switch_time(inst))
    faithful = registry.solve(inst, "totientperms", faithful=True)  # the artifact also uses +-p
    assert faithful.routing.rings == res.routing.rings
    assert faithful.objective == pytest.approx(res.objective)
    assert res.method == "totientperms"
    assert res.params == registry.get("totientperms").options().as_params()
    assert_valid(inst, res)


def test_coset_groups_are_circulant_with_connectivity_ring():
    n = 24
    groups = [(range(s, n, 3), 1e6) for s in range(3)]  # cosets of size 8, step 3
    inst = make_instance(n, 6, B1, allreduce=groups)
    res = registry.solve(inst, 'totientperms')
    # ring jump 1 takes 2 ports, the groups get 4: local jumps {1, 3} -> global {3, 9}
    assert res.topology.jumps == (1, 3, 9)
    assert (res.topology.links == Topology.circulant(n, (1, 3, 9)).links).all()
    for r in res.routing.rings:
        assert sorted(r.order) == list(range(r.group, n, 3))
    assert_valid(inst, res)


def test_arbitrary_group_uses_sorted_members():
    inst = make_instance(10, 4, B1, allreduce=[([7, 2, 5, 0, 9], 1e6)], regular=False)
    L, rings, jumps = allreduce_topology(inst, 4)
    # +-1 ring (2 ports) + one local ring jump 1 on sorted members 0 2 5 7 9
    assert rings[0].order == (0, 2, 5, 7, 9)
    for a, b in [(0, 2), (2, 5), (5, 7), (7, 9), (9, 0)]:
        assert L[a, b] >= 1
    assert L.sum(axis=1).max() <= 4


@pytest.mark.parametrize("seed", range(30))
def test_random_groups_never_exceed_the_budget(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.choice([8, 12, 16, 20]))
    d = int(rng.choice([2, 3, 4, 6]))
    groups = []
    for _ in range(int(rng.integers(1, 4))):
        k = int(rng.integers(2, n + 1))
        groups.append((rng.choice(n, size=k, replace=False).tolist(), float(rng.uniform(1, 10))))
    mp = [(int(a), int(b), 1.0) for a, b in rng.integers(n, size=(5, 2)) if a != b]
    regular = bool(n * d % 2 == 0 and rng.random() < 0.7)
    inst = make_instance(n, d, B1, allreduce=groups, mp=mp, regular=regular)
    res = registry.solve(inst, 'totientperms', seed=seed)
    deg = res.topology.degrees()
    assert deg.max() <= d
    if regular:
        assert (deg == d).all()
    assert_valid(inst, res)


def test_overlapping_groups_split_ports_by_volume():
    # equal ring-edge volumes (2*7/8*S_a = 2*3/4*S_b): each group gets half of 4 ports
    s_a = 600.0
    s_b = s_a * (7 / 8) / (3 / 4)
    inst = make_instance(8, 4, B1, allreduce=[(range(8), s_a), ([3, 0, 2, 1], s_b)])
    L, rings, jumps = allreduce_topology(inst, 4)
    assert [r.order for r in rings] == [
        tuple(range(8)), (0, 7, 6, 5, 4, 3, 2, 1), (0, 1, 2, 3), (0, 3, 2, 1)]
    assert list(L.sum(axis=1)) == [4, 4, 4, 4, 2, 2, 2, 2]
    assert L[0, 1] == 2 and L[3, 0] == 1 and L[3, 4] == 1
    res = registry.solve(inst, 'totientperms')  # regular: the free ports of 4..7 are filled
    assert (res.topology.degrees() == 4).all()
    assert_valid(inst, res)


def test_only_mp_traffic_gives_the_plain_circulant():
    inst = make_instance(16, 4, B1, mp=[(0, 9, 5.0), (3, 4, 1.0)])
    res = registry.solve(inst, 'totientperms')
    assert res.topology.jumps == totient_jumps(16, 4)
    assert_valid(inst, res)


@pytest.mark.parametrize("routing", ["shortest", "ecmp", "coin-change"])
def test_routing_option(routing):
    inst = make_instance(12, 4, B1, allreduce=[(range(12), 100.0)], mp=[(0, 6, 10.0)])
    res = registry.solve(inst, 'totientperms', routing=routing)
    assert res.params["routing"] == routing
    assert_valid(inst, res)


def test_faithful_odd_degree_is_a_value_error():
    inst = make_instance(8, 3, B1, allreduce=[(range(8), 1.0)])
    with pytest.raises(ValueError, match="degree"):
        registry.solve(inst, 'totientperms', faithful=True)
    assert_valid(inst, registry.solve(inst, 'totientperms'))


def test_lp_routing_keeps_rings_and_does_not_lose():
    inst = make_instance(8, 4, B1, allreduce=[(range(8), 100.0)], mp=[(0, 5, 30.0), (2, 6, 10.0)])
    base = registry.solve(inst, 'totientperms')
    lp = registry.solve(inst, 'totientperms', routing='lp', time_limit=30)
    assert lp.routing.rings == base.routing.rings
    assert lp.objective <= base.objective * (1 + 1e-6)
    assert_valid(inst, lp)
