"""`methods`, `solve`, `evaluate` and `export`: one instance, one method, one solution file."""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path

import click

from .. import registry
from ..core import topology_io
from ..core.check import check_solution
from ..core.deadline import Deadline
from ..core.evaluate import evaluate
from ..core.instance import Instance, InstanceError
from ..core.outfile import check_writable
from ..core.params import ParamError, SolverParams
from ..core.result import SolutionError, Status, read_solution, result_from_solution, write_solution
from ..core.spec import NotApplicableError
from ..core.stop import exit_code, terminated, what
from ..pipeline import solve_checked
from . import command_started, main
from .options import deprecated_alias, given, knob_options, settings_from

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
        scope = m.scope_text()  # the spec's scope rule: the same one its results carry
        if scope:
            click.echo(f"{'':<18} {'':<8} {'':<11} {'':<10} bound scope: {scope}")


def load_instance(path: str, fmt: str = "json", capacity: str = "file") -> Instance:
    if fmt == "sndlib":
        from ..core.sndlib import read_sndlib

        return read_sndlib(path, capacity=capacity)
    return Instance.load(path)


def _result(data: dict, path: str, what: str = ""):
    """:func:`result_from_solution` with the file (and the option) named in its errors."""
    try:
        return result_from_solution(data)
    except SolutionError as exc:
        raise SolutionError(f"{what}{': ' if what else ''}{path}: {exc}") from None


def _same_instance(data: dict, instance: Instance, path: str, instance_path: str,
                   what: str = "") -> Instance:
    """The instance the solution ``data`` was solved on (:func:`topology_io.solved_on`)."""
    return topology_io.solved_on(data, instance, path, instance_path, what)


def _load_result(path: str | None, instance: Instance, what: str, instance_path: str):
    """The solution file ``path`` given to option ``what`` (``--warm-start``): read strictly,
    of ``instance``'s size, solved on ``instance`` (its hash) and accepted by the independent
    checker -- before anything is built from it."""
    if path is None:
        return None
    data = read_solution(path)
    _accepted(data, instance, path, what, instance_path)
    return _result(data, path, what)


def _accepted(data: dict, instance: Instance, path: str, what: str, instance_path: str,
              topology_only: bool = False) -> None:
    """A :class:`SolutionError` unless solution ``data`` is of ``instance``'s size, was solved
    on it and passes the independent checker (:func:`topology_io.accept_solution`)."""
    topology_io.accept_solution(data, instance, path, what, instance_path, topology_only)


def fixed_instance(instance: Instance, path: str, rings: str | None,
                   instance_path: str = "INSTANCE", fmt: str | None = None) -> Instance:
    """``instance`` with the topology of file ``path`` fixed (a solution with or without a
    routing, an edge list or GraphML: :func:`topology_io.read_topology`), and the file's
    rings (orders and shares) unless ``rings == "default"``."""
    tf = topology_io.read_topology(path, instance, fmt, what="--topology",
                                   instance_path=instance_path)
    keep = rings != "default" and tf.rings
    try:
        return topology_io.fix_topology(instance, tf.topology.links, tf.rings if keep else None,
                                        f"--topology: {path}")
    except InstanceError as exc:
        raise SolutionError(f"--topology: {path}: {exc}") from None


TOPOLOGY_FORMAT_HELP = ("Format of the topology file: json (a solution, with or without a "
                        "routing), edgelist ('i j [count]' lines), graphml (one edge per link) "
                        "[default: by suffix: .edgelist/.edges, .graphml, else json].")

topology_format_option = click.option(
    "--topology-format", "topology_fmt", type=click.Choice(list(topology_io.FORMATS)),
    default=None, help=TOPOLOGY_FORMAT_HELP)


_KNOB_CLASSES = (SolverParams, *dict.fromkeys(m.params for m in registry.METHODS.values()))
_OWNERS = {cls: ", ".join(m.name for m in registry.METHODS.values() if m.params is cls)
           for cls in _KNOB_CLASSES}


@main.command()
@click.argument("instance_path", metavar="INSTANCE", type=click.Path(dir_okay=False))
@click.option("--method", "-m", required=True,
              help="Method name (see `topoopt-milp methods`), or a plug-in's spec given as "
                   "package.module:NAME (loaded without installing it).")
@click.option("--seed", default=0, show_default=True, help="Random seed (ties, expanders, solvers).")
@knob_options(_KNOB_CLASSES, owners=_OWNERS)
@click.option("--topology", "topology_path", type=click.Path(dir_okay=False), default=None,
              help="Fix this topology (the route problem): a solution file, with or without a "
                   "routing, and its AllReduce rings (orders and shares) unless --rings "
                   "default; or an edge list or GraphML file (see --topology-format).")
@topology_format_option
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
@click.option("--set", "set_pairs", multiple=True, metavar="KEY=VALUE",
              help="A knob given by name (e.g. the knobs of a plug-in method).")
@click.option("--out", "-o", required=True, type=click.Path(dir_okay=False),
              help="Where to write the solution JSON.")
def solve(instance_path, method, seed, topology_path, topology_fmt, warm_start, export_path,
          fmt, old_fmt, capacity, set_pairs, out, **knobs) -> None:
    """Solve INSTANCE with one method; write, re-check and summarise the solution.

    Every knob of the method's parameter class and of the solver is an option (unknown ones
    for this method are refused by name); the solution is re-checked by the independent
    checker, and a violation makes the status `error` (exit code 1)."""
    fmt = deprecated_alias("--format", "--input-format", old_fmt, fmt, default="json")
    check_writable(out)  # before any work: a solve is not run for a file it cannot write
    instance = load_instance(instance_path, fmt, capacity)
    knobs = {**given(knobs), **settings_from(set_pairs)}
    m = registry.get(method)
    if topology_fmt is not None and topology_path is None:
        raise ParamError("--topology-format: only with --topology FILE")
    if topology_path is not None:
        instance = fixed_instance(instance, topology_path, knobs.get("rings"), instance_path,
                                  topology_fmt)
    reason = m.refusal(instance)  # the family rule (core/spec.py), said with the file's name
    if reason is not None:
        given_as = instance_path + (f" with --topology {topology_path}" if topology_path else "")
        raise NotApplicableError(f"{given_as}: {reason}")
    options = m.options(knobs, seed=seed, export=export_path, warm_start=_load_result(
        warm_start, instance, "--warm-start", instance_path))
    if options.solver.time_limit is not None:  # the limit counts from the command's start
        options = options.with_(deadline=Deadline(options.solver.time_limit, command_started()))
    t0 = time.perf_counter()
    result = None
    try:
        result = solve_checked(instance, method, options)
        log.info("%s finished in %.3f s (own runtime %.3f s), checked %.3f s after the command "
                 "started", method, time.perf_counter() - t0, result.runtime_s,
                 time.perf_counter() - command_started())
        write_solution(out, result, instance)
        log.info("solution written %.3f s after the command started",
                 time.perf_counter() - command_started())
    except KeyboardInterrupt as exc:
        # Ctrl-C or SIGTERM outside the solver (model building, checking, writing): keep
        # what exists (a CBC child is killed and its temporary folder removed by the backend)
        if result is None:
            click.echo(f"{what(exc)} before the solver finished: no solution written", err=True)
        else:
            write_solution(out, result, instance)
            click.echo(f"{what(exc)}: the solution was written to {out}", err=True)
        raise SystemExit(exit_code(exc)) from None
    click.echo(result.summary())
    if result.objective is None and result.message:
        click.echo(f"  why: {result.message}")  # no solution: the method's reason
    if result.metrics:
        _print_metrics(result.metrics)
    if result.info.get("interrupted") or terminated():
        click.echo(f"{what()}: the incumbent was written to {out}", err=True)
        raise SystemExit(exit_code())
    if result.status is Status.ERROR:
        raise SystemExit(1)


def _print_metrics(metrics: dict) -> None:
    for key, label in METRIC_ROWS:
        value = metrics.get(key)
        text = "-" if value is None else f"{value:.6g}"
        click.echo(f"  {label:<30} {text:>14}")


@main.command("evaluate")
@click.argument("instance_path", metavar="INSTANCE", type=click.Path(dir_okay=False))
@click.argument("solution_path", metavar="FILE", type=click.Path(dir_okay=False))
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default=None,
              help="text: summary, metrics and violations; json: {violations, metrics} "
                   "[default: text].")
@click.option("--json", "old_json", is_flag=True, default=None, hidden=True)
@topology_format_option
@click.option("--routing", type=click.Choice(["approx", "lp"]), default=None,
              help="Also route FILE's topology (with its own rings, if it has any) "
                   "near-optimally: approx = route-approx, a certified (1+eps)-approximation "
                   "for any size; lp = route-milp's exact LP (practical to n ~ 128 on 2 cores).")
@knob_options([registry.get("route-approx").params], only=("epsilon",),
              prefix="--routing approx: ")
@knob_options([SolverParams], only=("time_limit",), prefix="--routing: ")
@click.option("--out", "-o", type=click.Path(dir_okay=False), default=None,
              help="--routing: write the re-routed solution here.")
@click.option("--warm-start", "warm_path", type=click.Path(dir_okay=False), default=None,
              help="--routing approx: start from this solution's routing (and lengths) on a "
                   "nearby topology of INSTANCE.")
def evaluate_cmd(instance_path, solution_path, fmt, old_json, topology_fmt, routing, epsilon,
                 time_limit, out, warm_path) -> None:
    """Re-check FILE against INSTANCE independently and print its metrics.

    FILE is a solution (SOL.json), or a topology: a solution without a routing, an edge list
    or a GraphML file (--topology-format; by suffix by default), whose links, port budget
    and rings are checked. With --routing, FILE's topology and AllReduce rings are routed
    (route-approx or route-milp) and the optimal communication time of that topology is
    printed with its certified bound. Exit code 1 when the checker finds violations in a
    solution (each is printed; the metrics are shown for solutions the checker accepts only;
    --routing is then not done); exit code 2 when FILE is malformed, was not solved on
    INSTANCE (its content hash), or is a topology the instance cannot use."""
    fmt = deprecated_alias("--json", "--format json", "json" if old_json else None, fmt,
                           default="text")
    as_json = fmt == "json"
    if out is not None:
        check_writable(out)
    if warm_path is not None and routing != "approx":
        raise ParamError("--warm-start: only with --routing approx")
    instance = Instance.load(instance_path)
    warm = _load_result(warm_path, instance, "--warm-start", instance_path)
    kind = topology_io.topology_format(solution_path, topology_fmt)
    data = read_solution(solution_path) if kind == "json" else None
    if data is None or (data.get("topology") is not None and not topology_io.has_routing(data)):
        tf = topology_io.read_topology(solution_path, instance, kind, instance_path=instance_path)
        if as_json:
            click.echo(json.dumps({"violations": [], "metrics": None,
                                   "topology": tf.describe()}, indent=1))
        else:
            click.echo(f"topology {tf.describe()}")
            checked = "links, port budget" + (", rings" if tf.rings else "")
            click.echo(f"checker: OK (topology: {checked}; no routing to check"
                       + (")" if routing else "; --routing approx|lp routes it)"))
        if routing is not None:
            _reroute(instance, tf.topology, tf.rings, None, routing, epsilon, time_limit, out,
                     as_json, warm)
        return
    _same_instance(data, instance, solution_path, instance_path)
    head = _result({**data, "topology": None, "routing": None}, solution_path)
    problems = check_solution(instance.to_dict(), data)
    res = metrics = None
    if not problems and data["topology"] is not None and data["routing"] is not None:
        res = _result(data, solution_path)
        metrics = evaluate(instance, res.topology, res.routing)
    if as_json:
        click.echo(json.dumps({"violations": problems, "metrics": metrics}, indent=1))
    else:
        click.echo(head.summary())
        if metrics:
            _print_metrics(metrics)
        click.echo("checker: OK" if not problems else f"checker: {len(problems)} violation(s)")
        for p in problems:
            click.echo(f"  - {p}")
    if problems:
        if routing is not None:
            click.echo(f"--routing: not done, the checker rejects {solution_path}", err=True)
        raise SystemExit(1)
    if routing is not None:
        if res is None:
            raise SolutionError(f"{solution_path}: --routing: the file holds no topology "
                                f"(status {data.get('status')}): nothing to route")
        _reroute(instance, res.topology, res.routing.rings, res.objective, routing, epsilon,
                 time_limit, out, as_json, warm)


def _reroute(instance, topology, rings, objective, routing, epsilon, time_limit, out,
             as_json, warm=None) -> None:
    """Route ``topology`` with ``rings`` (``None``: the default rings) on ``instance``, from
    the routing of ``warm`` (a nearby topology's solution) if given; ``objective`` is the
    file's own communication time, if it has one."""
    method = "route-approx" if routing == "approx" else "route-milp"
    fixed = topology_io.fix_topology(instance, topology.links, rings or None, "--routing")
    knobs = {} if time_limit is None else {"time_limit": time_limit}
    if epsilon is not None:
        if method != "route-approx":
            raise ParamError("--epsilon: only with --routing approx")
        knobs["epsilon"] = epsilon
    if warm is not None and method == "route-approx" and not rings:
        # the warm fast path (route_approx.warm: the route problem patched, not rebuilt),
        # checked like solve_checked
        from ..methods.route_approx import warm_route
        from ..pipeline import certify_solution

        best = certify_solution(fixed, warm_route(instance, topology.links, warm, **knobs))
    else:
        best = solve_checked(fixed, method, warm_start=warm, **knobs)
    if out:
        write_solution(out, best, fixed)
    if as_json:
        click.echo(json.dumps({"routing": method, "status": best.status.value,
                               "comm_time_s": best.objective, "bound_s": best.bound,
                               "gap": best.gap}, indent=1))
        return
    if best.objective is None:
        click.echo(f"{method} on the topology: {best.status.value} ({best.message})")
        return
    gain = "" if objective is None or not best.objective else \
        f" ({objective / best.objective:.3f}x faster than the file's own routing)"
    bound = "-" if best.bound is None else f"{best.bound:.6g} s"
    click.echo(f"{method} on the topology and rings: {best.status.value}, {best.objective:.6g} "
               f"s, certified bound {bound}, gap {100 * max(0.0, best.gap or 0.0):.2f}%{gain}")


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
    """Write the topology or routing of SOL.json for other tools (see topoopt_milp.core.interop)."""
    from ..core import interop

    data = read_solution(solution_path)
    suffix = {"graphml": ".graphml", "routing": ".routing.csv", "edgelist": ".edgelist"}[fmt]
    target = check_writable(out if out is not None else Path(solution_path).with_suffix(suffix))
    instance = None
    if instance_path is not None and fmt == "graphml":  # busy times come from the routing
        instance = Instance.load(instance_path)
        _accepted(data, instance, solution_path, "--instance", instance_path, topology_only=True)
    try:
        if fmt == "routing":
            text = f"{interop.write_routing_csv(target, data)} paths"
        elif fmt == "edgelist":
            text = f"{interop.write_edgelist(target, data)} links"
        else:
            g = interop.write_graphml(target, data, instance)
            text = f"{g.number_of_nodes()} nodes, {g.number_of_edges()} links"
    except SolutionError as exc:
        raise SolutionError(f"{solution_path}: {exc}") from None
    click.echo(f"wrote {target} ({text})")
