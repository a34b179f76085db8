"""From a (model, strategy) pair to the traffic of one iteration, and to an :class:`Instance`.

Traffic of a strategy (see :mod:`.strategy` for cosets and shards), with ``e`` bytes per
element (``dtype_bytes``, fp32 = 4 by default as in the TopoOpt artifact) and ``g * b``
samples per shard:

* **AllReduce**: every layer with degree ``p >= 2`` and parameters all-reduces its gradient,
  ``params * e`` bytes, over its coset. Layers on the same coset are merged into one group
  (one ring AllReduce of the summed bytes; ring volume is linear in bytes, so this changes
  nothing but the number of commodities).
* **MP**: for every data-flow edge ``a -> b`` and shard ``r``, if the servers processing ``r``
  differ, the activation ``act_elems_a * e * g * b`` bytes goes forward ``s_a(r) -> s_b(r)``
  and its gradient, of the same size, backward ``s_b(r) -> s_a(r)``. Embedding tables placed
  on one server thus produce DLRM's all-to-all. Repeated pairs are summed.

:class:`Workload` bundles a model with the cluster (``n``, GPUs per server, element size,
GPU preset) and evaluates strategies fast: :meth:`Workload.traffic` is pure numpy (a few
``bincount`` calls), which is what the outer loop calls thousands of times.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from ..core.errors import InputError
from ..core.instance import MAX_N, AllReduceGroup, Instance
from .compute import GPU, GPUS, ComputeModel
from .strategy import Strategy
from .zoo import Model


@dataclass(frozen=True)
class Traffic:
    """One iteration's traffic: merged AllReduce groups and the dense MP matrix (bytes)."""

    groups: tuple[tuple[tuple[int, ...], float], ...]
    mp: np.ndarray
    compute_s: float

    def pair_matrix(self, ring_jumps: Callable[[int], Sequence[int]] | None = None) -> np.ndarray:
        """MP plus every group's ring edges: the point-to-point demand a fixed routing carries.

        A group of ``k`` members ``m_0..m_{k-1}`` (in coset order) all-reduces over one ring per
        jump ``j`` of ``ring_jumps(k)`` (default: the single jump 1), ring ``j`` visiting
        ``m_0, m_j, m_2j, ...`` (indices mod ``k``) and carrying an equal share: each of its
        edges ``2 (k-1)/k * S / len(jumps)`` bytes."""
        n = self.mp.shape[0]
        src, dst, w = [], [], []
        for members, size in self.groups:
            k = len(members)
            m = np.asarray(members)
            jumps = list(ring_jumps(k)) if ring_jumps is not None else [1]
            for j in jumps:
                order = m[(np.arange(k) * j) % k]
                src.append(order)
                dst.append(np.roll(order, -1))
                w.append(np.full(k, 2.0 * (k - 1) / k * size / len(jumps)))
        if not src:
            return self.mp.copy()
        flat = np.concatenate(src) * n + np.concatenate(dst)
        ring = np.bincount(flat, weights=np.concatenate(w), minlength=n * n).reshape(n, n)
        return self.mp + ring


@dataclass
class Workload:
    """A model on a cluster of ``n`` servers with ``gpus_per_server`` GPUs each."""

    model: Model
    n: int
    gpus_per_server: int = 4
    dtype_bytes: int = 4
    gpu: GPU = field(default_factory=lambda: GPUS["a100"])

    def __post_init__(self) -> None:
        if self.n < 2:
            raise InputError(f"n: need at least 2 servers, got {self.n}")
        if self.n > MAX_N:  # refused before the n x n traffic arrays are allocated
            raise InputError(f"n: at most {MAX_N} servers, got {self.n}")
        if self.gpus_per_server < 1:  # it multiplies every shard's batch: 0 GPUs compute nothing
            raise InputError(f"gpus_per_server: must be at least 1, got {self.gpus_per_server}")
        if self.dtype_bytes < 1:
            raise InputError(f"dtype_bytes: must be >= 1, got {self.dtype_bytes}")
        L = self.model.layers
        self._edges = np.array(self.model.edges(), dtype=np.int64).reshape(-1, 2)
        per_shard = self.gpus_per_server * self.model.batch_per_gpu
        self._edge_bytes = np.array([L[a].act_bytes(self.dtype_bytes) * per_shard
                                     for a, _ in self._edges])
        self._param_bytes = np.array([x.param_bytes(self.dtype_bytes) for x in L])
        self._compute: dict[int, ComputeModel] = {}

    def compute_model(self, tensor: int = 1) -> ComputeModel:
        if tensor not in self._compute:
            self._compute[tensor] = ComputeModel.build(
                self.model, self.n, self.gpus_per_server, self.gpu, self.dtype_bytes, tensor)
        return self._compute[tensor]

    def traffic(self, s: Strategy) -> Traffic:
        """The strategy's AllReduce groups, MP matrix and compute time (module docstring)."""
        n = self.n
        if s.n != n or len(s.degrees) != len(self.model.layers):
            raise InputError(f"strategy: made for n = {s.n} and {len(s.degrees)} layers, workload "
                             f"has n = {n} and {len(self.model.layers)} layers")
        degrees = np.asarray(s.degrees)
        offsets = np.asarray(s.offsets)
        strides = n // degrees
        # shard r of layer i runs on offsets[i] + strides[i] * (r // strides[i])
        r = np.arange(n)
        shard = offsets[:, None] + strides[:, None] * (r[None, :] // strides[:, None])
        mp = np.zeros((n, n))
        if len(self._edges):
            a, b = self._edges[:, 0], self._edges[:, 1]
            src, dst = shard[a], shard[b]  # (edges, n)
            w = np.broadcast_to(self._edge_bytes[:, None], src.shape)
            moved = src != dst
            fwd = src[moved] * n + dst[moved]
            bwd = dst[moved] * n + src[moved]
            mp = np.bincount(np.concatenate([fwd, bwd]), weights=np.concatenate([w[moved], w[moved]]),
                             minlength=n * n).reshape(n, n)
        groups: dict[tuple[int, int], float] = {}
        for i in np.flatnonzero((degrees >= 2) & (self._param_bytes > 0)):
            key = (int(degrees[i]), int(offsets[i]))
            groups[key] = groups.get(key, 0.0) + float(self._param_bytes[i])
        merged = tuple(
            (tuple(int(x) for x in o + (n // p) * np.arange(p)), size)
            for (p, o), size in sorted(groups.items(), key=lambda kv: (-kv[0][0], kv[0][1]))
        )
        members = [s.members(i) for i in range(len(degrees))]
        compute_s = self.compute_model(s.tensor).time(degrees, members)
        return Traffic(merged, mp, compute_s)

    def instance(self, s: Strategy, degree: int, link_gbps: float, name: str | None = None,
                 regular: bool = True, meta: dict | None = None) -> Instance:
        """The strategy's traffic as a validated :class:`Instance`."""
        t = self.traffic(s)
        src, dst = np.nonzero(t.mp)
        mp = tuple((int(i), int(j), float(t.mp[i, j])) for i, j in zip(src, dst))
        info = {
            "generator": "topoopt_milp.workloads",
            "model": self.model.name,
            "workload": self.model.name,  # the key bench plots (kind iteration) group by
            "params": self.model.params,
            "batch_per_gpu": self.model.batch_per_gpu,
            "dtype_bytes": self.dtype_bytes,
            "gpu": self.gpu.name,
            "gpu_efficiency": self.gpu.efficiency,
            "tensor": s.tensor,
            "strategy": s.summary(self.model),
            **(meta or {}),
        }
        return Instance(
            n=self.n,
            degree=degree,
            link_gbps=float(link_gbps),
            allreduce=tuple(AllReduceGroup(m, b) for m, b in t.groups),
            mp=mp,
            regular=regular,
            gpus_per_server=self.gpus_per_server,
            compute_s=t.compute_s,
            name=name or f"{self.model.name}-n{self.n}-d{degree}",
            meta=info,
        )
