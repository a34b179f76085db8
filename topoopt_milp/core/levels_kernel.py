"""Max-min rates kept per bottleneck arc: the solver of the level engine (:mod:`.levelsim`).

A max-min fair allocation gives every class (path) with flows the *level* of one arc, its
bottleneck: progressive filling freezes the class at the first arc on its path that
saturates, at that arc's level. Grouping the classes by bottleneck arc (the arc's *group*),
the allocation is described per arc: the level ``L_a``; the weight of its group on it,
``D_a = sum_{c: g(c) = a} w_c m_ca`` (``w_c`` flows, ``m_ca`` times the path crosses ``a``);
and the bandwidth the other groups take on it, ``R_a = sum_{c: g(c) != a} w_c m_ca L_g(c)``.

**Certificate.** Given groups and levels with

1. ``L_a = (cap_a - R_a) / D_a > 0`` for every arc with a group (it is saturated),
2. ``R_a <= cap_a`` on every arc without one (feasible), and
3. ``L_g(c) <= L_a`` for every class ``c`` and every arc ``a`` with a group that ``c``
   crosses (no class crossing a bottleneck has a rate above its group's),

every class crosses a saturated arc on which no class has a higher rate, so the allocation is
max-min fair (Bertsekas and Gallager, *Data Networks*, 6.5.2), and it is unique. That is what
:func:`_level_solve` establishes after every change, to the tolerances ``CHECK_TOL``
(relative; 1e-12) and ``PROP_TOL`` (a level moving by less than 1e-14 relative is not
propagated); where it cannot, or where establishing it costs more than a solve from scratch
would (``WORK``), the caller solves from scratch (:func:`_rebuild`, the progressive filling
of :mod:`.maxmin_kernel`).

**Incremental solve.** When class counts change, ``D`` and ``R`` change on the arcs of
those classes. The levels are then re-solved from the equations in 1., arc by arc in the
order of their old levels (a min-heap of the arcs whose inputs changed; an arc's ``R``
comes from groups of lower level, so this order is topological, and an arc reached again is
simply recomputed): a level that moves by ``delta`` adds ``w_c m_ce delta`` to ``R_e`` of
every arc ``e`` its group's classes cross. Then 2. and 3. are checked on the arcs whose level
or group changed: 3. over each such group's classes (is any arc they cross lower?) and,
for an arc whose level dropped or that became a bottleneck, over every class crossing it
(is any of them faster?). A class that fails 3. moves (a *pivot*) to the lowest arc with a
group on its path, as progressive filling would freeze it there; the equations are solved
again and the check repeats. An event thus costs the arcs whose level changes and their
classes, not a progressive filling over every class whose rate changes.
"""

from __future__ import annotations

import numpy as np

from .jit import njit
from .maxmin_kernel import TIE, _heap_pop, _link, _maxmin, _sift_down, _unlink

CHECK_TOL = 1e-12  # relative: a class may exceed a bottleneck it crosses by this much
PROP_TOL = 1e-14  # relative: a level moving by less than this is left as it was
MAX_PIVOTS = 512  # per solve; more, and the caller solves from scratch
MAX_POPS = 64  # per solve, times the number of arcs
# A level solve gives up once it has visited more than WORK times the path entries of the
# classes with flows, plus one per arc (the caller passes that as ``budget``; visited =
# classes it re-levelled times their arcs, plus scanned arc lists): a solve from scratch
# costs about one pass over them. Without it, solves that pivot to the cap cost 0.1 s each on
# ncf-n128-d8 TP+LP (51 CPU s in all against 3.9-4.4 s for the class engine); with it 4.4 s,
# TF+LP 9.5 -> 9.1, bert-n128-d8 TF+LP 4.3 -> 2.5, mixed-n128-d4-g4-mp05 TF+LP 27.1 s (the
# budget on all path entries instead: 34.5-36.0). Measured, with the other budgets tried:
# benchmarks/bench_simulate.py.
WORK = 2


@njit(cache=True, inline="always")
def _push(a, key, hkey, hval, size):
    """Push arc ``a`` with ``key`` on the min-heap ``hkey, hval``; returns the new size."""
    i = size
    hkey[i] = key
    hval[i] = a
    while i > 0:
        p = (i - 1) >> 1
        if hkey[p] <= hkey[i]:
            break
        hkey[i], hkey[p] = hkey[p], hkey[i]
        hval[i], hval[p] = hval[p], hval[i]
        i = p
    return size + 1


@njit(cache=True, inline="always")
def _worth_a_pop(e, D, L, R, cap):
    """Whether arc ``e``, whose ``R`` just changed, must be popped from the heap: it has a group
    (its level equation changed), or it has none but still a level to reset to 0, or it is
    over capacity (its fastest classes must move). An arc with no group, level 0 and room
    left has nothing to do when popped, and on the LP-routed instances such arcs were half
    of all pops (bert-n64-d8 TF+LP: 14.2 M of 28.3 M), so they are not pushed."""
    return D[e] > 0 or L[e] != 0.0 or R[e] > cap[e] * (1 + CHECK_TOL)


@njit(cache=True)
def _pivot_target(c, h, w, cptr, carc, cmult, cap, D, R, L):
    """Where class ``c`` (group ``h``) goes when it runs faster than an arc it crosses allows:
    the arc on its path that would saturate first with ``c`` still open, i.e. the lowest
    ``(cap_e - R_e') / (D_e' + w_c m_ce)`` with ``R_e', D_e'`` without ``c`` (which does not
    depend on the rate ``c`` has now); -1 when that is ``h`` (to ``CHECK_TOL``)."""
    here = (cap[h] - R[h]) / D[h]
    best = here / (1 + CHECK_TOL)
    arg = -1
    for f in range(cptr[c], cptr[c + 1]):
        e = carc[f]
        if e == h:
            continue
        x = w[c] * cmult[f]
        lvl = (cap[e] - R[e] + x * L[h]) / (D[e] + x)
        if lvl < best:
            best = lvl
            arg = e
    return arg


@njit(cache=True)
def _join_arc(c, wc, cptr, carc, cmult, cap, D, R):
    """The arc class ``c`` (``wc`` flows, not on any arc's list yet) joins: the one on its
    path that would saturate first with it, ``(cap_e - R_e) / (D_e + wc m_ce)`` lowest
    (-1: no arc with capacity left)."""
    best = np.inf
    arg = -1
    for f in range(cptr[c], cptr[c + 1]):
        e = carc[f]
        lvl = (cap[e] - R[e]) / (D[e] + wc * cmult[f])
        if lvl > 0 and lvl < best:
            best = lvl
            arg = e
    return arg


@njit(cache=True)
def _raise_on_path(c, a, lvl, cptr, carc, mx):
    """Class ``c`` (group ``a``) now runs at ``lvl``: raise the bound ``mx`` of its other arcs."""
    for f in range(cptr[c], cptr[c + 1]):
        e = carc[f]
        if e != a and mx[e] < lvl:
            mx[e] = lvl


@njit(cache=True)
def _violates(c, h, cptr, carc, cap, D, R, L):
    """Whether class ``c`` of arc ``h``'s group breaks the certificate anywhere on its path:
    faster than a bottleneck it crosses, or crossing an arc without a group over capacity."""
    top = L[h] * (1 + CHECK_TOL)
    for f in range(cptr[c], cptr[c + 1]):
        e = carc[f]
        if e == h:
            continue
        if D[e] > 0:
            if L[e] * (1 + CHECK_TOL) < L[h]:
                return True
        elif R[e] > cap[e] * (1 + CHECK_TOL):
            return True
    return top < 0


@njit(cache=True)
def _pivot(c, h, e, w, g, bn, bhead, bnext, bprev, cptr, carc, cmult, cap, L, D, R, mx, Sacc,
           tS, t, sid, pst, hkey, hval, size):
    """Move class ``c`` from arc ``h``'s group to arc ``e``'s (a new group when ``e`` has
    none: its level from its own equation); ``D``, ``R`` and ``mx`` follow, every arc of
    ``c`` is pushed on the heap. Returns the heap's size."""
    if D[e] <= 0:
        Sacc[e] += L[e] * (t - tS[e])
        tS[e] = t
        for f in range(cptr[c], cptr[c + 1]):
            if carc[f] == e:
                L[e] = (cap[e] - R[e] + w[c] * cmult[f] * L[h]) / (w[c] * cmult[f])
    lh, le = L[h], L[e]
    for f in range(cptr[c], cptr[c + 1]):
        a = carc[f]
        x = w[c] * cmult[f]
        if a == h:
            D[h] -= x
            R[h] += x * le
        elif a == e:
            R[e] -= x * lh
            D[e] += x
        else:
            R[a] += x * (le - lh)
        if pst[a] != sid and _worth_a_pop(a, D, L, R, cap):
            pst[a] = sid
            size = _push(a, L[a], hkey, hval, size)
    _link(c, e, bn, bhead, bnext, bprev)
    g[c] = e
    _raise_on_path(c, e, le, cptr, carc, mx)
    return size


@njit(cache=True)
def _level_solve(dirty, ndirty, w, pw, g, bn, bhead, bnext, bprev, cptr, carc, cmult, aptr,
                 acls, aact, cap, L, D, R, mx, Sacc, tS, t, sid, pst, hkey, hval, viol, vsrc,
                 vst, moved, mst, out, budget):
    """Re-solve the levels after the counts of the classes ``dirty[:ndirty]`` changed from
    ``pw`` to ``w`` (module docstring). ``bn, bhead, bnext, bprev``: each class with flows
    on the list of its group's arc; ``g``: the group of every class (kept while it has no
    flows); ``mx``: per arc, an upper bound of the levels of the other groups' classes
    crossing it; ``Sacc, tS``: each arc's service counter, brought up to time ``t`` before
    its level changes. ``acls[aptr[a]:aptr[a] + aact[a]]``: the classes with flows crossing
    arc ``a`` (:func:`.levelsim._activate`; the scans for faster classes read only these).
    Classes that changed group are ``moved[:out[2]]``. Returns True with
    the certificate met, False when the caller must solve from scratch (a class with no arc
    with a group on its path, a level <= 0, an arc over capacity, or too many pivots, heap
    pops, or more than ``budget`` path entries visited); ``out``: heap pops, pivots, moved
    classes, scans of an arc's classes."""
    m = len(cap)
    size = 0
    nmoved = 0
    pops = 0
    pivots = 0
    scans = 0
    low = 0
    work = 0
    for i in range(ndirty):  # 1. the count changes, on D and R
        c = dirty[i]
        dw = w[c] - pw[c]
        if dw == 0:
            continue
        if pw[c] == 0:  # (re)joins the arc where the filling would freeze it, we guess
            a = _join_arc(c, w[c], cptr, carc, cmult, cap, D, R)
            if a < 0:
                return False
            if D[a] <= 0:  # a new group: its level from its own equation
                Sacc[a] += L[a] * (t - tS[a])
                tS[a] = t
                for f in range(cptr[c], cptr[c + 1]):
                    if carc[f] == a:
                        L[a] = (cap[a] - R[a]) / (w[c] * cmult[f])
            if g[c] != a:
                if mst[c] != sid:
                    mst[c] = sid
                    moved[nmoved] = c
                    nmoved += 1
                g[c] = a
            _link(c, a, bn, bhead, bnext, bprev)
            _raise_on_path(c, a, L[a], cptr, carc, mx)
        a = g[c]
        for f in range(cptr[c], cptr[c + 1]):
            e = carc[f]
            if e == a:
                D[a] += dw * cmult[f]
            else:
                R[e] += dw * cmult[f] * L[a]
            if pst[e] != sid and _worth_a_pop(e, D, L, R, cap):
                pst[e] = sid
                size = _push(e, L[e], hkey, hval, size)
        if w[c] == 0:
            _unlink(c, bn, bhead, bnext, bprev)
    nv = 0
    while True:
        while size > 0:  # 2. the equations in the order of the levels, each arc checked
            b = hval[0]
            size = _heap_pop(hkey, hval, size)
            pst[b] = 0
            pops += 1
            if pops > MAX_POPS * m or work > budget:
                return False
            if D[b] <= 0:  # no group: its counter stops (level 0), and it must not be full
                if L[b] != 0.0:
                    Sacc[b] += L[b] * (t - tS[b])
                    tS[b] = t
                    L[b] = 0.0
                if R[b] > cap[b] * (1 + CHECK_TOL):  # over capacity: its fastest classes
                    scans += 1
                    top = 0.0
                    for q in range(aptr[b], aptr[b] + aact[b]):
                        h = bn[acls[q]]
                        if h >= 0 and L[h] > top:
                            top = L[h]
                    for q in range(aptr[b], aptr[b] + aact[b]):
                        c = acls[q]
                        h = bn[c]
                        if h >= 0 and L[h] >= top and vst[c] != sid:
                            vst[c] = sid
                            vsrc[nv] = b
                            viol[nv] = c
                            nv += 1
                    if nv == 0:
                        return False
                continue
            lvl = (cap[b] - R[b]) / D[b]
            if not lvl > 0:
                low += 1  # its classes run at <= 0 for now: the faster ones must move here
            dl = lvl - L[b]
            if abs(dl) > PROP_TOL * lvl:
                Sacc[b] += L[b] * (t - tS[b])
                tS[b] = t
                L[b] = lvl
                c = bhead[b]
                while c >= 0:
                    x = w[c] * dl
                    work += cptr[c + 1] - cptr[c]
                    for f in range(cptr[c], cptr[c + 1]):
                        e = carc[f]
                        if e != b:
                            R[e] += x * cmult[f]
                            if mx[e] < lvl:
                                mx[e] = lvl
                            if pst[e] != sid and _worth_a_pop(e, D, L, R, cap):
                                pst[e] = sid
                                size = _push(e, L[e], hkey, hval, size)
                            # rising above an arc it crosses: move it now
                            if (dl > 0 and D[e] > 0 and lvl > L[e] * (1 + CHECK_TOL)
                                    and lvl * D[e] > (cap[e] - R[e]) * (1 + CHECK_TOL)
                                    and vst[c] != sid):
                                vst[c] = sid
                                vsrc[nv] = e
                                viol[nv] = c
                                nv += 1
                    c = bnext[c]
            if mx[b] > L[b] * (1 + CHECK_TOL):  # is a class crossing it faster? exactly
                scans += 1
                work += aact[b]
                top = 0.0
                for q in range(aptr[b], aptr[b] + aact[b]):
                    c = acls[q]
                    h = bn[c]
                    if h >= 0 and h != b:
                        if L[h] > top:
                            top = L[h]
                        if L[h] > L[b] * (1 + CHECK_TOL) and vst[c] != sid:
                            vst[c] = sid
                            vsrc[nv] = b
                            viol[nv] = c
                            nv += 1
                mx[b] = top
            if nv > 0:  # move the violators whose two arcs are solved; keep the others
                j = 0
                for i in range(nv):
                    c = viol[i]
                    h = bn[c]
                    e = -1
                    if pst[h] != sid:
                        e = _pivot_target(c, h, w, cptr, carc, cmult, cap, D, R, L)
                    if e >= 0:
                        pivots += 1
                        if pivots > MAX_PIVOTS:
                            return False
                        if mst[c] != sid:
                            mst[c] = sid
                            moved[nmoved] = c
                            nmoved += 1
                        vst[c] = 0
                        size = _pivot(c, h, e, w, g, bn, bhead, bnext, bprev, cptr, carc, cmult,
                                      cap, L, D, R, mx, Sacc, tS, t, sid, pst, hkey, hval, size)
                    else:
                        viol[j] = c
                        vsrc[j] = vsrc[i]
                        j += 1
                nv = j
        if nv == 0 and low > 0:  # a level <= 0 left with no faster class to move: give up
            for q in range(m):
                if D[q] > 0 and not L[q] > 0:
                    return False
            low = 0
        if nv == 0:
            out[0] = pops
            out[1] = pivots
            out[2] = nmoved
            out[3] = scans
            return True
        for i in range(nv):  # 3. every level solved: the violators left, checked again
            c = viol[i]
            vst[c] = 0
            h = bn[c]
            if not _violates(c, h, cptr, carc, cap, D, R, L):
                continue
            e = _pivot_target(c, h, w, cptr, carc, cmult, cap, D, R, L)
            if e < 0:
                return False
            pivots += 1
            if pivots > MAX_PIVOTS:
                return False
            if mst[c] != sid:
                mst[c] = sid
                moved[nmoved] = c
                nmoved += 1
            size = _pivot(c, h, e, w, g, bn, bhead, bnext, bprev, cptr, carc, cmult, cap, L, D,
                          R, mx, Sacc, tS, t, sid, pst, hkey, hval, size)
        nv = 0


@njit(cache=True)
def _rebuild(w, g, cptr, carc, cmult, aptr, acls, cap, crate, rem, load, used, touched, hkey,
             hval, stamp, ocls, sid, poparc, poplvl, bn, bhead, bnext, bprev, L, D, R, mx,
             Sacc, tS, t):
    """Solve from scratch (:func:`.maxmin_kernel._maxmin`) and set the groups, levels,
    ``D``, ``R`` and the bounds ``mx`` from it; every service counter is first brought up to time ``t`` (the
    levels change). Returns the number of bottleneck arcs."""
    m = len(cap)
    for a in range(m):
        Sacc[a] += L[a] * (t - tS[a])
        tS[a] = t
    pops = _maxmin(w, cptr, carc, cmult, aptr, acls, cap, crate, rem, load, used, touched, hkey,
                   hval, stamp, ocls, sid, TIE, poparc, poplvl, bn, bhead, bnext, bprev)
    for a in range(m):
        D[a] = 0.0
        R[a] = 0.0
        mx[a] = 0.0
        L[a] = 0.0  # arcs without a group keep level 0
    for c in range(len(w)):
        if w[c] > 0:
            a = bn[c]
            g[c] = a
            L[a] = crate[c]
            for f in range(cptr[c], cptr[c + 1]):
                e = carc[f]
                if e == a:
                    D[e] += w[c] * cmult[f]
                else:
                    R[e] += w[c] * cmult[f] * crate[c]
                    if mx[e] < crate[c]:
                        mx[e] = crate[c]
    return pops


__all__ = ["CHECK_TOL", "PROP_TOL", "WORK", "_level_solve", "_rebuild", "_sift_down"]
