"""Lower bounds at scale: never above a proven optimum (alloc-milp, brute force) and never
below the analytic bounds they claim to strengthen."""

from __future__ import annotations

import numpy as np
import pytest
from test_alloc_benders import mixed, regular_multigraphs, sparse_mp

from topoopt_milp import registry
from topoopt_milp.core.evaluate import ideal_switch_time, moore_lower_bound
from topoopt_milp.core.instance import make_instance
from topoopt_milp.core.result import Status
from topoopt_milp.methods.alloc_benders import decomposition as alloc_benders
from topoopt_milp.methods.bounds import counting as bounds
from topoopt_milp.workloads.generators import dlrm, uniform


def random_instance(seed: int):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(5, 9))
    d = int(rng.choice([2, 3, 4])) if n % 2 == 0 else int(rng.choice([2, 4]))
    kind = seed % 4
    if kind == 0:
        groups = 2 if n % 2 == 0 else 1
        return mixed(n - n % groups, d, groups, float(rng.uniform(0.1, 0.6)), seed)
    if kind == 1:
        return sparse_mp(n, d, seed, regular=bool(seed % 3))
    if kind == 2:
        return dlrm(n, d, seed=seed, tables=int(rng.integers(1, n)))
    k = int(rng.integers(2, n))
    return make_instance(n, d, 100.0, allreduce=[(rng.choice(n, k, replace=False), 1e8)],
                         mp=[(i, (i + 1) % n, 3e7) for i in range(n)])


@pytest.mark.parametrize("seed", range(6))
def test_bounds_never_exceed_the_alloc_optimum(seed):
    inst = random_instance(seed)
    opt = registry.solve(inst, "alloc-milp", time_limit=120, rings='choose')
    assert opt.status is Status.OPTIMAL
    for name, value in bounds.all_bounds(inst).items():
        assert value <= opt.objective * (1 + 1e-6), (name, inst.name)


@pytest.mark.parametrize("seed", range(3))
def test_bounds_never_exceed_brute_force(seed):
    inst = mixed(6, 2, 2, 0.3 + 0.1 * seed, seed=seed)
    P = alloc_benders.problem_of(inst)
    B = P.demand_basis()
    best = max(alloc_benders.max_lambda(P, L, B).lam for L in regular_multigraphs(6, 2))
    for name, value in bounds.all_bounds(inst).items():
        assert value <= P.sec_per_unit / best * (1 + 1e-6), name


@pytest.mark.parametrize("make", [lambda: uniform(16, 4), lambda: dlrm(32, 4, seed=1),
                                  lambda: mixed(24, 4, 3, 0.3)])
def test_port_hop_bound_is_at_least_the_analytic_bounds(make):
    inst = make()
    base = max(ideal_switch_time(inst), moore_lower_bound(inst))
    for scope in bounds.SCOPES:
        assert bounds.port_hop_bound(inst, scope) >= base * (1 - 1e-9)
    # the TotientPerms ring space is a subset of all ring orders: its bound is at least as high
    assert bounds.port_hop_bound(inst, "totient") >= bounds.port_hop_bound(inst, "any") * (1 - 1e-9)


def test_port_hop_bound_sees_the_ring_ports():
    """Two-member groups: a node's whole ring volume goes to one successor, so with little
    capacity per link it must go two hops or eat parallel links -- above the Moore bound."""
    n = 8
    inst = make_instance(n, 4, 100.0, allreduce=[((i, i + 1), 4e8) for i in range(0, n, 2)],
                         mp=[(i, j, 1e7) for i in range(n) for j in range(n) if i != j])
    assert bounds.port_hop_bound(inst, "any") > moore_lower_bound(inst) * 1.01


def test_cut_bound_counts_ring_crossings():
    # one group {0..3} on n = 8, no MP: the half {0..3} is crossed by no ring, the set
    # {0, 1} is crossed at least once by every ring order
    inst = make_instance(8, 2, 100.0, allreduce=[(range(4), 1e8)])
    S = np.zeros(8, bool)
    S[[0, 1]] = True
    e = inst.allreduce[0].edge_bytes
    got = bounds.cut_bound(inst, "any", sets=[S])
    assert got == pytest.approx(e / (inst.link_bytes_per_s * 2 * 2))


def test_best_bound_respects_scope():
    inst = mixed(12, 4, 2, 0.35)
    name, value = bounds.best_bound(inst, "any")
    assert bounds.BOUNDS[name][1] == "any"
    assert bounds.best_bound(inst, "totient")[1] >= value
    with pytest.raises(ValueError, match="scope"):
        bounds.port_hop_bound(inst, "nope")


@pytest.mark.parametrize("make", [lambda: mixed(12, 4, 2, 0.35), lambda: dlrm(16, 4, seed=2),
                                  lambda: mixed(16, 4, 4, 0.3, seed=1)])
def test_any_scope_bounds_cover_rings_outside_totientperms(make):
    """The expander's nearest-neighbour tours are not TotientPerms orders: only the "any"
    bounds must hold for it, and they do."""
    from topoopt_milp import registry

    inst = make()
    res = registry.solve(inst, 'expander', seed=0, routing='lp')
    for name, (f, scope) in bounds.BOUNDS.items():
        if scope == "any":
            assert f(inst) <= res.objective * (1 + 1e-6), name


def test_master_bound_is_valid():
    inst = mixed(6, 4, 2, 0.35, seed=4)
    opt = registry.solve(inst, "alloc-milp", time_limit=60, rings='choose')
    assert opt.status is Status.OPTIMAL
    lb = alloc_benders.master_bound(inst, time_limit=5)
    assert ideal_switch_time(inst) * (1 - 1e-9) <= lb <= opt.objective * (1 + 1e-5)


# -- issue 20: lower-bounds keeps its time limit ---------------------------------------------
def test_lower_bounds_skips_what_does_not_fit_the_time_limit(monkeypatch):
    """A bound that would run 60 s (simulated) is ended in its child process at the time
    limit and reported as skipped; the bounds that ran agree with the in-process ones."""
    import time as _time

    from topoopt_milp.methods import lower_bounds

    inst = mixed(8, 4, 2, 0.35)
    plain = registry.solve(inst, "lower-bounds")
    assert "skipped" not in plain.info
    monkeypatch.setitem(lower_bounds.BOUNDS, "slow", (lambda i: _time.sleep(60) or 1.0, "any"))
    t0 = _time.perf_counter()
    res = registry.solve(inst, "lower-bounds", time_limit=3)
    assert _time.perf_counter() - t0 < 6
    # the slow bound is skipped; the neighbourhood MILPs after it may find no time left either
    assert res.info["skipped"][0] == "slow" and "skipped (time limit): slow" in res.message
    assert set(res.info["skipped"]) <= {"slow", "neighbourhood_any", "neighbourhood_totient",
                                        "gateway_any", "gateway_totient"}
    for name, value in res.info["bounds_s"].items():
        assert value == pytest.approx(plain.info["bounds_s"][name], rel=1e-12)
    assert res.bound == pytest.approx(max(res.info["bounds_s"].values()), rel=1e-12)
    assert res.bound <= plain.bound * (1 + 1e-12)
