"""SNDlib reader: parsing (comments, parallel links, modules), shared link capacities, and
minimum congestion computed by hand."""

from __future__ import annotations

import json

import pytest

from topoopt_milp import registry
from topoopt_milp.cli import main
from topoopt_milp.core.evaluate import shared_congestion as congestion
from topoopt_milp.core.instance import InstanceError
from topoopt_milp.core.result import Status
from topoopt_milp.core.sndlib import parse_sndlib, read_sndlib
from topoopt_milp.core.topology import fixed_topology as sndlib_topology
from topoopt_milp.core.topology import link_capacities


@pytest.fixture
def tri(data_dir):
    return data_dir / "sndlib" / "tri.txt"


@pytest.fixture
def square(data_dir):
    return data_dir / "sndlib" / "square.txt"


def test_parse_triangle(tri):
    inst = read_sndlib(tri)
    assert inst.name == "tri" and inst.n == 3 and not inst.regular
    assert inst.mp == ((0, 1, 12.0), (1, 2, 2.0))
    assert inst.link_bytes_per_s == pytest.approx(1.0)
    # L1 (A B) 4 and L2 (B A) 6 are parallel: capacities add
    assert link_capacities(inst) == {(0, 1): 10.0, (0, 2): 5.0, (1, 2): 5.0}
    assert sndlib_topology(inst).link_list() == [[0, 1, 1], [0, 2, 1], [1, 2, 1]]
    unit = read_sndlib(tri, capacity="unit")
    assert link_capacities(unit) == {(0, 1): 2.0, (0, 2): 1.0, (1, 2): 1.0}


def test_zero_capacity_link_is_absent_with_file_capacities(square):
    inst = read_sndlib(square)
    assert (0, 2) not in link_capacities(inst)  # diagonal N1-N3 has 0 installed
    assert link_capacities(inst)[(0, 3)] == 1.0  # 0.5 + 0.5 in opposite directions
    assert inst.degree == 2
    unit = read_sndlib(square, capacity="unit")
    assert link_capacities(unit)[(0, 2)] == 1.0 and unit.degree == 3


@pytest.mark.parametrize(
    "fname, capacity, expected",
    [
        # A->B 12 direct (cap 10) or via C (5, 5); B->C 2 shares B-C: AB + BC rows give
        # 14 <= 15 U, attained with 28/3 direct.
        ("tri.txt", "file", 14 / 15),
        ("tri.txt", "unit", 14 / 3),  # same cut with capacities 2, 1: 14 <= 3 U
        # N1<->N3 4 units in total over N1-N2-N3 (cap 2) and N1-N4-N3 (cap 1): a/2 = 4 - a
        ("square.txt", "file", 4 / 3),
        ("square.txt", "unit", 4 / 3),  # three paths of capacity 1 (the diagonal exists)
    ],
)
def test_min_congestion_by_hand(data_dir, fname, capacity, expected):
    inst = read_sndlib(data_dir / "sndlib" / fname, capacity=capacity)
    for solver in ("highs", "cbc"):
        res = registry.solve(inst, "route-milp", solver=solver)
        assert res.status is Status.OPTIMAL
        assert res.objective_kind == "max_link_utilization"
        assert res.objective == pytest.approx(expected, rel=1e-6)
        assert res.bound == pytest.approx(expected, rel=1e-6)
        assert congestion(inst, res.routing) == pytest.approx(res.objective, rel=1e-12)


def test_opposite_directions_share_capacity(square):
    inst = read_sndlib(square)
    res = registry.solve(inst, "route-milp")
    # per-direction accounting would allow 3 / 3 = 1 (N1->N3 alone); sharing gives 4/3
    assert res.objective > 1.0 + 1e-6


def test_unsplittable_and_cpsat_on_sndlib(tri):
    inst = read_sndlib(tri, capacity="unit")
    # one path per demand: A->B direct (cap 2) -> 6, B->C direct -> 2
    milp = registry.solve(inst, "route-milp", variant='unsplittable')
    cp = registry.solve(inst, "route-cpsat")
    assert milp.objective == pytest.approx(6.0) and cp.objective == pytest.approx(6.0)
    # one path per commodity is a restriction of the route problem: optimal within it only
    for res in (milp, cp):
        assert res.status is Status.FEASIBLE and res.scope_status == "optimal"
        assert res.scope.restricted


def test_parse_errors_name_the_problem():
    good_nodes = "NODES ( A ( 0 0 ) B ( 1 1 ) )"
    with pytest.raises(InstanceError, match="DEMANDS: section missing"):
        parse_sndlib(good_nodes + " LINKS ( L1 ( A B ) 1 0 0 0 ( ) )")
    with pytest.raises(InstanceError, match="unknown node 'C'"):
        parse_sndlib(good_nodes + " LINKS ( L1 ( A C ) 1 0 0 0 ( ) ) DEMANDS ( )")
    with pytest.raises(InstanceError, match="expected a number"):
        parse_sndlib(good_nodes + " LINKS ( L1 ( A B ) x 0 0 0 ( ) ) DEMANDS ( )")
    with pytest.raises(InstanceError, match="unbalanced"):
        parse_sndlib(good_nodes + " LINKS ( L1 ( A B ) 1 0 0 0 ( ) DEMANDS ( )")
    with pytest.raises(InstanceError, match="capacity"):
        parse_sndlib(good_nodes, capacity="modules")


def test_cli_solve_sndlib_reports_congestion(runner, tmp_path, tri):
    out = tmp_path / "sol.json"
    res = runner.invoke(main, ["solve", str(tri), "--format", "sndlib", "--method", "route-milp",
                               "--out", str(out)])
    assert res.exit_code == 0, res.output
    sol = json.loads(out.read_text())
    assert sol["status"] == "optimal"
    assert sol["metrics"]["max_link_utilization"] == pytest.approx(14 / 15, rel=1e-6)
    assert sol["objective"] == pytest.approx(14 / 15, rel=1e-6)
    res = runner.invoke(main, ["solve", str(tri), "--format", "sndlib", "--capacity", "unit",
                               "--method", "route-milp", "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert json.loads(out.read_text())["metrics"]["max_link_utilization"] == pytest.approx(14 / 3)


def test_cpsat_with_real_valued_capacities():
    text = """
    NODES ( A ( 0 0 ) B ( 1 0 ) C ( 0 1 ) D ( 1 1 ) )
    LINKS (
      L1 ( A B ) 2.5 0 0 0 ( )
      L2 ( B D ) 1.7 0 0 0 ( )
      L3 ( A C ) 3.3 0 0 0 ( )
      L4 ( C D ) 0.9 0 0 0 ( )
      L5 ( B C ) 1.1 0 0 0 ( )
    )
    DEMANDS (
      D1 ( A D ) 1 1.5 UNLIMITED
      D2 ( B C ) 1 0.7 UNLIMITED
      D3 ( D A ) 1 0.4 UNLIMITED
    )"""
    inst = parse_sndlib(text)
    milp = registry.solve(inst, "route-milp", variant='unsplittable', k_paths=3, mip_gap=0.0)
    cp = registry.solve(inst, "route-cpsat", k_paths=3, mip_gap=0.0)
    assert milp.status is Status.FEASIBLE and milp.scope_status == "optimal"  # unsplittable
    assert cp.status is Status.FEASIBLE  # capacities rounded: optimal for the rounded model only
    assert cp.objective == pytest.approx(congestion(inst, cp.routing), rel=1e-12)
    assert cp.objective <= milp.objective * (1 + 1e-3)
    assert cp.bound <= milp.objective * (1 + 1e-9)


def test_capacity_modes_are_two_problems_with_two_hashes(tri):
    """Regression (issue 8, case 3): the capacities live in the instance's typed, hashed
    ``topology`` field, not in ``meta``, so ``file`` and ``unit`` reads of one network (optima
    0.933 and 4.667) are different instances for run keys, bound grouping and ``evaluate``."""
    file_caps, unit_caps = read_sndlib(tri), read_sndlib(tri, capacity="unit")
    assert file_caps.content_hash() != unit_caps.content_hash()
    assert "links" not in file_caps.meta["sndlib"]  # meta is provenance only
    a = registry.solve(file_caps, "route-milp")
    b = registry.solve(unit_caps, "route-milp")
    assert a.objective == pytest.approx(14 / 15) and b.objective == pytest.approx(14 / 3)


# -- strict reading (issue 20): every misread is a one-line error naming file, line, field ----
NODES4 = "NODES (\n A ( 0 0 )\n B ( 1 0 )\n C ( 1 1 )\n D ( 0 1 )\n)\n"
DEMAND_AC = "DEMANDS (\n D1 ( A C ) 1 3 UNLIMITED\n)\n"


def _links(*rows: str) -> str:
    return "LINKS (\n" + "".join(f" {r}\n" for r in rows) + ")\n"


CYCLE = ("L1 ( A B ) 1 0 0 0 ( )", "L2 ( B C ) 1 0 0 0 ( )", "L3 ( C D ) 1 0 0 0 ( )",
         "L4 ( D A ) 1 0 0 0 ( )")


@pytest.mark.parametrize("text, match", [
    # a NaN capacity used to drop the link silently (NaN > 0 is false)
    (NODES4 + _links("L1 ( A B ) NaN 0 0 0 ( )", *CYCLE[1:]) + DEMAND_AC,
     r"line 8: LINKS L1: pre-installed capacity: expected a finite number, got 'NaN'"),
    (NODES4 + _links("L1 ( A B ) 1e400 0 0 0 ( )", *CYCLE[1:]) + DEMAND_AC,
     r"line 8: LINKS L1: pre-installed capacity: expected a finite number"),
    # 3 of 4 numbers: the next link's id used to be read as the setup cost and its end nodes
    # as L1's module list, so L2 vanished
    (NODES4 + _links("L1 ( A B ) 1 0 0", *CYCLE[1:]) + DEMAND_AC,
     r"line 8: LINKS L1: setup cost: expected a number, got 'L2'"),
    (NODES4 + _links(*CYCLE[:3], "L4 ( D A ) 1 0 0") + DEMAND_AC,
     r"line 11: LINKS L4: setup cost missing"),
    # a second LINKS section used to replace the first
    (NODES4 + _links(*CYCLE[:2]) + _links(*CYCLE[2:]) + DEMAND_AC,
     r"line 11: LINKS: section given twice \(first at line 7\)"),
    (NODES4 + _links(*CYCLE) + "DEMANDS (\n D1 ( A C ) 1 nan UNLIMITED\n)\n",
     r"line 14: DEMANDS D1: demand_value: expected a finite number"),
    (NODES4 + _links(*CYCLE) + "DEMANDS (\n D1 ( A C ) 1 3\n D2 ( B D ) 1 1 UNLIMITED\n)\n",
     r"line 14: DEMANDS D1: max_path_length missing \('D2' starts the next entry"),
    (NODES4 + _links(*CYCLE[:3], "L4 ( D A ) 1 0 0 0 ( 5 )") + DEMAND_AC,
     r"line 11: LINKS L4: module list: expected .* pairs of numbers"),
    (NODES4 + _links(*CYCLE, "L5 ( A B ) 1e308 0 0 0 ( )", "L6 ( B A ) 1e308 0 0 0 ( )")
     + DEMAND_AC, r"line 13: LINKS L6: .*add up to more than a float holds"),
    (NODES4.replace("B ( 1 0 )", "B ( 1 )") + _links(*CYCLE) + DEMAND_AC,
     r"line 3: NODES B: expected '\( x y \)'"),
    (NODES4.replace("C ( 1 1 )", "A ( 1 1 )") + _links(*CYCLE) + DEMAND_AC,
     r"line 4: NODES: node 'A' is listed twice \(first at line 2\)"),
])
def test_malformed_sndlib_is_refused_naming_file_line_and_field(tmp_path, runner, text, match):
    path = tmp_path / "net.txt"
    path.write_text(text)
    with pytest.raises(InstanceError, match=f"^{path}: {match}"):
        read_sndlib(path)
    res = runner.invoke(main, ["solve", str(path), "--input-format", "sndlib", "-m",
                               "route-milp", "--out", str(tmp_path / "o.json")])
    assert res.exit_code == 2, res.output
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"Error: {path}: line "), res.stderr
    assert not (tmp_path / "o.json").exists()


def test_well_formed_cycle_reads_every_link():
    inst = parse_sndlib(NODES4 + _links(*CYCLE) + DEMAND_AC)
    assert link_capacities(inst) == {(0, 1): 1.0, (1, 2): 1.0, (2, 3): 1.0, (0, 3): 1.0}
    # the module list is optional; ADMISSIBLE_PATHS and META are skipped
    inst = parse_sndlib(NODES4 + _links(*(r.replace(" ( )", "") for r in CYCLE)) + DEMAND_AC
                        + "ADMISSIBLE_PATHS (\n D1 ( P1 ( L1 L2 ) )\n)\n")
    assert len(link_capacities(inst)) == 4


def test_non_utf8_file_is_one_line_naming_the_file(tmp_path, runner):
    path = tmp_path / "latin1.txt"
    path.write_bytes(b"# r\xe9seau\n" + (NODES4 + _links(*CYCLE) + DEMAND_AC).encode())
    with pytest.raises(InstanceError, match=rf"^{path}: line 1: not UTF-8 text \(byte 0xe9"):
        read_sndlib(path)
    res = runner.invoke(main, ["solve", str(path), "--input-format", "sndlib", "-m",
                               "route-milp", "--out", str(tmp_path / "o.json")])
    assert res.exit_code == 2 and "Traceback" not in res.output
    assert res.stderr.strip().splitlines() == [res.stderr.strip()]
    assert str(path) in res.stderr


def test_every_sndlib_error_names_the_file(tmp_path):
    path = tmp_path / "nodemand.txt"
    path.write_text(NODES4 + _links(*CYCLE))
    with pytest.raises(InstanceError, match=rf"^{path}: DEMANDS: section missing"):
        read_sndlib(path)
