"""`simulate`: play one iteration of a solution out in time (flow-level, max-min fair) and
compare it with the fluid objective (:mod:`topoopt_milp.core.simulate`)."""

from __future__ import annotations

import json

import click

from ..core.check import check_solution
from ..core.instance import Instance
from ..core.result import SolutionError, read_solution
from . import main
from .core import _result, _same_instance


@main.command("simulate")
@click.argument("instance_path", metavar="INSTANCE", type=click.Path(dir_okay=False))
@click.argument("solution_path", metavar="SOL.json", type=click.Path(dir_okay=False))
@click.option("--latency", type=float, default=None,
              help="Seconds per hop, paid once per message before it sends [default: the "
                   "instance's latency_us].")
@click.option("--overhead", type=float, default=0.0, show_default=True,
              help="Seconds per message (each path's part of a ring step or MP demand).")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text",
              show_default=True, help="text: a summary; json: one object (simulated_s, "
                                      "fluid_s, ratio, critical, ...).")
@click.option("--engine", type=click.Choice(["toolkit", "simgrid"]), default="toolkit",
              show_default=True, help="toolkit: the vectorised event loop; simgrid: the same "
                                      "scenario in SimGrid (needs python3-simgrid).")
@click.option("--trace", "trace_path", type=click.Path(dir_okay=False), default=None,
              help="Write one CSV row per flow: issue, start and end times.")
def simulate_cmd(instance_path, solution_path, latency, overhead, fmt, engine,
                 trace_path) -> None:
    """Simulate one iteration of SOL.json's topology and routing on INSTANCE.

    AllReduce rings run 2(k-1) synchronised reduce-scatter / all-gather steps of S/k bytes
    (with SOL's ring orders and shares), MP demands run as flows on SOL's paths with their
    fractions, and every arc is shared max-min fairly, recomputed at every flow arrival and
    departure. Prints the simulated communication time, the fluid T_comm of the same
    solution, their ratio, the ring (or MP traffic) that ends last and the busiest arc. The
    solution must pass the independent checker first (exit code 2 otherwise)."""
    # imported here: the compiled engine loads numba (~0.1 s), which no other command needs
    from ..core.simulate import simulate, write_trace

    instance = Instance.load(instance_path)
    data = read_solution(solution_path)
    solved_on = _same_instance(data, instance, solution_path, instance_path)
    problems = check_solution(solved_on.to_dict(), data)
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise SolutionError(f"{solution_path} fails the independent check: {problems[0]}{more}")
    res = _result(data, solution_path)
    if res.topology is None or res.routing is None:
        raise SolutionError(f"{solution_path}: holds no topology and routing (status "
                            f"{res.status.value})")
    out = simulate(solved_on, res.topology, res.routing, latency=latency, overhead=overhead,
                   trace=trace_path is not None, engine=engine)
    if trace_path is not None:
        rows = write_trace(trace_path, out)
    if fmt == "json":
        click.echo(json.dumps({"instance": instance.name, "method": res.method,
                               **out.to_dict()}, indent=1))
    else:
        arc = "-" if out.busiest_arc is None else "{}->{}".format(*out.busiest_arc)
        farc = "-" if out.fluid_arc is None else "{}->{}".format(*out.fluid_arc)
        share = out.busiest_busy_s / out.simulated_s if out.simulated_s > 0 else 0.0
        click.echo(f"{instance.name}, {res.method}: simulated {out.simulated_s:.6g} s, fluid "
                   f"T_comm {out.fluid_s:.6g} s, ratio {out.ratio:.4f}")
        busy = "" if out.busiest_arc is None else (
            f"; busiest arc {arc} (busy {100 * share:.1f}% of the iteration)")
        click.echo(f"  critical: {out.critical} ends last{busy}; fluid bottleneck arc {farc}")
        counts = "" if out.events is None else (
            f", {out.events} events, {out.solves} max-min solves")
        click.echo(f"  latency {out.latency_s:g} s/hop, overhead {out.overhead_s:g} s/message; "
                   f"{out.flows} flows{counts} in {out.runtime_s:.3g} s ({engine} engine)")
    if trace_path is not None:
        click.echo(f"wrote {trace_path} ({rows} flows)", err=fmt == "json")
