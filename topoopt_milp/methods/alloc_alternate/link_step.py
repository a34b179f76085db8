"""The topology step of alloc-alternate: the best integer link matrix for fixed arc loads.

Problem. Given the directed arc loads ``W`` (bytes, ``n x n``) of a routing, the port budget
``d`` (``sum_j L_ij = d`` on regular instances, ``<= d`` otherwise) and the multiplicity cap
``c`` (``L_ij <= c``), find an integer symmetric ``L`` with zero diagonal minimising::

    T(L) = max over arcs a with W_a > 0 of  W_a / (L_a B)       (infinite if some L_a = 0)

i.e. the communication time of the *same* routing on ``L``. A duplex link serves both
directions, so only the pair load ``w_ij = max(W_ij, W_ji)`` matters.

Exact binary search. ``T(L) <= T`` iff ``L_ij >= l_ij(T) = ceil(w_ij / (T B))`` on every pair
with ``w_ij > 0``. Feasibility of a target ``T`` (some valid ``L >= l(T)`` exists) is monotone
in ``T`` (``l`` only shrinks as ``T`` grows), and the optimum ``T*`` is attained by a pair at
its bound, so ``T* = w_ij / (m B)`` for some pair and ``m in 1..c``: a binary search over
these finitely many values with an exact feasibility test gives ``T*`` exactly.

Feasibility of ``T``: ``l_ij <= c`` and ``sum_j l_ij <= d`` for every ``i``; that is all on a
non-regular instance (take ``L = l``). A regular instance must also complete ``l`` to degree
exactly ``d``: an integer symmetric ``X >= 0``, zero diagonal, ``X_ij <= c - l_ij``, with row
sums the residual degrees ``r_i = d - sum_j l_ij``.

* **Cap ``c >= d``** (the default ``c = d``): the cap is implied, since ``X_ij <= min(r_i,
  r_j)`` gives ``l_ij + X_ij <= l_ij + r_i <= d``. So ``X`` is any loopless multigraph with
  degrees ``r``, which exists iff ``sum r`` is even and ``max r <= sum r / 2``.
  *Proof.* Necessity: every link has two ends, and the ``r_k`` links at ``k`` end at other
  nodes, so ``r_k <= sum r - r_k``. Sufficiency by induction on ``sum r``: call ``k`` tight
  when ``r_k = sum r / 2``. At most two nodes are tight, and if two are, they are the only
  nodes with ``r > 0``. Add one link ``(i, j)`` between two nodes with ``r > 0`` that
  contains every tight node (possible: a tight ``k`` has ``r_k >= 1`` and the other nodes
  carry ``sum r / 2 >= 1``). Afterwards the half-sum ``h = sum r / 2`` drops by 1; a node
  outside ``{i, j}`` was not tight, so ``r < h`` and, both being integers, ``r <= h - 1``;
  ``r_i`` and ``r_j`` drop by one. The condition holds again. :func:`_complete_greedy` is
  this induction (it picks, among the admissible links, the one with the highest key).
* **Cap ``c < d``**: the completion is a capacitated perfect b-matching (an ``r``-factor of the
  multigraph with ``c - l_ij`` copies of each pair). It is decided exactly by a small integer
  program solved by HiGHS (:func:`_complete_capped`): exact, but not claimed polynomial
  (polynomial algorithms go through Tutte's reduction to perfect matching, which would need a
  general-graph matching far larger than networkx handles at ``n = 128``). A solver that stops
  without an answer counts as infeasible, so the search can only end at a larger ``T``, never
  at an invalid ``L``.

Spare ports. Links beyond ``l(T*)`` cannot lower ``T*`` (it is optimal) but give the next
routing step room. They go one at a time to an eligible pair (free ports at both ends; on a
regular instance only links that keep the completion possible, the tight-node rule of the
proof), chosen by

1. the highest ``value_ij / (1 + a_ij)`` when a ``value`` is given, ``a_ij`` the spare links
   the pair already got in this step. With ``value`` the route LP's dual gain of one more
   link (see :class:`.ring_lp.RingRoute`: ``U`` falls by about ``U value_ij`` per link, to
   first order) this spends the ports where the LP says they are worth most; the division
   models diminishing returns. Values within ``1e-6`` count as equal (LP accuracy);
2. then the highest byte key ``max(w_ij, p_ij) / (L_ij + 1)``: the pair utilisation (bytes
   per link) after the extra link, where ``p_ij`` is a ``priority`` in bytes for pairs the
   routing does not load (e.g. their direct demand). This is water-filling: the busiest
   pairs are relieved first;
3. then the smallest ``(i, j)``.

With ``c < d`` the integer program maximises the normalised value plus ``1e-3`` times the
normalised byte key of each pair's first extra link instead (:func:`_complete_capped`).
Either way ``T(L) = T*``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.sparse import coo_matrix

from ...core.backends.pulp_backend import MatrixModel, solve_matrix
from ...core.params import SolveOptions, SolverParams
from ...core.result import Status

REL = 1e-9  # ceil(w / T - REL): T = w / m exactly must give m links, not m + 1 by rounding


@dataclass(frozen=True)
class LinkStep:
    """``links`` (integer, symmetric) with ``t_star`` seconds, the optimal ``T(L)`` for the
    loads; ``lower`` the minimal links ``l(T*)``; ``searched`` the feasibility tests run."""

    links: np.ndarray
    t_star: float
    lower: np.ndarray
    searched: int


def pair_loads(W: np.ndarray) -> np.ndarray:
    """``w_ij = max(W_ij, W_ji)`` with a zero diagonal."""
    W = np.asarray(W, dtype=float)
    w = np.maximum(W, W.T)
    np.fill_diagonal(w, 0.0)
    return w


def lower_links(w: np.ndarray, t_bytes: float) -> np.ndarray:
    """``l_ij = ceil(w_ij / T)`` (``T`` in bytes per link) on loaded pairs, 0 elsewhere."""
    lo = np.zeros(w.shape, dtype=np.int64)
    pos = w > 0
    lo[pos] = np.ceil(w[pos] / t_bytes - REL).astype(np.int64)
    return np.maximum(lo, pos.astype(np.int64))


def congestion_of(w: np.ndarray, L: np.ndarray, link_bytes_per_s: float) -> float:
    """``max_{w_ij > 0} w_ij / (L_ij B)`` (infinite when a loaded pair has no link)."""
    pos = w > 0
    if not pos.any():
        return 0.0
    if (L[pos] <= 0).any():
        return float("inf")
    return float((w[pos] / L[pos]).max() / link_bytes_per_s)


def best_links(W: np.ndarray, degree: int, link_bytes_per_s: float, regular: bool = True,
               cap: int | None = None, priority: np.ndarray | None = None,
               value: np.ndarray | None = None, time_limit: float | None = None) -> LinkStep:
    """The optimal integer link matrix for the arc loads ``W`` (module docstring).

    ``priority`` (``n x n`` bytes, symmetrised by the maximum) ranks unloaded pairs for spare
    ports; ``value`` (``n x n``, symmetrised by the sum, e.g. the route LP's dual gain of a
    link per direction) ranks every pair before the byte key (module docstring).

    Raises ``ValueError`` when no valid ``L`` can carry ``W`` at all (a loaded pair count or
    node degree beyond the budget even with one link per loaded pair)."""
    w = pair_loads(W)
    n = w.shape[0]
    d = int(degree)
    cap = d if cap is None else int(cap)
    prio = np.zeros((n, n)) if priority is None else np.asarray(priority, dtype=float)
    prio = np.maximum(prio, prio.T)
    np.fill_diagonal(prio, 0.0)
    val = np.zeros((n, n)) if value is None else np.asarray(value, dtype=float)
    val = np.clip(val + val.T, 0.0, None)
    np.fill_diagonal(val, 0.0)
    vals = w[np.triu(w > 0, 1)]
    if vals.size == 0:
        return LinkStep(_spend(np.zeros((n, n), dtype=np.int64), w, prio, val, d, regular, cap,
                               time_limit), 0.0, np.zeros((n, n), dtype=np.int64), 0)
    cands = np.unique((vals[:, None] / np.arange(1, cap + 1)[None, :]).ravel())  # ascending
    tests = 0

    def feasible(t: float) -> bool:
        nonlocal tests
        tests += 1
        return _feasible(lower_links(w, t), d, regular, cap, time_limit)

    lo, hi = 0, len(cands) - 1
    if not feasible(cands[hi]):
        raise ValueError("loads: no topology within the port budget carries this routing "
                         "(one link per loaded pair already exceeds it)")
    while lo < hi:  # invariant: cands[hi] feasible; every candidate below lo infeasible
        mid = (lo + hi) // 2
        if feasible(cands[mid]):
            hi = mid
        else:
            lo = mid + 1
    lower = lower_links(w, cands[hi])
    L = _spend(lower.copy(), w, prio, val, d, regular, cap, time_limit)
    return LinkStep(L, congestion_of(w, L, link_bytes_per_s), lower, tests)


def _feasible(lower: np.ndarray, d: int, regular: bool, cap: int, time_limit) -> bool:
    if lower.max(initial=0) > cap:
        return False
    r = d - lower.sum(axis=1)
    if (r < 0).any():
        return False
    if not regular:
        return True
    if cap >= d:
        total = int(r.sum())
        return total % 2 == 0 and 2 * int(r.max()) <= total
    return _complete_capped(lower, r, cap, None, time_limit) is not None


def _spend(L: np.ndarray, w: np.ndarray, prio: np.ndarray, val: np.ndarray, d: int,
           regular: bool, cap: int, time_limit) -> np.ndarray:
    """Spend the free ports of ``L`` (in place): see the module docstring."""
    r = d - L.sum(axis=1)
    if regular and cap < d:
        X = _complete_capped(L, r, cap, _linear_weights(L, w, prio, val), time_limit)
        if X is None:  # the search proved feasibility, so only a solver stop gets here
            raise RuntimeError("link step: the completion solver stopped without a solution")
        return L + X
    return _complete_greedy(L, r, w, prio, val, regular, cap)


def _complete_greedy(L, r, w, prio, val, regular: bool, cap: int) -> np.ndarray:
    """Add links one at a time to the eligible pair with the highest key (value first, then
    bytes, then the smallest ``(i, j)``); regular instances keep every tight node in the
    chosen pair (the induction of the module docstring), so the loop ends with every port
    used."""
    n = L.shape[0]
    r = r.copy()
    v = np.maximum(w, prio)
    added = np.zeros((n, n))
    upper = np.triu(np.ones((n, n), dtype=bool), 1)
    while r.sum() > 0:
        total = int(r.sum())
        has = r > 0
        ok = upper & has[:, None] & has[None, :] & (cap > L)
        if regular:
            for k in np.flatnonzero(2 * r == total):  # a tight node must get the link
                touches = np.zeros((n, n), dtype=bool)
                touches[k, :] = touches[:, k] = True
                ok &= touches
        if not ok.any():
            if regular:
                raise RuntimeError("link step: completion stuck (the feasibility test is wrong)")
            break  # non-regular: no pair with a free port at both ends is left
        first = np.where(ok, val / (1 + added), -1.0)
        ok &= first >= first.max() - 1e-6 * abs(first.max())  # near-ties: the byte key
        key = np.where(ok, v / (L + 1), -1.0)
        i, j = divmod(int(np.argmax(key)), n)  # first maximum in row-major order
        L[i, j] += 1
        L[j, i] += 1
        added[i, j] += 1
        r[i] -= 1
        r[j] -= 1
    return L


def _linear_weights(L, w, prio, val) -> np.ndarray:
    """Per-link weights for the capped completion: a pair's value, then (scaled below any
    value difference) the byte key of its first extra link."""
    key = np.maximum(w, prio) / (L + 1)
    key = key / key.max() if key.max() > 0 else key
    return (val / val.max() if val.max() > 0 else val) + 1e-3 * key


def _complete_capped(lower: np.ndarray, r: np.ndarray, cap: int, weight: np.ndarray | None,
                     time_limit) -> np.ndarray | None:
    """Integer ``X_ij in [0, cap - lower_ij]`` (``i < j``) with row sums ``r``, maximising
    ``sum weight_ij X_ij`` (or any, without ``weight``); ``None`` when infeasible."""
    n = lower.shape[0]
    iu, ju = np.triu_indices(n, 1)
    ub = (cap - lower[iu, ju]).astype(float)
    keep = (ub > 0) & (r[iu] > 0) & (r[ju] > 0)
    iu, ju, ub = iu[keep], ju[keep], ub[keep]
    m = len(iu)
    if r.sum() == 0:
        return np.zeros_like(lower)
    if m == 0:
        return None
    rows = np.concatenate([iu, ju])
    cols = np.concatenate([np.arange(m), np.arange(m)])
    A = coo_matrix((np.ones(2 * m), (rows, cols)), shape=(n, m)).tocsc()
    cost = np.zeros(m) if weight is None else -weight[iu, ju]
    model = MatrixModel(A=A, cost=cost, col_lower=np.zeros(m), col_upper=ub,
                        row_lower=r.astype(float), row_upper=r.astype(float),
                        integer=np.ones(m, dtype=bool), names=[f"x{k}" for k in range(m)])
    out = solve_matrix(model, SolveOptions(solver=SolverParams(time_limit=time_limit,
                                                               mip_gap=1e-4)))
    if not out.status.has_solution or out.status is Status.ERROR:
        return None
    x = np.round([out.values[f"x{k}"] for k in range(m)]).astype(np.int64)
    X = np.zeros_like(lower)
    X[iu, ju] = x
    return X + X.T
