"""Workload zoo and compute model: parameter counts pinned to the published values."""

import pytest

from topoopt_milp.workloads.compute import GPUS, ComputeModel, get_gpu
from topoopt_milp.workloads.zoo import GPT3_NOMINAL, GPT3_SIZES, get_model, model_names


@pytest.mark.parametrize(("name", "params"), [
    ("resnet50", 25_557_032),      # torchvision resnet50, batch norm included
    ("vgg16", 138_357_544),        # configuration D with biases
    ("bert-large", 335_141_888),   # 24 blocks, hidden 1024, with pooler
])
def test_published_parameter_counts(name, params):
    assert get_model(name).params == params


def test_gpt3_175b_within_two_percent():
    assert get_model("gpt3-175b").params == pytest.approx(175e9, rel=0.02)


@pytest.mark.parametrize("size", list(GPT3_SIZES))
def test_gpt3_family_sizes(size):
    # Table 2.1 of Brown et al. rounds the counts; every size lands within 3% of its name.
    assert get_model(f"gpt3-{size}").params == pytest.approx(GPT3_NOMINAL[size], rel=0.03)


def test_forward_flops_match_known_macs():
    # ResNet-50 ~4.1 GMACs, VGG-16 ~15.5 GMACs per 224x224 image (2 FLOPs per MAC).
    assert get_model("resnet50").flops == pytest.approx(8.2e9, rel=0.02)
    assert get_model("vgg16").flops == pytest.approx(30.95e9, rel=0.01)


def test_simulation_configs():
    dlrm = get_model("dlrm")
    emb = [L for L in dlrm.layers if L.kind == "embedding"]
    assert len(emb) == 64 and all(L.params == 10_000_000 * 128 for L in emb)
    top0 = next(L for L in dlrm.layers if L.name == "top0")
    assert top0.params == 10240 * 4096 + 4096 and len(top0.inputs) == 65
    assert dlrm.batch_per_gpu == 128
    bert = get_model("bert")
    assert bert.meta == {"blocks": 12, "hidden": 1024, "heads": 16, "seq": 64}
    assert bert.batch_per_gpu == 16
    # 12 blocks instead of 24: BERT-large minus 12 blocks of 12,596,224 parameters
    assert bert.params == 335_141_888 - 12 * 12_596_224 - (512 - 512) * 1024
    candle = get_model("candle")
    assert sum(L.name.startswith("tower") for L in candle.layers) == 5 * 16
    assert get_model("ncf").layers[-1].params == 4096 + 2048 + 1
    assert get_model("vgg16").batch_per_gpu == 64 and get_model("resnet50").batch_per_gpu == 128


def test_every_model_is_a_dag_over_earlier_layers():
    for name in model_names():
        m = get_model(name)
        for i, L in enumerate(m.layers):
            assert all(0 <= j < i for j in L.inputs), (name, L.name)
            assert L.params >= 0 and L.flops >= 0 and L.act_elems > 0


def test_unknown_model_names_the_field():
    with pytest.raises(ValueError, match="model: unknown"):
        get_model("alexnet")
    with pytest.raises(ValueError, match="GPT-3 size"):
        get_model("gpt3-7b")


def test_compute_model_by_hand():
    m = get_model("vgg16", batch_per_gpu=2)
    gpu = get_gpu("h100", efficiency=0.25)
    assert gpu.flops_per_s == pytest.approx(989e12 * 0.25)
    cm = ComputeModel.build(m, n=8, gpus_per_server=4, gpu=gpu)
    fc7 = next(i for i, L in enumerate(m.layers) if L.name == "fc7")
    # whole global batch (8 * 4 * 2 = 64 samples) on one server: 3 * 2*4096*4096 * 64 / (4 * peak*eff)
    assert cm.layer_full[fc7] == pytest.approx(3 * 2 * 4096 * 4096 * 64 / (4 * 989e12 * 0.25))
    # intra-server ring AllReduce of the fp32 gradient over NVLink4 (450 GB/s)
    assert cm.layer_intra[fc7] == pytest.approx(2 * 3 / 4 * (4096 * 4096 + 4096) * 4 / 450e9)
    assert GPUS["a100"].peak_tflops == 312 and GPUS["h100"].peak_tflops == 989


def test_tensor_parallel_changes_only_intra_server_terms():
    m = get_model("gpt3-125m")
    base = ComputeModel.build(m, n=4, gpus_per_server=4)
    tp = ComputeModel.build(m, n=4, gpus_per_server=4, tensor=2)
    blk = 1
    assert tp.layer_intra[blk] == pytest.approx(base.layer_intra[blk] / 3)  # 2 replicas, half shard
    assert tp.layer_full[blk] > base.layer_full[blk]  # + activation AllReduces
    with pytest.raises(ValueError, match="tensor"):
        ComputeModel.build(m, n=4, gpus_per_server=4, tensor=3)
