"""The level engine (core/levelsim.py, core/levels_kernel.py: rates kept per bottleneck arc)
against the numpy reference loop and the class engine (core/flowsim.py), on random scenarios
larger than those of test_simulate_incremental.py (up to ~80 path classes of up to 6 arcs,
some crossing an arc twice, up to 8 rings of up to 8 flows, up to 60 MP flows): rings alone,
MP flows alone, both, and multi-path ring edges, with and without latency."""

from __future__ import annotations

import numpy as np
import pytest

from topoopt_milp.core.simulate import RingPlan, Scenario, simulate_scenario

KINDS = ("rings", "mp", "mixed", "multipath")


def _scenario(seed: int, kind: str, latency: float, overhead: float) -> Scenario:
    """A random scenario of ``kind`` (module docstring); ``multipath``: every ring flow of a
    step on its own class, several classes per ring edge, as LP routings split them."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(5, 12))
    arcs = [(i, j) for i in range(n) for j in range(n) if i != j and rng.random() < 0.5]
    arcs += [(0, 1)] * max(0, 6 - len(arcs))
    m = len(arcs)
    # equal capacities make equal levels (ties between arcs) common, as on real topologies
    cap = np.full(m, 1e9) if rng.random() < 0.3 else rng.choice([1.0, 1.5, 2.0, 3.0], size=m) * 1e9
    k = int(rng.integers(5, 80))
    paths = []
    for _ in range(k):
        p = rng.choice(m, size=int(rng.integers(1, min(7, m))), replace=False)
        if rng.random() < 0.1:
            p = np.concatenate([p, p[:1]])  # an arc crossed twice
        paths.append(np.sort(p))
    rings = []
    if kind != "mp":
        for r in range(int(rng.integers(1, 9))):
            width = int(rng.integers(1, 9)) * (3 if kind == "multipath" else 1)
            cls = rng.integers(0, k, size=width)
            vol = np.full(width, 1e6) if rng.random() < 0.6 else rng.uniform(1e5, 2e6, size=width)
            rings.append(RingPlan(f"ring {r}", r, width, int(rng.integers(1, 9)),
                                  cls.astype(np.int64), vol))
    n_mp = 0 if kind in ("rings", "multipath") else int(rng.integers(1, 60))
    mp_cls = rng.integers(0, k, size=n_mp).astype(np.int64)
    mp_bytes = rng.uniform(1e5, 5e6, size=n_mp) if rng.random() < 0.5 else np.full(n_mp, 1e6)
    return Scenario(n, np.asarray(arcs, dtype=np.int64), cap, paths, tuple(rings), mp_cls,
                    mp_bytes, np.arange(n_mp, dtype=np.int64), latency, overhead)


@pytest.mark.parametrize("latency,overhead", [(0.0, 0.0), (1e-4, 3e-4)])
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("seed", range(6))
def test_level_engine_matches_the_reference_and_the_class_engine(seed, kind, latency, overhead):
    sc = _scenario(100 * seed + KINDS.index(kind), kind, latency, overhead)
    t1, d1 = simulate_scenario(sc, trace=True, kernel="levels")
    t2, d2 = simulate_scenario(sc, trace=True, kernel="numpy")
    t3, d3 = simulate_scenario(sc, kernel="classes")
    assert t1 > 0
    assert t1 == pytest.approx(t2, rel=1e-12)
    assert t1 == pytest.approx(t3, rel=1e-12)
    np.testing.assert_allclose(d1["ring_end"], d2["ring_end"], rtol=1e-12)
    assert d1["mp_end"] == pytest.approx(d2["mp_end"], rel=1e-12)
    np.testing.assert_allclose(d1["busy"], d2["busy"], rtol=1e-9)
    # per flow: the same (kind, owner, step, class, bytes) end at the same times
    key = lambda row: row[:5]  # noqa: E731
    a, b = sorted(d1["trace"], key=key), sorted(d2["trace"], key=key)
    assert [key(r) for r in a] == [key(r) for r in b]
    np.testing.assert_allclose([r[5:] for r in a], [r[5:] for r in b], rtol=1e-9, atol=1e-18)


def test_level_engine_pivots_and_solves_incrementally():
    """Over the random scenarios the level solve moves classes between groups (pivots) and
    mostly succeeds without a solve from scratch: the incremental path is what is tested."""
    pivots = partial = fallbacks = 0
    for seed in range(10):
        _, d = simulate_scenario(_scenario(seed, "mixed", 0.0, 0.0), kernel="levels")
        pivots += d["retries"]
        partial += d["partial_solves"]
        fallbacks += d["fallbacks"]
    assert pivots > 0
    assert partial > 0 and fallbacks < partial / 2


def test_unknown_kernel_is_refused():
    sc = _scenario(0, "rings", 0.0, 0.0)
    with pytest.raises(ValueError, match="kernel"):
        simulate_scenario(sc, kernel="fast")


def test_level_engine_on_ends_closer_than_the_rounding_of_the_clock():
    """TopologyFinder+LP on bert-n16-d4 with whole bytes (as the SimGrid comparison plays
    it): flow ends a few bytes apart, closer than an ulp of the time, where the level
    engine's service counters once passed a target unseen and the loop stalled."""
    from dataclasses import replace
    from pathlib import Path

    from topoopt_milp.core.instance import Instance
    from topoopt_milp.core.simulate import build_scenario
    from topoopt_milp.pipeline import solve_checked

    path = Path(__file__).resolve().parents[1] / "instances" / "coopt" / "bert-n16-d4.json"
    inst = Instance.load(path)
    res = solve_checked(inst, "topologyfinder-lp", time_limit=30)
    sc = build_scenario(inst, res.topology, res.routing)
    sc = replace(sc, rings=tuple(replace(r, bytes=np.round(r.bytes)) for r in sc.rings),
                 mp_bytes=np.round(sc.mp_bytes))
    t1, d1 = simulate_scenario(sc, kernel="levels")
    t2, d2 = simulate_scenario(sc, kernel="numpy")
    assert t1 == pytest.approx(t2, rel=1e-12)
    np.testing.assert_allclose(d1["ring_end"], d2["ring_end"], rtol=1e-12)
