"""Each method's declared size limit and memory estimate (:mod:`topoopt_milp.core.sizes`): the
estimate follows the model actually built, and a request beyond either limit is refused at
once, naming the size and the limit."""

from __future__ import annotations

import time

import numpy as np
import pytest

from topoopt_milp import registry
from topoopt_milp.core import sizes
from topoopt_milp.core.backends import pulp_backend
from topoopt_milp.core.sizes import SizeError
from topoopt_milp.methods.formulations import alloc, joint, route_lp, select_flow
from topoopt_milp.workloads import generators


def _built_nonzeros(monkeypatch, module, name, count) -> list[int]:
    """Patch the solver entry point ``module.name`` to record the model's nonzeros."""
    seen: list[int] = []
    real = getattr(module, name)

    def spy(model, *args, **kwargs):
        seen.append(count(model))
        return real(model, *args, **kwargs)

    monkeypatch.setattr(module, name, spy)
    return seen


def _pulp_nnz(prob) -> int:
    return pulp_backend.pulp_to_matrix(prob).A.nnz


def _cpsat_nnz(model) -> int:
    proto = model.Proto()
    return sum(len(c.linear.vars) for c in proto.constraints) + len(proto.variables)


CASES = [  # method, module whose solver call builds the model, its name, nonzero counter, knobs
    ("alloc-milp", alloc, "solve_pulp", _pulp_nnz, {}),
    ("alloc-milp", alloc, "solve_pulp", _pulp_nnz, {"rings": "given"}),
    ("joint-milp", joint, "solve_pulp", _pulp_nnz, {}),
    ("select-milp", select_flow, "solve_pulp", _pulp_nnz, {}),
    ("alloc-cpsat", alloc, "_run_cpsat", _cpsat_nnz, {}),
    ("route-milp", route_lp, "solve_model", lambda m: m.A.nnz, {"formulation": "source"}),
    ("route-milp", route_lp, "solve_model", lambda m: m.A.nnz, {"formulation": "per-pair"}),
]


@pytest.mark.parametrize("n", [6, 8])
@pytest.mark.parametrize("case", CASES, ids=[f"{c[0]}-{'-'.join(c[4].values())}" for c in CASES])
def test_estimate_follows_the_built_model(monkeypatch, case, n):
    method, module, name, count, knobs = case
    inst = generators.sparse(n, 2 if method.startswith("joint") else 4, pairs=n, groups=1,
                             group_size=4, seed=n)
    if method.startswith("route"):
        inst = inst.with_topology(registry.solve(inst, "expander").topology.links)
    m = registry.get(method)
    options = m.options({**knobs, "time_limit": 5, "auto_warm_start": False})
    est = sizes.check(m, inst, options)
    seen = _built_nonzeros(monkeypatch, module, name, count)
    registry.solve(inst, method, options)
    assert seen, "the model was not built"
    ratio = est.nonzeros / seen[0]
    assert 0.5 <= ratio <= 2.5, (method, knobs, est.nonzeros, seen[0])


def test_beyond_max_n_is_refused_at_once_naming_size_and_limit():
    inst = generators.permutation(2000, 8, seed=1)
    for name in ("alloc-milp", "joint-milp", "alloc-cpsat", "select-milp", "route-cpsat"):
        m = registry.get(name)
        t0 = time.perf_counter()
        with pytest.raises(SizeError) as info:
            registry.solve(inst, name)
        assert time.perf_counter() - t0 < 5
        text = str(info.value)
        assert text.startswith(f"{name}: n = 2000 ") and f"n <= {m.max_n}" in text, text
        assert " GB for " in text, text


def test_memory_estimate_beyond_the_limit_is_refused(monkeypatch):
    inst = generators.uniform(24, 4)
    monkeypatch.setenv("TOPOOPT_MEMORY_GB", "0.01")
    with pytest.raises(SizeError, match=r"alloc-milp: n = 24 needs ~0\.0\d+ GB for its S \(n-1\)"
                                        r"\^2 = 1\.27e\+04 flow variables .*memory limit is 0\.01 GB"):
        registry.solve(inst, "alloc-milp", time_limit=5)  # the limit: a test that cannot hang
    with pytest.raises(SizeError, match="expander: n = 24 needs"):
        monkeypatch.setenv("TOPOOPT_MEMORY_GB", "1e-6")
        registry.solve(inst, "expander", time_limit=5)
    for bad in ("x", "-1", "nan", "0"):
        monkeypatch.setenv("TOPOOPT_MEMORY_GB", bad)
        with pytest.raises(SizeError, match="TOPOOPT_MEMORY_GB: expected a positive number"):
            sizes.memory_limit()


def test_default_limit_is_a_share_of_physical_memory(monkeypatch):
    monkeypatch.delenv("TOPOOPT_MEMORY_GB", raising=False)
    assert 1e8 < sizes.memory_limit() < 1e14


CAPPED_HEURISTICS = {"alloc-search": 256, "hop-anneal": 1024, "alloc-orbit": 512}
MODEL_HEURISTICS = {"alloc-orbit"}  # a heuristic that solves a MILP: sized by its model


def test_heuristics_are_limited_by_the_instance_cap_only():
    inst = generators.permutation(32, 4, seed=2)
    for name, m in registry.METHODS.items():
        est = sizes.check(m, inst, m.options({}))
        assert est.bytes > 0 or name.startswith("route"), name
        if m.kind == "heuristic":
            assert (est.nonzeros is None) == (name not in MODEL_HEURISTICS), name
            # the heuristics whose spec caps n, each for a reason of its own: alloc-search
            # re-routes by an LP per accepted move (256); hop-anneal keeps the n x n hop
            # matrix and a BFS from every node per move (1024); alloc-orbit's MILP has
            # period * n^2 flow columns (512)
            assert m.max_n == CAPPED_HEURISTICS.get(name), name


def test_max_n_travels_with_the_method_spec():
    m = registry.get("alloc-milp")
    assert registry.get(m.ref) == m and m.max_n == 64


def test_free_pairs_counts_overlapping_groups_without_listing_them():
    """The mask count of sizes._free_pairs equals the listed pairs on random overlapping and
    disjoint groups (issue 20: listing 10^8 pairs at n = 10^4 took 300 s CPU inside the
    memory check, i.e. inside lower-bounds' and route-approx's time limit)."""
    from topoopt_milp.core.sizes import _free_pairs

    rng = np.random.default_rng(3)
    for trial in range(30):
        n = int(rng.integers(4, 40))
        groups = [np.sort(rng.choice(n, int(rng.integers(2, n + 1)), replace=False))
                  for _ in range(int(rng.integers(0, 5)))]
        if trial % 3 == 0:  # disjoint groups
            perm = rng.permutation(n)
            groups = [np.sort(perm[: n // 2]), np.sort(perm[n // 2:])]
        k = int(rng.integers(0, n * 2))
        mp = rng.integers(0, n, size=(k, 2))
        mp = mp[mp[:, 0] != mp[:, 1]]
        listed = {(int(a), int(b)) for a, b in mp}
        for ms in groups:
            listed |= {(int(a), int(b)) for a in ms for b in ms if a != b}
        assert _free_pairs(n, mp.astype(np.int64), groups) == len(listed), trial
