"""Parallelization strategies: a parallel degree and a placement for every layer.

A strategy gives layer ``i`` a degree ``p_i`` (a divisor of ``n``) and an ``offset`` in
``0 .. n/p_i - 1``; the layer then runs on the coset

    members_i = { offset + k * (n / p_i) : k = 0 .. p_i - 1 },

data-parallel over those servers (each holds a replica of its weights and processes ``1/p_i``
of the global batch). Cosets are the placements TotientPerms builds rings for, and the whole
space is reachable: ``p = n`` is plain data parallelism, ``p = 1`` places the layer on one
server (an embedding table, or a model-parallel layer), and consecutive layers on disjoint
cosets form a pipeline.

The global batch is cut into ``n`` shards (one per server, ``g * b`` samples each); shard ``r``
is processed by member ``r // (n / p)`` of a layer's coset, so a shard stays on its server
whenever consecutive layers share a placement and no traffic arises.

``tensor`` is the tensor-parallel width in GPUs *inside* a server (Megatron-style, 1 = none);
it must divide the GPUs per server and only changes the intra-server terms of the compute
model (tensor groups spanning servers are not modelled).

Strategies are immutable; the JSON form is ``"format": "topoopt-strategy/1"``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..core.errors import InputError
from ..core.files import read_input_text
from ..core.outfile import write_text
from .zoo import Model

STRATEGY_FORMAT = "topoopt-strategy/1"


def divisors(n: int) -> list[int]:
    return [p for p in range(1, n + 1) if n % p == 0]


@dataclass(frozen=True)
class Strategy:
    """Per-layer ``degrees`` and ``offsets`` (tuples aligned with ``model.layers``)."""

    n: int
    degrees: tuple[int, ...]
    offsets: tuple[int, ...]
    tensor: int = 1

    def __post_init__(self) -> None:
        if len(self.degrees) != len(self.offsets):
            raise InputError("strategy: degrees and offsets differ in length")
        for i, (p, o) in enumerate(zip(self.degrees, self.offsets)):
            if p < 1 or self.n % p:
                raise InputError(f"strategy: layer {i} degree {p} does not divide n = {self.n}")
            if not 0 <= o < self.n // p:
                raise InputError(f"strategy: layer {i} offset {o} not in 0..{self.n // p - 1}")
        if self.tensor < 1:
            raise InputError(f"strategy: tensor width must be >= 1, got {self.tensor}")

    def members(self, i: int) -> np.ndarray:
        """Servers of layer ``i``: its coset ``offset + k n/p``."""
        p, o = self.degrees[i], self.offsets[i]
        return o + (self.n // p) * np.arange(p)

    def shard_servers(self, i: int) -> np.ndarray:
        """``out[r]`` = server that processes shard ``r`` for layer ``i``."""
        stride = self.n // self.degrees[i]
        return self.offsets[i] + stride * (np.arange(self.n) // stride)

    def replace_layer(self, i: int, degree: int, offset: int) -> Strategy:
        d = list(self.degrees)
        o = list(self.offsets)
        d[i], o[i] = int(degree), int(offset)
        return Strategy(self.n, tuple(d), tuple(o), self.tensor)

    def to_dict(self, model: Model | None = None) -> dict:
        names = [L.name for L in model.layers] if model else [str(i) for i in range(len(self.degrees))]
        return {
            "format": STRATEGY_FORMAT,
            "model": model.name if model else None,
            "n": self.n,
            "tensor": self.tensor,
            "layers": [{"name": nm, "degree": p, "offset": o}
                       for nm, p, o in zip(names, self.degrees, self.offsets)],
        }

    @classmethod
    def from_dict(cls, data: dict, model: Model | None = None) -> Strategy:
        if not isinstance(data, dict) or data.get("format") != STRATEGY_FORMAT:
            got = data.get("format") if isinstance(data, dict) else None
            raise InputError(f"format: expected {STRATEGY_FORMAT!r}, got {got!r}")
        layers = data.get("layers", [])
        if model is not None and len(layers) != len(model.layers):
            raise InputError(f"strategy: {len(layers)} layers, model {model.name} has "
                             f"{len(model.layers)}")
        return cls(int(data["n"]), tuple(int(x["degree"]) for x in layers),
                   tuple(int(x["offset"]) for x in layers), int(data.get("tensor", 1)))

    def save(self, path: str | Path, model: Model | None = None) -> None:
        write_text(path, json.dumps(self.to_dict(model), indent=1) + "\n")

    def summary(self, model: Model) -> str:
        """Short human-readable description: degree histogram of dense layers."""
        dense = [p for p, L in zip(self.degrees, model.layers) if L.kind != "embedding"]
        hist = {p: dense.count(p) for p in sorted(set(dense), reverse=True)}
        return "dense degrees " + ", ".join(f"{p}x{c}" for p, c in hist.items())


def data_parallel(model: Model, n: int, tensor: int = 1) -> Strategy:
    """The default: every dense layer data parallel over all ``n`` servers; embedding tables
    on one server each, round-robin (table ``t`` on server ``t mod n``)."""
    degrees, offsets, t = [], [], 0
    for L in model.layers:
        if L.kind == "embedding":
            degrees.append(1)
            offsets.append(t % n)
            t += 1
        else:
            degrees.append(n)
            offsets.append(0)
    return Strategy(n, tuple(degrees), tuple(offsets), tensor)


def pipeline(model: Model, n: int, stages: int, tensor: int = 1) -> Strategy:
    """Data x pipeline parallelism: dense layers cut into ``stages`` contiguous stages of about
    equal FLOPs; stage ``k`` runs on the coset ``{k, k + stages, ...}`` (``n / stages``
    data-parallel replicas). Embedding tables stay round-robin."""
    if stages < 1 or n % stages:
        raise InputError(f"strategy: pipeline stages {stages} must divide n = {n}")
    base = data_parallel(model, n, tensor)
    dense = [i for i, L in enumerate(model.layers) if L.kind != "embedding"]
    flops = np.array([model.layers[i].flops for i in dense], dtype=float)
    flops = np.where(flops > 0, flops, flops[flops > 0].min() if (flops > 0).any() else 1.0)
    cum = np.cumsum(flops) - flops / 2  # stage by the layer's FLOP midpoint
    stage = np.minimum((cum / flops.sum() * stages).astype(int), stages - 1)
    degrees, offsets = list(base.degrees), list(base.offsets)
    for i, s in zip(dense, stage):
        degrees[i], offsets[i] = n // stages, int(s)
    return Strategy(n, tuple(degrees), tuple(offsets), tensor)


def parse_strategy(spec: str, model: Model, n: int, gpus_per_server: int = 4) -> Strategy:
    """Build a strategy from a command-line spec.

    ``dp`` (default) -- :func:`data_parallel`; ``pp=P[,tp=T]`` or ``dp,pp=P,tp=T`` -- data x
    pipeline x tensor (``T`` GPUs inside a server, dividing ``gpus_per_server``); a path to a
    ``topoopt-strategy/1`` JSON file -- that strategy."""
    path = Path(spec)
    if spec.endswith(".json") or path.is_file():
        text = read_input_text(path, InputError, shown=f"strategy: {spec}")  # core/files.py
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise InputError(f"strategy: {spec} is not valid JSON ({exc.msg})") from None
        s = Strategy.from_dict(data, model)
        if s.n != n:
            raise InputError(f"strategy: file is for n = {s.n}, not {n}")
        return s
    pp, tp = 1, 1
    for part in filter(None, (x.strip() for x in spec.lower().split(","))):
        if part == "dp":
            continue
        key, _, val = part.partition("=")
        if key not in ("pp", "tp") or not val.isdigit():
            raise InputError(f"strategy: cannot parse {part!r} (use dp, pp=P, tp=T or a .json file)")
        if key == "pp":
            pp = int(val)
        else:
            tp = int(val)
    if pp < 1:
        raise InputError(f"strategy: pp={pp}: a pipeline needs at least 1 stage")
    if tp < 1 or gpus_per_server % tp:
        raise InputError(f"strategy: tp={tp} must divide the {gpus_per_server} GPUs per server")
    return pipeline(model, n, pp, tp) if pp > 1 else data_parallel(model, n, tp)
