"""route-approx with free ring shares (route_approx.rings / choice): against the exact ring LP
(ring_lp.route_rings) on the same topology and candidates -- certified bound <= LP optimum <=
objective <= (1 + eps) LP optimum -- on several seeds, with non-symmetric MP demand,
TotientPerms and tour candidates; the bound re-derived from its lengths by weak duality;
the rings returned among the candidates; warm re-routing after a swap with a changed
candidate set; alloc-search's reroute_approx in both ring modes."""

from __future__ import annotations

import math
from itertools import combinations

import numpy as np
import pytest
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import dijkstra
from test_route_approx import edge_swap, random_regular

from topoopt_milp import registry
from topoopt_milp.core.errors import InputError
from topoopt_milp.core.instance import make_instance
from topoopt_milp.core.topology import Topology
from topoopt_milp.methods import model_data as _exact
from topoopt_milp.methods.alloc_search.reroute import reroute_approx
from topoopt_milp.methods.alloc_search.tours import tour_candidates
from topoopt_milp.methods.formulations import ring_lp
from topoopt_milp.methods.route_approx.choice import route_with_rings
from topoopt_milp.methods.route_approx.method import SPEC
from topoopt_milp.methods.route_approx.warm import INFO_KEY
from topoopt_milp.pipeline import certify_solution

EPS = 0.01


def mixed(n, d, seed, groups=((0, 2, 4, 6), (1, 3, 5, 7, 9)), mp_share=0.3):
    """AllReduce groups plus random, non-symmetric MP demand (a pair and its reverse carry
    different volumes, many pairs only one way)."""
    rng = np.random.default_rng(seed)
    mp = [(int(s), int(t), float(rng.uniform(1e6, 6e7)))
          for s, t in combinations(range(n), 2) if rng.random() < mp_share]
    mp = [(t, s, b) if rng.random() < 0.5 else (s, t, b) for s, t, b in mp]
    mp += [(t, s, b * rng.uniform(0.1, 0.9)) for s, t, b in mp[::3]]
    sizes = rng.uniform(1e8, 6e8, size=len(groups))
    return make_instance(n, d, 100.0, allreduce=list(zip(groups, sizes, strict=True)), mp=mp)


def options(**knobs):
    return SPEC.options({"epsilon": EPS, **knobs})


def assert_certified(inst, L, cands, res, exact=None):
    """Checker-clean, rings among the candidates, bound <= exact LP <= objective <= (1+eps)."""
    fixed = inst.with_topology(L)
    assert certify_solution(fixed, res).violations == ()
    assert ring_lp.in_ring_space(inst, res.routing.rings, cands)
    if exact is None:
        exact = ring_lp.route_rings(inst, Topology(L), cands)
    opt = exact.lp_s
    assert res.bound <= opt * (1 + 1e-7)
    assert res.objective >= opt * (1 - 1e-7)
    assert res.gap <= EPS + 1e-12
    assert res.objective <= opt * (1 + EPS) * (1 + 1e-9)
    return exact


@pytest.mark.parametrize("seed", range(4))
def test_totient_candidates_against_the_exact_ring_lp(seed):
    n, d = 12, 4
    inst = mixed(n, d, seed)
    L = random_regular(n, d, seed).links
    cands = ring_lp.candidate_orders(inst)
    res = route_with_rings(inst, L, cands, options(), ring_mode="choose")
    assert "free ring shares" in res.message
    assert_certified(inst, L, cands, res)


@pytest.mark.parametrize("seed", range(3))
def test_tour_candidates_against_the_exact_ring_lp(seed):
    """alloc-search's candidates: TotientPerms orders plus tours of the topology."""
    n, d = 16, 3 + (seed % 2)
    inst = mixed(n, d + d % 2, seed, groups=((0, 3, 6, 9, 12), tuple(range(1, 16, 2))))
    L = random_regular(n, inst.degree, seed).links
    cands = tour_candidates(inst, L, None, seed=seed)
    res = route_with_rings(inst, L, cands, options())
    assert_certified(inst, L, cands, res)


def test_bound_is_weak_duality_of_its_lengths():
    """The bound re-derived from the returned lengths by an independent Dijkstra:
    [sum_MP D dist + sum_g e_g min_c len(c)] / sum mu cap equals the reported bound (to the
    floating-point margin) and is at most the exact LP optimum."""
    n, d = 14, 4
    inst = mixed(n, d, 7, groups=((0, 1, 2, 3, 4, 5, 6), (7, 9, 11, 13)))
    L = random_regular(n, d, 7).links
    cands = ring_lp.candidate_orders(inst)
    res = route_with_rings(inst, L, cands, options())
    info = res.info[INFO_KEY]
    arcs = np.asarray(info["arcs"]).reshape(-1, 2)
    mu = np.asarray(info["lengths"])
    dist = dijkstra(csr_matrix((mu, (arcs[:, 0], arcs[:, 1])), shape=(n, n)), directed=True)
    unit = _exact.volume_unit(inst)
    num = math.fsum(b / unit * dist[s, t] for s, t, b in inst.mp if b > 0)
    for g, orders in cands.items():
        e = inst.allreduce[g].edge_bytes / unit
        num += e * min(sum(dist[o[i], o[(i + 1) % len(o)]] for i in range(len(o)))
                       for o in orders)
    den = float(mu @ L[arcs[:, 0], arcs[:, 1]])
    lb = num / den * _exact.seconds_per_unit(inst)
    assert res.bound == pytest.approx(lb, rel=1e-9)
    opt = ring_lp.route_rings(inst, Topology(L), cands).lp_s
    assert res.bound <= opt * (1 + 1e-7)


def test_one_candidate_per_group_is_route_approx_with_those_rings():
    """With a single candidate per group the shares are fixed: the result is within eps of
    route-milp with those rings, and rings are exactly the candidates."""
    n, d = 12, 4
    inst = mixed(n, d, 3)
    L = random_regular(n, d, 3).links
    cands = {g: [orders[1]] for g, orders in ring_lp.candidate_orders(inst).items()}
    res = route_with_rings(inst, L, cands, options())
    assert {(r.group, r.order, r.share) for r in res.routing.rings} == {
        (g, o[0], 1.0) for g, o in cands.items()}
    assert_certified(inst, L, cands, res)


def test_method_knob_rings_choose_has_the_totient_scope():
    n, d = 12, 4
    inst = mixed(n, d, 5)
    L = random_regular(n, d, 5).links
    res = registry.solve(inst.with_topology(L), "route-approx", rings="choose", epsilon=EPS)
    assert res.scope.rings == "totient" and res.scope.topology == "fixed"
    assert_certified(inst, L, ring_lp.candidate_orders(inst), res)
    cli_scope = SPEC.scope(inst.with_topology(L), SPEC.options({"rings": "choose"}))
    assert cli_scope.rings == "totient"


def test_latency_keeps_the_bound_below_the_objective():
    """With a per-hop latency the bound adds only the fewest hops any split can have."""
    n, d = 12, 4
    base = mixed(n, d, 2)
    inst = make_instance(n, d, 100.0, allreduce=[(g.members, g.bytes) for g in base.allreduce],
                         mp=base.mp, latency_us=5.0)
    L = random_regular(n, d, 2).links
    res = route_with_rings(inst, L, ring_lp.candidate_orders(inst), options())
    assert certify_solution(inst.with_topology(L), res).violations == ()
    assert res.bound <= res.objective


@pytest.mark.parametrize("seed", range(3))
def test_warm_after_a_swap_with_new_candidates(seed):
    """A chain of two swaps, each re-routed warm from the last result, the candidate set
    changing with the topology (tours of the new links): every result certified against the
    exact ring LP on its own topology and candidates."""
    n, d = 16, 4
    inst = mixed(n, d, seed, groups=((0, 4, 8, 12), tuple(range(1, 16, 2))))
    L = random_regular(n, d, seed).links
    prev = route_with_rings(inst, L, tour_candidates(inst, L, None), options())
    rng = np.random.default_rng(seed)
    for _ in range(2):
        L = edge_swap(L, rng)
        cands = tour_candidates(inst, L, None, seed=seed + 1)
        prev = route_with_rings(inst, L, cands, options(), previous=prev)
        assert "warm start" in prev.message
        assert_certified(inst, L, cands, prev)


@pytest.mark.parametrize("mode", ["choose", "tours"])
def test_reroute_approx_with_free_rings(mode):
    """alloc-search's approximate evaluation with ring choice: a checked Solution within
    eps of the exact ring LP, its rings among the candidates, warm from the current one."""
    from topoopt_milp.methods.alloc_search.reroute import reroute

    n, d = 16, 4
    inst = mixed(n, d, 11, groups=((0, 4, 8, 12), (1, 5, 9, 13), tuple(range(2, 16, 2))))
    opts = registry.get("best-start").options()
    L = random_regular(n, d, 11).links
    rings = "choose" if mode == "choose" else tour_candidates(inst, L, None)
    cur, why = reroute_approx(inst, Topology(L), opts, rings=rings)
    assert cur is not None, why
    rng = np.random.default_rng(11)
    for _ in range(2):
        L = edge_swap(L, rng)
        rings = "choose" if mode == "choose" else tour_candidates(inst, L, None)
        sol, why = reroute_approx(inst, Topology(L), opts, near=cur, rings=rings)
        assert sol is not None, why
        cands = ring_lp.candidate_orders(inst) if mode == "choose" else rings
        assert ring_lp.in_ring_space(inst, sol.rings, cands)
        ex, _ = reroute(inst, Topology(L), cands, opts)
        assert ex.objective_s * (1 - 1e-7) <= sol.objective_s <= ex.objective_s * (1 + EPS)
        assert abs(float((sol.prices * L).sum()) - 1.0) < 1e-9
        cur = sol


def test_disconnected_candidate_edge_is_an_input_error():
    inst = make_instance(8, 2, 100.0, allreduce=[((0, 1, 4, 5), 1e8)], mp=[(0, 1, 1e6)])
    two = np.zeros((8, 8), int)  # two 4-cycles: 0-1-2-3 and 4-5-6-7
    for a, b in [(0, 1), (1, 2), (2, 3), (3, 0), (4, 5), (5, 6), (6, 7), (7, 4)]:
        two[a, b] = two[b, a] = 1
    with pytest.raises(InputError, match="disconnected"):
        route_with_rings(inst, two, ring_lp.candidate_orders(inst), options())
