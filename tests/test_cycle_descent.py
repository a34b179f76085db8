"""cycle_descent: moves that keep Hamiltonian cycles Hamiltonian shorten the distances of
their union; the bit-parallel hop volume agrees with breadth-first search."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import shortest_path

from topoopt_milp.core.hop_volume import hop_volume, neighbour_lists, work_arrays
from topoopt_milp.methods.heuristics.cycle_descent import shorten


def union(k, cycles, matching=None):
    L = np.zeros((k, k), dtype=np.int64)
    for o in cycles:
        a = np.asarray(o)
        np.add.at(L, (a, np.roll(a, -1)), 1)
        np.add.at(L, (np.roll(a, -1), a), 1)
    if matching is not None:
        np.add.at(L, (matching[:, 0], matching[:, 1]), 1)
        np.add.at(L, (matching[:, 1], matching[:, 0]), 1)
    return L


def mean_distance(L):
    k = len(L)
    return shortest_path(csr_matrix(L), unweighted=True).sum() / (k * (k - 1))


def disjoint_cycles(k, count, rng):
    while True:
        cycles = [tuple(int(v) for v in rng.permutation(k)) for _ in range(count)]
        if union(k, cycles).max() == 1:
            return cycles


@pytest.mark.parametrize("k", [7, 20, 65])
def test_hop_volume_is_the_sum_of_breadth_first_distances(k):
    rng = np.random.default_rng(k)
    L = union(k, disjoint_cycles(k, 2, rng))
    nbr, deg = neighbour_lists(L)
    R, Rn = work_arrays(k)
    D = rng.random((k, k))
    dist = shortest_path(csr_matrix(L), unweighted=True)
    assert hop_volume(nbr, deg, D, 0.0, R, Rn) == pytest.approx((D * dist).sum())
    assert hop_volume(nbr, deg, D, 1.0, R, Rn) == pytest.approx(dist.sum())


@pytest.mark.parametrize("k,count,with_matching", [(16, 1, True), (40, 2, False),
                                                   (64, 2, True), (128, 2, False)])
def test_shorten_keeps_hamiltonian_cycles_and_a_matching_and_never_lengthens(
        k, count, with_matching):
    rng = np.random.default_rng(k)
    cycles = disjoint_cycles(k, count, rng)
    matching = None
    if with_matching:
        while True:
            matching = rng.permutation(k).reshape(-1, 2)
            if union(k, cycles, matching).max() == 1:
                break
    before = mean_distance(union(k, cycles, matching))
    out, m = shorten(k, cycles, matching, seed=1)
    L = union(k, out, m)
    assert L.max() == 1 and (np.diag(L) == 0).all()  # simple: the components stay disjoint
    assert (L.sum(axis=1) == 2 * count + with_matching).all()
    for o in out:
        assert sorted(o) == list(range(k))
    if with_matching:
        assert sorted(m.ravel().tolist()) == list(range(k))
    after = mean_distance(L)
    assert after <= before
    if k >= 64:
        assert after < 0.97 * before  # 3.78 -> ~3.5 hops at k = 128
    again, _ = shorten(k, cycles, matching, seed=1)
    assert again == out  # seeded


def test_shorten_leaves_tiny_sets_alone():
    assert shorten(4, [(0, 1, 2, 3)], None) == ([(0, 1, 2, 3)], None)
