"""Port-class bound: how many of a node's ports leave its AllReduce group, and what the rest
must carry (issue 16, item 2: the relaxation with per-node port integrality).

A node whose ``d`` ports all stay inside its group sends its model-parallel (MP) bytes out
through a neighbour; a node with ``j`` ports out of its group has only ``d - j`` arcs for the
ring bytes that arrive and leave inside it. Ring bytes may detour through another group, but
a node relays a byte between two links *out of its group* only if it has two of them. The
bound counts, per group and per number ``j`` of ports out, the nodes and the bytes their arcs
must carry, and asks for the least link capacity at which some fractional mix of these classes
carries everything. On ``mixed-n128-d4-g4-mp05`` (4 rings of 32 with 5% all-to-all MP) it is
0.06453 s against 0.05263 s for the best earlier bound (the ideal switch 0.05041 s; the best
solution known 0.06889 s).

Setting. The *parts* are the connected components of the AllReduce groups (groups that
share a node, e.g. a data-parallel group nested in a larger one, are in one part; disjoint
groups are their own parts) and, if any, the set of nodes in no group. For a node ``v`` in
part ``g``: ``R_v = sum of e_h`` over the groups ``h`` of ``v``, the ring bytes it sends to
(and receives from) its successors in every ring order of its groups, all of them in its
part (0 outside a group), ``ma_v`` / ``mb_v`` the MP bytes it sends to /
receives from its own part, ``co_v`` / ``ci_v`` those to / from other parts. ``c = B T`` is
what an arc carries in time ``T``. An arc is *internal* when both ends are in one part, else
*crossing*; ``j_v`` is the number of crossing ports of ``v`` (``j_v <= d``, so ``v`` has at most
``d - j_v`` internal out-arcs and in-arcs and ``j_v`` crossing ones). *Internal bytes* are the
ring bytes and the MP bytes within a part.

Lemma. Fix a solution of time ``T`` whose paths are simple (cutting a cycle never raises a
load). For every node ``v`` put on its arcs the following incidences (a byte on an arc):

* ``iv``: internal bytes whose destination is ``v``, arriving on an internal arc;
  ``xin_v``: on a crossing arc (``iv + xin_v = R_v + mb_v``);
* ``ov``, ``xout_v``: internal bytes whose source is ``v``, leaving on an internal / crossing
  arc (``ov + xout_v = R_v + ma_v``);
* ``a_v``: MP bytes from ``v`` to other parts leaving on a crossing arc; the other
  ``co_v - a_v`` leave on internal arcs; ``b_v``, ``ci_v - b_v`` likewise for those arriving;
* ``f_v``: MP bytes from other nodes of ``v``'s part to other parts for which ``v`` is the last
  node of the part before the first crossing arc: they arrive at ``v`` on an internal arc and
  leave on a crossing arc;
* ``h_v``: MP bytes from other parts to other nodes of ``v``'s part for which ``v`` is the first
  node of the part after the last crossing arc: they arrive on a crossing arc and leave on an
  internal one;
* relays, bytes that enter ``v`` on a crossing arc and whose destination is outside ``v``'s
  part: those that leave on a crossing arc (``rcc_v``; on two *different* links, as the path
  is simple, so ``rcc_v = 0`` unless ``j_v >= 2``), those that leave on an internal arc
  (``rci_v``), and those that entered the part on another node and leave it at ``v``
  (``ric_v``: in on an internal arc, out on a crossing arc).

These incidences are distinct (they differ in the byte's ends or in the arc), so for every
``v``::

    internal in:   R_v + mb_v - xin_v + f_v + (ci_v - b_v) + ric_v <= (d - j_v) c
    internal out:  R_v + ma_v - xout_v + h_v + (co_v - a_v) + rci_v <= (d - j_v) c
    crossing in:   b_v + h_v + xin_v + rcc_v + rci_v <= j_v c
    crossing out:  a_v + f_v + xout_v + rcc_v + ric_v <= j_v c

and per part ``g``, with sums over its nodes: every MP byte to another part leaves the part,
from its source (``a``) or through an ``f`` incidence, so ``sum f >= sum (co_v - a_v)``;
likewise ``sum h >= sum (ci_v - b_v)``; every relay segment through ``g`` that enters on one
node and leaves on another has one ``rci`` and one ``ric`` incidence, ``sum rci = sum ric``.
An internal byte of ``g`` that uses a crossing arc arrives at its destination on a crossing
arc or not, and leaves its source on one or not, but it is always relayed by a node outside
``g`` (the first node it visits outside ``g`` enters it on a crossing arc): with ``X_g`` those
bytes, ``sum xin <= X_g``, ``sum xout <= X_g`` and ``X_g <= sum over the nodes outside g of
(rcc + rci)``.

One hop. A node with ``j`` crossing ports has at most ``j`` neighbours in other parts, so at
most its ``j`` largest MP demands to other parts go in one hop (``top_out``; ``top_in`` for
those arriving). An ``a`` byte that does not (its path ``s = p_0, ..., p_k = t``, ``k >= 2``)
has an ``h`` incidence or a relay incidence: if the last entry into ``t``'s part is at a node
other than ``t``, that node has ``h``; else ``p_{k-1}`` is outside ``t``'s part, and the first
node of its part's last stretch before ``t`` was entered on a crossing arc (the stretch cannot
start at ``s``, as ``p_1`` is outside ``s``'s part) while ``t`` lies outside that part: a relay.
Likewise a ``b`` byte of more than one hop has an ``f`` or a relay incidence. With ``Y`` the
relay incidences of MP bytes::

    sum a <= sum top_out + sum h + Y,   sum b <= sum top_in + sum f + Y,
    sum_g X_g + Y <= all relays

(the detours and the MP bytes are different bytes). Nodes with ``j_v = 0`` have
``xin = xout = a = b = f = h = 0`` and no relays.

Relaxation. Summing the node rows over the nodes of part ``g`` with ``j_v = j`` gives the same
rows with ``R_g n_gj`` for the ring bytes (a class sum of ``R_v`` like the MP flows below, a
fifth flow, where ``R_v`` differs within the part), ``(d - j) c n_gj`` and ``j c n_gj`` for the
capacities and class sums for the rest, ``n_gj`` the number of such nodes
(``sum_j n_gj = |g|``). The MP of a class is tied to the values of its part's nodes: the
``n_gj`` nodes with ``j`` crossing ports are ``n_gj`` of the part's members, so for every set
``F`` of the four flows ``co``, ``ci``, ``ma``, ``mb`` the class's sum of ``sum_F`` (one value
per node, e.g. ``co_v + ma_v``, all the MP it sends) is at least the sum of the ``n_gj``
smallest and at most the sum of the ``n_gj`` largest values of ``sum_F`` over the part, for
every class ``j`` including ``0``: the first a convex piecewise-linear function of ``n_gj``
with breakpoints at the integers (the maximum of its pieces), the second a concave one (the
minimum of its pieces), both exact at integer ``n_gj``. (With only the lower side of ``co``,
``ci``, ``ma`` and ``mb`` alone for ``j = 0``, the relaxation could give the class without
crossing ports all of the part's MP inside the part and the other classes none; both sides
for every class raised ``mixed-n128-d4-g4-mp15``'s bound 0.065297 -> 0.069716 s, and the
sets of two or more flows, which keep one class from taking the largest ``co`` and the
largest ``ma`` from different nodes, to 0.070468 s.) The ``n_gj`` nodes with ``j`` ports out
send in one hop at most the ``n_gj`` largest ``top_out`` for ``j`` of the part (concave: the
minimum of its pieces). Letting the ``n_gj`` and every class sum be real and non-negative
keeps each solution feasible, so the linear system has a solution at ``c = B T`` for every
solution of time ``T``. The capacities enter as ``c n_gj``: for a fixed ``c`` the system is
linear, and a larger ``c`` only relaxes it, so the least feasible ``c`` is found by bisection;
the value returned is one the system refuses (or the ideal switch, itself a bound), hence
``T >= c / B``.

Scope: every topology with the port budget, every routing and every ring order (only ``e_g``
per member is used): ``"any"``, which covers the TotientPerms orders too.
"""

from __future__ import annotations

import itertools

import numpy as np
from scipy.optimize import linprog
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from ...core.instance import Instance
from .bisect import last_failing

# excess of a capacity row (in units of the ideal switch's capacity) still read as feasible:
# above HiGHS's tolerances on these O(1) rows, far below a bound's digits
TOL = 1e-6
# linear pieces per sorted-sum function (_pieces): the rows grow with 15 (d + 1) pieces per
# member of a part; measured on a mixed instance with n = 512, d = 8 and parts of 128: 29.4 s
# with every piece, 7.0 s with 32 (8.4 s for the single flows' sums alone, every piece)
MAX_PIECES = 32


def parts_of(instance: Instance) -> tuple[np.ndarray, np.ndarray]:
    """``(part, R)``: each node's part and its ring bytes ``R_v``. The parts are the connected
    components of the AllReduce groups (two groups that share a node are in one part) and, if
    any, the set of nodes in no group; ``R_v`` is the sum of ``e_g`` over the groups of ``v``
    (every ring successor of ``v`` is in its part, which is all the lemma asks)."""
    n = instance.n
    ring = np.zeros(n)
    grouped = np.zeros(n, dtype=bool)
    tails, heads = [], []
    for g in instance.allreduce:
        members = list(g.members)
        ring[members] += g.edge_bytes
        grouped[members] = True
        tails += members[:-1]
        heads += members[1:]
    graph = coo_matrix((np.ones(len(tails)), (tails, heads)), shape=(n, n))
    label = connected_components(graph, directed=False)[1]
    label[~grouped] = n  # the nodes in no group: one part of their own
    return np.unique(label, return_inverse=True)[1].astype(np.int64), ring


def _pieces(values: np.ndarray, largest: bool) -> list[tuple[float, float]]:
    """The linear pieces ``(c0, s)`` of ``k -> sum of the k smallest (largest) values``,
    piecewise linear in real ``k`` with breakpoints at the integers: convex for the smallest
    (the maximum of its pieces ``c0 + s k``), concave for the largest (their minimum). At most
    :data:`MAX_PIECES` of them, evenly spaced: a subset of a convex function's pieces still
    bounds it from below, and of a concave one's from above, so the rows stay valid, only
    looser between the kept breakpoints (exact up to ``MAX_PIECES`` values)."""
    a = np.sort(values)[::-1] if largest else np.sort(values)
    prefix = np.concatenate([[0.0], np.cumsum(a)])
    keep = range(len(a)) if len(a) <= MAX_PIECES else \
        np.unique(np.linspace(0, len(a) - 1, MAX_PIECES).round().astype(int))
    return [(float(prefix[i] - a[i] * i), float(a[i])) for i in keep]


def _part_sums(mp: np.ndarray, part: np.ndarray, d: int, block: int = 512
               ) -> tuple[np.ndarray, np.ndarray]:
    """Per row ``v`` of ``mp``: the sum of its entries inside ``v``'s part, and the sums of
    its ``k`` largest entries outside it, ``k = 1..d`` (an ``n x d`` array: the most a node
    with ``k`` crossing ports sends in one hop). Rows go in blocks: no ``n x n`` temporary."""
    n = mp.shape[0]
    k = min(d, n)
    own, top = np.zeros(n), np.zeros((n, d))
    for lo in range(0, n, block):
        rows = mp[lo:lo + block].copy()
        same = part[lo:lo + block, None] == part[None, :]
        own[lo:lo + block] = np.where(same, rows, 0.0).sum(axis=1)
        rows[same] = 0.0
        largest = -np.sort(-np.partition(rows, n - k, axis=1)[:, n - k:], axis=1)
        top[lo:lo + block, :k] = np.cumsum(largest, axis=1)
    top[:, k:] = top[:, k - 1:k]
    return own, top


class _System:
    """The linear rows of the lemma for one instance; :meth:`excess` at a capacity."""

    def __init__(self, instance: Instance, part: np.ndarray, ring: np.ndarray, scale: float):
        d = instance.degree
        mp = instance.mp_matrix() / scale
        ring = ring / scale
        own_out, top_out = _part_sums(mp, part, d)
        own_in, top_in = _part_sums(mp.T, part, d)
        total_out, total_in = mp.sum(axis=1), mp.sum(axis=0)
        one_hop = ({}, {})  # the a / b incidences of one hop, per (part, class)
        self.index: dict[tuple, int] = {}
        # rows: (terms {var: coef}, the coefficient of c on n (a dict), rhs)
        self.ub: list[tuple[dict, dict, float]] = []
        self.eq: list[tuple[dict, float]] = []
        relays: dict[int, list[int]] = {}
        parts = np.unique(part)
        for g in parts:
            mem = np.flatnonzero(part == g)
            flows = {"co": np.maximum(total_out[mem] - own_out[mem], 0.0),
                     "ci": np.maximum(total_in[mem] - own_in[mem], 0.0),
                     "ma": own_out[mem], "mb": own_in[mem]}
            if np.ptp(ring[mem]) > 1e-12 * max(float(ring[mem].max()), 1.0):
                # members of overlapping groups: R_v varies, so it is a class sum too
                flows["rg"] = ring[mem]

                def rings(j, g=g):
                    return {self.v("rg", g, j): 1.0}
            else:
                def rings(j, nodes=float(ring[mem[0]]), g=g):
                    return {self.v("n", g, j): nodes}
            self.eq.append(({self.v("n", g, j): 1.0 for j in range(d + 1)}, float(len(mem))))
            for name, vals in flows.items():
                self.eq.append(({self.v(name, g, j): 1.0 for j in range(d + 1)}, float(vals.sum())))
            # every class, every set F of the flows: the class's sum of sum_F lies between the
            # sums of the n smallest and the n largest values of sum_F over the part's nodes
            for size in range(1, len(flows) + 1):
                for F in itertools.combinations(flows, size):
                    vals = sum(flows[name] for name in F)
                    lower, upper = _pieces(vals, largest=False), _pieces(vals, largest=True)
                    for j in range(d + 1):
                        nj, cols = self.v("n", g, j), [self.v(name, g, j) for name in F]
                        for c0, s in lower:
                            self.ub.append(({nj: s, **dict.fromkeys(cols, -1.0)}, {}, -c0))
                        for c0, s in upper:
                            self.ub.append(({**dict.fromkeys(cols, 1.0), nj: -s}, {}, c0))
            n0 = self.v("n", g, 0)
            self.ub.append(({**rings(0), self.v("co", g, 0): 1.0, self.v("ma", g, 0): 1.0},
                            {n0: -d}, 0.0))
            self.ub.append(({**rings(0), self.v("ci", g, 0): 1.0, self.v("mb", g, 0): 1.0},
                            {n0: -d}, 0.0))
            f_sum = {self.v("co", g, 0): 1.0}
            h_sum = {self.v("ci", g, 0): 1.0}
            relays[g] = []
            for j in range(1, d + 1):
                nj = self.v("n", g, j)
                a, b = self.v("a", g, j), self.v("b", g, j)
                f, h = self.v("f", g, j), self.v("h", g, j)
                xi, xo = self.v("xin", g, j), self.v("xout", g, j)
                rci, ric = self.v("rci", g, j), self.v("ric", g, j)
                co, ci = self.v("co", g, j), self.v("ci", g, j)
                cross_in = {b: 1.0, h: 1.0, xi: 1.0, rci: 1.0}
                cross_out = {a: 1.0, f: 1.0, xo: 1.0, ric: 1.0}
                if j >= 2:  # a relay between two crossing links needs two of them
                    rcc = self.v("rcc", g, j)
                    cross_in[rcc] = cross_out[rcc] = 1.0
                    relays[g].append(rcc)
                relays[g].append(rci)
                self.ub += [
                    ({**rings(j), self.v("mb", g, j): 1.0, xi: -1.0, f: 1.0, ci: 1.0, b: -1.0,
                      ric: 1.0}, {nj: -(d - j)}, 0.0),
                    ({**rings(j), self.v("ma", g, j): 1.0, xo: -1.0, h: 1.0, co: 1.0, a: -1.0,
                      rci: 1.0}, {nj: -(d - j)}, 0.0),
                    (cross_in, {nj: -j}, 0.0),
                    (cross_out, {nj: -j}, 0.0),
                    ({a: 1.0, co: -1.0}, {}, 0.0),
                    ({b: 1.0, ci: -1.0}, {}, 0.0),
                ]
                f_sum.update({co: 1.0, a: -1.0, f: -1.0})
                h_sum.update({ci: 1.0, b: -1.0, h: -1.0})
            self.ub += [(f_sum, {}, 0.0), (h_sum, {}, 0.0)]
            for j in range(1, d + 1):
                for side, top in enumerate((top_out, top_in)):
                    col = self.v("one_hop", side, g, j)
                    one_hop[side][col] = 1.0
                    for c0, s in _pieces(top[mem, j - 1], largest=True):
                        self.ub.append(({col: 1.0, self.v("n", g, j): -s}, {}, c0))
            self.eq.append(({**{self.v("rci", g, j): 1.0 for j in range(1, d + 1)},
                             **{self.v("ric", g, j): -1.0 for j in range(1, d + 1)}}, 0.0))
            for name in ("xin", "xout"):
                self.ub.append(({**{self.v(name, g, j): 1.0 for j in range(1, d + 1)},
                                 self.v("X", g): -1.0}, {}, 0.0))
        # the detours of g are relayed outside g (X_g + relays in g <= all relays), and all
        # of them by some relay; "all relays" is one column, so each row stays short
        every = self.v("relays")
        self.eq.append(({every: 1.0, **{k: -1.0 for g in parts for k in relays[g]}}, 0.0))
        for g in parts:
            self.ub.append(({self.v("X", g): 1.0, **{k: 1.0 for k in relays[g]}, every: -1.0},
                            {}, 0.0))
        mp_relays = self.v("mp_relays")
        self.ub.append(({**{self.v("X", g): 1.0 for g in parts}, mp_relays: 1.0, every: -1.0},
                        {}, 0.0))
        # the one-hop rows: a byte of an a / b incidence that is not one hop has an h / f or
        # a relay incidence
        classes = [(g, j) for g in parts for j in range(1, d + 1)]
        for side, (own, other) in enumerate((("a", "h"), ("b", "f"))):
            self.ub.append(({**{self.v(own, g, j): 1.0 for g, j in classes},
                             **{self.v(other, g, j): -1.0 for g, j in classes},
                             **{k: -1.0 for k in one_hop[side]}, mp_relays: -1.0}, {}, 0.0))
        self._freeze()

    def v(self, *key) -> int:
        return self.index.setdefault(key, len(self.index))

    def _freeze(self) -> None:
        """The rows as sparse matrices, built once: the capacity rows are ``A0 + c A1`` with
        the excess column ``s`` (the last) on every row that has a capacity."""
        slack = len(self.index)
        self.a0 = _sparse([{**t, slack: -1.0} if cap else t for t, cap, _ in self.ub], slack + 1)
        self.a1 = _sparse([cap for _, cap, _ in self.ub], slack + 1)
        self.b_ub = np.array([rhs for *_, rhs in self.ub])
        self.a_eq = _sparse([t for t, _ in self.eq], slack + 1)
        self.b_eq = np.array([rhs for _, rhs in self.eq])
        self.cost = np.zeros(slack + 1)
        self.cost[slack] = 1.0

    def excess(self, c: float) -> float:
        """The least common excess ``s`` of the capacity rows at capacity ``c`` (every row
        ``load <= cap + s``: always solvable, which keeps HiGHS away from the ill-posed pure
        feasibility problem), less ``TOL``; positive when the rows cannot hold."""
        res = linprog(self.cost, A_ub=self.a0 + c * self.a1, b_ub=self.b_ub, A_eq=self.a_eq,
                      b_eq=self.b_eq, bounds=(0, None), method="highs")
        if res.status != 0:
            raise RuntimeError(f"port-class bound: LP status {res.status}: {res.message}")
        return float(res.x[-1]) - TOL


def _sparse(rows: list[dict], width: int):
    """``rows`` (one ``{column: coefficient}`` each) as a CSR matrix."""
    r = [i for i, row in enumerate(rows) for _ in row]
    col = [k for row in rows for k in row]
    val = [x for row in rows for x in row.values()]
    return coo_matrix((val, (r, col)), shape=(len(rows), width)).tocsr()


def port_class_bound(instance: Instance) -> float:
    """The port-class bound (module docstring) in seconds, valid in every ring scope; 0 when
    there is nothing to send."""
    d, B = instance.degree, instance.link_bytes_per_s
    if instance.total_bytes() <= 0 or d < 1:
        return 0.0
    found = parts_of(instance)
    out, inn = instance.node_out_in_bytes()
    ideal = float(max(out.max(), inn.max())) / d  # c of the ideal switch, a bound itself
    system = _System(instance, *found, scale=ideal)  # bytes in units of `ideal`: rows O(1)
    if system.excess(1.0) <= 0:
        return ideal / B
    # refused by the rows, so below every solution's capacity (bisect.py)
    c = last_failing(system.excess, 1.0, 2.0, rel=1e-9, steps=40, cap=1e6)
    if not np.isfinite(c):  # every byte fits on crossing arcs long before: a modelling error
        raise RuntimeError(f"{instance.name}: port-class rows unsolvable up to 1e6 x the ideal")
    return c * ideal / B
