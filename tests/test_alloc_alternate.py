"""alloc-alternate: checked solutions, never worse than its start, never better than
alloc-milp's proven optimum, rings inside alloc-milp's ring space."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from topoopt_milp import registry
from topoopt_milp.core.check import check_solution
from topoopt_milp.core.evaluate import evaluate
from topoopt_milp.core.instance import Instance, make_instance
from topoopt_milp.core.result import Status, solution_dict
from topoopt_milp.methods.alloc_alternate import search as alloc_alternate
from topoopt_milp.methods.formulations import ring_lp

SMALL = Path(__file__).parents[1] / "instances" / "small"


def mixed(n, d, seed):
    """AllReduce on the cosets of size n/2 plus random MP on a third of the pairs."""
    rng = np.random.default_rng(seed)
    mp = [(i, j, float(rng.uniform(1e7, 1e8))) for i in range(n) for j in range(n)
          if i != j and rng.random() < 0.33]
    return make_instance(n, d, 100.0, mp=mp,
                         allreduce=[(range(s, n, 2), 4e8) for s in range(2)])


CASES = [("mixed6", lambda: mixed(6, 3, 0)), ("mixed8", lambda: mixed(8, 4, 1)),
         ("sparse8", lambda: Instance.load(SMALL / "sparse-n8-d4-s0.json")),
         ("dlrm8", lambda: Instance.load(SMALL / "dlrm-n8-d4-s0.json"))]


def run(inst, **extra):
    res = registry.solve(inst, 'alloc-alternate', time_limit=60, **extra)
    metrics = evaluate(inst, res.topology, res.routing)
    assert check_solution(inst.to_dict(), solution_dict(res, inst, metrics)) == []
    return res


@pytest.mark.parametrize(("name", "make"), CASES)
def test_checked_between_start_and_proven_optimum(name, make):
    inst = make()
    res = run(inst, max_iterations=25)
    assert res.status is Status.FEASIBLE and res.bound is None
    assert ring_lp.in_ring_space(inst, res.routing.rings)
    assert res.topology.links.max() <= inst.degree
    traj = res.info["trajectory"]
    json.dumps(traj)  # the trajectory is part of the solution file
    starts = [s["objective_s"] for s in traj if s["kind"].startswith("start:") and s["accepted"]]
    # the warm start (best-start) and the start heuristics; identical topologies routed once
    assert 1 <= len(starts) <= len(alloc_alternate.STARTS) + 1
    assert res.objective <= min(starts) * (1 + 1e-9)
    # never worse than any start heuristic routed by the ring LP
    for st in alloc_alternate.start_topologies(inst, registry.run_method):
        assert ring_lp.in_ring_space(inst, st.routing.rings), st.method
        assert res.objective <= ring_lp.route_rings(inst, st.topology).objective_s * (1 + 1e-6)
    opt = registry.solve(inst, "alloc-milp", time_limit=120)
    assert opt.status is Status.OPTIMAL, opt.message
    assert res.objective >= opt.objective * (1 - 1e-6)


def test_trajectory_is_monotone_in_its_accepted_steps():
    """Within a chain every accepted step is no worse than the last accepted one; a restart
    begins a new chain from a start; the result is the best accepted solution."""
    inst = mixed(8, 3, 2)
    res = run(inst, max_iterations=30)
    traj = res.info["trajectory"]
    current = min(s["objective_s"] for s in traj if s["kind"].startswith("start:"))
    for s in traj:
        if s["kind"].startswith("start:"):
            continue
        if s["kind"] == "restart":
            current = s["objective_s"]
        elif s["accepted"]:
            assert s["objective_s"] <= current * (1 + 1e-9)
            current = s["objective_s"]
    assert any(s["kind"].startswith("release") and s["accepted"] for s in traj)
    assert res.objective == pytest.approx(min(s["objective_s"] for s in traj if s["accepted"]),
                                          rel=1e-9)


def test_release_moves_come_after_the_plain_step():
    inst = mixed(8, 4, 3)
    topo = alloc_alternate.start_topologies(inst, registry.run_method)[0].topology
    rr = ring_lp.route_rings(inst, topo)
    from topoopt_milp.core.evaluate import arc_loads

    gen = list(alloc_alternate.moves(arc_loads(8, rr.routing), topo.links, 1, 5))
    assert gen[0] == ("alternate", ())
    assert all(kind == "release" and 1 <= len(rel) <= 2 for kind, rel in gen[1:])
    batched = list(alloc_alternate.moves(arc_loads(8, rr.routing), topo.links, 3, 5))
    assert max(len(rel) for _, rel in batched) > 2


def test_time_limit_and_iteration_cap_are_honoured():
    inst = mixed(8, 4, 4)
    res = run(inst, max_iterations=2, restarts=False)
    steps = [s for s in res.info["trajectory"] if s["iteration"] > 0]
    assert len({s["iteration"] for s in steps}) <= 2
    quick = registry.solve(inst, 'alloc-alternate', time_limit=0.01)
    assert quick.status is Status.FEASIBLE  # the first start is always routed
    # the warm start (best-start, the best cheap heuristic re-routed) is the first start
    assert [s["kind"] for s in quick.info["trajectory"]] == ["start:warm:best-start"]
    own = registry.solve(inst, 'alloc-alternate', time_limit=0.01, auto_warm_start=False)
    assert [s["kind"] for s in own.info["trajectory"]] == ["start:demand-greedy"]


def test_multiplicity_cap_is_kept():
    inst = make_instance(6, 3, 100.0, mp=[(0, 1, 5e8), (1, 0, 5e8), (2, 3, 1e7), (4, 5, 2e7)])
    res = run(inst, max_multiplicity=1, max_iterations=20)
    assert res.topology.links.max() <= 1
    opt = registry.solve(inst, "alloc-milp", max_multiplicity=1)
    assert res.objective >= opt.objective * (1 - 1e-6)


def test_no_finished_routing_step_falls_back_to_the_best_start(monkeypatch):
    """When no route LP finishes (simulated: every LP reports a time-out), the incumbent is
    the best start heuristic with its own routing, checked, not nothing."""
    from topoopt_milp.core.backends.pulp_backend import BackendOutcome

    def timed_out(instance, topology, candidates=None, options=None, hop_penalty=0.0):
        out = BackendOutcome(Status.NO_SOLUTION, None, None, 0.0, "highs", "x", {}, "Time limit")
        return ring_lp.RingRoute(topology, None, (), None, None, out, 0.0)

    monkeypatch.setattr(alloc_alternate, "route_rings", timed_out)
    inst = mixed(8, 4, 5)
    res = run(inst, auto_warm_start=False)  # without best-start, whose LP is not patched
    best = min(alloc_alternate.start_topologies(inst, registry.run_method), key=lambda s: s.objective_s)
    assert res.objective == pytest.approx(best.objective_s)
    assert "no routing step finished" in res.message


# -- issue 20: zero traffic, and a cap that every start breaks -------------------------------
@pytest.mark.parametrize("traffic", [
    {"mp": [(0, 1, 0.0)]}, {}, {"allreduce": [((0, 1, 2, 3), 0.0)]},
])
def test_zero_traffic_is_routed_in_no_time(traffic):
    """Regression: ring_lp.route_rings reshaped the flows of zero sources by -1 (traceback)."""
    from topoopt_milp.core.result import finite_json

    inst = make_instance(8, 4, 100.0, **traffic)
    res = registry.solve(inst, "alloc-alternate", time_limit=30, max_iterations=5)
    assert res.status is Status.FEASIBLE and res.objective == 0.0
    sol = finite_json(solution_dict(res, inst, evaluate(inst, res.topology, res.routing)))
    assert check_solution(inst.to_dict(), sol) == []
    rr = ring_lp.route_rings(inst, res.topology)
    assert rr.objective_s == 0.0 and rr.gains is not None and not rr.gains.any()


def test_every_start_above_the_cap_is_repaired_never_returned():
    """With ``max_multiplicity = 1`` the starts here have parallel links (all but the random
    expander, which is simple); the result used to be
    the best start itself (2 parallel links, checker OK, another problem's answer). Starts are
    now repaired to the cap by the link step, and the result lies between alloc-milp's proven
    simple-graph optimum and the repaired starts."""
    from topoopt_milp.workloads import generators

    inst = generators.sparse(8, 4, pairs=4, seed=2)
    starts = alloc_alternate.start_topologies(inst, registry.run_method)
    above = [s for s in starts if s.topology.links.max() > 1]
    assert len(above) >= 2
    res = run(inst, max_multiplicity=1, max_iterations=15)
    assert res.status is Status.FEASIBLE and res.topology.links.max() <= 1
    assert any("repaired by the link step" in (s["note"] or "") for s in res.info["trajectory"])
    opt = registry.solve(inst, "alloc-milp", max_multiplicity=1, time_limit=60)
    assert opt.status is Status.OPTIMAL
    assert res.objective >= opt.objective * (1 - 1e-6)
    for s in above:
        fixed = alloc_alternate.repair(inst, s.topology, 1)
        assert fixed is not None and fixed.links.max() <= 1
        assert (fixed.links.sum(axis=1) == inst.degree).all()  # regular: degree kept
        assert ((s.topology.links > 0) <= (fixed.links > 0)).all()  # its pairs stay linked


def test_no_start_within_the_cap_gives_no_solution(monkeypatch):
    """When no start can be brought within the cap (simulated: the repair fails), nothing
    above the cap comes back: the fallback used to return the best start, multigraph and all."""
    from topoopt_milp.workloads import generators

    monkeypatch.setattr(alloc_alternate, "repair", lambda *a, **k: None)
    every = alloc_alternate.start_topologies
    monkeypatch.setattr(alloc_alternate, "start_topologies", lambda *a, **k: [
        s for s in every(*a, **k) if s.topology.links.max() > 1])  # no simple start either
    inst = generators.sparse(8, 4, pairs=4, seed=2)
    res = registry.solve(inst, "alloc-alternate", max_multiplicity=1, time_limit=30)
    assert res.status is Status.NO_SOLUTION and res.topology is None
    assert "breaks the multiplicity cap 1" in res.message
