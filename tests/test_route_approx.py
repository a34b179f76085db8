"""route-approx: agreement with route-milp within eps (random regular graphs, circulants,
closed forms, mixed MP + AllReduce traffic, SNDlib shared capacities), a certified bound that
never exceeds the LP optimum, checker-clean routings, and the time-limit path."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
from test_route import complete, hypercube, torus  # the same closed-form graphs

from topoopt_milp import registry
from topoopt_milp.core.check import check_solution
from topoopt_milp.core.evaluate import comm_time, evaluate
from topoopt_milp.core.evaluate import shared_congestion as congestion
from topoopt_milp.core.instance import make_instance
from topoopt_milp.core.result import SolveResult, Status, finite_json, solution_dict
from topoopt_milp.core.sndlib import read_sndlib
from topoopt_milp.core.topology import Topology
from topoopt_milp.methods.formulations import route
from topoopt_milp.methods.route_approx.method import approx_min_congestion
from topoopt_milp.workloads import generators

GBPS = 100.0
B = GBPS * 1.25e8
VOL = 1e6
EPS = 0.01


def all_to_all(n, d, vol=VOL):
    return make_instance(n, d, GBPS, mp=[(i, j, vol) for i in range(n) for j in range(n) if i != j])


def random_regular(n, d, seed):
    for s in range(seed, seed + 50):
        g = nx.random_regular_graph(d, n, seed=s)
        if nx.is_connected(g):
            return Topology.from_link_list(n, [[u, v, 1] for u, v in g.edges()])
    raise RuntimeError("no connected graph")


def assert_agrees(inst, topo, eps=EPS, **extra) -> SolveResult:
    """route-approx is checker-clean, within eps of its own bound, its bound is at most the
    exact LP optimum and its objective at most (1 + eps) times it."""
    fixed = inst.with_topology(topo.links) if inst.topology is None else inst
    exact = registry.solve(fixed, "route-milp")
    assert exact.status is Status.OPTIMAL
    res = registry.solve(fixed, "route-approx", epsilon=eps, **extra)
    assert res.status.has_solution, res.message
    metrics = evaluate(inst, res.topology, res.routing)
    assert check_solution(fixed.to_dict(), finite_json(solution_dict(res, fixed, metrics))) == []
    assert res.objective == pytest.approx(comm_time(inst, res.topology, res.routing), rel=1e-12)
    assert res.bound <= exact.objective * (1 + 1e-7)  # certified: never above the optimum
    assert res.objective >= exact.objective * (1 - 1e-7)  # no routing beats the optimum
    assert res.gap <= eps + 1e-12
    assert res.objective <= exact.objective * (1 + eps)
    return res


@pytest.mark.parametrize("n, d, seed", [(12, 3, 0), (16, 4, 1), (20, 4, 2), (24, 5, 3)])
def test_random_regular_agrees_with_route_milp(n, d, seed):
    topo = random_regular(n, d, seed)
    res = assert_agrees(all_to_all(n, d), topo)
    assert "formulation=paths" in res.message


@pytest.mark.parametrize("n, jumps", [(12, (1, 5)), (16, (1, 3)), (21, (1, 4, 9))])
def test_circulant_uses_one_source_and_agrees(n, jumps):
    topo = Topology.circulant(n, jumps)
    inst = all_to_all(n, 2 * len(jumps))
    res = assert_agrees(inst, topo)
    assert "formulation=symmetric" in res.message
    full = assert_agrees(inst, topo, formulation="source")  # the path CG on the same problem
    assert "formulation=paths" in full.message


@pytest.mark.parametrize(
    "topo, hops",
    [(Topology.circulant(8, [1]), 8.0), (complete(6), 1.0), (hypercube(4), 8.0),
     (torus(4, 4), 8.0), (torus(5, 5), 15.0)],
    ids=["ring8", "complete6", "hypercube16", "torus4x4", "torus5x5"],
)
def test_closed_forms(topo, hops):
    """Uniform all-to-all on arc-transitive graphs: T = hops * VOL / B (see test_route)."""
    n, d = topo.n, int(topo.degrees().max())
    res = assert_agrees(all_to_all(n, d), topo, eps=1e-3)
    expected = hops * VOL / B
    assert res.bound <= expected * (1 + 1e-9)
    assert res.objective == pytest.approx(expected, rel=1e-3)


@pytest.mark.parametrize("family", ["sparse", "dlrm", "uniform"])
def test_mp_and_allreduce_ring_edges(family):
    n, d = 16, 4
    inst = generators.generate(family, n, d, seed=3)
    topo = random_regular(n, d, 5)
    res = assert_agrees(inst, topo)
    assert {c.kind for c in res.routing.commodities} >= ({"ar"} if inst.allreduce else set())
    # ring shares are fixed: the rings are route-milp's default rings
    assert res.routing.rings == route.ring_orders(inst, topo, registry.get("route-milp").options())


@pytest.mark.parametrize("fname, capacity", [("tri.txt", "file"), ("tri.txt", "unit"),
                                             ("square.txt", "file"), ("square.txt", "unit")])
def test_sndlib_shared_capacities(data_dir, fname, capacity):
    inst = read_sndlib(data_dir / "sndlib" / fname, capacity=capacity)
    exact = registry.solve(inst, "route-milp")
    res = registry.solve(inst, 'route-approx', epsilon=0.0001)
    assert res.objective_kind == "max_link_utilization"
    assert res.objective == pytest.approx(congestion(inst, res.routing), rel=1e-12)
    assert res.bound <= exact.objective * (1 + 1e-9)
    assert exact.objective * (1 - 1e-9) <= res.objective <= exact.objective * (1 + 1e-4)


def test_bound_is_weak_duality_of_the_returned_lengths():
    """The certificate: sum_k d_k dist_l(s_k, t_k) / sum_a l(a) cap(a) recomputed by
    networkx from the returned lengths reproduces the bound (to the safety margin)."""
    topo = random_regular(14, 3, 7)
    n = topo.n
    L = topo.links
    u, v = np.nonzero(L)
    arcs = np.stack([u, v], axis=1)
    rng = np.random.default_rng(0)
    D = rng.uniform(0, 2, size=(n, n)) * (rng.random((n, n)) < 0.5)
    np.fill_diagonal(D, 0)
    res = approx_min_congestion(n, arcs, [np.array([a]) for a in range(len(arcs))],
                                L[u, v].astype(float), D, 0.01)
    g = nx.DiGraph()
    for a, (x, y) in enumerate(arcs):
        g.add_edge(int(x), int(y), w=float(res.lengths[a]))
    dist = dict(nx.all_pairs_dijkstra_path_length(g, weight="w"))
    lb = sum(D[s, t] * dist[s][t] for s, t in zip(*np.nonzero(D), strict=True))
    lb /= float(res.lengths @ L[u, v])
    assert res.lower <= lb
    assert res.lower == pytest.approx(lb, rel=1e-9)
    assert res.upper - res.lower <= 0.01 * res.upper


def test_time_limit_returns_incumbent_and_bound():
    topo = random_regular(40, 4, 0)
    inst = all_to_all(40, 4)
    res = registry.solve(inst.with_topology(topo.links), 'route-approx', time_limit=0.05, epsilon=1e-09)
    assert res.status is Status.FEASIBLE
    assert res.routing is not None and res.bound is not None and res.bound <= res.objective
    metrics = evaluate(inst, res.topology, res.routing)
    assert check_solution(inst.to_dict(), solution_dict(res, inst, metrics)) == []


def test_bad_epsilon_and_formulation_are_clear_errors():
    topo = Topology.circulant(8, [1, 3])
    inst = all_to_all(8, 4)
    with pytest.raises(ValueError, match="epsilon"):
        registry.solve(inst.with_topology(topo.links), 'route-approx', epsilon=0)
    with pytest.raises(ValueError, match="formulation"):
        registry.solve(inst.with_topology(random_regular(8, 4, 0).links), 'route-approx',
                       formulation='symmetric')


def test_stdout_stays_clean():
    """No HiGHS banner on stdout (it would corrupt ``--format json`` output): the masters are
    built through the backend's silent Highs constructor."""
    import subprocess
    import sys

    code = ("from topoopt_milp.methods.route_approx.method import approx_min_congestion as f;"
            "import numpy as np;"
            "f(3, np.array([[0,1],[1,2],[2,0]]), [np.array([0]), np.array([1]), np.array([2])],"
            " np.ones(3), np.ones((3, 3)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout == ""


@pytest.mark.slow
@pytest.mark.parametrize("n, d", [(64, 4), (48, 6)])
def test_larger_random_regular(n, d):
    assert_agrees(all_to_all(n, d), random_regular(n, d, 11))


def test_evaluate_routing_approx_one_command(tmp_path):
    """`evaluate --routing approx` gives any topology's near-optimal routing time and a
    certified bound in one command (and writes the re-routed solution)."""
    import json

    from click.testing import CliRunner

    from topoopt_milp.cli import main

    inst = generators.generate("uniform", 16, 4, seed=0)
    path, sol, out = tmp_path / "i.json", tmp_path / "s.json", tmp_path / "r.json"
    inst.save(path)
    runner = CliRunner()
    assert runner.invoke(main, ["solve", str(path), "-m", "expander", "--out", str(sol)]).exit_code == 0
    r = runner.invoke(main, ["evaluate", str(path), str(sol), "--routing", "approx", "--out",
                             str(out), "--format", "json"])
    assert r.exit_code == 0, r.output
    data = json.loads(r.output[r.output.index('{\n "routing"'):])
    assert data["bound_s"] <= data["comm_time_s"] <= data["bound_s"] * (1 + EPS) + 1e-15
    exact = registry.solve(inst.with_topology(registry.solve(inst, "expander").topology.links,
                                              registry.solve(inst, "expander").routing.rings),
                           "route-milp")
    assert data["bound_s"] <= exact.objective * (1 + 1e-7) <= data["comm_time_s"] * (1 + 1e-7)
    assert json.loads(out.read_text())["method"] == "route-approx"


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("traffic", ["permutation", "sparse", "skewed"])
def test_circulant_with_non_symmetric_demand_converges(traffic, seed):
    """Issue 18: on a circulant with demand that is not rotation-invariant the path column
    generation used to cycle (a column was dropped at its first unused master) and stop at its
    1000-round cap with a gap of up to 71% and an empty stop reason. Now every seed reaches
    eps, and the bound is at most and the objective within eps of the exact LP."""
    n = 20
    rng = np.random.default_rng(seed)
    if traffic == "permutation":
        p = rng.permutation(n)
        mp = [(i, int(p[i]), VOL) for i in range(n) if p[i] != i]
    elif traffic == "sparse":
        mp = [(i, j, VOL * rng.uniform(0.1, 2)) for i in range(n) for j in range(n)
              if i != j and rng.random() < 0.15]
    else:  # heavy-tailed volumes, spanning many orders of magnitude
        mp = [(i, j, VOL * rng.exponential() ** 3 + 1.0) for i in range(n) for j in range(n)
              if i != j]
    inst = make_instance(n, 4, GBPS, mp=mp)
    res = assert_agrees(inst, Topology.circulant(n, (1, 3)))
    assert "formulation=paths" in res.message
    assert "(converged)" in res.message or "(optimal)" in res.message, res.message


def test_iteration_cap_names_its_reason():
    """A run stopped by its round cap says so (never ``after N rounds ()``)."""
    topo = random_regular(24, 4, 0)
    L = topo.links
    u, v = np.nonzero(L)
    D = np.ones((24, 24))
    res = approx_min_congestion(24, np.stack([u, v], axis=1),
                                [np.array([a]) for a in range(len(u))], L[u, v].astype(float), D,
                                1e-9, max_iter=2)
    assert res.status.startswith("iteration_limit (2 rounds")


@pytest.mark.parametrize("n, d, seed", [(12, 3, 0), (16, 4, 1), (20, 4, 2)])
def test_tree_columns_agree_with_route_milp(n, d, seed):
    """Per-source tree columns (``columns="trees"``): same certificate, same guarantees."""
    res = assert_agrees(all_to_all(n, d), random_regular(n, d, seed), columns="trees")
    assert "formulation=trees" in res.message


@pytest.mark.parametrize("seed", range(3))
def test_tree_columns_non_symmetric_demand(seed):
    n = 16
    rng = np.random.default_rng(seed)
    mp = [(i, j, VOL * rng.uniform(0.1, 2)) for i in range(n) for j in range(n)
          if i != j and rng.random() < 0.3]
    assert_agrees(make_instance(n, 4, GBPS, mp=mp), Topology.circulant(n, (1, 3)),
                  columns="trees")


def test_tree_columns_bound_is_weak_duality():
    """The tree run's bound is LB(lengths) recomputed independently by networkx."""
    topo = random_regular(14, 3, 7)
    n, L = topo.n, topo.links
    u, v = np.nonzero(L)
    arcs = np.stack([u, v], axis=1)
    rng = np.random.default_rng(1)
    D = rng.uniform(0, 2, size=(n, n)) * (rng.random((n, n)) < 0.5)
    np.fill_diagonal(D, 0)
    res = approx_min_congestion(n, arcs, [np.array([a]) for a in range(len(arcs))],
                                L[u, v].astype(float), D, 0.01, columns="trees")
    g = nx.DiGraph()
    for a, (x, y) in enumerate(arcs):
        g.add_edge(int(x), int(y), w=float(res.lengths[a]))
    dist = dict(nx.all_pairs_dijkstra_path_length(g, weight="w"))
    lb = sum(D[s, t] * dist[s][t] for s, t in zip(*np.nonzero(D), strict=True))
    lb /= float(res.lengths @ L[u, v])
    assert res.lower <= lb and res.lower == pytest.approx(lb, rel=1e-9)
    # the routing's loads are the trees' loads
    load = np.zeros((n, n))
    for s, t, paths in res.pair_paths(D):
        assert sum(f for _, f in paths) == pytest.approx(1.0)
        for p, f in paths:
            for a, b in zip(p, p[1:]):
                load[a, b] += D[s, t] * f
    assert np.allclose(load[u, v], res.arc_load)
    assert res.upper == pytest.approx((load[u, v] / L[u, v]).max())


def edge_swap(L, rng):
    """One random degree-preserving swap (a, b), (c, d) -> (a, c), (b, d) keeping the graph
    simple and connected."""
    edges = [(int(a), int(b)) for a, b in zip(*np.nonzero(np.triu(L)), strict=True)]
    for _ in range(1000):
        (a, b), (c, d) = (edges[i] for i in rng.choice(len(edges), 2, replace=False))
        if len({a, b, c, d}) < 4 or L[a, c] or L[b, d]:
            continue
        L2 = L.copy()
        L2[a, b] = L2[b, a] = L2[c, d] = L2[d, c] = 0
        L2[a, c] = L2[c, a] = L2[b, d] = L2[d, b] = 1
        if nx.is_connected(nx.from_numpy_array(L2)):
            return L2
    raise RuntimeError("no swap")


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("family", ["uniform", "dlrm"])
def test_warm_route_after_an_edge_swap(family, seed):
    """Warm re-routing (route_approx.warm): paths through the removed links are dropped, the
    rest of the old routing and its lengths start the search; the result is certified and
    agrees with route-milp on the new topology like a cold one."""
    from topoopt_milp.methods.route_approx import warm_route
    from topoopt_milp.methods.route_approx.warm import INFO_KEY

    n, d = 20, 4
    inst = generators.generate(family, n, d, seed=seed)
    L = random_regular(n, d, seed).links
    old = registry.solve(inst.with_topology(L), "route-approx")
    assert INFO_KEY in old.info
    L2 = edge_swap(L, np.random.default_rng(seed))
    new = warm_route(inst, L2, old, epsilon=EPS)
    assert "warm start" in new.message
    fixed = inst.with_topology(L2)
    metrics = evaluate(fixed, new.topology, new.routing)
    assert check_solution(fixed.to_dict(), finite_json(solution_dict(new, fixed, metrics))) == []
    exact = registry.solve(fixed, "route-milp")
    assert new.bound <= exact.objective * (1 + 1e-7) <= new.objective * (1 + 2e-7)
    assert new.gap <= EPS + 1e-12


def test_warm_start_from_any_routing_without_lengths():
    """A previous solution of another method (no lengths in its info): hop-count lengths."""
    from topoopt_milp.methods.route_approx import warm_route

    inst = all_to_all(16, 4)
    L = random_regular(16, 4, 3).links
    old = registry.solve(inst.with_topology(L), "route-milp", variant="ksp", k_paths=2)
    new = warm_route(inst, edge_swap(L, np.random.default_rng(0)), old)
    assert new.status.has_solution and new.gap <= EPS + 1e-12


def test_evaluate_routing_approx_warm_start(tmp_path):
    """`evaluate INST SOL --routing approx --warm-start OLD`: routes SOL's topology from OLD's
    routing and lengths (OLD: a route-approx solution on another topology of INST)."""
    import json

    from click.testing import CliRunner

    from topoopt_milp.cli import main

    inst = generators.generate("uniform", 16, 4, seed=0)
    path = tmp_path / "i.json"
    inst.save(path)
    runner = CliRunner()
    for seed in (0, 1):
        r = runner.invoke(main, ["solve", str(path), "-m", "expander", "--seed", str(seed),
                                 "--out", str(tmp_path / f"s{seed}.json")])
        assert r.exit_code == 0, r.output
    old = tmp_path / "old.json"
    r = runner.invoke(main, ["evaluate", str(path), str(tmp_path / "s1.json"), "--routing",
                             "approx", "--out", str(old)])
    assert r.exit_code == 0, r.output
    assert "route_approx" in json.loads(old.read_text())["info"]
    out = tmp_path / "new.json"
    r = runner.invoke(main, ["evaluate", str(path), str(tmp_path / "s0.json"), "--routing",
                             "approx", "--warm-start", str(old), "--out", str(out),
                             "--format", "json"])
    assert r.exit_code == 0, r.output
    data = json.loads(r.output[r.output.index('{\n "routing"'):])
    assert data["bound_s"] <= data["comm_time_s"] <= data["bound_s"] * (1 + EPS) + 1e-15
    assert "warm start (patched problem)" in json.loads(out.read_text())["message"]  # fast path
    r = runner.invoke(main, ["evaluate", str(path), str(tmp_path / "s0.json"), "--warm-start",
                             str(old)])
    assert r.exit_code == 2 and "Error: --warm-start: only with --routing approx" in r.output


def test_rebased_key_paths_keep_the_routing_consistent(monkeypatch):
    """Columns that carry their whole pair become key paths (paths._rebase): the returned
    paths per pair sum to 1, run s -> t over arcs, and their loads reproduce ``arc_load``
    and ``upper``; the bound stays below an independent LP optimum (scipy)."""
    from scipy.optimize import linprog

    from topoopt_milp.methods.route_approx import paths as paths_mod

    moved = []
    real = paths_mod._rebase

    def spy(*a):
        out = real(*a)
        moved.append(len(out[3]))
        return out

    monkeypatch.setattr(paths_mod, "_rebase", spy)
    topo = random_regular(24, 4, 5)
    n, L = topo.n, topo.links
    u, v = np.nonzero(L)
    arcs = np.stack([u, v], axis=1)
    m = len(arcs)
    D = np.ones((n, n))
    np.fill_diagonal(D, 0)
    res = approx_min_congestion(n, arcs, [np.array([a]) for a in range(m)],
                                L[u, v].astype(float), D, 1e-4)
    assert sum(moved) > 0  # the rebase did happen
    arc_id = {(int(x), int(y)): a for a, (x, y) in enumerate(arcs)}
    load = np.zeros(m)
    for s, t, pp in res.pair_paths(D):
        assert sum(f for _, f in pp) == pytest.approx(1.0, abs=1e-9)
        for p, f in pp:
            assert p[0] == s and p[-1] == t
            for x, y in zip(p[:-1], p[1:], strict=True):
                load[arc_id[(x, y)]] += D[s, t] * f
    assert load == pytest.approx(res.arc_load, rel=1e-9, abs=1e-9)
    assert res.upper == pytest.approx(float((load / L[u, v]).max()), rel=1e-9)
    # exact optimum: source-aggregated arc LP
    rows, cols, vals = [], [], []
    for s in range(n):
        for a, (x, y) in enumerate(arcs):
            c = s * m + a
            for w, sg in ((y, 1.0), (x, -1.0)):
                if w != s:
                    rows.append(s * n + w)
                    cols.append(c)
                    vals.append(sg)
    from scipy.sparse import coo_matrix, hstack

    A = coo_matrix((vals, (rows, cols)), shape=(n * n, n * m)).tocsr()
    keep = [i for i in range(n * n) if i % (n + 1) != 0]
    A_eq = hstack([A[keep], coo_matrix((len(keep), 1))])
    cap_rows = coo_matrix((np.ones(n * m), (np.tile(np.arange(m), n), np.arange(n * m))),
                          shape=(m, n * m))
    A_ub = hstack([cap_rows, coo_matrix(-L[u, v].reshape(-1, 1).astype(float))])
    c = np.zeros(n * m + 1)
    c[-1] = 1.0
    lp = linprog(c, A_ub=A_ub, b_ub=np.zeros(m), A_eq=A_eq, b_eq=np.ones(len(keep)),
                 bounds=(0, None), method="highs")
    assert lp.status == 0
    assert res.lower <= lp.fun * (1 + 1e-9)
    assert res.upper >= lp.fun * (1 - 1e-9)
    assert res.gap <= 1e-4 + 1e-12


@pytest.mark.parametrize("seed", range(3))
def test_reversal_symmetric_demand_is_routed_as_unordered_pairs(seed):
    """Symmetric (non-uniform) demand on duplex links: the reduced problem of
    route_approx.reverse is used, the routing of (t, s) is the reverse of (s, t)'s, the two
    arcs of a link carry the same load, and the bound stays <= route-milp's optimum."""
    n, d = 14, 4
    rng = np.random.default_rng(seed)
    vol = {(i, j): float(rng.uniform(1e5, 4e6)) for i in range(n) for j in range(i + 1, n)
           if rng.random() < 0.6}
    inst = make_instance(n, d, GBPS, mp=[(i, j, v) for (i, j), v in vol.items()]
                         + [(j, i, v) for (i, j), v in vol.items()])
    res = assert_agrees(inst, random_regular(n, d, seed))
    assert "reversal-symmetric" in res.message
    paths = {(c.src, c.dst): sorted(c.paths) for c in res.routing.commodities}
    for (s, t), ps in paths.items():
        assert sorted((tuple(reversed(p)), f) for p, f in ps) == paths[(t, s)]
    from topoopt_milp.core.evaluate import arc_loads

    loads = arc_loads(n, res.routing)
    assert np.allclose(loads, loads.T, rtol=1e-9, atol=1e-6)


def test_asymmetric_demand_is_not_reduced():
    n, d = 12, 4
    inst = make_instance(n, d, GBPS, mp=[(i, (i + 1 + i % 3) % n, VOL * (1 + i)) for i in range(n)])
    res = assert_agrees(inst, random_regular(n, d, 4))
    assert "reversal-symmetric" not in res.message
