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
* **Tight refills** (:mod:`.maxmin_kernel`). The component is often most of the network
  (on ncf n = 128, d = 8 every arc is saturated, at 1023 distinct levels, and a refill
  re-saturated a median 569 of 1024 arcs). Each refill first tries a smaller set: the
  classes the old filling froze at an arc the changed classes touch (every arc keeps the
  list of the classes frozen at it, so finding them is no pass over the arc's classes),
  checked by the bottleneck characterisation of max-min fairness as each arc saturates.
  Where the check fails at a class, the refill is undone and retried with that class in the
  set (up to ``GROW`` times), and only then is the component re-filled. Measured on that
  instance with TopologyFinder's solution (85,013 events): a solve changes the rates of
  1,252 classes on average (of 9,491), and the tight set holds 1,215: the set is as small as
  the change. With the retries no refill fell back to the component (9,982 retries instead
  of 9,494 component refills).

Without numba (an environment that cannot install it) the same functions run as plain
Python: correct, but far slower; :mod:`.simulate` then uses the numpy loop instead.
"""

from __future__ import annotations

import numpy as np

from .jit import HAVE_NUMBA, njit  # noqa: F401 - HAVE_NUMBA read by core/simulate.py
from .maxmin_kernel import (  # noqa: F401 - csr_of_paths, maxmin_rates, refill_rates: re-exported
    GROW,
    TIE,
    _after_leave,
    _maxmin,
    csr_of_paths,
    maxmin_rates,
    refill_rates,
)

DONE_TOL = 1e-9  # relative: a flow within this share of the interval of its end has ended
REFRESH = 1000  # a solve from scratch at least every REFRESH solves (no drift in ``used``)


@njit(cache=True, inline="always")
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
def _start_slots(n_mp, R, ring_off, flow_base, slot_cls, delay, rd, fid, pend, left, trace,
                 issued, ready_out):  # pragma: no cover - compiled
    """Every slot at ``t = 0``: its flow id (``fid``), the end of its latency phase (``rd``),
    in the pending list (``pend``); ``left[r]``: ring ``r``'s live slots; with ``trace`` the
    issue and ready times of every first flow. Returns the number of slots (all pending,
    all live). Shared by both event loops (:func:`_run`, :func:`.levelsim._run_levels`)."""
    npend = 0
    for s in range(n_mp):
        rd[s] = delay[slot_cls[s]]
        fid[s] = s
        pend[npend] = s
        npend += 1
        if trace:
            issued[s] = 0.0
            ready_out[s] = rd[s]
    for r in range(R):
        for s in range(ring_off[r], ring_off[r + 1]):
            rd[s] = delay[slot_cls[s]]
            fid[s] = flow_base[r] + s - ring_off[r]
            pend[npend] = s
            npend += 1
            if trace:
                issued[fid[s]] = 0.0
                ready_out[fid[s]] = rd[s]
        left[r] = ring_off[r + 1] - ring_off[r]
    return npend


@njit(cache=True)
def _next_steps(R, ring_hit, left, step, ring_steps, ring_off, flow_base, slot_cls, delay, t,
                rd, fid, pend, npend, trace, issued, ready_out, ring_end
                ):  # pragma: no cover - compiled
    """After an event at ``t`` that ended flows: every ring whose step just finished
    (``ring_hit``, no live slot left) issues its next step (new flow ids, latency phase
    ending at ``t + delay``, pending) or, after its last step, ends at ``t``. Returns the
    pending count and the number of new live slots. Shared by both event loops."""
    added = 0
    for r in range(R):
        if ring_hit[r] and left[r] == 0:
            step[r] += 1
            if step[r] < ring_steps[r]:
                width = ring_off[r + 1] - ring_off[r]
                for s in range(ring_off[r], ring_off[r + 1]):
                    rd[s] = t + delay[slot_cls[s]]
                    fid[s] = flow_base[r] + step[r] * width + s - ring_off[r]
                    pend[npend] = s
                    npend += 1
                    if trace:
                        issued[fid[s]] = t
                        ready_out[fid[s]] = rd[s]
                left[r] = width
                added += width
            else:
                ring_end[r] = t
    return npend, added


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
    retries = 0
    sbn = np.zeros(k, dtype=np.int64)
    bn = np.full(k, -1, dtype=np.int64)  # the arc each class is frozen at, and per arc the
    bhead = np.full(m, -1, dtype=np.int64)  # list of its classes (doubly linked)
    bnext = np.full(k, -1, dtype=np.int64)
    bprev = np.full(k, -1, dtype=np.int64)
    nout = np.zeros(1, dtype=np.int64)
    ring_hit = np.zeros(R, dtype=np.bool_)
    tfin = np.zeros(S)
    npend = _start_slots(n_mp, R, ring_off, flow_base, slot_cls, delay, rd, fid, pend, left,
                         trace, issued, ready_out)
    nlive = npend
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
                rem_b[s] = slot_bytes[s]  # its bytes: read only while sending
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
                                          rem, load, used, touched, hkey, hval, stamp, ocls,
                                          sid, TIE, poparc, poplvl, bn, bhead, bnext, bprev)
                    else:
                        got, tries, fell, sid = _after_leave(
                            counts, prev, chg, nchg, lowest, cptr, carc, cmult, aptr, acls, cap,
                            crate, used, rem, load, touched, seen, hkey, hval, stamp, ocls, sid,
                            TIE, poparc, poplvl, ins, scls, srate, sused, sbn, bn, bhead, bnext,
                            bprev, nout, GROW)
                        retries += tries
                        fallbacks += fell
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
            npend, added = _next_steps(R, ring_hit, left, step, ring_steps, ring_off, flow_base,
                                       slot_cls, delay, t, rd, fid, pend, npend, trace, issued,
                                       ready_out, ring_end)
            nlive += added
    return t, ring_end, mp_end, events, solves, rounds, partial, fallbacks, retries
