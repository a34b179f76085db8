"""joint family: links + routing + AllReduce ring orders, against hand-computed optima."""

from __future__ import annotations

import pytest
from helpers import checked

from topoopt_milp import registry
from topoopt_milp.core.instance import make_instance
from topoopt_milp.core.result import Status

S = 1.25e8  # bytes: one second on a 1 Gbps link




def ring3():
    """n = 3, d = 2: the triangle, ring edges e = 4S/3.

    One ring (R = 1): sending a fraction a of each ring edge the long way (2 hops, over the
    reverse arcs, which carry a from two commodities) balances 1 - a = 2a at a = 1/3: load
    2/3 e = 8S/9; unsplittable: e = 4S/3. Two rings (R = 2): the ring and its reverse at half
    share each put e/2 = 2S/3 on every arc -- the ideal-switch time e / (d B), so optimal."""
    return make_instance(3, 2, 1.0, allreduce=[(range(3), S)])


def ring4():
    """n = 4, d = 2: C4 is the only connected 2-regular multigraph, ring edges e = 3S/2.

    R = 1: a fraction a sent 3 hops the other way, 1 - a = 3a at a = 1/4: load 3/4 e = 9S/8;
    unsplittable e = 3S/2. R = 2: both directions at half share, e/2 = 3S/4 = ideal switch."""
    return make_instance(4, 2, 1.0, allreduce=[(range(4), S)])


@pytest.mark.parametrize(("make", "R", "frac", "unsplit"), [
    (ring3, 1, 8 / 9, 4 / 3), (ring4, 1, 9 / 8, 1.5), (ring3, 2, 2 / 3, 2 / 3), (ring4, 2, 0.75, 0.75)])
def test_hand_optima_highs_and_cpsat(make, R, frac, unsplit):
    inst = make()
    extra = {"rings_per_group": R, "auto_warm_start": False}
    res = checked(inst, registry.solve(inst, "joint-milp", time_limit=30, **extra))
    assert res.status is Status.OPTIMAL
    assert res.objective == pytest.approx(frac, rel=1e-6)
    assert res.bound == pytest.approx(frac, rel=1e-6)
    cp = checked(inst, registry.solve(inst, "joint-cpsat", time_limit=30, **extra))
    # restricted (equal shares, candidate paths): proven within its model only
    assert cp.status is Status.FEASIBLE and cp.scope_status == "optimal"
    assert cp.objective == pytest.approx(unsplit, rel=1e-9)
    # the unsplittable optimum can never beat the fractional one
    assert cp.objective >= frac * (1 - 1e-9)


@pytest.mark.xfail(strict=True, reason=(
    "CBC 2.10 (bundled with PuLP 3.3) stops at the root node after its feasibility pump and "
    "claims 'Optimal' at lambda = 2/3 (T = 1.125 s) on this model, although the LP bound is 1 "
    "and HiGHS, CP-SAT and the fixed-integer CBC run all reach lambda = 1 (T = 0.75 s)"))
def test_cbc_joint_optimality_claim():
    inst = ring4()
    res = registry.solve(inst, "joint-milp", solver='cbc', time_limit=30, rings_per_group=2,
                         auto_warm_start=False, symmetry=False)
    assert res.objective == pytest.approx(0.75, rel=1e-6)


def test_rings_are_hamiltonian_cycles_of_their_groups():
    inst = make_instance(5, 2, 1.0, allreduce=[(range(5), S), ([0, 2, 4], S / 2)],
                         mp=[(1, 3, S / 4)])
    for res in (registry.solve(inst, m, time_limit=30, rings_per_group=1)
                for m in ("joint-milp", "joint-cpsat")):
        checked(inst, res)
        assert Status.OPTIMAL in (res.status, res.scope_status)
        by_group = {r.group: r.order for r in res.routing.rings}
        assert sorted(by_group[0]) == [0, 1, 2, 3, 4]
        assert sorted(by_group[1]) == [0, 2, 4]


@pytest.mark.slow
def test_choosing_rings_never_worse_than_given_rings():
    # the default rings (ascending members and the reverse, or one ring, depending on
    # default_rings) lie in the space of two free rings per group
    inst = make_instance(5, 2, 1.0, allreduce=[(range(5), S)],
                         mp=[(0, 2, S), (2, 0, S), (1, 3, S / 2)], regular=True)
    given = checked(inst, registry.solve(inst, "alloc-milp", time_limit=30))
    free = checked(inst, registry.solve(inst, "joint-milp", time_limit=30))
    assert given.status is free.status is Status.OPTIMAL
    assert free.objective <= given.objective * (1 + 1e-6)
    cp = checked(inst, registry.solve(inst, "joint-cpsat", time_limit=30))
    assert cp.objective >= free.bound * (1 - 1e-6)


def test_heuristics_never_beat_the_joint_optimum():
    inst = make_instance(6, 2, 1.0, allreduce=[(range(6), S)], mp=[(0, 3, S / 2), (3, 0, S / 2)])
    opt = checked(inst, registry.solve(inst, "joint-milp", time_limit=60))
    assert opt.status is Status.OPTIMAL
    for name in ("totientperms", "topologyfinder", "expander"):
        if not registry.available(name):
            continue
        h = registry.solve(inst, name, seed=2)
        if h.topology is not None:
            assert h.objective >= opt.bound * (1 - 1e-6), name


def test_time_limited_run_returns_incumbent_and_bound():
    inst = make_instance(8, 4, 100.0, allreduce=[(range(8), 1e8)],
                         mp=[(0, 5, 3e7), (5, 0, 3e7), (2, 7, 1e7), (1, 6, 2e7)])
    res = checked(inst, registry.solve(inst, "joint-milp", time_limit=1))
    assert res.status in (Status.FEASIBLE, Status.OPTIMAL)
    assert res.objective is not None and res.bound is not None
    assert res.bound <= res.objective
    if res.status is Status.FEASIBLE:
        assert res.gap > 0


def test_restricted_cpsat_infeasibility_is_not_claimed():
    # with k = 1 (direct links only) node 0 needs links to 2, 3 and 4 for its MP demands but
    # has two ports, so the path-restricted model is infeasible -- which proves nothing about
    # the problem itself (the MILP solves it)
    inst = make_instance(6, 2, 1.0, allreduce=[(range(6), S)],
                         mp=[(0, 2, S), (0, 3, S), (0, 4, S)])
    extra = {"max_multiplicity": 1, "auto_warm_start": False}
    res = checked(inst, registry.solve(inst, "joint-cpsat", k_paths=1, time_limit=10, **extra))
    assert res.status is Status.NO_SOLUTION
    assert res.topology is None
    # with a warm start, that start is returned instead of nothing
    warm = registry.solve(inst, "joint-milp", time_limit=10, **extra)
    res = checked(inst, registry.solve(inst, "joint-cpsat", k_paths=1, time_limit=10, warm_start=warm,
                                       **extra))
    assert res.status is Status.FEASIBLE
    assert "restricted model" in res.message
    assert (res.topology.links == warm.topology.links).all()


@pytest.mark.parametrize(("make", "splits", "want"), [(ring3, 3, 8 / 9), (ring4, 4, 9 / 8)])
def test_cpsat_pieces_reach_the_fractional_optimum(make, splits, want):
    # the optimal splits are 1/3 (triangle) and 1/4 (C4): cut each commodity in that many pieces
    # and CP-SAT agrees with the MILP
    inst = make()
    res = checked(inst, registry.solve(inst, "joint-cpsat", time_limit=30, k_paths=8, cpsat_splits=splits,
                                       rings_per_group=1))
    assert res.scope_status == "optimal"
    assert res.objective == pytest.approx(want, rel=1e-9)
    assert res.bound == pytest.approx(want, rel=1e-9)
