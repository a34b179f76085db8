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
from helpers import fuzz_summary

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
def make_world(root: Path):
    """The corpus' files in ``root``: ``(root, instance, its path, the base solution's path,
    cases)``; the ``world`` fixture of tests/conftest.py (shared by every fuzz test file)."""
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
    per_class: dict[str, Counter] = {}
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
        row = per_class.setdefault(f"{c.kind}/{c.cls}", Counter())
        row["files"] += 1
        row[f"exit {code}"] += 1
        # reached only without a traceback (clean_outcome) and without a false result (a
        # file the library refuses accepted by the command line: the asserts above)
        row["tracebacks"] += 0
        row["false"] += 0
    elapsed = time.perf_counter() - t0
    fuzz_summary(f"fuzz corpus of tests/test_fuzz_input.py: {len(cases)} files, "
                 f"{elapsed:.1f} s", per_class,
                 ("files", "exit 0", "exit 1", "exit 2", "tracebacks", "false"))
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
