"""The one search every counting bound ends with: the least capacity at which its inequality
holds.

Each bound of this package reduces to "a solution of time ``T`` has ``excess(B T) <= 0``" for a
function ``excess`` that does not increase with the capacity ``c`` (a byte-hop or capacity
count minus the capacity). The capacities meeting the inequality then form a half-line
``[c*, inf)``, and any ``c`` with ``excess(c) > 0`` is a valid bound: ``B T > c``.
"""

from __future__ import annotations

import math
from collections.abc import Callable


def last_failing(excess: Callable[[float], float], lo: float = 0.0, hi: float = 1.0,
                 rel: float = 1e-12, steps: int = 200, cap: float = 1e30) -> float:
    """The largest ``c`` found with ``excess(c) > 0``, by doubling ``hi`` until the inequality
    holds and then bisecting to a relative width ``rel`` (at most ``steps`` halvings);
    ``inf`` when it still fails beyond ``cap``. ``lo`` must fail (or be 0)."""
    while excess(hi) > 0:
        lo, hi = hi, 2 * hi
        if hi > cap:
            return math.inf
    for _ in range(steps):
        mid = 0.5 * (lo + hi)
        if excess(mid) > 0:
            lo = mid
        else:
            hi = mid
        if hi - lo <= rel * hi:
            break
    return lo
