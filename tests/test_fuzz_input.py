"""Fuzz test of bad input: a generated corpus of malformed instance and solution files and
bad options, every one run through the real command line.

The corpus is generated, not copied: one generator per defect class mutates a valid instance
or solution file (numbers, structure, sizes, type swaps, missing and unknown fields, ranges,
derived overflow, instance hashes, semantic breakage), with a fixed seed, so the same few
hundred files come back on every run. For every file the command line must give

* exit 2 and exactly one ``Error: ...`` line on stderr that names the file (when the file
  itself is refused) -- a clean input error; or
* exit 1 with the checker's violations listed (solutions only); or
* exit 0 when the mutation happened to leave a valid file (an optional field dropped, a
  demand removed, a seed changed: counted, and bounded below);

and never a traceback: ``CliRunner`` must end in ``SystemExit``, never in another exception.
The independent checker is also called directly on every solution that Python's lenient
``json`` can parse: it must return a list of violations, never raise.
"""

from __future__ import annotations

import copy
import json
import random
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest

from topoopt_milp.cli import main
from topoopt_milp.core.check import check_solution
from topoopt_milp.core.errors import InputError
from topoopt_milp.core.instance import MAX_N, Instance
from topoopt_milp.core.result import read_solution, write_solution
from topoopt_milp.pipeline import solve_checked
from topoopt_milp.workloads import generators

SEED = 20261201
TOKEN = "@@RAW@@"  # a string value replaced by raw JSON text (tokens json.dumps cannot write)


@dataclass(frozen=True)
class Case:
    kind: str  # "instance" or "solution"
    cls: str  # the defect class (generator) that made it
    name: str
    text: bytes


# -- the valid starting points --------------------------------------------------------------
def base_instance() -> Instance:
    return generators.sparse(8, 4, pairs=8, groups=1, group_size=4, seed=3)


def base_solution(inst: Instance, path: Path) -> dict:
    write_solution(path, solve_checked(inst, "ring"), inst)
    return json.loads(path.read_text())


# -- tree helpers ------------------------------------------------------------------------
def paths_of(tree, prefix=()):
    """Every path (tuple of keys / indices) to a node of a JSON tree, the root excluded, and
    outside ``meta`` (free-form provenance, where any JSON value is valid)."""
    items = tree.items() if isinstance(tree, dict) else enumerate(tree) \
        if isinstance(tree, list) else ()
    for k, v in items:
        if k == "meta" and not prefix:
            continue
        yield (*prefix, k)
        yield from paths_of(v, (*prefix, k))


def get(tree, path):
    for k in path:
        tree = tree[k]
    return tree


def put(tree, path, value):
    get(tree, path[:-1])[path[-1]] = value


def dump(tree, raw: str | None = None) -> bytes:
    text = json.dumps(tree)
    if raw is not None:
        text = text.replace(json.dumps(TOKEN), raw, 1)
    return text.encode()


def number_paths(tree):
    return [p for p in paths_of(tree) if isinstance(get(tree, p), int | float)
            and not isinstance(get(tree, p), bool)]


# Number classes: raw JSON text for values no float can hold, overflowing literals, tokens,
# extremes and near-misses of every sign and type.
RAW_NUMBERS = ["1" + "0" * 400, "9" * 5000, "-" + "7" * 320, "1e400", "-1e400", "NaN",
               "Infinity", "-Infinity", "1e308", "5e-324", "-0.0", "1e-320", "2.5", "-1",
               "0", "1e20", "1e30", "123456789012345678901234567890", "true", "null", '"12"',
               "[]", "{}"]


def gen_numbers(tree, rng, n):
    """Number classes at a random numeric field."""
    paths = number_paths(tree)
    for _ in range(n):
        t = copy.deepcopy(tree)
        put(t, rng.choice(paths), TOKEN)
        yield dump(t, rng.choice(RAW_NUMBERS))


SWAPS = [[], {}, "x", True, None, [1, 2], {"a": 1}, 3, -2.5, [[0, 1, 2]], "\u00e9"]


def gen_type_swaps(tree, rng, n):
    """A random node (any depth) replaced by a value of another JSON type."""
    paths = list(paths_of(tree))
    for _ in range(n):
        t = copy.deepcopy(tree)
        put(t, rng.choice(paths), copy.deepcopy(rng.choice(SWAPS)))
        yield dump(t)


def gen_missing(tree, rng, n):
    """A random object key (any depth) removed, or a random list entry dropped."""
    paths = list(paths_of(tree))
    for _ in range(n):
        t = copy.deepcopy(tree)
        p = rng.choice(paths)
        del get(t, p[:-1])[p[-1]]
        yield dump(t)


def gen_unknown(tree, rng, n):
    """A field no reader knows, at the top or inside a random object."""
    objects = [()] + [p for p in paths_of(tree) if isinstance(get(tree, p), dict)]
    for _ in range(n):
        t = copy.deepcopy(tree)
        get(t, rng.choice(objects))[rng.choice(["colour", "weight", "n2", "x"])] = 1
        yield dump(t)


def gen_structure(tree, rng, n):
    """Nesting, duplicate keys, lone surrogates, wrong top level, truncated, binary, empty."""
    text = json.dumps(tree)
    makers = [
        lambda: ("[" * rng.choice([70, 1000, 200_000])).encode(),  # unterminated
        lambda: (lambda d: ("[" * d + "]" * d).encode())(rng.choice([65, 500, 5000, 200_000])),
        lambda: (text[:-1] + ', "deep": ' + "[" * 3000 + "]" * 3000 + "}").encode(),
        lambda: text.replace('{"format"', '{"format": "topoopt-instance/0", "format"', 1).encode(),
        lambda: _dup_key(tree, rng),
        lambda: _surrogate(tree, rng),
        lambda: rng.choice([b"[]", b'"a string"', b"42", b"null", b"", b"  ", b"{"]),
        lambda: text.encode()[: rng.randrange(1, len(text))],
        lambda: bytes(rng.randrange(256) for _ in range(64)),
        lambda: b"\xef\xbb\xbf" + text.encode(),  # UTF-8 byte order mark
    ]
    for k in range(n):
        yield makers[k % len(makers)]()


def _dup_key(tree, rng) -> bytes:
    """The first key of a random object written twice (the second with another value)."""
    objects = [()] + [p for p in paths_of(tree) if isinstance(get(tree, p), dict)
                      and get(tree, p)]
    p = rng.choice(objects)
    t = copy.deepcopy(tree)
    obj = get(t, p)
    key = next(iter(obj))
    obj[key] = TOKEN
    return dump(t, f"1, {json.dumps(key)}: 2")


def _surrogate(tree, rng) -> bytes:
    """A lone surrogate in a random string (or key)."""
    t = copy.deepcopy(tree)
    strings = [p for p in paths_of(t) if isinstance(get(t, p), str)]
    where = rng.choice(["name", "value", "key"])
    if where == "name" and isinstance(t, dict):
        t["name"] = TOKEN
    elif where == "value" and strings:
        put(t, rng.choice(strings), TOKEN)
    else:
        t[TOKEN] = 1
    return dump(t, rng.choice(['"\\ud800x"', '"a\\udfff"', '"\\udc00"']))


# -- instance-specific classes -----------------------------------------------------------------
def gen_sizes(tree, rng, n):
    """Cluster sizes beyond every limit, and the ones refused by method (see test below)."""
    values = [10**5, 10**6, 1e300, 10**20, MAX_N + 1, 2**63, 1e15, 10**4 * 7]
    for k in range(n):
        t = copy.deepcopy(tree)
        t["n"] = values[k % len(values)]
        yield dump(t)


def gen_ranges(tree, rng, n):
    """Node ids out of range, self-demands, repeated members, degree vs n, odd regular."""
    makers = [
        lambda t: t["mp"][0].__setitem__(rng.choice([0, 1]), rng.choice([-1, 8, 9, 10**9])),
        lambda t: t["mp"][0].__setitem__(1, t["mp"][0][0]),
        lambda t: t["allreduce"][0]["members"].append(t["allreduce"][0]["members"][0]),
        lambda t: t["allreduce"][0].__setitem__("members", [rng.choice([-3, 8, 100])]),
        lambda t: t.__setitem__("degree", rng.choice([8, 9, 0, -1])),
        lambda t: t.update(n=7, degree=3, mp=[], allreduce=[]),
        lambda t: t.__setitem__("gpus_per_server", rng.choice([0, -2])),
        lambda t: t.__setitem__("format", rng.choice(["topoopt-instance/9", "", None, 1])),
    ]
    for k in range(n):
        t = copy.deepcopy(tree)
        makers[k % len(makers)](t)
        yield dump(t)


def gen_derived(tree, rng, n):
    """Values whose derived quantities overflow: total bytes, rate, times, latency."""
    makers = [
        lambda t: [row.__setitem__(2, 1e308) for row in t["mp"][:2]],
        lambda t: t["allreduce"][0].__setitem__("bytes", rng.choice([1e308, 9e307])),
        lambda t: t.__setitem__("link_gbps", rng.choice([5e-324, 1e-310, 1e300, 1.5e300])),
        lambda t: t.__setitem__("latency_us", rng.choice([1e308, 5e307])),
        lambda t: t.update(compute_s=1.7e308, link_gbps=1.5e-306),  # compute + comm overflows
        lambda t: t["mp"][0].__setitem__(2, 1.7e308),
    ]
    for k in range(n):
        t = copy.deepcopy(tree)
        makers[k % len(makers)](t)
        yield dump(t)


# -- solution-specific classes -----------------------------------------------------------------
def gen_solution_numbers(tree, rng, n):
    """The numbers the issue lists -- wrong topology.n, link counts 1e20, path nodes 1e30,
    negative fractions -- and their neighbours, at the fields that size arrays."""
    targets = [("topology", "n"), ("topology", "links", 0, 2), ("topology", "links", 0, 0),
               ("routing", "commodities", 0, "paths", 0, "fraction"),
               ("routing", "commodities", 0, "src"), ("routing", "rings", 0, "share"),
               ("routing", "rings", 0, "group"), ("seed",), ("runtime_s",), ("objective",),
               ("bound",), ("routing", "commodities", 1, "bytes")]
    values = ["9", "0", "1", "-1", "1000000", "1" + "0" * 400, "1e30", "1e20",
              "100000000000000000000", "-0.5", "2", "1e400", "NaN", "7.5"]
    for k in range(n):
        t = copy.deepcopy(tree)
        p = targets[k % len(targets)]
        put(t, p, TOKEN)
        yield dump(t, rng.choice(values))
    for k in range(n // 2):  # a node deep inside a path
        t = copy.deepcopy(tree)
        nodes = get(t, ("routing", "commodities", k % 4, "paths", 0, "nodes"))
        nodes.insert(1, TOKEN)
        yield dump(t, rng.choice(["1e30", "1" + "0" * 30, "-5", "8", "3.5"]))


def gen_hashes(tree, rng, n):
    """A wrong, missing, mistyped instance hash, or no instance object at all."""
    makers = [
        lambda t: t["instance"].__setitem__("hash", f"{rng.getrandbits(64):016x}"),
        lambda t: t["instance"].pop("hash"),
        lambda t: t["instance"].__setitem__("hash", rng.choice([12, None, [], ""])),
        lambda t: t.pop("instance"),
        lambda t: t.__setitem__("instance", rng.choice(["inst", [], None])),
        lambda t: t["instance"].update(base_hash=t["instance"].pop("hash")),  # hash required
    ]
    for k in range(n):
        t = copy.deepcopy(tree)
        makers[k % len(makers)](t)
        yield dump(t)


def gen_semantic(tree, rng, n):
    """Well-formed but wrong solutions: the checker must list what is wrong."""
    def extra_link(t):
        t["topology"]["links"].append([0, rng.randrange(1, 8), 1])

    def drop_commodity(t):
        t["routing"]["commodities"].pop(rng.randrange(len(t["routing"]["commodities"])))

    def bad_hop(t):
        t["routing"]["commodities"][0]["paths"][0]["nodes"] = [
            t["routing"]["commodities"][0]["src"], 7, 3, t["routing"]["commodities"][0]["dst"]]

    def fractions(t):
        t["routing"]["commodities"][0]["paths"][0]["fraction"] = rng.choice([0.5, 1.5, 0.0])

    def status(t):
        t["status"] = rng.choice(["optimal", "infeasible", "no_solution", "error", "great"])

    def objective(t):
        t["objective"] = t["objective"] * rng.choice([0.5, 2.0, 1.0001])

    def bound(t):
        t["bound"] = rng.choice([-1.0, 1e9, t["objective"] * 3])

    def ring(t):
        t["routing"]["rings"][0]["order"] = t["routing"]["rings"][0]["order"][::-1][:-1]

    def kind(t):
        t["objective_kind"] = rng.choice(["diameter", "total_hops", "speed"])

    makers = [extra_link, drop_commodity, bad_hop, fractions, status, objective, bound, ring,
              kind]
    for k in range(n):
        t = copy.deepcopy(tree)
        makers[k % len(makers)](t)
        yield dump(t)


INSTANCE_CLASSES = {"numbers": (gen_numbers, 40), "structure": (gen_structure, 30),
                    "sizes": (gen_sizes, 8), "type-swaps": (gen_type_swaps, 30),
                    "missing": (gen_missing, 25), "unknown": (gen_unknown, 8),
                    "ranges": (gen_ranges, 16), "derived": (gen_derived, 12)}
SOLUTION_CLASSES = {"numbers": (gen_solution_numbers, 36), "structure": (gen_structure, 20),
                    "type-swaps": (gen_type_swaps, 40), "missing": (gen_missing, 40),
                    "hashes": (gen_hashes, 12),
                    "semantic": (gen_semantic, 27)}


def corpus(inst_tree: dict, sol_tree: dict) -> list[Case]:
    """The whole corpus, in a fixed order from a fixed seed."""
    rng = random.Random(SEED)
    out = []
    for kind, tree, classes in (("instance", inst_tree, INSTANCE_CLASSES),
                                ("solution", sol_tree, SOLUTION_CLASSES)):
        for cls, (gen, count) in classes.items():
            for k, text in enumerate(gen(tree, rng, count)):
                out.append(Case(kind, cls, f"{kind[:4]}-{cls}-{k:03d}.json", text))
    return out


# -- running it ----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def world(tmp_path_factory):
    root = tmp_path_factory.mktemp("fuzz")
    inst = base_instance()
    inst_path = root / "base-instance.json"
    inst.save(inst_path)
    sol_tree = base_solution(inst, root / "base-solution.json")
    cases = corpus(json.loads(inst_path.read_text()), sol_tree)
    for c in cases:
        (root / c.name).write_bytes(c.text)
    return root, inst, inst_path, root / "base-solution.json", cases


def clean_outcome(result, path: Path | None, allowed=(0, 1, 2)) -> int:
    """Assert the CliRunner result is a clean outcome (module docstring); its exit code."""
    assert isinstance(result.exception, SystemExit | None), (path, result.exception)
    assert "Traceback" not in result.output, (path, result.output)
    assert result.exit_code in allowed, (path, result.exit_code, result.output)
    if result.exit_code == 2:
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("Error: "), (path, result.stderr)
        if path is not None:
            assert path.name in lines[0], (path, lines[0])
    if result.exit_code == 1:
        assert "violation(s)" in result.stdout, (path, result.output)
        assert "\n  - " in result.stdout, (path, result.output)
    return result.exit_code


def refused(loader, path: Path) -> bool:
    """Whether the library refuses the file itself (then the CLI error must name it)."""
    try:
        loader(path)
    except InputError:
        return True
    return False


def test_corpus_is_large_and_covers_every_class(world):
    *_, cases = world
    counts = Counter((c.kind, c.cls) for c in cases)
    assert len(cases) >= 300
    assert {cls for kind, cls in counts if kind == "instance"} == set(INSTANCE_CLASSES)
    assert {cls for kind, cls in counts if kind == "solution"} == set(SOLUTION_CLASSES)
    assert len({c.text for c in cases}) >= 0.8 * len(cases)  # mostly distinct files
    assert corpus(*(json.loads(p.read_text()) for p in (world[2], world[3]))) == cases


def test_every_file_is_a_clean_error_or_a_listed_violation(world, runner):
    root, inst, inst_path, sol_path, cases = world
    t0 = time.perf_counter()
    outcomes = Counter()
    for k, c in enumerate(cases):
        path = root / c.name
        if c.kind == "instance":
            bad = refused(Instance.load, path)
            r = runner.invoke(main, ["solve", str(path), "-m", "ring", "--out",
                                     str(root / "out.json")])
            code = clean_outcome(r, path if bad else None, allowed=(0, 2))
            assert bad == (code == 2) or not bad, (c.name, r.output)
            r = runner.invoke(main, ["evaluate", str(path), str(sol_path)])
            clean_outcome(r, path if bad else None)
        else:
            bad = refused(read_solution, path)
            r = runner.invoke(main, ["evaluate", str(inst_path), str(path)])
            code = clean_outcome(r, path)
            assert not bad or code == 2, (c.name, r.output)
            _checker_never_raises(inst, path)
            option = "--warm-start" if k % 2 else "--topology"
            method = "ring" if option == "--warm-start" else "route-milp"
            r = runner.invoke(main, ["solve", str(inst_path), "-m", method, option, str(path),
                                     "--out", str(root / "out.json")])
            clean_outcome(r, path, allowed=(0, 2))
            fmt = ("graphml", "routing", "edgelist")[k % 3]
            r = runner.invoke(main, ["export", str(path), "--format", fmt, "--out",
                                     str(root / f"out.{fmt}"),
                                     *(["--instance", str(inst_path)] if k % 2 else [])])
            clean_outcome(r, path, allowed=(0, 2))
        outcomes[(c.kind, code)] += 1
    elapsed = time.perf_counter() - t0
    # every class of defect is caught: almost every instance mutation is refused, and the
    # solution mutations that are not refused are listed violations
    assert outcomes[("instance", 2)] >= 0.85 * sum(v for (k, _), v in outcomes.items()
                                                   if k == "instance")
    assert outcomes[("solution", 1)] >= 20 and outcomes[("solution", 2)] >= 100
    assert elapsed < 60, elapsed


def _checker_never_raises(inst: Instance, path: Path) -> None:
    try:
        data = json.loads(path.read_bytes())
    except (ValueError, RecursionError):
        return
    problems = check_solution(inst.to_dict(), data)
    assert isinstance(problems, list) and all(isinstance(p, str) for p in problems)


@pytest.mark.parametrize("argv", [
    ["--time-limit", "-1"], ["--time-limit", "nan"], ["--time-limit", "-inf"],
    ["--threads", "0"], ["--threads", "-4"], ["--mip-gap", "-1"], ["--mip-gap", "nan"],
    ["--mip-gap", "2"],
])
def test_bad_solver_options(world, runner, argv):
    root, _, inst_path, _, _ = world
    r = runner.invoke(main, ["solve", str(inst_path), "-m", "alloc-milp", *argv, "--out",
                             str(root / "opt.json")])
    assert clean_outcome(r, None, allowed=(2,)) == 2
    assert argv[0].lstrip("-").replace("-", "_") in r.stderr


@pytest.mark.parametrize("value", ["-1", "nan", "0", "inf"])
def test_bad_hard_limit(world, runner, value):
    root, _, inst_path, _, _ = world
    store = root / f"hard{value}.db"
    r = runner.invoke(main, ["bench", str(inst_path), "-m", "ring", "--hard-limit", value,
                             "--store", str(store), "--no-progress"])
    assert clean_outcome(r, None, allowed=(2,)) == 2 and "--hard-limit" in r.stderr
    assert not store.exists()


def test_sizes_are_refused_at_once_naming_size_and_limit(world, runner, monkeypatch):
    root, *_ = world
    big = generators.permutation(5000, 8, seed=1)
    path = root / "n5000.json"
    big.save(path)
    for method, limit in (("alloc-milp", "n <= 64"), ("joint-milp", "n <= 32"),
                          ("select-milp", "n <= 1024"), ("alloc-cpsat", "n <= 64")):
        t0 = time.perf_counter()
        r = runner.invoke(main, ["solve", str(path), "-m", method, "--out", str(root / "x.json")])
        assert clean_outcome(r, None, allowed=(2,)) == 2
        assert "n = 5000" in r.stderr and limit in r.stderr and " GB " in r.stderr
        assert time.perf_counter() - t0 < 10
    small = root / "n30.json"
    generators.uniform(30, 4).save(small)
    monkeypatch.setenv("TOPOOPT_MEMORY_GB", "0.01")
    r = runner.invoke(main, ["solve", str(small), "-m", "alloc-milp", "--out", str(root / "y.json")])
    assert clean_outcome(r, None, allowed=(2,)) == 2
    assert "alloc-milp: n = 30 needs ~" in r.stderr and "memory limit is 0.01 GB" in r.stderr


def test_real_executable_on_a_sample(world):
    """The console script on a few corpus files: stderr exactly one line, no traceback."""
    root, _, inst_path, _, cases = world
    script = Path(sys.executable).with_name("topoopt-milp")
    entry = [str(script)] if script.exists() else [
        sys.executable, "-c", "from topoopt_milp.cli import main; main(prog_name='topoopt-milp')"]
    sample = [c for c in cases if c.cls in ("structure", "sizes")][::9][:3]
    for c in sample:
        args = ["solve", str(root / c.name), "-m", "ring", "--out", str(root / "z.json")] \
            if c.kind == "instance" else ["evaluate", str(inst_path), str(root / c.name)]
        proc = subprocess.run([*entry, *args], capture_output=True, text=True, timeout=60)
        assert "Traceback" not in proc.stderr, (c.name, proc.stderr)
        if proc.returncode == 2:
            assert proc.stderr.count("\n") == 1 and c.name in proc.stderr, proc.stderr
        else:
            assert proc.returncode in (0, 1), (c.name, proc.returncode, proc.stderr)


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
    assert not failures, failures[:10]
    assert totals["traceback"] == 0 and totals["false results"] == 0
    assert totals["false refusals"] == 0
    assert all(c["files"] >= 8 for c in table.values())
    assert elapsed < 120, elapsed

# -- hostile --out targets and workload options (issue 20) -----------------------------------
# Two more classes, run through the real command line like the files above. For every case:
# a clean outcome (exit 2 with one "Error:" line, or exit 0), never a traceback, and never a
# false result: exit 0 means the file was written and is valid; "saved to X" means X holds
# the complete output; a refused write leaves no partial file behind.
OUT_COMMANDS = ("solve", "table", "export", "generate")


def gen_out_paths(root: Path, rng, n):
    """``(label, target)``: names a disk cannot take, places that refuse files, a full disk,
    and a few valid but unusual names (which must then be written)."""
    makers = [
        ("full-disk", lambda: "/dev/full"),
        ("refusing-place", lambda: f"/sys/topoopt-fuzz-{rng.randrange(10**6)}.json"),
        ("name-too-long", lambda: str(root / ("n" * rng.randrange(256, 400) + ".json"))),
        ("folder-too-long", lambda: str(root / ("f" * rng.randrange(256, 400)) / "a.json")),
        ("empty-name", lambda: rng.choice(["", " ", "\t"])),
        ("missing-folder", lambda: str(root / f"missing-{rng.randrange(10**6)}" / "a.json")),
        ("through-a-file", lambda: str(root / "base-instance.json" / "a.json")),
        ("trailing-slash", lambda: str(root / f"new-{rng.randrange(10**6)}") + "/"),
        ("valid-unusual", lambda: str(root / rng.choice(["é € x.json", "-dash.json",
                                                         "sp ace.json", "a..b.json"]))),
    ]
    for k in range(n):
        label, make = makers[k % len(makers)]
        yield label, make()


def _out_argv(command: str, world, store: Path, target: str) -> list[str]:
    root, _, inst_path, sol_path, _ = world
    return {
        "solve": ["solve", str(inst_path), "-m", "ring", "--out", target],
        "table": ["table", str(store), "--by", "family", "--out", target],
        "export": ["export", str(sol_path), "--format", "edgelist", "--out", target],
        "generate": ["generate", "uniform", "--n", "8", "--degree", "2", "--gbps", "100",
                     "--out", target],
    }[command]


def _out_outcome(r, label: str, target: str) -> str:
    """The outcome of one write case ("written", "refused", "saved-elsewhere") or an
    assertion error naming the false result or the traceback."""
    import re

    assert isinstance(r.exception, SystemExit | None), (label, target, r.exception)
    assert "Traceback" not in r.output, (label, r.output)
    if r.exit_code == 0:
        assert label == "valid-unusual", (label, target, "exit 0 for a target that cannot be "
                                          "written")
        assert Path(target).read_text().strip(), (label, "exit 0 but nothing written")
        Path(target).unlink()
        return "written"
    assert r.exit_code == 2, (label, r.exit_code, r.output)
    line = r.stderr.strip().splitlines()[-1]
    assert line.startswith("Error: "), (label, r.stderr)
    if label != "through-a-file":  # click's own usage error names the option there
        assert len(r.stderr.strip().splitlines()) == 1, (label, r.stderr)
    m = re.search(r"the output was saved to (\S+) instead", line)
    if m:
        spare = Path(m.group(1))
        assert spare.read_bytes().strip(), (label, "the spare file is empty")
        spare.unlink()
        if label == "refusing-place":
            assert not Path(target).exists(), (label, "a partial file was left")
        return "saved-elsewhere"
    return "refused"


def test_hostile_out_targets(world, runner, tmp_path):
    from test_tables import RECORDS

    from topoopt_milp.bench.store import RunStore

    root = world[0]
    store = tmp_path / "runs.sqlite"
    with RunStore(store) as st:
        for rec in RECORDS:
            st.put(rec)
    rng = random.Random(SEED + 20)
    outcomes: Counter = Counter()
    per_class: Counter = Counter()
    for k, (label, target) in enumerate(gen_out_paths(root, rng, 72)):
        if label == "full-disk" and not Path("/dev/full").exists() or \
                label == "refusing-place" and not Path("/sys/kernel").is_dir():
            continue
        command = OUT_COMMANDS[(k // 9) % len(OUT_COMMANDS)]
        r = runner.invoke(main, _out_argv(command, world, store, target))
        outcomes[(label, _out_outcome(r, label, target))] += 1
        per_class[label] += 1
    print("out-paths:", dict(per_class), dict(outcomes))
    assert sum(per_class.values()) >= 56 and len(per_class) >= 7
    # what can be known before the work is refused before it; a full disk keeps the work
    assert outcomes[("full-disk", "saved-elsewhere")] == per_class["full-disk"]
    for label in ("name-too-long", "folder-too-long", "empty-name", "missing-folder",
                  "trailing-slash"):
        assert outcomes[(label, "refused")] == per_class[label], label
    assert outcomes[("valid-unusual", "written")] == per_class["valid-unusual"]


# value -> must it be refused? (a GPU count, batch, size or rate that cannot be, and the
# valid neighbours of each, which must give a valid instance)
WORKLOAD_VALUES = {
    "--gpus-per-server": {"0": True, "-4": True, "-1": True, "1": False, "8": False},
    "--batch": {"0": True, "-2": True, "1": False, "7": False},
    "--n": {"0": True, "1": True, "-3": True, "100000": True, "12": False},
    "--degree": {"0": True, "-1": True, "99": True, "3": False},
    "--gbps": {"0": True, "-1": True, "nan": True, "inf": True, "1e-3": False},
    "--dtype-bytes": {"0": True, "-8": True, "2": False},
    "--efficiency": {"0": True, "-1": True, "nan": True, "5": True, "0.3": False},
    "--strategy": {"pp=0": True, "pp=3": True, "tp=0": True, "tp=3": True, "junk": True,
                   "pp=2": False, "dp,pp=2,tp=2": False},
}


def gen_workload_options(rng, n):
    """``(option, value)`` pairs: each hostile or valid value of the workload options."""
    pairs = [(opt, v) for opt, values in WORKLOAD_VALUES.items() for v in values]
    rng.shuffle(pairs)
    yield from pairs[:n]


def test_hostile_workload_options(world, runner):
    root = world[0]
    rng = random.Random(SEED + 21)
    outcomes: Counter = Counter()
    refused_values = []
    total = sum(len(v) for v in WORKLOAD_VALUES.values())
    for k, (opt, value) in enumerate(gen_workload_options(rng, total)):
        out = root / f"wl-{k}.json"
        r = runner.invoke(main, ["workload", "resnet50", "--n", "8", opt, value, "--out",
                                 str(out)])
        assert isinstance(r.exception, SystemExit | None), (opt, value, r.exception)
        assert "Traceback" not in r.output, (opt, value, r.output)
        must_refuse = WORKLOAD_VALUES[opt][value]
        assert (r.exit_code != 0) == must_refuse, (opt, value, "false result", r.output)
        if r.exit_code == 0:  # no false result: a valid instance with sane traffic
            inst = Instance.load(out)
            assert inst.compute_s >= 0 and inst.total_bytes() > 0, (opt, value)
            outcomes[(opt, "valid")] += 1
        else:
            assert r.exit_code == 2, (opt, value, r.output)
            lines = r.stderr.strip().splitlines()
            assert len(lines) == 1 and lines[0].startswith("Error: "), (opt, value, r.stderr)
            field = opt.lstrip("-").replace("-", "_").replace("degree", "degree")
            assert field.split("_")[0] in lines[0] or opt == "--gbps" and "link_gbps" in \
                lines[0], (opt, value, lines[0])
            outcomes[(opt, "refused")] += 1
            refused_values.append((opt, value))
    print("workload-options:", dict(outcomes))
    assert sum(outcomes.values()) == total >= 35
    assert outcomes[("--gpus-per-server", "refused")] >= 2 or \
        ("--gpus-per-server", "0") not in refused_values
    # cooptimize refuses the same values before its search
    for opt, value in refused_values[::4]:
        r = runner.invoke(main, ["cooptimize", "resnet50", "--n", "8", opt, value, "--budget",
                                 "1", "--no-progress"])
        assert r.exit_code == 2 and "Traceback" not in r.output, (opt, value, r.output)

# == issue 20, helper h-defects: SNDlib files, shared capacities, zero traffic, the multiplicity
# cap, disconnected optima. Each class: a seeded generator, the real command line (or the
# registry), outcome counts per class, 0 tracebacks and 0 false results. =======================
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
    print("sndlib outcomes:", dict(outcomes))
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
    print("shared-capacity outcomes:", dict(outcomes))
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
    print("alloc outcomes:", dict(outcomes))
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
