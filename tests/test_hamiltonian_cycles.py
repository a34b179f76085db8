"""core.tours.hamiltonian_cycles against brute force."""

from __future__ import annotations

import itertools

import networkx as nx
import numpy as np
import pytest

from topoopt_milp.core.tours import hamiltonian_cycles


def brute(adj):
    """Every Hamiltonian cycle from 0, a cycle and its reverse once."""
    k = len(adj)
    out = set()
    for rest in itertools.permutations(range(1, k)):
        o = (0, *rest)
        if all(adj[a, b] for a, b in zip(o, o[1:] + o[:1])):
            out.add(min(o, (0, *reversed(rest))))
    return out


def graphs():
    rng = np.random.default_rng(0)
    yield nx.to_numpy_array(nx.complete_graph(5), dtype=np.int64)
    yield nx.to_numpy_array(nx.petersen_graph(), dtype=np.int64)  # none
    for seed in range(4):
        yield nx.to_numpy_array(nx.random_regular_graph(3, 8, seed=seed), dtype=np.int64)
    A = (rng.random((8, 8)) < 0.5).astype(np.int64)
    yield np.triu(A, 1) + np.triu(A, 1).T


@pytest.mark.parametrize("adj", list(graphs()))
def test_all_cycles_when_the_budget_allows(adj):
    found = hamiltonian_cycles(adj, 10_000)
    keys = {min(o, (0, *reversed(o[1:]))) for o in found}
    assert len(keys) == len(found)  # a cycle and its reverse count once
    assert keys == brute(adj)
    for o in found:
        assert o[0] == 0 and sorted(o) == list(range(len(adj)))


def test_count_and_budget_cut_the_search():
    adj = nx.to_numpy_array(nx.complete_graph(7), dtype=np.int64)  # 360 cycles
    assert len(hamiltonian_cycles(adj, 10)) == 10
    assert len(hamiltonian_cycles(adj, 10_000, budget=50)) < 360
    assert hamiltonian_cycles(np.zeros((2, 2)), 5) == [(0, 1)]
