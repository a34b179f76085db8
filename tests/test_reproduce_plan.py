"""The experiment plans of `reproduce` (bench/reproduce.py): every sweep names instances that
exist, methods and knobs the registry knows, and runs of its own. A sweep whose runs all share
their keys with an earlier sweep would be skipped by the store's resume without a word."""

from pathlib import Path

import pytest

from topoopt_milp.bench.reproduce import FULL, QUICK, Certify, instance_paths
from topoopt_milp.bench.runner import build_tasks

LIBRARY = Path(__file__).resolve().parents[1] / "instances"


@pytest.mark.parametrize("plan", [QUICK, FULL], ids=["quick", "full"])
def test_every_sweep_resolves_and_adds_runs_of_its_own(plan):
    seen: set[str] = set()
    for k, sweep in enumerate(plan):
        paths = instance_paths(LIBRARY, sweep)  # raises when a pattern matches nothing
        assert paths, sweep
        if isinstance(sweep, Certify):
            continue
        tasks = build_tasks(paths, sweep.methods, sweep.seeds, sweep.time_limit,
                            dict(sweep.settings))
        keys = {t.run_key for t in tasks}
        assert tasks and not any(t.input_error for t in tasks), sweep
        assert keys - seen, f"sweep {k} ({sweep.family}, {sweep.methods}) adds no run"
        seen |= keys
