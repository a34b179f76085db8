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
* numbers: no number anywhere in the solution is infinite or NaN;
* fixed topology: when the instance fixes one (the route family), the solution uses it;
* objective: the reported objective equals the one recomputed for its kind --
  ``comm_time`` ``max_a load(a) / (L_a B)`` (plus latency term), ``max_link_utilization``
  (per arc, or per undirected link when the instance's capacities are shared), ``diameter``
  (hop diameter of the links) or ``total_hops`` (``sum_c bytes_c dist(src_c, dst_c)``);
* bound and status: the bound is non-negative and does not exceed the objective; a status of
  ``optimal`` needs a bound within the run's MIP gap, and never comes from a restricted scope.
"""

from __future__ import annotations

import math
from collections import defaultdict

REL_TOL = 1e-5  # LP solvers stop at ~1e-7 relative feasibility; leave headroom
ABS_TOL = 1e-12


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= REL_TOL * max(abs(a), abs(b)) + ABS_TOL


def _non_finite(obj, where: str, out: list[str]) -> None:
    if isinstance(obj, float) and not math.isfinite(obj):
        out.append(f"{where or 'solution'}: non-finite number {obj}")
    elif isinstance(obj, dict):
        for k, v in obj.items():
            _non_finite(v, f"{where}.{k}" if where else str(k), out)
    elif isinstance(obj, list):
        for k, v in enumerate(obj):
            _non_finite(v, f"{where}[{k}]", out)
        return


def check_solution(instance: dict, solution: dict) -> list[str]:
    """Return every violation of ``solution`` for ``instance`` (empty list: valid)."""
    problems: list[str] = []
    _non_finite(solution, "", problems)
    if problems:
        return problems[:20]
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
    fixed = instance.get("topology")
    if fixed is not None:
        want = {(int(i), int(j)): float(c) for i, j, c in fixed["links"]}
        have = {(i, j): c for (i, j), c in links.items() if i < j}
        if fixed.get("shared"):
            extra = sorted(set(have) - set(want))
            if extra:
                problems.append(f"topology: link {extra[0]} is not in the instance's fixed topology")
        elif have != {k: int(c) for k, c in want.items()}:
            problems.append("topology: differs from the instance's fixed topology")

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
    congestion = 0.0
    for (u, v), b in load.items():
        cap = links.get((u, v), 0) * rate
        if b > 0:
            congestion = max(congestion, b / cap if cap > 0 else math.inf)
    t_comm = congestion
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
    kind = solution.get("objective_kind", "comm_time")
    if kind == "comm_time":
        value = t_comm
    elif kind == "max_link_utilization":
        value = _shared_congestion(fixed, load, rate) if fixed and fixed.get("shared") \
            else congestion
    elif kind in ("diameter", "total_hops"):
        dist = _hop_distances(n, links)
        if kind == "diameter":
            value = max((max(row) for row in dist), default=0.0)
        else:
            value = sum(float(c["bytes"]) * dist[int(c["src"])][int(c["dst"])]
                        for c in routing.get("commodities", []))
    else:
        return problems + [f"objective_kind: unknown {kind!r}"]
    return problems + _check_objective(solution, kind, value)


def _check_objective(solution: dict, kind: str, value: float) -> list[str]:
    problems = []
    obj = solution.get("objective")
    if obj is None or not (_close(float(obj), value) or math.isinf(value) and math.isinf(obj)):
        problems.append(f"objective: {obj} != recomputed {kind} {value}")
    bound = solution.get("bound")
    if bound is not None:
        if float(bound) < 0:
            problems.append(f"bound: {bound} is negative")
        if float(bound) > value * (1 + REL_TOL) + ABS_TOL:
            problems.append(f"bound: {bound} exceeds the recomputed objective {value}")
    if solution.get("status") == "optimal":
        scope = solution.get("scope") or {}
        if scope.get("routing") == "restricted":
            problems.append("status: 'optimal' from a restricted model (its proof holds for that "
                            "model only)")
        params = solution.get("params") or {}
        gap_tol = max(float(params.get("mip_gap") or 0.0), REL_TOL) + 1e-9
        if bound is None or value > 0 and (value - float(bound)) / value > gap_tol:
            problems.append(f"status: 'optimal' but the bound {bound} does not meet the "
                            f"objective {value} within the MIP gap")
    return problems


def _shared_congestion(fixed: dict, load: dict, rate: float) -> float:
    caps = {(min(int(i), int(j)), max(int(i), int(j))): float(c) * rate
            for i, j, c in fixed["links"]}
    both: dict[tuple[int, int], float] = defaultdict(float)
    for (u, v), b in load.items():
        both[(min(u, v), max(u, v))] += b
    worst = 0.0
    for pair, b in both.items():
        if b > 0:
            c = caps.get(pair, 0.0)
            worst = max(worst, b / c if c > 0 else math.inf)
    return worst


def _hop_distances(n: int, links: dict) -> list[list[float]]:
    adj: dict[int, list[int]] = defaultdict(list)
    for (u, v), c in links.items():
        if c > 0:
            adj[u].append(v)
    dist = []
    for s in range(n):
        row = [math.inf] * n
        row[s] = 0.0
        frontier = [s]
        while frontier:
            nxt = []
            for u in frontier:
                for v in adj[u]:
                    if row[v] == math.inf:
                        row[v] = row[u] + 1
                        nxt.append(v)
            frontier = nxt
        dist.append(row)
    return dist
