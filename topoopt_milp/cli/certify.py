"""`certify`: the best solution and the best bound of one instance within a time budget
(the portfolio of :mod:`topoopt_milp.bench.portfolio`)."""

from __future__ import annotations

import contextlib
import json
import sys
from pathlib import Path

import click

from ..core.errors import InputError
from . import main
from .core import fixed_instance, load_instance, topology_format_option
from .options import cores, jobs_option


@main.command()
@click.argument("instance_path", metavar="INSTANCE", type=click.Path(dir_okay=False))
@click.option("--time-limit", "-t", type=click.FloatRange(min=0, min_open=True), required=True,
              help="Wall-clock budget in seconds; the command returns within "
                   "max(1.2 T, T + 5 s).")
@click.option("--out", "-o", type=click.Path(dir_okay=False), default=None,
              help="Write the best solution here (its run's solution file, as the "
                   "independent checker accepted it).")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text",
              show_default=True, help="text: the report; json: one JSON object.")
@jobs_option
@click.option("--exact-max-n", type=click.IntRange(min=0), default=None,
              help="Run the exact and restricted models only up to this n [default: 24].")
@click.option("--seed", default=0, show_default=True, help="Seed of every run.")
@click.option("--topology", "topology_path", type=click.Path(dir_okay=False), default=None,
              help="Fix this topology (the route problem), as in `solve --topology`: a "
                   "solution file (with or without a routing; its rings too), an edge list "
                   "or GraphML file.")
@topology_format_option
@click.option("--store", "store_path", type=click.Path(dir_okay=False), default=None,
              help="Also record every run of the portfolio in this SQLite run store (created "
                   "if missing), as `bench` and `reproduce` do, so that `table`, `report` "
                   "and `reproduce` see them.")
def certify(instance_path, time_limit, out, fmt, jobs, exact_max_n, seed, topology_path,
            topology_fmt, store_path) -> None:
    """Best solution and best bound of INSTANCE within --time-limit seconds.

    Runs every registered method that applies, chosen by its spec: the cheap heuristics and
    their LP-routed variants, the bound methods (once per ring scope), the upper-bound
    searches and, at small n, the exact models (started from the best incumbent so far),
    each in its own process with the remaining budget. Every solution is re-verified by the
    independent checker. Prints the best solution and who found it, the best bound for
    every ring order (the instance's own problem) and for the TotientPerms ring orders, each
    with its source, and the certified gap in each scope; stops early once the gap of every
    ring order is closed (status optimal)."""
    from ..bench.portfolio import EXACT_MAX_N, process_start
    from ..bench.portfolio import certify as run_portfolio
    from ..bench.runner import instance_family
    from ..bench.store import RunStore

    instance = load_instance(instance_path)
    if topology_fmt is not None and topology_path is None:
        raise InputError("--topology-format: only with --topology FILE")
    if topology_path is not None:
        instance = fixed_instance(instance, topology_path, None, instance_path, topology_fmt)
    with contextlib.ExitStack() as stack:
        # opened first: a file that is not a run store is refused before the budget is spent
        store = None if store_path is None else stack.enter_context(RunStore(store_path))
        cert = run_portfolio(instance, time_limit, jobs=jobs or cores(),
                             exact_max_n=EXACT_MAX_N if exact_max_n is None else exact_max_n,
                             seed=seed, instance_path=instance_path,
                             family=instance_family(instance, Path(instance_path)),
                             on_record=None if store is None else store.put,
                             # a process started for this command: its start-up counts too
                             started=process_start() if "certify" in sys.argv[1:] else None,
                             out=out)
    if out is not None and cert.best is None:
        raise InputError(f"--out: {out}: no solution found within {time_limit:g} s")
    if fmt == "json":
        click.echo(json.dumps(cert.to_json()))
    else:
        for line in cert.lines():
            click.echo(line)
        if out is not None:
            click.echo(f"wrote {out}")
    if cert.status == "error":
        raise SystemExit(1)
