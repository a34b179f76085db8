"""The scope rule as a table: scope x solution features -> covers (DESIGN.md section 10)."""

from __future__ import annotations

import pytest

from topoopt_milp.core.scope import ANALYTIC, Features, Scope

CIRC = Features("t1", (1, 5), 1, True, 1, "r1")  # a circulant with TotientPerms rings
DENSE = Features("t2", None, 3, False, 2, "r2")  # 3 parallel links, two free orders per group

TABLE = [
    # scope, features, covers
    (ANALYTIC, CIRC, True),
    (ANALYTIC, DENSE, True),
    (ANALYTIC, None, True),
    (Scope(rings="totient"), CIRC, True),
    (Scope(rings="totient"), DENSE, False),  # rings outside the TotientPerms orders
    (Scope(rings="totient"), None, False),
    (Scope(max_multiplicity=2), DENSE, False),
    (Scope(max_multiplicity=3), DENSE, True),
    (Scope(rings="orders", rings_per_group=1), DENSE, False),
    (Scope(rings="orders", rings_per_group=2), DENSE, True),
    (Scope(topology="circulant", candidates=(1, 3, 5)), CIRC, True),
    (Scope(topology="circulant", candidates=(1, 3)), CIRC, False),
    (Scope(topology="circulant", candidates=(1, 3, 5)), DENSE, False),
    (Scope(topology="fixed", topology_hash="t1", rings="fixed", rings_hash="r1"), CIRC, True),
    (Scope(topology="fixed", topology_hash="t1", rings="fixed", rings_hash="r9"), CIRC, False),
    (Scope(topology="fixed", topology_hash="t9"), CIRC, False),
    (Scope(routing="restricted", detail="k paths"), CIRC, False),  # never outside its model
]


@pytest.mark.parametrize("scope, features, covers", TABLE)
def test_covers(scope, features, covers):
    assert scope.covers(features) is covers


def test_a_stored_row_without_some_keys_loads_and_claims_least():
    old = Features.from_dict({"topology_hash": "t1", "jumps": [1, 5]})  # older store rows
    assert ANALYTIC.covers(old)
    assert not Scope(rings="totient").covers(old)
    assert not Scope(max_multiplicity=4).covers(old)
    assert not Scope(rings="orders", rings_per_group=8).covers(old)
    assert Features.from_dict({}).topology_hash == ""


def test_scope_round_trip_and_description():
    for scope, _, _ in TABLE:
        assert Scope.from_dict(scope.to_dict()) == scope
        assert scope.describe()
    assert "the instance's fixed topology" in Scope(topology="fixed").describe()
