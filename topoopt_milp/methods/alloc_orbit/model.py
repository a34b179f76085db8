"""The orbit model: alloc-milp restricted to topologies that share the instance's symmetry.

Notation. ``pi(v) = v + s (mod n)`` is a symmetry of the instance (:mod:`.symmetry`), ``nb =
n / s`` blocks of ``s`` nodes, node ``v = s b + t`` of *type* ``t`` in block ``b``. A link
matrix ``L`` is *invariant* when ``L[pi(u), pi(v)] = L[u, v]``: then ``L[u, v]`` depends only
on the arc's *orbit key* ``k(u, v) = (t_u, t_v, (b_v - b_u) mod nb)``, and keys ``(t, t', j)``
and ``(t', t, -j)`` are the two directions of one link orbit, one integer ``z_o`` (the links
every node of type ``t`` has to the node ``j`` blocks on, of type ``t'``).

Model (throughput form, volumes in link-seconds ``bytes / B``)::

    max theta
    s.t. sum_{a into v} f[r, a] - sum_{a out of v} f[r, a]
           = theta D[r, v] + sum_{g, c: r in g, succ_c(r) = v} e_g y[g, c]   r < s, v != r
         sum_c y[g, c] = theta                                              each group g
         sum_{r < s} sum_{a: k(a) = k} f[r, a] <= z_{o(k)}                  each arc key k
         sum_{k from type t} z_{o(k)} = d   (<= d when not regular)          each type t
         z integer in [0, m],  f, y, theta >= 0

over every ordered pair ``a = (u, v)`` as a potential arc, ``r`` the ``s`` nodes of block 0,
``e_g`` the ring edge volume and ``c`` the group's invariant TotientPerms orders. The
communication time is ``1 / theta``.

Why this is alloc-milp on invariant topologies. Fix an invariant ``L`` and any routing with
ring shares ``y`` of congestion ``U``. Its rotations by ``pi^q`` are routings of the same
demand (the demand and the orders are invariant) with the same ``U``; their average is a
routing of congestion ``<= U`` (loads are linear, the maximum convex) that is invariant:
the commodity of source ``pi^q(r)`` is the rotation of the one of ``r``. An invariant routing
is fixed by the ``s`` sources of block 0, and the load of arc ``a`` is the sum over the
block-0 sources of their flows on the arcs of ``a``'s orbit (the rotation of source
``pi^q(r)`` onto ``r`` carries ``a`` onto another arc of the orbit, once each), which is the
capacity row above with ``theta = 1 / U``. So the optimum over invariant ``L`` equals the
best alloc-milp value over invariant topologies with these ring orders: an upper bound on
the instance's optimum, never a lower one (the optimum need not be invariant), and the
model's dual bound holds only inside that space.

Size: ``s n (n - 1)`` flow columns (65k at ``n = 128, s = 4``), ``s n + s (n - 1) + s`` rows.
With ``s = n`` (no symmetry) it is the full alloc model over the complete graph.

With the link orbits fixed (``support``: an invariant link matrix) the same model over the
matrix's arcs only is the route LP of that topology in the orbit space (about ``s n d`` flow
columns, 2k at ``n = 128, s = 4, d = 4``; solved in ~20 ms where the full route LP takes
5-10 s): the evaluation of :mod:`.search`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from scipy.sparse import coo_matrix

from ...core.backends.pulp_backend import MatrixModel
from ...core.instance import Instance
from ..formulations.ring_lp import Order


@dataclass(frozen=True)
class Orbits:
    """The link orbits of period ``s`` on ``n`` nodes (module docstring). Directed key
    ``k = (t s + t') nb + j``; ``column[k]`` is its link orbit (``-1`` for the non-arcs
    ``(t, t, 0)``); link orbit ``o`` is ``(t[o], t2[o], j[o])``, its canonical key, with
    ``matching[o]`` when it is its own mirror (``t = t'``, ``2 j = nb``: one link per node)."""

    n: int
    s: int
    column: np.ndarray
    t: np.ndarray
    t2: np.ndarray
    j: np.ndarray
    matching: np.ndarray

    @classmethod
    def of(cls, n: int, s: int) -> Orbits:
        nb = n // s
        keys = np.arange(s * s * nb)
        t, rest = np.divmod(keys, s * nb)
        t2, j = np.divmod(rest, nb)
        valid = ~((t == t2) & (j == 0))
        mirror = (t2 * s + t) * nb + (-j) % nb
        canon = np.minimum(keys, mirror)
        uniq = np.unique(canon[valid])
        column = np.full(len(keys), -1, dtype=np.int64)
        column[valid] = np.searchsorted(uniq, canon[valid])
        return cls(n, s, column, t[uniq], t2[uniq], j[uniq], mirror[uniq] == uniq)

    @property
    def size(self) -> int:
        return len(self.t)

    def key(self, u: np.ndarray, v: np.ndarray) -> np.ndarray:
        """Directed orbit keys of arcs ``(u, v)``."""
        s, nb = self.s, self.n // self.s
        return ((u % s) * s + v % s) * nb + (v // s - u // s) % nb

    def links(self, z: np.ndarray) -> np.ndarray:
        """The invariant link matrix of link-orbit values ``z`` (rounded)."""
        n = self.n
        u, v = np.nonzero(~np.eye(n, dtype=bool))
        L = np.zeros((n, n), dtype=np.int64)
        L[u, v] = np.round(np.asarray(z)[self.column[self.key(u, v)]]).astype(np.int64)
        return L

    def of_links(self, links: np.ndarray) -> np.ndarray:
        """The link-orbit values of an invariant link matrix (read off block 0)."""
        z = np.zeros(self.size, dtype=np.int64)
        u, v = np.nonzero(links[: self.s])
        z[self.column[self.key(u, v)]] = links[u, v]
        return z

    def degrees(self, z: np.ndarray) -> np.ndarray:
        """Links per node of each type: a link orbit counts once at each end type, twice at
        its type when ``t = t'`` (the two directions), once when it is a matching."""
        deg = np.zeros(self.s, dtype=np.int64)
        np.add.at(deg, self.t, z)
        np.add.at(deg, self.t2, np.where(self.matching, 0, z))
        return deg


@dataclass(frozen=True)
class OrbitModel:
    """The model of the module docstring; ``iz`` is its first link-orbit column (fixed in the
    route LP of a support), ``itheta`` the throughput column."""

    model: MatrixModel
    orbits: Orbits
    iz: int
    itheta: int

    def start(self, links: np.ndarray) -> dict[str, float]:
        """The link-orbit columns of an invariant link matrix, as a MIP start."""
        z = self.orbits.of_links(links)
        names = self.model.names
        return {names[self.iz + i]: float(z[i]) for i in range(self.orbits.size)}

    def time_s(self, x: np.ndarray) -> float:
        """The communication time ``1 / theta`` of a solution vector (``inf`` at 0)."""
        theta = float(x[self.itheta])
        return 1.0 / theta if theta > 0 else float("inf")

    @staticmethod
    def bound_time_s(bound: float | None) -> float | None:
        """The communication time the solver's dual bound certifies for the invariant
        topologies: the model minimises ``-theta``, so its bound ``-theta_max < 0`` gives
        ``1 / theta_max``; ``None`` when there is no such bound."""
        return -1.0 / bound if bound is not None and bound < 0 else None


def build(instance: Instance, s: int, orders: Mapping[int, Sequence[Order]],
          max_multiplicity: int, support: np.ndarray | None = None) -> OrbitModel:
    """The orbit model of the module docstring for period ``s`` and the invariant ring
    ``orders`` of every group with traffic; with ``support`` (an invariant link matrix) its
    route LP: the arcs of ``support`` only and the link orbits fixed to it."""
    n, d = instance.n, instance.degree
    orb = Orbits.of(n, s)
    nz = orb.size
    n_keys = int((orb.column >= 0).sum())
    row_of_key = np.full(len(orb.column), -1, dtype=np.int64)
    kv = np.flatnonzero(orb.column >= 0)
    row_of_key[kv] = np.arange(n_keys)
    Bps = instance.link_bytes_per_s

    if support is None:
        u, v = np.nonzero(~np.eye(n, dtype=bool))
    else:
        u, v = np.nonzero(support)
    A = len(u)
    akey = orb.key(u, v)
    ring_cols = [(g, c) for g in sorted(orders) for c in orders[g]]
    nf = s * A
    iy = nf
    iz = iy + len(ring_cols)
    itheta = iz + nz
    ncol = itheta + 1

    rows, cols, vals = [], [], []
    r_src = np.repeat(np.arange(s), A)
    a_idx = np.tile(np.arange(A), s)
    # conservation rows r * n + v: +1 on arcs into v, -1 on arcs out of v
    rows += [r_src * n + v[a_idx], r_src * n + u[a_idx]]
    cols += [r_src * A + a_idx] * 2
    vals += [np.ones(nf), -np.ones(nf)]
    D = instance.mp_matrix() / Bps
    rr, vv = np.nonzero(D[:s])
    keep = rr != vv
    rows.append(rr[keep] * n + vv[keep])
    cols.append(np.full(int(keep.sum()), itheta))
    vals.append(-D[rr[keep], vv[keep]])
    for ci, (g, c) in enumerate(ring_cols):
        e = instance.allreduce[g].edge_bytes / Bps
        pos = {x: i for i, x in enumerate(c)}
        src = [r for r in range(s) if r in pos]
        rows.append(np.array([r * n + c[(pos[r] + 1) % len(c)] for r in src], dtype=np.int64))
        cols.append(np.full(len(src), iy + ci))
        vals.append(np.full(len(src), -e))
    n_cons = s * n
    # share rows: sum_c y[g, c] - theta = 0
    groups = sorted(orders)
    for gi, g in enumerate(groups):
        mine = [iy + ci for ci, (h, _) in enumerate(ring_cols) if h == g]
        rows.append(np.full(len(mine) + 1, n_cons + gi))
        cols.append(np.array([*mine, itheta]))
        vals.append(np.array([1.0] * len(mine) + [-1.0]))
    r_cap = n_cons + len(groups)
    # capacity rows per directed key: block-0 flows on the key's arcs - z <= 0
    rows.append(r_cap + row_of_key[akey[a_idx]])
    cols.append(r_src * A + a_idx)
    vals.append(np.ones(nf))
    rows.append(r_cap + row_of_key[kv])
    cols.append(iz + orb.column[kv])
    vals.append(-np.ones(len(kv)))
    r_deg = r_cap + n_keys
    # degree rows per type: every directed key out of type t counts its orbit's links
    rows.append(r_deg + kv // (s * (n // s)))
    cols.append(iz + orb.column[kv])
    vals.append(np.ones(len(kv)))
    nrow = r_deg + s

    A_mat = coo_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
                       shape=(nrow, ncol)).tocsc()
    lo = np.zeros(nrow)
    up = np.zeros(nrow)
    src_rows = np.arange(s) * n + np.arange(s)  # a source's own row: free
    lo[src_rows], up[src_rows] = -np.inf, np.inf
    lo[r_cap:r_deg] = -np.inf
    lo[r_deg:] = d if instance.regular else 0
    up[r_deg:] = d
    cost = np.zeros(ncol)
    cost[itheta] = -1.0
    col_lo = np.zeros(ncol)
    col_up = np.full(ncol, np.inf)
    integer = np.zeros(ncol, dtype=bool)
    if support is None:
        col_up[iz:itheta] = max_multiplicity
        integer[iz:itheta] = True
    else:
        col_lo[iz:itheta] = col_up[iz:itheta] = orb.of_links(support)
        lo[r_deg:] = -np.inf  # the degrees are the support's
        up[r_deg:] = np.inf
    names = ([f"f{i}" for i in range(nf)] + [f"y{g}_{i}" for i, (g, _) in enumerate(ring_cols)]
             + [f"z{i}" for i in range(nz)] + ["theta"])
    model = MatrixModel(A_mat, cost, col_lo, col_up, lo, up, integer, names)
    return OrbitModel(model, orb, iz, itheta)


def columns(n: int, s: int) -> int:
    """Flow columns of the orbit model (its size: ``s n (n - 1)``)."""
    return s * n * (n - 1)
