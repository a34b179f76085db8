"""alloc-benders: agrees with alloc-milp and with brute force; checked solutions; honest bounds."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from helpers import checked

from topoopt_milp import registry
from topoopt_milp.core.instance import make_instance
from topoopt_milp.core.result import Status
from topoopt_milp.methods.alloc_benders import (
    decomposition as alloc_benders,
)
from topoopt_milp.methods.alloc_benders import (
    master as benders_master,
)

CHOOSE = {"rings": "choose"}




def mixed(n, d, groups, mp_frac, seed=0, regular=True):
    """Coset AllReduce groups ``{r, r + groups, ...}`` plus dense random MP carrying
    ``mp_frac`` of all bytes."""
    members = [list(range(r, n, groups)) for r in range(groups)]
    k = n // groups
    ar = groups * 2 * (k - 1) * 1e8
    rng = np.random.default_rng(seed)
    w = rng.uniform(0.5, 1.5, (n, n))
    np.fill_diagonal(w, 0)
    w *= mp_frac / (1 - mp_frac) * ar / w.sum()
    return make_instance(n, d, 100.0, allreduce=[(m, 1e8) for m in members],
                         mp=[(i, j, float(w[i, j])) for i in range(n) for j in range(n) if i != j],
                         regular=regular)


def sparse_mp(n, d, seed, regular=True):
    rng = np.random.default_rng(seed)
    pairs = rng.choice(n * n, size=2 * n, replace=False)
    mp = [(int(p // n), int(p % n), float(rng.uniform(1e6, 5e7))) for p in pairs
          if p // n != p % n]
    return make_instance(n, d, 100.0, mp=mp, allreduce=[(range(0, n, 2), 5e7)], regular=regular)


SMALL = [
    ("a2a-n5-d2", lambda: make_instance(5, 2, 1.0, mp=[(i, j, 1e8) for i in range(5)
                                                       for j in range(5) if i != j])),
    ("mixed-n6-d4", lambda: mixed(6, 4, 2, 0.35)),
    ("mixed-n6-d3-irregular", lambda: mixed(6, 3, 2, 0.35, regular=False)),
    ("sparse-n6-d2", lambda: sparse_mp(6, 2, 1)),
    ("sparse-n7-d2-irregular", lambda: sparse_mp(7, 2, 2, regular=False)),
]


@pytest.mark.parametrize(("name", "make"), SMALL, ids=[s[0] for s in SMALL])
def test_agrees_with_alloc_milp(name, make):
    inst = make()
    ref = registry.solve(inst, "alloc-milp", time_limit=60, **CHOOSE)
    assert ref.status is Status.OPTIMAL
    res = checked(inst, registry.solve(inst, 'alloc-benders', time_limit=60))
    assert res.status is Status.OPTIMAL, res.message
    assert res.objective == pytest.approx(ref.objective, rel=1e-5)
    assert res.bound <= ref.objective * (1 + 1e-5)


@pytest.mark.parametrize("extra", [{"hop_rows": True}, {"duals": "ipm", "cuts_per_round": 3}])
def test_variants_agree(extra):
    """The two-hop rows (default above n = 8) and interior-point duals keep the optimum."""
    inst = mixed(6, 4, 2, 0.35, seed=3)
    ref = registry.solve(inst, "alloc-milp", time_limit=60, **CHOOSE)
    res = checked(inst, registry.solve(inst, 'alloc-benders', time_limit=60, **extra))
    assert ref.status is res.status is Status.OPTIMAL
    assert res.objective == pytest.approx(ref.objective, rel=1e-5)


def test_beyond_two_hops_is_the_moore_tail():
    inst = make_instance(12, 2, 100.0, mp=[(0, t, 1e8) for t in range(1, 12)])
    P = alloc_benders.problem_of(inst)
    # d = 2: levels 1, 1, 2, 2, 3, 3, ...: the 11 equal demands pay (h - 2)^+ = 0,0,0,0,1,1,2,2,3,3,4
    assert benders_master.beyond_two_hops(P) == pytest.approx(16 * P.M[0, 1])


@pytest.mark.slow
@pytest.mark.parametrize("make", [lambda: mixed(8, 4, 2, 0.35),
                                  lambda: sparse_mp(8, 4, 3, regular=False)])
def test_agrees_with_alloc_milp_n8(make):
    inst = make()
    ref = registry.solve(inst, "alloc-milp", time_limit=300, **CHOOSE)
    res = checked(inst, registry.solve(inst, 'alloc-benders', time_limit=300))
    assert ref.status is res.status is Status.OPTIMAL
    assert res.objective == pytest.approx(ref.objective, rel=1e-5)


def regular_multigraphs(n: int, d: int):
    """Every symmetric integer matrix with zero diagonal and row sums ``d`` (brute force)."""
    pairs = list(itertools.combinations(range(n), 2))

    def rec(k, L, deg):
        if k == len(pairs):
            if (deg == d).all():
                yield L.copy()
            return
        i, j = pairs[k]
        for c in range(min(d - deg[i], d - deg[j]) + 1):
            L[i, j] = L[j, i] = c
            deg[i] += c
            deg[j] += c
            yield from rec(k + 1, L, deg)
            deg[i] -= c
            deg[j] -= c
        L[i, j] = L[j, i] = 0

    yield from rec(0, np.zeros((n, n), dtype=np.int64), np.zeros(n, dtype=np.int64))


@pytest.mark.parametrize("seed", [0, 1])
def test_matches_brute_force(seed):
    inst = mixed(6, 2, 2, 0.4, seed=seed)
    P = alloc_benders.problem_of(inst)
    B = P.demand_basis()
    best = max(alloc_benders.max_lambda(P, L, B).lam for L in regular_multigraphs(6, 2))
    res = checked(inst, registry.solve(inst, 'alloc-benders', time_limit=60))
    assert res.status is Status.OPTIMAL
    assert res.objective == pytest.approx(P.sec_per_unit / best, rel=1e-5)


def test_metric_cut_separates_and_is_tight():
    """The cut from lambda_max(x) holds at (x, lambda_max, tau) and is violated above it."""
    inst = mixed(6, 4, 2, 0.35)
    P = alloc_benders.problem_of(inst)
    B = P.demand_basis()
    lay = benders_master.Layout(P.n, P.num_tau)
    L = np.asarray(registry.solve(inst, 'totientperms').topology.links)
    ev = alloc_benders.max_lambda(P, L, B)
    idx, val = benders_master.metric_cut(P, lay, B, ev.dist)
    v = benders_master.master_point(P, lay, B, L, ev.lam, ev.tau)
    at = float(val @ v[idx])
    assert at >= -1e-6
    v2 = benders_master.master_point(P, lay, B, L, ev.lam * 1.01, ev.tau * 1.01)
    assert float(val @ v2[idx]) < at


def test_symmetry_classes_respect_ring_orders():
    # a2a traffic, no rings: every node interchangeable
    P = alloc_benders.problem_of(SMALL[0][1]())
    assert benders_master.ring_symmetry_classes(P) == [[0, 1, 2, 3, 4]]
    # one ring group over 0..5 plus uniform MP: the transposition (0 1) maps the order
    # 0-1-2-3-4-5 to 1-0-2-3-4-5, not a candidate order, so it is not an automorphism
    inst = make_instance(6, 4, 100.0, allreduce=[(range(6), 1e8)],
                         mp=[(i, j, 1e6) for i in range(6) for j in range(6) if i != j])
    classes = benders_master.ring_symmetry_classes(alloc_benders.problem_of(inst))
    assert all(len(c) == 1 for c in classes)


def test_time_limited_run_returns_incumbent_and_bound():
    inst = mixed(10, 4, 2, 0.35)
    res = checked(inst, registry.solve(inst, 'alloc-benders', time_limit=2))
    assert res.status in (Status.FEASIBLE, Status.OPTIMAL)
    assert res.objective is not None and res.bound is not None
    assert res.bound <= res.objective


def test_warm_start_is_used():
    inst = mixed(8, 4, 2, 0.35)
    tf = registry.solve(inst, 'topologyfinder', routing='lp')
    res = checked(inst, registry.solve(inst, 'alloc-benders', time_limit=1, warm_start=tf,
                                       auto_warm_start=False))
    assert res.objective <= tf.objective * (1 + 1e-6)


def test_out_of_time_returns_the_warm_start_with_its_routing():
    inst = mixed(32, 4, 4, 0.3)
    tf = registry.solve(inst, 'topologyfinder', routing='lp')
    res = checked(inst, registry.solve(inst, 'alloc-benders', time_limit=0.01, warm_start=tf,
                                       auto_warm_start=False))
    assert res.status is Status.FEASIBLE and res.method == "alloc-benders"
    assert res.objective == pytest.approx(tf.objective, rel=1e-9)
    assert res.bound is not None and res.bound <= res.objective
