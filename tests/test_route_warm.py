"""Warm re-routing's fast path (route_approx.warm.fast_warm_route) and its start lengths.

The fast path patches the route problem instead of rebuilding it and keeps the warm state of
each result; these tests check that what it returns is what the method returns: a routing
the independent checker accepts, a bound no higher than route-milp's optimum on the new
topology, and the (1 + eps) promise, along a chain of swaps (each warm-started from the last
warm result).
"""

from __future__ import annotations

import numpy as np
import pytest
from test_route_approx import EPS, all_to_all, edge_swap, random_regular

from topoopt_milp import registry
from topoopt_milp.core.errors import InputError
from topoopt_milp.core.topology import Topology
from topoopt_milp.methods.route_approx import warm_route
from topoopt_milp.methods.route_approx.common import Pricer
from topoopt_milp.methods.route_approx.method import SPEC
from topoopt_milp.methods.route_approx.warm import WarmStart
from topoopt_milp.pipeline import certify_solution
from topoopt_milp.workloads import generators


def _verified(inst, L, res):
    fixed = inst.with_topology(L)
    checked = certify_solution(fixed, res)
    assert checked.violations == ()
    exact = registry.solve(fixed, "route-milp")
    assert res.bound <= exact.objective * (1 + 1e-7) <= res.objective * (1 + 2e-7)
    assert res.gap <= EPS + 1e-12


@pytest.mark.parametrize("family", ["uniform", "dlrm"])
def test_fast_path_along_a_chain_of_swaps(family):
    """Three swaps in a row, each warm-started from the previous warm result: every result
    comes from the patched problem, is accepted by the checker and keeps the bound valid."""
    n, d = 20, 4
    inst = generators.generate(family, n, d, seed=1)
    L = random_regular(n, d, 1).links
    prev = registry.solve(inst.with_topology(L), "route-approx")
    rng = np.random.default_rng(1)
    for _ in range(3):
        L = edge_swap(L, rng)
        prev = warm_route(inst, L, prev, epsilon=EPS)
        assert "warm start (patched problem)" in prev.message
        _verified(inst, L, prev)


def test_fast_path_from_an_instance_without_topology():
    """The instance handed in need not carry any topology (a local search's instance)."""
    inst = all_to_all(16, 4)
    L = random_regular(16, 4, 2).links
    old = registry.solve(inst.with_topology(L), "route-approx")
    L2 = edge_swap(L, np.random.default_rng(2))
    new = warm_route(inst.without_topology(), L2, old, epsilon=EPS)
    assert "patched problem" in new.message
    _verified(inst, L2, new)


def test_circulant_target_takes_the_method_path():
    """A circulant new topology (its rings and the symmetric reduction follow the topology):
    the full method is run, warm-started, with the same guarantees."""
    inst = all_to_all(16, 4)
    L = random_regular(16, 4, 0).links
    old = registry.solve(inst.with_topology(L), "route-approx")
    C = Topology.circulant(16, (1, 3)).links
    new = warm_route(inst, C, old, epsilon=EPS)
    assert "patched problem" not in new.message
    _verified(inst, C, new)


def test_disconnected_new_topology_is_an_input_error():
    inst = all_to_all(8, 2)
    ring = Topology.circulant(8, (1,)).links
    old = registry.solve(inst.with_topology(random_regular(8, 2, 0).links), "route-approx")
    two = ring.copy()  # two 4-cycles: 0-1-2-3 and 4-5-6-7
    two[3, 4] = two[4, 3] = two[7, 0] = two[0, 7] = 0
    two[3, 0] = two[0, 3] = two[7, 4] = two[4, 7] = 1
    with pytest.raises(InputError, match="disconnected"):
        warm_route(inst, two, old)


@pytest.mark.parametrize("seed", range(3))
def test_theta_search_gives_a_valid_bound_no_worse_than_theta_one(seed):
    """resource_lengths with a pricer picks the best of several non-negative length vectors:
    its bound is at least the one of theta = 1 and at most the exact optimum (brute force:
    route-milp on the new topology)."""
    n, d = 16, 4
    inst = generators.generate("uniform", n, d, seed=seed)
    L = random_regular(n, d, seed).links
    old = registry.solve(inst.with_topology(L), "route-approx")
    ws = WarmStart.from_solution(old, n)
    L2 = edge_swap(L, np.random.default_rng(seed))
    from topoopt_milp.methods.formulations import route

    fixed = inst.with_topology(L2)
    P = route.build_problem(fixed, SPEC.options({}))
    m = len(P.arcs)
    sources = np.flatnonzero(P.D.sum(axis=1) > 0)
    pricer = Pricer(n, P.arcs, np.arange(m), P.res_cap, sources, P.D, P.D[sources], False)
    lb_one = pricer(ws.resource_lengths(P.arcs, np.arange(m), P.res_cap), bound_only=True)
    mu = ws.resource_lengths(P.arcs, np.arange(m), P.res_cap, pricer)
    assert (mu > 0).all() and abs(float(mu @ P.res_cap) - 1.0) < 1e-12
    lb = pricer(mu, bound_only=True)
    exact = registry.solve(fixed, "route-milp").objective / P.sec_per_unit
    assert lb_one <= lb <= exact * (1 + 1e-7)


def test_fast_path_constants_are_the_methods():
    from topoopt_milp.methods.route_approx import method, warm

    assert warm.OPTIMAL_GAP == method.OPTIMAL_GAP
    import inspect

    sig = inspect.signature(method.approx_min_congestion)
    assert sig.parameters["max_iter"].default == warm.MAX_ITER


def test_reroute_approx_warm_from_the_current_solution():
    """alloc-search's approximate evaluation: a checked solution within 1 + eps of the route
    LP on the candidate, warm-started from the current one (its route-approx result is
    remembered), with prices normalised like the LP's duals (sum pi_a L_a = 1)."""
    from topoopt_milp.methods.alloc_search.reroute import reroute_approx

    n, d = 16, 4
    inst = generators.generate("dlrm", n, d, seed=0)
    opts = SPEC.options({})
    L = random_regular(n, d, 0).links
    cur, why = reroute_approx(inst, Topology(L), opts)
    assert cur is not None, why
    rng = np.random.default_rng(0)
    for _ in range(2):
        L = edge_swap(L, rng)
        sol, why = reroute_approx(inst, Topology(L), opts, near=cur)
        assert sol is not None, why
        exact = registry.solve(inst.with_topology(L), "route-milp")
        assert exact.objective * (1 - 1e-7) <= sol.objective_s <= exact.objective * (1 + EPS)
        assert abs(float((sol.prices * L).sum()) - 1.0) < 1e-9
        assert sol.gains is not None and (sol.gains <= sol.prices + 1e-12)[L > 0].all()
        cur = sol


def test_alloc_search_with_the_approximate_router():
    """alloc-search's moves re-routed by reroute_approx (rings = given, and choose: free
    shares over the TotientPerms orders): a checked, degree-preserving result no worse than
    its best (exactly routed) start, with choose inside alloc-milp's ring space."""
    inst = all_to_all(12, 4)
    res = registry.solve(inst, "alloc-search", time_limit=4, rings="given", router="approx")
    fixed = inst.with_topology(res.topology.links)
    assert certify_solution(fixed, res).violations == ()
    assert (res.topology.degrees() == inst.degree).all()
    steps = res.info["trajectory"]
    assert any(s["kind"].startswith("swap:") for s in steps)
    routed = [s["routed_s"] for s in res.info["starts"] if s["routed_s"] is not None]
    assert res.objective <= min(routed) * (1 + 1e-9)
    res = registry.solve(inst, "alloc-search", time_limit=4, rings="choose", router="approx")
    assert certify_solution(inst.with_topology(res.topology.links), res).violations == ()
    assert res.info["evaluations"]["approx"] > 0
    assert res.info["ring_space"].startswith("alloc-milp")


def test_pair_paths_merges_equal_paths_and_keeps_single_ones():
    """WarmStart.pair_paths against a direct merge: single-path pairs as they are, equal paths
    of a pair summed, paths without a fraction dropped."""
    n = 5
    paths = [(0, 1, [(0, 1), 0.5]), (0, 1, [(0, 2, 1), 0.25]), (0, 1, [(0, 1), 0.25]),
             (2, 4, [(2, 4), 1.0]), (3, 1, [(3, 2, 1), 0.0]), (3, 1, [(3, 4, 1), 1.0])]
    ws = WarmStart._from_pairs(n, ((s, t, [p]) for s, t, p in paths), None, None)
    got = {k: dict(v) for k, v in ws.pair_paths().items()}
    assert got == {(0, 1): {(0, 1): 0.75, (0, 2, 1): 0.25}, (2, 4): {(2, 4): 1.0},
                   (3, 1): {(3, 4, 1): 1.0}}


@pytest.mark.parametrize("seed", range(3))
def test_warm_without_ascent_matches_cold_quality(seed):
    """The warm path prices without supergradient ascent (paths.WARM_ASCENT = 0): on small
    random instances its certified gap is within eps, as the cold run on the new topology,
    and each objective is within 1 / (1 - eps)^2 of the other run's bound (both gaps <= eps)."""
    from topoopt_milp.methods.route_approx import paths

    assert paths.WARM_ASCENT == 0
    n, d = 20, 4
    inst = generators.generate("uniform", n, d, seed=seed)
    L = random_regular(n, d, seed).links
    old = registry.solve(inst.with_topology(L), "route-approx")
    L2 = edge_swap(L, np.random.default_rng(seed))
    warm = warm_route(inst, L2, old, epsilon=EPS)
    cold = registry.solve(inst.with_topology(L2), "route-approx", epsilon=EPS)
    assert "patched problem" in warm.message
    _verified(inst, L2, warm)
    assert warm.gap <= EPS and cold.gap <= EPS
    assert warm.objective <= cold.bound / (1 - EPS) ** 2
    assert cold.objective <= warm.bound / (1 - EPS) ** 2


def _warm_after_one_swap(inst, seed):
    """Route a random 4-regular topology cold, swap one edge pair, re-route warm: the warm
    path is taken and its routing passes the checker with a valid bound within eps."""
    L = random_regular(16, 4, seed).links
    old = registry.solve(inst.with_topology(L), "route-approx")
    L2 = edge_swap(L, np.random.default_rng(seed))
    new = warm_route(inst, L2, old, epsilon=EPS)
    assert "patched problem" in new.message
    _verified(inst, L2, new)


@pytest.mark.parametrize("full_pool", [0, 10**9])
def test_both_first_pool_regimes_stay_certified(monkeypatch, full_pool):
    """warm.FULL_POOL picks the first pool: the old paths above MIN_FRAC (0) or every
    surviving old path (10**9); both give a checked routing, a valid bound, gap <= eps."""
    from topoopt_milp.methods.route_approx import warm as warm_mod

    monkeypatch.setattr(warm_mod, "FULL_POOL", full_pool)
    _warm_after_one_swap(generators.generate("dlrm", 16, 4, seed=2), seed=2)
