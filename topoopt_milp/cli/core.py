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
from ..instance import Instance
from ..result import (
    SolutionError,
    SolveOptions,
    Status,
    read_solution,
    result_from_solution,
    solution_dict,
    write_solution,
)
from . import main

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
    """List every method with its family and backend."""
    click.echo(f"{'method':<16} {'family':<10} {'backend':<10} description")
    for m in registry.METHODS.values():
        click.echo(f"{m.name:<16} {m.family:<10} {m.backend:<10} {m.description}")


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


@main.command()
@click.argument("instance_path", metavar="INSTANCE", type=click.Path(dir_okay=False))
@click.option("--method", "-m", required=True, help="Method name (see `topoopt-milp methods`).")
@click.option("--seed", default=0, show_default=True, help="Random seed (ties, expanders, solvers).")
@click.option("--time-limit", type=float, default=None, help="Solver time limit in seconds.")
@click.option("--objective", type=click.Choice(["comm_time", "diameter", "total_hops"]),
              default="comm_time", show_default=True, help="select family objective.")
@click.option("--candidates", type=click.Choice(["coprime", "all"]), default="coprime",
              show_default=True, help="select family: TotientPerms jumps or all 1..n/2.")
@click.option("--routing", type=click.Choice(["shortest", "ecmp", "coin-change", "lp"]),
              default=None, help="Routing on the chosen topology (default: the method's own).")
@click.option("--split", type=click.Choice(["proportional", "all_ar"]), default="proportional",
              show_default=True, help="TopologyFinder degree split between AllReduce and MP.")
@click.option("--variant", type=click.Choice(["fractional", "ksp", "unsplittable"]),
              default="fractional", show_default=True, help="route family variant.")
@click.option("--solver", type=click.Choice(["highs", "cbc"]), default="highs",
              show_default=True, help="MILP solver behind PuLP.")
@click.option("--lp-algorithm", type=click.Choice(["simplex", "ipm", "pdlp"]), default="ipm",
              show_default=True, help="HiGHS LP algorithm (route LPs).")
@click.option("--threads", type=int, default=1, show_default=True, help="Solver threads.")
@click.option("--mip-gap", type=float, default=1e-6, show_default=True,
              help="Relative MIP gap at which exact solvers stop.")
@click.option("--k-paths", type=int, default=4, show_default=True,
              help="Candidate paths per commodity (ksp / unsplittable variants).")
@click.option("--topology", "topology_path", type=click.Path(dir_okay=False), default=None,
              help="Fix the topology of this earlier solution (route family).")
@click.option("--warm-start", type=click.Path(dir_okay=False), default=None,
              help="Start exact solvers from this solution.")
@click.option("--export", "export_path", type=click.Path(dir_okay=False), default=None,
              help="Write the model to MODEL.mps or MODEL.lp.")
@click.option("--faithful", is_flag=True, help="Keep the published artifact's quirks.")
@click.option("--format", "fmt", type=click.Choice(["json", "sndlib"]), default="json",
              show_default=True, help="Instance file format.")
@click.option("--capacity", type=click.Choice(["file", "unit"]), default="file",
              show_default=True, help="SNDlib: installed link capacities or unit capacities.")
@click.option("--out", "-o", required=True, type=click.Path(dir_okay=False),
              help="Where to write the solution JSON.")
def solve(instance_path, method, seed, time_limit, objective, candidates, routing, split,
          variant, solver, lp_algorithm, threads, mip_gap, k_paths, topology_path, warm_start,
          export_path, faithful, fmt, capacity, out) -> None:
    """Solve INSTANCE with one method; write, re-check and summarise the solution."""
    instance = load_instance(instance_path, fmt, capacity)
    m = registry.get(method)
    fixed = _load_result(topology_path, instance, "--topology")
    options = SolveOptions(
        seed=seed, time_limit=time_limit, objective=objective, candidates=candidates,
        routing=routing, split=split, variant=variant, solver=solver, lp_algorithm=lp_algorithm,
        threads=threads, mip_gap=mip_gap, k_paths=k_paths,
        topology=None if fixed is None else fixed.topology,
        warm_start=_load_result(warm_start, instance, "--warm-start"),
        export=export_path, faithful=faithful,
    )
    t0 = time.perf_counter()
    result = m.solve(instance, options)
    log.info("%s finished in %.3f s (own runtime %.3f s)", method, time.perf_counter() - t0,
             result.runtime_s)
    metrics = None
    if result.topology is not None and result.routing is not None:
        metrics = evaluate(instance, result.topology, result.routing)
        if "sndlib" in instance.meta:  # shared undirected capacities: SNDlib's congestion
            from ..sndlib import congestion

            metrics["max_link_utilization"] = congestion(instance, result.routing)
        problems = check_solution(instance.to_dict(), solution_dict(result, instance, metrics))
        if problems:
            # A solution the independent checker rejects is an error, whatever the solver said.
            result = result.with_(status=Status.ERROR,
                                  message="checker: " + "; ".join(problems[:5]))
    write_solution(out, result, instance, metrics)
    click.echo(result.summary())
    if metrics:
        _print_metrics(metrics)
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
@click.option("--json", "as_json", is_flag=True, help="Print the metrics as JSON.")
def evaluate_cmd(instance_path, solution_path, as_json) -> None:
    """Re-check SOL.json against INSTANCE independently and print its metrics.

    Exit code 1 when the checker finds violations (each is printed)."""
    instance = Instance.load(instance_path)
    data = read_solution(solution_path)
    if data["instance"].get("hash") != instance.content_hash():
        raise SolutionError(
            f"instance: {solution_path} was solved on instance hash {data['instance'].get('hash')}"
            f", not on {instance_path} ({instance.content_hash()})"
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
    if problems:
        raise SystemExit(1)


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
