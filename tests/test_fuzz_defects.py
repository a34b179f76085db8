"""Fuzz test of the defects of issue 20 found by brute-force oracles and hostile files
(SNDlib files, shared capacities far apart, zero traffic, the multiplicity cap, disconnected
optima, n = 10^4): classes of the project's fuzz corpus (tests/test_fuzz_input.py)."""

from __future__ import annotations

import json
import random
import time
from collections import Counter

import pytest
from helpers import fuzz_summary
from test_fuzz_input import (  # the corpus' shared pieces (fixtures included)
    SEED,
    clean_outcome,
)

from topoopt_milp.cli import main
from topoopt_milp.core.errors import InputError
from topoopt_milp.core.instance import Instance
from topoopt_milp.workloads import generators

# SNDlib files, shared capacities, zero traffic, the multiplicity cap, disconnected optima.
# Each class: a seeded generator, the real command line (or the registry), outcome counts per
# class, 0 tracebacks and 0 false results.
SND_NODES = ["A", "B", "C", "D", "E"]
SND_LINKS = [("A", "B", "10"), ("B", "C", "10"), ("C", "D", "10"), ("D", "A", "10"),
             ("A", "C", "5"), ("D", "E", "4")]
SND_DEMANDS = [("A", "C", "12"), ("E", "B", "1"), ("C", "E", "2")]


def sndlib_text(links=SND_LINKS, demands=SND_DEMANDS, nodes=SND_NODES, extra="") -> str:
    out = ["?SNDlib native format; type: network; version: 1.0", "# network fuzz", "NODES ("]
    out += [f"  {v} ( {k} {k % 2} )" for k, v in enumerate(nodes)] + [")", "LINKS ("]
    out += [f"  L{k} ( {a} {b} ) {c} 0 0 0 ( 10 1 )" for k, (a, b, c) in enumerate(links)]
    out += [")", "DEMANDS ("]
    out += [f"  D{k} ( {s} {t} ) 1 {v} UNLIMITED" for k, (s, t, v) in enumerate(demands)]
    return "\n".join(out + [")", extra]) + "\n"


def gen_sndlib(rng, n):
    """Hostile SNDlib files: non-finite and overflowing numbers in every numeric field, a
    field missing (the next entry must not be swallowed), sections twice, non-UTF-8 bytes,
    truncation, unknown nodes, stray parentheses, and valid files with far-apart capacities."""
    bad_numbers = ["NaN", "nan", "inf", "-inf", "1e400", "-1", "x", "0x10", ""]

    def field(rng):
        links = [list(x) for x in SND_LINKS]
        k = rng.randrange(len(links))
        links[k][2] = rng.choice(bad_numbers) or "NaN"
        return sndlib_text([tuple(x) for x in links])

    def short_link(rng):
        text = sndlib_text()
        k = rng.randrange(len(SND_LINKS))
        return text.replace(f"L{k} ( {SND_LINKS[k][0]} {SND_LINKS[k][1]} ) {SND_LINKS[k][2]} "
                            "0 0 0 ( 10 1 )", f"L{k} ( {SND_LINKS[k][0]} {SND_LINKS[k][1]} ) "
                            f"{SND_LINKS[k][2]} 0 {rng.choice(['0', ''])}")

    def short_demand(rng):
        return sndlib_text().replace("1 12 UNLIMITED", rng.choice(["1 12", "12", "1"]))

    def twice(rng):
        sec = rng.choice(["LINKS", "NODES", "DEMANDS"])
        return sndlib_text(extra=f"{sec} (\n)")

    def bad_demand(rng):
        return sndlib_text(demands=[("A", "C", rng.choice(bad_numbers) or "inf")])

    makers = [
        lambda r: field(r).encode(), lambda r: short_link(r).encode(),
        lambda r: short_demand(r).encode(), lambda r: twice(r).encode(),
        lambda r: bad_demand(r).encode(),
        lambda r: b"# r\xe9seau\n" + sndlib_text().encode(),  # Latin-1
        lambda r: sndlib_text().encode()[: r.randrange(20, 400)],  # truncated
        lambda r: sndlib_text(links=[*SND_LINKS, ("A", "Z", "3")]).encode(),
        lambda r: sndlib_text().replace("LINKS (", "LINKS ( (", 1).encode(),
        lambda r: bytes(r.randrange(256) for _ in range(80)),
        # valid: one capacity far from the others (route-milp used to say "infeasible")
        lambda r: sndlib_text(links=[(a, b, c if k else f"1e{r.choice([9, 12, 100, 300])}")
                                     for k, (a, b, c) in enumerate(SND_LINKS)]).encode(),
        lambda r: sndlib_text(links=[(a, b, "1e-300") for a, b, _ in SND_LINKS]).encode(),
    ]
    for k in range(n):
        yield makers[k % len(makers)](rng)


def _sndlib_oracle(text: bytes):
    """Independent line-based reading of a generated file: the links with a positive
    capacity, or ``None`` when the file breaks the format somewhere (any doubt: refuse)."""
    import math
    import re

    try:
        lines = text.decode("utf-8").splitlines()
    except UnicodeDecodeError:
        return None
    if sum(x.startswith("LINKS (") for x in lines) != 1 or not any(
            x.startswith("DEMANDS (") for x in lines):
        return None
    pat = re.compile(r"^\s+L\d+ \( ([A-E]) ([A-E]) \) (\S+) 0 0 0 \( 10 1 \)$")
    caps = {}
    inside = False
    for line in lines:
        if line.startswith("LINKS ("):
            inside = True
            continue
        if inside and line == ")":
            break
        if inside:
            m = pat.match(line)
            if not m:
                return None
            c = float(m.group(3))
            if not math.isfinite(c) or c < 0:
                return None
            key = tuple(sorted(m.group(1, 2)))
            caps[key] = caps.get(key, 0.0) + c
    return {k: c for k, c in caps.items() if c > 0}


def test_fuzz_sndlib_files(tmp_path, runner):
    from topoopt_milp.core.sndlib import read_sndlib
    from topoopt_milp.core.topology import link_capacities

    rng = random.Random(SEED + 20)
    outcomes = Counter()
    for k, text in enumerate(gen_sndlib(rng, 48)):
        path = tmp_path / f"snd-{k:03d}.txt"
        path.write_bytes(text)
        r = runner.invoke(main, ["solve", str(path), "--input-format", "sndlib", "-m",
                                 "route-milp", "--out", str(tmp_path / "o.json")])
        code = clean_outcome(r, path, allowed=(0, 2))
        oracle = _sndlib_oracle(text)
        if code == 0:
            # accepted: every link the file gives is there, with its capacity, and solved
            inst = read_sndlib(path)
            names = inst.meta["sndlib"]["nodes"]
            got = {tuple(sorted((names[i], names[j]))): c
                   for (i, j), c in link_capacities(inst).items()}
            assert oracle is not None and got == pytest.approx(oracle), (path.name, got, oracle)
            sol = json.loads((tmp_path / "o.json").read_text())
            assert sol["status"] == "optimal", (path.name, sol["status"], sol.get("message"))
        outcomes[("ok" if code == 0 else "refused")] += 1
        outcomes["files"] += 1
    fuzz_summary("hostile SNDlib files (test_fuzz_defects.py)", {"sndlib": outcomes},
                 ("files", "ok", "refused", "tracebacks", "false"))
    assert outcomes["ok"] >= 6 and outcomes["refused"] >= 30


def gen_shared_capacity(rng, n):
    """Cycles of 4-7 links with capacities log-uniform over 600 orders of magnitude and one
    demand: the closed form ``D / (b1 + b2)`` (b the two arcs' bottlenecks) is the oracle."""
    for _ in range(n):
        size = rng.randrange(4, 8)
        caps = [10 ** rng.uniform(-300, 300) for _ in range(size)]
        s, t = rng.sample(range(size), 2)
        yield size, caps, s, t, 10 ** rng.uniform(-2, 2)


def test_fuzz_shared_capacities_far_apart():
    from topoopt_milp import registry
    from topoopt_milp.core.instance import BYTES_PER_GBPS, FixedTopology
    from topoopt_milp.core.result import Status

    outcomes = Counter()
    for size, caps, s, t, D in gen_shared_capacity(random.Random(SEED + 21), 16):
        links = tuple((min(k, (k + 1) % size), max(k, (k + 1) % size), c)
                      for k, c in enumerate(caps))
        inst = Instance(n=size, degree=2, link_gbps=1.0 / BYTES_PER_GBPS, mp=((s, t, D),),
                        regular=False, topology=FixedTopology(links, shared=True))
        lo, hi = min(s, t), max(s, t)
        expected = D / (min(caps[lo:hi]) + min(caps[hi:] + caps[:lo]))
        try:
            res = registry.solve(inst, "route-milp")
        except InputError:
            outcomes["refused"] += 1
            continue
        assert res.status is not Status.INFEASIBLE  # the false result of the issue
        assert res.status is Status.OPTIMAL, res.message
        assert res.objective == pytest.approx(expected, rel=1e-6)
        assert res.bound <= expected * (1 + 1e-7)
        outcomes["optimal"] += 1
    outcomes["networks"] = 16
    fuzz_summary("shared capacities 1e-300..1e300 (test_fuzz_defects.py)",
                 {"shared-capacity": outcomes},
                 ("networks", "optimal", "refused", "infeasible", "false"))
    assert outcomes["optimal"] >= 14


def gen_alloc_hostile(rng, n):
    """alloc instances the issue's oracles broke: zero traffic, two blocks with no demand
    between them (a disconnected optimum), an irregular cluster with idle nodes."""
    from topoopt_milp.core.instance import make_instance

    for k in range(n):
        kind = k % 4
        if kind == 0:
            yield "zero", make_instance(8, 4, 100.0, mp=[(0, 1, 0.0)]) if rng.random() < 0.5 \
                else make_instance(8, 4, 100.0, allreduce=[((0, 1, 2, 3), 0.0)])
        elif kind == 1:
            yield "blocks", make_instance(6, 2, 100.0, mp=[
                (i, j, rng.uniform(1e7, 1e8)) for b in ((0, 1, 2), (3, 4, 5)) for i in b
                for j in b if i != j])
        elif kind == 2:
            yield "irregular", make_instance(8, 3, 100.0, regular=False, mp=[
                (0, 1, rng.uniform(1e7, 1e8)), (1, 2, rng.uniform(1e7, 1e8)),
                (2, 0, rng.uniform(1e7, 1e8))])
        else:
            yield "cap", generators.sparse(8, 4, pairs=4, seed=rng.randrange(100))


@pytest.mark.parametrize("count", [4, pytest.param(12, marks=pytest.mark.slow)])
def test_fuzz_alloc_methods_on_hostile_instances(tmp_path, runner, count):
    """Every instance through the command line with alloc-benders, alloc-alternate (with
    ``--max-multiplicity 1`` for the cap class) and lower-bounds --master-time: exit 0, no
    traceback; no result better than alloc-milp's proven optimum, none above the cap."""
    from topoopt_milp import registry

    outcomes = Counter()
    for k, (cls, inst) in enumerate(gen_alloc_hostile(random.Random(SEED + 22), count)):
        path = tmp_path / f"alloc-{k}.json"
        inst.save(path)
        cap = ["--max-multiplicity", "1"] if cls == "cap" else []
        knobs = {"max_multiplicity": 1} if cls == "cap" else {}
        opt = registry.solve(inst, "alloc-milp", time_limit=60, rings="choose", **knobs)
        for method in ("alloc-benders", "alloc-alternate", "lower-bounds"):
            extra = ["--master-time", "3"] if method == "lower-bounds" else []
            out = tmp_path / f"alloc-{k}-{method}.json"
            own_cap = cap if method != "lower-bounds" else []  # its bound covers any cap
            r = runner.invoke(main, ["solve", str(path), "-m", method, "--time-limit", "30",
                                     *own_cap, *extra, "--out", str(out)])
            assert clean_outcome(r, None, allowed=(0,)) == 0, (cls, method, r.output)
            sol = json.loads(out.read_text())
            if method == "lower-bounds":
                assert sol["bound"] <= opt.objective * (1 + 1e-6), (cls, sol["bound"])
            else:
                links = sol["topology"]["links"]
                assert max(c for _, _, c in links) <= (1 if cap else inst.degree), (cls, method)
                assert sol["objective"] >= opt.objective * (1 - 1e-6), (cls, method)
            outcomes[(cls, method)] += 1
    table: dict[str, Counter] = {}
    for (cls, method), c in outcomes.items():
        table.setdefault(f"alloc/{cls}", Counter())[method] += c
    fuzz_summary("hostile alloc instances, exit 0 per method (test_fuzz_defects.py)", table,
                 ("alloc-benders", "alloc-alternate", "lower-bounds"))
    assert len(outcomes) == 12 and sum(outcomes.values()) == 3 * count


@pytest.mark.slow
def test_fuzz_large_n_topologyfinder_and_lower_bounds(tmp_path, runner):
    """n = 10^4, the documented maximum: TopologyFinder's default split finishes (greedy
    rounds) and lower-bounds --time-limit 20 returns within its limit (plus start-up)."""
    inst = generators.mixed(10_000, 8, mp_pattern="sparse", pairs=80_000, seed=1)
    path = tmp_path / "n10000.json"
    inst.save(path)
    t0 = time.perf_counter()
    r = runner.invoke(main, ["solve", str(path), "-m", "lower-bounds", "--time-limit", "20",
                             "--out", str(tmp_path / "lb.json")])
    assert clean_outcome(r, None, allowed=(0,)) == 0
    assert json.loads((tmp_path / "lb.json").read_text())["runtime_s"] <= 20 * 1.05
    print("lower-bounds n=1e4 wall", time.perf_counter() - t0)
    t0 = time.perf_counter()
    r = runner.invoke(main, ["solve", str(path), "-m", "topologyfinder", "--out",
                             str(tmp_path / "tf.json")])
    assert clean_outcome(r, None, allowed=(0,)) == 0
    print("topologyfinder n=1e4 wall", time.perf_counter() - t0)


def gen_path_arguments(root, rng, n):
    """``(argv, the file named)``: a directory, a FIFO or a missing file given wherever a
    command names a file (INSTANCE, SOL, --topology, --warm-start, --out)."""
    import os

    inst, sol = root / "base-instance.json", root / "base-solution.json"
    fifo = root / "a-fifo.json"
    if not fifo.exists():
        os.mkfifo(fifo)
    bad = [str(root), str(fifo), str(root / "missing.json")]
    makers = [
        lambda b: (["solve", b, "-m", "ring", "--out", str(root / "o.json")], b),
        lambda b: (["evaluate", str(inst), b], b),
        lambda b: (["evaluate", b, str(sol)], b),
        lambda b: (["solve", str(inst), "-m", "route-milp", "--topology", b, "--out",
                    str(root / "o.json")], b),
        lambda b: (["solve", str(inst), "-m", "alloc-milp", "--warm-start", b, "--out",
                    str(root / "o.json")], b),
        lambda b: (["export", b, "--format", "edgelist"], b),
        lambda b: (["simulate", str(inst), b], b),
        lambda b: (["certify", b, "-t", "1"], b),
    ]
    for k in range(n):
        yield makers[k % len(makers)](bad[(k // len(makers)) % len(bad)])
    yield ["solve", str(inst), "-m", "ring", "--out", str(root)], str(root)  # --out a folder


def test_fuzz_path_arguments(world, runner):
    """A directory, a FIFO or a missing file as any file argument: one line naming the
    argument's file, exit 2 (never click's usage block, never a hang)."""
    root = world[0]
    outcomes = Counter()
    for argv, named in gen_path_arguments(root, random.Random(SEED + 23), 24):
        t0 = time.perf_counter()
        r = runner.invoke(main, argv)
        assert time.perf_counter() - t0 < 30, argv  # a FIFO is never opened for reading
        assert clean_outcome(r, None, allowed=(2,)) == 2, (argv, r.output)
        assert named in r.stderr and "Usage:" not in r.output, (argv, r.output)
        outcomes["files"] += 1
        outcomes["exit 2, one line"] += 1
    fuzz_summary("file arguments that are no regular file (test_fuzz_defects.py)",
                 {"path-arguments": outcomes}, ("files", "exit 2, one line", "tracebacks"))
    assert outcomes["files"] == 25


def test_fuzz_sndlib_topology_keeps_shared_capacities(tmp_path, runner):
    """--topology on an SNDlib network: the file picks the network's links at the network's
    capacities (the optimum with the network's own topology is unchanged; a subset routes
    around the missing link); a link the network lacks is refused by name, exit 2."""
    snd = tmp_path / "net.txt"
    snd.write_text(sndlib_text())
    base = ["solve", str(snd), "--input-format", "sndlib", "-m", "route-milp"]
    r = runner.invoke(main, [*base, "--out", str(tmp_path / "a.json")])
    assert r.exit_code == 0, r.output
    own = json.loads((tmp_path / "a.json").read_text())
    r = runner.invoke(main, ["export", str(tmp_path / "a.json"), "--format", "edgelist",
                             "--out", str(tmp_path / "a.edgelist")])
    assert r.exit_code == 0, r.output
    for top in ("a.json", "a.edgelist"):
        r = runner.invoke(main, [*base, "--topology", str(tmp_path / top), "--out",
                                 str(tmp_path / "b.json")])
        assert r.exit_code == 0, r.output
        again = json.loads((tmp_path / "b.json").read_text())
        assert again["objective"] == pytest.approx(own["objective"], rel=1e-6), top
    # drop the A-C diagonal (0-2): the 12 units A->C go round the 4-cycle (10 + 10 per side)
    lines = [x for x in (tmp_path / "a.edgelist").read_text().splitlines()
             if x.split()[:2] != ["0", "2"]]
    (tmp_path / "sub.edgelist").write_text("\n".join(lines) + "\n")
    r = runner.invoke(main, [*base, "--topology", str(tmp_path / "sub.edgelist"), "--out",
                             str(tmp_path / "c.json")])
    assert r.exit_code == 0, r.output
    sub = json.loads((tmp_path / "c.json").read_text())
    assert sub["objective"] >= own["objective"] * (1 - 1e-9)
    (tmp_path / "bad.edgelist").write_text("0 1\n1 4\n")  # B-E: no such link
    r = runner.invoke(main, [*base, "--topology", str(tmp_path / "bad.edgelist"), "--out",
                             str(tmp_path / "d.json")])
    assert clean_outcome(r, tmp_path / "bad.edgelist", allowed=(2,)) == 2
    assert "1-4 is not a link of the instance's network" in r.stderr, r.stderr
