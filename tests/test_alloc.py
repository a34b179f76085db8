"""alloc family: integer link allocation with routing, against hand-computed optima."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import checked

from topoopt_milp import registry
from topoopt_milp.core.instance import make_instance
from topoopt_milp.core.result import Status
from topoopt_milp.methods.formulations import alloc

S = 1.25e8  # bytes: one second on a 1 Gbps link
HEURISTICS = ("topologyfinder", "totientperms", "expander", "demand-greedy")




def one_pair():
    """n = 4, d = 2, the only demand 0 -> 1: both of node 0's ports must carry it, as a double
    link or as C4 (direct arc plus the 3-hop path): T = S / 2B either way."""
    return make_instance(4, 2, 1.0, mp=[(0, 1, S)])


def a2a4():
    """n = 4, d = 2, all-to-all S: the only connected 2-regular multigraph is C4; a neighbour
    is 1 hop, the opposite node 2 hops over two paths, so arc load = S + S/2 + S/2 = 2S."""
    return make_instance(4, 2, 1.0, mp=[(i, j, S) for i in range(4) for j in range(4) if i != j])


def mixed8():
    """The n = 8, d = 4 mixed AllReduce + MP instance of the benchmark."""
    return make_instance(8, 4, 100.0, allreduce=[(range(8), 1e8)],
                         mp=[(0, 5, 3e7), (5, 0, 3e7), (2, 7, 1e7), (1, 6, 2e7)])


CASES = [(one_pair, 0.5), (a2a4, 2.0)]


@pytest.mark.parametrize(("make", "want"), CASES)
@pytest.mark.parametrize("solver", ["highs", "cbc"])
def test_milp_hand_optima(make, want, solver):
    inst = make()
    res = checked(inst, registry.solve(inst, "alloc-milp", solver=solver, time_limit=20))
    assert res.status is Status.OPTIMAL
    assert res.objective == pytest.approx(want, rel=1e-6)
    assert res.bound == pytest.approx(want, rel=1e-6)


@pytest.mark.parametrize(("make", "want"), CASES)
def test_cpsat_hand_optima(make, want):
    inst = make()
    res = checked(inst, registry.solve(inst, "alloc-cpsat", time_limit=20))
    # a restricted model (candidate paths): optimal within its own model, never "optimal"
    assert res.status is Status.FEASIBLE and res.scope_status == "optimal"
    assert res.objective == pytest.approx(want, rel=1e-9)
    assert res.bound == pytest.approx(want, rel=1e-9)
    assert res.scale is not None


def test_single_demand_uses_both_ports():
    # the double link and C4 tie at S / 2B (which one HiGHS returns depends on its start)
    inst = one_pair()
    res = checked(inst, registry.solve(inst, "alloc-milp"))
    assert res.status is Status.OPTIMAL
    assert res.objective == pytest.approx(0.5, rel=1e-6)
    assert res.topology.links[0].sum() == 2 and res.topology.links[0, 1] >= 1


def test_multiplicity_cap_is_respected():
    inst = one_pair()
    res = checked(inst, registry.solve(inst, "alloc-milp", max_multiplicity=1))
    # simple graph: C4, the demand 0 -> 1 splits over the direct link and the 3-hop path
    assert res.topology.links.max() == 1
    assert res.objective == pytest.approx(0.5, rel=1e-6)  # 1/2 direct, 1/2 around: S/2 per arc


# Heuristics pick their own ring orders (TotientPerms orders member[(i m) mod k] with shares);
# the "choose" ring mode optimises over exactly that space, so it is the fair optimum to beat.
CHOOSE = {"rings": "choose"}


def test_mixed_n8_proven_optimal_and_beats_heuristics():
    inst = mixed8()
    res = checked(inst, registry.solve(inst, "alloc-milp", time_limit=60, **CHOOSE))
    assert res.status is Status.OPTIMAL
    assert res.gap == pytest.approx(0.0, abs=1e-6)
    for name in HEURISTICS:
        if not registry.available(name):
            continue
        h = registry.solve(inst, name)
        if h.topology is None:
            continue
        assert h.objective >= res.objective * (1 - 1e-6), name
    # CBC proves the same optimum
    cbc = checked(inst, registry.solve(inst, "alloc-milp", solver='cbc', time_limit=60, **CHOOSE))
    assert cbc.status is Status.OPTIMAL
    assert cbc.objective == pytest.approx(res.objective, rel=1e-5)


def test_ring_choice_never_worse_than_given_rings():
    inst = mixed8()
    given = registry.solve(inst, "alloc-milp", time_limit=60)
    chosen = checked(inst, registry.solve(inst, "alloc-milp", time_limit=60, rings='choose'))
    assert chosen.status is Status.OPTIMAL
    assert chosen.objective <= given.objective * (1 + 1e-6)
    shares = sum(r.share for r in chosen.routing.rings)
    assert shares == pytest.approx(1.0)


@pytest.mark.parametrize("make", [a2a4, mixed8])
def test_heuristics_never_beat_the_optimum(make):
    inst = make()
    opt = registry.solve(inst, "alloc-milp", time_limit=60, **CHOOSE)
    assert opt.status is Status.OPTIMAL
    for name in HEURISTICS:
        if not registry.available(name):
            continue
        try:
            h = registry.solve(inst, name, seed=1)
        except ValueError:
            continue  # e.g. a baseline that does not apply to this n
        if h.topology is not None:
            assert h.objective >= opt.bound * (1 - 1e-6), name


def test_symmetry_breaking_keeps_the_optimum():
    inst = make_instance(6, 3, 100.0, mp=[(i, j, 1e6) for i in range(6) for j in range(6) if i != j])
    on = checked(inst, registry.solve(inst, "alloc-milp", time_limit=60))
    off = registry.solve(inst, "alloc-milp", time_limit=60, symmetry=False)
    assert on.status is off.status is Status.OPTIMAL
    assert on.objective == pytest.approx(off.objective, rel=1e-6)


def test_interchangeable_classes():
    D = np.ones((5, 5)) - np.eye(5)
    assert alloc.interchangeable_classes(D) == [[0, 1, 2, 3, 4]]
    assert alloc.symmetry_chain(D) == (0, [1, 2, 3, 4])
    ring = np.roll(np.eye(5), 1, axis=1)  # 0 -> 1 -> 2 -> 3 -> 4 -> 0: no transposition fixes it
    assert alloc.symmetry_chain(ring) is None
    D2 = np.zeros((4, 4))
    D2[0, 1] = D2[1, 0] = 1.0  # 2 and 3 are idle and interchangeable; so are 0 and 1
    assert alloc.interchangeable_classes(D2) == [[0, 1], [2, 3]]


def test_time_limited_run_returns_incumbent_and_bound():
    inst = make_instance(10, 4, 100.0, mp=[(i, j, 1e6) for i in range(10) for j in range(10) if i != j])
    res = checked(inst, registry.solve(inst, "alloc-milp", time_limit=1))
    assert res.status in (Status.FEASIBLE, Status.OPTIMAL)
    assert res.objective is not None and res.bound is not None
    assert res.bound <= res.objective
    if res.status is Status.FEASIBLE:
        assert res.gap > 0


def test_warm_start_from_a_solution():
    inst = mixed8()
    tf = registry.solve(inst, 'topologyfinder') if registry.available(
        "topologyfinder") else None
    if tf is None or tf.topology is None:
        pytest.skip("topologyfinder not available")
    res = checked(inst, registry.solve(inst, "alloc-milp", warm_start=tf, time_limit=60, **CHOOSE))
    assert res.status is Status.OPTIMAL
    assert res.objective <= tf.objective


def test_latency_term_is_added_and_not_claimed_optimal():
    inst = make_instance(4, 2, 1.0, mp=[(0, 1, S)], latency_us=10.0)
    res = checked(inst, registry.solve(inst, "alloc-milp"))
    # bandwidth term 0.5 s on the double link, plus one hop of 10 us
    assert res.objective == pytest.approx(0.5 + 10e-6, rel=1e-9)
    assert res.status is Status.FEASIBLE and "latency" in res.message
    assert res.bound <= res.objective


def test_cpsat_time_limited_run_returns_incumbent_and_bound():
    from topoopt_milp.workloads.generators import dlrm

    inst = dlrm(8, 4, seed=0)
    res = checked(inst, registry.solve(inst, "alloc-cpsat", time_limit=1, cpsat_splits=2,
                                       cpsat_paths='two_hop'))
    assert res.status is Status.FEASIBLE  # restricted: never "optimal"
    assert res.bound is not None and res.bound <= res.objective
    # the limit covers warm start and model building too: either CP-SAT's own incumbent (with
    # its integer scale) or, if its time ran out first, the warm start
    assert res.scale is not None or "warm-start incumbent" in res.message


@pytest.mark.parametrize("method", ["alloc-cpsat", "joint-milp"])
def test_never_nothing_on_a_tiny_time_limit(method):
    # with 10 ms the solver may stop before any solution: the warm start is returned instead
    from topoopt_milp.workloads.generators import dlrm

    if not registry.available("topologyfinder"):
        pytest.skip("no warm start available")
    inst = dlrm(8, 4, seed=0)
    knobs = {"cpsat_splits": 2, "cpsat_paths": "two_hop"} if method == "alloc-cpsat" else {}
    res = checked(inst, registry.solve(inst, method, time_limit=0.01, **knobs))
    assert res.status is Status.FEASIBLE
    assert res.objective is not None and res.topology is not None


@pytest.mark.slow
@pytest.mark.parametrize("rings", ["choose", "given"])
def test_neighbour_rows_keep_the_optimum(rings):
    """The neighbourhood counting rows (formulations/neighbour_rows.py) are valid: with and
    without them alloc-milp proves the same optimum (brute force is the plain MILP)."""
    rng = np.random.default_rng(0)
    mp = [(i, j, float(rng.uniform(1e7, 1e8))) for i in range(6) for j in range(6)
          if i != j and rng.random() < 0.33]
    inst = make_instance(6, 3, 100.0, mp=mp, allreduce=[(range(s, 6, 2), 4e8) for s in range(2)])
    plain = registry.solve(inst, "alloc-milp", time_limit=60, rings=rings, auto_warm_start=False)
    rows = checked(inst, registry.solve(inst, "alloc-milp", time_limit=60, rings=rings,
                                        neighbour_rows=True, auto_warm_start=False))
    assert plain.status is Status.OPTIMAL and rows.status is Status.OPTIMAL
    assert rows.objective == pytest.approx(plain.objective, rel=1e-6)
    assert rows.bound <= plain.objective * (1 + 1e-6)
