"""The topology step of alloc-alternate against brute force over every link matrix."""

from __future__ import annotations

from itertools import combinations

import numpy as np
import pytest

from topoopt_milp.methods.alloc_alternate.link_step import best_links, congestion_of, pair_loads

B = 1.25e9  # 10 Gbps


def all_link_vectors(n: int, d: int, cap: int, regular: bool) -> np.ndarray:
    """Every symmetric integer L (zero diagonal, L_ij <= cap, row sums == d, or <= d) as rows
    of link counts over ``combinations(range(n), 2)``."""
    pairs = list(combinations(range(n), 2))
    last = {v: max(k for k, p in enumerate(pairs) if v in p) for v in range(n)}
    deg = np.zeros(n, dtype=np.int64)
    cur = [0] * len(pairs)
    out = []

    def rec(k):
        if k == len(pairs):
            out.append(list(cur))
            return
        i, j = pairs[k]
        for c in range(min(cap, d - deg[i], d - deg[j]) + 1):
            deg[i] += c
            deg[j] += c
            # a regular node must be complete after its last pair
            if not regular or all(deg[v] == d for v in (i, j) if last[v] == k):
                cur[k] = c
                rec(k + 1)
            deg[i] -= c
            deg[j] -= c
        cur[k] = 0

    rec(0)
    return np.array(out, dtype=float)


_ENUM: dict = {}


def brute_force(W, d, cap, regular):
    """``min_L max_{w > 0} w / (L B)`` over every valid L (vectorised over the enumeration)."""
    n = W.shape[0]
    key = (n, d, cap, regular)
    if key not in _ENUM:
        _ENUM[key] = all_link_vectors(*key)
    Ls = _ENUM[key]
    w = pair_loads(W)[np.triu_indices(n, 1)]
    pos = w > 0
    with np.errstate(divide="ignore"):
        util = np.where(Ls[:, pos] > 0, w[pos] / np.maximum(Ls[:, pos], 1), np.inf)
    return float(util.max(axis=1, initial=0.0).min()) / B


def random_loads(rng, n, d, density):
    """Loads on a random subset of pairs whose support fits the budget (max d pairs a node)."""
    W = np.zeros((n, n))
    deg = np.zeros(n, dtype=int)
    for i, j in rng.permutation(list(combinations(range(n), 2))):
        if rng.random() < density and deg[i] < d and deg[j] < d:
            deg[i] += 1
            deg[j] += 1
            W[i, j] = rng.choice([0.0, 1.0, 2.0, 3.0, 5.0]) * 1e8 * rng.uniform(0.5, 1.5)
            W[j, i] = rng.uniform(0.0, 1.0) * W[i, j] if rng.random() < 0.7 else 0.0
    return W


CASES = [(n, d, cap, regular) for n in (4, 5, 6) for d in (2, 3) for cap in (1, 2, 3)
         for regular in (True, False) if cap <= d and (n * d % 2 == 0 or not regular)]


@pytest.mark.parametrize(("n", "d", "cap", "regular"), CASES)
def test_topology_step_is_optimal_against_brute_force(n, d, cap, regular):
    rng = np.random.default_rng(1000 * n + 100 * d + 10 * cap + regular)
    checked = 0
    for _ in range(6):
        W = random_loads(rng, n, d, density=0.6)
        want = brute_force(W, d, cap, regular)
        if not np.isfinite(want):
            with pytest.raises(ValueError, match="loads"):
                best_links(W, d, B, regular, cap)
            continue
        step = best_links(W, d, B, regular, cap)
        L = step.links
        assert (L == L.T).all() and not np.diag(L).any() and L.min() >= 0 and L.max() <= cap
        deg = L.sum(axis=1)
        assert (deg == d).all() if regular else (deg <= d).all()
        got = congestion_of(pair_loads(W), L, B)
        assert got == pytest.approx(step.t_star, rel=1e-12)
        assert got == pytest.approx(want, rel=1e-9), (W, L)
        checked += 1
    assert checked >= 3


def test_uncapped_completion_criterion_is_exact():
    """n = 4, d = 3: loads forcing three links 0-1 leave r = (0, 0, 3, 3): the completion
    is three parallel 2-3 links (max r = sum r / 2 is still completable)."""
    W = np.zeros((4, 4))
    W[0, 1] = 3e8
    step = best_links(W, 3, B, regular=True, cap=3)
    assert step.links[0, 1] == 3 and step.links[2, 3] == 3
    assert step.t_star == pytest.approx(1e8 / B)
    # with a cap of 2 the pair 2-3 cannot take three links: 0-1 gets 1 link, T = 3e8 / B
    capped = best_links(W, 3, B, regular=True, cap=2)
    assert capped.links.max() <= 2 and (capped.links.sum(axis=1) == 3).all()
    assert capped.t_star == pytest.approx(brute_force(W, 3, 2, True))


def test_spare_ports_are_spent_where_both_ends_are_free():
    """Non-regular, d = 2: nodes 0 and 1 are full with their loaded pairs, so T* is set by
    0-1 on one link; the free ports of nodes 2 and 3 can only pair with each other."""
    W = np.zeros((4, 4))
    W[0, 1], W[0, 2], W[1, 3] = 4e8, 1e8, 3e8
    step = best_links(W, 2, B, regular=False, cap=2)
    assert step.t_star == pytest.approx(4e8 / B)
    assert step.links[1, 3] == 1 and step.links[0, 1] == 1 and step.links[0, 2] == 1
    # ports left: node 2 and node 3 (one each): the only pair with both free is 2-3
    assert step.links[2, 3] == 1


def test_loads_that_no_budget_carries_are_refused():
    W = np.zeros((4, 4))
    W[0, 1:] = 1.0  # node 0 needs three neighbours, d = 2
    with pytest.raises(ValueError, match="loads"):
        best_links(W, 2, B)


def test_value_decides_spare_ports_before_bytes():
    """Non-regular, d = 2, cap 1, one loaded pair 0-1: without values the spare ports go by
    node ids (0-2, 1-2); values on 0-3 and 1-3 send them there instead; T* is unchanged."""
    W = np.zeros((4, 4))
    W[0, 1] = 1e8
    plain = best_links(W, 2, B, regular=False, cap=1)
    assert plain.links[0, 2] == plain.links[1, 2] == 1 and not plain.links[3].any()
    value = np.zeros((4, 4))
    value[0, 3] = value[1, 3] = 0.5
    guided = best_links(W, 2, B, regular=False, cap=1, value=value)
    assert guided.links[0, 3] == guided.links[1, 3] == 1 and not guided.links[2].any()
    assert guided.t_star == plain.t_star == pytest.approx(1e8 / B)
