"""alloc-orbit: the shift symmetry of an instance, the link-orbit model and its annealing.

The orbit model is checked against the full models it restricts: with the identity as the
symmetry its MILP is alloc-milp (same optimum), a coarser symmetry only adds topologies (its
optimum is never higher), and on an invariant topology its route LP equals the full route LP
with the same ring orders. The method's solutions pass the independent checker and never
beat alloc-milp's proven optimum."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import checked

from topoopt_milp import registry
from topoopt_milp.core.backends.pulp_backend import solve_model
from topoopt_milp.core.instance import make_instance
from topoopt_milp.core.params import ParamError, SolveOptions
from topoopt_milp.core.result import Status
from topoopt_milp.core.topology import Topology
from topoopt_milp.methods.alloc_orbit import model as M
from topoopt_milp.methods.alloc_orbit import search, symmetry
from topoopt_milp.methods.formulations.ring_lp import route_rings


def blocks(n, d, s=2, mp_bytes=2e8, ar_bytes=(4e8, 1e8)):
    """Coset AllReduce groups mod ``s`` and an MP chain inside every block of ``s``: period
    ``s`` (the rotation by ``s`` maps everything onto itself, no smaller one does)."""
    mp = [(b + t, b + t + 1, mp_bytes * (t + 1)) for b in range(0, n, s) for t in range(s - 1)]
    groups = [(range(t, n, s), ar_bytes[t % len(ar_bytes)]) for t in range(s)]
    return make_instance(n, d, 100.0, mp=mp, allreduce=groups)


def orbit_optimum(inst, s, cap=1):
    om = M.build(inst, s, symmetry.ring_orders(inst, s), cap)
    out = solve_model(om.model, SolveOptions())
    assert out.status is Status.OPTIMAL
    return om.time_s(out.x), om.orbits.links(out.x[om.iz:om.itheta])


def test_period_of_block_instances_and_of_broken_symmetry():
    assert symmetry.period(blocks(16, 4, s=4)) == 4
    assert symmetry.period(blocks(12, 4, s=2)) == 2
    uniform = make_instance(8, 4, 100.0, mp=[(i, j, 1e6) for i in range(8) for j in range(8)
                                             if i != j])
    assert symmetry.period(uniform) == 1
    broken = blocks(16, 4, s=4)
    broken = make_instance(16, 4, 100.0, mp=[*broken.mp, (0, 5, 1e6)],
                           allreduce=[(g.members, g.bytes) for g in broken.allreduce])
    assert symmetry.period(broken) == 16
    # a group that is not a coset of the rotation breaks it too
    odd = make_instance(8, 2, 100.0, allreduce=[((0, 1, 2), 1e8)])
    assert symmetry.period(odd) == 8


def test_orbits_round_trip_and_degrees():
    orb = M.Orbits.of(16, 4)
    rng = np.random.default_rng(0)
    for cap in (1, 2):
        z = search.random_state(orb, 3, cap, rng)
        assert z is not None and z.max() <= cap
        L = orb.links(z)
        assert np.array_equal(L, L.T) and not np.diag(L).any()
        assert (L.sum(axis=1) == 3).all()
        assert symmetry.is_invariant(L, 4)
        assert np.array_equal(orb.of_links(L), z)
        for _ in range(200):  # moves keep every degree and the cap
            m = search.move(orb, z, cap, rng)
            if m is not None:
                assert (orb.degrees(m) == 3).all() and m.max() <= cap
                assert (orb.links(m).sum(axis=1) == 3).all()
                z = m


@pytest.mark.parametrize("seed", range(3))
def test_orbit_route_lp_equals_the_full_route_lp(seed):
    inst = blocks(12, 4, s=2)
    orders = symmetry.ring_orders(inst, 2)
    orb = M.Orbits.of(12, 2)
    z = search.random_state(orb, 4, 1, np.random.default_rng(seed))
    L = orb.links(z)
    om = M.build(inst, 2, orders, 1, support=L)
    out = solve_model(om.model, SolveOptions())
    full = route_rings(inst, Topology(L), orders, SolveOptions())
    assert om.time_s(out.x) == pytest.approx(full.objective_s, rel=1e-6)


def test_identity_orbit_milp_is_alloc_milp_and_coarser_symmetry_never_worse():
    inst = blocks(8, 3, s=2)
    full = checked(inst, registry.solve(inst, "alloc-milp", rings="choose", max_multiplicity=1,
                                        time_limit=120))
    assert full.status is Status.OPTIMAL
    t8, _ = orbit_optimum(inst, 8)
    t4, L4 = orbit_optimum(inst, 4)
    t2, L2 = orbit_optimum(inst, 2)
    assert t8 == pytest.approx(full.objective, rel=1e-5)
    assert t8 <= t4 * (1 + 1e-6) and t4 <= t2 * (1 + 1e-6)
    assert symmetry.is_invariant(L2, 2) and symmetry.is_invariant(L4, 4)


def test_method_checked_invariant_and_never_below_the_optimum():
    inst = blocks(8, 3, s=2)
    opt = registry.solve(inst, "alloc-milp", rings="choose", time_limit=120)
    assert opt.status is Status.OPTIMAL
    res = checked(inst, registry.solve(inst, "alloc-orbit", time_limit=20, budget=5))
    assert res.status is Status.FEASIBLE and res.bound is None
    assert symmetry.is_invariant(res.topology.links, 2)
    assert (res.topology.degrees() == 3).all()
    assert res.objective >= opt.objective * (1 - 1e-6)
    # never worse than the invariant heuristics it starts from, routed the same way
    assert res.info["orbit_value_s"] <= res.info["anneal"]["start_s"] * (1 + 1e-9)


def test_method_without_symmetry_and_a_wrong_period():
    rng = np.random.default_rng(1)
    mp = [(i, j, 1e8) for i in range(10) for j in range(10) if i != j and rng.random() < 0.3]
    inst = make_instance(10, 4, 100.0, mp=mp)
    res = registry.solve(inst, "alloc-orbit", time_limit=20)
    assert res.status is Status.NO_SOLUTION and "no shift symmetry" in res.message
    assert res.runtime_s < 5
    with pytest.raises(ParamError, match="period: v -> v \\+ 3 is not a symmetry"):
        registry.solve(blocks(8, 3, s=2), "alloc-orbit", period=3, time_limit=5)
