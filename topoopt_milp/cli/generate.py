"""`generate`: write a synthetic instance with a named traffic pattern."""

from __future__ import annotations

import click

from ..core.instance import InstanceError
from ..core.outfile import check_writable
from ..workloads import generators
from . import main

_PATTERN_HELP = """Write a synthetic instance with traffic PATTERN as topoopt-instance/1 JSON.

\b
Traffic patterns (volumes in bytes per training iteration):
  uniform      all-to-all: every ordered pair sends --bytes (default 1e7)
  permutation  random derangement i -> pi(i), --bytes each (default 1e8), seeded
  shift        i -> (i + --shift) mod n, --bytes each (default 1e8)
  sparse       --pairs random MP pairs (default n) with log-uniform volumes in
               --mp-bytes LOW HIGH, plus --groups random AllReduce groups
               (--group-size members; default a random size) with volumes in
               --ar-bytes LOW HIGH, seeded
  dlrm         AllReduce of --dense-bytes over all servers plus the embedding
               all-to-all of --tables tables on random servers, --emb-bytes per
               table and pair, seeded
  mixed        AllReduce on coset sub-groups {r, r + n/g, ...} (--groups cosets
               of n/groups members, or --group-size g; default two cosets of
               n/2), each of a volume in --ar-bytes LOW HIGH (default 1.2e9
               1.2e9), plus MP traffic scaled to exactly --mp-share of all
               bytes (default 0.3): --mp-pattern dense (every pair, default)
               or sparse (--pairs random pairs), seeded

Options that do not apply to PATTERN are rejected. Same arguments, same seed:
byte-identical file.

\b
Example:
  topoopt-milp generate dlrm --n 16 --degree 4 --gbps 100 --seed 1 --out dlrm16.json
"""


@main.command(help=_PATTERN_HELP)
@click.argument("family", metavar="PATTERN", type=click.Choice(list(generators.FAMILIES)))
@click.option("--n", "n", type=int, required=True, help="Number of servers.")
@click.option("--degree", "-d", type=int, required=True, help="Optical ports per server.")
@click.option("--gbps", type=float, default=generators.DEFAULT_GBPS, show_default=True,
              help="Link rate per direction [Gbps].")
@click.option("--seed", type=int, default=None,
              help="Random seed (default 0 for random families; recorded in meta).")
@click.option("--regular/--no-regular", default=True, show_default=True,
              help="Require every port to be used (needs n * degree even).")
@click.option("--compute-s", type=float, default=None,
              help="Compute time per iteration [s] (default 0; dlrm 0.05).")
@click.option("--latency-us", type=float, default=None,
              help="Per-hop latency [us] added as max_hops * latency (default 0).")
@click.option("--name", default=None, help="Instance name (default: PATTERN-nN-dD-sSEED).")
@click.option("--bytes", "bytes_", type=float, default=None,
              help="uniform/permutation/shift: bytes per demand.")
@click.option("--shift", type=int, default=None, help="shift: offset s (default 1).")
@click.option("--pairs", type=int, default=None,
              help="sparse, mixed --mp-pattern sparse: number of MP pairs (default n).")
@click.option("--groups", type=int, default=None,
              help="sparse, mixed: number of AllReduce groups (default 2).")
@click.option("--group-size", type=int, default=None,
              help="sparse, mixed: members per AllReduce group.")
@click.option("--mp-bytes", type=(float, float), default=None, metavar="LOW HIGH",
              help="sparse: MP volume range (default 1e5 1e9).")
@click.option("--ar-bytes", type=(float, float), default=None, metavar="LOW HIGH",
              help="sparse, mixed: AllReduce volume range (default 1e7 1e10; mixed 1.2e9 1.2e9).")
@click.option("--mp-share", type=float, default=None,
              help="mixed: MP bytes / all bytes, in [0, 1) (default 0.3).")
@click.option("--mp-pattern", type=click.Choice(["dense", "sparse"]), default=None,
              help="mixed: MP pairs, every ordered pair or --pairs random ones (default dense).")
@click.option("--dense-bytes", type=float, default=None,
              help="dlrm: dense-gradient AllReduce bytes (default 1.2e9).")
@click.option("--emb-bytes", type=float, default=None,
              help="dlrm: embedding bytes per table and server pair (default 3.1e7).")
@click.option("--tables", type=int, default=None, help="dlrm: embedding tables (default n).")
@click.option("--out", "-o", required=True, type=click.Path(dir_okay=False),
              help="Where to write the instance JSON.")
def generate(family, n, degree, gbps, seed, regular, compute_s, latency_us, name, bytes_, shift, pairs,
             groups, group_size, mp_bytes, ar_bytes, mp_share, mp_pattern, dense_bytes, emb_bytes,
             tables, out) -> None:
    given = {
        "seed": seed, "compute_s": compute_s, "latency_us": latency_us, "bytes": bytes_,
        "shift": shift, "pairs": pairs, "groups": groups, "group_size": group_size,
        "mp_bytes": mp_bytes, "ar_bytes": ar_bytes, "mp_share": mp_share, "mp_pattern": mp_pattern,
        "dense_bytes": dense_bytes, "emb_bytes": emb_bytes, "tables": tables,
    }
    options = {k: v for k, v in given.items() if v is not None}
    allowed = generators.family_options(family)
    for key in options:
        if key not in allowed:
            flag = "--" + key.replace("_", "-")
            raise InstanceError(f"{flag}: not an option of traffic pattern {family!r}")
    check_writable(out)
    instance = generators.generate(family, n, degree, gbps, regular=regular, **options)
    if name is not None:
        instance = instance.from_dict({**instance.to_dict(), "name": name})
    instance.save(out)
    click.echo(
        f"wrote {out}: {instance.name}, n = {instance.n}, d = {instance.degree}, "
        f"{len(instance.mp)} MP demands, {len(instance.allreduce)} AllReduce groups, "
        f"{instance.total_bytes():.4g} bytes"
    )
