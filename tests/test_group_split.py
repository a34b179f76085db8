"""group-split: ring ports and MP ports per node, rings over the patterns' cycles."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from helpers import checked

from topoopt_milp import registry
from topoopt_milp.core.instance import Instance, make_instance
from topoopt_milp.methods.heuristics import group_split as gs
from topoopt_milp.methods.heuristics.support import components

ROOT = Path(__file__).parents[1]


def pipeline(stages, blocks, d, mp_bytes=2e8, seed=0):
    """Data parallel times pipeline: group ``s`` = the nodes ``s mod stages`` (1 GB rings),
    MP between consecutive stages of a block (``stages`` consecutive nodes)."""
    rng = np.random.default_rng(seed)
    n = stages * blocks
    mp = [(b * stages + s + o, b * stages + s + 1 - o, float(mp_bytes * rng.uniform(0.8, 1.2)))
          for b in range(blocks) for s in range(stages - 1) for o in (0, 1)]
    return make_instance(n, d, 100.0, mp=mp, allreduce=[(range(s, n, stages), 1e9)
                                                          for s in range(stages)])


@pytest.mark.parametrize("k", [6, 8, 16, 18])
@pytest.mark.parametrize("ports", [2, 3, 4])
def test_pattern_is_regular_and_its_cycles_are_one_hop_hamiltonian(k, ports):
    P = gs.pattern(k, ports)
    assert (P == P.T).all() and (np.diag(P) == 0).all()
    assert (P.sum(axis=1) == ports).all()
    cycles = gs.pattern_cycles(P, 8, np.random.default_rng(0))
    assert cycles
    for o in cycles:
        assert sorted(o) == list(range(k))
        assert all(P[a, b] for a, b in zip(o, o[1:] + o[:1]))
    if ports == 3:  # the matching's links are on some cycle: rings use all three ports
        used = {frozenset(e) for o in cycles for e in zip(o, o[1:] + o[:1])}
        assert len(used) > k


@pytest.mark.parametrize("d", [4, 8])
def test_links_regular_connected_rings_whole_groups(d):
    inst = pipeline(4, 8, d)
    L, rings, a, made = gs.group_split_links(inst)
    assert (L == L.T).all() and (np.diag(L) == 0).all() and (L >= 0).all()
    assert (L.sum(axis=1) == d).all()
    assert components(L).max() == 0
    assert 2 <= a < d and made > 0
    for g, grp in enumerate(inst.allreduce):
        mine = [r for r in rings if r.group == g]
        assert sum(r.share for r in mine) == pytest.approx(1.0)
        assert all(sorted(r.order) == sorted(grp.members) for r in mine)


def test_mp_links_spread_over_the_stage_pairs():
    # a plain maximum matching of every block's chain links stages (0,1), (2,3) only; the
    # divisor gives every pair of consecutive stages its links
    inst = pipeline(4, 8, 4)
    L, _, a, made = gs.group_split_links(inst)
    assert a == 3
    stage = np.arange(inst.n) % 4
    for s in range(3):
        pair = (stage[:, None] == s) & (stage[None, :] == s + 1)
        assert L[pair].sum() >= 2, s


def test_ring_ports_rule():
    inst = pipeline(4, 8, 4)
    assert gs.ring_ports(inst) == 3
    assert gs.ring_ports(inst, 2) == 2 and gs.ring_ports(inst, 9) == 4
    rings_only = make_instance(16, 4, 100.0, mp=[], allreduce=[(range(s, 16, 4), 1e9)
                                                                 for s in range(4)])
    assert gs.ring_ports(rings_only) == 4  # no MP between groups: every port to the rings


@pytest.mark.parametrize("method", ["group-split", "group-split-lp"])
def test_solutions_checked(method):
    checked(pipeline(4, 4, 4), registry.solve(pipeline(4, 4, 4), method))


@pytest.mark.slow
def test_alloc_search_routes_it_with_its_own_orders_and_beats_totientperms():
    # the case it is for (module docstring): gpt3-13b-n32-d4, measured 0.3436 s (the start
    # group-split with its own orders, free split) against TotientPerms + LP 0.3574 s
    inst = Instance.load(ROOT / "instances/coopt/gpt3-13b-n32-d4.json")
    res = registry.solve(inst, "alloc-search", rings="tours", time_limit=30)
    checked(inst, res)
    own = [s for s in res.info["trajectory"]
           if s["kind"].startswith("start:group-split:") and s["kind"].endswith(":own-rings")]
    assert any(s["accepted"] for s in own)
    assert res.objective < 0.98 * registry.solve(inst, "totientperms-lp").objective


@pytest.mark.parametrize("d", [3, 4])
def test_without_allreduce_every_port_goes_to_mp_links(d):
    inst = make_instance(12, d, 100.0, mp=[(i, j, 1e6 * (1 + (i * j) % 5)) for i in range(12)
                                           for j in range(12) if i != j])
    L, rings, a, made = gs.group_split_links(inst)
    assert not rings and a == d and made > 0
    assert (L.sum(axis=1) == d).all() and components(L).max() == 0
    checked(inst, registry.solve(inst, "group-split"))


@pytest.mark.parametrize("k", [5, 8, 16, 31])
@pytest.mark.parametrize("ports", [2, 3, 4])
def test_random_pattern_is_regular_and_made_of_its_cycles(k, ports):
    drawn = gs.random_pattern(k, ports, np.random.default_rng(k + ports))
    if ports % 2 and k % 2:  # no perfect matching on an odd set: one port is left over
        ports -= 1
    assert drawn is not None
    P, cycles = drawn
    assert (P == P.T).all() and (np.diag(P) == 0).all() and P.max() == 1
    assert (P.sum(axis=1) == ports).all()
    assert len(cycles) == ports // 2
    for o in cycles:
        assert sorted(o) == list(range(k))
        assert all(P[a, b] for a, b in zip(o, o[1:] + o[:1]))
    assert set(gs.pattern_cycles(P, 0, np.random.default_rng(0), cycles)) >= {
        gs._undirected(o) for o in cycles}


def test_random_pattern_gives_up_on_sets_too_small_for_disjoint_cycles():
    assert gs.random_pattern(4, 4, np.random.default_rng(0)) is None  # K4: 6 edges < 8
    assert gs.random_pattern(2, 2, np.random.default_rng(0)) is None


def test_one_group_of_all_nodes_random_pattern_is_an_expander_of_rings():
    # one AllReduce over every node plus light all-to-all (ncf's shape): the random pattern's
    # cycles are one-hop rings and the graph's average distance is far below the circulant's
    n = 64
    inst = make_instance(n, 4, 100.0, allreduce=[(range(n), 1e9)],
                         mp=[(i, j, 2e5) for i in range(n) for j in range(n) if i != j])
    dist = {}
    for kind in ("jumps", "random"):
        L, rings, a, made = gs.group_split_links(inst, kind=kind)
        assert a == 4 and made == 0 and (L.sum(axis=1) == 4).all()
        one_hop = [r.share for r in rings if np.all(L[r.order, np.roll(r.order, -1)] > 0)]
        assert sum(one_hop) > 0.99
        dist[kind] = gs.shortest_path(gs.csr_matrix(L), unweighted=True).mean()
    assert dist["random"] < 0.8 * dist["jumps"]
    res = {p: registry.solve(inst, "group-split", pattern=p) for p in ("jumps", "random", "best")}
    assert res["best"].objective == min(res["jumps"].objective, res["random"].objective)
    assert res["random"].objective < res["jumps"].objective
    checked(inst, res["best"])


@pytest.mark.parametrize("kind", ["best", "spiral"])
def test_the_construction_takes_one_pattern(kind):
    # best is the method's choice between two constructions, not a construction
    with pytest.raises(ValueError, match="pattern"):
        gs.group_split_links(pipeline(4, 4, 4), kind=kind)


def test_load_rule_gives_lighter_groups_fewer_ring_ports():
    # four disjoint groups, ring bytes 1 : 2 : 3 : 4 GB, little MP: ports ~ d w_S / E
    n, d = 32, 4
    inst = make_instance(n, d, 100.0, mp=[(i, i + 1, 1e7) for i in range(n - 1)],
                         allreduce=[(range(s, n, 4), 1e9 * (s + 1)) for s in range(4)])
    merged, weight, _ = gs.merged_groups(inst)
    ports = gs.load_ports(inst, merged, weight, gs.ring_ports(inst))
    by_group = [ports[tuple(range(s, n, 4))] for s in range(4)]
    assert by_group == sorted(by_group) and by_group[0] < by_group[-1]
    assert min(by_group) >= 1 and max(by_group) <= gs.ring_ports(inst)
    L, rings, a, made = gs.group_split_links(inst, rule="load")
    assert (L.sum(axis=1) == d).all() and components(L).max() == 0
    checked(inst, registry.solve(inst, "group-split-lp", port_rule="load"))


def test_load_rule_leaves_overlapping_sets_to_the_uniform_rule():
    inst = make_instance(16, 4, 100.0, mp=[], allreduce=[(range(16), 1e9), (range(8), 1e9)])
    merged, weight, _ = gs.merged_groups(inst)
    assert gs.load_ports(inst, merged, weight, 4) is None
    uniform = gs.group_split_links(inst)[0]
    assert (gs.group_split_links(inst, rule="load")[0] == uniform).all()


@pytest.mark.parametrize("k", [8, 16])
def test_matching_jump_of_an_odd_share(k):
    half = gs.pattern(k, 3, k // 2)  # the diameters i <-> i + k/2
    assert (half.sum(axis=1) == 3).all()
    assert all(half[i, i + k // 2] for i in range(k // 2))
    odd = gs.pattern(k, 3, 5)  # i <-> i + 5 for even i
    assert (odd.sum(axis=1) == 3).all() and all(odd[i, (i + 5) % k] for i in range(0, k, 2))
    # an even jump other than k/2 (no perfect matching) or one the rings use: the default
    assert (gs.pattern(k, 3, 2) == gs.pattern(k, 3)).all()
    assert (gs.pattern(k, 3, 1) == gs.pattern(k, 3)).all()


def test_cycle_rule_links_the_stages_in_a_cycle():
    # four stages: every node keeps three ring ports and gets one cross link, to the stage
    # before or after its own, and the last stage is linked to the first (no MP there)
    inst = pipeline(4, 8, 4)
    L, _, a, made = gs.group_split_links(inst, cross="cycle", jump=4)
    assert a == 3 and made == 16
    assert (L.sum(axis=1) == 4).all() and components(L).max() == 0
    stage = np.arange(inst.n) % 4
    cross = L * (stage[:, None] != stage[None, :])
    assert (cross.sum(axis=1) == 1).all()
    pairs = {(int(min(stage[u], stage[v])), int(max(stage[u], stage[v])))
             for u, v in zip(*np.nonzero(cross))}
    assert pairs == {(0, 1), (1, 2), (2, 3), (0, 3)}
    # pipeline partners where the stages meet: every 0-1 link joins one block
    for u, v in zip(*np.nonzero(cross)):
        if {stage[u], stage[v]} == {0, 1}:
            assert u // 4 == v // 4


def test_cycle_rule_tries_the_matchings_near_half():
    inst = pipeline(4, 8, 4)
    res = registry.solve(inst, "group-split", cross="cycle", pattern="jumps")
    checked(inst, res)
    assert "matching k/2" in res.message and "cycle and MP" in res.message
    with pytest.raises(ValueError, match="cross"):
        gs.group_split_links(inst, cross="ring")
