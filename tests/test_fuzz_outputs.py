"""Fuzz test of hostile output targets and workload options (issue 20): the classes of the
project's fuzz corpus (tests/test_fuzz_input.py) for --out and the workload commands."""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path

from test_fuzz_input import SEED

from topoopt_milp.cli import main
from topoopt_milp.core.instance import Instance

# Two more classes, run through the real command line like the corpus of test_fuzz_input.py.
# For every case: a clean outcome (exit 2 with one "Error:" line, or exit 0), never a traceback, and never a
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
