"""hop-anneal: the compiled hop volume equals breadth-first search, the annealing reaches the
brute-force optimum of sum D dist over every d-regular graph at n <= 8, and the method's
result is d-regular, routed and verified by the independent checker (issue 16)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from helpers import checked

from topoopt_milp import registry
from topoopt_milp.core.evaluate import moore_lower_bound
from topoopt_milp.core.instance import make_instance
from topoopt_milp.core.result import Status
from topoopt_milp.methods.alloc_search.starts import hop_distances
from topoopt_milp.methods.heuristics.baselines import expander_links
from topoopt_milp.methods.hop_anneal import method as ha


def uniform(n, d, b=1e6):
    return make_instance(n, d, 100.0, mp=[(i, j, b) for i in range(n) for j in range(n) if i != j])


def regular_graphs(n, d):
    """Every simple d-regular graph on nodes 0..n-1 (labelled), as link matrices: node ``v``
    takes its missing links from the nodes after it, in every way."""
    L = np.zeros((n, n), dtype=np.int64)

    def fill(v):
        if v == n:
            yield L.copy()
            return
        need = d - int(L[v].sum())
        if need < 0:
            return
        free = [u for u in range(v + 1, n) if L[u].sum() < d]
        for pick in itertools.combinations(free, need):
            for u in pick:
                L[v, u] = L[u, v] = 1
            yield from fill(v + 1)
            for u in pick:
                L[v, u] = L[u, v] = 0

    yield from fill(0)


def brute_min(n, d, D):
    """``min sum D dist`` over every connected simple d-regular graph on n nodes."""
    best = np.inf
    count = 0
    for L in regular_graphs(n, d):
        count += 1
        dist = hop_distances(L)
        if np.isfinite(dist).all():
            best = min(best, float((D * dist).sum()))
    return best, count


def test_regular_graph_enumeration_counts():
    # the numbers of labelled d-regular graphs (OEIS A005815 for d = 3, A005814 for d = 2)
    assert sum(1 for _ in regular_graphs(6, 3)) == 70
    assert sum(1 for _ in regular_graphs(8, 3)) == 19355
    assert sum(1 for _ in regular_graphs(7, 2)) == 465


@pytest.mark.parametrize("n,d,seed", [(16, 3, 0), (40, 4, 1), (70, 5, 2), (130, 6, 3)])
def test_hop_volume_equals_breadth_first_search(n, d, seed):
    # uniform and weighted, n across a 64-bit word boundary
    L = expander_links(n, d, seed)
    dist = hop_distances(L)
    rng = np.random.default_rng(seed)
    D = rng.uniform(0.0, 1.0, (n, n)) * (rng.random((n, n)) < 0.5)
    np.fill_diagonal(D, 0.0)
    weighted = ha.Demand(D, 0.0, float(D.sum()))
    assert ha.hop_volume(L, weighted) == pytest.approx(float((D * dist).sum()), rel=1e-12)
    ones = ha.Demand(np.zeros((1, 1)), 2.5, 2.5 * n * (n - 1))
    assert ha.hop_volume(L, ones) == pytest.approx(2.5 * float(dist.sum()), rel=1e-12)


def test_hop_volume_of_a_disconnected_graph_is_infinite():
    L = np.zeros((8, 8), dtype=np.int64)
    for i in range(4):  # two 4-cycles
        for base in (0, 4):
            a, b = base + i, base + (i + 1) % 4
            L[a, b] = L[b, a] = 1
    assert ha.hop_volume(L, ha.Demand(np.zeros((1, 1)), 1.0, 56.0)) == np.inf


@pytest.mark.parametrize("n,d", [(8, 3), (8, 4), (6, 3), (7, 4)])
def test_anneal_reaches_the_brute_force_optimum_uniform(n, d):
    inst = uniform(n, d, 1.0)
    demand = ha.Demand.of(inst)
    assert demand.uniform == 1.0
    best, count = brute_min(n, d, np.ones((n, n)) - np.eye(n))
    assert count > 0
    p = ha.HopAnnealParams(iterations=3000)
    L, info = ha.anneal(expander_links(n, d, 0), demand, 1, p, seed=0, seconds=None)
    assert (L.sum(axis=1) == d).all() and L.max() == 1 and (np.diag(L) == 0).all()
    assert info["hop_volume"] == pytest.approx(best)
    assert float(hop_distances(L).sum()) == pytest.approx(best)
    # the bound of the docstring: no graph beats the Moore/Cerf average distance
    assert best / (n * (n - 1)) >= moore_lower_bound(inst) * 12.5e9 * d / (n - 1) - 1e-9


@pytest.mark.parametrize("n,d,seed", [(8, 3, 0), (7, 4, 1), (8, 2, 2)])
def test_anneal_reaches_the_brute_force_optimum_weighted(n, d, seed):
    rng = np.random.default_rng(seed)
    D = rng.uniform(0.0, 1.0, (n, n)) ** 3  # skewed: the optimum is not the uniform one's
    np.fill_diagonal(D, 0.0)
    best, _ = brute_min(n, d, D)
    demand = ha.Demand(D, 0.0, float(D.sum()))
    L, info = ha.anneal(expander_links(n, d, seed), demand, 1,
                        ha.HopAnnealParams(iterations=4000), seed=seed, seconds=None)
    assert info["hop_volume"] == pytest.approx(best, rel=1e-12)
    assert float((D * hop_distances(L)).sum()) == pytest.approx(best, rel=1e-12)


def test_anneal_is_reproducible_with_a_seed():
    inst = uniform(32, 4)
    demand = ha.Demand.of(inst)
    p = ha.HopAnnealParams(iterations=2000)
    runs = [ha.anneal(expander_links(32, 4, 0), demand, 1, p, seed=5, seconds=None)
            for _ in range(2)]
    assert np.array_equal(runs[0][0], runs[1][0])
    assert runs[0][1]["moves"] == 2000


@pytest.mark.parametrize("router", ["approx", "lp", "shortest"])
def test_method_result_is_regular_routed_and_verified(router):
    inst = uniform(16, 3)
    res = registry.solve(inst, "hop-anneal", iterations=5000, router=router)
    checked(inst, res)
    assert res.status is Status.FEASIBLE
    # a heuristic: the only bound is the router's, for this one topology
    assert (res.bound is None) == (router == "shortest")
    assert res.bound is None or res.bound <= res.objective * (1 + 1e-9)
    assert (res.topology.degrees() == 3).all() and res.topology.links.max() == 1
    # every byte crosses at least dist arcs: the objective is at least the hop bound,
    # which is at least the Moore/Cerf bound
    hops = ha.hop_volume(res.topology.links, ha.Demand.of(inst))
    assert res.objective >= hops / (16 * 3 * 12.5e9) * (1 - 1e-9)
    assert res.objective >= moore_lower_bound(inst) * (1 - 1e-9)
    assert res.info["hop_volume"] == pytest.approx(hops)
    assert res.info["hop_volume"] <= res.info["start_hop_volume"]


def test_method_honours_its_time_limit():
    inst = uniform(64, 4)
    res = registry.solve(inst, "hop-anneal", time_limit=3)
    checked(inst, res)
    assert res.runtime_s <= 3.0 + 1.0
    assert res.info["anneal_s"] <= 0.6 * 3 + 0.5
