"""group-rings: the groups' rings inside the groups, cross links by the MP share."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from helpers import checked

from topoopt_milp import registry
from topoopt_milp.core.instance import Instance, make_instance
from topoopt_milp.methods.formulations import ring_lp
from topoopt_milp.methods.heuristics import group_rings as gr
from topoopt_milp.methods.heuristics.support import components

ROOT = Path(__file__).parents[1]


def cosets(n, d, groups, mp_bytes, seed=0):
    """``groups`` coset AllReduce groups of 1 GB plus dense random MP of ``mp_bytes`` each."""
    rng = np.random.default_rng(seed)
    mp = [(i, j, float(mp_bytes * rng.uniform(0.5, 1.5))) for i in range(n) for j in range(n)
          if i != j]
    return make_instance(n, d, 100.0, mp=mp, allreduce=[(range(s, n, groups), 1e9)
                                                          for s in range(groups)])


@pytest.mark.parametrize("d", [3, 4, 8])
@pytest.mark.parametrize("scale", [0.0, 1.0, 3.0])
def test_links_regular_connected_and_rings_whole_groups(d, scale):
    inst = cosets(24, d, 4, 2e6)
    L, rings, made = gr.group_ring_links(inst, scale)
    assert (L == L.T).all() and (np.diag(L) == 0).all() and (L >= 0).all()
    assert (L.sum(axis=1) == d).all()
    assert components(L).max() == 0  # the MP spans the groups: one component
    assert ring_lp.in_ring_space(inst, rings)  # the groups' TotientPerms orders
    for g in range(len(inst.allreduce)):
        assert sum(r.share for r in rings if r.group == g) == pytest.approx(1.0)


def test_cross_swaps_follow_the_mp_share():
    inst = cosets(32, 4, 4, 2e6)
    share = gr.mp_share(inst)
    assert 0 < share < 1
    for scale in (0.5, 1.0, 2.0):
        _, _, made = gr.group_ring_links(inst, scale)
        assert made == round(scale * share * 32 * 4 / 4)
    _, _, none = gr.group_ring_links(inst, 0.0)
    assert none == 0


def test_gateways_spread_over_each_group():
    # the swaps' nodes are distinct (evenly spaced along each ring), none gets two cross links
    inst = cosets(64, 4, 4, 4e6)
    L, _, made = gr.group_ring_links(inst, 1.0)
    group = np.arange(64) % 4
    cross = (L * (group[:, None] != group[None, :])).sum(axis=1)
    assert made >= 4 and cross.max() == 1 and cross.sum() == 4 * made


def test_without_allreduce_it_is_totientperms_circulant():
    inst = make_instance(16, 4, 100.0, mp=[(i, j, 1e6) for i in range(16) for j in range(16)
                                           if i != j])
    L, rings, made = gr.group_ring_links(inst)
    assert made == 0 and not rings
    assert (registry.solve(inst, "totientperms").topology.links == L).all()


@pytest.mark.parametrize("method", ["group-rings", "group-rings-lp"])
def test_solutions_checked(method):
    inst = cosets(16, 4, 4, 2e6, seed=1)
    checked(inst, registry.solve(inst, method))


def test_lp_variant_beats_topologyfinder_on_coset_groups_with_little_mp():
    # the case it is for (module docstring): mixed-n32-d4-g4-mp05, measured 0.0685 s against
    # TopologyFinder's and TotientPerms' 0.0767 s with LP routing
    inst = Instance.load(ROOT / "instances/mixed/mixed-n32-d4-g4-mp05.json")
    mine = registry.solve(inst, "group-rings-lp").objective
    for other in ("topologyfinder-lp", "totientperms-lp"):
        assert mine < 0.95 * registry.solve(inst, other).objective, other
