"""The route problem on a fixed topology: commodities, arcs and capacity resources.

One :class:`RouteProblem` is what every route model (:mod:`.route_lp`, :mod:`.route_paths`,
:mod:`.route_cpsat`, :mod:`~topoopt_milp.methods.route_approx`) and the ring LP
(:mod:`.ring_lp`) solve: the instance's fixed topology (or one handed in), the ring orders to
route, the aggregated demand matrix ``D`` in volume units and one capacity resource per
directed arc (per undirected link for shared SNDlib capacities). See :mod:`.route` for the
models and the units.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import connected_components

from ...core.circulant import circulant_jumps
from ...core.errors import InputError
from ...core.instance import Instance
from ...core.params import SolveOptions
from ...core.topology import (
    Commodity,
    Ring,
    Topology,
    commodities_for,
    default_rings,
    fixed_rings,
    fixed_topology,
    link_capacities,
    rings_along_jumps,
)
from .. import model_data as _exact
from .shared_capacity import condition

INF = math.inf


@dataclass(frozen=True)
class RouteProblem:
    """Commodities, arcs and capacity resources of one routing problem (model units).

    ``arcs[a] = (u, v)``; resource ``r`` covers arcs ``res_arcs[r]`` with capacity
    ``res_cap[r]``; ``D`` is the aggregated demand matrix in volume units. Seconds per model
    time unit: ``unit / cap_unit``. Shared capacities are conditioned for the solvers
    (:func:`.shared_capacity.condition`: large ones clipped without changing the optimum,
    insignificant links left out with ``bound_factor`` keeping the bound valid)."""

    instance: Instance
    topology: Topology
    rings: tuple[Ring, ...]
    commodities: tuple[Commodity, ...]
    D: np.ndarray
    arcs: np.ndarray
    res_arcs: tuple[np.ndarray, ...]
    res_cap: np.ndarray
    unit: float
    cap_unit: float
    shared: bool
    # shared capacities only (:mod:`.shared_capacity`): links left out of the models, the
    # factor that makes a model bound valid for the instance, and what was done
    dropped: np.ndarray | None = None
    bound_factor: float = 1.0
    conditioning: str = ""

    @property
    def sec_per_unit(self) -> float:
        return self.unit / self.cap_unit


def the_topology(instance: Instance) -> Topology:
    """The instance's fixed topology; an input error when it has none."""
    topology = fixed_topology(instance)
    if topology is None:
        raise InputError("topology: the route family solves the routing on a fixed topology; "
                         "the instance has none (on the command line: --topology SOL.json)")
    return topology.with_jumps(circulant_jumps(topology.links))


def ring_orders(instance: Instance, topology: Topology, options: SolveOptions) -> tuple[Ring, ...]:
    """Ring orders to route: the instance's fixed rings, else (or with ``rings = "default"``)
    the default rings laid along the jumps of a circulant topology
    (:func:`~topoopt_milp.core.topology.rings_along_jumps`)."""
    fixed = fixed_rings(instance)
    if fixed is not None and options.method.rings == "fixed":
        return fixed
    return rings_along_jumps(default_rings(instance), topology)


def build_problem(instance: Instance, options: SolveOptions) -> RouteProblem:
    """The route problem on the instance's fixed topology with the rings of
    :func:`ring_orders`."""
    topology = the_topology(instance)
    return problem_on(instance, topology, ring_orders(instance, topology, options))


def problem_on(instance: Instance, topology: Topology, rings: tuple[Ring, ...]) -> RouteProblem:
    """The route problem of ``rings`` and the instance's MP demands on ``topology`` (shared
    capacities only when the instance's fixed topology declares them); an input error when
    some demand has no path."""
    comms = tuple(commodities_for(instance, rings))
    unit = _exact.volume_unit(instance)
    n = instance.n
    D = np.zeros((n, n))
    if comms:  # np.add.at adds in the commodities' order, as the loop it replaces
        src = np.fromiter((c.src for c in comms), np.int64, len(comms))
        dst = np.fromiter((c.dst for c in comms), np.int64, len(comms))
        vol = np.fromiter((c.bytes for c in comms), float, len(comms)) / unit
        np.add.at(D, (src, dst), vol)
    L = topology.links
    u, v = np.nonzero(L)
    arcs = np.stack([u, v], axis=1)
    # components, not hop distances: the all-pairs search took 21-28 s at n = 10^4
    _, comp = connected_components(csr_matrix(L > 0), directed=False)
    src, dst = np.nonzero(D > 0)
    cut = np.flatnonzero(comp[src] != comp[dst])
    if len(cut):
        s, t = int(src[cut[0]]), int(dst[cut[0]])
        raise InputError(f"topology: no path from {s} to {t}, which has demand (disconnected)")
    shared = instance.topology is not None and instance.topology.shared
    dropped, factor, note = None, 1.0, ""
    if shared:
        caps = link_capacities(instance)  # {(i, j): bytes/s}, i < j
        index = {(int(a), int(b)): k for k, (a, b) in enumerate(arcs)}
        res_arcs = tuple(np.array([index[(i, j)], index[(j, i)]]) for (i, j) in caps)
        # capacities far apart break the LP tolerances: clipped / left out, with the proofs
        cond = condition(n, list(caps), np.array(list(caps.values())), D)
        cap_unit = float(cond.caps.max())
        res_cap = cond.caps / cap_unit
        if cond.dropped.any():
            dropped = cond.dropped
        factor, note = cond.bound_factor, cond.note
        if not math.isfinite(unit / cap_unit):
            raise InputError(f"topology: capacities as small as {cap_unit:.3g} for volumes of "
                             f"{unit:.3g}: the congestion overflows the float range")
    else:
        cap_unit = instance.link_bytes_per_s
        res_arcs = tuple(np.array([a]) for a in range(len(arcs)))
        res_cap = L[u, v].astype(float)
    return RouteProblem(instance, topology, rings, comms, D, arcs, res_arcs, res_cap, unit,
                        cap_unit, shared, dropped, factor, note)


def model_caps(P: RouteProblem) -> np.ndarray:
    """The capacities the LP and path models write: ``res_cap``, with 1 for the links left
    out (their arcs carry no flow in the models, so their rows are void)."""
    if P.dropped is None:
        return P.res_cap
    return np.where(P.dropped, 1.0, P.res_cap)


def dropped_arcs(P: RouteProblem) -> np.ndarray:
    """Per arc: whether it belongs to a link left out of the models."""
    out = np.zeros(len(P.arcs), dtype=bool)
    if P.dropped is not None:
        for r in np.flatnonzero(P.dropped):
            out[P.res_arcs[r]] = True
    return out


def usable_topology(P: RouteProblem) -> Topology:
    """``P.topology`` without the links left out of the models (candidate paths avoid them)."""
    if P.dropped is None:
        return P.topology
    L = np.array(P.topology.links)
    for a in np.flatnonzero(dropped_arcs(P)):
        L[P.arcs[a, 0], P.arcs[a, 1]] = 0
    return Topology(L)
