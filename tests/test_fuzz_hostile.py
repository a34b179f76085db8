"""Fuzz test of hostile input, issue 20 (topologies in, negative volumes, recorded
constraints, the family rule, unroutable instances, non-regular files, evaluate --routing):
the classes of the project's fuzz corpus (tests/test_fuzz_input.py) that a new hostile corpus
found mishandled, each with its counts, 0 tracebacks and 0 false results."""

from __future__ import annotations

import copy
import json
import random
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from helpers import fuzz_summary
from test_fuzz_input import SEED, dump

from topoopt_milp.cli import main


# == hostile classes of issue 20 (topologies in, negative volumes, recorded constraints, the
# family rule, unroutable instances, non-regular files, evaluate --routing) ======================
# Each generator yields Hostile cases with the outcome a user must get; the runner below
# counts, per class, the exit codes, the tracebacks (never allowed) and the false results
# (a wrong file accepted: exit 0 on a file that must be refused or listed, a status other than
# "infeasible" on a provably unroutable instance) and false refusals (a valid file refused).
# Other classes can be appended the same way: a generator and one HOSTILE_CLASSES entry.
@dataclass(frozen=True)
class Hostile:
    cls: str
    name: str
    payload: bytes | None  # the file's bytes (None: the runner makes the file)
    expect: str  # "valid" | "refused" | "violation" | "infeasible"
    method: str = ""
    reason: str = ""  # words a refusal or violation must contain (it was refused for this)


def _edgelist_of(sol_tree) -> list[list[int]]:
    return [list(r) for r in sol_tree["topology"]["links"]]


def gen_topology_edgelists(inst_tree, sol_tree, rng, n):
    """Edge lists (``i j [count]``): valid rewritings, and every defect the reader refuses."""
    rows = _edgelist_of(sol_tree)
    nn = inst_tree["n"]

    def text(rs):
        return "".join(f"{i} {j} {c}\n" for i, j, c in rs)

    valid = [
        lambda: text(rng.sample(rows, len(rows))),  # any order
        lambda: "".join(f"{i} {j}\n" * c for i, j, c in rows),  # one line per link
        lambda: "".join(f"{j} {i} {c}\n" for i, j, c in rows),  # reversed pairs
        lambda: "# from elsewhere\n\n" + text(rows).replace("\n", "  # link\n", 2),
        lambda: "".join(f"{i} {j} {{'count': {c}, 'weight': 3.5}}\n" for i, j, c in rows),
        lambda: "".join(f"{i} {j} {{}}\n" * c for i, j, c in rows),  # nx.write_edgelist(g, p)
        lambda: "\ufeff" + text(rows),  # a byte order mark
        lambda: text(rows).replace("\n", "\r\n"),  # Windows line ends
    ]

    def swap(k, pos, value):
        rs = [list(r) for r in rows]
        rs[k][pos] = value
        return "".join(f"{i} {j} {c}\n" for i, j, c in rs)

    invalid = [
        lambda: (lambda k: swap(k, 1, rows[k][0]))(rng.randrange(len(rows))),  # a self-loop
        lambda: swap(0, 1, rng.choice([nn, nn + 5, -1, 10**30, 2**63])),
        lambda: swap(0, 0, rng.choice(["x", "1.0", "0x1", "1e3", "--", "\u0661"])),
        lambda: swap(0, 2, rng.choice([0, -1, "1.5", "2e0", 10**20, "inf", "nan", "true"])),
        lambda: text(rows) + f"{rows[0][0]} {(rows[0][0] + 3) % nn} 1\n",  # one link too many
        lambda: text(rows[1:]),  # a pair missing: ports unused on a regular instance
        lambda: "",  # no links at all
        lambda: text(rows) + "0 1 2 3\n",
        lambda: text(rows) + "5\n",
        lambda: text(rows[:-1]) + f"{rows[-1][0]} {rows[-1][1]} {{'count': "
        + rng.choice(["0", "'a'", "True", "2.0", "-3", "None", "[2]"]) + "}\n",
        lambda: text(rows[:-1]) + f"{rows[-1][0]} {rows[-1][1]} "
        + rng.choice(["{" * 400, "{'count': " + "[" * 300 + "}", "{1, 2}", "{'a'"]) + "\n",
        lambda: text(rows) + "# " + "x" * 5000 + "\n",  # a line beyond the limit
        lambda: "# padding\n" * 30000 + text(rows),  # beyond the size limit for n = 8
        lambda: bytes(rng.randrange(256) for _ in range(200)).decode("latin-1"),
    ]
    made = Counter()
    for k in range(n):
        good = k % 3 == 0
        pool = valid if good else invalid
        body = pool[made[good] % len(pool)]()
        made[good] += 1
        yield Hostile("topology-edgelist", f"h-edgelist-{k:03d}.edgelist",
                      body.encode("utf-8", "surrogatepass") if isinstance(body, str) else body,
                      "valid" if good else "refused")


def gen_topology_graphml(inst_tree, sol_tree, rng, n):
    """GraphML: networkx multigraphs (valid), and the defects the reader refuses, XML attacks
    included (entity expansion, external entities)."""
    import networkx as nx

    rows = _edgelist_of(sol_tree)
    nn = inst_tree["n"]

    def write(edges, nodes=None, directed=False, counts=False):
        g = (nx.MultiDiGraph if directed else nx.MultiGraph)()
        g.add_nodes_from(range(nn) if nodes is None else nodes)
        for e in edges:
            if counts:
                g.add_edge(e[0], e[1], count=e[2])
            else:
                g.add_edge(e[0], e[1])
        return "\n".join(nx.generate_graphml(g))

    links = [(i, j) for i, j, c in rows for _ in range(c)]
    bomb = ('<?xml version="1.0"?><!DOCTYPE g [<!ENTITY a "aaaaaaaaaa">'
            + "".join(f'<!ENTITY {chr(98 + k)} "' + f"&{chr(97 + k)};" * 10 + '">'
                      for k in range(8))
            + ']><graphml xmlns="http://graphml.graphdrawing.org/xmlns"><graph '
            'edgedefault="undirected"><node id="&i;"/></graph></graphml>')
    xxe = ('<?xml version="1.0"?><!DOCTYPE g [<!ENTITY x SYSTEM "file:///etc/passwd">]>'
           '<graphml xmlns="http://graphml.graphdrawing.org/xmlns"><graph '
           'edgedefault="undirected"><node id="&x;"/></graph></graphml>')
    valid = [
        lambda: write(rng.sample(links, len(links))),
        lambda: write([(j, i) for i, j in links]),
        lambda: write(rows, counts=True),  # a count attribute per pair
    ]
    invalid = [
        lambda: write(links[:-1] + [(links[-1][0], links[-1][0])]),
        lambda: write(links, nodes=range(nn + 1)),
        lambda: write(links + [(0, (0 + 3) % nn)]),
        lambda: write(links[:-1]),
        lambda: write(links, directed=True),
        lambda: write([(f"n{i}", f"n{j}") for i, j in links], nodes=[f"n{v}" for v in range(nn)]),
        lambda: write([(i, j, rng.choice([0, -2])) for i, j, _ in rows], counts=True),
        lambda: write(links)[: rng.randrange(10, 200)],  # truncated XML
        lambda: bomb,
        lambda: xxe,
        lambda: "",
        lambda: "not xml at all",
    ]
    made = Counter()
    for k in range(n):
        good = k % 4 == 0
        pool = valid if good else invalid
        body = pool[made[good] % len(pool)]()
        made[good] += 1
        yield Hostile("topology-graphml", f"h-graphml-{k:03d}.graphml", body.encode(),
                      "valid" if good else "refused")


def gen_negative_volumes(inst_tree, sol_tree, rng, n):
    """Commodities that route +x where the traffic goes and -x elsewhere (volumes still add
    up), negative volumes, negative fractions with a compensating one: all rejected."""
    def split(t):
        com = t["routing"]["commodities"]
        k = rng.randrange(len(com))
        twin = copy.deepcopy(com[k])
        factor = rng.choice([2.0, 3.0, 1.5])
        com[k]["bytes"] *= factor
        twin["bytes"] *= 1 - factor
        com.insert(rng.randrange(len(com) + 1), twin)

    def negate(t):
        com = t["routing"]["commodities"]
        com[rng.randrange(len(com))]["bytes"] *= -1

    def fractions(t):
        com = t["routing"]["commodities"][rng.randrange(len(t["routing"]["commodities"]))]
        path = com["paths"][0]
        extra = rng.choice([0.5, 1.0, 4.0])
        com["paths"] = [{"nodes": path["nodes"], "fraction": 1 + extra},
                        {"nodes": list(path["nodes"]), "fraction": -extra}]

    def zero_and_negative(t):
        com = t["routing"]["commodities"]
        k = rng.randrange(len(com))
        twin = copy.deepcopy(com[k])
        twin["bytes"] = -com[k]["bytes"]
        com[k]["bytes"] *= 2
        twin["paths"] = [{"nodes": p["nodes"], "fraction": p["fraction"]} for p in com[k]["paths"]]
        com.append(twin)

    makers = [split, negate, fractions, zero_and_negative]
    for k in range(n):
        t = copy.deepcopy(sol_tree)
        makers[k % len(makers)](t)
        yield Hostile("negative-volumes", f"h-negative-{k:03d}.json", dump(t), "violation",
                      reason="negative ")


def gen_constraints(inst_tree, sol_tree, rng, n):
    """Recorded constraints the solution breaks (the ring heuristic doubles every link at
    d = 4), malformed or unknown ones; and constraints it meets."""
    rings = sol_tree["routing"]["rings"]
    broken = [
        {"max_multiplicity": 1},
        {"max_multiplicity": rng.choice([0, -1, "1", 1.5, None, [], True])},
        {"rings": [{**rings[0], "order": rings[0]["order"][::-1]}, *rings[1:]]},
        {"rings": [{**r, "share": 0.75 if k == 0 else 0.25} for k, r in enumerate(rings)]},
        {"rings": rings[:1]},
        {"rings": "fixed"},
        {rng.choice(["colour", "max_hops", "Max_multiplicity"]): 1},
    ]
    kept = [{"max_multiplicity": 2}, {}, {"rings": copy.deepcopy(rings)},
            {"rings": [{**r, "order": r["order"][1:] + r["order"][:1]} for r in rings],
             "max_multiplicity": 4}]
    for k in range(n):
        good = k % 3 == 2
        t = copy.deepcopy(sol_tree)
        t["constraints"] = copy.deepcopy((kept if good else broken)[k % len(kept if good
                                                                              else broken)])
        yield Hostile("constraints", f"h-constraints-{k:03d}.json", dump(t),
                      "valid" if good else "violation", reason="constraints")
    for k, bad in enumerate(([], "cap 1", 1)):  # not an object: refused by the reader
        t = copy.deepcopy(sol_tree)
        t["constraints"] = bad
        yield Hostile("constraints", f"h-constraints-shape-{k}.json", dump(t), "refused")


FREE_METHODS = ("alloc-milp", "alloc-cpsat", "alloc-benders", "alloc-alternate", "lower-bounds",
                "topologyfinder", "totientperms", "expander", "demand-greedy", "ring", "torus",
                "hypercube", "select-milp", "select-cpsat", "joint-milp", "joint-cpsat",
                "topologyfinder-lp", "totientperms-lp")
ROUTE_METHODS = ("route-milp", "route-approx", "route-cpsat")


def gen_family(inst_tree, sol_tree, rng, n):
    """Free-topology methods on an instance that fixes its topology, route methods on one
    that fixes none: refused up front, naming the file."""
    fixed = copy.deepcopy(inst_tree)
    fixed["topology"] = {"links": _edgelist_of(sol_tree)}
    for k in range(n):
        if k % 4 == 3:
            yield Hostile("family", f"h-family-{k:03d}.json", dump(inst_tree), "refused",
                          ROUTE_METHODS[k % len(ROUTE_METHODS)], "the instance has none")
        else:
            yield Hostile("family", f"h-family-{k:03d}.json", dump(fixed), "refused",
                          FREE_METHODS[k % len(FREE_METHODS)], "the instance fixes its topology")


UNROUTABLE_METHODS = ("joint-milp", "alloc-milp", "alloc-benders", "alloc-alternate",
                      "lower-bounds", "select-milp", "topologyfinder", "totientperms",
                      "expander", "demand-greedy", "topologyfinder-lp")


def gen_unroutable(inst_tree, sol_tree, rng, n):
    """Degree 1 (every topology a matching) with traffic joining 3+ servers: every exact
    method and heuristic must say "infeasible" (joint-milp said "error obj=0")."""
    from topoopt_milp.core.instance import make_instance

    for k in range(n):
        size = rng.randrange(3, 8)
        members = rng.sample(range(size), rng.randrange(3, size + 1))
        if k % 2:
            inst = make_instance(size, 1, 100.0, allreduce=[(members, rng.choice([1e6, 1e9]))],
                                 regular=False, name=f"unroutable-{k}")
        else:
            mp = [(a, b, 1e6) for a, b in zip(members, members[1:], strict=False)]
            inst = make_instance(size, 1, 100.0, mp=mp, regular=size % 2 == 0,
                                 name=f"unroutable-{k}")
        yield Hostile("unroutable", f"h-unroutable-{k:03d}.json", inst.to_json().encode(),
                      "infeasible", UNROUTABLE_METHODS[k % len(UNROUTABLE_METHODS)])


def gen_non_regular(inst_tree, sol_tree, rng, n):
    """A FIFO, a character device, a socket and a directory wherever a file is read (the
    runner makes them; a FIFO without a writer used to block solve and evaluate forever)."""
    kinds = ("fifo", "device", "socket", "directory")
    for k in range(n):
        yield Hostile("non-regular", f"h-nonreg-{k:03d}-{kinds[k % 4]}.json", None, "refused",
                      reason="is a directory" if k % 4 == 3 else "not a regular file (a ")


def gen_reroute(inst_tree, sol_tree, rng, n):
    """``evaluate --routing`` on rejected files, files without a topology or a routing, and
    topology-only files (which it routes)."""
    def rejected(t):
        t["routing"]["commodities"].pop(rng.randrange(len(t["routing"]["commodities"])))

    def no_topology(t):
        t.update(status=rng.choice(["infeasible", "no_solution", "error"]), topology=None,
                 routing=None, objective=None, bound=None)

    def feasible_without(t):
        t["topology"] = None

    def topology_only(t):
        t["routing"] = None

    def rings_only(t):
        t["routing"] = {"rings": t["routing"]["rings"]}

    def bad_rings_only(t):
        t["routing"] = {"rings": [{**t["routing"]["rings"][0], "order": [0, 1, 2]}]}

    makers = [(rejected, "violation"), (no_topology, "refused"), (feasible_without, "violation"),
              (topology_only, "valid"), (rings_only, "valid"), (bad_rings_only, "refused")]
    for k in range(n):
        t = copy.deepcopy(sol_tree)
        make, expect = makers[k % len(makers)]
        make(t)
        yield Hostile("reroute", f"h-reroute-{k:03d}.json", dump(t), expect)


HOSTILE_CLASSES = {"topology-edgelist": (gen_topology_edgelists, 42),
                   "topology-graphml": (gen_topology_graphml, 24),
                   "negative-volumes": (gen_negative_volumes, 16),
                   "constraints": (gen_constraints, 18),
                   "family": (gen_family, 20),
                   "unroutable": (gen_unroutable, 22),
                   "non-regular": (gen_non_regular, 8),
                   "reroute": (gen_reroute, 18)}


def hostile_corpus(inst_tree: dict, sol_tree: dict) -> list[Hostile]:
    rng = random.Random(SEED + 20)
    return [h for gen, count in HOSTILE_CLASSES.values()
            for h in gen(inst_tree, sol_tree, rng, count)]


def _make_special(path: Path, kind: str) -> None:
    import os
    import socket

    if path.exists() or path.is_symlink():
        return
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "device":
        path.symlink_to("/dev/zero")
    elif kind == "socket":
        s = socket.socket(socket.AF_UNIX)
        s.bind(str(path))  # the socket file stays after the close
        s.close()
    else:
        path.mkdir()


def _invoke(runner, argv, seconds=60.0):
    """``runner.invoke`` in a thread: a call that blocks fails the test instead of hanging."""
    import threading

    out = {}
    t = threading.Thread(target=lambda: out.setdefault("r", runner.invoke(main, argv)),
                         daemon=True)
    t.start()
    t.join(seconds)
    assert not t.is_alive(), f"blocked: {argv}"
    return out["r"]


def _outcome(r, path: Path) -> str:
    """"traceback", "error" (exit 2, one line naming the file; click's own usage errors for
    a directory may take more lines), "violation" (exit 1, listed) or "ok" (exit 0)."""
    if not isinstance(r.exception, SystemExit | None) or "Traceback" in r.output:
        return "traceback"
    if r.exit_code == 2:
        lines = r.stderr.strip().splitlines()
        usage = lines and lines[0].startswith("Usage:")
        one = len(lines) == 1 and lines[0].startswith("Error: ")
        return "error" if (one or usage) and path.name in r.stderr else f"bad-error:{r.stderr}"
    if r.exit_code == 1:
        listed = "violation(s)" in r.stdout and "\n  - " in r.stdout
        return "violation" if listed else f"bad-exit-1:{r.output}"
    return "ok" if r.exit_code == 0 else f"exit-{r.exit_code}"


def _calls(h: Hostile, path: Path, inst_path: Path, sol_path: Path, out: Path, k: int):
    """The command lines a case runs, each with the outcome its expectation allows."""
    i, o = str(inst_path), str(out)
    if h.cls.startswith("topology-"):
        yield ["evaluate", i, str(path)], {"valid": "ok"}.get(h.expect, "error")
        if k % 2 == 0:
            yield (["solve", i, "-m", "route-approx", "--topology", str(path), "--out", o],
                   {"valid": "ok"}.get(h.expect, "error"))
    elif h.cls in ("negative-volumes", "constraints"):
        listed = {"valid": "ok", "violation": "violation", "refused": "error"}[h.expect]
        yield ["evaluate", i, str(path)], listed
        option = ("--topology", "--warm-start")[k % 2]
        method = "route-milp" if option == "--topology" else "ring"
        yield (["solve", i, "-m", method, option, str(path), "--out", o],
               "ok" if h.expect == "valid" else "error")
        yield (["export", str(path), "--instance", i, "--out", str(out.with_suffix(".graphml"))],
               "ok" if h.expect == "valid" else "error")
    elif h.cls == "family":
        yield ["solve", str(path), "-m", h.method, "--out", o], "error"
    elif h.cls == "unroutable":
        yield ["solve", str(path), "-m", h.method, "--out", o], "infeasible"
    elif h.cls == "non-regular":
        where = k % 4
        yield ["solve", str(path), "-m", "ring", "--out", o], "error"
        yield ["evaluate", i, str(path)] if where % 2 else ["evaluate", str(path),
                                                           str(sol_path)], "error"
        yield (["solve", i, "-m", "route-milp" if where < 2 else "ring",
                "--topology" if where < 2 else "--warm-start", str(path), "--out", o], "error")
        yield ["export", str(path)] if where % 2 else ["export", str(sol_path), "--instance",
                                                      str(path), "--out",
                                                      str(out.with_suffix(".graphml"))], "error"
    elif h.cls == "reroute":
        want = {"valid": "ok", "violation": "violation", "refused": "error"}[h.expect]
        yield ["evaluate", i, str(path), "--routing", ("approx", "lp")[k % 2]], want


def test_hostile_classes_have_clean_outcomes_and_no_false_results(world, runner):
    """Every case of every hostile class: counts per class, 0 tracebacks, 0 false results
    (a wrong file accepted, a feasible word on an unroutable instance), 0 false refusals."""
    root, inst, inst_path, sol_path, _ = world
    cases = hostile_corpus(json.loads(inst_path.read_text()), json.loads(sol_path.read_text()))
    assert {h.cls for h in cases} == set(HOSTILE_CLASSES)
    table: dict[str, Counter] = {}
    failures = []
    t0 = time.perf_counter()
    for k, h in enumerate(cases):
        path = root / h.name
        if h.payload is None:
            _make_special(path, h.name.rsplit("-", 1)[1].removesuffix(".json"))
        else:
            path.write_bytes(h.payload)
        count = table.setdefault(h.cls, Counter())
        count["files"] += 1
        for argv, want in _calls(h, path, inst_path, sol_path, root / "h-out.json", k):
            r = _invoke(runner, argv)
            got = _outcome(r, path)
            if got in ("error", "violation") and h.reason not in r.output:
                got = f"wrong reason: {r.output}"  # refused, but not for the defect made
            if want == "infeasible":
                words = r.stdout.split()[:2]
                got = "infeasible" if got == "ok" and words == [h.method, "infeasible"] else \
                    "false" if got in ("ok", "violation") else got
            count[got if got in ("ok", "error", "violation", "infeasible", "traceback",
                                 "false") else "bad"] += 1
            false = got == "false" or (got == "ok" and want != "ok")
            refused_valid = want == "ok" and got != "ok"
            count["false results"] += false
            count["false refusals"] += refused_valid
            if got == "traceback" or false or refused_valid or got != want:
                failures.append((h.name, h.method, argv[0], want, got[:300]))
    elapsed = time.perf_counter() - t0
    print(f"\nhostile classes of issue 20: {len(cases)} files, {elapsed:.1f} s")
    print(f"{'class':<18} {'files':>5} {'exit 0':>6} {'exit 1':>6} {'exit 2':>6} "
          f"{'infeas':>6} {'traceb':>6} {'false':>5} {'false refusals':>14}")
    totals = Counter()
    for cls, c in table.items():
        totals.update(c)
        print(f"{cls:<18} {c['files']:>5} {c['ok']:>6} {c['violation']:>6} {c['error']:>6} "
              f"{c['infeasible']:>6} {c['traceback']:>6} {c['false results']:>5} "
              f"{c['false refusals']:>14}")
    print(f"{'total':<18} {totals['files']:>5} {totals['ok']:>6} {totals['violation']:>6} "
          f"{totals['error']:>6} {totals['infeasible']:>6} {totals['traceback']:>6} "
          f"{totals['false results']:>5} {totals['false refusals']:>14}")
    fuzz_summary(f"hostile classes of issue 20 (tests/test_fuzz_hostile.py): {len(cases)} "
                 "files", table, ("files", "ok", "violation", "error", "infeasible",
                                  "traceback", "false results", "false refusals"))
    assert not failures, failures[:10]
    assert totals["traceback"] == 0 and totals["false results"] == 0
    assert totals["false refusals"] == 0
    assert all(c["files"] >= 8 for c in table.values())
    assert elapsed < 120, elapsed
