"""Synthetic instance families: classic traffic patterns at realistic volumes.

Every generator returns a validated :class:`~topoopt_milp.core.instance.Instance` whose ``meta``
records ``{"generator": family, "params": {...}, "seed": seed}``, so a file says how to rebuild
it. Random families draw from ``numpy.random.default_rng(seed)`` only, so the same arguments
give the same instance and the same JSON bytes.

Families (``b`` = bytes per demand, volumes per training iteration):

* ``uniform``      all-to-all: every ordered pair ``(i, j)``, ``i != j``, sends ``b``.
* ``permutation``  a random derangement ``pi`` (no fixed points): ``i`` sends ``b`` to ``pi(i)``.
* ``shift``        ``i`` sends ``b`` to ``(i + s) mod n`` (the classic tornado pattern at
  ``s = ceil(n/2) - 1``; nearest neighbour at ``s = 1``).
* ``sparse``       ``pairs`` random distinct MP pairs plus ``groups`` random AllReduce groups,
  volumes log-uniform (heavy-tailed, as measured per-layer MP and per-group gradient volumes).
* ``dlrm``         DLRM-style: one AllReduce of the dense (MLP) gradients over all servers plus
  the embedding all-to-all. ``tables`` embedding tables are placed on random servers; a server
  holding ``t_i`` tables sends ``t_i * emb_bytes`` to every other server (pooled lookups, forward)
  and receives ``t_i * emb_bytes`` back from each of them (their gradients, backward).
* ``mixed``        AllReduce on coset sub-groups ``{r, r + n/g, ...}`` (the placements of a
  co-optimized strategy) plus random MP traffic scaled to a set share ``mp_share`` of all bytes,
  for controlled sweeps over the MP share.

Every family also takes the cluster options ``regular`` (default ``True``; needs ``n d`` even),
``compute_s`` and ``latency_us``, which go straight into the instance.

Default volumes follow the sizes in DESIGN.md (``1.2e9`` bytes of dense gradients, ``3.1e7``
bytes of embedding traffic per pair) and stay within ``1e5 .. 1e11`` bytes.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from ..core.instance import AllReduceGroup, Instance, InstanceError

DEFAULT_GBPS = 100.0


def _finish(
    family: str,
    params: dict[str, Any],
    *,
    n: int,
    degree: int,
    gbps: float,
    seed: int | None,
    allreduce=(),
    mp=(),
    regular: bool = True,
    compute_s: float = 0.0,
    latency_us: float = 0.0,
    name: str | None = None,
) -> Instance:
    """Build the instance with meta ``{generator, params, seed}`` and a descriptive name."""
    _check_volume_args(params)
    return Instance(
        n=int(n),
        degree=int(degree),
        link_gbps=float(gbps),
        allreduce=tuple(AllReduceGroup(tuple(int(m) for m in ms), float(b)) for ms, b in allreduce),
        mp=tuple((int(s), int(t), float(b)) for s, t, b in mp),
        regular=bool(regular),
        compute_s=float(compute_s),
        latency_us=float(latency_us),
        name=name or f"{family}-n{n}-d{degree}" + ("" if seed is None else f"-s{seed}"),
        meta={"generator": family, "params": params, "seed": seed},
    )


def _check_volume_args(params: dict[str, Any]) -> None:
    # Volumes are checked here (not only by Instance) so the message names the generator
    # parameter the user typed, e.g. "bytes", rather than "mp[0][2] (bytes)".
    for key, value in params.items():
        numeric = key.endswith("bytes") and isinstance(value, int | float)
        if numeric and (not math.isfinite(value) or value < 0):
            raise InstanceError(f"{key}: must be a finite non-negative number, got {value}")


def _check_n(n: int, minimum: int = 2) -> None:
    if n < minimum:
        raise InstanceError(f"n: need at least {minimum} servers, got {n}")


def uniform(
    n: int,
    degree: int,
    gbps: float = DEFAULT_GBPS,
    *,
    bytes: float = 1e7,
    seed: int | None = None,
    regular: bool = True,
    compute_s: float = 0.0,
    latency_us: float = 0.0,
) -> Instance:
    """All-to-all traffic: each of the ``n (n-1)`` ordered pairs sends ``bytes``.

    ``seed`` is unused (the pattern is deterministic) and only recorded."""
    _check_n(n)
    mp = [(i, j, bytes) for i in range(n) for j in range(n) if i != j]
    params = {"n": n, "degree": degree, "gbps": gbps, "bytes": bytes, "regular": regular}
    return _finish("uniform", params, n=n, degree=degree, gbps=gbps, seed=seed, mp=mp,
                   regular=regular, compute_s=compute_s, latency_us=latency_us)


def derangement(n: int, rng: np.random.Generator) -> np.ndarray:
    """A uniformly random permutation of ``0..n-1`` without fixed points (rejection sampling:
    a random permutation is a derangement with probability ~1/e, so ~2.7 draws on average)."""
    if n < 2:
        raise InstanceError(f"n: a derangement needs n >= 2, got {n}")
    while True:
        perm = rng.permutation(n)
        if not (perm == np.arange(n)).any():
            return perm


def permutation(
    n: int,
    degree: int,
    gbps: float = DEFAULT_GBPS,
    *,
    bytes: float = 1e8,
    seed: int = 0,
    regular: bool = True,
    compute_s: float = 0.0,
    latency_us: float = 0.0,
) -> Instance:
    """Random permutation traffic: ``i`` sends ``bytes`` to ``pi(i)``, ``pi`` a random
    derangement drawn with ``default_rng(seed)``."""
    _check_n(n)
    perm = derangement(n, np.random.default_rng(seed))
    mp = [(i, int(perm[i]), bytes) for i in range(n)]
    params = {"n": n, "degree": degree, "gbps": gbps, "bytes": bytes, "regular": regular}
    return _finish("permutation", params, n=n, degree=degree, gbps=gbps, seed=seed, mp=mp,
                   regular=regular, compute_s=compute_s, latency_us=latency_us)


def shift(
    n: int,
    degree: int,
    gbps: float = DEFAULT_GBPS,
    *,
    shift: int = 1,
    bytes: float = 1e8,
    seed: int | None = None,
    regular: bool = True,
    compute_s: float = 0.0,
    latency_us: float = 0.0,
) -> Instance:
    """Shift traffic: ``i`` sends ``bytes`` to ``(i + shift) mod n``; ``shift`` must not be
    a multiple of ``n`` (that would be a self-demand)."""
    _check_n(n)
    if shift % n == 0:
        raise InstanceError(f"shift: {shift} is a multiple of n = {n}; every demand would be a "
                            "self-demand")
    mp = [(i, (i + shift) % n, bytes) for i in range(n)]
    params = {"n": n, "degree": degree, "gbps": gbps, "shift": shift, "bytes": bytes,
              "regular": regular}
    return _finish("shift", params, n=n, degree=degree, gbps=gbps, seed=seed, mp=mp,
                   regular=regular, compute_s=compute_s,
                   latency_us=latency_us, name=f"shift{shift}-n{n}-d{degree}")


def _log_uniform(rng: np.random.Generator, lo: float, hi: float, size: int) -> np.ndarray:
    if not 0 < lo <= hi:
        raise InstanceError(f"volume range: need 0 < low <= high, got [{lo}, {hi}]")
    return np.exp(rng.uniform(math.log(lo), math.log(hi), size))


def _pair_ends(codes: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Ordered pairs ``(i, j)``, ``i != j``, indexed ``0 .. n(n-1)-1``: row ``i``, column ``j``
    skipping the diagonal."""
    src, col = np.divmod(codes, n - 1)
    return src, col + (col >= src)


def sparse(
    n: int,
    degree: int,
    gbps: float = DEFAULT_GBPS,
    *,
    pairs: int | None = None,
    groups: int = 2,
    group_size: int | None = None,
    mp_bytes: tuple[float, float] = (1e5, 1e9),
    ar_bytes: tuple[float, float] = (1e7, 1e10),
    seed: int = 0,
    regular: bool = True,
    compute_s: float = 0.0,
    latency_us: float = 0.0,
) -> Instance:
    """Random sparse traffic: ``pairs`` distinct ordered MP pairs (default ``n``) and ``groups``
    AllReduce groups of ``group_size`` distinct random members (default: a random size in
    ``2..n`` per group). Volumes are log-uniform in ``mp_bytes`` and ``ar_bytes``."""
    _check_n(n)
    max_pairs = n * (n - 1)
    pairs = n if pairs is None else pairs
    if not 0 <= pairs <= max_pairs:
        raise InstanceError(f"pairs: need 0..{max_pairs} distinct pairs for n = {n}, got {pairs}")
    if groups < 0:
        raise InstanceError(f"groups: must be non-negative, got {groups}")
    if group_size is not None and not 2 <= group_size <= n:
        raise InstanceError(f"group_size: need 2..{n}, got {group_size}")
    rng = np.random.default_rng(seed)
    src, dst = _pair_ends(np.sort(rng.choice(max_pairs, size=pairs, replace=False)), n)
    vols = _log_uniform(rng, *mp_bytes, pairs)
    mp = [(int(s), int(t), float(b)) for s, t, b in zip(src, dst, vols, strict=True)]
    allreduce = []
    for _ in range(groups):
        k = group_size if group_size is not None else int(rng.integers(2, n + 1))
        members = sorted(int(m) for m in rng.choice(n, size=k, replace=False))
        allreduce.append((members, float(_log_uniform(rng, *ar_bytes, 1)[0])))
    params = {"n": n, "degree": degree, "gbps": gbps, "pairs": pairs, "groups": groups,
              "group_size": group_size, "mp_bytes": list(mp_bytes), "ar_bytes": list(ar_bytes),
              "regular": regular}
    return _finish("sparse", params, n=n, degree=degree, gbps=gbps, seed=seed, mp=mp,
                   allreduce=allreduce, regular=regular, compute_s=compute_s, latency_us=latency_us)


def dlrm(
    n: int,
    degree: int,
    gbps: float = DEFAULT_GBPS,
    *,
    dense_bytes: float = 1.2e9,
    emb_bytes: float = 3.1e7,
    tables: int | None = None,
    seed: int = 0,
    regular: bool = True,
    compute_s: float = 0.05,
    latency_us: float = 0.0,
) -> Instance:
    """DLRM-style traffic: AllReduce of ``dense_bytes`` over all servers plus the embedding
    all-to-all of ``tables`` tables (default ``n``) placed on servers uniformly at random.

    With ``t_i`` tables on server ``i``, the demand ``i -> j`` is ``(t_i + t_j) * emb_bytes``:
    ``i``'s pooled lookups for ``j``'s samples (forward) plus the gradients of ``j``'s tables
    that ``i``'s samples produced (backward). Pairs with no table on either end carry nothing
    and are left out."""
    _check_n(n)
    tables = n if tables is None else tables
    if tables < 0:
        raise InstanceError(f"tables: must be non-negative, got {tables}")
    rng = np.random.default_rng(seed)
    counts = np.bincount(rng.integers(0, n, size=tables), minlength=n)
    mp = [
        (i, j, float((counts[i] + counts[j]) * emb_bytes))
        for i in range(n)
        for j in range(n)
        if i != j and counts[i] + counts[j] > 0 and emb_bytes > 0
    ]
    allreduce = [(list(range(n)), dense_bytes)] if dense_bytes > 0 else []
    params = {"n": n, "degree": degree, "gbps": gbps, "dense_bytes": dense_bytes,
              "emb_bytes": emb_bytes, "tables": tables, "regular": regular}
    return _finish("dlrm", params, n=n, degree=degree, gbps=gbps, seed=seed, mp=mp,
                   allreduce=allreduce, regular=regular, compute_s=compute_s, latency_us=latency_us)


MP_PATTERNS = ("dense", "sparse")
MP_SPREAD = 100.0  # relative MP weights lie in [1, MP_SPREAD] (two decades)


def _reciprocal_uniform(rng: np.random.Generator, lo: float, hi: float, size: int) -> np.ndarray:
    """``size`` draws ``1 / U(1/hi, 1/lo)`` in ``[lo, hi]``: density proportional to ``1/x^2``
    (heavy-tailed: half the draws below ``2 lo hi / (lo + hi)``).

    Only ``+ * /`` on numpy's raw doubles, which IEEE 754 rounds the same on every CPU; the
    ``exp`` of a log-uniform draw is not (numpy picks a SIMD ``exp`` per CPU, and the library's
    ``sparse`` files differ in the last digit between machines)."""
    u = rng.random(size)
    return 1.0 / (1.0 / hi + (1.0 / lo - 1.0 / hi) * u)


def coset_groups(n: int, groups: int | None, group_size: int | None) -> list[list[int]]:
    """Members of ``groups`` cosets of size ``g`` in ``Z_n``: coset ``r`` is
    ``{r, r + n/g, ..., r + (g-1) n/g}``, ``r = 0 .. groups-1``.

    ``g`` is ``group_size``, or ``n / groups``; ``groups`` defaults to ``n / g`` (every coset,
    each server in exactly one group), and to 2 when neither is given."""
    if group_size is None:
        groups = 2 if groups is None else groups
        if groups < 1 or n % groups:
            raise InstanceError(f"groups: must divide n = {n}, got {groups}")
        group_size = n // groups
    if not 2 <= group_size <= n or n % group_size:
        raise InstanceError(f"group_size: need a divisor of n = {n} in 2..{n}, got {group_size}")
    stride = n // group_size
    groups = stride if groups is None else groups
    if not 1 <= groups <= stride:
        raise InstanceError(f"groups: n = {n} has {stride} cosets of size {group_size}, got "
                            f"{groups}")
    return [[r + stride * k for k in range(group_size)] for r in range(groups)]


def mixed(
    n: int,
    degree: int,
    gbps: float = DEFAULT_GBPS,
    *,
    groups: int | None = None,
    group_size: int | None = None,
    ar_bytes: tuple[float, float] = (1.2e9, 1.2e9),
    mp_share: float = 0.3,
    mp_pattern: str = "dense",
    pairs: int | None = None,
    seed: int = 0,
    regular: bool = True,
    compute_s: float = 0.0,
    latency_us: float = 0.0,
) -> Instance:
    """Coset AllReduce plus MP traffic carrying a set share of the bytes.

    AllReduce: the cosets of :func:`coset_groups` (default two cosets of ``n/2``), group ``r``
    all-reducing ``S_r`` bytes drawn in ``ar_bytes`` (:func:`_reciprocal_uniform`; all equal to
    ``low`` when ``low == high``; the default ``1.2e9`` is the dense-gradient size of
    DESIGN.md). Its ring edges inject ``A = sum_r k * 2 (k-1)/k * S_r`` bytes.

    MP: the pattern's pairs get weights ``w_ij`` in ``[1, MP_SPREAD]`` (heavy-tailed, as
    activations between partitions), scaled to the total ``M = s / (1 - s) * A``, so that
    ``M / (A + M) = s`` = ``mp_share`` (up to rounding). ``dense``: every ordered pair
    ``i != j``; ``sparse``: ``pairs`` distinct random ordered pairs (default ``n``).

    Draws use arithmetic only, so the file is the same on every machine, not only per seed."""
    _check_n(n)
    if not (math.isfinite(mp_share) and 0 <= mp_share < 1):
        raise InstanceError(f"mp_share: must be in [0, 1), got {mp_share}")
    if mp_pattern not in MP_PATTERNS:
        raise InstanceError(f"mp_pattern: unknown {mp_pattern!r} (known: {', '.join(MP_PATTERNS)})")
    if mp_pattern == "dense" and pairs is not None:
        raise InstanceError("pairs: only with mp_pattern 'sparse' (dense uses every pair)")
    if not 0 < ar_bytes[0] <= ar_bytes[1] or not math.isfinite(ar_bytes[1]):
        raise InstanceError(f"ar_bytes: need 0 < low <= high (finite), got {list(ar_bytes)}")
    members = coset_groups(n, groups, group_size)
    rng = np.random.default_rng(seed)
    vols = _reciprocal_uniform(rng, *ar_bytes, len(members))
    if ar_bytes[0] == ar_bytes[1]:
        vols[:] = ar_bytes[0]  # exactly, not 1 / (1 / x)
    allreduce = [AllReduceGroup(tuple(ms), float(b)) for ms, b in zip(members, vols, strict=True)]
    ar_total = sum(len(g.members) * g.edge_bytes for g in allreduce)  # as Instance counts it
    max_pairs = n * (n - 1)
    count = max_pairs if mp_pattern == "dense" else (n if pairs is None else pairs)
    if not 0 <= count <= max_pairs:
        raise InstanceError(f"pairs: need 0..{max_pairs} distinct pairs for n = {n}, got {count}")
    codes = np.arange(max_pairs) if count == max_pairs else np.sort(
        rng.choice(max_pairs, size=count, replace=False))
    src, dst = _pair_ends(codes, n)
    weights = _reciprocal_uniform(rng, 1.0, MP_SPREAD, count)
    mp = []
    if mp_share > 0 and count:
        scale = mp_share / (1.0 - mp_share) * ar_total / math.fsum(weights)  # fsum: exact
        mp = [(int(a), int(b), float(w * scale)) for a, b, w in zip(src, dst, weights, strict=True)]
    elif mp_share > 0:
        raise InstanceError(f"pairs: an MP share of {mp_share} needs at least one pair")
    params = {"n": n, "degree": degree, "gbps": gbps, "groups": len(members),
              "group_size": len(members[0]), "ar_bytes": list(ar_bytes), "mp_share": mp_share,
              "mp_pattern": mp_pattern, "pairs": count, "regular": regular}
    return _finish("mixed", params, n=n, degree=degree, gbps=gbps, seed=seed, mp=mp,
                   allreduce=[(g.members, g.bytes) for g in allreduce], regular=regular,
                   compute_s=compute_s, latency_us=latency_us)


FAMILIES: dict[str, Callable[..., Instance]] = {
    "uniform": uniform,
    "permutation": permutation,
    "shift": shift,
    "sparse": sparse,
    "dlrm": dlrm,
    "mixed": mixed,
}


def family_options(family: str) -> tuple[str, ...]:
    """Keyword options a family accepts (besides ``n``, ``degree``, ``gbps``)."""
    sig = inspect.signature(get(family))
    return tuple(p for p in sig.parameters if p not in ("n", "degree", "gbps"))


def get(family: str) -> Callable[..., Instance]:
    try:
        return FAMILIES[family]
    except KeyError:
        raise InstanceError(
            f"pattern: unknown traffic pattern {family!r} (known: {', '.join(FAMILIES)})"
        ) from None


def generate(family: str, n: int, degree: int, gbps: float = DEFAULT_GBPS, **options: Any) -> Instance:
    """Build an instance of a named family; an option the family does not take is an error
    that names it."""
    func = get(family)
    allowed = family_options(family)
    for key in options:
        if key not in allowed:
            raise InstanceError(
                f"{key}: not an option of traffic pattern {family!r} (options: {', '.join(allowed)})"
            )
    return func(n, degree, gbps, **options)
