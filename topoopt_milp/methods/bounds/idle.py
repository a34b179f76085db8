"""Idle capacity: the arc capacity that a node's traffic imbalance keeps idle in every
solution (issue 16, item 2).

The hop-counting bounds (:func:`~.counting.port_hop_bound`, :func:`~.matching.matching_bound`)
compare the byte-hops of a solution with the capacity of all arcs together, ``n d c``. Not all
of it can be used: a node that receives more than it sends can forward only what its in-arcs
have left, and everything it forwards leaves on its out-arcs, so part of its out-arcs' capacity
stays idle whatever the topology and the routing.

Notation: ``c = B T`` bytes per link and direction in time ``T``; ``out_v``, ``in_v`` the bytes
node ``v`` sends and receives (MP and ring edges; every ring order gives a member the same
volume, :meth:`~topoopt_milp.core.instance.Instance.node_out_in_bytes`).

Lemma. In every solution of time ``T`` (any topology with at most ``d`` ports a node, any
routing, any ring orders split freely) the byte-hops ``H`` (a byte counted once per arc it
crosses) satisfy ``H <= n d c - I`` with ``I = sum_v max(0, in_v - out_v)``.

*Proof.* Follow each byte along its path (a walk from its source to its destination) and let
``r_v`` count the times a byte arrives at ``v`` and leaves it again on the way. Every byte on an
out-arc of ``v`` either starts its walk there or leaves after such a stop, so the out-arcs of ``v``
carry ``out_v + r_v`` bytes; likewise its in-arcs carry ``in_v + r_v``, at most ``d c`` (at most
``d`` links, ``c`` each). Hence the out-arcs of ``v`` carry at most ``d c - (in_v - out_v)``, and
at most ``d c`` in any case. Every arc is an out-arc of exactly one node, so ``H = sum_v (out_v +
r_v) <= n d c - sum_v max(0, in_v - out_v)``. QED.

Since ``sum_v out_v = sum_v in_v``, ``I`` is also ``sum_v max(0, out_v - in_v)``: it is zero on
symmetric traffic (every coopt workload) and grows with the imbalance of model-parallel
demand. On ``mixed-n128-d4-g4-mp50`` it is 2.6% of the arcs' capacity at the matching bound
(0.1711 s).
"""

from __future__ import annotations

import numpy as np

from ...core.instance import Instance


def idle_capacity(instance: Instance) -> float:
    """``I = sum_v max(0, in_v - out_v)`` bytes (module docstring): arc capacity that no
    solution can use, whatever its time."""
    out, inn = instance.node_out_in_bytes()
    return float(np.maximum(np.asarray(inn, float) - np.asarray(out, float), 0.0).sum())
