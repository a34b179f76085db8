"""TotientPerms: ring jumps chosen by SelectPermutations over Euler-totient candidates.

The rule (DESIGN.md section 4, the published TopoOpt artifact):

* **Candidates.** An AllReduce group of size ``g`` placed on the coset
  ``{s, s + n/g, s + 2n/g, ...}`` of ``Z_n`` can use the jumps ``p = (n/g) m`` with
  ``1 <= m <= g`` and ``gcd(m, g) = 1`` (there are ``phi(g)`` of them): the permutation
  ``x -> x + p`` then walks the whole coset, i.e. it is a Hamiltonian ring of the group.
  See :func:`candidates`.
* **SelectPermutations** for ``m`` bidirectional rings (``d/2`` for ``d`` ports): ``m == 1``
  takes the smallest candidate; otherwise ``ratio = (c_last / c_first)^(1/m)`` and for
  ``t = 0..m-1`` the walk ``x_t = c_first ratio^t`` takes the smallest unused candidate
  ``>= x_t``: jumps spread geometrically, which gives short coin-change routes to every
  residue. For ``n = 128, d = 8`` this gives ``{1, 5, 13, 39}``. See
  :func:`select_permutations`.
* Every selected jump ``p`` is a bidirectional ring ``x -- x + p`` on every coset (2 ports per
  node). AllReduce uses both directions of every ring: the ring of ``p`` carries share
  ``1/(2m)`` of the volume in the order ``s, s + p, s + 2p, ...`` and ``1/(2m)`` in the
  reverse order, so whole-cluster AllReduce reaches the ideal-switch time. Routing is
  coin-change over the coins ``+-p``.

What the artifact does (hipersys-team/FlexFlow, ``src/runtime/network.cc``, class
``SpMulMat``; ``src/runtime/simulator.cc``, ``SpMulMatSimulator::expand_allreduce``)
    * ``construct_candidate_jumps``: for every divisor ``g >= 2`` of ``n`` the candidates
      ``(n/g) k``, ``1 <= k <= g``, ``gcd(g, k) = 1``, ascending.
    * ``choose_n_geo`` (the walk; ``simulator.cu`` builds ``SpMulMat`` with ``bidir = true``,
      so the exponent is ``1/m``): ``x`` starts at the double ``c_first`` and is multiplied
      by ``ratio`` after every pick; the pick is ``std::lower_bound(x)`` (the first candidate
      not less than ``x``, an exact double comparison, no tolerance), advanced past
      candidates already picked; nothing checks the end of the list or ``n - p``.
    * ``generate_dp_topology`` records, for every picked jump ``p``, the two paths ``[p]`` and
      ``[n - p]`` in ``selected_jumps``; ``expand_allreduce`` gives each of the ``npath``
      recorded paths ``ceil(2 (k-1)/k S / npath)`` bytes from every member. So the artifact
      sends half of each ring's share each way: both directions, as here.

Instances (:func:`allreduce_topology`)
    The construction works per AllReduce group with the group's members sorted,
    ``member[0] < ... < member[k-1]``: a *local* jump ``m`` (selected from
    ``candidates(k, k)``) links ``member[i] -- member[(i + m) mod k]`` and gives the ring order
    ``member[0], member[m], member[2m], ...``. On a coset group this is exactly the global jump
    ``(n/k) m``, so groups forming a coset family (one group of all ``n`` servers, or the
    ``n/k`` cosets of size ``k``) give a circulant topology whose jumps are recorded in
    ``Topology.jumps`` and routed by coin-change. Other groups (arbitrary member sets) use the
    same rule on their sorted members; the result is not circulant and is routed by shortest
    paths by default.

    * Groups with identical member sets are merged (one set of rings, volumes added): several
      layers all-reducing over the same replicas share their rings.
    * Connectivity: when the largest group is not the whole cluster, one ``+-1`` ring over all
      nodes (jump 1, 2 ports) keeps the graph connected; the groups get the remaining ports.
    * Overlapping groups split a node's ``P`` ports in proportion to their ring-edge volume
      ``w_g = 2 (k-1)/k S_g``: the quota of group ``g`` is ``P w_g / max_{v in g} W_v``
      where ``W_v`` sums ``w`` over the groups at node ``v`` (quotas at a node sum to at most
      ``P``). Each group gets ``floor(quota / 2)`` rings; the leftover rings go by largest
      remainder to groups whose members all still have 2 free ports; finally an even-sized
      group whose members all have one free port gets the ``k/2`` matching. Disjoint groups
      thus get all ``P`` ports each.
    * A group without ports of its own (e.g. ``d = 2`` below the whole cluster: the ``+-1``
      ring takes both) gets the artifact's multi-hop ring: a coset group on a circulant
      goes along its candidate ``P`` with the fewest coin-change hops, any other group
      along its sorted members; half the volume each way (the artifact records ``+-P``),
      routed over the other links. A zero-byte group keeps its sorted members.
    * Free ports of a regular instance (nodes outside every group, apportionment leftovers)
      are filled by :func:`~topoopt_milp.methods.heuristics.support.fill_free_ports`; a graph left
      disconnected with traffic between its components (overlapping groups) is joined by
      degree-preserving 2-swaps or over free ports
      (:func:`~topoopt_milp.methods.heuristics.support.connect_components`). Either step drops the
      circulant structure unless the result happens to be circulant.
    * Instances without AllReduce traffic get the plain circulant ``totient_jumps(n, d)``.

Departures from the published artifact (each fixes a quirk where it bites; ``faithful=True``
keeps the artifact's behaviour)
    1. **Both +-p.** The walk may pick ``p`` and ``n - p``, which are the same ring (the
       artifact then wires it twice). Fixed: a candidate whose negative ``n - p`` is already
       chosen is skipped like a used one. The candidate list is *not* folded to ``p <= n/2``
       (that would change every selection: ``n = 128, d = 8`` would give ``{1, 3, 9, 23}``).
    2. **Running past the candidate list.** When no unused candidate ``>= x`` is left the
       artifact reads past its list. Fixed: take the largest admissible candidate below ``x``;
       when no admissible candidate is left at all (``d/2`` exceeds the ``phi(g)/2`` distinct
       rings, e.g. small groups), the chosen jumps are repeated cyclically, i.e. parallel rings
       (extra capacity on the same rings). Faithful mode raises an input error instead.
    3. **Odd degree.** The artifact supports only even ``d``. Fixed: ``(d-1)/2`` rings plus the
       perfect matching ``x -- x + n/2`` when ``n`` is even (one port); for odd ``n`` (only on
       non-regular instances) the last port stays unused. Faithful mode raises an input error.
    4. **Floating point.** The default walk compares ``x_t = c_first * ratio**t`` with a
       relative tolerance of ``1e-9``, i.e. it follows the rule in exact arithmetic: when
       ``x_t`` is an integer candidate it is picked. The artifact's repeated product lands a
       few ulps above such an integer and skips it. Faithful mode repeats the artifact's
       product and its exact comparison. Among even ``d <= 16``, ``n <= 512`` the two differ
       on 15 cases, e.g. ``n = 26, d = 8``: ``x_2 = 5`` (``ratio = sqrt 5``), the artifact
       picks ``{1, 3, 7, 15}``, the default ``{1, 3, 5, 15}``; ``n = 50, d = 8``: artifact
       ``{1, 3, 9, 19}``, default ``{1, 3, 7, 19}``; ``n = 37, d = 16``: ``x_4 = 6``.
"""

from __future__ import annotations

import logging
import time
from collections import defaultdict
from dataclasses import dataclass
from math import floor, gcd

import numpy as np

from ...core.circulant import candidates, circulant_jumps
from ...core.errors import InputError
from ...core.instance import Instance
from ...core.params import SolveOptions, knob
from ...core.result import SolveResult
from ...core.routing import coin_change_table
from ...core.spec import MethodSpec
from ...core.topology import Ring, Topology, bidirectional_rings
from .support import (
    RoutingParams,
    connect_components,
    default_routing,
    fill_free_ports,
    heuristic_memory,
    heuristic_result,
    route_with,
    traffic_is_split,
)

log = logging.getLogger(__name__)
_TOL = 1e-9


@dataclass(frozen=True)
class TotientParams(RoutingParams):
    faithful: bool = knob(False, "Keep the published TopoOpt artifact's quirks (TotientPerms, "
                                 "TopologyFinder).")


# -- the pure rule ----------------------------------------------------------------------------
def select_permutations(
    cands: list[int], m: int, faithful: bool = False, n: int | None = None
) -> list[int]:
    """SelectPermutations: ``m`` jumps from the ascending candidate list ``cands``.

    ``n`` (the modulus, for the ``+-p`` check) defaults to ``cands[0] + cands[-1]``, which is
    ``n`` for every list made by :func:`candidates` (``m = 1`` and ``m = g - 1`` are both
    coprime to ``g``). ``faithful=True`` is the artifact's ``choose_n_geo``: ``x`` as a running
    double product compared exactly, ``+-p`` both allowed, an input error past the list; the
    default follows the rule in exact arithmetic and fixes the quirks (module docstring)."""
    if m < 0:
        raise InputError(f"degree: need a non-negative number of rings, got {m}")
    if m == 0:
        return []
    cands = sorted(cands)
    if not cands:
        raise InputError("candidates: the candidate list is empty")
    modulus = cands[0] + cands[-1] if n is None else n
    if m == 1:
        return [cands[0]]
    ratio = (cands[-1] / cands[0]) ** (1.0 / m)
    chosen: list[int] = []
    x_walk = float(cands[0])  # the artifact's walk: x_{t+1} = x_t * ratio, compared exactly
    for t in range(m):
        if faithful:
            above = [c for c in cands if c not in chosen and c >= x_walk]
            if not above:
                raise InputError(
                    f"degree: {m} rings need more than the {len(cands)} candidates (the "
                    "published artifact reads past its list); use faithful=False"
                )
            chosen.append(above[0])
            x_walk *= ratio
            continue
        x = cands[0] * ratio**t  # exact-arithmetic x_t, compared with a relative tolerance
        ok = [c for c in cands if c not in chosen and (modulus - c) % modulus not in chosen]
        above = [c for c in ok if c >= x * (1 - _TOL)]
        if above:
            chosen.append(above[0])
        elif ok:
            chosen.append(ok[-1])  # largest admissible candidate below x
        else:
            distinct = list(dict.fromkeys(chosen))
            chosen.append(distinct[(t - len(distinct)) % len(distinct)])  # parallel ring
    return chosen


def totient_jumps(n: int, d: int, faithful: bool = False) -> tuple[int, ...]:
    """TotientPerms jumps for ``d`` ports on the whole cluster ``Z_n``: ``d/2`` selected ring
    jumps, plus ``n/2`` (a perfect matching) for odd ``d`` and even ``n``."""
    if d < 0:
        raise InputError(f"degree: must be non-negative, got {d}")
    if n == 2:
        return (1,) * d  # each "ring" of two nodes is one link
    if d % 2 and faithful:
        raise InputError(f"degree: the published TotientPerms supports only even d, got {d}")
    jumps = select_permutations(candidates(n, n), d // 2, faithful, n)
    if d % 2 and n % 2 == 0:
        jumps.append(n // 2)
    return tuple(jumps)


# -- instances ----------------------------------------------------------------------------------
def _is_coset(members: tuple[int, ...], n: int) -> bool:
    k = len(members)
    if n % k:
        return False
    step = n // k
    return members[0] < step and all(m == members[0] + i * step for i, m in enumerate(members))


def _local_links(L: np.ndarray, members: tuple[int, ...], jumps: tuple[int, ...]) -> None:
    k = len(members)
    mem = np.array(members)
    idx = np.arange(k)
    for m in jumps:
        if 2 * m == k:  # matching: each pair once
            a, b = mem[idx[: k // 2]], mem[idx[: k // 2] + m]
        else:
            a, b = mem, mem[(idx + m) % k]
        np.add.at(L, (a, b), 1)
        np.add.at(L, (b, a), 1)


def _group_rings(gids, members, jumps) -> list[Ring]:
    """Ring orders of the groups ``gids`` over ``members`` along the Hamiltonian jumps (none
    when no jump is Hamiltonian on the group: see :func:`_multihop_rings`).

    Each jump's ring is a bidirectional cycle: its volume share is split evenly between the
    order and its reverse, so both directions of every duplex link carry AllReduce traffic.
    This is what the artifact does: it records ``p`` and ``n - p`` for every chosen jump and
    its simulator sends ``1 / (number of paths)`` of the ring volume along each (see the
    module docstring), so faithful and default mode agree here."""
    k = len(members)
    counts: dict[int, int] = defaultdict(int)
    for m in jumps:
        if gcd(m, k) == 1:  # Hamiltonian on the group (k = 2: the single link)
            counts[m] += 1
    total = sum(counts.values())
    return [
        ring
        for gi in gids
        for m, c in counts.items()
        for ring in bidirectional_rings(gi, tuple(members[(i * m) % k] for i in range(k)), c / total)
    ]


def _multihop_rings(gids, members, n, jumps) -> list[Ring]:
    """Rings of a group without links of its own (its traffic crosses other links).

    As the artifact's multi-hop rings (``generate_dp_topology``, "unsatisfied" group sizes): a
    coset group on a circulant with ``jumps`` is laid along the candidate ``P`` with the
    fewest coin-change hops (ties: the smallest ``P``), ``s, s + P, s + 2P, ...``; any other
    group keeps its sorted members. Either way half the volume runs each direction (the
    artifact records the coin path of ``P`` and of ``-P``)."""
    order = members
    if jumps and _is_coset(members, n):
        table = coin_change_table(n, jumps)
        hops = {p: len(table[p]) for p in candidates(n, len(members)) if table[p] is not None}
        if hops:
            p = min(hops, key=lambda q: (hops[q], q))
            order = tuple((members[0] + i * p) % n for i in range(len(members)))
    return [ring for gi in gids for ring in bidirectional_rings(gi, order)]


def _apportion(n, merged, weight, ports, faithful) -> dict[tuple[int, ...], int]:
    """Ports per merged group: whole rings by largest remainder of the proportional quota,
    then a last single port (a matching) for even groups whose members all have one free."""
    node_w = np.zeros(n)
    for key, w in weight.items():
        node_w[list(key)] += w
    quota = {key: ports * weight[key] / node_w[list(key)].max() for key in merged}
    rings = {key: floor(q / 2 + _TOL) for key, q in quota.items()}
    used = np.zeros(n, dtype=np.int64)
    for key, r in rings.items():
        used[list(key)] += 2 * r
    by_remainder = sorted(merged, key=lambda k: (rings[k] - quota[k] / 2, -weight[k], k))
    for key in by_remainder:
        if quota[key] / 2 - rings[key] > _TOL and (used[list(key)] + 2 <= ports).all():
            rings[key] += 1
            used[list(key)] += 2
    alloc = {key: 2 * r for key, r in rings.items()}
    if not faithful:  # the artifact only knows whole rings
        for key in sorted(merged, key=lambda k: (-weight[k], k)):
            if len(key) % 2 == 0 and (used[list(key)] + 1 <= ports).all():
                alloc[key] += 1
                used[list(key)] += 1
    return alloc


def merged_groups(instance: Instance) -> tuple[dict[tuple[int, ...], list[int]],
                                                dict[tuple[int, ...], float], list[Ring]]:
    """The groups with traffic merged by member set: ``(member set -> group indices, member
    set -> summed ring-edge volume, the rings of the groups without traffic)``."""
    merged: dict[tuple[int, ...], list[int]] = defaultdict(list)
    weight: dict[tuple[int, ...], float] = defaultdict(float)
    rings: list[Ring] = []
    for gi, g in enumerate(instance.allreduce):
        key = tuple(sorted(g.members))
        if g.edge_bytes > 0:
            merged[key].append(gi)
            weight[key] += g.edge_bytes
        else:
            rings.append(Ring(gi, key, 1.0))
    return merged, weight, rings


def allreduce_topology(
    instance: Instance, ports: int, faithful: bool = False
) -> tuple[np.ndarray, list[Ring], tuple[int, ...] | None]:
    """TotientPerms links for the instance's AllReduce groups using at most ``ports`` ports per
    node (see the module docstring): ``(L, rings, jumps)`` with ``jumps`` set when ``L`` is
    the circulant of those jumps."""
    n = instance.n
    if faithful and ports % 2:
        raise InputError(f"degree: the published TotientPerms supports only even d, got {ports}")
    L = np.zeros((n, n), dtype=np.int64)
    merged, weight, rings = merged_groups(instance)
    if not merged:
        jumps = totient_jumps(n, ports, faithful)
        return Topology.circulant(n, jumps).links.copy(), rings, jumps or None

    declared: list[int] = []
    group_ports = ports
    if max(len(k) for k in merged) < n and ports >= 2:
        L += Topology.circulant(n, [1]).links
        declared.append(1)
        group_ports = ports - 2
    alloc = _apportion(n, merged, weight, group_ports, faithful)
    declared_by_size: dict[int, tuple[int, ...]] = {}
    portless = []
    for key, gids in merged.items():
        k = len(key)
        jumps = totient_jumps(k, alloc[key], faithful)
        _local_links(L, key, jumps)
        own = _group_rings(gids, key, jumps)
        if own:
            rings.extend(own)
        else:
            portless.append((key, gids))
        if _is_coset(key, n) and k not in declared_by_size:
            declared_by_size[k] = tuple((n // k) * m for m in jumps)
    for js in declared_by_size.values():
        declared.extend(js)
    jumps_out: tuple[int, ...] | None = None
    if declared and (Topology.circulant(n, declared).links == L).all():
        jumps_out = tuple(declared)
    elif L.any():
        jumps_out = circulant_jumps(L)
    for key, gids in portless:
        rings.extend(_multihop_rings(gids, key, n, jumps_out))
    rings.sort(key=lambda r: r.group)
    return L, rings, jumps_out


def build(instance: Instance, faithful: bool = False) -> tuple[Topology, list[Ring]]:
    """The TotientPerms topology (all ``d`` ports) and ring orders for ``instance``."""
    L, rings, jumps = allreduce_topology(instance, instance.degree, faithful)
    before = L.copy()
    if instance.regular and (L.sum(axis=1) < instance.degree).any():
        fill_free_ports(L, instance.degree)
    if traffic_is_split(L, instance):
        connect_components(L, None if instance.regular else instance.degree)
    if (before != L).any():
        jumps = circulant_jumps(L)
    return Topology(L, jumps), rings


def solve(instance: Instance, options: SolveOptions) -> SolveResult:
    """TotientPerms topology, routed by the ``routing`` parameter or coin-change (shortest path when
    the topology is not circulant)."""
    started = time.perf_counter()
    topo, rings = build(instance, options.method.faithful)
    routing = route_with(instance, topo, rings, options, default_routing(topo))
    return heuristic_result("totientperms", instance, topo, routing, options, started)


SPEC = MethodSpec(
    "totientperms", "select", "heuristic", "heuristic", TotientParams, solve,
    "TotientPerms: d/2 coprime ring jumps (SelectPermutations), coin-change routing",
    memory=heuristic_memory)
SPEC_LP = SPEC.lp_variant().with_(
    description="TotientPerms' topology and rings, optimal fractional routing (route LP)")
