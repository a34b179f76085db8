"""The workload zoo: the DNN models of the TopoOpt evaluation plus the GPT-3 family.

A :class:`Model` is a DAG of :class:`Layer` objects. A layer is the unit a parallelization
strategy decides about (an op or a small op group such as a ResNet bottleneck block or a
Transformer block) and carries

* ``params`` -- trainable parameters (weights and biases; batch-norm scale and shift, not its
  running statistics, which are buffers);
* ``act_elems`` -- elements of the layer's *output* activation per sample (what crosses the
  network, forward, when the next layer runs elsewhere; its gradient crosses backward);
* ``tp_allreduces`` -- activation AllReduces per sample when the layer is split tensor-parallel
  (Megatron-style Transformer block: 2 forward + 2 backward, each of the block's output size);
* ``flops`` -- forward FLOPs per sample, counting a multiply-add as 2 FLOPs:
  dense ``2 * in * out``; convolution ``2 * C_in * C_out * k^2 * H_out * W_out``; attention per
  token ``2 * 12 h^2`` (the four projections and the two FFN matrices) plus ``4 s h`` (scores
  and weighted values). Training is counted as 3x forward by :mod:`.compute`.

Byte sizes follow from an element size (``dtype_bytes``, 4 = fp32 by default, as in the
TopoOpt artifact) and are computed where needed (:meth:`Layer.param_bytes`).

Shapes are derived from the published architectures (facts only): ResNet-50 (He et al. 2016,
torchvision's v1.5 layout, 25,557,032 parameters), VGG-16 (Simonyan & Zisserman 2015,
configuration D, 138,357,544), BERT (Devlin et al. 2019; BERT-large with the pooler has
335,141,888), GPT-3 (Brown et al. 2020, Table 2.1: layers, d_model, heads; vocabulary 50257,
context 2048, tied input/output embedding), and the TopoOpt simulation configurations of
DLRM, CANDLE Uno, NCF and the BERT-style Transformer (as listed in issue 4). Where the issue's
wording leaves a shape open, the builder's docstring states the reading taken.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from ..core.errors import InputError


@dataclass(frozen=True)
class Layer:
    """One strategy unit: parameters, output activation per sample, forward FLOPs per sample.

    ``kind`` is ``"dense"`` for anything whose weights are replicated under data parallelism
    (convolutions, matmuls, norms, dense embeddings of Transformers) and ``"embedding"`` for
    sparse lookup tables that are *placed* on one server (DLRM, NCF)."""

    name: str
    params: int
    act_elems: int
    flops: float
    kind: str = "dense"
    inputs: tuple[int, ...] = ()
    tp_allreduces: int = 0  # activation AllReduces per sample under tensor parallelism


    def param_bytes(self, dtype_bytes: int = 4) -> float:
        return float(self.params * dtype_bytes)

    def act_bytes(self, dtype_bytes: int = 4) -> float:
        return float(self.act_elems * dtype_bytes)


@dataclass(frozen=True)
class Model:
    """A DAG of layers (``layer.inputs`` index earlier layers) and its training batch."""

    name: str
    layers: tuple[Layer, ...]
    batch_per_gpu: int
    meta: dict = field(default_factory=dict, compare=False)

    @property
    def params(self) -> int:
        return sum(layer.params for layer in self.layers)

    @property
    def flops(self) -> float:
        """Forward FLOPs per sample."""
        return sum(layer.flops for layer in self.layers)

    def edges(self) -> list[tuple[int, int]]:
        """Data-flow edges ``(producer, consumer)``."""
        return [(i, b) for b, layer in enumerate(self.layers) for i in layer.inputs]

    def neighbours(self) -> list[list[int]]:
        """Undirected DAG adjacency (for the "propagate a degree" move)."""
        nb: list[list[int]] = [[] for _ in self.layers]
        for a, b in self.edges():
            nb[a].append(b)
            nb[b].append(a)
        return nb


class _Builder:
    """Appends layers; by default each new layer consumes the previous one (a chain)."""

    def __init__(self) -> None:
        self.layers: list[Layer] = []

    def add(self, name, params, act, flops, kind="dense", inputs=None, tp_allreduces=0) -> int:
        if inputs is None:
            inputs = (len(self.layers) - 1,) if self.layers else ()
        self.layers.append(Layer(name, int(params), int(act), float(flops), kind, tuple(inputs),
                                 tp_allreduces))
        return len(self.layers) - 1

    def dense(self, name, n_in, n_out, inputs=None, bias=True) -> int:
        return self.add(name, n_in * n_out + (n_out if bias else 0), n_out, 2.0 * n_in * n_out,
                        inputs=inputs)


# -- CNNs -------------------------------------------------------------------------------------
def _conv(c_in: int, c_out: int, k: int, h_out: int, bias: bool) -> tuple[int, float]:
    params = c_in * c_out * k * k + (c_out if bias else 0)
    return params, 2.0 * c_in * c_out * k * k * h_out * h_out


def resnet50(batch_per_gpu: int = 128) -> Model:
    """ResNet-50 on 224x224 ImageNet: stem, 16 bottleneck blocks (3, 4, 6, 3), classifier.

    Each bottleneck (width ``w``, output ``4w``) is 1x1 -> 3x3 (stride on the first block of a
    stage) -> 1x1, each followed by batch norm (2 parameters per channel); the first block of
    a stage adds a 1x1 projection with batch norm. Convolutions have no bias."""
    b = _Builder()
    p, f = _conv(3, 64, 7, 112, bias=False)
    b.add("stem", p + 2 * 64, 64 * 56 * 56, f)  # conv 7x7/2 + bn, then 3x3/2 max-pool
    c_in, size = 64, 56
    for stage, (width, blocks) in enumerate(((64, 3), (128, 4), (256, 6), (512, 3))):
        for blk in range(blocks):
            out = 4 * width
            s_out = size // 2 if (blk == 0 and stage > 0) else size
            params = flops = 0.0
            for ci, co, k, h in ((c_in, width, 1, size), (width, width, 3, s_out),
                                 (width, out, 1, s_out)):
                cp, cf = _conv(ci, co, k, h, bias=False)
                params += cp + 2 * co
                flops += cf
            if blk == 0:
                cp, cf = _conv(c_in, out, 1, s_out, bias=False)
                params += cp + 2 * out
                flops += cf
            b.add(f"layer{stage + 1}.{blk}", params, out * s_out * s_out, flops)
            c_in, size = out, s_out
    b.dense("fc", 2048, 1000)  # after global average pooling
    return Model("resnet50", tuple(b.layers), batch_per_gpu)


def vgg16(batch_per_gpu: int = 64) -> Model:
    """VGG-16 (configuration D): 13 3x3 convolutions with bias in five stages (64, 128, 256,
    512, 512 channels, 2-2-3-3-3 layers, 2x2 max-pool after each), then 25088 -> 4096 ->
    4096 -> 1000 fully connected."""
    b = _Builder()
    c_in, size = 3, 224
    for stage, (ch, reps) in enumerate(((64, 2), (128, 2), (256, 3), (512, 3), (512, 3))):
        for r in range(reps):
            p, f = _conv(c_in, ch, 3, size, bias=True)
            last = r == reps - 1
            out_size = size // 2 if last else size  # the pool is folded into the last conv
            b.add(f"conv{stage + 1}_{r + 1}", p, ch * out_size * out_size, f)
            c_in = ch
        size //= 2
    b.dense("fc6", 512 * 7 * 7, 4096)
    b.dense("fc7", 4096, 4096)
    b.dense("fc8", 4096, 1000)
    return Model("vgg16", tuple(b.layers), batch_per_gpu)


# -- Transformers -------------------------------------------------------------------------------
def _block_params(h: int, ffn: int) -> int:
    # Q, K, V and output projections with bias, two layer norms, FFN h -> ffn -> h with bias.
    return 4 * (h * h + h) + 2 * 2 * h + (h * ffn + ffn) + (ffn * h + h)


def _block_flops(h: int, ffn: int, seq: int) -> float:
    return seq * (2.0 * (4 * h * h + 2 * h * ffn) + 4.0 * seq * h)


def bert(blocks: int = 12, hidden: int = 1024, heads: int = 16, seq: int = 64,
         batch_per_gpu: int = 16, vocab: int = 30522, max_pos: int = 512,
         name: str = "bert") -> Model:
    """BERT encoder: word + position + token-type embeddings with layer norm, ``blocks``
    Transformer blocks (FFN width 4h), and the pooler (h -> h dense on the first token).

    The default is the TopoOpt simulation's BERT-style Transformer (12 blocks, hidden 1024,
    16 heads, sequence 64, batch 16); :func:`bert_large` is the published 24-block model.
    ``heads`` does not change parameter or FLOP counts (it only splits h)."""
    if hidden % heads:
        raise InputError(f"hidden {hidden} is not divisible by heads {heads}")
    b = _Builder()
    emb = (vocab + max_pos + 2) * hidden + 2 * hidden
    b.add("embeddings", emb, seq * hidden, 0.0)  # lookups: no matmul FLOPs
    for k in range(blocks):
        b.add(f"block{k}", _block_params(hidden, 4 * hidden), seq * hidden,
              _block_flops(hidden, 4 * hidden, seq), tp_allreduces=4)
    b.add("pooler", hidden * hidden + hidden, hidden, 2.0 * hidden * hidden)
    return Model(name, tuple(b.layers), batch_per_gpu,
                 {"blocks": blocks, "hidden": hidden, "heads": heads, "seq": seq})


def bert_large(seq: int = 512, batch_per_gpu: int = 16) -> Model:
    """BERT-large: 24 blocks, hidden 1024, 16 heads (335,141,888 parameters with pooler)."""
    return bert(24, 1024, 16, seq, batch_per_gpu, name="bert-large")


# GPT-3 family (Brown et al. 2020, Table 2.1): name -> (layers, d_model, heads).
GPT3_SIZES: dict[str, tuple[int, int, int]] = {
    "125m": (12, 768, 12),
    "350m": (24, 1024, 16),
    "760m": (24, 1536, 16),
    "1.3b": (24, 2048, 24),
    "2.7b": (32, 2560, 32),
    "6.7b": (32, 4096, 32),
    "13b": (40, 5140, 40),
    "175b": (96, 12288, 96),
}
GPT3_NOMINAL = {"125m": 125e6, "350m": 350e6, "760m": 760e6, "1.3b": 1.3e9, "2.7b": 2.7e9,
                "6.7b": 6.7e9, "13b": 13e9, "175b": 175e9}


def gpt3(size: str = "175b", seq: int = 2048, batch_per_gpu: int = 1) -> Model:
    """GPT-3 decoder of a published size: token (50257) and position (2048) embeddings, the
    blocks (FFN width 4 d_model), final layer norm; the output projection is tied to the
    token embedding (no extra parameters, but its 2 V h FLOPs per token are counted)."""
    key = size.lower()
    if key not in GPT3_SIZES:
        raise InputError(f"model: unknown GPT-3 size {size!r} (known: {', '.join(GPT3_SIZES)})")
    blocks, h, heads = GPT3_SIZES[key]
    vocab = 50257
    b = _Builder()
    b.add("embeddings", (vocab + 2048) * h, seq * h, 0.0)
    for k in range(blocks):
        b.add(f"block{k}", _block_params(h, 4 * h), seq * h, _block_flops(h, 4 * h, seq),
              tp_allreduces=4)
    b.add("head", 2 * h, seq * vocab, 2.0 * seq * h * vocab)  # final LN + tied projection
    return Model(f"gpt3-{key}", tuple(b.layers), batch_per_gpu,
                 {"blocks": blocks, "hidden": h, "heads": heads, "seq": seq})


# -- recommendation and CANDLE ----------------------------------------------------------------
def dlrm(tables: int = 64, rows: int = 10_000_000, dim: int = 128, bag: int = 100,
         batch_per_gpu: int = 128) -> Model:
    """DLRM as simulated by TopoOpt: ``tables`` embedding tables (``rows x dim``, sum-pooled
    bags of ``bag`` lookups), bottom MLP on a 2048-wide dense input (7 x 2048 -> 2048), the
    pooled embeddings concatenated with the bottom output (64 * 128 + 2048 = 10240), and the
    top MLP 10240 -> 4096, 14 x 4096 -> 4096, 4096 -> 1."""
    b = _Builder()
    emb = [b.add(f"emb{t}", rows * dim, dim, 2.0 * bag * dim, kind="embedding", inputs=())
           for t in range(tables)]
    prev = b.dense("bot0", 2048, 2048, inputs=())
    for k in range(1, 7):
        prev = b.dense(f"bot{k}", 2048, 2048)
    b.dense("top0", tables * dim + 2048, 4096, inputs=(*emb, prev))
    for k in range(1, 15):
        b.dense(f"top{k}", 4096, 4096)
    b.dense("top15", 4096, 1)
    return Model("dlrm", tuple(b.layers), batch_per_gpu)


def candle(width: int = 16384, tower_layers: int = 16, top_layers: int = 8,
           inputs: Sequence[int] = (942, 5270, 5270, 2048, 2048), batch_per_gpu: int = 256) -> Model:
    """CANDLE Uno as simulated by TopoOpt: one tower per input feature block (widths 942,
    5270, 5270, 2048, 2048), each ``tower_layers`` dense layers of ``width`` (the first maps
    the input to ``width``); the towers' outputs are concatenated and fed to ``top_layers``
    dense layers of ``width`` (the first maps ``5 * width`` to ``width``), then a 1-unit
    regression output."""
    b = _Builder()
    outs = []
    for t, n_in in enumerate(inputs):
        prev = b.dense(f"tower{t}.0", n_in, width, inputs=())
        for k in range(1, tower_layers):
            prev = b.dense(f"tower{t}.{k}", width, width)
        outs.append(prev)
    b.dense("top0", len(inputs) * width, width, inputs=tuple(outs))
    for k in range(1, top_layers):
        b.dense(f"top{k}", width, width)
    b.dense("out", width, 1)
    return Model("candle", tuple(b.layers), batch_per_gpu)


def ncf(tables: int = 32, rows: int = 1_000_000, gmf_dim: int = 64, mlp_dim: int = 128,
        batch_per_gpu: int = 128) -> Model:
    """NCF (neural collaborative filtering) as simulated by TopoOpt, reading "32 tables per
    family, dims 64 and 128" as four families of ``tables`` tables each: GMF user and GMF
    item (dim 64), MLP user and MLP item (dim 128). The MLP path concatenates its 64 tables
    (64 * 128 = 8192) into 8192 -> 4096 and 6 x 4096 -> 4096; the GMF path multiplies user
    and item vectors elementwise (32 * 64 = 2048 wide); the output layer maps the
    concatenation (4096 + 2048) to 1."""
    b = _Builder()
    fams = {}
    for fam, dim in (("gmf_user", gmf_dim), ("gmf_item", gmf_dim), ("mlp_user", mlp_dim),
                     ("mlp_item", mlp_dim)):
        fams[fam] = [b.add(f"{fam}{t}", rows * dim, dim, 0.0, kind="embedding", inputs=())
                     for t in range(tables)]
    gmf_w = tables * gmf_dim
    gmf = b.add("gmf", 0, gmf_w, float(gmf_w), inputs=(*fams["gmf_user"], *fams["gmf_item"]))
    prev = b.dense("mlp0", 2 * tables * mlp_dim, 4096, inputs=(*fams["mlp_user"], *fams["mlp_item"]))
    for k in range(1, 7):
        prev = b.dense(f"mlp{k}", 4096, 4096)
    b.dense("out", 4096 + gmf_w, 1, inputs=(prev, gmf))
    return Model("ncf", tuple(b.layers), batch_per_gpu)


# -- lookup ---------------------------------------------------------------------------------------
MODELS: dict[str, Callable[..., Model]] = {
    "dlrm": dlrm,
    "candle": candle,
    "bert": bert,
    "bert-large": bert_large,
    "ncf": ncf,
    "resnet50": resnet50,
    "vgg16": vgg16,
}


def model_names() -> list[str]:
    return [*MODELS, *(f"gpt3-{s}" for s in GPT3_SIZES)]


def get_model(name: str, batch_per_gpu: int | None = None) -> Model:
    """A zoo model by name (``dlrm``, ``candle``, ``bert``, ``bert-large``, ``ncf``,
    ``resnet50``, ``vgg16``, ``gpt3-<size>``), optionally with another per-GPU batch."""
    key = name.lower()
    if batch_per_gpu is not None and batch_per_gpu < 1:  # a batch scales activations and FLOPs
        raise InputError(f"batch: the per-GPU batch must be at least 1, got {batch_per_gpu}")
    kwargs = {} if batch_per_gpu is None else {"batch_per_gpu": int(batch_per_gpu)}
    m = re.fullmatch(r"gpt3-(.+)", key)
    if m:
        return gpt3(m.group(1), **kwargs)
    if key not in MODELS:
        raise InputError(f"model: unknown model {name!r} (known: {', '.join(model_names())})")
    return MODELS[key](**kwargs)
