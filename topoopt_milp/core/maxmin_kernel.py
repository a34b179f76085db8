"""The compiled max-min solvers of the event loop (:mod:`.flowsim`; numba).

* :func:`_maxmin`: progressive filling from scratch by lazy heap (see :mod:`.flowsim`,
  "Max-min by lazy heap").
* :func:`_refill`, :func:`_after_leave`: the incremental solve after flows left: the
  classes of the tight set (those frozen at an arc the changed classes touch), checked by
  the bottleneck characterisation, grown by a violating class where the check fails, and
  the connected component as the last resort (:mod:`.flowsim`, "Incremental solves").
* :func:`maxmin_rates`, :func:`refill_rates`: one-off calls for the tests.
"""

from __future__ import annotations

import numpy as np

from .jit import njit

TIE = 1e-12  # relative: a recomputed level this close to its heap key counts as unchanged
GROW = 4  # a failed tight refill is retried with its violating class this often

@njit(cache=True, inline="always")
def _sift_down(key, val, size, i):
    while True:
        lft = 2 * i + 1
        if lft >= size:
            break
        j = lft
        if lft + 1 < size and key[lft + 1] < key[lft]:
            j = lft + 1
        if key[i] <= key[j]:
            break
        key[i], key[j] = key[j], key[i]
        val[i], val[j] = val[j], val[i]
        i = j


@njit(cache=True, inline="always")
def _heap_pop(key, val, size):
    """Remove the root (read it before the call); returns the new size."""
    size -= 1
    key[0] = key[size]
    val[0] = val[size]
    _sift_down(key, val, size, 0)
    return size


@njit(cache=True, inline="always")
def _unlink(c, bn, bhead, bnext, bprev):
    """Take class ``c`` off the list of the arc it was frozen at (``bn[c]``, -1: none)."""
    a = bn[c]
    if a < 0:
        return
    p, q = bprev[c], bnext[c]
    if p >= 0:
        bnext[p] = q
    else:
        bhead[a] = q
    if q >= 0:
        bprev[q] = p
    bn[c] = -1


@njit(cache=True, inline="always")
def _link(c, a, bn, bhead, bnext, bprev):
    """Put class ``c`` on the list of arc ``a`` (the arc it is frozen at)."""
    if bn[c] == a:
        return
    _unlink(c, bn, bhead, bnext, bprev)
    bn[c] = a
    bprev[c] = -1
    q = bhead[a]
    bnext[c] = q
    if q >= 0:
        bprev[q] = c
    bhead[a] = c


@njit(cache=True)
def _fill(ocls, nopen, w, cptr, carc, cmult, aptr, acls, rate, rem, load, used, touched,
          ntouched, hkey, hval, stamp, sid, tie, poparc, poplvl, bn, bhead, bnext, bprev, ins,
          chk):
    """Progressive filling of the open classes ``ocls[:nopen]`` (``w`` flows each; marked
    ``stamp[c] == sid``) on the arcs ``touched[:ntouched]``, whose capacity left for them is
    ``rem`` and whose open flows are ``load`` (set by the caller); writes ``rate`` of the
    open classes (adding their bandwidth to ``used``), and the saturated arcs in order with
    their levels to ``poparc, poplvl``; every class frozen goes on the list of the arc it is
    frozen at (``bn, bhead, bnext, bprev``: its bottleneck, see :func:`_refill`). Returns
    the number of arcs saturated (bottlenecks), or ``-1 - c`` with ``chk`` as soon as a
    saturated arc carries a class ``c`` outside the set (``ins[c] != sid``) with flows and a
    rate above the arc's level (the check of a tight refill, :func:`_refill`; the caller
    restores the state)."""
    size = 0
    for i in range(ntouched):  # heapify in O(ntouched), not one push per arc
        a = touched[i]
        if load[a] > 0:
            hkey[size] = max(rem[a], 0.0) / load[a]
            hval[size] = a
            size += 1
    for i in range(size // 2 - 1, -1, -1):
        _sift_down(hkey, hval, size, i)
    for i in range(nopen):
        rate[ocls[i]] = 0.0
    pops = 0
    while size > 0:
        key = hkey[0]
        a = hval[0]
        if load[a] <= 0:  # saturated already, or all its classes frozen elsewhere
            size = _heap_pop(hkey, hval, size)
            continue
        lvl = max(rem[a], 0.0) / load[a]
        if lvl > key * (1 + tie):  # stale key (levels only rise): re-key the root in place
            hkey[0] = lvl
            _sift_down(hkey, hval, size, 0)
            continue
        size = _heap_pop(hkey, hval, size)
        poparc[pops] = a
        poplvl[pops] = lvl
        pops += 1
        bound = lvl * (1 + tie)
        for e in range(aptr[a], aptr[a + 1]):
            c = acls[e]
            if stamp[c] != sid:
                if chk and ins[c] != sid and w[c] > 0 and rate[c] > bound:
                    return -1 - c
                continue
            stamp[c] = -1  # frozen
            rate[c] = lvl
            _link(c, a, bn, bhead, bnext, bprev)
            wc = w[c]
            for f in range(cptr[c], cptr[c + 1]):
                b = carc[f]
                x = wc * cmult[f]
                rem[b] -= x * lvl
                used[b] += x * lvl
                load[b] -= x
                if load[b] < 0.5:  # flow counts are integers: clear rounding residue
                    load[b] = 0.0
        load[a] = 0.0
    return pops


@njit(cache=True)
def _maxmin(w, cptr, carc, cmult, aptr, acls, cap, rate, rem, load, used, touched, hkey, hval,
            stamp, ocls, sid, tie, poparc, poplvl, bn, bhead, bnext, bprev):
    """Max-min fair per-flow rate of every class (``rate``, 0 for classes with ``w == 0``)
    for ``w`` flows per class, from scratch: every class with flows is open, every arc has
    its full capacity; ``used`` is set to the bandwidth the allocation takes per arc. Work
    arrays: ``rem, load, touched`` (``m``), heap ``hkey, hval``
    (``m + 1``), ``stamp, ocls`` (``k``), ``poparc, poplvl`` (``m``); ``sid`` a stamp not
    used before. The bottleneck lists ``bn, bhead, bnext, bprev`` are rebuilt. Returns the
    number of bottleneck arcs."""
    k = len(w)
    m = len(cap)
    nopen = 0
    for a in range(m):
        rem[a] = cap[a]
        load[a] = 0.0
        used[a] = 0.0
        touched[a] = a
        bhead[a] = -1
    for c in range(k):
        rate[c] = 0.0
        bn[c] = -1
        if w[c] > 0:
            stamp[c] = sid
            ocls[nopen] = c
            nopen += 1
            for e in range(cptr[c], cptr[c + 1]):
                load[carc[e]] += w[c] * cmult[e]
    return _fill(ocls, nopen, w, cptr, carc, cmult, aptr, acls, rate, rem, load, used, touched,
                 m, hkey, hval, stamp, sid, tie, poparc, poplvl, bn, bhead, bnext, bprev, stamp,
                 False)


@njit(cache=True)
def _usage(w, rate, cptr, carc, cmult, used):
    """``used[a] = sum_c w_c rate_c mult(c, a)``: the bandwidth the allocation takes."""
    used[:] = 0.0
    for c in range(len(w)):
        if w[c] > 0:
            for e in range(cptr[c], cptr[c + 1]):
                used[carc[e]] += w[c] * rate[c] * cmult[e]


@njit(cache=True)
def _refill(w, prev, chg, nchg, lowest, cptr, carc, cmult, aptr, acls, cap, rate, used, rem,
            load, touched, seen, hkey, hval, stamp, ocls, sid, tie, poparc, poplvl, tight, ins,
            scls, srate, sused, sbn, bn, bhead, bnext, bprev, nout):
    """Max-min rates for counts ``w`` from the allocation ``rate`` of counts ``prev`` when
    flows only left (``w <= prev``): ``chg[:nchg]`` the classes that lost flows, ``lowest``
    the lowest old rate among them. ``used`` (the old allocation's bandwidth per arc) is
    updated to the new one; the classes re-filled with flows are ``ocls[:nout[0]]`` (every
    other class keeps its rate). Returns the number of bottleneck arcs, or ``-1 - c`` when a
    ``tight`` refill fails its check at class ``c`` (``rate``, ``used`` and the bottleneck
    lists are then restored; :func:`_after_leave` retries with ``c`` in the set).

    The classes re-filled (the set ``S``; all others keep their rates, and ``S`` is filled
    on the capacity they leave) are found breadth-first from ``chg`` over the arcs of the
    classes in ``S`` (the *touched* arcs):

    * ``tight=False``: every class of old rate at or above ``lowest`` on such an arc (the
      connected component of the module docstring, "Incremental solves"): always exact.
    * ``tight=True``: only the classes of old rate at or above ``lowest`` that the old
      filling froze at such an arc (their bottleneck arc ``bn``; each arc keeps the list of
      its classes, so no pass over all classes of an arc is needed). Scratch ``ins, scls,
      srate, sbn`` (``k``) and ``sused`` (``m``) keep what a failure restores. ``chg`` may
      hold further classes of old rate at or above ``lowest`` (a retry): the argument below
      holds for any such set. The result is then
      checked with the bottleneck characterisation of max-min fairness (Bertsekas and
      Gallager, *Data Networks*, 6.5.2: a feasible allocation is max-min fair iff every flow
      crosses a saturated arc on which no flow has a higher rate). It is feasible (``S`` is
      filled on the capacity the others leave). A class outside ``S`` of old rate below
      ``lowest`` keeps its rate and bottleneck (the classes on that arc all have rates at
      or below its own, so none is in ``S`` and the arc is untouched). A class outside
      ``S`` of rate at or above ``lowest`` was frozen at an arc that is not touched (else it
      would be in ``S``); no class of ``S`` crosses that arc, so it is still saturated and
      the class's rate still the highest on it. The classes of ``S`` are frozen at arcs the
      filling saturates, at a level no other class of ``S`` there exceeds; so the
      allocation is max-min fair iff no class outside ``S`` has a rate above the level of a
      saturated arc it crosses, which :func:`_fill` checks as each arc saturates. If one
      has, the refill is undone and the caller falls back to ``tight=False``."""
    thr = lowest * (1 - 1e-9)  # a margin below: reopening more classes is always exact
    nopen = 0
    ntouched = 0
    for i in range(nchg):
        c = chg[i]
        stamp[c] = sid
        ocls[nopen] = c
        if tight:
            ins[c] = sid
            scls[nopen] = c
            srate[nopen] = rate[c]
            sbn[nopen] = bn[c]
        nopen += 1
    head = 0
    while head < nopen:  # breadth-first over the classes of rate >= thr
        c = ocls[head]
        head += 1
        for e in range(cptr[c], cptr[c + 1]):
            a = carc[e]
            if seen[a] != sid:
                seen[a] = sid
                touched[ntouched] = a
                if tight:
                    sused[ntouched] = used[a]
                ntouched += 1
                rem[a] = cap[a] - used[a]
                load[a] = 0.0
                if tight:  # the classes frozen at this arc (it is their bottleneck)
                    d = bhead[a]
                    while d >= 0:
                        if stamp[d] != sid and prev[d] > 0 and rate[d] >= thr:
                            stamp[d] = sid
                            ocls[nopen] = d
                            ins[d] = sid
                            scls[nopen] = d
                            srate[nopen] = rate[d]
                            sbn[nopen] = a
                            nopen += 1
                        d = bnext[d]
                else:
                    for f in range(aptr[a], aptr[a + 1]):
                        d = acls[f]
                        if stamp[d] != sid and prev[d] > 0 and rate[d] >= thr:
                            stamp[d] = sid
                            ocls[nopen] = d
                            nopen += 1
            rem[a] += prev[c] * rate[c] * cmult[e]
            used[a] -= prev[c] * rate[c] * cmult[e]
            load[a] += w[c] * cmult[e]
    nset = nopen
    j = 0
    for i in range(nopen):  # classes left without flows get rate 0 and are not filled
        c = ocls[i]
        if w[c] > 0:
            ocls[j] = c
            j += 1
        else:
            stamp[c] = -1
            rate[c] = 0.0
            _unlink(c, bn, bhead, bnext, bprev)
    pops = _fill(ocls, j, w, cptr, carc, cmult, aptr, acls, rate, rem, load, used, touched,
                 ntouched, hkey, hval, stamp, sid, tie, poparc, poplvl, bn, bhead, bnext, bprev,
                 ins, tight)
    if pops < 0:
        for q in range(nset):
            c = scls[q]
            rate[c] = srate[q]
            if sbn[q] >= 0:
                _link(c, sbn[q], bn, bhead, bnext, bprev)
            else:
                _unlink(c, bn, bhead, bnext, bprev)
        for q in range(ntouched):
            used[touched[q]] = sused[q]
        return pops
    nout[0] = j
    return pops


@njit(cache=True)
def _after_leave(w, prev, chg, nchg, lowest, cptr, carc, cmult, aptr, acls, cap, rate, used,
                 rem, load, touched, seen, hkey, hval, stamp, ocls, sid, tie, poparc, poplvl,
                 ins, scls, srate, sused, sbn, bn, bhead, bnext, bprev, nout, grow):
    """The solve after flows left (:func:`_refill`): the tight set; where its check fails
    at a class, again with that class added to ``chg`` (up to ``grow`` times); then the
    connected component. Returns ``(pops, tries, fell_back, sid)`` (``sid``: the last stamp
    used)."""
    nc = nchg
    tries = 0
    while tries <= grow:
        sid += 1
        got = _refill(w, prev, chg, nc, lowest, cptr, carc, cmult, aptr, acls, cap, rate, used,
                      rem, load, touched, seen, hkey, hval, stamp, ocls, sid, tie, poparc,
                      poplvl, True, ins, scls, srate, sused, sbn, bn, bhead, bnext, bprev, nout)
        if got >= 0:
            return got, tries, False, sid
        chg[nc] = -1 - got
        nc += 1
        tries += 1
    sid += 1
    got = _refill(w, prev, chg, nc, lowest, cptr, carc, cmult, aptr, acls, cap, rate, used,
                  rem, load, touched, seen, hkey, hval, stamp, ocls, sid, tie, poparc, poplvl,
                  False, ins, scls, srate, sused, sbn, bn, bhead, bnext, bprev, nout)
    return got, tries, True, sid


def csr_of_paths(paths: list[np.ndarray], m: int):
    """``cptr, carc, cmult`` (each class's distinct arcs with the times it crosses them) and
    the transpose ``aptr, acls`` (each arc's classes)."""
    k = len(paths)
    cptr = np.zeros(k + 1, dtype=np.int64)
    arcs, mults = [], []
    for c, p in enumerate(paths):
        u, cnt = np.unique(np.asarray(p, dtype=np.int64), return_counts=True)
        arcs.append(u)
        mults.append(cnt.astype(float))
        cptr[c + 1] = cptr[c] + len(u)
    carc = np.concatenate(arcs) if arcs else np.zeros(0, dtype=np.int64)
    cmult = np.concatenate(mults) if mults else np.zeros(0)
    cls_of_entry = np.repeat(np.arange(k, dtype=np.int64), np.diff(cptr))
    order = np.argsort(carc, kind="stable")
    acls = cls_of_entry[order]
    aptr = np.zeros(m + 1, dtype=np.int64)
    aptr[1:] = np.cumsum(np.bincount(carc, minlength=m))
    return cptr, carc, cmult, aptr, acls


def _lists(k: int, m: int):
    """Empty bottleneck lists ``bn, bhead, bnext, bprev`` (see :func:`_fill`)."""
    return (np.full(k, -1, dtype=np.int64), np.full(m, -1, dtype=np.int64),
            np.full(k, -1, dtype=np.int64), np.full(k, -1, dtype=np.int64))


def _solve(w, csr, cap, rate, tie, lists):
    m, k = len(cap), len(w)
    return _maxmin(w, *csr, cap, rate, np.zeros(m), np.zeros(m), np.zeros(m),
                   np.zeros(m, dtype=np.int64),
                   np.zeros(m + 1), np.zeros(m + 1, dtype=np.int64),
                   np.full(k, -1, dtype=np.int64), np.zeros(k, dtype=np.int64), 0, tie,
                   np.zeros(m, dtype=np.int64), np.zeros(m), *lists)


def maxmin_rates(paths: list[np.ndarray], weights: np.ndarray, cap: np.ndarray,
                 tie: float = TIE) -> tuple[np.ndarray, int]:
    """One-off :func:`_maxmin` (the compiled solver) for ``paths``: per-flow rate of every
    class and the number of bottleneck arcs."""
    cap = np.asarray(cap, dtype=float)
    m, k = len(cap), len(paths)
    rate = np.zeros(k)
    pops = _solve(np.asarray(weights, dtype=float), csr_of_paths(paths, m), cap, rate, tie,
                  _lists(k, m))
    return rate, int(pops)


def refill_rates(paths: list[np.ndarray], prev: np.ndarray, weights: np.ndarray,
                 cap: np.ndarray, tie: float = TIE, tight: bool = True,
                 grow: int = GROW) -> tuple[np.ndarray, str]:
    """The max-min rates for ``weights`` computed incrementally (:func:`_refill`) from the
    rates for ``prev`` (``weights <= prev``), as the event loop does: with ``tight`` the
    tight set first, grown by the violating class up to ``grow`` times where its check
    fails, then the connected component (:func:`_after_leave`); returns the rates and which
    set gave them (``tight``, ``grown`` or ``component``). For the tests."""
    cap = np.asarray(cap, dtype=float)
    m, k = len(cap), len(paths)
    prev = np.asarray(prev, dtype=float)
    w = np.asarray(weights, dtype=float)
    if (w > prev).any():
        raise ValueError("refill_rates: flows may only leave (weights <= prev)")
    csr = csr_of_paths(paths, m)
    cptr, carc, cmult, aptr, acls = csr
    rate = np.zeros(k)
    lists = _lists(k, m)
    _solve(prev, csr, cap, rate, tie, lists)
    lost = w < prev
    if not lost.any():
        return rate, False
    used = np.zeros(m)
    _usage(prev, rate, cptr, carc, cmult, used)
    chg = np.flatnonzero(lost).astype(np.int64)
    work = (np.zeros(m), np.zeros(m), np.zeros(m, dtype=np.int64), np.full(m, -1, dtype=np.int64),
            np.zeros(m + 1), np.zeros(m + 1, dtype=np.int64), np.full(k, -1, dtype=np.int64),
            np.zeros(k, dtype=np.int64))
    extra = (np.zeros(m, dtype=np.int64), np.zeros(m))
    scratch = (np.full(k, -1, dtype=np.int64), np.zeros(k, dtype=np.int64), np.zeros(k),
               np.zeros(m), np.zeros(k, dtype=np.int64))
    nout = np.zeros(1, dtype=np.int64)
    lowest = float(rate[lost].min())
    chg = np.concatenate([chg, np.zeros(k - len(chg), dtype=np.int64)])
    if not tight:
        _refill(w, prev, chg, int(lost.sum()), lowest, *csr, cap, rate, used, *work, 1, tie,
                *extra, False, *scratch, *lists, nout)
        return rate, "component"
    _, tries, fell, _ = _after_leave(w, prev, chg, int(lost.sum()), lowest, *csr, cap, rate,
                                     used, *work, 0, tie, *extra, *scratch, *lists, nout, grow)
    return rate, "component" if fell else ("grown" if tries else "tight")
