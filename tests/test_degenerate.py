"""Degenerate but valid instances get a meaningful status: zero traffic is optimal with
objective and bound 0; an unroutable instance is infeasible (never ``error obj=0``).

Instances come from generators (seeded), not from fixed examples; the infeasibility proof
(:func:`topoopt_milp.core.evaluate.unroutable`) is checked against brute force over all matchings.
"""

from __future__ import annotations

import itertools
import random

import pytest

from topoopt_milp import registry
from topoopt_milp.cli import main
from topoopt_milp.core.evaluate import unroutable
from topoopt_milp.core.instance import make_instance
from topoopt_milp.core.result import Status
from topoopt_milp.core.topology import Topology
from topoopt_milp.pipeline import solve_checked

EXACT = ("alloc-milp", "select-milp", "joint-milp")
RESTRICTED = ("alloc-cpsat", "select-cpsat", "joint-cpsat")
HEURISTICS = ("totientperms", "topologyfinder", "expander", "demand-greedy", "totientperms-lp",
              "topologyfinder-lp")


def zero_traffic(rng: random.Random):
    """An instance whose every volume is 0: no traffic, zero-byte demands or groups."""
    n = rng.choice([4, 6])
    members = sorted(rng.sample(range(n), rng.randrange(2, n + 1)))
    kind = rng.choice(["none", "zero mp", "zero group", "both"])
    mp = [(s, t, 0.0) for s, t in itertools.permutations(range(n), 2)][: rng.randrange(1, 6)]
    return make_instance(n, 2, rng.choice([10.0, 100.0]),
                         mp=mp if kind in ("zero mp", "both") else (),
                         allreduce=[(members, 0.0)] if kind in ("zero group", "both") else ())


def unroutable_instance(rng: random.Random):
    """Degree 1 (every topology a matching) and traffic joining 3+ servers."""
    n = rng.choice([4, 6])
    a, b, c = rng.sample(range(n), 3)
    if rng.random() < 0.5:
        return make_instance(n, 1, 100.0, mp=[(a, b, 1e6), (a, c, 2e6)])
    return make_instance(n, 1, 100.0, allreduce=[([a, b, c], 1e7)])


@pytest.mark.parametrize("k", range(4))
def test_zero_traffic_is_optimal_with_objective_and_bound_zero(k):
    inst = zero_traffic(random.Random(100 + k))
    for m in EXACT:
        res = solve_checked(inst, m, time_limit=20)
        assert res.status is Status.OPTIMAL, (m, res.status, res.message)
        assert res.objective == 0 and res.bound == 0 and not res.violations, (m, res)
    for m in RESTRICTED + HEURISTICS:
        res = solve_checked(inst, m, time_limit=20)
        assert res.status is Status.FEASIBLE and res.objective == 0 and not res.violations, m
    fixed = inst.with_topology(Topology.circulant(inst.n, [1]).links)
    res = solve_checked(fixed, "route-milp")
    assert res.status is Status.OPTIMAL and res.objective == 0 and res.bound == 0


@pytest.mark.parametrize("k", range(4))
def test_unroutable_instance_is_infeasible(k):
    inst = unroutable_instance(random.Random(200 + k))
    assert unroutable(inst)
    for m in EXACT + HEURISTICS:
        res = solve_checked(inst, m, time_limit=20)
        assert res.status is Status.INFEASIBLE, (m, res.status, res.message)
        assert res.topology is None and res.objective is None and not res.violations
        assert "infeasible" in res.message, (m, res.message)
    for m in RESTRICTED:  # a restricted model's infeasibility proves nothing about the problem
        assert solve_checked(inst, m, time_limit=20).status is Status.NO_SOLUTION, m


def _routable_by_some_matching(n: int, pairs) -> bool:
    """Brute force: some matching of K_n joins every traffic pair."""
    def matchings(free):
        if not free:
            yield []
            return
        v, rest = free[0], free[1:]
        yield from matchings(rest)  # v unmatched
        for u in rest:
            for m in matchings([w for w in rest if w != u]):
                yield [(v, u), *m]

    for m in matchings(list(range(n))):
        mate = {a: b for a, b in m} | {b: a for a, b in m}
        if all(mate.get(s) == t for s, t in pairs):
            return True
    return False


@pytest.mark.parametrize("seed", range(40))
def test_unroutable_matches_brute_force_at_degree_one(seed):
    rng = random.Random(seed)
    n = rng.choice([4, 5, 6])
    mp = [(s, t, rng.choice([0.0, 1e6])) for s, t in
          (rng.sample(range(n), 2) for _ in range(rng.randrange(1, 4)))]
    groups = [(rng.sample(range(n), rng.choice([2, 3])), rng.choice([0.0, 1e7]))
              for _ in range(rng.randrange(0, 2))]
    inst = make_instance(n, 1, 100.0, mp=mp, allreduce=groups, regular=False)
    pairs = [(s, t) for s, t, b in mp if b > 0]
    pairs += [(ms[0], v) for ms, b in groups if b > 0 for v in ms[1:]]
    assert (unroutable(inst) is None) == _routable_by_some_matching(n, pairs)


def test_degree_two_or_more_is_always_routable():
    rng = random.Random(7)
    for _ in range(20):
        n = rng.randrange(3, 12)
        d = rng.randrange(2, n)
        mp = [(s, t, 1e6) for s, t in itertools.permutations(range(n), 2) if rng.random() < 0.5]
        inst = make_instance(n, d, 100.0, mp=mp, regular=n * d % 2 == 0)
        assert unroutable(inst) is None


def test_cli_reports_infeasible_with_exit_zero(runner, tmp_path):
    path = tmp_path / "u.json"
    unroutable_instance(random.Random(1)).save(path)
    for m in ("alloc-milp", "topologyfinder"):
        r = runner.invoke(main, ["solve", str(path), "-m", m, "--out", str(tmp_path / "o.json")])
        assert r.exit_code == 0, r.output
        assert r.stdout.split()[:2] == [m, "infeasible"], r.stdout
    assert registry.get("alloc-milp").max_n == 64
