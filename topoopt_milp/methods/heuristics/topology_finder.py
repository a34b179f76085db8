"""TopologyFinder: degree split, TotientPerms rings for AllReduce, Blossom rounds for MP.

The algorithm (DESIGN.md section 4, after the published TopoOpt artifact):

1. **Degree split** (:func:`degree_split`) of the ``d`` ports of every server between
   AllReduce (``d_AR``) and model-parallel traffic (``d_MP = d - d_AR``):

   * ``proportional`` (the paper): ``x = d T_AR / (T_AR + T_MP)``; ``d_AR = round(x)``
     (halves away from zero), plus one when odd ("made even"), at least 2 when there is
     AllReduce traffic and at most ``d`` (its largest even number for odd ``d``); no
     AllReduce traffic gives ``d_MP = d``, no MP traffic gives ``d_AR = d``. The traffic
     "times" ``T_AR`` and ``T_MP`` are the bytes each kind injects per iteration
     (:meth:`Instance.allreduce_bytes`, :meth:`Instance.mp_bytes`): at a common link rate
     they are proportional to the time each kind needs.
   * ``all_ar`` (the released code's last version): ``d_AR = d``; MP traffic is forwarded
     over the AllReduce rings (without AllReduce traffic: the plain TotientPerms circulant
     ``totient_jumps(n, d)``).

2. **AllReduce links**: :func:`~topoopt_milp.methods.heuristics.totient.allreduce_topology` with
   ``d_AR`` ports (TotientPerms per group; the ``+-1`` connectivity ring when the largest
   group is not the whole cluster).

3. **MP links**: ``d_MP`` rounds of maximum-weight matching (Edmonds' Blossom,
   :func:`networkx.max_weight_matching` with ``maxcardinality=True``, i.e. a maximum-weight
   matching among the maximum-cardinality ones: the "perfect matching" of the paper whenever
   the positive-demand pairs admit one). The weight of a pair is its symmetrised MP demand
   ``w_ij = D_ij + D_ji``; after the pair gets its ``c``-th link the weight becomes
   ``w_ij / (c + 1)`` (i.e. it is scaled by ``c / (c + 1)``), so heavy pairs get parallel
   links in diminishing proportion. Each round adds at most one link per node, so the port
   budget ``d_AR + d_MP = d`` is never exceeded. The matching graph holds only pairs with
   positive demand.

   Dense demand: networkx's Blossom is pure Python, and on a dense 128-node demand (8128
   pairs) six rounds took 8 s (about 1 s per round on an idle machine, more on later,
   flatter rounds). When there are more than ``16 n`` positive pairs each round therefore
   matches on the union of every node's ``K = max(16, 2 d_MP)`` heaviest pairs by current
   weight (option ``matching_top_k``: ``"auto"`` (default), ``"all"``, or an int ``K``).
   Measured at n = 128, six rounds: uniform random demand gave *identical* links to the
   all-pairs rounds in 0.7 s instead of 8.2 s; log-normal demand gave a slightly higher
   decayed matched weight (8.5452e10 vs 8.5447e10; the rounds are greedy, so neither is
   optimal over all rounds) in 1.4 s instead of 8.7 s. A node whose ``K`` pairs are all
   taken may stay unmatched in a round; its port is filled in step 4.

   Large clusters (a documented size switch). networkx's Blossom costs about ``n^3``: one
   round on 8 pairs per node took 3.2 s at n = 300, 107 s at n = 1000 and 474 s at n = 2000
   (2 shared cores, load 13), so at the documented maximum n = 10^4 the default split never
   finished. Above ``BLOSSOM_MAX_N`` nodes (option ``matching``: ``"auto"``, default;
   ``"blossom"`` or ``"greedy"`` force one) each round is the **greedy matching**: the pairs
   by current weight, heaviest first (ties by ``(i, j)``), each taken when both ends are
   still free. Its guarantees, weaker than Blossom's and the reason for the switch: it is a
   *maximal* matching (no pair with demand has both ends free after the round, so its
   cardinality is at least half the maximum) and its weight is at least half the maximum
   weight (every pair of an optimal matching shares an end with a heavier-or-equal greedy
   pair, and each greedy pair is charged at most twice). Each round still adds at most one
   link per node, so the port budget holds. It works on the demand pairs themselves (no
   dense ``n x n`` weight matrices), in ``O(m log m)`` per round for ``m`` pairs. Measured
   at n = 10^4 (d = 8, 80,000 MP pairs, two groups of 5000; ``bench_limits_large.py``,
   2 shared cores at load 4.5-4.8): the whole ``solve -m topologyfinder`` process 35.4 s
   wall, 23.5 s CPU, 2.73 GB peak RSS.

4. **Completion.** On a regular instance the ports still free (nodes without MP demand,
   odd-sized groups, ...) are filled by
   :func:`~topoopt_milp.methods.heuristics.support.fill_free_ports`. If some demand or AllReduce
   group then spans two components, the components are joined (over free ports on
   non-regular instances, else by degree-preserving 2-swaps,
   :func:`~topoopt_milp.methods.heuristics.support.connect_components`); components that hold all
   of their own traffic are left alone, since joining them costs capacity.

Routing defaults to coin-change when the final topology is circulant (``all_ar`` on coset
groups), shortest path otherwise.

What the artifact does (hipersys-team/FlexFlow, ``src/runtime/network.cc``, class ``SpMulMat``)
    * ``get_dp_mp_degree``: in the released version (HEAD, 2022-06-14) ``dp = d, mp = 0``
      (``all_ar`` here); the proportional rule is commented out there and was live up to
      commit ``0a8823d8`` (2022-04-09): ``dp = lround(d T_DP / (T_DP + T_MP))``, ``mp =
      lround(d T_MP / (...))``, an odd ``dp`` moves one port from ``mp``, ``dp = 0`` becomes
      2. ``T_DP = sum_g S_g (2 k_g - 1)`` (``S`` the AllReduce task's size), ``T_MP`` the MP
      bytes.
    * ``generate_dp_topology``: groups are aggregated by *size* (and assumed to be cosets:
      rings are laid from every start ``0 .. n/g - 1``); sizes are visited by volume,
      heaviest first, and get ``nlink = total * dp / volume_g`` ports, which is ``>= dp`` for
      the heaviest size, so that size takes all ``dp`` ports. Unless that size is ``n``, 2 of
      them go to a whole-cluster ring (``choose_n_geo(candidates(n), 1)``: jump 1). With
      ``dp = 2`` the sub-group sizes thus keep no ports. A size without rings gets a
      *multi-hop ring*: of its candidates ``P`` the one with the shortest coin-change path
      over all chosen jumps and their negatives (the first in ascending order on ties), and
      the path of ``-P`` too; the simulator splits the volume evenly over both.
    * ``generate_mp_matching``: ``mp`` rounds of ``SolveMinimumCostPerfectMatching`` on the
      complete graph with cost ``max D - D``, on a matrix holding the MP links only; after
      its ``c``-th link a pair's demand is scaled by ``c / (c + 1)``. The cost of the pair
      ``i < j`` is assigned for ``(i, j)`` and then overwritten for ``(j, i)``: the weight is
      ``D_ji`` alone. ``connect_topology`` returns the sum of both matrices (its repair is
      compiled out). DP traffic follows the fixed coin paths, MP traffic BFS shortest paths.

Departures from the published artifact (``faithful=True`` keeps those marked *faithful*)
    * The split measures AllReduce by its ring bytes ``2 (k-1) S`` (the artifact's
      ``S (2k - 1)`` overcounts by ``(2k - 1)/(2k - 2)``; *faithful*) and sets
      ``d_MP = d - d_AR`` (the artifact's separate ``lround`` can give ``d + 1`` ports when
      ``x`` ends in ``.5``).
    * The matching weight is ``D_ij + D_ji`` (*faithful*: ``D_ji`` for ``i < j``).
    * The Blossom rounds ask for maximum cardinality first (perfect matchings where possible)
      and only over positive-demand pairs (each node's ``K`` heaviest on dense demand);
      zero-demand ports are filled afterwards by the greedy port filler instead of
      zero-weight matching edges (same port usage, far smaller matching graphs).
    * Connectivity repair is an addition: the artifact assumes the AllReduce rings connect
      the graph, which fails when ``d_AR = 0``.
    * Dense demand is matched on each node's ``K`` heaviest pairs (see step 3); ``faithful``
      mode matches on all positive pairs.
    * AllReduce groups are not aggregated by size: overlapping groups share a node's ports in
      proportion to their volume (:mod:`~topoopt_milp.methods.heuristics.totient`), where the
      artifact gives all of them to the heaviest size. The two agree when the groups are one
      family of disjoint cosets.
    * Routing (default): every commodity, AllReduce ring edges included, takes a shortest path
      on the final graph (MP links included); ``routing="lp"`` optimises it.

Coset groups plus MP, small ``d_AR`` (issue 11)
    With ``d_AR = 2`` and groups smaller than the cluster, the ``+-1`` ring takes both
    AllReduce ports (as in the artifact) and every coset ring edge ``s -> s + n/g`` crosses
    ``n/g`` links of that ring. Measured with ``benchmarks/bench_mixed_tf.py`` (4-member
    coset groups of 1 GB, dense uniform MP at 45 % of the bytes, ``d = 4``): TopologyFinder
    0.316 s vs TotientPerms 0.148 s at ``n = 16`` (LP routing 0.151 vs 0.093), 0.508 vs
    0.225 s at ``n = 64`` (LP 0.204 vs 0.205). Giving the two ports to the groups' own rings
    instead (no ``+-1`` ring; the matchings connect the graph) measured 0.142 s and 0.163 s
    (LP 0.098, 0.119) but is not the artifact's rule, so it is not done. Two defects that
    made this case worse are fixed: the split rounded ``x = 2.8`` and ``2.6`` (MP at 30 and 35 %)
    to the nearest even 2 where the artifact's rule gives 4 (TopologyFinder then equals
    TotientPerms), and port-less groups ran their ring one way at share 1.0 where the
    artifact uses ``+-P`` (n = 16, 45 % MP: 0.456 s -> 0.316 s).
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass

import networkx as nx
import numpy as np

from ...core.circulant import circulant_jumps
from ...core.errors import InputError
from ...core.instance import Instance
from ...core.params import SolveOptions, knob
from ...core.result import SolveResult
from ...core.spec import MethodSpec
from ...core.topology import Topology
from .support import (
    connect_components,
    default_routing,
    fill_free_ports,
    heuristic_memory,
    heuristic_result,
    route_with,
    traffic_is_split,
)
from .totient import TotientParams, allreduce_topology

log = logging.getLogger(__name__)
SPLITS = ("proportional", "all_ar")
MATCHINGS = ("auto", "blossom", "greedy")
BLOSSOM_MAX_N = 256  # exact Blossom rounds up to this many nodes (module docstring, step 3)


@dataclass(frozen=True)
class TopologyFinderParams(TotientParams):
    split: str = knob("proportional", "TopologyFinder degree split between AllReduce and MP: "
                                      "proportional (the paper) or all_ar (the released code).",
                      choices=SPLITS)
    matching_top_k: int | str = knob(
        "auto", "TopologyFinder Blossom rounds on each node's K heaviest pairs: auto, all, or K.",
        choices=("auto", "all"), minimum=1)
    matching: str = knob(
        "auto", f"TopologyFinder MP rounds: auto (Blossom up to n = {BLOSSOM_MAX_N}, greedy "
        "above), blossom (exact), greedy (1/2-approximate, maximal).", choices=MATCHINGS)


def degree_split(
    instance: Instance, mode: str = "proportional", faithful: bool = False
) -> tuple[int, int]:
    """``(d_AR, d_MP)`` for the split ``mode`` (see the module docstring).

    ``proportional``: ``x = d T_AR / (T_AR + T_MP)``, ``d_AR = round(x)`` with halves away
    from zero, plus one when odd, at least 2, at most ``d`` (the largest even number
    ``<= d`` for odd ``d``). ``faithful`` measures ``T_AR`` as the artifact does,
    ``sum_g S_g (2 k_g - 1)``, instead of the ring bytes ``sum_g 2 (k_g - 1) S_g``."""
    d = instance.degree
    if mode == "all_ar":
        return d, 0
    if mode != "proportional":
        raise InputError(f"split: unknown degree split {mode!r} (known: {', '.join(SPLITS)})")
    if faithful:
        t_ar = sum(g.bytes * (2 * len(g.members) - 1) for g in instance.allreduce)
    else:
        t_ar = instance.allreduce_bytes()
    t_mp = instance.mp_bytes()
    if t_ar <= 0:
        return 0, d
    if t_mp <= 0:
        return d, 0
    d_ar = math.floor(d * t_ar / (t_ar + t_mp) + 0.5)  # C's lround for x >= 0
    d_ar += d_ar % 2  # "made even": odd rounds up, as the artifact's bidirectional rings need
    d_ar = min(max(d_ar, 2), d - d % 2 if d > 1 else d)
    return d_ar, d - d_ar


def mp_matching_links(
    mp: np.ndarray, rounds: int, links: np.ndarray | None = None, top_k: int | None = None,
    faithful: bool = False,
) -> np.ndarray:
    """``rounds`` Blossom rounds on the symmetrised demand ``mp + mp.T`` (see the module
    docstring); returns the MP link matrix (added to ``links`` in place when given).

    ``top_k`` restricts each round's matching graph to the union of every node's ``top_k``
    heaviest pairs by current weight (a speed/quality trade-off; ``None``: every pair with
    positive demand, the exact rounds). ``faithful`` weighs the pair ``i < j`` by ``D_ji``
    alone, as the artifact's matching costs do."""
    n = mp.shape[0]
    L = np.zeros((n, n), dtype=np.int64) if links is None else links
    w = np.tril(mp) + np.tril(mp).T if faithful else mp + mp.T
    if rounds <= 0 or not (w > 0).any():
        return L
    current = w.astype(float)  # w / (c + 1) after c MP links
    count = np.zeros((n, n), dtype=np.int64)
    g = _matching_graph(current, None) if top_k is None else None
    for r in range(rounds):
        if top_k is not None:
            g = _matching_graph(current, top_k)
        matching = nx.max_weight_matching(g, maxcardinality=True)
        if not matching:
            break
        for i, j in matching:
            L[i, j] += 1
            L[j, i] += 1
            count[i, j] += 1
            current[i, j] = current[j, i] = w[i, j] / (count[i, j] + 1)
            g[i][j]["weight"] = float(current[i, j])
        log.debug("Blossom round %d: %d links", r, len(matching))
    return L


def greedy_matching_links(
    instance: Instance, rounds: int, links: np.ndarray, faithful: bool = False
) -> int:
    """``rounds`` greedy matching rounds (module docstring, step 3: the size switch) on the
    symmetrised MP demand of ``instance``, with the same decay ``w / (c + 1)`` as the Blossom
    rounds; links are added to ``links`` in place. Returns the number of links added."""
    n = instance.n
    pairs: dict[tuple[int, int], float] = {}
    for s, t, b in instance.mp:
        if b <= 0 or (faithful and s < t):
            continue  # faithful: the pair i < j weighs D_ji alone
        key = (min(s, t), max(s, t))
        pairs[key] = pairs.get(key, 0.0) + b
    if rounds <= 0 or not pairs:
        return 0
    ends = np.array(list(pairs), dtype=np.int64).reshape(-1, 2)
    w = np.array(list(pairs.values()))
    count = np.zeros(len(w), dtype=np.int64)
    added = 0
    for r in range(rounds):
        current = w / (count + 1)
        order = np.lexsort((ends[:, 1], ends[:, 0], -current))
        free = np.ones(n, dtype=bool)
        taken = []
        for e in order.tolist():
            i, j = ends[e]
            if free[i] and free[j]:
                free[i] = free[j] = False
                taken.append(e)
        if not taken:
            break
        sel = np.array(taken)
        links[ends[sel, 0], ends[sel, 1]] += 1
        links[ends[sel, 1], ends[sel, 0]] += 1
        count[sel] += 1
        added += len(sel)
        log.debug("greedy round %d: %d links", r, len(sel))
    return added


def _matching_graph(weight: np.ndarray, top_k: int | None) -> nx.Graph:
    mask = np.triu(weight, 1) > 0
    if top_k is not None and top_k < weight.shape[0] - 1:
        top = np.argpartition(-weight, top_k, axis=1)[:, :top_k]
        keep = np.zeros_like(mask)
        keep[np.repeat(np.arange(weight.shape[0]), top_k), top.ravel()] = True
        mask &= keep | keep.T
    i_idx, j_idx = np.nonzero(mask)
    g = nx.Graph()
    g.add_weighted_edges_from(
        (int(i), int(j), float(weight[i, j])) for i, j in zip(i_idx, j_idx)
    )
    return g


def matching_top_k(mp: np.ndarray, rounds: int, option: int | str | None = "auto") -> int | None:
    """Resolve the ``matching_top_k`` option: ``"auto"`` (default) keeps every positive pair
    while they number at most ``16 n`` and otherwise keeps each node's
    ``max(16, 2 rounds)`` heaviest; ``"all"`` always keeps every pair; an int is used as is."""
    if option is None or option == "auto":
        n = mp.shape[0]
        pairs = int(np.count_nonzero(np.triu(mp + mp.T, 1) > 0))
        return max(16, 2 * rounds) if pairs > 16 * n else None
    if option == "all":
        return None
    if isinstance(option, bool) or not isinstance(option, int) or option < 1:
        raise InputError(
            f"matching_top_k: expected 'auto', 'all' or a positive integer, got {option!r}"
        )
    return option


def matching_kind(instance: Instance, option: str = "auto") -> str:
    """``"blossom"`` or ``"greedy"`` for the ``matching`` option (``auto``: Blossom up to
    ``BLOSSOM_MAX_N`` nodes)."""
    if option not in MATCHINGS:
        raise InputError(f"matching: expected one of {', '.join(MATCHINGS)}, got {option!r}")
    if option == "auto":
        return "blossom" if instance.n <= BLOSSOM_MAX_N else "greedy"
    return option


def build(
    instance: Instance, split: str = "proportional", faithful: bool = False,
    top_k: int | str | None = "auto", matching: str = "auto",
) -> tuple:
    """TopologyFinder topology and AllReduce ring orders:
    ``(Topology, rings, (d_AR, d_MP), top_k used)``; ``top_k``: see :func:`matching_top_k`
    (``"greedy"`` when the greedy rounds ran, :func:`matching_kind`)."""
    d_ar, d_mp = degree_split(instance, split, faithful)
    L, rings, jumps = allreduce_topology(instance, d_ar, faithful)
    k = None
    if d_mp > 0 and matching_kind(instance, matching) == "greedy":
        greedy_matching_links(instance, d_mp, L, faithful)
        k, jumps = "greedy", None
    elif d_mp > 0:
        mp = instance.mp_matrix()
        k = matching_top_k(mp, d_mp, top_k)
        mp_matching_links(mp, d_mp, L, k, faithful)
        jumps = None
    if instance.regular and (L.sum(axis=1) < instance.degree).any():
        fill_free_ports(L, instance.degree)
        jumps = None
    if traffic_is_split(L, instance):
        before = L.copy()
        connect_components(L, None if instance.regular else instance.degree)
        if (before != L).any():
            jumps = None
    if jumps is None and L.any():
        jumps = circulant_jumps(L)
    return Topology(L, jumps), rings, (d_ar, d_mp), k


def solve(instance: Instance, options: SolveOptions) -> SolveResult:
    """TopologyFinder with the ``split`` parameter; routed by ``routing`` or the default.

    ``matching_top_k`` (``"auto"``, ``"all"`` or an int) controls the
    sparsification of the Blossom rounds (see :func:`matching_top_k`); ``faithful`` matches
    on all pairs unless the option says otherwise."""
    started = time.perf_counter()
    option = options.method.matching_top_k
    if option == "auto" and options.method.faithful:
        option = "all"  # the artifact matches on every pair
    p = options.method
    topo, rings, (d_ar, d_mp), k = build(instance, p.split, p.faithful, option, p.matching)
    routing = route_with(instance, topo, rings, options, default_routing(topo))
    kind = ("none" if d_mp == 0 else "greedy" if k == "greedy" else "all pairs" if k is None
            else f"top-{k}")
    return heuristic_result(
        "topologyfinder", instance, topo, routing, options, started,
        message=f"split={options.method.split} d_AR={d_ar} d_MP={d_mp} matching={kind}",
    )


SPEC = MethodSpec(
    "topologyfinder", "alloc", "heuristic", "heuristic", TopologyFinderParams, solve,
    "TopologyFinder: degree split, TotientPerms for AllReduce, Blossom rounds for MP",
    memory=heuristic_memory)
SPEC_LP = SPEC.lp_variant().with_(
    description="TopologyFinder's topology and rings, optimal fractional routing (route LP)")
