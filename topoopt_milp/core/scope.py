"""Bound scope: the set of solutions a bound (or an optimality claim) is valid for.

A gap ``(objective - bound) / objective`` means something only when the bound is valid for the
solution, i.e. when the solution lies in the bound's *scope* (DESIGN.md section 10). A
:class:`Scope` is that set, as data, in three dimensions:

* **topologies** -- ``any`` (every link matrix with the instance's port budget, optionally with
  at most ``max_multiplicity`` parallel links per pair), ``circulant`` (circulants whose distinct
  jumps ``p <= n/2`` come from ``candidates``; the select family) or ``fixed`` (the one topology
  with hash ``topology_hash``; the route family);
* **AllReduce rings** -- ``any`` (every ring order; the analytic bounds), ``totient`` (the
  TotientPerms candidate orders ``member[(i m) mod k]``, ``gcd(m, k) = 1``, with a free split:
  alloc-milp, alloc-benders, select-milp), ``orders`` (at most ``rings_per_group`` arbitrary
  orders per group, free split: joint-milp) or ``fixed`` (exactly the rings with hash
  ``rings_hash``, orders and shares);
* **routing** -- ``fractional`` (every routing) or ``restricted`` (a model's own path set,
  unsplittable flows, integer-scaled volumes or equal ring shares: ``detail`` says which).

A solution is summarised by its :class:`Features` (topology hash, circulant jumps, largest
multiplicity, whether its rings are TotientPerms orders, orders per group, rings hash).
:meth:`Scope.covers` decides membership; it is the one rule every table, ``compare``, the
reference values and :attr:`SolveResult.gap` use. A restricted scope covers no solution but its
own model's, so restricted bounds never enter another method's gap.

Scope levels (DESIGN section 10): 1 = ``any`` topology, 2 = ``circulant``, 3 = restricted,
4 = ``fixed`` topology. A method's result is ``optimal`` only when proven within its family's
own problem (level 1 for alloc / joint, 2 for select, 4 for route); a restricted proof is
reported as ``scope_status = "optimal"`` with status ``feasible``.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from .circulant import circulant_jumps, is_totient_order

if TYPE_CHECKING:
    from .instance import Instance
    from .topology import Ring, Routing, Topology

TOPOLOGIES = ("any", "circulant", "fixed")
RING_SPACES = ("any", "totient", "orders", "fixed")
ROUTINGS = ("fractional", "restricted")
UNKNOWN_COUNT = 2**31  # a count a stored row does not give: larger than any cap


def topology_hash(links: np.ndarray) -> str:
    """Hash (16 hex digits) of a link matrix, for fixed-topology scopes."""
    L = np.asarray(links, dtype=np.int64)
    i, j = np.nonzero(L)
    up = i < j  # np.triu's nonzeros in the same (row-major) order, without its n x n copy
    i, j = i[up], j[up]
    text = json.dumps([int(L.shape[0]), [[a, b, c] for a, b, c in
                                         zip(i.tolist(), j.tolist(), L[i, j].tolist())]])
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def rings_hash(rings) -> str:
    """Hash of ring orders and shares (orders rotated to start at their smallest member, shares
    rounded to 12 digits so that a file round trip keeps the hash)."""
    items = sorted((int(r.group), _rotated(r.order), round(float(r.share), 12)) for r in rings)
    return hashlib.sha256(json.dumps(items).encode()).hexdigest()[:16]


def _rotated(order) -> list[int]:
    k = order.index(min(order))
    return [int(x) for x in (*order[k:], *order[:k])]


@dataclass(frozen=True)
class Features:
    """What a scope needs to know about one solution."""

    topology_hash: str
    jumps: tuple[int, ...] | None  # distinct jumps p <= n/2 if a circulant of single rings
    max_multiplicity: int
    rings_totient: bool
    orders_per_group: int
    rings_hash: str

    @classmethod
    def of(cls, instance: Instance, topology: Topology, routing: Routing) -> Features:
        per_group: dict[int, set] = {}
        totient = True
        for r in routing.rings:
            order = tuple(_rotated(r.order))
            per_group.setdefault(r.group, set()).add(order)
            totient = totient and is_totient_order(instance.allreduce[r.group].members, order)
        return cls(
            topology_hash=topology_hash(topology.links),
            jumps=circulant_single_jumps(topology.links),
            max_multiplicity=int(topology.links.max()) if topology.n else 0,
            rings_totient=totient,
            orders_per_group=max((len(v) for v in per_group.values()), default=0),
            rings_hash=rings_hash(routing.rings),
        )

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["jumps"] = None if self.jumps is None else list(self.jumps)
        return d

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Features:
        """The features of a stored row. A key missing (a row written by an older version)
        takes the value that claims least: no hash, not a circulant, unbounded multiplicity
        and orders, rings outside the TotientPerms space; so such a row is covered only by
        the scopes that need none of it (every topology and ring order)."""
        jumps = data.get("jumps")
        return cls(str(data.get("topology_hash") or ""), None if jumps is None else tuple(jumps),
                   int(data.get("max_multiplicity", UNKNOWN_COUNT)),
                   bool(data.get("rings_totient", False)),
                   int(data.get("orders_per_group", UNKNOWN_COUNT)),
                   str(data.get("rings_hash") or ""))


def circulant_single_jumps(links: np.ndarray) -> tuple[int, ...] | None:
    """Distinct jumps ``p <= n/2`` if ``links`` is the circulant of single rings over them."""
    jumps = circulant_jumps(links)
    return None if jumps is None or len(set(jumps)) != len(jumps) else jumps


@dataclass(frozen=True)
class Scope:
    """The solutions a bound is valid for (module docstring)."""

    topology: str = "any"
    candidates: tuple[int, ...] | None = None
    topology_hash: str | None = None
    max_multiplicity: int | None = None
    rings: str = "any"
    rings_per_group: int | None = None
    rings_hash: str | None = None
    routing: str = "fractional"
    detail: str = ""

    def __post_init__(self) -> None:
        if self.topology not in TOPOLOGIES or self.rings not in RING_SPACES \
                or self.routing not in ROUTINGS:
            raise ValueError(f"scope: invalid {self}")
        if self.candidates is not None:
            object.__setattr__(self, "candidates", tuple(int(p) for p in self.candidates))

    @property
    def restricted(self) -> bool:
        return self.routing == "restricted"

    @property
    def level(self) -> int:
        """DESIGN section 10: 1 any topology, 2 circulant, 3 restricted, 4 fixed topology."""
        if self.restricted:
            return 3
        return {"any": 1, "circulant": 2, "fixed": 4}[self.topology]

    def covers(self, f: Features | None) -> bool:
        """Whether a solution lies in this scope: the one rule behind every gap.

        Parameters
        ----------
        f : Features or None
            The solution's features (:meth:`Features.of`); ``None`` when unknown, covered
            only by the widest scope (every topology, every ring order, no multiplicity cap).

        Returns
        -------
        bool
            ``False`` for a restricted scope (its bound holds only inside its own model);
            otherwise ``True`` when the solution's topology is in the topology space
            (circulant jumps among ``candidates``, the ``fixed`` topology's hash, at most
            ``max_multiplicity`` parallel links) and its rings are in the ring space
            (TotientPerms orders, at most ``rings_per_group`` orders per group, or the
            ``fixed`` rings' hash).
        """
        if self.restricted:
            return False
        if f is None:
            return self.topology == "any" and self.rings == "any" and self.max_multiplicity is None
        if self.topology == "circulant" and (f.jumps is None or not set(f.jumps) <= set(
                self.candidates or ())):
            return False
        if self.topology == "fixed" and f.topology_hash != self.topology_hash:
            return False
        if self.max_multiplicity is not None and f.max_multiplicity > self.max_multiplicity:
            return False
        if self.rings == "totient" and not f.rings_totient:
            return False
        if self.rings == "orders" and f.orders_per_group > (self.rings_per_group or 0):
            return False
        return not (self.rings == "fixed" and f.rings_hash != self.rings_hash)

    def describe(self) -> str:
        """One line for tables: ``topologies; rings; routing``."""
        topo = {"any": "every topology with the port budget",
                "circulant": f"circulants with jumps from {_jump_text(self.candidates)}"
                if self.candidates is not None else "circulants with jumps from the candidate set",
                "fixed": f"the fixed topology {self.topology_hash}" if self.topology_hash
                else "the instance's fixed topology"}[self.topology]
        if self.topology == "any" and self.max_multiplicity is not None:
            topo += f" (at most {self.max_multiplicity} links per pair)"
        rings = {"any": "any ring orders", "totient": "TotientPerms ring orders, free split",
                 "orders": f"any {self.rings_per_group} ring orders per group, free split",
                 "fixed": f"fixed rings {self.rings_hash}" if self.rings_hash
                 else "the given rings"}[self.rings]
        routing = "fractional routing" if not self.restricted else f"restricted: {self.detail}"
        return f"{topo}; {rings}; {routing}"

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["candidates"] = None if self.candidates is None else list(self.candidates)
        return d

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Scope:
        known = {k: data[k] for k in cls.__dataclass_fields__ if k in data}
        if known.get("candidates") is not None:
            known["candidates"] = tuple(known["candidates"])
        return cls(**known)


def _jump_text(cands) -> str:
    cands = list(cands or ())
    if len(cands) <= 6:
        return "{" + ", ".join(map(str, cands)) + "}"
    return "{" + ", ".join(map(str, cands[:3])) + f", ..., {cands[-1]}" + "} " + f"({len(cands)})"


ANALYTIC = Scope()  # ideal switch, Moore-type bounds: every topology, every ring, every routing


def ring_scope(mode: str, rings: tuple[Ring, ...] | None = None, rings_per_group: int | None = None):
    """``(rings, rings_per_group, rings_hash)`` arguments of a scope for a ring mode: ``choose``
    (TotientPerms orders, free split), ``orders`` (``rings_per_group`` free orders) or a fixed
    set of ``rings``."""
    if mode == "choose":
        return {"rings": "totient"}
    if mode == "orders":
        return {"rings": "orders", "rings_per_group": rings_per_group}
    if mode == "any":
        return {"rings": "any"}
    return {"rings": "fixed", "rings_hash": rings_hash(rings or ())}


# The two ring scopes a certificate reports (``certify``, the headline): ``any`` = every
# topology with the port budget and every ring order (the instance's own problem), ``totient``
# = every such topology with rings split freely over the TotientPerms orders.
CERTIFIED_SPACES = {"any": "any ring order", "totient": "TotientPerms ring orders"}


def space_features(rings: str) -> Features | None:
    """A stand-in for *every* solution of a ring space (:data:`CERTIFIED_SPACES`), for
    :meth:`Scope.covers`: a scope covers it exactly when it contains every such solution
    (every topology with the port budget, any multiplicity, fractional routing). ``any``
    gives ``None`` (covered only by the widest scope); ``totient`` claims TotientPerms rings
    and nothing else (no hash, no circulant jumps, unbounded multiplicity and orders)."""
    if rings == "any":
        return None
    if rings == "totient":
        return Features("", None, UNKNOWN_COUNT, True, UNKNOWN_COUNT, "")
    raise ValueError(f"rings: unknown ring space {rings!r} (known: {', '.join(CERTIFIED_SPACES)})")
