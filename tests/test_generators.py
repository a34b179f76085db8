"""Instance generators: the traffic each family promises, seeding, and the generate command."""

from __future__ import annotations

import json

import numpy as np
import pytest

from topoopt_milp.cli import main
from topoopt_milp.core.instance import Instance, InstanceError
from topoopt_milp.workloads import generators

RANDOM = ("permutation", "sparse", "dlrm")


def _bytes_of(inst: Instance) -> list[float]:
    return [b for *_, b in inst.mp] + [g.bytes for g in inst.allreduce]


@pytest.mark.parametrize("family", list(generators.FAMILIES))
def test_same_seed_gives_byte_identical_file(family, tmp_path):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    generators.generate(family, 12, 4, 100.0, seed=7).save(a)
    generators.generate(family, 12, 4, 100.0, seed=7).save(b)
    assert a.read_bytes() == b.read_bytes()
    # and the file reads back into the same instance
    assert Instance.load(a) == generators.generate(family, 12, 4, 100.0, seed=7)


@pytest.mark.parametrize("family", RANDOM)
def test_different_seeds_give_different_traffic(family):
    a = generators.generate(family, 16, 4, seed=1)
    b = generators.generate(family, 16, 4, seed=2)
    assert a.content_hash() != b.content_hash()


@pytest.mark.parametrize("family", list(generators.FAMILIES))
def test_meta_records_generator_params_and_seed(family):
    inst = generators.generate(family, 10, 3, 200.0, seed=5)
    assert inst.meta["generator"] == family
    assert inst.meta["seed"] == 5
    params = inst.meta["params"]
    assert (params["n"], params["degree"], params["gbps"]) == (10, 3, 200.0)
    assert (inst.n, inst.degree, inst.link_gbps) == (10, 3, 200.0)
    json.dumps(dict(inst.meta))  # JSON-serialisable


@pytest.mark.parametrize("family", list(generators.FAMILIES))
def test_default_volumes_are_realistic(family):
    inst = generators.generate(family, 16, 4, seed=3)
    vols = _bytes_of(inst)
    assert vols and all(1e5 <= b <= 1e11 for b in vols)


def test_uniform_is_all_to_all():
    inst = generators.uniform(6, 2, 40.0, bytes=3e6)
    assert len(inst.mp) == 30
    m = inst.mp_matrix()
    assert (m[~np.eye(6, dtype=bool)] == 3e6).all() and (np.diag(m) == 0).all()
    assert inst.allreduce == ()


@pytest.mark.parametrize("seed", range(20))
def test_permutation_is_a_derangement(seed):
    inst = generators.permutation(9, 2, seed=seed, regular=True)
    src = [s for s, _, _ in inst.mp]
    dst = [t for _, t, _ in inst.mp]
    assert sorted(src) == list(range(9)) and sorted(dst) == list(range(9))
    assert all(s != t for s, t in zip(src, dst))
    assert all(b == 1e8 for *_, b in inst.mp)


def test_permutation_draws_many_derangements():
    # 2 of the 2 derangements of 3 elements must both show up over a few seeds: the generator
    # really samples instead of returning one fixed cycle
    seen = {tuple(t for _, t, _ in generators.permutation(3, 2, seed=s, regular=True).mp) for s in range(30)}
    assert seen == {(1, 2, 0), (2, 0, 1)}


@pytest.mark.parametrize(("n", "s"), [(8, 1), (8, 3), (8, 4), (7, 6), (7, -1)])
def test_shift_pattern(n, s):
    inst = generators.shift(n, 2, shift=s, bytes=5e5)
    assert [(a, b) for a, b, _ in inst.mp] == [(i, (i + s) % n) for i in range(n)]


def test_shift_multiple_of_n_is_an_error():
    with pytest.raises(InstanceError, match="shift: 8 is a multiple of n"):
        generators.shift(8, 2, shift=8)


def test_sparse_pairs_and_groups():
    inst = generators.sparse(12, 4, pairs=30, groups=3, group_size=5, seed=11,
                             mp_bytes=(1e6, 1e8), ar_bytes=(1e9, 2e9))
    pairs = [(s, t) for s, t, _ in inst.mp]
    assert len(pairs) == 30 == len(set(pairs))
    assert all(s != t for s, t in pairs)
    assert all(1e6 <= b <= 1e8 for *_, b in inst.mp)
    assert len(inst.allreduce) == 3
    for g in inst.allreduce:
        assert len(g.members) == 5 == len(set(g.members))
        assert list(g.members) == sorted(g.members)
        assert 1e9 <= g.bytes <= 2e9


def test_sparse_can_take_every_pair():
    inst = generators.sparse(5, 2, pairs=20, groups=0, seed=0)
    assert {(s, t) for s, t, _ in inst.mp} == {(i, j) for i in range(5) for j in range(5) if i != j}


@pytest.mark.parametrize(
    ("kwargs", "msg"),
    [
        ({"pairs": 21}, "pairs: need 0..20"),
        ({"groups": -1}, "groups: must be non-negative"),
        ({"group_size": 6}, "group_size: need 2..5"),
        ({"mp_bytes": (0.0, 1e6)}, "volume range"),
    ],
)
def test_sparse_rejects_bad_parameters(kwargs, msg):
    with pytest.raises(InstanceError, match=msg):
        generators.sparse(5, 2, **kwargs)


def test_dlrm_allreduce_and_embedding_all_to_all():
    n, tables, emb = 8, 12, 2e6
    inst = generators.dlrm(n, 4, dense_bytes=5e8, emb_bytes=emb, tables=tables, seed=4)
    (g,) = inst.allreduce
    assert g.members == tuple(range(n)) and g.bytes == 5e8
    m = inst.mp_matrix()
    # D[i][j] = (t_i + t_j) * emb is symmetric, and summing over i != j counts every table's
    # bytes 2 (n - 1) times (to and from each other server)
    np.testing.assert_array_equal(m, m.T)
    assert m.sum() == pytest.approx(2 * (n - 1) * tables * emb, rel=1e-12)
    # row sums: sum_{j != i} (t_i + t_j) emb = ((n - 2) t_i + T) emb, so the per-server table
    # counts come back as non-negative integers summing to T
    t = (m.sum(axis=1) / emb - tables) / (n - 2)
    np.testing.assert_allclose(t, np.rint(t), atol=1e-9)
    assert t.min() >= 0 and round(t.sum()) == tables
    assert len(set(np.rint(t))) > 1  # random placement, not round robin


def test_dlrm_one_table_is_a_star():
    inst = generators.dlrm(6, 2, tables=1, emb_bytes=1e6, seed=0)
    # the table's server exchanges 1e6 bytes with each of the 5 others, in both directions;
    # pairs of table-less servers carry nothing and are left out
    hosts = set.intersection(*({s, t} for s, t, _ in inst.mp))
    assert len(hosts) == 1 and len(inst.mp) == 10
    assert all(b == 1e6 for *_, b in inst.mp)


def test_generate_rejects_foreign_options_and_families():
    with pytest.raises(InstanceError, match="shift: not an option of traffic pattern 'uniform'"):
        generators.generate("uniform", 8, 2, shift=3)
    with pytest.raises(InstanceError, match="pattern: unknown traffic pattern 'mesh'"):
        generators.generate("mesh", 8, 2)


def test_odd_n_times_degree_needs_regular_false():
    with pytest.raises(InstanceError, match="regular"):
        generators.uniform(5, 3)
    assert generators.uniform(5, 3, regular=False).regular is False


# -- the command ---------------------------------------------------------------------------
def test_cli_generate_matches_library_byte_for_byte(runner, tmp_path):
    out1, out2 = tmp_path / "a.json", tmp_path / "b.json"
    args = ["generate", "sparse", "--n", "10", "--degree", "4", "--gbps", "200", "--seed", "9",
            "--pairs", "15", "--groups", "2", "--mp-bytes", "1e5", "1e7"]
    r1 = runner.invoke(main, [*args, "--out", str(out1)])
    r2 = runner.invoke(main, [*args, "--out", str(out2)])
    assert r1.exit_code == 0, r1.output
    assert r2.exit_code == 0, r2.output
    assert out1.read_bytes() == out2.read_bytes()
    lib = tmp_path / "lib.json"
    generators.sparse(10, 4, 200.0, pairs=15, groups=2, mp_bytes=(1e5, 1e7), seed=9).save(lib)
    assert out1.read_bytes() == lib.read_bytes()


@pytest.mark.parametrize("family", list(generators.FAMILIES))
def test_cli_generate_every_family(runner, tmp_path, family):
    out = tmp_path / f"{family}.json"
    r = runner.invoke(main, ["generate", family, "--n", "8", "-d", "3", "--seed", "1",
                             "--name", "mine", "--out", str(out)])
    assert r.exit_code == 0, r.output
    inst = Instance.load(out)
    assert inst.name == "mine" and inst.meta["generator"] == family and inst.n == 8


@pytest.mark.parametrize(
    ("args", "msg"),
    [
        (["uniform", "--n", "8", "-d", "2", "--shift", "3"],
         "--shift: not an option of traffic pattern 'uniform'"),
        (["uniform", "--n", "5", "-d", "3"], "regular: no 3-regular graph"),
        (["shift", "--n", "6", "-d", "2", "--shift", "12"], "shift: 12 is a multiple of n"),
        (["uniform", "--n", "1", "-d", "1"], "n: need at least 2"),
        (["dlrm", "--n", "8", "-d", "2", "--emb-bytes", "nan"], "emb_bytes: must be a finite"),
    ],
)
def test_cli_generate_errors_are_one_line(runner, tmp_path, args, msg):
    r = runner.invoke(main, ["generate", *args, "--out", str(tmp_path / "x.json")])
    assert r.exit_code == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and msg in lines[0], r.stderr
    assert "Traceback" not in r.output
    assert not (tmp_path / "x.json").exists()


def test_cli_generate_help_lists_families(runner):
    r = runner.invoke(main, ["generate", "--help"])
    assert r.exit_code == 0
    for family in generators.FAMILIES:
        assert family in r.output


# -- mixed: coset AllReduce plus MP at a set share ------------------------------------------
@pytest.mark.parametrize("share", [0.0, 0.05, 0.3, 0.35, 0.5, 0.9])
@pytest.mark.parametrize("pattern", ["dense", "sparse"])
def test_mixed_mp_share_is_exact(share, pattern):
    inst = generators.mixed(16, 4, groups=4, mp_share=share, mp_pattern=pattern,
                            ar_bytes=(1e8, 1e10), seed=3)
    assert inst.mp_bytes() / inst.total_bytes() == pytest.approx(share, rel=1e-12, abs=1e-15)
    assert inst.meta["params"]["mp_share"] == share
    assert all(1e8 <= g.bytes <= 1e10 for g in inst.allreduce)
    assert len({g.bytes for g in inst.allreduce}) == 4  # drawn per group
    if share == 0:
        assert inst.mp == ()


def test_mixed_groups_are_cosets():
    inst = generators.mixed(12, 4, groups=2, mp_share=0.35)
    assert [g.members for g in inst.allreduce] == [(0, 2, 4, 6, 8, 10), (1, 3, 5, 7, 9, 11)]
    assert all(g.bytes == 1.2e9 for g in inst.allreduce)  # default: equal, realistic volume
    # a group size alone takes every coset; with groups too, the first `groups` cosets
    four = generators.mixed(16, 4, group_size=4)
    assert [g.members for g in four.allreduce] == [(r, r + 4, r + 8, r + 12) for r in range(4)]
    two = generators.mixed(16, 4, group_size=4, groups=2)
    assert [g.members for g in two.allreduce] == [(0, 4, 8, 12), (1, 5, 9, 13)]
    for inst in (four, two):
        n, members = inst.n, [set(g.members) for g in inst.allreduce]
        stride = n // len(members[0])
        for m in members:  # a coset of the subgroup generated by n / g in Z_n
            assert m == {(min(m) + stride * k) % n for k in range(len(m))}
        assert len(set.union(*members)) == sum(map(len, members))  # disjoint


def test_mixed_mp_patterns():
    dense = generators.mixed(8, 4, mp_share=0.2, seed=1)
    assert {(s, t) for s, t, _ in dense.mp} == {(i, j) for i in range(8) for j in range(8) if i != j}
    vols = np.array([b for *_, b in dense.mp])
    assert vols.min() > 0 and vols.max() / vols.min() <= generators.MP_SPREAD
    sparse = generators.mixed(8, 4, mp_share=0.2, mp_pattern="sparse", pairs=10, seed=1)
    pairs = [(s, t) for s, t, _ in sparse.mp]
    assert len(pairs) == 10 == len(set(pairs)) and all(s != t for s, t in pairs)
    assert generators.mixed(8, 4, mp_pattern="sparse", seed=1).meta["params"]["pairs"] == 8
    other = generators.mixed(8, 4, mp_share=0.2, seed=2)
    assert other.content_hash() != dense.content_hash()


@pytest.mark.parametrize(
    ("kwargs", "msg"),
    [
        ({"mp_share": 1.0}, r"mp_share: must be in \[0, 1\)"),
        ({"mp_share": -0.1}, r"mp_share: must be in \[0, 1\)"),
        ({"mp_share": float("nan")}, r"mp_share: must be in \[0, 1\)"),
        ({"groups": 3}, "groups: must divide n = 16"),
        ({"group_size": 5}, "group_size: need a divisor of n = 16"),
        ({"group_size": 1}, "group_size: need a divisor of n = 16"),
        ({"group_size": 4, "groups": 5}, "groups: n = 16 has 4 cosets of size 4"),
        ({"mp_pattern": "ring"}, "mp_pattern: unknown 'ring'"),
        ({"pairs": 4}, "pairs: only with mp_pattern 'sparse'"),
        ({"mp_pattern": "sparse", "pairs": 241}, "pairs: need 0..240"),
        ({"mp_pattern": "sparse", "pairs": 0}, "pairs: an MP share of 0.3 needs"),
        ({"ar_bytes": (0.0, 1e9)}, r"ar_bytes: need 0 < low <= high"),
        ({"ar_bytes": (2e9, 1e9)}, r"ar_bytes: need 0 < low <= high"),
    ],
)
def test_mixed_rejects_bad_parameters(kwargs, msg):
    with pytest.raises(InstanceError, match=msg):
        generators.mixed(16, 4, **kwargs)


def test_cli_generate_mixed_matches_the_function(runner, tmp_path):
    out = tmp_path / "a.json"
    r = runner.invoke(main, ["generate", "mixed", "--n", "16", "-d", "4", "--groups", "4",
                             "--mp-share", "0.3", "--mp-pattern", "sparse", "--pairs", "20",
                             "--ar-bytes", "1e8", "1e9", "--seed", "2", "--out", str(out)])
    assert r.exit_code == 0, r.output
    lib = tmp_path / "lib.json"
    generators.mixed(16, 4, groups=4, mp_share=0.3, mp_pattern="sparse", pairs=20,
                     ar_bytes=(1e8, 1e9), seed=2).save(lib)
    assert out.read_bytes() == lib.read_bytes()
    bad = runner.invoke(main, ["generate", "mixed", "--n", "16", "-d", "4", "--mp-share", "1.5",
                               "--out", str(tmp_path / "x.json")])
    assert bad.exit_code == 2 and "mp_share: must be in [0, 1)" in bad.stderr
    foreign = runner.invoke(main, ["generate", "uniform", "--n", "8", "-d", "2", "--mp-share",
                                   "0.1", "--out", str(tmp_path / "y.json")])
    assert foreign.exit_code == 2
    assert "--mp-share: not an option of traffic pattern 'uniform'" in foreign.stderr
