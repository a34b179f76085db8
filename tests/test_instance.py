"""The instance model: JSON round trip, derived quantities, and validation that names the field."""

from __future__ import annotations

import copy
import json
import math

import numpy as np
import pytest

from topoopt_milp.core.instance import (
    FORMAT,
    AllReduceGroup,
    Instance,
    InstanceError,
    make_instance,
)


def test_round_trip_dict_and_file(instance_dict, tmp_path):
    inst = Instance.from_dict(instance_dict)
    again = Instance.from_dict(inst.to_dict())
    assert again == inst
    assert again.to_dict() == inst.to_dict()
    path = tmp_path / "i.json"
    inst.save(path)
    loaded = Instance.load(path)
    assert loaded == inst
    assert loaded.content_hash() == inst.content_hash()
    # the file is the documented interchange format
    data = json.loads(path.read_text())
    assert data["format"] == FORMAT
    assert data["allreduce"] == [{"members": [0, 2, 4], "bytes": 3.0e8}]
    assert data["mp"][0] == [0, 3, 1.0e7]


def test_defaults_and_integral_floats_accepted(instance_dict):
    d = {k: instance_dict[k] for k in ("format", "n", "degree", "link_gbps")}
    d["n"] = 6.0  # JSON writers may emit integral floats
    inst = Instance.from_dict(d)
    assert (inst.n, inst.regular, inst.latency_us, inst.allreduce, inst.mp) == (6, True, 0.0, (), ())
    assert inst.name == "instance" and dict(inst.meta) == {}


def test_content_hash_ignores_name_and_meta_only(instance_dict):
    a = Instance.from_dict(instance_dict)
    b = Instance.from_dict({**instance_dict, "name": "other", "meta": {"x": 1}})
    c = Instance.from_dict({**instance_dict, "mp": [[0, 3, 1.0e7 + 1]]})
    assert a.content_hash() == b.content_hash()
    assert a.content_hash() != c.content_hash()


def test_instance_is_immutable(instance_dict):
    inst = Instance.from_dict(instance_dict)
    with pytest.raises(AttributeError):
        inst.n = 7
    with pytest.raises(TypeError):
        inst.meta["seed"] = 1


def test_derived_quantities_by_hand(instance_dict):
    inst = Instance.from_dict(instance_dict)
    g = inst.allreduce[0]
    assert g.edge_bytes == pytest.approx(2 * 2 / 3 * 3.0e8, rel=1e-15)  # 2(k-1)/k S, k = 3
    assert inst.allreduce_bytes() == pytest.approx(3 * 4.0e8, rel=1e-15)
    assert inst.mp_bytes() == 1.0e7 + 2.5e6 + 4.0e5
    assert inst.total_bytes() == pytest.approx(1.2e9 + 1.29e7, rel=1e-15)
    assert inst.link_bytes_per_s == 1.25e10  # 100 Gbps
    out, inn = inst.node_out_in_bytes()
    np.testing.assert_allclose(out, [4.1e8, 2.5e6, 4e8, 0, 4e8, 4e5], rtol=1e-15)
    np.testing.assert_allclose(inn, [4e8, 4e5, 4e8, 1e7, 4e8, 2.5e6], rtol=1e-15)


def test_mp_matrix_sums_repeated_pairs():
    inst = make_instance(3, 2, 10, mp=[(0, 1, 5.0), (0, 1, 7.0), (2, 0, 1.0)])
    m = inst.mp_matrix()
    assert m[0, 1] == 12.0 and m[2, 0] == 1.0 and m.sum() == 13.0


def test_scaled_scales_volumes_and_rate_only(instance_dict):
    inst = Instance.from_dict(instance_dict)
    s = inst.scaled(bytes_factor=1e3, gbps_factor=4.0)
    assert s.link_gbps == 400.0
    assert s.allreduce[0] == AllReduceGroup((0, 2, 4), 3.0e11)
    assert [b for *_, b in s.mp] == [1.0e10, 2.5e9, 4.0e8]
    assert (s.n, s.degree, s.regular, s.compute_s, s.name) == (6, 3, True, 0.01, "tiny")


def _set(path, value):
    """A mutation setting ``data[path...] = value`` (``value is DELETE`` removes the key)."""

    def mutate(data):
        obj = data
        for key in path[:-1]:
            obj = obj[key]
        if value is DELETE:
            del obj[path[-1]]
        else:
            obj[path[-1]] = value

    return mutate


DELETE = object()

# (mutation of the valid fixture, substring the one-line error must contain)
BROKEN = {
    "unknown top-level field": (_set(["colour"], "red"), "colour: unknown field"),
    "unknown group field": (_set(["allreduce", 0, "weight"], 2), "allreduce[0].weight: unknown field"),
    "missing required field": (_set(["n"], DELETE), "n: required field is missing"),
    "missing group bytes": (_set(["allreduce", 0, "bytes"], DELETE), "allreduce[0].bytes: required"),
    "n is a string": (_set(["n"], "six"), "n: expected an integer"),
    "n is a bool": (_set(["n"], True), "n: expected an integer"),
    "degree is fractional": (_set(["degree"], 2.5), "degree: expected an integer"),
    "link_gbps is a string": (_set(["link_gbps"], "fast"), "link_gbps: expected a number"),
    "regular is a string": (_set(["regular"], "yes"), "regular: expected true or false"),
    "name is a number": (_set(["name"], 5), "name: expected a string"),
    "meta is a list": (_set(["meta"], [1]), "meta: expected a JSON object"),
    "allreduce is an object": (_set(["allreduce"], {"members": [0, 1]}), "allreduce: expected a list"),
    "group is a list": (_set(["allreduce", 0], [0, 1]), "allreduce[0]: expected an object"),
    "members is a number": (_set(["allreduce", 0, "members"], 3), "allreduce[0].members: expected a list"),
    "member is a string": (_set(["allreduce", 0, "members"], [0, "a"]), "allreduce[0].members: expected"),
    "group bytes is a string": (
        _set(["allreduce", 0, "bytes"], "1e6"),
        "allreduce[0].bytes: expected a number",
    ),
    "mp is an object": (_set(["mp"], {}), "mp: expected a list"),
    "mp row is a pair": (_set(["mp", 1], [1, 5]), "mp[1]: expected [src, dst, bytes]"),
    "mp src is fractional": (_set(["mp", 0, 0], 0.5), "mp[0][0] (src): expected an integer"),
    "mp bytes is null": (_set(["mp", 2, 2], None), "mp[2][2] (bytes): expected a number"),
    "n < 2": (_set(["n"], 1), "n: need at least 2 servers"),
    "degree < 1": (_set(["degree"], 0), "degree: need at least 1 port"),
    "degree >= n": (_set(["degree"], 6), "degree: must be smaller than n"),
    "member out of range": (
        _set(["allreduce", 0, "members"], [0, 6]),
        "allreduce[0].members: node 6 is out of range",
    ),
    "negative member": (
        _set(["allreduce", 0, "members"], [-1, 2]),
        "allreduce[0].members: node -1 is out of range",
    ),
    "mp dst out of range": (_set(["mp", 1, 1], 9), "mp[1][1]: node 9 is out of range"),
    "mp src negative": (_set(["mp", 0, 0], -2), "mp[0][0]: node -2 is out of range"),
    "repeated member": (
        _set(["allreduce", 0, "members"], [0, 2, 2]),
        "allreduce[0].members: node 2 is listed twice",
    ),
    "group of one": (
        _set(["allreduce", 0, "members"], [3]),
        "allreduce[0].members: a group needs at least 2",
    ),
    "empty group": (_set(["allreduce", 0, "members"], []), "allreduce[0].members: a group needs at least 2"),
    "self-demand": (_set(["mp", 2], [4, 4, 1.0]), "mp[2]: self-demand"),
    "negative mp bytes": (_set(["mp", 0, 2], -1.0), "mp[0][2] (bytes): must be non-negative"),
    "negative group bytes": (
        _set(["allreduce", 0, "bytes"], -5.0),
        "allreduce[0].bytes: must be non-negative",
    ),
    "NaN mp bytes": (_set(["mp", 1, 2], math.nan), "mp[1][2] (bytes): must be finite"),
    "infinite group bytes": (_set(["allreduce", 0, "bytes"], math.inf), "allreduce[0].bytes: must be finite"),
    "infinite link rate": (_set(["link_gbps"], math.inf), "link_gbps: must be finite"),
    "zero link rate": (_set(["link_gbps"], 0), "link_gbps: must be positive"),
    "negative compute": (_set(["compute_s"], -1.0), "compute_s: must be non-negative"),
    "wrong format": (_set(["format"], "topoopt-instance/2"), "format: expected 'topoopt-instance/1'"),
    "missing format": (_set(["format"], DELETE), "format: expected 'topoopt-instance/1', got None"),
    "regular with n*d odd": (_set(["n"], 7), "regular: no 3-regular graph on n = 7"),
}


@pytest.mark.parametrize("case", list(BROKEN))
def test_validation_names_the_field(instance_dict, case):
    mutate, expected = BROKEN[case]
    data = copy.deepcopy(instance_dict)
    mutate(data)
    with pytest.raises(InstanceError) as err:
        Instance.from_dict(data)
    message = str(err.value)
    assert expected in message
    assert "\n" not in message


def test_regular_false_allows_odd_n_times_d(instance_dict):
    inst = Instance.from_dict({**instance_dict, "n": 7, "regular": False})
    assert inst.n * inst.degree % 2 == 1


def test_top_level_must_be_an_object():
    with pytest.raises(InstanceError, match="instance: expected a JSON object"):
        Instance.from_dict([1, 2, 3])


def test_direct_construction_is_validated_too():
    with pytest.raises(InstanceError, match="degree: must be smaller than n"):
        make_instance(4, 4, 100.0)
    with pytest.raises(InstanceError, match=r"mp\[0\]: self-demand"):
        make_instance(4, 2, 100.0, mp=[(1, 1, 1.0)])


def test_load_rejects_non_json_and_missing_file(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("n: 4\ndegree: 2\n")
    with pytest.raises(InstanceError, match="not valid JSON"):
        Instance.load(bad)
    with pytest.raises(InstanceError, match="cannot read"):
        Instance.load(tmp_path / "missing.json")


def test_load_rejects_nan_written_by_python_json(instance_dict, tmp_path):
    # Python's json module writes and reads the non-standard token NaN; the reader refuses it,
    # naming the field.
    data = copy.deepcopy(instance_dict)
    data["mp"][0][2] = math.nan
    path = tmp_path / "nan.json"
    path.write_text(json.dumps(data))
    with pytest.raises(InstanceError, match=r"nan.json: mp\[0\]\[2\]: NaN is not a JSON number"):
        Instance.load(path)
