"""The warm fast path's routing assembly: WarmStart.pair_paths (one pass in pair order) and
the garbage collector paused for the call (route_approx.warm.gc_paused)."""

from __future__ import annotations

import gc

import numpy as np
import pytest
from test_route_approx import EPS, all_to_all, edge_swap, random_regular

from topoopt_milp import registry
from topoopt_milp.methods.route_approx import warm_route
from topoopt_milp.methods.route_approx.warm import WarmStart, gc_paused
from topoopt_milp.pipeline import certify_solution


def _reference(ws: WarmStart) -> dict:
    """``pair_paths`` written directly: for every pair, in path index order, the paths with a
    positive fraction, equal ones summed (first seen first)."""
    out: dict = {}
    for j in range(len(ws.pair)):
        if ws.frac[j] <= 0:
            continue
        p = tuple(int(x) for x in ws.nodes[ws.ptr[j]:ws.ptr[j + 1]])
        d = out.setdefault(divmod(int(ws.pair[j]), ws.n), {})
        d[p] = d.get(p, 0.0) + float(ws.frac[j])
    return {k: tuple(v.items()) for k, v in out.items()}


@pytest.mark.parametrize("seed", range(4))
def test_pair_paths_matches_a_direct_merge(seed):
    """Random path sets (pairs out of order, repeated paths, zero fractions, single-path
    pairs): the same dict, the same path order within every pair, the same sums."""
    rng = np.random.default_rng(seed)
    n = 7
    pairs, paths, fracs = [], [], []
    for _ in range(60):
        s, t = rng.choice(n, 2, replace=False)
        mid = [int(x) for x in rng.choice([v for v in range(n) if v not in (s, t)],
                                          rng.integers(0, 2), replace=False)]
        pairs.append(int(s) * n + int(t))
        paths.append([int(s), *mid, int(t)])
        fracs.append(float(rng.choice([0.0, 0.125, 0.25, 0.5])))
    ptr = np.concatenate([[0], np.cumsum([len(p) for p in paths])]).astype(np.int64)
    ws = WarmStart(n, np.array(pairs, np.int64), np.concatenate(paths).astype(np.int64), ptr,
                   np.array(fracs))
    got = ws.pair_paths()
    assert got == _reference(ws)
    assert all(isinstance(v, tuple) and v for v in got.values())


def test_gc_paused_restores_the_collector_state():
    """On and off before the block: the same after it, also when the block raises."""
    was = gc.isenabled()
    try:
        gc.enable()
        with gc_paused():
            assert not gc.isenabled()
        assert gc.isenabled()
        with pytest.raises(RuntimeError), gc_paused():
            raise RuntimeError("inside")
        assert gc.isenabled()
        gc.disable()
        with gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    finally:
        (gc.enable if was else gc.disable)()


def test_warm_route_leaves_the_collector_on_and_its_result_checked():
    """A warm call through the fast path turns the collector back on; its routing passes the
    checker and its gap is within eps."""
    inst = all_to_all(16, 4)
    L = random_regular(16, 4, 3).links
    old = registry.solve(inst.with_topology(L), "route-approx")
    L2 = edge_swap(L, np.random.default_rng(3))
    assert gc.isenabled()
    new = warm_route(inst, L2, old, epsilon=EPS)
    assert gc.isenabled()
    assert "patched problem" in new.message
    assert certify_solution(inst.with_topology(L2), new).violations == ()
    assert new.gap <= EPS + 1e-12
