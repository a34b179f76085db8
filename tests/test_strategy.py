"""Strategies -> traffic -> Instance: volumes checked by hand on small clusters."""

import json

import numpy as np
import pytest
from click.testing import CliRunner

from topoopt_milp.cli import main
from topoopt_milp.core.instance import Instance
from topoopt_milp.workloads.strategy import Strategy, data_parallel, parse_strategy, pipeline
from topoopt_milp.workloads.traffic import Workload
from topoopt_milp.workloads.zoo import dlrm, get_model


def test_data_parallel_cnn_is_one_allreduce_of_fp32_gradients():
    m = get_model("resnet50")
    w = Workload(m, 8)
    inst = w.instance(data_parallel(m, 8), degree=4, link_gbps=100)
    assert inst.mp == ()
    assert len(inst.allreduce) == 1
    assert inst.allreduce[0].members == tuple(range(8))
    assert inst.allreduce[0].bytes == 25_557_032 * 4
    half = Workload(m, 8, dtype_bytes=2).instance(data_parallel(m, 8), 4, 100)
    assert half.allreduce[0].bytes == 25_557_032 * 2


def test_dlrm_tables_round_robin_give_all_to_all():
    m = dlrm(tables=4, rows=10, dim=8, batch_per_gpu=2)
    n, g = 4, 4
    s = data_parallel(m, n)
    assert [s.offsets[i] for i in range(4)] == [0, 1, 2, 3] and s.degrees[:4] == (1, 1, 1, 1)
    t = Workload(m, n, gpus_per_server=g).traffic(s)
    # table on server t sends 8 floats per sample of every remote shard (g * b = 8 samples)
    # forward, and receives the same gradient backward: 2 * 8 * 4 * 8 bytes per ordered pair.
    per = 8 * 4 * 8
    expect = np.full((n, n), 2.0 * per)
    np.fill_diagonal(expect, 0)
    assert np.allclose(t.mp, expect)
    # the dense layers form one group; tables (degree 1) are not all-reduced
    assert len(t.groups) == 1 and t.groups[0][0] == (0, 1, 2, 3)
    dense = sum(L.params for L in m.layers if L.kind != "embedding")
    assert t.groups[0][1] == dense * 4


def test_pipeline_sends_activations_between_stage_cosets():
    m = get_model("vgg16", batch_per_gpu=1)
    n = 4
    s = pipeline(m, n, stages=2)
    assert set(s.degrees) == {2} and set(s.offsets) == {0, 1}
    t = Workload(m, n, gpus_per_server=1).traffic(s)
    cut = max(i for i in range(len(m.layers)) if s.offsets[i] == 0)
    assert s.offsets[cut + 1] == 1
    act = m.layers[cut].act_elems * 4  # one sample per shard
    # stage 0 = {0, 2}, stage 1 = {1, 3}; shards 0,1 -> server 0 then 1; shards 2,3 -> 2 then 3
    assert t.mp[0, 1] == t.mp[1, 0] == 2 * act
    assert t.mp[2, 3] == t.mp[3, 2] == 2 * act
    assert t.mp.sum() == 8 * act
    assert sorted(mem for mem, _ in t.groups) == [(0, 2), (1, 3)]


def test_same_placement_means_no_traffic_and_pair_matrix_holds_rings():
    m = get_model("bert", batch_per_gpu=1)
    n = 8
    s = Strategy(n, tuple([4] * len(m.layers)), tuple([1] * len(m.layers)))
    t = Workload(m, n).traffic(s)
    assert not t.mp.any()
    (members, size), = t.groups
    assert members == (1, 3, 5, 7) and size == m.params * 4
    pm = t.pair_matrix()
    assert pm[1, 3] == pm[7, 1] == pytest.approx(2 * 3 / 4 * size)
    assert np.count_nonzero(pm) == 4


def test_compute_concentrates_on_fewer_servers():
    m = get_model("vgg16")
    w = Workload(m, 8)
    dp = w.traffic(data_parallel(m, 8)).compute_s
    half = Strategy(8, tuple([4] * len(m.layers)), tuple([0] * len(m.layers)))
    assert w.traffic(half).compute_s > 1.9 * dp - 1e-12  # twice the samples per server


def test_strategy_validation_and_json_round_trip(tmp_path):
    m = get_model("resnet50")
    with pytest.raises(ValueError, match="does not divide"):
        Strategy(8, (3,) * 18, (0,) * 18)
    with pytest.raises(ValueError, match="offset"):
        Strategy(8, (4,) * 18, (2,) * 18)
    s = pipeline(m, 8, 4, tensor=2)
    path = tmp_path / "s.json"
    s.save(path, m)
    assert parse_strategy(str(path), m, 8) == s
    assert json.loads(path.read_text())["layers"][0]["name"] == "stem"
    with pytest.raises(ValueError, match="tp=3"):
        parse_strategy("tp=3", m, 8)
    with pytest.raises(ValueError, match="cannot parse"):
        parse_strategy("zz=2", m, 8)


def test_workload_cli_writes_a_valid_instance(tmp_path):
    out = tmp_path / "i.json"
    r = CliRunner().invoke(main, ["workload", "dlrm", "--n", "16", "--degree", "4", "--gbps", "25",
                                  "--dtype-bytes", "2", "--out", str(out)])
    assert r.exit_code == 0, r.output
    inst = Instance.load(out)
    assert inst.n == 16 and inst.link_gbps == 25 and inst.meta["dtype_bytes"] == 2
    assert inst.compute_s > 0 and len(inst.mp) == 16 * 15
    r = CliRunner().invoke(main, ["workload", "gpt3-9b", "--out", str(out)])
    assert r.exit_code == 2 and "unknown GPT-3 size" in r.output
