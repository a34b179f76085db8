"""The idle-capacity lemma (methods/bounds/idle.py) and the hop-counting bounds that use it
(matching, port-hop) against brute force, on traffic whose nodes send and receive unequal
volumes: every d-regular multigraph on n <= 7 nodes, each routed optimally by the LP with a
free ring split over the scope's orders."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.sparse.csgraph import shortest_path
from test_alloc_benders import mixed, regular_multigraphs
from test_bounds_neighbourhood import brute_optimum

from topoopt_milp import registry
from topoopt_milp.core.evaluate import arc_loads, ideal_switch_time
from topoopt_milp.core.instance import make_instance
from topoopt_milp.methods.bounds import counting, matching
from topoopt_milp.methods.bounds.idle import idle_capacity


def skewed(n, d, seed, sinks=2, ring=0.0):
    """Dense MP in which every node sends four times more to the ``sinks`` (the first nodes)
    than to the others and the sinks send a third as much: the sinks receive far more than
    they send, so their out-arcs cannot all be busy."""
    rng = np.random.default_rng(seed)
    w = rng.uniform(0.2, 1.0, (n, n))
    w[:, :sinks] *= 4.0
    w[:sinks, :] *= 0.3
    np.fill_diagonal(w, 0)
    w *= 3e8 / w.sum(1).max()
    mp = [(i, j, float(w[i, j])) for i in range(n) for j in range(n) if i != j]
    return make_instance(n, d, 100.0, mp=mp,
                         allreduce=[(range(sinks, n, 2), ring)] if ring > 0 else [])


def without_idle(monkeypatch, bound, inst, scope):
    """``bound`` as it was before the lemma: the arcs' whole capacity ``n d c`` usable."""
    with monkeypatch.context() as m:
        m.setattr(matching, "idle_capacity", lambda _inst: 0.0)
        m.setattr(counting, "idle_capacity", lambda _inst: 0.0)
        return bound(inst, scope)


def test_idle_capacity_is_the_imbalance():
    """``sum_v max(0, in_v - out_v)``: zero when every node sends what it receives (rings,
    symmetric MP), the sinks' surplus otherwise."""
    ring_only = make_instance(6, 2, 100.0, allreduce=[(range(6), 1e8)])
    assert idle_capacity(ring_only) == 0.0
    funnel = make_instance(4, 2, 100.0, mp=[(1, 0, 3e8), (2, 0, 1e8), (0, 3, 1e8)])
    # node 0 receives 4e8 and sends 1e8, node 3 receives 1e8 and sends nothing
    assert idle_capacity(funnel) == pytest.approx(3e8 + 1e8)


@pytest.mark.parametrize(("n", "d", "seed"), [(6, 2, 1), (6, 2, 3), (7, 2, 0), (5, 4, 2)])
def test_lemma_on_every_small_topology(n, d, seed):
    """On every d-regular multigraph (connected) routed by the route LP, the byte-hops (the sum
    of the arc loads) are at most ``n d c - I`` with ``c = B T`` of that routing."""
    inst = skewed(n, d, seed)
    I_ = idle_capacity(inst)
    B = inst.link_bytes_per_s
    checked = 0
    for L in regular_multigraphs(n, d):
        if not np.isfinite(shortest_path(L > 0, unweighted=True)).all():
            continue  # disconnected: nothing routes the dense MP
        res = registry.solve(inst.with_topology(L), "route-milp")
        hops = float(arc_loads(n, res.routing).sum())
        assert hops <= n * d * B * res.objective - I_ + 1e-6 * hops
        checked += 1
    assert checked > 0


@pytest.mark.parametrize("make", [lambda: skewed(6, 2, 1), lambda: skewed(6, 2, 3, 3),
                                  lambda: skewed(7, 2, 0), lambda: skewed(6, 2, 0, 2, 1e8),
                                  lambda: skewed(6, 2, 2, 1), lambda: skewed(5, 4, 2),
                                  lambda: mixed(6, 2, 2, 0.6, 1)])
@pytest.mark.parametrize("scope", ["any", "totient"])
def test_bounds_never_above_the_brute_force_optimum(make, scope):
    inst = make()
    opt = brute_optimum(inst, scope)
    assert matching.matching_bound(inst, scope) <= opt * (1 + 1e-6)
    assert counting.port_hop_bound(inst, scope) <= opt * (1 + 1e-6)


@pytest.mark.parametrize(("make", "gain"), [(lambda: skewed(6, 2, 3, 3), 1.07),
                                            (lambda: skewed(7, 2, 0), 1.025)])
def test_the_idle_capacity_raises_the_matching_bound(monkeypatch, make, gain):
    """Measured: 0.01200 -> 0.01295 s (6 nodes, 3 sinks; ideal switch 0.01200 s, optimum
    0.01508 s) and 0.01794 -> 0.01845 s (7 nodes; optimum 0.02246 s)."""
    inst = make()
    before = without_idle(monkeypatch, matching.matching_bound, inst, "any")
    assert before <= ideal_switch_time(inst) * (1 + 1e-9)  # the plain count saw nothing
    assert matching.matching_bound(inst, "any") >= gain * before
