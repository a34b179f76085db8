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


def regular_multigraphs(n: int, d: int, regular: bool = True, cap: int | None = None):
    """Every symmetric integer matrix with zero diagonal, row sums ``d`` (``<= d`` when not
    ``regular``) and entries ``<= cap`` (brute force)."""
    pairs = list(itertools.combinations(range(n), 2))
    cap = d if cap is None else cap

    def rec(k, L, deg):
        if k == len(pairs):
            if not regular or (deg == d).all():
                yield L.copy()
            return
        i, j = pairs[k]
        for c in range(min(d - deg[i], d - deg[j], cap) + 1):
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


# -- issue 20: disconnected but routable topologies (an infinite metric) -----------------------
def blocks(n, d, size, seed=0, regular=True, ring=False):
    """Random MP inside blocks of ``size`` consecutive nodes (none between blocks), and a ring
    group per block when ``ring``: an optimum may be disconnected."""
    rng = np.random.default_rng(seed)
    groups = [range(b, min(b + size, n)) for b in range(0, n, size)]
    mp = [(i, j, float(rng.uniform(1e7, 1e8))) for g in groups for i in g for j in g if i != j]
    ar = [(g, 2e8) for g in groups if len(g) > 2] if ring else []
    return make_instance(n, d, 100.0, mp=mp, allreduce=ar, regular=regular)


def brute_force_lambda(inst, cap=None) -> tuple[float, float]:
    """The best ``lambda_max`` over every topology of the port budget: every d-regular
    multigraph, or (not regular) every maximal one with degrees <= d -- adding a link never
    lowers ``lambda_max`` (more capacity), and a graph is maximal iff at most one node has a
    free port (two such nodes could be linked). Returns seconds per unit and the best."""
    P = alloc_benders.problem_of(inst, cap)
    B = P.demand_basis()
    graphs = regular_multigraphs(inst.n, inst.degree, inst.regular, cap)
    if not inst.regular:
        graphs = (L for L in graphs if (L.sum(axis=1) < inst.degree).sum() <= 1)
    return P.sec_per_unit, max(alloc_benders.max_lambda(P, L, B).lam for L in graphs)


def assert_agrees_with_brute_force(inst):
    sec, best = brute_force_lambda(inst)
    ref = registry.solve(inst, "alloc-milp", time_limit=60, **CHOOSE)
    res = checked(inst, registry.solve(inst, "alloc-benders", time_limit=60))
    assert ref.status is res.status is Status.OPTIMAL, res.message
    assert res.objective == pytest.approx(sec / best, rel=1e-5)
    assert ref.objective == pytest.approx(sec / best, rel=1e-5)
    assert res.bound <= sec / best * (1 + 1e-5)
    return res


@pytest.mark.parametrize("make", [
    lambda: blocks(6, 2, 3, seed=0),  # two triangles: the optimum is disconnected
    lambda: blocks(6, 2, 3, seed=1, ring=True),
    lambda: blocks(6, 2, 3, seed=2, regular=False),
    lambda: make_instance(6, 2, 100.0, mp=[(0, 1, 1e8), (1, 2, 1e8), (2, 0, 1e8), (3, 4, 5e7)],
                          regular=False),  # node 5 has no traffic: left isolated
], ids=["blocks", "blocks-rings", "blocks-irregular", "isolated-irregular"])
def test_disconnected_but_routable_optima_match_brute_force(make):
    assert_agrees_with_brute_force(make())


def test_metric_cut_of_a_disconnected_routable_topology():
    """Two components, no demand between them: the closure is infinite across them and the
    cut used to filter out every coefficient (traceback). The completed metric gives a cut
    that is finite, tight at ``lambda_max`` and violated above it."""
    inst = make_instance(8, 3, 100.0, mp=[(0, 1, 1e8), (1, 2, 1e8), (2, 0, 1e8)],
                         regular=False)
    P = alloc_benders.problem_of(inst)
    B = P.demand_basis()
    lay = benders_master.Layout(P.n, P.num_tau)
    L = np.zeros((8, 8), dtype=np.int64)
    for i, j in [(0, 1), (1, 2), (2, 0), (3, 4)]:
        L[i, j] = L[j, i] = 1
    ev = alloc_benders.max_lambda(P, L, B)
    assert not np.isfinite(ev.dist).all()
    ell = benders_master.complete_metric(ev.dist)
    assert np.isfinite(ell).all()
    for a, b, c in itertools.permutations(range(8), 3):
        assert ell[a, c] <= ell[a, b] + ell[b, c] + 1e-12
    finite = np.isfinite(ev.dist)
    assert np.allclose(ell[finite], ev.dist[finite])  # unchanged within the components
    idx, val = benders_master.metric_cut(P, lay, B, ev.dist)
    assert np.isfinite(val).all() and len(idx) > 0
    at = float(val @ benders_master.master_point(P, lay, B, L, ev.lam, ev.tau)[idx])
    above = float(val @ benders_master.master_point(P, lay, B, L, ev.lam * 1.2,
                                                    ev.tau * 1.2)[idx])
    assert abs(at) < 1e-6 and above < -1e-3


def test_irregular_n8_d3_and_two_blocks_n8_d4_agree_with_alloc_milp():
    """The issue's cases: n = 8, d = 3, ``regular: false`` (an empty metric cut), and two
    blocks of 4 at d = 4 (a disconnected master proposal); both crashed with a traceback."""
    for inst in (make_instance(8, 3, 100.0, mp=[(0, 1, 1e8), (1, 2, 1e8), (2, 0, 1e8)],
                               regular=False),
                 blocks(8, 4, 4, seed=3, ring=True)):
        ref = registry.solve(inst, "alloc-milp", time_limit=60, **CHOOSE)
        res = checked(inst, registry.solve(inst, "alloc-benders", time_limit=60))
        assert ref.status is res.status is Status.OPTIMAL, res.message
        assert res.objective == pytest.approx(ref.objective, rel=1e-5)


def test_lower_bounds_master_time_on_disconnected_proposals():
    inst = make_instance(8, 3, 100.0, mp=[(0, 1, 1e8), (1, 2, 1e8), (2, 0, 1e8)],
                         regular=False)
    res = registry.solve(inst, "lower-bounds", master_time=5)
    opt = registry.solve(inst, "alloc-milp", time_limit=60, **CHOOSE)
    assert "benders_master" in res.info["bounds_s"]
    assert res.bound <= opt.objective * (1 + 1e-6)


@pytest.mark.slow
@pytest.mark.parametrize("make", [
    lambda: blocks(8, 2, 4, seed=4),  # 6202 2-regular multigraphs on 8 nodes
    lambda: blocks(7, 2, 4, seed=5, regular=False),  # 1732 maximal ones with degrees <= 2
    lambda: blocks(6, 3, 3, seed=6, ring=True),  # 760 3-regular multigraphs on 6 nodes
], ids=["n8-d2-blocks", "n7-d2-irregular", "n6-d3-blocks-rings"])
def test_brute_force_every_multigraph_slow(make):
    assert_agrees_with_brute_force(make())


def test_all_orders_are_every_directed_cycle():
    from test_bounds_neighbourhood import all_orders as brute_orders

    for k in range(1, 7):
        members = list(range(10, 10 + 2 * k, 2))[::-1]
        got = benders_master.all_orders(members)
        assert len(got) == len(set(got)) == max(1, len(brute_orders(members)))
        assert set(got) == set(brute_orders(members)) or k == 1
    inst = mixed(8, 3, 2, 0.3)
    assert benders_master.order_count(inst, "all") == 2 * 6
    assert benders_master.order_count(inst, "choose") == 2 * 2
    assert alloc_benders.problem_of(inst, rings="all").num_tau == 12


def group_of_four(seed):
    """One AllReduce group of four on six nodes plus a few random MP demands, d in 2..4."""
    rng = np.random.default_rng(seed)
    d = int(rng.choice([2, 3, 4]))
    perm = [int(x) for x in rng.permutation(6)]
    mp = [(int(s), int(t), float(rng.uniform(1e7, 4e8)))
          for s, t in (rng.choice(6, 2, replace=False) for _ in range(int(rng.integers(2, 9))))]
    return make_instance(6, d, 100.0, allreduce=[(perm[:4], float(rng.uniform(1e8, 5e8)))],
                         mp=mp)


@pytest.mark.parametrize("seed", [0, 25])
def test_rings_all_is_the_optimum_over_every_ring_order(seed):
    """With every order of the group as a candidate, the decomposition proves the optimum over
    every topology and every ring order (brute force: every d-regular multigraph on 6 nodes,
    the route LP with a free split over all orders) and says scope any. On seed 25 (d = 3) the
    TotientPerms orders' optimum is 9% above it."""
    from test_bounds_neighbourhood import brute_optimum

    inst = group_of_four(seed)
    best_any = brute_optimum(inst, "any")
    res = checked(inst, registry.solve(inst, "alloc-benders", time_limit=60, rings="all"))
    assert res.status is Status.OPTIMAL, res.message
    assert res.objective == pytest.approx(best_any, rel=1e-5)
    assert res.bound <= best_any * (1 + 1e-6)
    assert res.scope.rings == "any"
    totient = registry.solve(inst, "alloc-benders", time_limit=60)
    assert totient.scope.rings == "totient"
    assert totient.objective >= best_any * (1 - 1e-6)
    if seed == 25:
        assert totient.objective > 1.05 * best_any


def test_rings_all_is_refused_for_large_groups():
    """(k - 1)! orders: the size check refuses a group of 16 with a message naming them."""
    from topoopt_milp.core import sizes

    spec = registry.methods()["alloc-benders"]
    inst = mixed(16, 4, 1, 0.2)
    sizes.check(spec, inst, spec.options({"rings": "choose"}))
    with pytest.raises(sizes.SizeError, match="ring orders"):
        sizes.check(spec, inst, spec.options({"rings": "all"}))
