"""alloc-milp's ideal-switch probe (formulations/ideal_probe.py): when it reports optimal, the
objective is the ideal switch and agrees with the plain MILP's proven optimum; above the ideal
switch it falls back to the plain MILP (hand-computed optima of test_alloc)."""

from pathlib import Path

import pytest
from helpers import checked
from test_alloc import a2a4, one_pair

from topoopt_milp import registry
from topoopt_milp.core.evaluate import ideal_switch_time
from topoopt_milp.core.instance import Instance, make_instance
from topoopt_milp.core.result import Status
from topoopt_milp.workloads import generators


@pytest.mark.parametrize("n", [6, 8])
def test_probe_matches_plain_milp(n):
    inst = generators.mixed(n, 4, 100.0, groups=2, mp_share=0.35, seed=0)
    plain = registry.solve(inst, "alloc-milp", time_limit=120)
    probed = registry.solve(inst, "alloc-milp", time_limit=120, probe_ideal=0.5)
    assert plain.status.value == "optimal"
    assert probed.status.value == "optimal"
    assert probed.objective == pytest.approx(plain.objective, rel=1e-5)
    if probed.objective <= ideal_switch_time(inst) * (1 + 1e-5):
        assert "ideal-switch probe: a topology" in probed.message
    else:
        assert "ideal-switch probe:" in probed.message


def test_probe_finds_a_topology_at_the_ideal_switch():
    """One demand 0 -> 1 with d = 2: the double link attains the ideal switch S / (2B)."""
    inst = one_pair()
    res = checked(inst, registry.solve(inst, "alloc-milp", probe_ideal=0.5, time_limit=20))
    assert res.status is Status.OPTIMAL
    assert res.objective == pytest.approx(0.5, rel=1e-5)
    assert "ideal-switch probe: a topology" in res.message


def test_probe_above_the_ideal_switch_falls_back_to_the_plain_milp():
    """All-to-all on n = 4, d = 2: the ideal switch is 1.5, the optimum (C4) 2.0; the probe
    finds nothing and the MILP that follows proves 2.0."""
    inst = a2a4()
    res = checked(inst, registry.solve(inst, "alloc-milp", probe_ideal=0.5, time_limit=20))
    assert res.status is Status.OPTIMAL
    assert res.objective == pytest.approx(2.0, rel=1e-6)
    assert "ideal-switch probe:" in res.message and "a topology" not in res.message


def test_probe_leaves_the_restricted_space_when_the_ideal_needs_more_parallel_links():
    """n = 6, d = 4, heavy pairs 0 <-> 1 and 2 <-> 3 and 4 <-> 5 carrying everything: the ideal
    switch needs four parallel links per pair, so the probe's restricted rounds (at most 2
    links per pair) are infeasible and a full-cap round finds the three quadruple links."""
    inst = make_instance(6, 4, 1.0, mp=[(a, b, 1e9) for a, b in
                                        ((0, 1), (1, 0), (2, 3), (3, 2), (4, 5), (5, 4))])
    res = checked(inst, registry.solve(inst, "alloc-milp", probe_ideal=0.9, time_limit=30))
    assert res.status is Status.OPTIMAL
    assert res.objective == pytest.approx(ideal_switch_time(inst), rel=1e-5)
    assert "at most 4 links per pair" in res.message
    assert res.topology.links[0, 1] == 4


@pytest.mark.slow
def test_probe_finds_the_mixed_n12_optimum_at_the_ideal_switch():
    """The issue-16 instance (two coset groups of 6, 35% dense MP): a topology attains the
    ideal switch 0.0981836 s (measured: 2.8-17 CPU s per HiGHS seed; plain alloc-milp needed
    about 200 s), so the probe proves it optimal."""
    inst = Instance.load(Path(__file__).parents[1] / "instances/mixed/mixed-n12-d4-g2-mp35.json")
    res = checked(inst, registry.solve(inst, "alloc-milp", probe_ideal=0.8, time_limit=240))
    assert res.status is Status.OPTIMAL
    assert res.objective == pytest.approx(ideal_switch_time(inst), rel=1e-5)
    assert "ideal-switch probe: a topology" in res.message
