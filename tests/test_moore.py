"""The Moore/Cerf average-distance bound (core.evaluate.moore_lower_bound) against brute
force: never above the best d-regular (multi)graph, and attained by a Moore graph."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy.sparse.csgraph import shortest_path
from test_alloc_benders import regular_multigraphs

from topoopt_milp import registry
from topoopt_milp.core.evaluate import moore_lower_bound, moore_slots
from topoopt_milp.core.instance import make_instance
from topoopt_milp.methods.alloc_benders import decomposition as alloc_benders


def a2a(n, d, b=1e8):
    return make_instance(n, d, 100.0, mp=[(i, j, b) for i in range(n) for j in range(n) if i != j])


def total_distance(L) -> float:
    return float(shortest_path(np.asarray(L > 0, float), unweighted=True).sum())


@pytest.mark.parametrize(("n", "d"), [(6, 2), (6, 3), (5, 4), (7, 2)])
def test_moore_distance_count_never_beaten_by_any_regular_multigraph(n, d):
    """Every d-regular multigraph on n nodes: its total distance is at least the Moore count
    n * sum(moore_slots), the minimum is attained or exceeded, never undercut."""
    moore = n * moore_slots(n, d).sum()
    best = min(total_distance(L) for L in regular_multigraphs(n, d))
    assert best >= moore - 1e-9
    if (n, d) in ((6, 3), (5, 4)):  # K_{3,3} and K_5 meet the Moore counts
        assert best == pytest.approx(moore)


@pytest.mark.parametrize(("n", "d"), [(5, 2), (6, 2), (5, 4)])
def test_moore_time_bound_below_the_brute_force_optimum(n, d):
    """The optimum communication time of uniform all-to-all over every d-regular multigraph,
    each with its optimal fractional routing, is at least the bound."""
    inst = a2a(n, d)
    P = alloc_benders.problem_of(inst)
    B = P.demand_basis()
    best = max(alloc_benders.max_lambda(P, L, B).lam for L in regular_multigraphs(n, d))
    opt = P.sec_per_unit / best
    assert moore_lower_bound(inst) <= opt * (1 + 1e-9)


def petersen() -> np.ndarray:
    L = np.zeros((10, 10), dtype=np.int64)
    edges = [(i, (i + 1) % 5) for i in range(5)] + [(i, i + 5) for i in range(5)] + \
            [(5 + i, 5 + (i + 2) % 5) for i in range(5)]
    for i, j in edges:
        L[i, j] = L[j, i] = 1
    return L


def test_moore_bound_attained_by_the_petersen_graph():
    """The Petersen graph is a Moore graph (n = 10, d = 3, diameter 2) and edge-transitive:
    with the optimal routing its time equals the bound."""
    L = petersen()
    assert total_distance(L) == pytest.approx(10 * moore_slots(10, 3).sum())
    inst = a2a(10, 3)
    res = registry.solve(inst.with_topology(L), "route-milp")
    assert res.objective == pytest.approx(moore_lower_bound(inst), rel=1e-6)


def test_moore_slots_counts():
    assert list(moore_slots(10, 3)) == [1, 1, 1, 2, 2, 2, 2, 2, 2]
    for n, d in itertools.product((16, 64, 128, 256), (4, 8)):
        s = moore_slots(n, d)
        assert len(s) == n - 1 and (np.diff(s) >= 0).all()
        assert (s == 1).sum() == min(d, n - 1)
