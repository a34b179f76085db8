"""alloc-search with ``rings = tours``: tours follow the topology's links, the TotientPerms
orders stay among the candidates, and the search's result is checked, never worse than its
best start, and labelled with its ring scope."""

from __future__ import annotations

import numpy as np
from helpers import checked

from topoopt_milp import registry
from topoopt_milp.core.instance import make_instance
from topoopt_milp.core.topology import Topology
from topoopt_milp.methods.alloc_search import tours
from topoopt_milp.methods.formulations import ring_lp


def test_tour_of_a_ring_topology_is_its_hamiltonian_cycle():
    n = 12
    L = Topology.circulant(n, [1, 5]).links  # 4-regular; the +-1 ring is one Hamiltonian cycle
    dist = tours.hop_distances(L)
    members = list(np.random.default_rng(0).permutation(n))
    o = tours.tour(members, np.where(np.isfinite(dist), dist, 1e6), np.random.default_rng(1))
    assert sorted(o) == list(range(n))
    assert tours.tour_hops(dist, o) == n  # every successor a neighbour


def test_tour_candidates_keep_totientperms_orders_and_add_neighbour_tours():
    n = 12
    inst = make_instance(n, 4, 100.0, allreduce=[(range(n), 1e8), (range(0, n, 3), 1e8)])
    L = Topology.circulant(n, [1, 5]).links
    base = ring_lp.candidate_orders(inst)
    cands = tours.tour_candidates(inst, L, None)
    dist = tours.hop_distances(L)
    for g, orders in base.items():
        assert cands[g][: len(orders)] == orders
        extra = cands[g][len(orders):]
        for o in extra:
            assert sorted(o) == sorted(inst.allreduce[g].members) and o[0] == min(o)
            # never longer than the best TotientPerms order on this topology
            assert tours.tour_hops(dist, o) <= min(tours.tour_hops(dist, b) for b in orders)
    assert tours.extra_orders(cands, inst) == sum(len(cands[g]) - len(base[g]) for g in base)


def test_search_with_tours_is_checked_and_scoped():
    rng = np.random.default_rng(3)
    n = 12
    mp = [(i, (i + 1) % n, float(rng.uniform(1e7, 1e8))) for i in range(n)]
    # a group whose TotientPerms orders do not follow a circulant's links
    inst = make_instance(n, 4, 100.0, mp=mp, allreduce=[([0, 1, 4, 6, 7, 9, 10, 11], 4e8)])
    res = registry.solve(inst, "alloc-search", time_limit=4, rings="tours")
    checked(inst, res)
    assert (res.topology.degrees() == inst.degree).all()
    assert any(s["kind"] == "tours" for s in res.info["trajectory"])
    inside = ring_lp.in_ring_space(inst, res.routing.rings)
    assert res.info["ring_space"].startswith("alloc-milp" if inside else "any ring order")
    # the tours search starts where the plain one does and only adds ring orders
    start = min(s["routed_s"] for s in res.info["starts"] if s["routed_s"] is not None)
    assert res.objective <= start * (1 + 1e-9)


def test_warm_start_keeps_its_own_tours():
    # a tours solution as warm start: re-routed with its own ring orders among the
    # candidates, its start is never worse than itself (measured without them: 0.02862 s
    # from a warm start of 0.02540 s on this instance; ncf-n32-d4: 0.0114853 from 0.0109415)
    from test_alloc_search import mixed

    inst = mixed(12, 4, 0)
    # a fixed number of re-routings (not a time limit): the same solution on any machine
    a = registry.solve(inst, "alloc-search", max_iterations=40, rings="tours")
    assert "outside" in a.info["ring_space"]  # its rings are not all TotientPerms orders
    b = registry.solve(inst, "alloc-search", time_limit=3, rings="tours", warm_start=a, seed=1)
    checked(inst, b)
    warm = [s["objective_s"] for s in b.info["trajectory"] if s["kind"].startswith("start:warm")]
    assert warm and warm[0] <= a.objective * (1 + 1e-6)
    assert b.objective <= a.objective * (1 + 1e-6)


def test_group_cycles_only_for_a_ring_plus_a_matching():
    from topoopt_milp.methods.alloc_search.tours import group_cycles
    from topoopt_milp.methods.heuristics.group_split import pattern

    members = [3, 5, 7, 9, 11, 13, 15, 17]
    L = np.zeros((20, 20), dtype=np.int64)
    L[np.ix_(members, members)] = pattern(8, 3, 4)  # the Wagner graph: 5 cycles
    cycles = group_cycles(members, L, 8)
    assert len(cycles) == 5
    for o in cycles:
        assert sorted(o) == members and all(L[a, b] for a, b in zip(o, o[1:] + o[:1]))
    L[np.ix_(members, members)] = pattern(8, 4)  # every member two ways round: tours do
    assert group_cycles(members, L, 8) == []


def test_re_routings_keep_the_current_rings():
    # the best start here is group-split's, whose rings are cycles of its link patterns,
    # neither TotientPerms orders nor tours: the tours step, every swap and the polish offer
    # the current (best) solution's ring orders too, so re-routing its own topology is never
    # worse than it. Without them the tours step gave 0.060251 s from a start of 0.051474 s
    # and no swap could be accepted (mixed-n32-d4-g4-mp15, 90 s: 0.071613 -> 0.070229 s)
    from pathlib import Path

    from topoopt_milp.core.instance import Instance

    inst = Instance.load(Path(__file__).parents[1] / "instances/mixed/mixed-n16-d4-g4-mp05.json")
    res = registry.solve(inst, "alloc-search", max_iterations=3, rings="tours")
    checked(inst, res)
    traj = res.info["trajectory"]
    start = min(s["objective_s"] for s in traj
                if s["kind"].startswith("start") and s["objective_s"] is not None)
    tours_step = [s["objective_s"] for s in traj if s["kind"] == "tours"]
    assert tours_step and tours_step[0] <= start * (1 + 1e-6)
    assert [s for s in traj if s["kind"].startswith("swap")]
    assert all(s["objective_s"] <= start * (1 + 1e-6) for s in traj if s["kind"] == "polish")
    assert res.objective <= start * (1 + 1e-9)
