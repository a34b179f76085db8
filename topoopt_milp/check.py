"""The independent checker: re-verifies a solution file against an instance file.

It reads the two JSON objects (``topoopt-instance/1`` and ``topoopt-solution/1``) directly and
recomputes everything with plain Python: it imports nothing from the code that builds
solutions (no :mod:`topology`, :mod:`evaluate`, heuristics, formulations or solvers), so a bug
there cannot hide itself here. It lists every violation it finds:

* port budget: ``sum_j L[i, j] <= d`` (``== d`` for regular instances), valid link entries;
* AllReduce rings: every group has ring orders that are permutations of its members, with
  shares summing to 1;
* commodities: exactly the MP demands and ring edges the instance and rings imply, with the
  right bytes;
* paths: start at the source, end at the destination, follow existing links, fractions
  non-negative and summing to 1;
* objective: the reported communication time equals the recomputed
  ``max_a load(a) / (L_a B)`` (plus latency term), and the reported bound does not exceed it.
"""

from __future__ import annotations

import math
from collections import defaultdict

REL_TOL = 1e-5  # LP solvers stop at ~1e-7 relative feasibility; leave headroom
ABS_TOL = 1e-12


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= REL_TOL * max(abs(a), abs(b)) + ABS_TOL


def check_solution(instance: dict, solution: dict) -> list[str]:
    """Return every violation of ``solution`` for ``instance`` (empty list: valid)."""
    problems: list[str] = []
    n, d = int(instance["n"]), int(instance["degree"])
    status = solution.get("status")
    topo = solution.get("topology")
    routing = solution.get("routing")
    if status not in ("optimal", "feasible"):
        if topo is not None or routing is not None:
            problems.append(f"status: {status!r} but a topology/routing is present")
        return problems
    if topo is None or routing is None:
        return [f"status: {status!r} but the topology or routing is missing"]

    # -- links and port budget ---------------------------------------------------------
    links: dict[tuple[int, int], int] = defaultdict(int)
    if topo.get("n") != n:
        problems.append(f"topology.n: {topo.get('n')} != instance n {n}")
    for k, row in enumerate(topo.get("links", [])):
        try:
            i, j, c = (int(x) for x in row)
        except (TypeError, ValueError):
            problems.append(f"topology.links[{k}]: not [i, j, count]")
            continue
        if not (0 <= i < n and 0 <= j < n) or i == j or c <= 0:
            problems.append(f"topology.links[{k}]: invalid link {row}")
            continue
        links[(i, j)] += c
        links[(j, i)] += c
    ports = [0] * n
    for (i, _j), c in links.items():
        ports[i] += c
    regular = instance.get("regular", True)
    for i, p in enumerate(ports):
        if p > d:
            problems.append(f"port budget: node {i} uses {p} ports > degree {d}")
        elif regular and p != d:
            problems.append(f"port budget: node {i} uses {p} ports, regular instance needs {d}")

    # -- rings -----------------------------------------------------------------------
    groups = instance.get("allreduce", [])
    shares: dict[int, float] = defaultdict(float)
    expected: dict[tuple[str, int, int, int], float] = defaultdict(float)
    for k, ring in enumerate(routing.get("rings", [])):
        g = int(ring["group"])
        if not 0 <= g < len(groups):
            problems.append(f"routing.rings[{k}]: unknown group {g}")
            continue
        order = [int(x) for x in ring["order"]]
        if sorted(order) != sorted(groups[g]["members"]):
            problems.append(f"routing.rings[{k}]: order is not a permutation of group {g}")
            continue
        share = float(ring["share"])
        if share < -ABS_TOL:
            problems.append(f"routing.rings[{k}]: negative share {share}")
        shares[g] += share
        m = len(order)
        vol = share * 2.0 * (m - 1) / m * float(groups[g]["bytes"])
        for a in range(m):
            expected[("ar", g, order[a], order[(a + 1) % m])] += vol
    for g, grp in enumerate(groups):
        if float(grp["bytes"]) > 0 and not _close(shares.get(g, 0.0), 1.0):
            problems.append(f"routing.rings: shares of group {g} sum to {shares.get(g, 0.0)}, not 1")
    for k, (s, t, b) in enumerate(instance.get("mp", [])):
        expected[("mp", k, int(s), int(t))] += float(b)

    # -- commodities and paths ----------------------------------------------------------
    got: dict[tuple[str, int, int, int], float] = defaultdict(float)
    load: dict[tuple[int, int], float] = defaultdict(float)
    max_hops = 0
    for k, com in enumerate(routing.get("commodities", [])):
        s, t, vol = int(com["src"]), int(com["dst"]), float(com["bytes"])
        got[(str(com["kind"]), int(com["tag"]), s, t)] += vol
        total = 0.0
        for q, path in enumerate(com.get("paths", [])):
            nodes, frac = [int(x) for x in path["nodes"]], float(path["fraction"])
            where = f"routing.commodities[{k}].paths[{q}]"
            if frac < -ABS_TOL:
                problems.append(f"{where}: negative fraction {frac}")
            total += frac
            if not nodes or nodes[0] != s or nodes[-1] != t:
                problems.append(f"{where}: does not run from {s} to {t}")
                continue
            for u, v in zip(nodes, nodes[1:], strict=False):
                if links.get((u, v), 0) <= 0:
                    problems.append(f"{where}: hop {u}->{v} is not a link")
                    break
                load[(u, v)] += vol * frac
            if frac > ABS_TOL:
                max_hops = max(max_hops, len(nodes) - 1)
        if vol > 0 and not _close(total, 1.0):
            problems.append(f"routing.commodities[{k}]: fractions sum to {total}, not 1")
    for key in sorted(set(expected) | set(got)):
        want, have = expected.get(key, 0.0), got.get(key, 0.0)
        if not _close(want, have):
            kind, tag, s, t = key
            problems.append(
                f"commodities: {kind} {tag} {s}->{t} routes {have} bytes, traffic needs {want}"
            )

    # -- objective --------------------------------------------------------------------
    rate = float(instance["link_gbps"]) * 1.25e8
    t_comm = 0.0
    for (u, v), b in load.items():
        cap = links.get((u, v), 0) * rate
        if b > 0:
            t_comm = max(t_comm, b / cap if cap > 0 else math.inf)
    latency = float(instance.get("latency_us", 0.0))
    if latency > 0:
        t_comm += max_hops * latency * 1e-6
    metrics = solution.get("metrics") or {}
    if "comm_time_s" in metrics:
        # the solution writer stores a non-finite time as null
        reported = metrics["comm_time_s"]
        same = math.isinf(t_comm) if reported is None else _close(float(reported), t_comm)
        if not same:
            problems.append(f"metrics.comm_time_s: {reported} != recomputed {t_comm}")
    if solution.get("objective_kind", "comm_time") == "comm_time":
        obj = solution.get("objective")
        if obj is None or not _close(float(obj), t_comm):
            problems.append(f"objective: {obj} != recomputed communication time {t_comm}")
        bound = solution.get("bound")
        if bound is not None and float(bound) > t_comm * (1 + REL_TOL) + ABS_TOL:
            problems.append(f"bound: {bound} exceeds the recomputed objective {t_comm}")
    return problems
