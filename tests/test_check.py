"""The independent checker accepts valid solutions and names every deliberate breakage."""

from __future__ import annotations

import copy

import networkx as nx
import pytest

from topoopt_milp.core.check import check_solution
from topoopt_milp.core.evaluate import evaluate, lower_bound
from topoopt_milp.core.instance import Instance
from topoopt_milp.core.result import SolveResult, Status, solution_dict
from topoopt_milp.core.routing import route
from topoopt_milp.core.topology import Ring, Topology, default_rings
from topoopt_milp.workloads import generators


def solve_by_hand(inst: Instance, topo: Topology, rings=None, method="ecmp",
                  status=Status.FEASIBLE) -> dict:
    """A solution dict built the way every method's result becomes a file."""
    rings = default_rings(inst) if rings is None else rings
    routing = route(inst, topo, rings, method, seed=3)
    metrics = evaluate(inst, topo, routing)
    res = SolveResult("by-hand", status, metrics["comm_time_s"], lower_bound(inst), 0.0,
                      topology=topo, routing=routing)
    return solution_dict(res, inst, metrics)


@pytest.fixture
def tiny(instance_dict):
    """n = 6, d = 3 instance (AllReduce over {0, 2, 4} + 3 MP demands) routed by ECMP on the
    3-regular circulant C6(1, 3); returns (instance dict, solution dict)."""
    inst = Instance.from_dict(instance_dict)
    sol = solve_by_hand(inst, Topology.circulant(6, [1, 3]))
    return inst.to_dict(), sol


def _first(sol: dict, kind: str) -> dict:
    return next(c for c in sol["routing"]["commodities"] if c["kind"] == kind)


# -- accepts --------------------------------------------------------------------------------
def test_accepts_valid_solution(tiny):
    inst, sol = tiny
    assert check_solution(inst, sol) == []


@pytest.mark.parametrize("method", ["shortest", "ecmp", "coin-change"])
@pytest.mark.parametrize("family", list(generators.FAMILIES))
def test_accepts_heuristic_routings(family, method):
    inst = generators.generate(family, 12, 4, 100.0, seed=2)
    topo = Topology.circulant(12, [1, 5])
    assert check_solution(inst.to_dict(), solve_by_hand(inst, topo, method=method)) == []


def test_accepts_split_rings_latency_and_parallel_links():
    inst = generators.sparse(8, 4, pairs=10, groups=2, group_size=4, seed=1, latency_us=3.0)
    g0 = inst.allreduce[0].members
    rings = [Ring(0, g0, 0.25), Ring(0, tuple(reversed(g0)), 0.75), Ring(1, inst.allreduce[1].members)]
    topo = Topology.circulant(8, [1], multiplicity=2)  # 2 parallel links per ring neighbour
    sol = solve_by_hand(inst, topo, rings=rings)
    assert check_solution(inst.to_dict(), sol) == []


def test_accepts_non_regular_topology_when_allowed():
    inst = generators.uniform(7, 3, regular=False)
    topo = Topology.from_link_list(7, [[u, v, 1] for u, v in nx.cycle_graph(7).edges])  # 2 ports
    sol = solve_by_hand(inst, topo)
    assert check_solution(inst.to_dict(), sol) == []


def test_accepts_no_solution_without_topology(tiny):
    inst, sol = tiny
    sol = {**sol, "status": "no_solution", "topology": None, "routing": None, "objective": None}
    assert check_solution(inst, sol) == []


# -- rejects --------------------------------------------------------------------------------
def _extra_link(sol):
    sol["topology"]["links"].append([0, 1, 1])


def _drop_unused_link(sol):
    # C6(1, 3) minus the link 0-3: nodes 0 and 3 then use 2 of their 3 ports. Paths over 0-3
    # break as well; the test only asks for the port message to be among the findings.
    sol["topology"]["links"] = [row for row in sol["topology"]["links"] if row[:2] != [0, 3]]


def _detour_path(sol):
    c = _first(sol, "mp")  # 0 -> 3 has the direct link 0-3; route it 0 -> 2 -> 3 instead
    assert c["src"] == 0 and c["dst"] == 3
    c["paths"] = [{"nodes": [0, 2, 3], "fraction": 1.0}]


def _reversed_path(sol):
    c = _first(sol, "mp")
    c["paths"][0]["nodes"] = list(reversed(c["paths"][0]["nodes"]))


def _half_fraction(sol):
    c = _first(sol, "mp")
    c["paths"] = [{"nodes": c["paths"][0]["nodes"], "fraction": 0.5}]


def _drop_commodity(sol):
    comms = sol["routing"]["commodities"]
    comms.remove(next(c for c in comms if c["kind"] == "mp" and c["tag"] == 1))


def _drop_ring_edge(sol):
    comms = sol["routing"]["commodities"]
    comms.remove(_first(sol, "ar"))


def _wrong_bytes(sol):
    _first(sol, "mp")["bytes"] *= 2


def _ring_not_permutation(sol):
    sol["routing"]["rings"][0]["order"] = [0, 2, 2]


def _ring_wrong_members(sol):
    sol["routing"]["rings"][0]["order"] = [0, 2, 5]


def _half_share(sol):
    sol["routing"]["rings"][0]["share"] = 0.25  # default rings: two at 0.5 each


def _missing_ring(sol):
    sol["routing"]["rings"] = []


def _inflated_objective(sol):
    sol["objective"] *= 1.1


def _stale_metrics(sol):
    sol["metrics"]["comm_time_s"] *= 0.9


def _null_metrics(sol):
    sol["metrics"]["comm_time_s"] = None  # how the writer stores an infinite time


def _bound_above(sol):
    sol["bound"] = sol["objective"] * 1.01


def _optimal_without_topology(sol):
    sol["status"] = "optimal"
    sol["topology"] = None


def _infeasible_with_topology(sol):
    sol["status"] = "infeasible"


def _wrong_n(sol):
    sol["topology"]["n"] = 7


def _self_loop(sol):
    sol["topology"]["links"].append([2, 2, 1])


BREAKAGES = {
    "port budget exceeded": (_extra_link, "port budget: node 0 uses 4 ports > degree 3"),
    "non-regular": (_drop_unused_link, "port budget: node 0 uses 2 ports, regular instance needs 3"),
    "path not on links": (_detour_path, "paths[0]: hop 0->2 is not a link"),
    "path not from src to dst": (_reversed_path, "paths[0]: does not run from 0 to 3"),
    "fractions not summing to 1": (_half_fraction, "fractions sum to 0.5, not 1"),
    "dropped MP demand": (
        _drop_commodity,
        "commodities: mp 1 1->5 routes 0.0 bytes, traffic needs 2500000.0",
    ),
    "dropped ring edge": (
        _drop_ring_edge,
        "commodities: ar 0 0->2 routes 0.0 bytes, traffic needs 200000000.0",
    ),
    "wrong bytes": (_wrong_bytes, "commodities: mp 0 0->3 routes 20000000.0 bytes, traffic needs 10000000.0"),
    "ring not a permutation": (
        _ring_not_permutation,
        "routing.rings[0]: order is not a permutation of group 0",
    ),
    "ring of other nodes": (_ring_wrong_members, "routing.rings[0]: order is not a permutation of group 0"),
    "ring shares not summing to 1": (_half_share, "routing.rings: shares of group 0 sum to 0.75, not 1"),
    "group without ring": (_missing_ring, "routing.rings: shares of group 0 sum to 0.0, not 1"),
    "objective off": (_inflated_objective, "objective: "),
    "metrics off": (_stale_metrics, "metrics.comm_time_s: "),
    "metrics null": (_null_metrics, "metrics.comm_time_s: None != recomputed"),
    "bound above objective": (_bound_above, "bound: "),
    "optimal without topology": (
        _optimal_without_topology,
        "status: 'optimal' but the topology or routing is missing",
    ),
    "infeasible with topology": (
        _infeasible_with_topology,
        "status: 'infeasible' but a topology/routing is present",
    ),
    "topology size": (_wrong_n, "topology.n: 7 != instance n 6"),
    "self-loop link": (_self_loop, "topology.links[9]: invalid link [2, 2, 1]"),
}


@pytest.mark.parametrize("case", list(BREAKAGES))
def test_rejects_broken_solution(tiny, case):
    inst, sol = tiny
    mutate, expected = BREAKAGES[case]
    broken = copy.deepcopy(sol)
    mutate(broken)
    problems = check_solution(inst, broken)
    assert problems, case
    assert any(expected in p for p in problems), problems


def test_objective_mismatch_message_gives_recomputed_value(tiny):
    inst, sol = tiny
    broken = copy.deepcopy(sol)
    broken["objective"] = 1.0
    (msg,) = check_solution(inst, broken)
    assert msg == f"objective: 1.0 != recomputed comm_time {sol['objective']!r}"


def test_tolerance_accepts_solver_rounding_but_not_more(tiny):
    inst, sol = tiny
    ok = copy.deepcopy(sol)
    ok["objective"] *= 1 + 1e-7  # LP solvers stop at ~1e-7 relative feasibility
    c = _first(ok, "mp")
    c["paths"][0]["fraction"] -= 1e-7
    c["paths"].append({"nodes": c["paths"][0]["nodes"], "fraction": 1e-7})
    assert check_solution(inst, ok) == []
    bad = copy.deepcopy(sol)
    bad["objective"] *= 1 + 1e-3
    assert len(check_solution(inst, bad)) == 1


def test_disconnected_topology_cannot_route_every_commodity():
    # Two triangles: 0-1-2 and 3-4-5 (d = 2). The demand 0 -> 3 has no path; a solution that
    # pretends it does by listing a path over a non-link is rejected, and one that drops it too.
    inst = Instance.from_dict({"format": "topoopt-instance/1", "n": 6, "degree": 2,
                               "link_gbps": 100.0, "mp": [[0, 1, 1e6], [0, 3, 1e6]]})
    links = [[0, 1, 1], [1, 2, 1], [0, 2, 1], [3, 4, 1], [4, 5, 1], [3, 5, 1]]
    sol = {
        "format": "topoopt-solution/1", "status": "feasible", "objective": 8e-5, "bound": None,
        "topology": {"n": 6, "links": links, "jumps": None},
        "routing": {"rings": [], "commodities": [
            {"src": 0, "dst": 1, "bytes": 1e6, "kind": "mp", "tag": 0,
             "paths": [{"nodes": [0, 1], "fraction": 1.0}]},
            {"src": 0, "dst": 3, "bytes": 1e6, "kind": "mp", "tag": 1,
             "paths": [{"nodes": [0, 3], "fraction": 1.0}]},
        ]},
        "metrics": None,
    }
    problems = check_solution(inst.to_dict(), sol)
    assert any("hop 0->3 is not a link" in p for p in problems), problems
    dropped = copy.deepcopy(sol)
    del dropped["routing"]["commodities"][1]
    problems = check_solution(inst.to_dict(), dropped)
    assert problems == ["commodities: mp 1 0->3 routes 0.0 bytes, traffic needs 1000000.0"]


@pytest.mark.parametrize("bytes_factor", [1e-5, 1.0, 1e6])
@pytest.mark.parametrize("gbps_factor", [0.1, 1.0, 4.0])
def test_accepts_at_every_magnitude(bytes_factor, gbps_factor):
    # sparse volumes span 1e5..1e10 bytes; scaled they reach 1 byte .. 1e16 bytes and links of
    # 10..400 Gbps: the checker's tolerances are relative, so validity must not depend on units
    inst = generators.sparse(10, 4, seed=6).scaled(bytes_factor, gbps_factor)
    sol = solve_by_hand(inst, Topology.circulant(10, [1, 3]))
    assert check_solution(inst.to_dict(), sol) == []
    broken = copy.deepcopy(sol)
    broken["objective"] *= 1.001
    assert len(check_solution(inst.to_dict(), broken)) == 1
