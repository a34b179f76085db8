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
  non-negative and summing to 1 for every commodity with a volume; volumes non-negative (a
  negative volume, or a negative fraction, would cancel load elsewhere: a time below the
  ideal switch);
* constraints the solution records it was solved under (``constraints``): at most
  ``max_multiplicity`` parallel links per pair, the fixed ring orders and shares ``rings``;
* numbers: no number anywhere in the solution is infinite or NaN;
* fixed topology: when the instance fixes one (the route family), the solution uses it;
  :func:`check_topology` checks a file without a routing (links, port budget, fixed
  topology, its rings if any, constraints);
* objective: the reported objective equals the one recomputed for its kind --
  ``comm_time`` ``max_a load(a) / (L_a B)`` (plus latency term), ``max_link_utilization``
  (per arc, or per undirected link when the instance's capacities are shared), ``diameter``
  (hop diameter of the links) or ``total_hops`` (``sum_c bytes_c dist(src_c, dst_c)``);
* bound and status: the bound is non-negative and does not exceed the objective; a status of
  ``optimal`` needs a bound within the run's MIP gap, and never comes from a restricted scope.
"""

from __future__ import annotations

import json
import math
from collections import defaultdict

REL_TOL = 1e-5  # LP solvers stop at ~1e-7 relative feasibility; leave headroom
ABS_TOL = 1e-12


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= REL_TOL * max(abs(a), abs(b)) + ABS_TOL


# The checker reads the solution as untrusted data: every field is type-checked where it is
# read (a malformed one is a listed violation, never an exception), and nothing is sized by a
# number from the solution -- lists are sized by the instance's n only.
def _int(x) -> int | None:
    """``x`` as an integer (a JSON integer, or a float with an integral value), else None."""
    if isinstance(x, bool):
        return None
    if isinstance(x, int):
        return x
    if isinstance(x, float) and math.isfinite(x) and x.is_integer():
        return int(x)
    return None


def _num(x) -> float | None:
    """``x`` as a finite float (a JSON number), else None."""
    if isinstance(x, bool) or not isinstance(x, int | float):
        return None
    try:
        value = float(x)
    except OverflowError:
        return None
    return value if math.isfinite(value) else None


def _ints(x) -> list:
    """``x`` (a list) as integers, ``None`` for an entry that is not one (``[]``: not a
    list); a list of plain ints, what every file holds, is returned as it is."""
    if not isinstance(x, list):
        return []
    if all(type(v) is int for v in x):  # the common case, without a call per entry
        return x
    return [_int(v) for v in x]


def _list(x) -> list:
    return x if isinstance(x, list) else []


def _non_finite(obj, out: list[str]) -> None:
    stack = [(obj, "")]
    while stack:
        value, where = stack.pop()
        if isinstance(value, float) and not math.isfinite(value):
            out.append(f"{where or 'solution'}: non-finite number {value}")
        elif isinstance(value, dict):
            stack.extend((v, f"{where}.{k}" if where else str(k)) for k, v in value.items())
        elif isinstance(value, list):
            stack.extend((v, f"{where}[{k}]") for k, v in enumerate(value))


def _all_finite(obj) -> bool:
    """True when ``obj`` holds no non-finite float: the C JSON encoder refuses NaN and
    infinities (``allow_nan=False``) at ~10x the speed of the walk in :func:`_non_finite`;
    anything it cannot encode (not JSON data) is left to the walk."""
    try:
        json.dumps(obj, allow_nan=False)
    except (ValueError, TypeError, RecursionError):
        return False
    return True


def _unreadable(solution) -> list[str]:
    """What makes ``solution`` unreadable as a whole (not an object, non-finite numbers: at
    most 20); empty when its fields can be checked one by one."""
    if not isinstance(solution, dict):
        return ["solution: expected a JSON object"]
    problems: list[str] = []
    if not _all_finite(solution):  # only then walk it, to name every non-finite number
        _non_finite(solution, problems)
    return problems[:20]


def check_solution(instance: dict, solution: dict) -> list[str]:
    """Return every violation of ``solution`` for ``instance`` (empty list: valid).

    ``instance`` is a validated instance object (:meth:`Instance.to_dict`); ``solution`` may be
    anything read from a file: a malformed field is reported, never raised."""
    problems = _unreadable(solution)
    if problems:
        return problems
    n = int(instance["n"])
    status = solution.get("status")
    topo = solution.get("topology")
    routing = solution.get("routing")
    if status not in ("optimal", "feasible"):
        if topo is not None or routing is not None:
            problems.append(f"status: {status!r} but a topology/routing is present")
        return problems
    if not isinstance(topo, dict) or not isinstance(routing, dict):
        return [f"status: {status!r} but the topology or routing is missing (or not an object)"]

    links = _links(instance, topo, problems)
    fixed = instance.get("topology")
    if not isinstance(routing.get("rings"), list):
        problems.append("routing.rings: expected a list of rings")
    expected = _rings(instance, _list(routing.get("rings")), problems)
    problems += _constraints(solution, links, _list(routing.get("rings")))
    for k, (s, t, b) in enumerate(instance.get("mp", [])):
        expected[("mp", k, int(s), int(t))] += float(b)

    # -- commodities and paths ----------------------------------------------------------
    got: dict[tuple[str, int, int, int], float] = defaultdict(float)
    load: dict[tuple[int, int], float] = defaultdict(float)
    ends: list[tuple[int, int, float]] = []  # (src, dst, bytes) of well-formed commodities
    max_hops = 0
    if not isinstance(routing.get("commodities"), list):
        problems.append("routing.commodities: expected a list of commodities")
    for k, com in enumerate(_list(routing.get("commodities"))):
        com = com if isinstance(com, dict) else {}
        s, t, tag = _int(com.get("src")), _int(com.get("dst")), _int(com.get("tag"))
        vol, kind = _num(com.get("bytes")), com.get("kind")
        if None in (s, t, tag, vol) or not isinstance(kind, str) \
                or not isinstance(com.get("paths"), list):
            problems.append(f"routing.commodities[{k}]: not a commodity (src, dst, tag, kind, "
                            "bytes, paths)")
            continue
        if not (0 <= s < n and 0 <= t < n):
            problems.append(f"routing.commodities[{k}]: {s} -> {t} is out of range 0..{n - 1}")
            continue
        if vol < 0:  # a negative volume would cancel load elsewhere: never a routing
            problems.append(f"routing.commodities[{k}]: negative volume {vol} bytes")
        ends.append((s, t, vol))
        got[(kind, tag, s, t)] += vol
        total = 0.0
        for q, path in enumerate(com["paths"]):
            path = path if isinstance(path, dict) else {}
            nodes, frac = _ints(path.get("nodes")), _num(path.get("fraction"))
            where = f"routing.commodities[{k}].paths[{q}]"
            if frac is None or None in nodes:
                problems.append(f"{where}: not a path (nodes, fraction)")
                continue
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
        if vol != 0 and not _close(total, 1.0):
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
        t_comm += max_hops * (latency * 1e-6)
    metrics = solution.get("metrics") or {}
    if not isinstance(metrics, dict):
        problems.append("metrics: expected an object")
    elif "comm_time_s" in metrics:
        # the solution writer stores a non-finite time as null
        reported = metrics["comm_time_s"]
        value = None if reported is None else _num(reported)
        same = math.isinf(t_comm) if reported is None else (
            value is not None and _close(value, t_comm))
        if not same:
            problems.append(f"metrics.comm_time_s: {reported!r} != recomputed {t_comm}")
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
            value = sum(b * dist[s][t] for s, t, b in ends)
    else:
        return problems + [f"objective_kind: unknown {kind!r}"]
    return problems + _check_objective(solution, kind, value)


def check_topology(instance: dict, solution: dict) -> list[str]:
    """Return every violation of the topology of ``solution`` (a file without a routing).

    Checks what :func:`check_solution` checks of a topology -- valid links, the port budget,
    the instance's fixed topology, the recorded constraints -- and the AllReduce rings when
    the file gives them (``routing.rings``); no commodity, path or objective is looked at.
    Never raises on malformed input."""
    problems = _unreadable(solution)
    if problems:
        return problems
    topo = solution.get("topology")
    if not isinstance(topo, dict):
        return ["topology: missing (or not an object)"]
    links = _links(instance, topo, problems)
    routing = solution.get("routing")
    rings = None
    if routing is not None:
        if not isinstance(routing, dict) or not isinstance(routing.get("rings"), list):
            return problems + ["routing.rings: expected a list of rings"]
        rings = routing["rings"]
        _rings(instance, rings, problems)
    return problems + _constraints(solution, links, rings)


def _links(instance: dict, topo: dict, problems: list[str]) -> dict[tuple[int, int], int]:
    """The link counts of ``topo`` (both directions), with the link, port-budget and
    fixed-topology violations appended to ``problems``."""
    n, d = int(instance["n"]), int(instance["degree"])
    links: dict[tuple[int, int], int] = defaultdict(int)
    if topo.get("n") != n:
        problems.append(f"topology.n: {topo.get('n')!r} != instance n {n}")
    if not isinstance(topo.get("links"), list):
        problems.append("topology.links: expected a list of [i, j, count]")
    for k, row in enumerate(_list(topo.get("links"))):
        i, j, c = (_int(x) for x in row) if isinstance(row, list) and len(row) == 3 else [None] * 3
        if i is None or j is None or c is None:
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
    return links


def _rings(instance: dict, rings: list, problems: list[str]) -> dict:
    """The ring-edge volumes the rings imply, ``("ar", group, u, v) -> bytes``, with the
    ring violations appended to ``problems``."""
    groups = instance.get("allreduce", [])
    shares: dict[int, float] = defaultdict(float)
    expected: dict[tuple[str, int, int, int], float] = defaultdict(float)
    for k, ring in enumerate(rings):
        ring = ring if isinstance(ring, dict) else {}
        g, share = _int(ring.get("group")), _num(ring.get("share"))
        order = [_int(x) for x in _list(ring.get("order"))]
        if g is None or share is None or not isinstance(ring.get("order"), list) \
                or None in order:
            problems.append(f"routing.rings[{k}]: not a ring (group, order of node ids, share)")
            continue
        if not 0 <= g < len(groups):
            problems.append(f"routing.rings[{k}]: unknown group {g}")
            continue
        if sorted(order) != sorted(groups[g]["members"]):
            problems.append(f"routing.rings[{k}]: order is not a permutation of group {g}")
            continue
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
    return expected


RING_SHARE_EPS = 1e-9  # rings with a smaller share carry nothing (solvers drop them)


def _ring_key(ring) -> tuple[int, tuple[int, ...]] | None:
    """``(group, order rotated to start at its smallest member)``; ``None`` if malformed."""
    ring = ring if isinstance(ring, dict) else {}
    g, order = _int(ring.get("group")), [_int(x) for x in _list(ring.get("order"))]
    if g is None or not order or None in order:
        return None
    k = order.index(min(order))
    return g, tuple(order[k:] + order[:k])


def _ring_shares(rings: list) -> dict | None:
    out: dict[tuple[int, tuple[int, ...]], float] = defaultdict(float)
    for ring in rings:
        key, share = _ring_key(ring), _num(ring.get("share") if isinstance(ring, dict) else None)
        if key is None or share is None:
            return None
        if share > RING_SHARE_EPS:
            out[key] += share
    return out


def _constraints(solution: dict, links: dict, rings: list | None) -> list[str]:
    """Violations of the constraints the solution records it was solved under
    (``constraints``: ``max_multiplicity``, the most parallel links per pair; ``rings``, the
    fixed ring orders and shares). ``rings`` ``None``: the file gives no rings to compare."""
    cons = solution.get("constraints")
    if cons is None:
        return []
    if not isinstance(cons, dict):
        return ["constraints: expected an object"]
    problems = []
    for key, value in cons.items():
        if key == "max_multiplicity":
            cap = _int(value)
            if cap is None or cap < 1:
                problems.append(f"constraints.max_multiplicity: {value!r} is not a positive integer")
                continue
            over = sorted((c, i, j) for (i, j), c in links.items() if i < j and c > cap)
            if over:
                c, i, j = over[-1]
                problems.append(f"constraints.max_multiplicity: {c} parallel links join {i} and "
                                f"{j}, the cap is {cap} ({len(over)} pair(s) over it)")
        elif key == "rings":
            want = _ring_shares(_list(value)) if isinstance(value, list) else None
            if want is None:
                problems.append("constraints.rings: not a list of rings (group, order, share)")
                continue
            if rings is None:
                continue
            have = _ring_shares(rings) or {}
            if set(want) != set(have) or any(
                    abs(want[r] - have[r]) > REL_TOL * max(want[r], have[r]) + RING_SHARE_EPS
                    for r in want):
                problems.append("constraints.rings: the rings differ from the fixed rings the "
                                "solution was solved with (orders and shares)")
        else:
            problems.append(f"constraints.{key}: unknown constraint (the checker cannot "
                            "verify it)")
    return problems


def _check_objective(solution: dict, kind: str, value: float) -> list[str]:
    problems = []
    obj = _num(solution.get("objective"))
    if obj is None or not _close(obj, value):
        problems.append(f"objective: {solution.get('objective')!r} != recomputed {kind} {value}")
    raw = solution.get("bound")
    bound = _num(raw)
    if raw is not None and bound is None:
        problems.append(f"bound: {raw!r} is not a number")
    if bound is not None:
        if bound < 0:
            problems.append(f"bound: {bound} is negative")
        if bound > value * (1 + REL_TOL) + ABS_TOL:
            problems.append(f"bound: {bound} exceeds the recomputed objective {value}")
    if solution.get("status") == "optimal":
        scope = solution.get("scope") or {}
        if not isinstance(scope, dict):
            problems.append("scope: expected an object")
        elif scope.get("routing") == "restricted":
            problems.append("status: 'optimal' from a restricted model (its proof holds for that "
                            "model only)")
        params = solution.get("params") or {}
        if not isinstance(params, dict):
            problems.append("params: expected an object")
            params = {}
        gap_tol = max(_num(params.get("mip_gap")) or 0.0, REL_TOL) + 1e-9
        if bound is None or value > 0 and (value - bound) / value > gap_tol:
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
