"""Reference fabrics for iteration-time comparisons: ideal switch, Fat-trees, random expander.

* **Ideal switch** at ``d B`` per server: ``T_comm = max_i max(out_i, in_i) / (d B)``
  (:func:`~topoopt_milp.core.evaluate.ideal_switch_time`), a lower bound for every ``d``-port
  direct-connect topology.
* **Full-bisection Fat-tree** at per-server bandwidth ``X``: non-blocking, so only the server
  links limit: ``T_comm = max_i max(out_i, in_i) / X``. At ``X = d B`` ("equal total
  bandwidth") it coincides with the ideal switch.
* **Cost-equivalent Fat-tree**: the per-server bandwidth ``X_eq`` a full-bisection Fat-tree
  can have for the money the direct-connect cluster costs (:class:`CostModel`).
* **Random expander** with the same ``d`` and ``B``: the registry's ``expander`` links when
  available, otherwise a seeded :func:`networkx.random_regular_graph`; AllReduce rings follow
  a nearest-neighbour tour of each group, routing is shortest path.

Cost model (every price an input; defaults are illustrative street prices of 100 Gbps parts
around 2022, to be replaced by real quotes; prices scale linearly with bandwidth):

* a direct-connect port is one NIC port, one transceiver and one patch-panel port (each link
  has a transceiver at both ends and passes the patch panel once per end);
* a ``T``-tier folded-Clos Fat-tree gives each server one NIC port, ``T`` links with two
  transceivers each (``2T``) and ``2T - 1`` switch ports (leaf down; leaf up / spine down;
  ...), so ``X_eq = d B (nic + trx + panel) / (nic + 2T trx + (2T - 1) switch)``.

TopoOpt (NSDI'23) makes the same kind of comparison (direct-connect optics through a patch
panel against Fat-trees of similar cost) and reports its cluster up to 3.4x faster than a
similar-cost Fat-tree; the defaults here give ``X_eq ~= 0.36 d B`` for two tiers.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import networkx as nx
import numpy as np

from .. import registry
from ..core.evaluate import comm_time, ideal_switch_time
from ..core.instance import Instance
from ..core.topology import Ring, Topology
from ..methods.heuristics.baselines import fat_tree_time

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class CostModel:
    """Prices in USD per 100 Gbps port (see the module docstring)."""

    nic_port: float = 250.0
    transceiver: float = 100.0
    switch_port: float = 200.0
    patch_panel_port: float = 100.0
    tiers: int = 2

    def direct_connect_per_server(self, degree: int, gbps: float) -> float:
        return degree * gbps / 100.0 * (self.nic_port + self.transceiver + self.patch_panel_port)

    def fat_tree_per_gbps(self) -> float:
        t = self.tiers
        return (self.nic_port + 2 * t * self.transceiver + (2 * t - 1) * self.switch_port) / 100.0

    def equivalent_fat_tree_gbps(self, degree: int, gbps: float) -> float:
        """Per-server bandwidth of the Fat-tree costing what the direct-connect cluster costs."""
        return self.direct_connect_per_server(degree, gbps) / self.fat_tree_per_gbps()


def expander_comm_time(instance: Instance, seed: int = 0) -> float:
    """``T_comm`` on a random ``d``-regular expander (the registry's ``expander`` links when
    available, else a seeded :func:`networkx.random_regular_graph`), every AllReduce group on
    a nearest-neighbour ring (:func:`greedy_rings`) and shortest-path routing."""
    from ..core.routing import route

    topo = None
    if registry.available("expander"):
        res = registry.solve(instance, "expander", seed=seed)
        if res.status.has_solution:
            topo = res.topology
    if topo is None:
        for attempt in range(100):  # a random regular graph is connected with high probability
            g = nx.random_regular_graph(instance.degree, instance.n, seed=seed + attempt)
            if nx.is_connected(g):
                break
        topo = Topology.from_link_list(instance.n, [[u, v, 1] for u, v in g.edges()])
    routing = route(instance, topo, greedy_rings(instance, topo, seed), "shortest", seed)
    return comm_time(instance, topo, routing)


def greedy_rings(instance: Instance, topology: Topology, seed: int = 0) -> tuple[Ring, ...]:
    """``max(1, d // 2)`` rings per AllReduce group, each with an equal share: every ring starts
    at a random member and always continues to the nearest unvisited member in hops, preferring
    pairs earlier rings of the group have not used yet (random ties). One ring would use one
    of the ``d`` ports of each server; on an expander these tours keep most ring edges on
    single links, which the member order of a random graph does not."""
    rng = np.random.default_rng(seed)
    dist = topology.hop_distances
    r = max(1, instance.degree // 2)
    rings = []
    for gi, g in enumerate(instance.allreduce):
        used: dict[tuple[int, int], int] = {}
        for _ in range(r):
            members = list(g.members)
            rank = dict(zip(members, rng.permutation(len(members)), strict=True))
            order = [members[int(rng.integers(len(members)))]]
            left = [v for v in members if v != order[0]]
            while left:
                u = order[-1]
                nxt = min(left, key=lambda v: (dist[u, v], used.get((u, v), 0), rank[v]))
                order.append(nxt)
                left.remove(nxt)
            for a, b in zip(order, order[1:] + order[:1]):
                used[(a, b)] = used.get((a, b), 0) + 1
            rings.append(Ring(gi, tuple(order), 1.0 / r))
    return tuple(rings)


def baselines(instance: Instance, cost: CostModel | None = None, fat_tree_gbps: float | None = None,
              seed: int = 0) -> dict[str, float]:
    """Communication times of the reference fabrics for one instance (seconds)."""
    cost = cost or CostModel()
    d, b = instance.degree, instance.link_gbps
    x_eq = cost.equivalent_fat_tree_gbps(d, b)
    return {
        "ideal_switch": ideal_switch_time(instance),
        "fat_tree": fat_tree_time(instance, fat_tree_gbps or d * b),
        "fat_tree_cost_equivalent": fat_tree_time(instance, x_eq),
        "fat_tree_cost_equivalent_gbps": x_eq,
        "expander": expander_comm_time(instance, seed),
    }
