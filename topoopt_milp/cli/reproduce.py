"""`reproduce`: the main job -- run the experiment plan on the bundled instance library,
write every table and figure under results/, and print the family summary and the headline."""

from __future__ import annotations

from pathlib import Path

import click

from . import main
from .options import cores, jobs_option


def _default_library() -> Path:
    # The library ships with the repository (instances/ beside the package).
    return Path(__file__).resolve().parents[2] / "instances"


@main.command()
@click.option("--quick", is_flag=True,
              help="Small instances and short time limits (a few minutes on 2 cores).")
@click.option("--instances", "library", type=click.Path(file_okay=False, path_type=Path),
              default=None, help="Instance library folder [default: the bundled instances/].")
@click.option("--out", "-o", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Output folder [default: results/ (full) or results/quick/ (--quick)].")
@jobs_option
@click.option("--no-progress", is_flag=True, help="No progress bar on stderr.")
@click.option("--bound-methods", default=None,
              help="Only these exact methods (comma-separated) give bounds in the tables.")
@click.option("--no-analytic", is_flag=True,
              help="Do not use the analytic lower bound (ideal switch / Moore) as a bound.")
@click.option("--simulation-only", is_flag=True,
              help="Only the simulation table (simulation.csv, .md, .png, .pdf) from the "
                   "existing OUT/runs.sqlite: no sweep runs, no other file is written; rows "
                   "already in simulation.csv are kept, the missing ones simulated.")
@click.option("--cached-only", is_flag=True,
              help="With --simulation-only: simulate nothing, write the table of the "
                   "instances that have all their rows in simulation.csv (after an "
                   "interrupted run).")
def reproduce(quick, library, out, jobs, no_progress, bound_methods, no_analytic,
              simulation_only, cached_only) -> None:
    """Regenerate the results: every (instance, method, seed) of the plan in
    topoopt_milp/bench/reproduce.py, stored in OUT/runs.sqlite (re-running resumes), then
    gap tables (md, LaTeX, csv), the family summary, the headline table (TopologyFinder and
    TotientPerms on the coopt and mixed families: topology gap, routing gap, certified gap),
    figures and reference values (the full plan also writes them to
    INSTANCES/<family>/reference.csv), and the simulation table (simulation.md: simulated
    against fluid time of TopoOpt's solutions and the best one). --simulation-only reads
    the store as it is (read-only) and writes the simulation table alone."""
    import pandas as pd

    from ..bench.headline import headline_table, summary_lines
    from ..bench.reproduce import run_plan, write_outputs
    from ..bench.simulation import plan_of_simulation, write_simulation
    from ..bench.simulation import summary_lines as simulation_lines
    from ..bench.store import load_runs
    from ..bench.tables import family_table, render
    from .bench import _bound_kw

    library = library or _default_library()
    if not library.is_dir():
        raise FileNotFoundError(f"--instances: {library} is not a folder")
    out = out or (library.parent / "results" / ("quick" if quick else ""))
    if cached_only and not simulation_only:
        raise click.UsageError("--cached-only: only with --simulation-only")
    if simulation_only:
        store = out / "runs.sqlite"
        if not store.is_file():
            raise FileNotFoundError(f"--simulation-only: no run store {store}")
        written = []
    else:
        store = run_plan(library, out, quick, jobs=jobs or cores(), progress=not no_progress)
        # Only the full plan covers every library instance, so only it refreshes reference.csv.
        bound_kw = _bound_kw(bound_methods, no_analytic)
        written = write_outputs(store, out, library=None if quick else library, **bound_kw)
    runs = load_runs(store)
    written += write_simulation(runs, out, library, **plan_of_simulation(quick),
                                cached_only=cached_only)
    if not simulation_only:
        click.echo(render(family_table(runs, **bound_kw), "md"))
        click.echo("\nHow far is TopoOpt from optimal (headline.md):")
        for line in summary_lines(headline_table(runs, **bound_kw)):
            click.echo(f"* {line}")
    click.echo("\nDoes the fluid objective predict the iteration (simulation.md):")
    for line in simulation_lines(pd.read_csv(out / "simulation.csv")):
        click.echo(f"* {line}")
    click.echo(f"wrote {len(written)} files under {out} (runs: {store})")
