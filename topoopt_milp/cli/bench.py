"""`bench`, `table`, `plot` and `compare`: sweeps into a run store, and what is read out of it."""

from __future__ import annotations

import logging
import math

import click

from .. import registry
from ..bench.store import load_runs
from ..core.instance import Instance
from ..core.outfile import check_folder, check_writable, write_text
from ..core.params import ParamError, SolverParams
from ..core.stop import exit_code, what
from . import main
from .options import cores, deprecated_alias, jobs_option, knob_options, settings_from

log = logging.getLogger(__name__)


def _methods(text: str) -> list[str]:
    names = [m.strip() for m in text.split(",") if m.strip()]
    if not names:
        raise click.BadParameter("give at least one method name", param_hint="--methods")
    for m in names:
        registry.get(m)  # unknown names: one-line user error before any work
    return names


@main.command()
@click.argument("instances", nargs=-1, required=True, type=click.Path(exists=True))
@click.option("--methods", "-m", "methods_text", required=True,
              help="Comma-separated method names (see `topoopt-milp methods`).")
@knob_options([SolverParams], only=("time_limit",), prefix="Per run (every method): ",
              defaults={"time_limit": 60.0})
@click.option("--num-seeds", type=click.IntRange(min=1), default=None,
              help="Run K seeds, 0..K-1, for every (instance, method) [default: 1].")
@click.option("--seeds", "old_seeds", type=click.IntRange(min=1), default=None, hidden=True)
@jobs_option
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
def bench(instances, methods_text, time_limit, num_seeds, old_seeds, jobs, store_path, engine,
          address, threads, set_pairs, hard_limit, retry_errors, no_progress) -> None:
    """Run every (instance, method, seed) in its own process and record it in STORE.

    INSTANCES are instance files or folders (searched recursively for topoopt-instance/1
    JSON). Re-running the same command resumes: finished runs are skipped. A run that crashes
    or exceeds the hard limit, and a file that is not a valid instance, are recorded as error
    rows and the sweep goes on. Runs that another `bench` on the same STORE is running are
    skipped (each run is claimed in the store before it starts)."""
    from ..bench.runner import build_tasks, run_sweep

    seeds = deprecated_alias("--seeds", "--num-seeds", old_seeds, num_seeds, default=1)
    if seeds < 1:
        raise click.BadParameter("must be >= 1", param_hint="--num-seeds")
    if hard_limit is not None and not (math.isfinite(hard_limit) and hard_limit > 0):
        raise ParamError(f"--hard-limit: must be a positive number of seconds, got {hard_limit}")
    settings = {"threads": threads, **settings_from(set_pairs)}
    tasks = build_tasks(instances, _methods(methods_text), seeds, time_limit, settings, hard_limit)
    try:
        summary = run_sweep(tasks, store_path, jobs=jobs or cores(), engine=engine,
                            address=address, retry_errors=retry_errors,
                            progress=not no_progress)
    except KeyboardInterrupt as exc:  # the running runs are killed, not recorded
        click.echo(f"{what(exc)}: the finished runs are kept in {store_path}; the same "
                   "command resumes the sweep", err=True)
        raise SystemExit(exit_code(exc)) from None
    held = f"{summary.held} held by another bench, " if summary.held else ""
    click.echo(f"{summary.total} runs: {summary.skipped} already finished, {held}{summary.ran} ran "
               f"({summary.errors} errors) in {summary.wall_s:.1f} s; store {store_path}")


def _runs(stores, families=(), methods=None):
    # Read-only: a StoreError (not a run store, corrupt, ...) is one line and exit code 2.
    runs = load_runs(stores)
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
@click.option("--by", type=click.Choice(["instance", "family", "headline"]), default="instance",
              show_default=True,
              help="One row per (instance, method), per (family, method), or the headline "
                   "table: TopoOpt's topology, routing and certified gaps per coopt / mixed "
                   "instance.")
@click.option("--format", "fmt", type=click.Choice(["md", "latex", "csv", "json"]), default="md",
              show_default=True)
@click.option("--wide", type=click.Choice(["gap_pct", "ratio", "objective", "runtime_s"]),
              default=None,
              help="--by instance: one row per instance, one column per method with this value.")
@click.option("--label", default=None,
              help="LaTeX \\label (per-family tables append -<family>) [default: tab:families, "
                   "tab:instances, tab:gaps, ...].")
@click.option("--out", "-o", type=click.Path(dir_okay=False), default=None,
              help="Write the table here instead of stdout.")
@_bound_opts
def table_cmd(stores, by, fmt, wide, label, out, families, methods_filter, bound_methods,
              no_analytic) -> None:
    """Gap table from one or more run STORES: per instance or per family.

    LaTeX tables need \\usepackage{booktabs,graphicx,rotating}; they fit the page (rotated
    and split when large), per-instance ones one table per family."""
    from ..bench.views import table

    if out is not None:
        check_writable(out)
    text = table(_runs(stores, families, methods_filter), by, fmt, wide=wide, label=label,
                 **_bound_kw(bound_methods, no_analytic))
    _write_text(text, out)


def _write_text(text: str, out: str | None) -> None:
    if out is not None:
        write_text(out, text)
        click.echo(f"wrote {out}")
    else:
        click.echo(text, nl=False)


@main.command("plot")
@click.argument("stores", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("--kind", type=click.Choice(["gap", "runtime", "profile", "iteration"]), required=True)
@click.option("--out", "-o", required=True, type=click.Path(dir_okay=False),
              help="FIG.png (a FIG.pdf is written beside it), FIG.pdf or FIG.svg.")
@click.option("--measure", type=click.Choice(["objective", "runtime"]), default="objective",
              show_default=True, help="Performance-profile measure.")
@_bound_opts
def plot_cmd(stores, kind, out, measure, families, methods_filter, bound_methods, no_analytic) -> None:
    """Figure from one or more run STORES, drawn against the instance parameter that varies
    in them (the link rate, n, d, the MP share; a second one gives panels)."""
    from ..bench.plots import outputs, plot

    for path in outputs(out):
        check_writable(path)
    kw = _bound_kw(bound_methods, no_analytic) if kind == "gap" else {}
    for path in plot(_runs(stores, families, methods_filter), kind, out, measure=measure, **kw):
        click.echo(f"wrote {path}")


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

    check_folder(outdir)
    paths = write_report(_runs(stores, families, methods_filter), outdir,
                         figure_formats=figure_formats, **_bound_kw(bound_methods, no_analytic))
    for p in paths:
        click.echo(f"wrote {p}")


@main.command()
@click.argument("instance_path", metavar="INSTANCE", type=click.Path(dir_okay=False))
@click.option("--methods", "-m", "methods_text", required=True, help="Comma-separated method names.")
@knob_options([SolverParams], only=("time_limit",), prefix="Per method: ",
              defaults={"time_limit": 60.0})
@click.option("--seed", default=0, show_default=True, help="Random seed of every method.")
@click.option("--threads", type=int, default=1, show_default=True, help="Solver threads.")
@click.option("--set", "set_pairs", multiple=True, metavar="KEY=VALUE", help="Further solve option.")
@click.option("--format", "fmt", type=click.Choice(["md", "latex", "csv", "json"]), default="md",
              show_default=True)
@click.option("--out", "-o", type=click.Path(dir_okay=False), default=None,
              help="Write the table here instead of stdout.")
@click.option("--bound-methods", default=None,
              help="Only these exact methods (comma-separated) give bounds.")
@click.option("--no-analytic", is_flag=True,
              help="Do not use the analytic lower bound (ideal switch / Moore) as a bound.")
@click.option("--no-progress", is_flag=True, help="No progress bar on stderr.")
def compare(instance_path, methods_text, time_limit, seed, threads, set_pairs, fmt, out,
            bound_methods, no_analytic, no_progress) -> None:
    """Solve INSTANCE with several methods (in this process) and compare each method's
    objective with the best bound whose scope contains its solution (exact methods' bounds
    and the analytic lower bound)."""
    from ..bench.compare import compare_methods
    from ..bench.progress import progress_bar
    from ..bench.tables import render

    if out is not None:
        check_writable(out)
    instance = Instance.load(instance_path)
    settings = {"threads": threads, **settings_from(set_pairs)}
    methods = _methods(methods_text)
    with progress_bar(len(methods), f"compare {instance.name}",
                      lambda item: f"{item[0]}: {item[1].get('status')}",
                      enabled=not no_progress) as advance:
        df = compare_methods(instance, methods, seed, time_limit, settings,
                             progress=lambda name, rec: advance((name, rec)),
                             **_bound_kw(bound_methods, no_analytic))
    _write_text(render(df, fmt, label="tab:compare"), out)
