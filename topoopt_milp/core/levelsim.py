"""The level engine's event loop (numba): the same model, events and tolerances as
:func:`.flowsim._run`, with the rates kept per bottleneck arc (:mod:`.levels_kernel`).

* **Rates.** A class's rate is the level of its group's arc (:mod:`.levels_kernel`). An event
  re-solves the levels that change and moves the few classes whose bottleneck changes; the
  classes whose rate changes only because their arc's level did are not visited.
* **Service counters.** Every arc ``a`` keeps ``S_a(t)``, the bytes one flow of its group
  has been served since the start, ``S_a(t) = Sacc_a + L_a (t - tS_a)`` (brought up to date
  whenever ``L_a`` changes). A flow of a class in group ``a`` with ``r`` bytes left at time
  ``t0`` ends when ``S_a`` reaches its *target* ``S_a(t0) + r``; when its class moves to
  another group at ``t``, the target is re-keyed to the same bytes left there. So a flow is
  touched when it starts, ends or changes group, never when its rate changes.
* **Next event.** Each group keeps the lowest target of its flows; the next end is the group
  whose lowest target is nearest in time, ``(target - S_a(t)) / L_a``. As in
  :mod:`.flowsim`, every flow within ``DONE_TOL`` of the interval to the next event ends
  with it. Service is measured against the time ``t``, not the interval (as
  :mod:`.flowsim` does), so when two events lie closer than the rounding of ``t`` (an ulp
  of ``t``, 1e-18 s at t = 5 ms; ends a few bytes apart), ``S_a`` can pass a flow's target
  by a rounding error before its end is seen: such a flow has 0 s left and ends at once
  (``dt`` is clamped at 0; without the clamp its negative time to end never fell within
  the tolerance and the loop did not advance).

Counts, slots (MP flows ``0..M-1``, ring ``r`` its slots ``off[r]..off[r+1]-1``), latency
phases, ring steps and the trace are those of :func:`.flowsim._run`.
"""

from __future__ import annotations

import numpy as np

from .flowsim import _next_steps, _start_slots
from .jit import njit
from .levels_kernel import WORK, _level_solve, _rebuild

DONE_TOL = 1e-9  # relative: a flow within this share of the interval of its end has ended
REFRESH = 1000  # a solve from scratch at least every REFRESH solves (no drift in R)


@njit(cache=True, inline="always")
def _service(a, t, Sacc, L, tS):
    """``S_a(t)``: bytes served to one flow of arc ``a``'s group up to time ``t``."""
    return Sacc[a] + L[a] * (t - tS[a])


@njit(cache=True)
def _lowest_target(a, bhead, bnext, chead, snext, tgt):
    """The lowest target of the flows of arc ``a``'s group (inf: none)."""
    low = np.inf
    c = bhead[a]
    while c >= 0:
        s = chead[c]
        while s >= 0:
            if tgt[s] < low:
                low = tgt[s]
            s = snext[s]
        c = bnext[c]
    return low


@njit(cache=True)
def _active_index(cptr, carc, aptr, acls):
    """``cpos[f]``: where class entry ``f`` (class ``c``, arc ``carc[f]``) sits in ``acls``,
    and its inverse ``qcf`` (the class entry of every position of ``acls``)."""
    cpos = np.zeros(len(carc), dtype=np.int64)
    qcf = np.zeros(len(acls), dtype=np.int64)
    for a in range(len(aptr) - 1):
        for q in range(aptr[a], aptr[a + 1]):
            c = acls[q]
            for f in range(cptr[c], cptr[c + 1]):
                if carc[f] == a:
                    cpos[f] = q
                    qcf[q] = f
    return cpos, qcf


@njit(cache=True, inline="always")
def _swap_entries(q, p, acls, cpos, qcf):
    """Swap positions ``q`` and ``p`` of ``acls`` (and their class entries' indexes)."""
    fq, fp = qcf[q], qcf[p]
    acls[q], acls[p] = acls[p], acls[q]
    qcf[q], qcf[p] = fp, fq
    cpos[fq], cpos[fp] = p, q


@njit(cache=True)
def _activate(c, on, cptr, carc, aptr, acls, aact, cpos, qcf):
    """Class ``c`` gained its first flow (``on``) or lost its last: move it into or out of
    the active prefix ``acls[aptr[a]:aptr[a] + aact[a]]`` of every arc ``a`` it crosses, by
    one swap each. The solver's scans for classes faster than an arc read only that prefix:
    the others have no flows (no group), and on LP-routed instances they are most of an
    arc's classes once the MP flows have ended (dlrm-n128-d4 TF+LP: 9,250 of 9,513 classes
    carry MP traffic only)."""
    for f in range(cptr[c], cptr[c + 1]):
        a = carc[f]
        if on:
            _swap_entries(cpos[f], aptr[a] + aact[a], acls, cpos, qcf)
            aact[a] += 1
        else:
            aact[a] -= 1
            _swap_entries(cpos[f], aptr[a] + aact[a], acls, cpos, qcf)


@njit(cache=True)
def _run_levels(cptr, carc, cmult, aptr, acls, cap, delay, slot_cls, slot_bytes, slot_owner,
                ring_off, ring_steps, flow_base, trace, issued, ready_out, ended):
    """The event loop (module docstring); arguments and results as :func:`.flowsim._run`
    (``rounds``: heap pops of the level solves and arcs saturated by solves from scratch;
    ``partial``: level solves; ``fallbacks``: level solves that fell back to a solve from
    scratch; ``retries``: pivots)."""
    k = len(cptr) - 1
    m = len(cap)
    S = len(slot_cls)
    R = len(ring_steps)
    n_mp = S if R == 0 else ring_off[0]
    # flows: target, ready time, id; per class a doubly linked list of its sending flows
    tgt = np.zeros(S)
    rd = np.zeros(S)
    fid = np.zeros(S, dtype=np.int64)
    snext = np.full(S, -1, dtype=np.int64)
    sprev = np.full(S, -1, dtype=np.int64)
    chead = np.full(k, -1, dtype=np.int64)
    fresh = np.zeros(S, dtype=np.int64)  # flows that started sending, not yet keyed
    pend = np.zeros(S, dtype=np.int64)
    step = np.zeros(R, dtype=np.int64)
    left = np.zeros(R, dtype=np.int64)
    ring_end = np.zeros(R)
    ring_hit = np.zeros(R, dtype=np.bool_)
    # classes
    w = np.zeros(k)
    pw = np.zeros(k)
    g = np.full(k, -1, dtype=np.int64)
    kg = np.full(k, -1, dtype=np.int64)  # the arc its flows' targets refer to
    dirty = np.zeros(k, dtype=np.int64)
    dflag = np.zeros(k, dtype=np.bool_)
    ndirty = 0
    bn = np.full(k, -1, dtype=np.int64)
    bnext = np.full(k, -1, dtype=np.int64)
    bprev = np.full(k, -1, dtype=np.int64)
    moved = np.zeros(k, dtype=np.int64)
    mst = np.zeros(k, dtype=np.int64)
    viol = np.zeros(k, dtype=np.int64)
    vsrc = np.zeros(k, dtype=np.int64)
    vst = np.zeros(k, dtype=np.int64)
    crate = np.zeros(k)
    stamp = np.full(k, -1, dtype=np.int64)
    ocls = np.zeros(k, dtype=np.int64)
    # arcs
    L = np.zeros(m)
    D = np.zeros(m)
    Ra = np.zeros(m)
    Sacc = np.zeros(m)
    tS = np.zeros(m)
    low = np.full(m, np.inf)  # lowest target of the group
    lowdirty = np.zeros(2 * m, dtype=np.int64)  # this event's and the last one's
    lst = np.zeros(m, dtype=np.int64)
    nlow = 0
    bhead = np.full(m, -1, dtype=np.int64)
    mx = np.zeros(m)
    pst = np.zeros(m, dtype=np.int64)
    hkey = np.zeros(m + 1)
    hval = np.zeros(m + 1, dtype=np.int64)
    rem = np.zeros(m)
    load = np.zeros(m)
    used = np.zeros(m)
    touched = np.zeros(m, dtype=np.int64)
    poparc = np.zeros(m, dtype=np.int64)
    poplvl = np.zeros(m)
    out = np.zeros(4, dtype=np.int64)
    sid = 0
    acls = acls.copy()  # each arc's classes with flows first (_activate)
    aact = np.zeros(m, dtype=np.int64)
    cpos, qcf = _active_index(cptr, carc, aptr, acls)
    npend = _start_slots(n_mp, R, ring_off, flow_base, slot_cls, delay, rd, fid, pend, left,
                         trace, issued, ready_out)
    nlive = npend
    t = 0.0
    mp_end = 0.0
    events = 0
    rounds = 0
    solves = 0
    partial = 0
    fallbacks = 0
    pivots = 0
    nact = 0
    anz = 0  # path entries of the classes with flows (what a solve from scratch visits)
    while nlive > 0:
        events += 1
        nfresh = 0
        i = 0
        while i < npend:  # flows whose latency phase is over start sending
            s = pend[i]
            if rd[s] <= t:
                npend -= 1
                pend[i] = pend[npend]
                c = slot_cls[s]
                q = chead[c]
                snext[s] = q
                sprev[s] = -1
                if q >= 0:
                    sprev[q] = s
                chead[c] = s
                tgt[s] = np.inf  # keyed after the solve
                fresh[nfresh] = s
                nfresh += 1
                nact += 1
                w[c] += 1.0
                if w[c] == 1.0:
                    _activate(c, True, cptr, carc, aptr, acls, aact, cpos, qcf)
                    anz += cptr[c + 1] - cptr[c]
                if not dflag[c]:
                    dflag[c] = True
                    dirty[ndirty] = c
                    ndirty += 1
            else:
                i += 1
        dt = np.inf
        if nact > 0:
            if ndirty > 0:
                changed = False
                for i in range(ndirty):
                    c = dirty[i]
                    dflag[c] = False
                    if w[c] != pw[c]:
                        changed = True
                        if g[c] >= 0 and lst[g[c]] != events:  # its group's flows change
                            lst[g[c]] = events
                            lowdirty[nlow] = g[c]
                            nlow += 1
                if changed:
                    sid += 1
                    ok = False
                    if solves % REFRESH != 0:
                        partial += 1
                        ok = _level_solve(dirty, ndirty, w, pw, g, bn, bhead, bnext, bprev,
                                          cptr, carc, cmult, aptr, acls, aact, cap, L, D, Ra, mx,
                                          Sacc, tS, t, sid, pst, hkey, hval, viol, vsrc, vst,
                                          moved, mst, out, WORK * (anz + m))
                        if ok:
                            rounds += out[0]
                            pivots += out[1]
                        else:
                            fallbacks += 1
                    if ok:  # re-key the flows of the classes that changed group
                        for i in range(out[2]):
                            c = moved[i]
                            for a in (kg[c], g[c]):
                                if a >= 0 and lst[a] != events:
                                    lst[a] = events
                                    lowdirty[nlow] = a
                                    nlow += 1
                            if kg[c] >= 0 and kg[c] != g[c] and chead[c] >= 0:
                                shift = _service(g[c], t, Sacc, L, tS) - _service(
                                    kg[c], t, Sacc, L, tS)
                                s = chead[c]
                                while s >= 0:
                                    tgt[s] += shift
                                    s = snext[s]
                            kg[c] = g[c]
                    else:
                        sid += 1
                        rounds += _rebuild(w, g, cptr, carc, cmult, aptr, acls, cap, crate, rem,
                                           load, used, touched, hkey, hval, stamp, ocls, sid,
                                           poparc, poplvl, bn, bhead, bnext, bprev, L, D, Ra,
                                           mx, Sacc, tS, t)
                        for c in range(k):  # every counter restarts at 0 (all are at t)
                            if w[c] > 0:
                                if kg[c] >= 0 and chead[c] >= 0:
                                    shift = Sacc[kg[c]]
                                    s = chead[c]
                                    while s >= 0:
                                        tgt[s] -= shift
                                        s = snext[s]
                                kg[c] = g[c]
                        for a in range(m):
                            Sacc[a] = 0.0
                        for a in range(m):
                            if lst[a] != events:
                                lst[a] = events
                                lowdirty[nlow] = a
                                nlow += 1
                    solves += 1
                for i in range(ndirty):
                    c = dirty[i]
                    pw[c] = w[c]
                ndirty = 0
            for i in range(nfresh):  # the flows that started: all their bytes left
                s = fresh[i]
                c = slot_cls[s]
                a = g[c]
                tgt[s] = _service(a, t, Sacc, L, tS) + slot_bytes[s]
                kg[c] = a
                if lst[a] != events:
                    lst[a] = events
                    lowdirty[nlow] = a
                    nlow += 1
        for i in range(nlow):
            a = lowdirty[i]
            low[a] = _lowest_target(a, bhead, bnext, chead, snext, tgt)
        nlow = 0
        if nact > 0:
            for a in range(m):
                if low[a] < np.inf:
                    tf = (low[a] - _service(a, t, Sacc, L, tS)) / L[a]
                    if tf < dt:
                        dt = tf
            if dt < 0.0:  # a target passed by rounding of t (module docstring): ends now
                dt = 0.0
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
        lim = dt * (1 + DONE_TOL)
        for a in range(m):
            if low[a] == np.inf:
                continue
            sa = _service(a, t, Sacc, L, tS)
            if (low[a] - sa) / L[a] > lim:
                continue
            lst[a] = events
            lowdirty[nlow] = a
            nlow += 1
            c = bhead[a]
            while c >= 0:
                s = chead[c]
                while s >= 0:
                    nxt = snext[s]
                    if (tgt[s] - sa) / L[a] <= lim:  # ends: off its class's list
                        p = sprev[s]
                        if p >= 0:
                            snext[p] = nxt
                        else:
                            chead[c] = nxt
                        if nxt >= 0:
                            sprev[nxt] = p
                        nact -= 1
                        w[c] -= 1.0
                        if w[c] == 0.0:
                            _activate(c, False, cptr, carc, aptr, acls, aact, cpos, qcf)
                            anz -= cptr[c + 1] - cptr[c]
                        if not dflag[c]:
                            dflag[c] = True
                            dirty[ndirty] = c
                            ndirty += 1
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
                    s = nxt
                c = bnext[c]
        t = t_new
        if any_gone:
            npend, added = _next_steps(R, ring_hit, left, step, ring_steps, ring_off, flow_base,
                                       slot_cls, delay, t, rd, fid, pend, npend, trace, issued,
                                       ready_out, ring_end)
            nlive += added
    return t, ring_end, mp_end, events, solves, rounds, partial, fallbacks, pivots
