"""Shared plumbing of the exact families (select, alloc, joint, route): units, the AllReduce
ring-split linearisation, routings from decomposed flows and integer scaling for CP-SAT. The
honest :class:`~topoopt_milp.core.result.SolveResult` is assembled by :mod:`.certify`.

Units. Models are solved in *link-time units*: a volume unit ``V = max_i max(out_i, in_i) / d``
bytes (what one server must push through each of its ``d`` ports under an ideal switch) and a
capacity of 1 per link, so the ideal-switch time is 1 model time unit and a model time ``t``
is ``t * V / B`` seconds. Throughput models maximise ``lambda`` (the demand multiplier that
fits), so ``lambda <= 1`` and ``T_comm = V / (B lambda)`` seconds.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Sequence

import numpy as np
import pulp

from ..core.instance import Instance
from ..core.routing import RoutingError, route
from ..core.topology import Commodity, Path, Ring, Routing, Topology, commodities_for

log = logging.getLogger(__name__)

FLOW_EPS = 1e-9  # relative to the commodity volume: smaller path flows are solver noise


def volume_unit(instance: Instance) -> float:
    """Bytes per model volume unit ``V`` (see module docstring); 1.0 for empty traffic."""
    out, inn = instance.node_out_in_bytes()
    v = float(max(out.max(), inn.max())) / instance.degree
    return v if v > 0 else 1.0


def seconds_per_unit(instance: Instance) -> float:
    """Seconds per model time unit: ``V / B``; 0 for empty traffic, which every topology
    carries in no time (the models' unit ``V = 1`` is then a placeholder, not a volume)."""
    if instance.total_bytes() == 0:
        return 0.0
    return volume_unit(instance) / instance.link_bytes_per_s


def demand_matrix(instance: Instance, rings: Sequence[Ring]) -> np.ndarray:
    """``n x n`` bytes from ``src`` to ``dst`` over all commodities (MP + ring edges)."""
    D = np.zeros((instance.n, instance.n))
    for c in commodities_for(instance, rings):
        D[c.src, c.dst] += c.bytes
    return D


# -- AllReduce ring choice (alloc and select "choose" mode) ------------------------------------
def normalise_shares(rings: Sequence[Ring]) -> list[Ring]:
    """Rescale the shares of each group's rings to sum to 1 (solver leftovers after dropping
    rings with share ~0)."""
    total: dict[int, float] = defaultdict(float)
    for r in rings:
        total[r.group] += r.share
    return [Ring(r.group, r.order, r.share / total[r.group]) for r in rings]


def expr_value(expr, values: dict[str, float]) -> float:
    """Value of a PuLP affine expression (or a number) under solver ``values`` by name."""
    if isinstance(expr, int | float):
        return float(expr)
    return float(sum(c * values.get(v.name, 0.0) for v, c in expr.items()) + expr.constant)


def ring_choice(prob, lam, g: int, orders, edge_volume: float, demand, sources=None) -> list:
    """Free AllReduce ring split of group ``g`` in a throughput model (alloc, select).

    The group may split its volume over the candidate ring ``orders`` with shares ``sigma_c``.
    The demand ``lambda sigma_c`` is bilinear; with ``tau_c = lambda sigma_c`` and
    ``sum_c tau_c = lambda`` it is linear: ring edge ``a -> b`` of order ``c`` adds
    ``edge_volume * tau_c`` to ``demand[a][b]``. Only sources in ``sources`` (default: all)
    get rows -- the single-source circulant reduction keeps one. Returns the
    ``(g, order, tau)`` terms; ``sigma_c = tau_c / lambda``."""
    taus = [prob.add_variable(f"tau_{g}_{c}", 0) for c in range(len(orders))]
    prob += pulp.lpSum(taus) == lam, f"shares_{g}"
    terms = []
    for order, tau in zip(orders, taus, strict=True):
        terms.append((g, order, tau))
        k = len(order)
        for i in range(k):
            a, b = order[i], order[(i + 1) % k]
            if sources is None or a in sources:
                demand[a][b] = demand[a].get(b, 0) + edge_volume * tau
    return terms


def routing_from_pair_paths(
    instance: Instance,
    topology: Topology,
    rings: Sequence[Ring],
    pair_paths: dict[tuple[int, int], list[tuple[Path, float]]],
    seed: int = 0,
    comm_paths: dict[tuple[str, int, int, int], list[tuple[Path, float]]] | None = None,
) -> Routing:
    """A :class:`Routing` giving every commodity ``(s, t)`` the split ``pair_paths[(s, t)]``
    (or ``comm_paths[(kind, tag, s, t)]`` when given there: models that route ring edges of
    different groups separately).

    Commodities the model left without paths (zero-volume rounding in CP-SAT, or numerical
    leftovers) get a shortest path on ``topology`` so that the routing is always complete."""
    comms = commodities_for(instance, rings)
    comm_paths = comm_paths or {}
    missing = [c for c in comms if (c.src, c.dst) not in pair_paths
               and (c.kind, c.tag, c.src, c.dst) not in comm_paths]
    fallback: dict[tuple[int, int], tuple] = {}
    if missing:
        try:
            sp = route(instance, topology, rings, "shortest", seed)
            fallback = {(c.src, c.dst): c.paths for c in sp.commodities}
        except RoutingError as exc:
            log.warning("no fallback path for %d commodities: %s", len(missing), exc)
    routed = []
    for c in comms:
        paths = (comm_paths.get((c.kind, c.tag, c.src, c.dst)) or pair_paths.get((c.src, c.dst))
                 or fallback.get((c.src, c.dst), ()))
        routed.append(Commodity(c.src, c.dst, c.bytes, c.kind, c.tag, tuple(paths)))
    return Routing(tuple(rings), tuple(routed))


# -- integers for CP-SAT ------------------------------------------------------------------------
def integer_units(values: np.ndarray, max_units: int = 10**5) -> tuple[np.ndarray, float, bool]:
    """Integer volumes for CP-SAT: ``(units, scale, exact)`` with ``values ~ units * scale``.

    Exact when every positive value is an integer multiple of the smallest (within 1e-9) and
    the largest multiple is at most ``max_units``; otherwise ``units = floor(values / scale)``
    with ``scale = max(values) / max_units``. Rounding *down* keeps every scaled load at most
    the true load, so a CP-SAT bound times ``scale`` stays a valid lower bound."""
    values = np.asarray(values, dtype=float)
    pos = values[values > 0]
    if pos.size == 0:
        return np.zeros(values.shape, dtype=np.int64), 1.0, True
    base = float(pos.min())
    ratio = values / base
    if np.allclose(ratio, np.round(ratio), rtol=0, atol=1e-9) and ratio.max() <= max_units:
        return np.round(ratio).astype(np.int64), base, True
    scale = float(pos.max()) / max_units
    return np.floor(values / scale + 1e-9).astype(np.int64), scale, False
