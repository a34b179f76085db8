"""The compiled event loops (core/flowsim.py and core/levelsim.py) with their incremental
per-event bookkeeping (pending and active slot lists, per-class counts and a dirty list
instead of passes over every slot and class) against the numpy reference loop, on random
small scenarios: rings of several widths and step counts, multi-path ring edges, MP flows,
with and without latency."""

from __future__ import annotations

import numpy as np
import pytest

from topoopt_milp.core.simulate import RingPlan, Scenario, simulate_scenario


def _random_scenario(seed: int, latency: float, overhead: float) -> Scenario:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(4, 8))
    arcs = [(i, j) for i in range(n) for j in range(n) if i != j and rng.random() < 0.6]
    m = len(arcs)
    cap = rng.choice([1.0, 2.0, 3.0], size=m) * 1e9
    # paths: 1-3 distinct arcs each (the engines do not need them to be connected walks)
    k = int(rng.integers(3, 12))
    paths = [np.sort(rng.choice(m, size=int(rng.integers(1, 4)), replace=False)) for _ in range(k)]
    rings = []
    for r in range(int(rng.integers(0, 4))):
        width = int(rng.integers(1, 5))
        cls = rng.integers(0, k, size=width)
        # equal bytes per flow make simultaneous ends (ties) common, as in real ring steps
        vol = np.full(width, 1e6) if rng.random() < 0.5 else rng.uniform(1e5, 2e6, size=width)
        rings.append(RingPlan(f"ring {r}", r, width, int(rng.integers(1, 7)), cls.astype(np.int64),
                              vol))
    n_mp = int(rng.integers(0 if rings else 1, 8))
    mp_cls = rng.integers(0, k, size=n_mp).astype(np.int64)
    mp_bytes = rng.uniform(1e5, 5e6, size=n_mp)
    return Scenario(n, np.asarray(arcs, dtype=np.int64), cap, paths, tuple(rings), mp_cls,
                    mp_bytes, np.arange(n_mp, dtype=np.int64), latency, overhead)


@pytest.mark.parametrize("latency,overhead", [(0.0, 0.0), (1e-4, 3e-4)])
@pytest.mark.parametrize("seed", range(25))
@pytest.mark.parametrize("kernel", ["levels", "classes"])
def test_incremental_compiled_loop_matches_the_reference_loop(kernel, seed, latency, overhead):
    sc = _random_scenario(seed, latency, overhead)
    t1, d1 = simulate_scenario(sc, trace=True, kernel=kernel)
    t2, d2 = simulate_scenario(sc, trace=True, kernel="numpy")
    assert t1 > 0
    assert t1 == pytest.approx(t2, rel=1e-12)
    np.testing.assert_allclose(d1["ring_end"], d2["ring_end"], rtol=1e-12)
    assert d1["mp_end"] == pytest.approx(d2["mp_end"], rel=1e-12)
    assert d1["events"] == d2["events"]
    np.testing.assert_allclose(d1["busy"], d2["busy"], rtol=1e-9)
    # per flow: the same (kind, owner, step, class, bytes) end at the same times
    key = lambda row: row[:5]  # noqa: E731
    a, b = sorted(d1["trace"], key=key), sorted(d2["trace"], key=key)
    assert [key(r) for r in a] == [key(r) for r in b]
    np.testing.assert_allclose([r[5:] for r in a], [r[5:] for r in b], rtol=1e-12, atol=1e-18)
