"""Compute-time model: FLOPs over GPU throughput, plus the intra-server AllReduce.

For a layer with forward FLOPs ``F`` per sample, running on ``p`` servers of ``g`` GPUs that
together process the global batch ``N = n * g * b`` (``b`` samples per GPU), every one of
those servers spends

    t_layer = 3 F (N / p) / (g * peak * eff)

seconds (forward plus backward = 3x forward FLOPs; the backward pass computes gradients with
respect to inputs and weights, 2x forward). With tensor parallelism of width ``t`` GPUs inside
a server, a Transformer block adds its ``tp_allreduces`` activation AllReduces over NVLink,
``tp_allreduces * 2 (t-1)/t * act_bytes * (N / p) * t / (g * nvlink)`` per server (each of the
``g / t`` tensor groups all-reduces the activations of its ``(N/p) t / g`` samples, every GPU
sending ``2 (t-1)/t`` of that volume over its own link). A server's compute time is the sum over the layers
it runs, and the iteration's compute time is the busiest server's,

    T_compute = max_s  sum_{layers on s} (t_layer + t_intra),

which assumes layers placed on disjoint servers overlap (pipelined micro-batches, no bubble)
and layers on the same server run one after another. ``t_intra`` is the ring AllReduce of a
replicated layer's gradient among the ``g`` GPUs inside a server over NVLink,
``2 (r-1)/r * (param_bytes / t) / nvlink_bytes_per_s`` among the ``r = g / t`` replicas of
each weight shard; layers kept on one GPU (embedding tables) skip it.

GPU presets (dense bf16 tensor-core peak, NVIDIA data sheets): A100 312 TFLOP/s with NVLink3
at 300 GB/s per direction per GPU (600 GB/s bidirectional); H100 SXM 989 TFLOP/s with NVLink4
at 450 GB/s per direction (900 GB/s bidirectional). The default efficiency 0.5 (achieved /
peak) is a typical model-FLOPs utilisation of large training jobs; every field can be
overridden (``GPU(...)`` or :meth:`GPU.with_`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ..core.errors import InputError
from .zoo import Model


@dataclass(frozen=True)
class GPU:
    """Throughput preset: ``peak_tflops`` dense, ``efficiency`` achieved fraction, NVLink
    bandwidth per direction per GPU in GB/s (1e9 bytes/s)."""

    name: str
    peak_tflops: float
    nvlink_gbytes: float
    efficiency: float = 0.5

    def __post_init__(self) -> None:
        if self.peak_tflops <= 0 or self.nvlink_gbytes <= 0:
            raise InputError("gpu: peak_tflops and nvlink_gbytes must be positive")
        if not 0 < self.efficiency <= 1:
            raise InputError(f"efficiency: must be in (0, 1], got {self.efficiency}")

    @property
    def flops_per_s(self) -> float:
        """Achieved FLOP/s of one GPU."""
        return self.peak_tflops * 1e12 * self.efficiency

    def with_(self, **changes) -> GPU:
        return replace(self, **changes)


GPUS: dict[str, GPU] = {
    "a100": GPU("a100", 312.0, 300.0),
    "h100": GPU("h100", 989.0, 450.0),
}


def get_gpu(name: str, efficiency: float | None = None) -> GPU:
    try:
        gpu = GPUS[name.lower()]
    except KeyError:
        raise InputError(f"gpu: unknown preset {name!r} (known: {', '.join(GPUS)})") from None
    return gpu if efficiency is None else gpu.with_(efficiency=efficiency)


@dataclass(frozen=True)
class ComputeModel:
    """Per-layer compute times of a model on ``n`` servers of ``gpus_per_server`` GPUs.

    ``layer_full[i]`` is layer ``i``'s time when one server processes the *whole* global batch
    (so a layer on ``p`` servers costs ``layer_full[i] / p`` on each); ``layer_intra[i]`` is its
    intra-server gradient AllReduce time."""

    model: Model
    n: int
    gpus_per_server: int
    gpu: GPU
    dtype_bytes: int
    layer_full: np.ndarray
    layer_intra: np.ndarray

    @classmethod
    def build(cls, model: Model, n: int, gpus_per_server: int = 4, gpu: GPU | None = None,
              dtype_bytes: int = 4, tensor: int = 1) -> ComputeModel:
        gpu = gpu or GPUS["a100"]
        g, t = gpus_per_server, tensor
        if t < 1 or g % t:
            raise InputError(f"tensor: width {t} must divide the {g} GPUs per server")
        global_batch = n * g * model.batch_per_gpu
        nvlink = gpu.nvlink_gbytes * 1e9
        r = g // t  # data-parallel replicas of each weight shard inside a server
        full = np.array([
            3.0 * L.flops * global_batch / (g * gpu.flops_per_s)
            + (L.tp_allreduces * 2.0 * (t - 1) * L.act_bytes(dtype_bytes) * global_batch
               / (g * nvlink) if t > 1 else 0.0)
            for L in model.layers
        ])
        intra = np.array([
            0.0 if (r < 2 or L.kind == "embedding")
            else 2.0 * (r - 1) / r * L.param_bytes(dtype_bytes) / t / nvlink
            for L in model.layers
        ])
        full.setflags(write=False)
        intra.setflags(write=False)
        return cls(model, n, g, gpu, dtype_bytes, full, intra)

    def server_times(self, degrees: np.ndarray, members: list[np.ndarray]) -> np.ndarray:
        """Compute seconds of every server for layers with these degrees and member sets."""
        load = np.zeros(self.n)
        per = self.layer_full / degrees + self.layer_intra
        for i, mem in enumerate(members):
            load[mem] += per[i]
        return load

    def time(self, degrees: np.ndarray, members: list[np.ndarray]) -> float:
        """``T_compute``: the busiest server's summed layer times (module docstring)."""
        return float(self.server_times(degrees, members).max())
