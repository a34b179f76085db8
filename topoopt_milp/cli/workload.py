"""`workload`, `cooptimize` and `cooptimize-table`: DNN models -> instances -> co-optimized
strategies. The modelling lives in :mod:`topoopt_milp.workloads` and
:mod:`topoopt_milp.workloads.cooptimize`; this module only parses options and writes files."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import click

from ..core.outfile import check_folder, check_writable, write_text
from . import main

log = logging.getLogger(__name__)


def _workload_options(f):
    """Options shared by `workload` and `cooptimize` (cluster, model and compute model)."""
    opts = [
        click.argument("model_name", metavar="MODEL"),
        click.option("--n", "n", type=int, default=16, show_default=True, help="Servers."),
        click.option("--degree", "-d", type=int, default=4, show_default=True,
                     help="Optical ports per server."),
        click.option("--gbps", type=float, default=100.0, show_default=True,
                     help="Link rate per direction, Gbps."),
        click.option("--gpus-per-server", type=int, default=4, show_default=True),
        click.option("--batch", "batch", type=int, default=None,
                     help="Per-GPU batch (default: the model's TopoOpt configuration)."),
        click.option("--dtype-bytes", type=int, default=4, show_default=True,
                     help="Bytes per gradient/activation element (4 = fp32, as in the artifact)."),
        click.option("--gpu", type=click.Choice(["a100", "h100"]), default="a100", show_default=True,
                     help="GPU preset (A100 312, H100 989 TFLOP/s dense bf16)."),
        click.option("--efficiency", type=float, default=None,
                     help="Achieved fraction of peak FLOP/s (default 0.5)."),
    ]
    for opt in reversed(opts):
        f = opt(f)
    return f


def _workload(model_name, n, gpus_per_server, batch, dtype_bytes, gpu, efficiency):
    from ..workloads.compute import get_gpu
    from ..workloads.traffic import Workload
    from ..workloads.zoo import get_model

    model = get_model(model_name, batch)
    return Workload(model, n, gpus_per_server, dtype_bytes, get_gpu(gpu, efficiency))


@main.command()
@_workload_options
@click.option("--strategy", default="dp", show_default=True,
              help="dp | pp=P[,tp=T] | STRATEGY.json (per-layer degree and placement).")
@click.option("--out", "-o", "out", required=True, type=click.Path(dir_okay=False),
              help="Instance JSON to write.")
@click.option("--name", default=None,
              help="Instance name (default: the --out file name without .json, so that the "
                   "variants of one model in a library keep distinct names).")
def workload(model_name, n, degree, gbps, gpus_per_server, batch, dtype_bytes, gpu, efficiency,
             strategy, out, name):
    """Write the traffic of MODEL under a parallelization strategy as an instance file.

    Models: dlrm, candle, bert, bert-large, ncf, resnet50, vgg16, gpt3-<size>
    (125m 350m 760m 1.3b 2.7b 6.7b 13b 175b). Default strategy: data parallel over all servers,
    embedding tables round-robin."""
    from ..core.evaluate import ideal_switch_time
    from ..workloads.strategy import parse_strategy

    check_writable(out)
    w = _workload(model_name, n, gpus_per_server, batch, dtype_bytes, gpu, efficiency)
    s = parse_strategy(strategy, w.model, n, gpus_per_server)
    inst = w.instance(s, degree, gbps, name=name or Path(out).stem,
                      meta={"strategy_spec": strategy})
    inst.save(out)
    click.echo(
        f"{inst.name}: {w.model.params:,} parameters, {len(inst.allreduce)} AllReduce groups, "
        f"{len(inst.mp)} MP demands, {inst.total_bytes():.4g} bytes, compute {inst.compute_s:.4g} s, "
        f"ideal-switch comm {ideal_switch_time(inst):.4g} s -> {out}"
    )


def _json_default(o):
    return float(o)


def _dump(path: Path, data) -> None:
    write_text(path, json.dumps(data, indent=1, default=_json_default) + "\n")


def _cost_options(f):
    from ..workloads.fabrics import CostModel

    c = CostModel()
    opts = [
        click.option("--cost-nic", type=float, default=c.nic_port, show_default=True,
                     help="USD per 100G NIC port (cost-equivalent Fat-tree)."),
        click.option("--cost-transceiver", type=float, default=c.transceiver, show_default=True,
                     help="USD per 100G transceiver."),
        click.option("--cost-switch-port", type=float, default=c.switch_port, show_default=True,
                     help="USD per 100G electrical switch port."),
        click.option("--cost-patch-port", type=float, default=c.patch_panel_port, show_default=True,
                     help="USD per patch-panel port."),
        click.option("--fat-tree-tiers", type=int, default=c.tiers, show_default=True),
        click.option("--fat-tree-gbps", type=float, default=None,
                     help="Per-server bandwidth of the full-bisection Fat-tree (default d*B)."),
    ]
    for opt in reversed(opts):
        f = opt(f)
    return f


def _search_options(f):
    from ..workloads.cooptimize import CoOptConfig
    from .options import knob_options

    opts = [
        knob_options([CoOptConfig]),
        click.option("--set", "set_pairs", multiple=True, metavar="KEY=VALUE",
                     help="A knob of the topology method (e.g. --set rings=given)."),
        click.option("--time-limit", type=float, default=None,
                     help="Time limit per topology solve (exact methods)."),
        click.option("--strategy", default="dp", show_default=True,
                     help="Starting strategy: dp | pp=P[,tp=T] | STRATEGY.json."),
    ]
    for opt in reversed(opts):
        f = opt(f)
    return f


@main.command()
@_workload_options
@_search_options
@_cost_options
@click.option("--out", "-o", "out", type=click.Path(file_okay=False), default=None,
              help="Directory for summary.json, trajectory.csv, strategy.json, instance.json, "
                   "solution.json.")
@click.option("--instance-out", type=click.Path(dir_okay=False), default=None,
              help="Write the final strategy's traffic as a library instance file (meta records "
                   "the search and this command).")
@click.option("--name", default=None,
              help="Instance name for --instance-out and --out (default: the --instance-out file "
                   "name without .json, else MODEL-nN-dD).")
@click.option("--no-progress", is_flag=True, help="No progress bar on stderr.")
def cooptimize(model_name, n, degree, gbps, gpus_per_server, batch, dtype_bytes, gpu, efficiency,
               time_limit, set_pairs, strategy, cost_nic, cost_transceiver, cost_switch_port,
               cost_patch_port, fat_tree_tiers, fat_tree_gbps, out, instance_out, name,
               no_progress, **search):
    """Co-optimize MODEL's parallelization strategy and the topology (Metropolis MCMC).

    Progress goes to stderr; the final strategy's iteration time is compared with the ideal
    switch, full-bisection and cost-equivalent Fat-trees and a random expander."""
    from ..bench.progress import progress_bar
    from ..workloads.cooptimize import CoOptConfig, final_instance, summary, write_outputs
    from ..workloads.cooptimize import cooptimize as run
    from ..workloads.fabrics import CostModel
    from ..workloads.strategy import parse_strategy
    from .bench import settings_from
    from .options import given

    if out:
        check_folder(out)  # before the search: its result must have somewhere to go
    if instance_out:
        check_folder(Path(instance_out).parent, "--instance-out")
        check_writable(instance_out, "--instance-out")
    w = _workload(model_name, n, gpus_per_server, batch, dtype_bytes, gpu, efficiency)
    start = parse_strategy(strategy, w.model, n, gpus_per_server)
    knobs = settings_from(set_pairs)
    if time_limit is not None:
        knobs["time_limit"] = time_limit
    cfg = CoOptConfig(**given(search), method_knobs=knobs)
    method, budget = cfg.method, cfg.budget
    cost = CostModel(cost_nic, cost_transceiver, cost_switch_port, cost_patch_port, fat_tree_tiers)
    with progress_bar(budget, f"cooptimize {w.model.name}",
                      lambda r: f"best {r['best_true_s']:.4g} s", enabled=not no_progress) as advance:
        res = run(w, degree, gbps, start, cfg, lambda step, row: advance(row))
    summ = summary(res, cost, fat_tree_gbps)
    if name is None and instance_out:
        name = Path(instance_out).stem
    ctx = click.get_current_context()
    # record the search as run: every knob of the configuration, given or default
    ctx.params.update({k: getattr(cfg, k) for k in search})
    provenance = {"start_strategy_spec": strategy,
                  "command": _command_line(ctx, _NOT_IN_COMMAND)}
    if out:
        write_outputs(res, out, summ, name, provenance)
    if instance_out:
        Path(instance_out).parent.mkdir(parents=True, exist_ok=True)
        final_instance(res, name, provenance).save(instance_out)
    click.echo(f"{w.model.name} n={n} d={degree} B={gbps:g} Gbps, {method}, {budget} steps "
               f"({res.rebuilds} rebuilds, {res.runtime_s:.1f} s)")
    click.echo(f"  initial iteration time  {res.initial.iteration_s:.6g} s  ({start.summary(w.model)})")
    click.echo(f"  final iteration time    {res.final.iteration_s:.6g} s  "
               f"({res.final.strategy.summary(w.model)})")
    for fabric, t in summ["baselines_s"].items():
        click.echo(f"  {fabric:<26} {t:.6g} s")
    if out:
        click.echo(f"  -> {out}/")
    if instance_out:
        click.echo(f"  -> {instance_out}")


# Options that do not change the co-optimized traffic (outputs, prices of the baselines) are
# left out of the command recorded in the instance, so the file does not depend on its path.
_NOT_IN_COMMAND = frozenset({"out", "instance_out", "cost_nic", "cost_transceiver",
                             "cost_switch_port", "cost_patch_port", "fat_tree_tiers",
                             "fat_tree_gbps", "no_progress"})


def _command_line(ctx: click.Context, skip=frozenset()) -> str:
    """The invoked command spelled out canonically: every argument and every option that has a
    value (defaults included, so the record survives a change of defaults), in declaration
    order, except those named in ``skip``."""
    parts = ["topoopt-milp", ctx.info_name]  # the console script, however it was invoked
    for p in ctx.command.params:
        value = ctx.params.get(p.name)
        if p.name in skip or value is None or value == ():
            continue
        if isinstance(value, tuple):  # a repeatable option: one flag per value
            for v in value:
                parts += [max(p.opts, key=len), str(v)]
            continue
        if isinstance(p, click.Argument):
            parts.append(str(value))
        elif getattr(p, "is_flag", False) and p.secondary_opts:
            parts.append(p.opts[0] if value else p.secondary_opts[0])
        elif getattr(p, "is_flag", False):
            if value:
                parts.append(p.opts[0])
        else:
            flag = max(p.opts, key=len)
            text = f"{value:g}" if isinstance(value, float) and value.is_integer() else str(value)
            parts += [flag, text]
    return " ".join(parts)


@main.command("cooptimize-table")
@click.option("--out", "-o", "out", type=click.Path(file_okay=False), default="results/workloads",
              show_default=True, help="Directory for table.md and table.csv.")
@click.option("--budget", type=int, default=2000, show_default=True, help="MCMC steps per row.")
@click.option("--k", "k", type=int, default=50, show_default=True, help="Steps between rebuilds.")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--exact-method", default="alloc-milp", show_default=True)
@click.option("--exact-time-limit", type=float, default=60.0, show_default=True)
@click.option("--exact-max-n", type=int, default=16, show_default=True,
              help="Largest n for which the exact method is attempted.")
@click.option("--alt-rounds", type=click.IntRange(min=0), default=5, show_default=True,
              help="Rebuilds of the coopt_alt column's search (alloc-alternate as the topology "
                   "method); 0 leaves the column out.")
@click.option("--alt-time-limit", type=click.FloatRange(min=0, min_open=True), default=20.0,
              show_default=True, help="Seconds per alloc-alternate rebuild.")
@click.option("--alt-polish-time-limit", type=click.FloatRange(min=0), default=120.0,
              show_default=True,
              help="CPU seconds of alloc-alternate on the co-optimized strategy (the alt_on_tf "
                   "column); 0 leaves the column out.")
@click.option("--only", multiple=True, help="Restrict to these models (repeatable).")
def cooptimize_table(out, budget, k, seed, exact_method, exact_time_limit, exact_max_n,
                     alt_rounds, alt_time_limit, alt_polish_time_limit, only):
    """Regenerate the workloads results table (DLRM, CANDLE at n=128; BERT, VGG at n=16;
    d in {4, 8}; B = 100 Gbps)."""
    from ..bench.cooptable import DEFAULT_CONFIGS, TableConfig, build_table, write_table

    tc = TableConfig(budget=budget, k=k, seed=seed, exact_method=exact_method,
                     exact_time_limit=exact_time_limit, exact_max_n=exact_max_n,
                     alt_rounds=alt_rounds, alt_time_limit=alt_time_limit,
                     alt_polish_time_limit=alt_polish_time_limit)
    configs = [c for c in DEFAULT_CONFIGS if not only or c[0] in only]

    def progress(row):
        click.echo(f"{row['model']:<7} n={row['n']:<4} d={row['d']}: default {row['default_tf']:.4g} s "
                   f"-> co-optimized {row['coopt_tf']:.4g} s ({row['runtime_s']:.0f} s)", err=True)

    df = build_table(configs, tc, progress)
    # the table says how it was made: this command as run, every option spelled out
    write_table(df, out, tc, command=_command_line(click.get_current_context()))
    click.echo(f"wrote {out}/table.md and {out}/table.csv")
