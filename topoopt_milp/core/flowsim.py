"""The compiled event loop of :func:`topoopt_milp.core.simulate.simulate_scenario` (numba).

Same model, same event order and same tolerances as the numpy loop it replaces
(:func:`topoopt_milp.core.simulate.simulate_scenario_numpy`, kept as the reference the tests
compare with); only the data layout and the max-min solver differ:

* **Flow slots.** Every flow that can be live at once has a fixed slot: the MP flows take
  slots ``0..M-1``, ring ``r`` the slots ``off[r]..off[r+1]-1`` (one per flow of a step; a
  ring has one step live at a time, and step ``s + 1`` refills the slots of step ``s``). An
  event scans the slots, so no array is rebuilt when flows end or start.
* **Max-min by lazy heap** (:func:`_maxmin`). Progressive filling saturates arcs in order of
  their *level* ``(cap_a - F_a) / load_a`` (``F_a``: bandwidth of the frozen classes,
  ``load_a``: open flows). Freezing a class at a rate at or below ``level_a`` never lowers
  ``level_a`` (see :meth:`topoopt_milp.core.maxmin.MaxMin.rates`), so a level stored in a
  min-heap is a lower bound of the arc's current level. Pop the smallest entry and recompute
  that arc's level: if it has risen, push it back; if not, it is the smallest current level
  of all arcs (every other arc's current level is at or above its heap key, which is at or
  above this one), so the arc saturates there, and every open class crossing it is frozen at
  that level. This is plain progressive filling, one bottleneck arc at a time, in
  ``O(entries + pops log m)`` per solve instead of a pass over the open entries per round.
* **Incremental solves** (:func:`_refill`). When flows only *leave* (no class gains flows),
  let ``r*`` be the lowest old rate of a class that lost flows. Below level ``r*`` the new
  filling is the old one: the arcs of those classes carry fewer open flows, so their levels
  are higher and they still do not saturate below ``r*``, and every other arc's level below
  ``r*`` depends only on classes frozen below ``r*`` (induction over the saturations). So
  every class of old rate below ``r*`` keeps its rate; the others form a residual problem on
  the capacity the kept ones leave, and filling it from 0 reaches ``r*`` without a
  saturation and continues as the full filling would. The residual problem splits into
  connected components (classes of old rate >= ``r*`` and their arcs), solved
  independently; only the component of the classes that lost flows is re-filled. A solve
  from scratch is made whenever a class gains flows and every ``REFRESH`` solves.
* **Tight refills.** The component is often most of the network (on ncf n = 128, d = 8
  every arc is saturated, at 1023 distinct levels, and a refill re-saturated a median 569
  of 1024 arcs). Each refill first tries a smaller set: the classes whose old rate is the
  highest on an arc it touches (their bottleneck arcs), checked afterwards by the
  bottleneck characterisation of max-min fairness and undone in favour of the component
  where the check fails (:func:`_refill`). On that instance this cut the saturations from
  40.9 M to 27.3 M (9,204 of 82,960 refills fell back) and the CPU time by 13%.

Without numba (an environment that cannot install it) the same functions run as plain
Python: correct, but far slower; :mod:`.simulate` then uses the numpy loop instead.
"""

from __future__ import annotations

import numpy as np

try:  # numba is a dependency (pyproject.toml); the fallback keeps the module importable
    from numba import njit

    HAVE_NUMBA = True
except ImportError:  # pragma: no cover - exercised only without numba
    HAVE_NUMBA = False

    def njit(*args, **kwargs):
        if args and callable(args[0]):
            return args[0]
        return lambda f: f

DONE_TOL = 1e-9  # relative: a flow within this share of the interval of its end has ended
TIE = 1e-12  # relative: a recomputed level this close to its heap key counts as unchanged
REFRESH = 1000  # a solve from scratch at least every REFRESH solves (no drift in ``used``)


@njit(cache=True)
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


@njit(cache=True)
def _heap_pop(key, val, size):
    """Remove the root (read it before the call); returns the new size."""
    size -= 1
    key[0] = key[size]
    val[0] = val[size]
    _sift_down(key, val, size, 0)
    return size


@njit(cache=True)
def _fill(ocls, nopen, w, cptr, carc, cmult, aptr, acls, rate, rem, load, touched, ntouched,
          hkey, hval, stamp, sid, tie, poparc, poplvl):
    """Progressive filling of the open classes ``ocls[:nopen]`` (``w`` flows each; marked
    ``stamp[c] == sid``) on the arcs ``touched[:ntouched]``, whose capacity left for them is
    ``rem`` and whose open flows are ``load`` (set by the caller); writes ``rate`` of the
    open classes, and the saturated arcs in order with their levels to ``poparc, poplvl``.
    Returns the number of arcs saturated (bottlenecks)."""
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
        for e in range(aptr[a], aptr[a + 1]):
            c = acls[e]
            if stamp[c] != sid:
                continue
            stamp[c] = -1  # frozen
            rate[c] = lvl
            wc = w[c]
            for f in range(cptr[c], cptr[c + 1]):
                b = carc[f]
                rem[b] -= wc * cmult[f] * lvl
                load[b] -= wc * cmult[f]
                if load[b] < 0.5:  # flow counts are integers: clear rounding residue
                    load[b] = 0.0
        load[a] = 0.0
    return pops


@njit(cache=True)
def _maxmin(w, cptr, carc, cmult, aptr, acls, cap, rate, rem, load, touched, hkey, hval,
            stamp, ocls, sid, tie, poparc, poplvl):
    """Max-min fair per-flow rate of every class (``rate``, 0 for classes with ``w == 0``)
    for ``w`` flows per class, from scratch: every class with flows is open, every arc has
    its full capacity. Work arrays: ``rem, load, touched`` (``m``), heap ``hkey, hval``
    (``m + 1``), ``stamp, ocls`` (``k``), ``poparc, poplvl`` (``m``); ``sid`` a stamp not
    used before. Returns the number of bottleneck arcs."""
    k = len(w)
    m = len(cap)
    nopen = 0
    for a in range(m):
        rem[a] = cap[a]
        load[a] = 0.0
        touched[a] = a
    for c in range(k):
        rate[c] = 0.0
        if w[c] > 0:
            stamp[c] = sid
            ocls[nopen] = c
            nopen += 1
            for e in range(cptr[c], cptr[c + 1]):
                load[carc[e]] += w[c] * cmult[e]
    return _fill(ocls, nopen, w, cptr, carc, cmult, aptr, acls, rate, rem, load, touched, m,
                 hkey, hval, stamp, sid, tie, poparc, poplvl)


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
            scls, srate, sused):
    """Max-min rates for counts ``w`` from the allocation ``rate`` of counts ``prev`` when
    flows only left (``w <= prev``): ``chg[:nchg]`` the classes that lost flows, ``lowest``
    the lowest old rate among them. ``used`` (the old allocation's bandwidth per arc) is
    updated to the new one. Returns the number of bottleneck arcs, or -1 when a ``tight``
    refill fails its check (``rate`` and ``used`` are then restored).

    The classes re-filled (the set ``S``; all others keep their rates, and ``S`` is filled
    on the capacity they leave) are found breadth-first from ``chg`` over the arcs of the
    classes in ``S``:

    * ``tight=False``: every class of old rate at or above ``lowest`` on such an arc (the
      connected component of the module docstring, "Incremental solves"): always exact.
    * ``tight=True``: only the classes whose old rate is the highest on such an arc (every
      class whose bottleneck arc is touched; scratch ``ins, scls, srate`` (``k``) and
      ``sused`` (``m``) keep what a failure restores). The result is then checked with the
      bottleneck characterisation of max-min fairness (Bertsekas and Gallager, *Data
      Networks*, 6.5.2: a feasible allocation is max-min fair iff every flow crosses a
      saturated arc on which no flow has a higher rate). Classes outside ``S`` keep their
      bottleneck arcs (untouched: no class of ``S`` crosses them, so their load and rates
      are as before); classes of ``S`` are frozen at the arcs the filling saturates, at a
      level no other class of ``S`` there exceeds; so the allocation is max-min fair iff no
      class outside ``S`` has a rate above the level of a saturated arc it crosses. If one
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
                bar = thr
                if tight:  # the highest old rate on the arc (its bottlenecked classes)
                    top = 0.0
                    for f in range(aptr[a], aptr[a + 1]):
                        d = acls[f]
                        if prev[d] > 0 and rate[d] > top:
                            top = rate[d]
                    bar = max(thr, top * (1 - 1e-9))
                for f in range(aptr[a], aptr[a + 1]):
                    d = acls[f]
                    if stamp[d] != sid and prev[d] > 0 and rate[d] >= bar:
                        stamp[d] = sid
                        ocls[nopen] = d
                        if tight:
                            ins[d] = sid
                            scls[nopen] = d
                            srate[nopen] = rate[d]
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
    pops = _fill(ocls, j, w, cptr, carc, cmult, aptr, acls, rate, rem, load, touched,
                 ntouched, hkey, hval, stamp, sid, tie, poparc, poplvl)
    if tight:
        for i in range(pops):
            a = poparc[i]
            bound = poplvl[i] * (1 + tie)
            for f in range(aptr[a], aptr[a + 1]):
                d = acls[f]
                if ins[d] != sid and w[d] > 0 and rate[d] > bound:
                    for q in range(nset):
                        rate[scls[q]] = srate[q]
                    for q in range(ntouched):
                        used[touched[q]] = sused[q]
                    return -1
    for i in range(j):
        c = ocls[i]
        for e in range(cptr[c], cptr[c + 1]):
            used[carc[e]] += w[c] * rate[c] * cmult[e]
    return pops


@njit(cache=True)
def _touch(c, delta, counts, dirty, ndirty, dflag):
    """``counts[c] += delta`` and mark ``c`` dirty (its count may differ from the last solve's);
    returns the new length of the dirty list."""
    counts[c] += delta
    if not dflag[c]:
        dflag[c] = True
        dirty[ndirty] = c
        ndirty += 1
    return ndirty


@njit(cache=True)
def _run(cptr, carc, cmult, aptr, acls, cap, delay, slot_cls, slot_bytes, slot_owner,
         ring_off, ring_steps, flow_base, trace, issued, ready_out, ended):
    """The event loop (module docstring). ``slot_*``: class, bytes and owner (-1 MP, else the
    ring) of every slot; ``delay``: latency phase per class; ``flow_base[r]``: global id of
    ring ``r``'s first flow (ids ``flow_base[r] + step * width + q``; MP flow ``f`` is id
    ``f``); with ``trace`` the issue, ready and end times of every flow id are written.

    Per-event bookkeeping is incremental: the live slots sit in two swap-remove lists, the
    *pending* ones (latency phase, ``rd > t``) and the *active* ones (bandwidth phase); the
    active flows per class (``counts``) change only when a slot moves between the lists or
    ends, and the classes whose count changed since the last solve form a dirty list. An
    event thus costs O(pending + active + dirty) plus its max-min solve, instead of passes
    over every slot and every class; the events, their order and the solves' inputs are the
    same as with full passes (the changed classes are handed to the solver sorted, as a scan
    over the classes would find them)."""
    k = len(cptr) - 1
    m = len(cap)
    S = len(slot_cls)
    R = len(ring_steps)
    n_mp = S if R == 0 else ring_off[0]
    rem_b = np.zeros(S)
    rd = np.zeros(S)
    fid = np.zeros(S, dtype=np.int64)
    step = np.zeros(R, dtype=np.int64)
    left = np.zeros(R, dtype=np.int64)
    ring_end = np.zeros(R)
    counts = np.zeros(k)
    prev = np.full(k, -1.0)
    crate = np.zeros(k)
    rem = np.zeros(m)
    load = np.zeros(m)
    hkey = np.zeros(m + 1)
    hval = np.zeros(m + 1, dtype=np.int64)
    touched = np.zeros(m, dtype=np.int64)
    seen = np.full(m, -1, dtype=np.int64)
    used = np.zeros(m)
    stamp = np.full(k, -1, dtype=np.int64)
    ocls = np.zeros(k, dtype=np.int64)
    chg = np.zeros(k, dtype=np.int64)
    dirty = np.zeros(k, dtype=np.int64)
    dflag = np.zeros(k, dtype=np.bool_)
    ndirty = 0
    pend = np.zeros(S, dtype=np.int64)  # live slots in their latency phase
    npend = 0
    act = np.zeros(S, dtype=np.int64)  # live slots in their bandwidth phase
    nact = 0
    sid = 0
    partial = 0
    poparc = np.zeros(m, dtype=np.int64)
    poplvl = np.zeros(m)
    ins = np.full(k, -1, dtype=np.int64)
    scls = np.zeros(k, dtype=np.int64)
    srate = np.zeros(k)
    sused = np.zeros(m)
    fallbacks = 0
    ring_hit = np.zeros(R, dtype=np.bool_)
    tfin = np.zeros(S)
    for s in range(n_mp):
        rem_b[s] = slot_bytes[s]
        rd[s] = delay[slot_cls[s]]
        fid[s] = s
        pend[npend] = s
        npend += 1
        if trace:
            issued[s] = 0.0
            ready_out[s] = rd[s]
    nlive = n_mp
    for r in range(R):
        for s in range(ring_off[r], ring_off[r + 1]):
            rem_b[s] = slot_bytes[s]
            rd[s] = delay[slot_cls[s]]
            fid[s] = flow_base[r] + s - ring_off[r]
            pend[npend] = s
            npend += 1
            if trace:
                issued[fid[s]] = 0.0
                ready_out[fid[s]] = rd[s]
        left[r] = ring_off[r + 1] - ring_off[r]
        nlive += left[r]
    t = 0.0
    mp_end = 0.0
    events = 0
    rounds = 0
    solves = 0
    while nlive > 0:
        events += 1
        i = 0
        while i < npend:  # flows whose latency phase is over start sending
            s = pend[i]
            if rd[s] <= t:
                npend -= 1
                pend[i] = pend[npend]
                act[nact] = s
                nact += 1
                ndirty = _touch(slot_cls[s], 1.0, counts, dirty, ndirty, dflag)
            else:
                i += 1
        dt = np.inf
        if nact > 0:
            if ndirty > 0:
                grew = False
                lowest = np.inf
                nchg = 0
                for i in range(ndirty):
                    c = dirty[i]
                    dflag[c] = False
                    if counts[c] > prev[c]:
                        grew = True
                    elif counts[c] < prev[c]:
                        chg[nchg] = c
                        nchg += 1
                        if crate[c] < lowest:
                            lowest = crate[c]
                if grew or nchg > 0:
                    if not grew:
                        chg[:nchg].sort()
                    sid += 1
                    if grew or solves % REFRESH == 0:
                        rounds += _maxmin(counts, cptr, carc, cmult, aptr, acls, cap, crate,
                                          rem, load, touched, hkey, hval, stamp, ocls, sid, TIE,
                                          poparc, poplvl)
                        _usage(counts, crate, cptr, carc, cmult, used)
                    else:
                        got = _refill(counts, prev, chg, nchg, lowest, cptr, carc, cmult,
                                      aptr, acls, cap, crate, used, rem, load, touched, seen,
                                      hkey, hval, stamp, ocls, sid, TIE, poparc, poplvl, True,
                                      ins, scls, srate, sused)
                        if got < 0:  # the tight set did not pass its check
                            fallbacks += 1
                            sid += 1
                            got = _refill(counts, prev, chg, nchg, lowest, cptr, carc, cmult,
                                          aptr, acls, cap, crate, used, rem, load, touched,
                                          seen, hkey, hval, stamp, ocls, sid, TIE, poparc,
                                          poplvl, False, ins, scls, srate, sused)
                        rounds += got
                        partial += 1
                    solves += 1
                for i in range(ndirty):
                    c = dirty[i]
                    prev[c] = counts[c]
                ndirty = 0
            for i in range(nact):
                s = act[i]
                tf = rem_b[s] / crate[slot_cls[s]]
                tfin[s] = tf
                if tf < dt:
                    dt = tf
        t_next = np.inf
        for i in range(npend):
            s = pend[i]
            if rd[s] < t_next:
                t_next = rd[s]
        if t_next - t < dt:
            dt = t_next - t
        t_new = t_next if t_next - t <= dt else t + dt
        any_gone = False
        for r in range(R):
            ring_hit[r] = False
        i = 0
        while i < nact:
            s = act[i]
            rem_b[s] -= crate[slot_cls[s]] * dt
            if tfin[s] <= dt * (1 + DONE_TOL):
                nact -= 1
                act[i] = act[nact]
                ndirty = _touch(slot_cls[s], -1.0, counts, dirty, ndirty, dflag)
                nlive -= 1
                any_gone = True
                if trace:
                    ended[fid[s]] = t_new
                o = slot_owner[s]
                if o < 0:
                    mp_end = t_new
                else:
                    left[o] -= 1
                    ring_hit[o] = True
            else:
                i += 1
        t = t_new
        if any_gone:
            for r in range(R):
                if ring_hit[r] and left[r] == 0:
                    step[r] += 1
                    if step[r] < ring_steps[r]:
                        width = ring_off[r + 1] - ring_off[r]
                        for s in range(ring_off[r], ring_off[r + 1]):
                            rem_b[s] = slot_bytes[s]
                            rd[s] = t + delay[slot_cls[s]]
                            fid[s] = flow_base[r] + step[r] * width + s - ring_off[r]
                            pend[npend] = s
                            npend += 1
                            if trace:
                                issued[fid[s]] = t
                                ready_out[fid[s]] = rd[s]
                        left[r] = width
                        nlive += width
                    else:
                        ring_end[r] = t
    return t, ring_end, mp_end, events, solves, rounds, partial, fallbacks


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


def maxmin_rates(paths: list[np.ndarray], weights: np.ndarray, cap: np.ndarray,
                 tie: float = TIE) -> tuple[np.ndarray, int]:
    """One-off :func:`_maxmin` (the compiled solver) for ``paths``: per-flow rate of every
    class and the number of bottleneck arcs."""
    cap = np.asarray(cap, dtype=float)
    m, k = len(cap), len(paths)
    cptr, carc, cmult, aptr, acls = csr_of_paths(paths, m)
    rate = np.zeros(k)
    pops = _maxmin(np.asarray(weights, dtype=float), cptr, carc, cmult, aptr, acls, cap, rate,
                   np.zeros(m), np.zeros(m), np.zeros(m, dtype=np.int64), np.zeros(m + 1),
                   np.zeros(m + 1, dtype=np.int64), np.full(k, -1, dtype=np.int64),
                   np.zeros(k, dtype=np.int64), 0, tie, np.zeros(m, dtype=np.int64), np.zeros(m))
    return rate, int(pops)


def refill_rates(paths: list[np.ndarray], prev: np.ndarray, weights: np.ndarray,
                 cap: np.ndarray, tie: float = TIE, tight: bool = True) -> tuple[np.ndarray, bool]:
    """The max-min rates for ``weights`` computed incrementally (:func:`_refill`) from the
    rates for ``prev`` (``weights <= prev``), as the event loop does: with ``tight`` the
    tight set first and the connected component where its check fails; returns the rates
    and whether the tight set was used. For the tests."""
    cap = np.asarray(cap, dtype=float)
    m, k = len(cap), len(paths)
    prev = np.asarray(prev, dtype=float)
    w = np.asarray(weights, dtype=float)
    if (w > prev).any():
        raise ValueError("refill_rates: flows may only leave (weights <= prev)")
    cptr, carc, cmult, aptr, acls = csr_of_paths(paths, m)
    rate, _ = maxmin_rates(paths, prev, cap, tie)
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
               np.zeros(m))
    lowest = float(rate[lost].min())
    used_tight = False
    if tight:
        got = _refill(w, prev, chg, len(chg), lowest, cptr, carc, cmult, aptr, acls, cap, rate,
                      used, *work, 1, tie, *extra, True, *scratch)
        used_tight = got >= 0
    if not used_tight:
        _refill(w, prev, chg, len(chg), lowest, cptr, carc, cmult, aptr, acls, cap, rate,
                used, *work, 2, tie, *extra, False, *scratch)
    return rate, used_tight
