"""The compiled event loops (core/flowsim.py, core/levelsim.py) against the numpy reference
loop and the incremental max-min solve against a solve from scratch."""

from __future__ import annotations

import numpy as np
import pytest

from topoopt_milp.core import flowsim
from topoopt_milp.core.maxmin import MaxMin
from topoopt_milp.core.simulate import build_scenario, simulate_scenario


def _random_paths(rng, m, k):
    return [rng.choice(m, size=int(rng.integers(1, 4)), replace=False) for _ in range(k)]


@pytest.mark.parametrize("seed", range(20))
def test_compiled_max_min_and_refill_match_the_numpy_solver(seed):
    rng = np.random.default_rng(seed)
    m, k = 12, 30
    paths = _random_paths(rng, m, k)
    cap = rng.uniform(1, 10, size=m)
    prev = rng.integers(0, 4, size=k).astype(float)
    want, _ = MaxMin(paths, cap).rates(prev)
    got, _ = flowsim.maxmin_rates(paths, prev, cap)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=0)
    w = prev.copy()
    w[rng.random(k) < 0.3] -= 1
    w = np.maximum(w, 0)
    want2, _ = MaxMin(paths, cap).rates(w)
    for tight in (False, True):
        got2, _ = flowsim.refill_rates(paths, prev, w, cap, tight=tight)
        np.testing.assert_allclose(got2, want2, rtol=1e-12, atol=0)


@pytest.mark.parametrize("grow", [0, 1])
def test_tight_refill_matches_a_solve_from_scratch_and_falls_back_when_its_check_fails(grow):
    """One class loses one flow (an event of the loop) on random networks: the tight refill
    (grown by its violating class up to ``grow`` times) and the component refill both give
    the rates of a solve from scratch, and over the cases the tight set passes its check
    and fails it (then, with ``grow`` 0, the component is used; with 1, the grown set
    passes): every branch runs."""
    rng = np.random.default_rng(7)
    outcomes = set()
    for _ in range(300):
        m, k = int(rng.integers(4, 16)), int(rng.integers(5, 40))
        paths = _random_paths(rng, m, k)
        cap = rng.uniform(1, 10, size=m)
        prev = rng.integers(1, 4, size=k).astype(float)
        w = prev.copy()
        w[int(rng.integers(k))] -= 1
        want, _ = MaxMin(paths, cap).rates(w)
        for tight in (False, True):
            got, used = flowsim.refill_rates(paths, prev, w, cap, tight=tight, grow=grow)
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=0)
            if tight:
                outcomes.add(used)
    # grow 0: a failed tight set goes to the component; grow 1: it is grown and then passes
    assert outcomes >= ({"tight", "component"} if grow == 0 else {"tight", "grown"})


@pytest.mark.parametrize("latency,overhead", [(0.0, 0.0), (1e-6, 3e-6)])
@pytest.mark.parametrize("method", ["topologyfinder-lp", "expander"])
@pytest.mark.parametrize("kernel", ["levels", "classes"])
def test_compiled_loop_matches_the_numpy_loop(kernel, method, latency, overhead):
    from pathlib import Path

    from topoopt_milp.core.instance import Instance
    from topoopt_milp.pipeline import solve_checked

    path = Path(__file__).resolve().parents[1] / "instances" / "small" / "dlrm-n8-d4-s0.json"
    inst = Instance.load(path)
    res = solve_checked(inst, method)
    sc = build_scenario(inst, res.topology, res.routing, latency=latency, overhead=overhead)
    t1, d1 = simulate_scenario(sc, kernel=kernel)
    t2, d2 = simulate_scenario(sc, kernel="numpy")
    assert t1 > 0
    assert t1 == pytest.approx(t2, rel=1e-12)
    np.testing.assert_allclose(d1["ring_end"], d2["ring_end"], rtol=1e-12)
    assert d1["mp_end"] == pytest.approx(d2["mp_end"], rel=1e-12)
