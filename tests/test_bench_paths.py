"""Strings from instance files never choose where files go: safe file names, paths kept in
their folder, and `reproduce` outputs below --out whatever ``meta.family`` says."""

from __future__ import annotations

import re

import pytest

from topoopt_milp.bench.names import file_component, inside
from topoopt_milp.bench.store import RunStore
from topoopt_milp.core.errors import InputError

EVIL_FAMILIES = ["../victim", "../../x/y", "a/b", "nul\x00byte", "new\nline", ".", "..", "x" * 300]


def test_file_component_and_inside():
    for fam in EVIL_FAMILIES + ["a_b"]:
        name = file_component(fam)
        assert re.fullmatch(r"[A-Za-z0-9+_-][A-Za-z0-9._+-]{0,79}", name), (fam, name)
    assert file_component("dnn") == "dnn" and file_component("llm-1.3b") == "llm-1.3b"
    assert len({file_component(f) for f in EVIL_FAMILIES + ["a_b", "victim"]}) == len(EVIL_FAMILIES) + 2
    with pytest.raises(InputError, match="outside"):
        inside("/tmp/out", "../x")


def test_reproduce_outputs_stay_in_out_whatever_the_family(tmp_path):
    """Families from ``meta.family`` such as ``../victim`` or with NUL and newlines: every
    file goes below --out (figures and reference CSVs under safe names), and the library gets
    reference.csv only in its own folder of that exact name."""
    from test_tables import RECORDS

    from topoopt_milp.bench.reproduce import write_outputs

    lib, out = tmp_path / "lib", tmp_path / "out"
    (tmp_path / "victim").mkdir()  # what "../victim" from lib/ would reach
    (lib / "good").mkdir(parents=True)
    families = {"f1": "../victim", "f2": "good"}
    out.mkdir()
    store = out / "runs.sqlite"
    with RunStore(store) as st:
        for i, r in enumerate(RECORDS):
            st.put(r | {"family": families[r["family"]]})
            st.put(r | {"run_key": f"evil{i}", "instance_hash": r["instance_hash"] + "x",
                        "family": ("../../x/y", "nul\x00byte\nnew")[i % 2]})
    before = {p for p in tmp_path.rglob("*") if not p.is_relative_to(out)}
    written = write_outputs(store, out, library=lib)
    after = {p for p in tmp_path.rglob("*") if not p.is_relative_to(out)}
    assert after - before == {lib / "good" / "reference.csv"}
    assert all(p.resolve().is_relative_to(out) for p in written if p != lib / "good" / "reference.csv")
    assert not list((tmp_path / "victim").iterdir())
    refs = sorted(p.name for p in (out / "reference").iterdir())
    assert "good.csv" in refs and all(re.fullmatch(r"[\w.+-]+\.csv", n) for n in refs)
