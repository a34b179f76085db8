"""`methods`, `solve`, `evaluate` and `export`: one instance, one method, one solution file."""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path

import click

from .. import registry
from ..check import check_solution
from ..evaluate import evaluate
from ..instance import Instance, InstanceError
from ..params import ParamError, SolverParams
from ..pipeline import solve_checked
from ..result import (
    SolutionError,
    Status,
    read_solution,
    result_from_solution,
    write_solution,
)
from . import main
from .options import deprecated_alias, given, knob_options

log = logging.getLogger(__name__)

METRIC_ROWS = (
    ("comm_time_s", "communication time [s]"),
    ("iteration_time_s", "iteration time [s]"),
    ("max_link_utilization", "max link load/capacity [s]"),
    ("diameter", "diameter [hops]"),
    ("avg_hops", "traffic-weighted avg hops"),
    ("ideal_switch_time_s", "ideal switch time [s]"),
    ("lower_bound_s", "lower bound [s]"),
    ("slowdown_vs_ideal", "slowdown vs ideal switch"),
)


@main.command()
def methods() -> None:
    """List every method: the problem it solves, its kind (heuristic, exact, restricted),
    backend, and the scope of its bound."""
    click.echo(f"{'method':<18} {'problem':<8} {'kind':<11} {'backend':<10} description")
    for m in registry.METHODS.values():
        click.echo(f"{m.name:<18} {m.problem:<8} {m.kind:<11} {m.backend:<10} {m.description}")
        if m.scope:
            click.echo(f"{'':<18} {'':<8} {'':<11} {'':<10} bound scope: {m.scope}")


def load_instance(path: str, fmt: str = "json", capacity: str = "file") -> Instance:
    if fmt == "sndlib":
        from ..sndlib import read_sndlib

        return read_sndlib(path, capacity=capacity)
    return Instance.load(path)


def _load_result(path: str | None, instance: Instance, what: str):
    if path is None:
        return None
    data = read_solution(path)
    res = result_from_solution(data)
    if res.topology is not None and res.topology.n != instance.n:
        raise SolutionError(f"{what}: topology has n = {res.topology.n}, instance has {instance.n}")
    return res


def fixed_instance(instance: Instance, path: str, rings: str | None) -> Instance:
    """``instance`` with the topology of solution ``path`` fixed, and its rings (orders and
    shares) unless ``rings == "default"``."""
    sol = _load_result(path, instance, "--topology")
    if sol.topology is None:
        raise SolutionError(f"--topology: {path} holds no topology (status {sol.status.value})")
    keep = rings != "default" and sol.routing is not None and sol.routing.rings
    try:
        return instance.with_topology(sol.topology.links, sol.routing.rings if keep else None)
    except InstanceError as exc:
        raise SolutionError(f"--topology: {path}: {exc}") from None


_KNOB_CLASSES = (SolverParams, *dict.fromkeys(m.params for m in registry.METHODS.values()))
_OWNERS = {cls: ", ".join(m.name for m in registry.METHODS.values() if m.params is cls)
           for cls in _KNOB_CLASSES}


@main.command()
@click.argument("instance_path", metavar="INSTANCE", type=click.Path(dir_okay=False))
@click.option("--method", "-m", required=True, help="Method name (see `topoopt-milp methods`).")
@click.option("--seed", default=0, show_default=True, help="Random seed (ties, expanders, solvers).")
@knob_options(_KNOB_CLASSES, owners=_OWNERS)
@click.option("--topology", "topology_path", type=click.Path(dir_okay=False), default=None,
              help="Fix the topology of this earlier solution, and its AllReduce rings (orders "
                   "and shares) unless --rings default (the route problem).")
@click.option("--warm-start", type=click.Path(dir_okay=False), default=None,
              help="Start exact solvers from this solution.")
@click.option("--export", "export_path", type=click.Path(dir_okay=False), default=None,
              help="Write the model to MODEL.mps or MODEL.lp.")
@click.option("--input-format", "fmt", type=click.Choice(["json", "sndlib"]), default=None,
              help="Format of the INSTANCE file [default: json].")
@click.option("--format", "old_fmt", type=click.Choice(["json", "sndlib"]), default=None,
              hidden=True)
@click.option("--capacity", type=click.Choice(["file", "unit"]), default="file",
              show_default=True, help="SNDlib: installed link capacities or unit capacities.")
@click.option("--out", "-o", required=True, type=click.Path(dir_okay=False),
              help="Where to write the solution JSON.")
def solve(instance_path, method, seed, topology_path, warm_start, export_path, fmt, old_fmt,
          capacity, out, **knobs) -> None:
    """Solve INSTANCE with one method; write, re-check and summarise the solution.

    Every knob of the method's parameter class and of the solver is an option (unknown ones
    for this method are refused by name); the solution is re-checked by the independent
    checker, and a violation makes the status `error` (exit code 1)."""
    fmt = deprecated_alias("--format", "--input-format", old_fmt, fmt, default="json")
    instance = load_instance(instance_path, fmt, capacity)
    knobs = given(knobs)
    m = registry.get(method)
    if topology_path is not None:
        instance = fixed_instance(instance, topology_path, knobs.get("rings"))
    options = m.options(knobs, seed=seed, export=export_path,
                        warm_start=_load_result(warm_start, instance, "--warm-start"))
    t0 = time.perf_counter()
    result = None
    try:
        result = solve_checked(instance, method, options)
        log.info("%s finished in %.3f s (own runtime %.3f s)", method, time.perf_counter() - t0,
                 result.runtime_s)
        write_solution(out, result, instance)
    except KeyboardInterrupt:
        # Ctrl-C outside the solver (model building, checking, writing): keep what exists
        if result is None:
            click.echo("interrupted before the solver finished: no solution written", err=True)
        else:
            write_solution(out, result, instance)
            click.echo(f"interrupted: the solution was written to {out}", err=True)
        raise SystemExit(130) from None
    click.echo(result.summary())
    if result.metrics:
        _print_metrics(result.metrics)
    if result.info.get("interrupted"):
        click.echo(f"interrupted: the incumbent was written to {out}", err=True)
        raise SystemExit(130)
    if result.status is Status.ERROR:
        raise SystemExit(1)


def _print_metrics(metrics: dict) -> None:
    for key, label in METRIC_ROWS:
        value = metrics.get(key)
        text = "-" if value is None else f"{value:.6g}"
        click.echo(f"  {label:<30} {text:>14}")


@main.command("evaluate")
@click.argument("instance_path", metavar="INSTANCE", type=click.Path(dir_okay=False))
@click.argument("solution_path", metavar="SOL.json", type=click.Path(dir_okay=False))
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default=None,
              help="text: summary, metrics and violations; json: {violations, metrics} "
                   "[default: text].")
@click.option("--json", "old_json", is_flag=True, default=None, hidden=True)
@click.option("--routing", type=click.Choice(["approx", "lp"]), default=None,
              help="Also route SOL's topology (with its own rings) near-optimally: approx = "
                   "route-approx, a certified (1+eps)-approximation for any size; lp = "
                   "route-milp's exact LP (practical to n ~ 128 on 2 cores).")
@click.option("--epsilon", type=float, default=None,
              help="--routing approx: target certified gap [default: 0.01].")
@click.option("--time-limit", type=float, default=None, help="--routing: time limit [s].")
@click.option("--out", "-o", type=click.Path(dir_okay=False), default=None,
              help="--routing: write the re-routed solution here.")
def evaluate_cmd(instance_path, solution_path, fmt, old_json, routing, epsilon, time_limit,
                 out) -> None:
    """Re-check SOL.json against INSTANCE independently and print its metrics.

    With --routing, SOL's topology and AllReduce rings are routed again (route-approx or
    route-milp) and the optimal communication time of that topology is printed with its
    certified bound. Exit code 1 when the checker finds violations (each is printed)."""
    fmt = deprecated_alias("--json", "--format json", "json" if old_json else None, fmt,
                           default="text")
    as_json = fmt == "json"
    instance = Instance.load(instance_path)
    data = read_solution(solution_path)
    ihash = instance.content_hash()
    hashes = {data["instance"].get("hash"), data["instance"].get("base_hash")}
    if ihash not in hashes:
        raise SolutionError(
            f"instance: {solution_path} was solved on instance hash {data['instance'].get('hash')}"
            f", not on {instance_path} ({ihash})"
        )
    problems = check_solution(instance.to_dict(), data)
    res = result_from_solution(data)
    metrics = None
    if res.topology is not None and res.routing is not None:
        metrics = evaluate(instance, res.topology, res.routing)
    if as_json:
        click.echo(json.dumps({"violations": problems, "metrics": metrics}, indent=1))
    else:
        click.echo(res.summary())
        if metrics:
            _print_metrics(metrics)
        click.echo("checker: OK" if not problems else f"checker: {len(problems)} violation(s)")
        for p in problems:
            click.echo(f"  - {p}")
    if routing is not None and res.topology is not None:
        _reroute(instance, res, routing, epsilon, time_limit, out, as_json)
    if problems:
        raise SystemExit(1)


def _reroute(instance, res, routing, epsilon, time_limit, out, as_json) -> None:
    method = "route-approx" if routing == "approx" else "route-milp"
    fixed = instance.with_topology(res.topology.links,
                                   res.routing.rings if res.routing is not None else None)
    knobs = {} if time_limit is None else {"time_limit": time_limit}
    if epsilon is not None:
        if method != "route-approx":
            raise ParamError("--epsilon: only with --routing approx")
        knobs["epsilon"] = epsilon
    best = solve_checked(fixed, method, **knobs)
    if out:
        write_solution(out, best, fixed)
    if as_json:
        click.echo(json.dumps({"routing": method, "status": best.status.value,
                               "comm_time_s": best.objective, "bound_s": best.bound,
                               "gap": best.gap}, indent=1))
    else:
        gain = "" if res.objective is None or not best.objective else \
            f" ({res.objective / best.objective:.3f}x faster than SOL's own routing)"
        click.echo(f"{method} on SOL's topology and rings: {best.objective:.6g} s, certified "
                   f"bound {best.bound:.6g} s, gap {100 * max(0.0, best.gap or 0.0):.2f}%{gain}")


@main.command()
@click.argument("solution_path", metavar="SOL.json", type=click.Path(dir_okay=False))
@click.option("--format", "fmt", type=click.Choice(["graphml", "routing", "edgelist"]),
              default="graphml", show_default=True,
              help="graphml: multigraph, one edge per link, with metadata; routing: CSV of "
              "paths and fractions; edgelist: 'i j count' lines.")
@click.option("--instance", "instance_path", type=click.Path(dir_okay=False), default=None,
              help="The solution's instance: adds degree, link rate and per-link busy time.")
@click.option("--out", "-o", type=click.Path(dir_okay=False), default=None,
              help="Output file (default: SOL.graphml / SOL.routing.csv / SOL.edgelist).")
def export(solution_path, fmt, instance_path, out) -> None:
    """Write the topology or routing of SOL.json for other tools (see topoopt_milp.interop)."""
    from .. import interop

    data = read_solution(solution_path)
    suffix = {"graphml": ".graphml", "routing": ".routing.csv", "edgelist": ".edgelist"}[fmt]
    target = Path(out or Path(solution_path).with_suffix(suffix))
    if fmt == "routing":
        rows = interop.write_routing_csv(target, data)
        click.echo(f"wrote {target} ({rows} paths)")
        return
    if fmt == "edgelist":
        links = interop.write_edgelist(target, data)
        click.echo(f"wrote {target} ({links} links)")
        return
    instance = None if instance_path is None else Instance.load(instance_path)
    g = interop.write_graphml(target, data, instance)
    click.echo(f"wrote {target} ({g.number_of_nodes()} nodes, {g.number_of_edges()} links)")
