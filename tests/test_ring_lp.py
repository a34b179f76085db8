"""The route LP with free ring shares: against route-milp with fixed rings and against
alloc-milp's own model with the links fixed."""

from __future__ import annotations

from itertools import combinations, product

import networkx as nx
import numpy as np
import pytest
from helpers import checked

from topoopt_milp import registry
from topoopt_milp.core.backends.pulp_backend import solve_pulp
from topoopt_milp.core.evaluate import evaluate
from topoopt_milp.core.instance import make_instance
from topoopt_milp.core.result import Status
from topoopt_milp.core.topology import Ring, Topology, default_rings
from topoopt_milp.methods import model_data as _exact
from topoopt_milp.methods.formulations import alloc, ring_lp


def mixed(n=8, d=3, seed=0):
    """Two AllReduce groups (one of size 4, one of size 5, overlapping) plus random MP."""
    rng = np.random.default_rng(seed)
    mp = [(int(s), int(t), float(rng.uniform(1e7, 6e7)))
          for s, t in combinations(range(n), 2) if rng.random() < 0.3]
    mp += [(t, s, b / 2) for s, t, b in mp[::2]]
    return make_instance(n, d, 100.0, allreduce=[((0, 2, 4, 6), 4e8), ((1, 2, 3, 5, 7), 2e8)],
                         mp=mp)


def regular_topology(n, d, seed):
    g = nx.random_regular_graph(d, n, seed=seed)
    assert nx.is_connected(g)
    return Topology.from_link_list(n, [[u, v, 1] for u, v in g.edges()])


def route_milp(inst, topo, rings):
    res = registry.solve(inst.with_topology(topo.links, rings=rings), "route-milp")
    assert res.status is Status.OPTIMAL
    return res.objective




def test_single_candidate_equals_route_milp_with_those_rings():
    inst = mixed()
    topo = regular_topology(8, 3, 1)
    cands = ring_lp.candidate_orders(inst)
    for pick in ((0, 0), (1, 2), (0, 3)):
        fixed = {g: [cands[g][k % len(cands[g])]] for g, k in zip(sorted(cands), pick)}
        rr = checked(inst, ring_lp.route_rings(inst, topo, fixed))
        rings = [Ring(g, o[0], 1.0) for g, o in fixed.items()]
        assert rr.objective_s == pytest.approx(route_milp(inst, topo, rings), rel=1e-6)
        assert {(r.group, r.order) for r in rr.rings} == {(r.group, r.order) for r in rings}


def test_free_shares_never_worse_than_any_fixed_choice():
    inst = mixed()
    topo = regular_topology(8, 3, 2)
    cands = ring_lp.candidate_orders(inst)
    free = checked(inst, ring_lp.route_rings(inst, topo))
    assert ring_lp.in_ring_space(inst, free.rings)
    assert abs(sum(r.share for r in free.rings if r.group == 0) - 1) < 1e-12
    fixed_values = []
    for combo in product(*(cands[g] for g in sorted(cands))):
        rings = [Ring(g, o, 1.0) for g, o in zip(sorted(cands), combo)]
        fixed_values.append(route_milp(inst, topo, rings))
    fixed_values.append(route_milp(inst, topo, default_rings(inst)))  # half each way round
    assert free.objective_s <= min(fixed_values) * (1 + 1e-6)
    assert free.lp_s <= min(fixed_values) * (1 + 1e-7)


def alloc_value_with_links_fixed(inst, L):
    """alloc-milp's own model (rings "choose") with every x_ij fixed to L_ij: an LP."""
    options = registry.get("alloc-milp").options()
    prob, parts = alloc.build_milp(inst, options)
    for (i, j), var in parts["x"].items():
        var.lowBound = var.upBound = int(L[i, j])
    out = solve_pulp(prob, options)
    assert out.status is Status.OPTIMAL
    return _exact.seconds_per_unit(inst) / out.objective


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_matches_alloc_milp_with_its_links_fixed(seed):
    inst = mixed(seed=seed)
    L = regular_topology(8, 3, seed).links.copy()
    L[0, 1] += 1  # a multigraph: move one link so a pair is doubled
    L[1, 0] += 1
    a, b = next((a, b) for a in range(2, 8) for b in range(a + 1, 8) if L[0, a] and L[1, b]
                and not L[a, b])
    L[0, a] = L[a, 0] = L[1, b] = L[b, 1] = 0
    L[a, b] = L[b, a] = 1
    topo = Topology(L)
    if not topo.is_connected():
        pytest.skip("the swap disconnected this draw")
    rr = checked(inst, ring_lp.route_rings(inst, topo))
    want = alloc_value_with_links_fixed(inst, L)
    assert rr.lp_s == pytest.approx(want, rel=1e-6)
    assert rr.objective_s == pytest.approx(want, rel=1e-5)


def test_alloc_milp_optimum_is_reproduced_on_its_topology():
    inst = make_instance(8, 4, 100.0, allreduce=[(range(8), 1e8)],
                         mp=[(0, 5, 3e7), (5, 0, 3e7), (2, 7, 1e7), (1, 6, 2e7)])
    opt = registry.solve(inst, "alloc-milp", time_limit=60)
    assert opt.status is Status.OPTIMAL
    rr = checked(inst, ring_lp.route_rings(inst, opt.topology))
    assert rr.objective_s == pytest.approx(opt.objective, rel=1e-6)


def test_hop_penalty_costs_at_most_its_bound_and_unloads_arcs():
    inst = mixed(seed=4)
    topo = regular_topology(8, 3, 4)
    exact = ring_lp.route_rings(inst, topo)
    pen = checked(inst, ring_lp.route_rings(inst, topo, hop_penalty=1e-3))
    hops = evaluate(inst, exact.topology, exact.routing)["avg_hops"]
    # U_eps <= U* + eps * H*, in time units of seconds_per_unit
    assert pen.objective_s <= exact.objective_s + 1e-3 * hops * _exact.seconds_per_unit(inst) * (
        1 + 1e-6)
    from topoopt_milp.core.evaluate import arc_loads

    assert (arc_loads(8, pen.routing) > 0).sum() <= (arc_loads(8, exact.routing) > 0).sum()


def test_ring_space_membership():
    inst = mixed()
    assert ring_lp.in_ring_space(inst, default_rings(inst))
    assert ring_lp.candidate_orders(inst)[0] == [(0, 2, 4, 6), (0, 6, 4, 2)]
    assert not ring_lp.in_ring_space(inst, [Ring(0, (0, 4, 2, 6), 1.0)])  # no multiplier m
    assert not ring_lp.in_ring_space(inst, [Ring(1, (1, 3, 2, 5, 7), 1.0)])


def test_disconnected_candidate_edge_is_a_clear_error():
    inst = make_instance(4, 1, 100.0, allreduce=[((0, 1, 2), 1e8)])
    topo = Topology.from_link_list(4, [[0, 1, 1], [2, 3, 1]])
    with pytest.raises(ValueError, match="topology"):
        ring_lp.route_rings(inst, topo)


def test_duals_price_the_links():
    """sum_a pi_a L_a = 1 (the reduced cost of U), every arc's gain is its price where flow
    runs, and one more link on the highest-priced pair lowers U (LP sensitivity)."""
    inst = mixed(seed=5)
    topo = regular_topology(8, 3, 5)
    rr = ring_lp.route_rings(inst, topo)
    L = topo.links
    assert (rr.prices * L).sum() == pytest.approx(1.0, rel=1e-6)
    from topoopt_milp.core.evaluate import arc_loads

    used = arc_loads(8, rr.routing) > 1e-6 * rr.objective_s
    assert np.abs(rr.gains - rr.prices)[used].max() < 1e-6
    assert (rr.gains >= -1e-9).all()
    pair = rr.prices + rr.prices.T
    i, j = np.unravel_index(np.argmax(pair), pair.shape)
    more = L.copy()
    more[i, j] += 1
    more[j, i] += 1
    better = ring_lp.route_rings(inst, Topology(more)).lp_s
    assert better < rr.lp_s * (1 - 1e-4)
    # first order: U falls by at most U * (pi_ij + pi_ji) per unit of capacity (convexity)
    assert better >= rr.lp_s * (1 - pair[i, j]) * (1 - 1e-6)
