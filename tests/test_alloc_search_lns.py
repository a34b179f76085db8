"""alloc-search's large-neighbourhood moves (methods/alloc_search/lns.py): the sub-MILP is
alloc-milp's model restricted to the links inside S (brute force over every completion),
with S = every node it is alloc-milp itself, it keeps every link outside S and the port
budget, and the search with the moves stays checked and never worse than its start."""

from __future__ import annotations

from itertools import product

import numpy as np
import pytest
from helpers import checked

from topoopt_milp import registry
from topoopt_milp.core.instance import make_instance
from topoopt_milp.core.params import SolveOptions
from topoopt_milp.core.topology import Topology
from topoopt_milp.methods.alloc_search import lns
from topoopt_milp.methods.alloc_search.reroute import reroute
from topoopt_milp.methods.formulations.ring_lp import candidate_orders


def mixed(n, d, seed):
    rng = np.random.default_rng(seed)
    mp = [(i, j, float(rng.uniform(1e7, 1e8))) for i in range(n) for j in range(n)
          if i != j and rng.random() < 0.33]
    return make_instance(n, d, 100.0, mp=mp, allreduce=[(range(s, n, 2), 4e8) for s in range(2)])


def completions(L, S, d, cap):
    """Every link matrix equal to ``L`` outside ``S`` with the port budget inside it."""
    S = sorted(S)
    inS = np.zeros(len(L), dtype=bool)
    inS[S] = True
    need = {v: d - int(L[v][~inS].sum()) for v in S}
    pairs = [(i, j) for a, i in enumerate(S) for j in S[a + 1:]]
    for xs in product(range(cap + 1), repeat=len(pairs)):
        deg = dict.fromkeys(S, 0)
        for (i, j), x in zip(pairs, xs, strict=True):
            deg[i] += x
            deg[j] += x
        if deg != need:
            continue
        M = L.copy()
        for (i, j), x in zip(pairs, xs, strict=True):
            M[i, j] = M[j, i] = x
        yield M


@pytest.mark.parametrize("seed", [0, 1])
def test_sub_milp_is_the_best_completion_by_brute_force(seed):
    inst = mixed(8, 3, seed)
    L = registry.solve(inst, "expander", seed=seed).topology.links
    opts = SolveOptions()
    cur, _ = reroute(inst, Topology(L), "choose", opts)
    heat = lns.node_heat(L, np.zeros(L.shape), cur.prices)
    S, seed_node = lns.hot_set(L, heat, 5)
    assert len(S) == 5 and seed_node in S
    sub = lns.solve_sub(inst, L, S, candidate_orders(inst), 2, opts, 60)
    assert sub.status == "optimal"
    best, count = np.inf, 0
    for M in completions(L, S, 3, 2):
        count += 1
        sol, _ = reroute(inst, Topology(M), "choose", opts)
        if sol is not None:
            best = min(best, sol.objective_s)
    assert count > 1  # a neighbourhood with a choice in it
    assert sub.objective_s == pytest.approx(best, rel=1e-6)
    assert sub.objective_s <= cur.objective_s * (1 + 1e-7)  # L itself is a completion
    out = np.ones(8, dtype=bool)
    out[S] = False
    assert (sub.links[out] == L[out]).all() and (sub.links[:, out] == L[:, out]).all()
    assert (sub.links.sum(axis=1) == 3).all() and (sub.links == sub.links.T).all()
    routed, why = reroute(inst, Topology(sub.links), "choose", opts)
    assert routed is not None, why
    assert routed.objective_s == pytest.approx(sub.objective_s, rel=1e-6)


def test_sub_milp_on_every_node_is_alloc_milp():
    inst = mixed(8, 4, 0)
    L = registry.solve(inst, "expander").topology.links
    sub = lns.solve_sub(inst, L, range(8), candidate_orders(inst), 4, SolveOptions(), 120)
    opt = registry.solve(inst, "alloc-milp", time_limit=120)
    assert sub.status == "optimal" and opt.status.value == "optimal"
    assert sub.objective_s == pytest.approx(opt.objective, rel=1e-6)


def test_hot_set_takes_the_hottest_nodes_with_their_neighbours():
    L = np.zeros((8, 8), dtype=int)
    for i in range(8):  # the 8-cycle
        L[i, (i + 1) % 8] = L[(i + 1) % 8, i] = 1
    heat = np.arange(8, dtype=float)
    S, seed = lns.hot_set(L, heat, 3)
    assert seed == 7 and S == [0, 6, 7]
    S, seed = lns.hot_set(L, heat, 5, tabu=[7])
    assert seed == 6 and S == [3, 4, 5, 6, 7]  # 7 is tabu as a seed, not as a neighbour


def test_search_with_lns_is_checked_and_no_worse_than_its_start():
    inst = mixed(12, 4, 3)
    res = registry.solve(inst, "alloc-search", time_limit=10, lns_size=6, lns_time=3,
                         tries=1, patience=1)
    checked(inst, res)
    assert (res.topology.degrees() == 4).all()
    steps = res.info["trajectory"]
    assert any(s["kind"].startswith("lns:") for s in steps)  # the moves ran
    routed = [s["routed_s"] for s in res.info["starts"] if s["routed_s"] is not None]
    assert res.objective <= min(routed) * (1 + 1e-9)
