#!/usr/bin/env python3
"""Writes a BERT-style transformer encoder as ONNX with deterministic random
weights, node for node in the form PyTorch exporters emit for BERT, plus
sample inputs, for end-to-end tests and benchmarks.

  python models/make_bert.py --out build/models [--size small|base|all]
                             [--layernorm mixed|fused|decomposed] [--static]

Sizes:  small  4 layers, hidden 256, 4 heads, intermediate 1024, vocab 8192
        base  12 layers, hidden 768, 12 heads, intermediate 3072, vocab 30522
both with 512 positions, 2 token types and a sequence of 128 for the inputs.

  inputs   input_ids, attention_mask, token_type_ids   int64 [batch, sequence]
           (symbolic, as exported with dynamic axes; --static fixes [1,128])
  outputs  last_hidden_state  float32 [batch, sequence, hidden]
           pooler_output      float32 [batch, hidden]

Graph (opset 17):
  embeddings  Gather(word_embeddings, input_ids)
              + Gather(position_embeddings, Slice(position_ids buffer, 0,
                Unsqueeze(Gather(Shape(input_ids), 1)), axis 1))
              + Gather(token_type_embeddings, token_type_ids) -> LayerNorm
  mask        Unsqueeze(attention_mask, [1,2]) -> Cast float -> Sub(1, m)
              -> Mul(-10000)                       ([batch,1,1,sequence])
  per layer   Q, K, V = MatMul + Add; heads by Reshape to a shape built from
              Shape -> Gather -> Unsqueeze -> Concat, then Transpose (K to
              [b,h,d,s]); MatMul(Q, K^T) -> Div sqrt(head) -> Add mask ->
              Softmax(-1) -> MatMul V -> Transpose -> Reshape (shape again
              from Shape/Gather/Unsqueeze/Concat) -> MatMul + Add -> Add
              residual -> LayerNorm; FFN MatMul + Add -> GELU as
              x * 0.5 * (1 + Erf(x / sqrt 2)) (Div, Erf, Add, Mul, Mul) ->
              MatMul + Add -> Add residual -> LayerNorm
  pooler      Gather(hidden, 0, axis 1) -> MatMul + Add -> Tanh
LayerNorm is either the LayerNormalization op (fused) or its decomposed
export: ReduceMean, Sub, Pow 2, ReduceMean, Add eps, Sqrt, Div, Mul gamma,
Add beta. --layernorm mixed (default) uses the op for the embeddings and the
odd layers, the decomposed form for the even ones, so both are exercised.

Weights: numpy, fixed seed; projections normal with std 1/sqrt(fan_in) (so
attention is far from uniform and activations stay O(1)), embeddings std 1,
LayerNorm gamma 1 + N(0, 0.1), biases and beta N(0, 0.02). The same arguments
always write the same bytes.

Writes DIR/bert_SIZE.onnx and DIR/bert_SIZE_inputs/{input_ids,
attention_mask,token_type_ids}.npy: [1,128], a [CLS] id, random word ids,
[SEP]; the first 100 positions are real tokens (mask 1, token types 0 then
1), the last 28 are padding (id 0, mask 0). Needs numpy and onnx.
"""
import argparse
import math
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17
SEQ = 128
VALID = 100
MAX_POSITIONS = 512
TYPE_VOCAB = 2
LN_EPS = 1e-12
SIZES = {
    "small": dict(layers=4, hidden=256, heads=4, intermediate=1024, vocab=8192, seed=1),
    "base": dict(layers=12, hidden=768, heads=12, intermediate=3072, vocab=30522, seed=2),
}


class Builder:
    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)
        self.nodes = []
        self.inits = []
        self.consts = {}

    def init(self, name, array):
        self.inits.append(numpy_helper.from_array(np.array(array, order="C"), name))
        return name

    def const(self, value, dtype):
        """A shared scalar or 1-D constant initializer, as exporters name them."""
        arr = np.array(value, dtype=dtype)
        key = (arr.dtype.str, arr.shape, arr.tobytes())
        if key not in self.consts:
            self.consts[key] = self.init(f"onnx::Constant_{len(self.consts)}", arr)
        return self.consts[key]

    def node(self, op, inputs, name, outputs=1, **attrs):
        outs = [f"{name}_output_{i}" for i in range(outputs)]
        self.nodes.append(helper.make_node(op, inputs, outs, name=name, **attrs))
        return outs[0] if outputs == 1 else outs

    def normal(self, shape, std):
        return (self.rng.standard_normal(shape) * std).astype(np.float32)

    # -- pieces --

    def linear(self, x, fan_in, fan_out, name):
        w = self.init(f"{name}.weight", self.normal((fan_in, fan_out), 1.0 / math.sqrt(fan_in)))
        b = self.init(f"{name}.bias", self.normal((fan_out,), 0.02))
        y = self.node("MatMul", [x, w], f"/{name}/MatMul")
        return self.node("Add", [b, y], f"/{name}/Add")

    def layer_norm(self, x, hidden, name, fused):
        gamma = self.init(f"{name}.weight", (1.0 + self.normal((hidden,), 0.1)).astype(np.float32))
        beta = self.init(f"{name}.bias", self.normal((hidden,), 0.02))
        if fused:
            return self.node("LayerNormalization", [x, gamma, beta], f"/{name}/LayerNormalization",
                             axis=-1, epsilon=LN_EPS)
        mean = self.node("ReduceMean", [x], f"/{name}/ReduceMean", axes=[-1], keepdims=1)
        centered = self.node("Sub", [x, mean], f"/{name}/Sub")
        sq = self.node("Pow", [centered, self.const(2.0, np.float32)], f"/{name}/Pow")
        var = self.node("ReduceMean", [sq], f"/{name}/ReduceMean_1", axes=[-1], keepdims=1)
        var_eps = self.node("Add", [var, self.const(LN_EPS, np.float32)], f"/{name}/Add")
        std = self.node("Sqrt", [var_eps], f"/{name}/Sqrt")
        normed = self.node("Div", [centered, std], f"/{name}/Div")
        scaled = self.node("Mul", [normed, gamma], f"/{name}/Mul")
        return self.node("Add", [scaled, beta], f"/{name}/Add_1")

    def dim_of(self, x, axis, name):
        """Unsqueeze(Gather(Shape(x), axis)): a 1-element int64 tensor."""
        shape = self.node("Shape", [x], f"{name}/Shape_{axis}")
        d = self.node("Gather", [shape, self.const(axis, np.int64)], f"{name}/Gather_{axis}", axis=0)
        return self.node("Unsqueeze", [d, self.const([0], np.int64)], f"{name}/Unsqueeze_{axis}")

    def split_heads(self, x, heads, head_dim, name, perm):
        b = self.dim_of(x, 0, name)
        s = self.dim_of(x, 1, name)
        shape = self.node("Concat", [b, s, self.const([heads], np.int64),
                                     self.const([head_dim], np.int64)], f"{name}/Concat", axis=0)
        r = self.node("Reshape", [x, shape], f"{name}/Reshape")
        return self.node("Transpose", [r], f"{name}/Transpose", perm=perm)

    def attention(self, x, mask, cfg, name, fused_ln):
        h, heads = cfg["hidden"], cfg["heads"]
        hd = h // heads
        q = self.linear(x, h, h, f"{name}.attention.self.query")
        k = self.linear(x, h, h, f"{name}.attention.self.key")
        v = self.linear(x, h, h, f"{name}.attention.self.value")
        qh = self.split_heads(q, heads, hd, f"/{name}/attention/self/q", [0, 2, 1, 3])
        kt = self.split_heads(k, heads, hd, f"/{name}/attention/self/k", [0, 2, 3, 1])
        vh = self.split_heads(v, heads, hd, f"/{name}/attention/self/v", [0, 2, 1, 3])
        p = f"/{name}/attention/self"
        scores = self.node("MatMul", [qh, kt], f"{p}/MatMul")
        scores = self.node("Div", [scores, self.const(math.sqrt(hd), np.float32)], f"{p}/Div")
        scores = self.node("Add", [scores, mask], f"{p}/Add")
        probs = self.node("Softmax", [scores], f"{p}/Softmax", axis=-1)
        ctx = self.node("MatMul", [probs, vh], f"{p}/MatMul_1")
        ctx = self.node("Transpose", [ctx], f"{p}/Transpose_out", perm=[0, 2, 1, 3])
        b = self.dim_of(ctx, 0, f"{p}/out")
        s = self.dim_of(ctx, 1, f"{p}/out")
        shape = self.node("Concat", [b, s, self.const([h], np.int64)], f"{p}/out/Concat", axis=0)
        ctx = self.node("Reshape", [ctx, shape], f"{p}/Reshape_out")
        out = self.linear(ctx, h, h, f"{name}.attention.output.dense")
        out = self.node("Add", [out, x], f"/{name}/attention/output/Add")
        return self.layer_norm(out, h, f"{name}.attention.output.LayerNorm", fused_ln)

    def ffn(self, x, cfg, name, fused_ln):
        h, inter = cfg["hidden"], cfg["intermediate"]
        y = self.linear(x, h, inter, f"{name}.intermediate.dense")
        p = f"/{name}/intermediate/intermediate_act_fn"
        t = self.node("Div", [y, self.const(math.sqrt(2.0), np.float32)], f"{p}/Div")
        t = self.node("Erf", [t], f"{p}/Erf")
        t = self.node("Add", [t, self.const(1.0, np.float32)], f"{p}/Add")
        t = self.node("Mul", [y, t], f"{p}/Mul")
        g = self.node("Mul", [t, self.const(0.5, np.float32)], f"{p}/Mul_1")
        out = self.linear(g, inter, h, f"{name}.output.dense")
        out = self.node("Add", [out, x], f"/{name}/output/Add")
        return self.layer_norm(out, h, f"{name}.output.LayerNorm", fused_ln)


def build(size, layernorm="mixed", static=False):
    cfg = SIZES[size]
    b = Builder(cfg["seed"])
    h = cfg["hidden"]
    if static:
        dims = [1, SEQ]
    else:
        dims = ["batch", "sequence"]
    inputs = [helper.make_tensor_value_info(n, TensorProto.INT64, dims)
              for n in ("input_ids", "attention_mask", "token_type_ids")]

    def fused(i):  # i: -1 for the embeddings, else the layer index
        return {"fused": True, "decomposed": False}.get(layernorm, i < 0 or i % 2 == 1)

    # embeddings
    word = b.init("embeddings.word_embeddings.weight", b.normal((cfg["vocab"], h), 1.0))
    pos = b.init("embeddings.position_embeddings.weight", b.normal((MAX_POSITIONS, h), 1.0))
    typ = b.init("embeddings.token_type_embeddings.weight", b.normal((TYPE_VOCAB, h), 1.0))
    pos_ids = b.init("embeddings.position_ids", np.arange(MAX_POSITIONS, dtype=np.int64)[None, :])
    e_word = b.node("Gather", [word, "input_ids"], "/embeddings/word_embeddings/Gather", axis=0)
    seq_len = b.dim_of("input_ids", 1, "/embeddings")
    ids = b.node("Slice", [pos_ids, b.const([0], np.int64), seq_len, b.const([1], np.int64),
                           b.const([1], np.int64)], "/embeddings/Slice")
    e_pos = b.node("Gather", [pos, ids], "/embeddings/position_embeddings/Gather", axis=0)
    e_typ = b.node("Gather", [typ, "token_type_ids"], "/embeddings/token_type_embeddings/Gather",
                   axis=0)
    e = b.node("Add", [e_word, e_typ], "/embeddings/Add")
    e = b.node("Add", [e, e_pos], "/embeddings/Add_1")
    x = b.layer_norm(e, h, "embeddings.LayerNorm", fused(-1))

    # additive attention mask
    m = b.node("Unsqueeze", ["attention_mask", b.const([1, 2], np.int64)], "/Unsqueeze_mask")
    m = b.node("Cast", [m], "/Cast_mask", to=TensorProto.FLOAT)
    m = b.node("Sub", [b.const(1.0, np.float32), m], "/Sub_mask")
    mask = b.node("Mul", [m, b.const(-10000.0, np.float32)], "/Mul_mask")

    for i in range(cfg["layers"]):
        x = b.attention(x, mask, cfg, f"encoder.layer.{i}", fused(i))
        x = b.ffn(x, cfg, f"encoder.layer.{i}", fused(i))
    b.nodes.append(helper.make_node("Identity", [x], ["last_hidden_state"], name="/Identity_out"))

    first = b.node("Gather", [x, b.const(0, np.int64)], "/pooler/Gather", axis=1)
    pooled = b.linear(first, h, h, "pooler.dense")
    b.nodes.append(helper.make_node("Tanh", [pooled], ["pooler_output"], name="/pooler/Tanh"))

    out_dims = dims
    outputs = [
        helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, out_dims + [h]),
        helper.make_tensor_value_info("pooler_output", TensorProto.FLOAT, out_dims[:1] + [h]),
    ]
    graph = helper.make_graph(b.nodes, f"bert_{size}", inputs, outputs, b.inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                              producer_name="ingot-make_bert")
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    return model


def sample_inputs(size):
    cfg = SIZES[size]
    rng = np.random.default_rng(100 + cfg["seed"])
    ids = np.zeros((1, SEQ), dtype=np.int64)
    ids[0, 0] = 101 % cfg["vocab"]                     # [CLS]
    ids[0, 1:VALID - 1] = rng.integers(1000, cfg["vocab"], VALID - 2)
    ids[0, VALID - 1] = 102 % cfg["vocab"]             # [SEP]
    mask = np.zeros((1, SEQ), dtype=np.int64)
    mask[0, :VALID] = 1
    types = np.zeros((1, SEQ), dtype=np.int64)
    types[0, VALID // 2:VALID] = 1
    return {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    ap.add_argument("--out", required=True, help="output folder")
    ap.add_argument("--size", choices=list(SIZES) + ["all"], default="all")
    ap.add_argument("--layernorm", choices=["mixed", "fused", "decomposed"], default="mixed")
    ap.add_argument("--static", action="store_true", help="fixed [1,128] inputs, no symbolic dims")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    for size in (list(SIZES) if args.size == "all" else [args.size]):
        model = build(size, args.layernorm, args.static)
        path = os.path.join(args.out, f"bert_{size}.onnx")
        tmp = path + ".part"
        onnx.save(model, tmp)
        os.replace(tmp, path)
        folder = os.path.join(args.out, f"bert_{size}_inputs")
        os.makedirs(folder, exist_ok=True)
        for name, arr in sample_inputs(size).items():
            np.save(os.path.join(folder, f"{name}.npy"), arr)
        print(f"wrote {path} ({os.path.getsize(path) / 1e6:.1f} MB, {len(model.graph.node)} nodes) "
              f"and {folder}/")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
