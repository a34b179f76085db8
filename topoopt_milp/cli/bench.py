"""`bench`, `table`, `plot` and `compare`: sweeps into a run store, and what is read out of it."""

from __future__ import annotations

import json
import logging
import math

import click

from .. import registry
from ..bench.store import StoreError, load_runs
from ..instance import Instance
from ..params import ParamError
from . import main

log = logging.getLogger(__name__)


def _methods(text: str) -> list[str]:
    names = [m.strip() for m in text.split(",") if m.strip()]
    if not names:
        raise click.BadParameter("give at least one method name", param_hint="--methods")
    for m in names:
        registry.get(m)  # unknown names: one-line user error before any work
    return names


def settings_from(pairs: tuple[str, ...]) -> dict:
    """``--set KEY=VALUE`` pairs as knobs (values parsed as JSON when they are JSON)."""
    out = {}
    for p in pairs:
        if "=" not in p:
            raise click.BadParameter(f"expected KEY=VALUE, got {p!r}", param_hint="--set")
        key, value = p.split("=", 1)
        try:
            out[key.strip()] = json.loads(value)  # numbers, true/false, null
        except json.JSONDecodeError:
            out[key.strip()] = value  # plain strings: --set variant=ksp
    return out


@main.command()
@click.argument("instances", nargs=-1, required=True, type=click.Path(exists=True))
@click.option("--methods", "-m", "methods_text", required=True,
              help="Comma-separated method names (see `topoopt-milp methods`).")
@click.option("--time-limit", type=float, default=60.0, show_default=True,
              help="Solver time limit per run [s] (passed to every method).")
@click.option("--seeds", type=int, default=1, show_default=True,
              help="Run seeds 0..K-1 for every (instance, method).")
@click.option("--jobs", "-j", type=int, default=1, show_default=True,
              help="Runs in parallel (local engine).")
@click.option("--store", "store_path", required=True, type=click.Path(dir_okay=False),
              help="SQLite run store (created if missing; finished runs are skipped).")
@click.option("--engine", type=click.Choice(["local", "dask"]), default="local", show_default=True)
@click.option("--address", default=None,
              help="Dask scheduler tcp://HOST:PORT (default: $DASK_SCHEDULER_ADDRESS).")
@click.option("--threads", type=int, default=1, show_default=True, help="Solver threads per run.")
@click.option("--set", "set_pairs", multiple=True, metavar="KEY=VALUE",
              help="Further solve option for every run (e.g. --set variant=ksp --set solver=cbc).")
@click.option("--hard-limit", type=float, default=None,
              help="Kill a run after this many wall-clock seconds "
                   "[default: time-limit * 1.5 + 30].")
@click.option("--retry-errors", is_flag=True, help="Re-run runs whose stored status is error.")
@click.option("--no-progress", is_flag=True, help="No progress bar on stderr.")
def bench(instances, methods_text, time_limit, seeds, jobs, store_path, engine, address, threads,
          set_pairs, hard_limit, retry_errors, no_progress) -> None:
    """Run every (instance, method, seed) in its own process and record it in STORE.

    INSTANCES are instance files or folders (searched recursively for topoopt-instance/1
    JSON). Re-running the same command resumes: finished runs are skipped. A run that crashes
    or exceeds the hard limit is recorded as an error row and the sweep goes on."""
    from ..bench.runner import build_tasks, run_sweep

    if seeds < 1:
        raise click.BadParameter("must be >= 1", param_hint="--seeds")
    if hard_limit is not None and not (math.isfinite(hard_limit) and hard_limit > 0):
        raise ParamError(f"--hard-limit: must be a positive number of seconds, got {hard_limit}")
    settings = {"threads": threads, **settings_from(set_pairs)}
    tasks = build_tasks(instances, _methods(methods_text), seeds, time_limit, settings, hard_limit)
    summary = run_sweep(tasks, store_path, jobs=jobs, engine=engine, address=address,
                        retry_errors=retry_errors, progress=not no_progress)
    click.echo(f"{summary.total} runs: {summary.skipped} already finished, {summary.ran} ran "
               f"({summary.errors} errors) in {summary.wall_s:.1f} s; store {store_path}")


def _runs(stores, families=(), methods=None):
    try:
        runs = load_runs(stores)
    except StoreError as exc:
        raise click.ClickException(str(exc)) from None
    if families:
        runs = runs[runs["family"].isin(list(families))]
    if methods:
        # Filtering methods after the best bound would change nothing: bounds come from the
        # kept rows only, so `--methods` also restricts which exact methods give bounds.
        runs = runs[runs["method"].isin([m.strip() for m in methods.split(",")])]
    return runs.reset_index(drop=True)


_BOUND_OPTS = [
    click.option("--family", "families", multiple=True, help="Only runs of this family (repeatable)."),
    click.option("--methods", "methods_filter", default=None,
                 help="Only runs of these methods (comma-separated)."),
    click.option("--bound-methods", default=None,
                 help="Only these exact methods (comma-separated) give the best bound."),
    click.option("--no-analytic", is_flag=True,
                 help="Do not use the analytic lower bound (ideal switch / Moore) as a bound."),
]


def _bound_opts(f):
    for opt in reversed(_BOUND_OPTS):
        f = opt(f)
    return f


def _bound_kw(bound_methods, no_analytic) -> dict:
    return {
        "bound_methods": None if bound_methods is None else _methods(bound_methods),
        "analytic": not no_analytic,
    }


@main.command("table")
@click.argument("stores", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("--by", type=click.Choice(["instance", "family"]), default="instance", show_default=True)
@click.option("--format", "fmt", type=click.Choice(["md", "latex", "csv"]), default="md",
              show_default=True)
@click.option("--wide", type=click.Choice(["gap_pct", "objective", "runtime_s"]), default=None,
              help="--by instance: one row per instance, one column per method with this value.")
@click.option("--out", "-o", type=click.Path(dir_okay=False), default=None,
              help="Write the table here instead of stdout.")
@_bound_opts
def table_cmd(stores, by, fmt, wide, out, families, methods_filter, bound_methods, no_analytic) -> None:
    """Gap table from one or more run STORES: per instance or per family."""
    from ..bench.tables import table

    text = table(_runs(stores, families, methods_filter), by, fmt, wide=wide,
                 **_bound_kw(bound_methods, no_analytic))
    if out:
        with open(out, "w") as fh:
            fh.write(text)
        click.echo(f"wrote {out}")
    else:
        click.echo(text, nl=False)


@main.command("plot")
@click.argument("stores", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("--kind", type=click.Choice(["gap", "runtime", "profile", "iteration"]), required=True)
@click.option("--out", "-o", required=True, type=click.Path(dir_okay=False),
              help="FIG.png, FIG.pdf or FIG.svg.")
@click.option("--measure", type=click.Choice(["objective", "runtime"]), default="objective",
              show_default=True, help="Performance-profile measure.")
@_bound_opts
def plot_cmd(stores, kind, out, measure, families, methods_filter, bound_methods, no_analytic) -> None:
    """Figure from one or more run STORES."""
    from ..bench.plots import plot

    kw = _bound_kw(bound_methods, no_analytic) if kind == "gap" else {}
    plot(_runs(stores, families, methods_filter), kind, out, measure=measure, **kw)
    click.echo(f"wrote {out}")


@main.command()
@click.argument("stores", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("--out", "-o", "outdir", required=True, type=click.Path(file_okay=False),
              help="Folder for the tables and figures (created if missing).")
@click.option("--figure-format", "figure_formats", multiple=True, default=("png", "pdf"),
              type=click.Choice(["png", "pdf", "svg"]), show_default=True)
@_bound_opts
def report(stores, outdir, figure_formats, families, methods_filter, bound_methods, no_analytic) -> None:
    """Write every table (instances, wide gaps, families; md, tex, csv) and every figure of
    the run STORES into one folder."""
    from ..bench.report import write_report

    paths = write_report(_runs(stores, families, methods_filter), outdir,
                         figure_formats=figure_formats, **_bound_kw(bound_methods, no_analytic))
    for p in paths:
        click.echo(f"wrote {p}")


@main.command()
@click.argument("instance_path", metavar="INSTANCE", type=click.Path(dir_okay=False))
@click.option("--methods", "-m", "methods_text", required=True, help="Comma-separated method names.")
@click.option("--time-limit", type=float, default=60.0, show_default=True)
@click.option("--seed", default=0, show_default=True)
@click.option("--threads", type=int, default=1, show_default=True)
@click.option("--set", "set_pairs", multiple=True, metavar="KEY=VALUE", help="Further solve option.")
@click.option("--format", "fmt", type=click.Choice(["md", "csv", "json"]), default="md", show_default=True)
@click.option("--bound-methods", default=None,
              help="Only these exact methods (comma-separated) give bounds.")
@click.option("--no-analytic", is_flag=True,
              help="Do not use the analytic lower bound (ideal switch / Moore) as a bound.")
def compare(instance_path, methods_text, time_limit, seed, threads, set_pairs, fmt, bound_methods,
            no_analytic) -> None:
    """Solve INSTANCE with several methods (in this process) and compare each method's
    objective with the best bound whose scope contains its solution (exact methods' bounds
    and the analytic lower bound)."""
    from ..bench.compare import compare_methods
    from ..bench.tables import render

    instance = Instance.load(instance_path)
    settings = {"threads": threads, **settings_from(set_pairs)}
    df = compare_methods(instance, _methods(methods_text), seed, time_limit, settings,
                         **_bound_kw(bound_methods, no_analytic))
    if fmt == "json":
        click.echo(df.to_json(orient="records", indent=1))
    else:
        click.echo(render(df, fmt), nl=False)
