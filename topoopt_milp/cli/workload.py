"""`workload`, `cooptimize` and `cooptimize-table`: DNN models -> instances -> co-optimized
strategies. The modelling lives in :mod:`topoopt_milp.workloads` and
:mod:`topoopt_milp.cooptimize`; this module only parses options and writes files."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import click

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
@click.option("--out", "out", required=True, type=click.Path(dir_okay=False),
              help="Instance JSON to write.")
def workload(model_name, n, degree, gbps, gpus_per_server, batch, dtype_bytes, gpu, efficiency,
             strategy, out):
    """Write the traffic of MODEL under a parallelization strategy as an instance file.

    Models: dlrm, candle, bert, bert-large, ncf, resnet50, vgg16, gpt3-<size>
    (125m 350m 760m 1.3b 2.7b 6.7b 13b 175b). Default strategy: data parallel over all servers,
    embedding tables round-robin."""
    from ..evaluate import ideal_switch_time
    from ..workloads.strategy import parse_strategy

    w = _workload(model_name, n, gpus_per_server, batch, dtype_bytes, gpu, efficiency)
    s = parse_strategy(strategy, w.model, n, gpus_per_server)
    inst = w.instance(s, degree, gbps, meta={"strategy_spec": strategy})
    inst.save(out)
    click.echo(
        f"{inst.name}: {w.model.params:,} parameters, {len(inst.allreduce)} AllReduce groups, "
        f"{len(inst.mp)} MP demands, {inst.total_bytes():.4g} bytes, compute {inst.compute_s:.4g} s, "
        f"ideal-switch comm {ideal_switch_time(inst):.4g} s -> {out}"
    )


def _json_default(o):
    return float(o)


def _dump(path: Path, data) -> None:
    path.write_text(json.dumps(data, indent=1, default=_json_default) + "\n")
