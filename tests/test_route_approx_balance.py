"""route-approx's hop-balanced fast path (route_approx/balance.py): one shortest path per pair,
certified by the hop bound. Checked against route-milp's exact optimum (hop bound <= optimum
<= objective), on symmetric and non-symmetric demand; the fast path is used only when its
certified gap is within epsilon, otherwise the column generation runs."""

from __future__ import annotations

import numpy as np
import pytest
from test_route_approx import GBPS, all_to_all, assert_agrees, random_regular

from topoopt_milp import registry
from topoopt_milp.core.bfs import hop_distances
from topoopt_milp.core.instance import make_instance
from topoopt_milp.methods.route_approx import balance
from topoopt_milp.pipeline import certify_solution


@pytest.fixture
def any_size(monkeypatch):
    monkeypatch.setattr(balance, "MIN_PAIRS_PER_RES", 0)


@pytest.mark.parametrize("seed", range(3))
def test_fast_path_is_certified_against_route_milp(any_size, seed):
    """Degree 8, all-to-all: the hop-balanced routing within a loose epsilon (few pairs per
    link at this size), checker-clean, hop bound <= route-milp's optimum <= objective."""
    n, d = 48, 8
    fixed = all_to_all(n, d).with_topology(random_regular(n, d, seed).links)
    res = registry.solve(fixed, "route-approx", epsilon=0.3)
    assert "hop-balanced" in res.message
    assert certify_solution(fixed, res).violations == ()
    exact = registry.solve(fixed, "route-milp").objective
    assert res.bound <= exact * (1 + 1e-9) <= res.objective * (1 + 1e-9)
    assert res.gap <= 0.3
    assert all(len(c.paths) == 1 for c in res.routing.commodities)


@pytest.mark.parametrize("seed", range(3))
def test_non_symmetric_demand_on_arcs(any_size, seed):
    """Random non-symmetric demand: the balancing runs on arcs (no reversal), same checks."""
    n, d = 40, 8
    rng = np.random.default_rng(seed)
    mp = [(i, j, float(rng.uniform(1e6, 1.5e6))) for i in range(n) for j in range(n)
          if i != j and rng.random() < 0.9]
    inst = make_instance(n, d, GBPS, mp=mp)
    fixed = inst.with_topology(random_regular(n, d, seed).links)
    res = registry.solve(fixed, "route-approx", epsilon=0.4)
    assert "hop-balanced" in res.message and "reversal" not in res.message
    assert certify_solution(fixed, res).violations == ()
    exact = registry.solve(fixed, "route-milp").objective
    assert res.bound <= exact * (1 + 1e-9) <= res.objective * (1 + 1e-9)


@pytest.mark.parametrize("seed", range(3))
def test_hop_bound_is_at_most_the_optimum(seed):
    """The fast path's bound against route-milp on degree-4 graphs (not tight there)."""
    n, d = 16, 4
    topo = random_regular(n, d, seed)
    inst = all_to_all(n, d)
    L = topo.links
    u, v = np.nonzero(L)
    H = hop_distances(L)
    D = np.ones((n, n)) - np.eye(n)
    src, dst = np.nonzero(D)
    lb = balance.hop_bound(H.astype(np.int32), src, dst, D[src, dst], L[u, v].astype(float), n)
    exact = registry.solve(inst.with_topology(L), "route-milp")
    from topoopt_milp.methods import model_data as _exact

    assert lb * _exact.seconds_per_unit(inst) * 1e6 / _exact.volume_unit(inst) \
        <= exact.objective * (1 + 1e-9)


def test_gap_above_epsilon_falls_back_to_column_generation(any_size):
    """Too coarse for 1% (one path per pair, few pairs per link): the column generation runs
    and meets epsilon."""
    n, d = 24, 8
    res = assert_agrees(all_to_all(n, d), random_regular(n, d, 5), eps=0.01)
    assert "hop-balanced" not in res.message
