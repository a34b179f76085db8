"""alloc-milp's ideal-switch probe (formulations/ideal_probe.py): when it reports optimal, the
objective is the ideal switch and agrees with the plain MILP's proven optimum."""

import pytest

from topoopt_milp import registry
from topoopt_milp.core.evaluate import ideal_switch_time
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
