"""alloc-milp's ideal-switch probe (knob probe_ideal): optimal when the optimum is the ideal
switch, and the plain MILP's answer when it is not (hand-computed optima of test_alloc)."""

from __future__ import annotations

import pytest
from helpers import checked
from test_alloc import a2a4, one_pair

from topoopt_milp import registry
from topoopt_milp.core.result import Status


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
