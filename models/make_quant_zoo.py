#!/usr/bin/env python3
"""Quantized and float16 models as users make them, from the project's float
models, for end-to-end checks against ONNX Runtime running the same model
(tests/e2e/quant_zoo.py) and for bench/bench.py's int8 rows.

  python models/make_quant_zoo.py --out build/models --set zoo|bench|real|all
                                  [--only NAME...]

--set zoo (the CI matrix; the float models come from models/make_cnn_zoo.py
and models/make_bert.py, built in memory):
  CNN_{qdq,qop}_{pc,pt}.onnx   for CNN in resnet18_small, mobilenetv2_small:
      onnxruntime.quantization.quant_pre_process (ONNX shape inference and
      ONNX Runtime's basic graph optimizations: BatchNormalization folded
      into Conv; its symbolic shape inference is skipped, as it needs sympy,
      which scripts/setup.sh does not install), then quantize_static with a CalibrationDataReader of
      CALIB standard normal inputs (seeded; compare.py also draws standard
      normal inputs), QDQ or QOperator form, per channel or per tensor,
      uint8 activations and int8 weights (ONNX Runtime's recommendation for
      x86-64);
  resnet18_small_qdq_s8.onnx  QDQ per channel with quantize_static's default
      types (int8 activations and weights);
  resnet18_qdq_pc.onnx         the full ResNet-18 (224x224), QDQ per channel;
  CNN_fp16.onnx                for resnet18_small, mobilenetv2_small,
      resnet18: onnxruntime.transformers.float16.convert_float_to_float16
      with its defaults (float16 inputs and outputs too);
  bert_small_dyn.onnx          quantize_dynamic of the BERT-small encoder
      (int8 weights: MatMul -> DynamicQuantizeLinear + MatMulInteger + Mul;
      Gather's embedding tables as well, ONNX Runtime's default op list);
  bert_small_fp16.onnx         float16 with keep_io_types=True (int64 ids in,
      float32 hidden states out), as one converts a transformer.

--set bench (bench/bench.py's int8 rows): resnet50_qdq_pc.onnx,
  mobilenetv2_qdq_pc.onnx (224x224) and bert_base_dyn.onnx, made as above;
  the float models they come from are written beside them
  (resnet50.onnx, mobilenetv2.onnx, bert_base.onnx) unless there already.

--set real (the pretrained models of models/fetch_models.py, fetched into
  its cache if needed; exit 77 when they cannot be had):
  ppocr_det_qdq_pc.onnx, ppocr_cls_qdq_pc.onnx   upgraded to opset 13
      (onnx.version_converter: ONNX Runtime writes per-channel
      DequantizeLinear into their opset 11/12 graphs as it is, which is
      invalid there), quant_pre_process, quantize_static, QDQ per channel, uint8/int8, calibrated on images of
      standard normal pixels (det at 1x3x96x96, cls at 1x3x48x192);
  ppocr_det_fp16.onnx, ppocr_cls_fp16.onnx        convert_float_to_float16,
      keep_io_types=True (the float32 image in, as RapidOCR feeds it);
  silero_vad_dyn.onnx                             quantize_dynamic (int8
      weights) with its default op list: the convolutions become
      DynamicQuantizeLinear + ConvInteger, the LSTM com.microsoft's
      DynamicQuantizeLSTM (int8 W and R, one scale per direction);
  silero_vad_dyn_conv.onnx                        the same with
      op_types_to_quantize=["Conv"], the LSTM left in float32;
  silero_vad_fp16.onnx                            float16, keep_io_types=True.

Each NAME.onnx gets NAME.json beside it: the float model it came from
("float", a file in --out), how it was made ("how"), and for an int8 model
the scale of the DequantizeLinear that writes each float output, if one does
("output_scales"). The same arguments write the same bytes, as far as ONNX
Runtime's quantizer is deterministic (its calibration is).
"""
import argparse
import json
import os
import sys
import tempfile

import numpy as np
import onnx
from onnx import numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import make_bert  # noqa: E402
import make_cnn_zoo  # noqa: E402
from make_qop_cases import ort_u8s8_saturates  # noqa: E402

CALIB = 8          # calibration inputs per model (standard normal, seeded)
SKIP = 77


def save(model, path):
    tmp = path + ".part"
    onnx.save(model, tmp)
    os.replace(tmp, path)


def output_scales(path):
    """{output: scale} for each graph output that a DequantizeLinear writes
    with a per-tensor scale."""
    m = onnx.load(path)
    inits = {t.name: numpy_helper.to_array(t) for t in m.graph.initializer}
    for node in m.graph.node:
        if node.op_type == "Constant":
            inits[node.output[0]] = numpy_helper.to_array(node.attribute[0].t)
    producer = {o: n for n in m.graph.node for o in n.output}
    scales = {}
    for out in m.graph.output:
        node = producer.get(out.name)
        if node is not None and node.op_type == "DequantizeLinear" and node.input[1] in inits:
            s = inits[node.input[1]]
            if s.size == 1:
                scales[out.name] = float(s.reshape(()))
    return scales


def write_meta(path, float_name, how):
    meta = {"float": float_name, "how": how}
    if "quantize" in how:
        meta["output_scales"] = output_scales(path)
    with open(path[:-len(".onnx")] + ".json", "w") as f:
        json.dump(meta, f, indent=1, sort_keys=True)
        f.write("\n")
    print(f"wrote {path} ({os.path.getsize(path) / 1e6:.2f} MB): {how}")


def calibration_reader(shapes, count=CALIB, seed=5):
    """A CalibrationDataReader over `count` seeded standard normal inputs of
    the given shapes ({input name: shape})."""
    from onnxruntime.quantization import CalibrationDataReader

    class Reader(CalibrationDataReader):
        def __init__(self):
            rng = np.random.default_rng(seed)
            self.data = iter([{n: rng.standard_normal(s).astype(np.float32) for n, s in shapes.items()}
                              for _ in range(count)])

        def get_next(self):
            return next(self.data, None)

    return Reader()


def preprocess(float_path, tmpdir):
    from onnxruntime.quantization.shape_inference import quant_pre_process
    pre = os.path.join(tmpdir, os.path.basename(float_path)[:-5] + "_pre.onnx")
    # skip_symbolic_shape: ONNX Runtime's symbolic shape inference needs
    # sympy, which the venv does not have; ONNX's shape inference still runs
    quant_pre_process(float_path, pre, skip_symbolic_shape=True)
    return pre


def list_reader(feeds):
    from onnxruntime.quantization import CalibrationDataReader

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.data = iter(feeds)

        def get_next(self):
            return next(self.data, None)

    return Reader()


def static(float_path, out, name, shapes, fmt, per_channel, act="u8", tmpdir=None, calib=CALIB, feeds=None):
    """feeds: the calibration inputs, a list of {input: array}; default
    `calib` standard normal ones of the given shapes."""
    from onnxruntime.quantization import QuantFormat, QuantType, quantize_static
    pre = preprocess(float_path, tmpdir)
    path = os.path.join(out, name + ".onnx")
    reader = list_reader(feeds) if feeds is not None else calibration_reader(shapes, calib)
    # uint8 data times int8 weights: 7-bit weights where ONNX Runtime's own
    # products would saturate (make_qop_cases.ort_u8s8_saturates)
    reduce = act == "u8" and ort_u8s8_saturates()
    quantize_static(pre, path, reader,
                    quant_format=QuantFormat.QDQ if fmt == "qdq" else QuantFormat.QOperator,
                    per_channel=per_channel,
                    activation_type=QuantType.QUInt8 if act == "u8" else QuantType.QInt8,
                    weight_type=QuantType.QInt8, reduce_range=reduce)
    write_meta(path, os.path.basename(float_path),
               f"quant_pre_process + quantize_static {fmt.upper()} "
               f"{'per channel' if per_channel else 'per tensor'}, activations "
               f"{'uint8' if act == 'u8' else 'int8'}, weights int8{' (reduce_range)' if reduce else ''}, "
               f"{len(feeds) if feeds is not None else calib} calibration inputs")


def fix_float_name(out, name, float_name):
    path = os.path.join(out, name + ".json")
    with open(path) as f:
        meta = json.load(f)
    meta["float"] = float_name
    with open(path, "w") as f:
        json.dump(meta, f, indent=1, sort_keys=True)
        f.write("\n")


def dynamic(float_path, out, name, op_types=None):
    from onnxruntime.quantization import QuantType, quantize_dynamic
    path = os.path.join(out, name + ".onnx")
    reduce = ort_u8s8_saturates()
    quantize_dynamic(float_path, path, weight_type=QuantType.QInt8, op_types_to_quantize=op_types,
                     reduce_range=reduce)
    write_meta(path, os.path.basename(float_path), "quantize_dynamic, weights int8" +
               (" (reduce_range)" if reduce else "") +
               (f", op_types_to_quantize={op_types}" if op_types else ""))


def half(float_path, out, name, keep_io_types):
    from onnxruntime.transformers.float16 import convert_float_to_float16
    path = os.path.join(out, name + ".onnx")
    save(convert_float_to_float16(onnx.load(float_path), keep_io_types=keep_io_types), path)
    write_meta(path, os.path.basename(float_path),
               f"convert_float_to_float16 (keep_io_types={keep_io_types})")


def cnn_float(out, model, small):
    name = model + ("_small" if small else "")
    path = os.path.join(out, name + ".onnx")
    if not os.path.exists(path):
        save(make_cnn_zoo.MODELS[model](small), path)
    res = (32 if small else 224)
    return path, {"input": (1, 3, res, res)}


def bert_float(out, size):
    path = os.path.join(out, f"bert_{size}.onnx")
    folder = os.path.join(out, f"bert_{size}_inputs")
    if not os.path.exists(path) or not os.path.isdir(folder):
        save(make_bert.build(size), path)
        os.makedirs(folder, exist_ok=True)
        for k, v in make_bert.sample_inputs(size).items():
            np.save(os.path.join(folder, k + ".npy"), v)
    return path


def zoo(out, want, tmpdir):
    """The CI matrix (float models made only where a wanted name needs them)."""
    for model in ("resnet18", "mobilenetv2"):
        small = f"{model}_small"
        names = [f"{small}_{fmt}_{g}" for fmt in ("qdq", "qop") for g in ("pc", "pt")]
        if model == "resnet18":
            names.append(f"{small}_qdq_s8")
        if not any(want(n) for n in names + [f"{small}_fp16"]):
            continue
        path, shapes = cnn_float(out, model, True)
        for name in filter(want, names):
            fmt, g = name[len(small) + 1:].split("_")
            static(path, out, name, shapes, fmt, g != "pt", act="s8" if g == "s8" else "u8", tmpdir=tmpdir)
        if want(f"{small}_fp16"):
            half(path, out, f"{small}_fp16", False)
    if want("resnet18_qdq_pc") or want("resnet18_fp16"):
        path, shapes = cnn_float(out, "resnet18", False)
        if want("resnet18_qdq_pc"):
            static(path, out, "resnet18_qdq_pc", shapes, "qdq", True, tmpdir=tmpdir, calib=4)
        if want("resnet18_fp16"):
            half(path, out, "resnet18_fp16", False)
    if want("bert_small_dyn") or want("bert_small_fp16"):
        path = bert_float(out, "small")
        if want("bert_small_dyn"):
            dynamic(path, out, "bert_small_dyn")
        if want("bert_small_fp16"):
            half(path, out, "bert_small_fp16", True)


def bench(out, want, tmpdir):
    for model in ("resnet50", "mobilenetv2"):
        if want(f"{model}_qdq_pc"):
            path, shapes = cnn_float(out, model, False)
            static(path, out, f"{model}_qdq_pc", shapes, "qdq", True, tmpdir=tmpdir, calib=4)
    if want("bert_base_dyn"):
        dynamic(bert_float(out, "base"), out, "bert_base_dyn")


def text_pages(out):
    """The detector's calibration inputs: the four 160x320 quarters of the
    page of text that tests/models/real_model.py renders, preprocessed as
    RapidOCR does; the first is also its test input (ppocr_det_x.npy).
    (Calibrated on standard normal pixels instead, the probability map's
    range comes out near 1e-5, its scale 4e-8, and ONNX Runtime's own graph
    optimizations move outputs by 97 steps of it.)"""
    sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests", "models"))
    import real_model
    img, _ = real_model.render()
    x = real_model.preprocess(img)
    pages = [np.ascontiguousarray(x[:, :, y:y + 160, c:c + 320]) for y in (0, 160) for c in (0, 320)]
    np.save(os.path.join(out, "ppocr_det_x.npy"), pages[0])
    return pages


def real(out, want, tmpdir):
    import fetch_models
    try:
        paths = fetch_models.ensure(["det", "cls", "vad"])
    except fetch_models.Unavailable as e:
        print(f"SKIP: the real models are unavailable: {e}")
        return SKIP
    pages = text_pages(out)
    for key, name, shapes in (("det", "ppocr_det", {"x": (1, 3, 96, 96)}),
                              ("cls", "ppocr_cls", {"x": (1, 3, 48, 192)})):
        float_path = os.path.join(out, name + ".onnx")
        model = onnx.load(paths[key])
        save(model, float_path)
        if want(name + "_qdq_pc"):
            # quantize_static writes a per-channel DequantizeLinear (its axis
            # attribute) into an opset 11/12 model as it is, which is invalid
            # there (ONNX Runtime refuses to load it); a user upgrades first
            from onnx import version_converter
            up_path = os.path.join(tmpdir, name + "_opset13.onnx")
            save(version_converter.convert_version(model, 13), up_path)
            static(up_path, out, name + "_qdq_pc", shapes, "qdq", True, tmpdir=tmpdir, calib=4,
                   feeds=[{"x": p} for p in pages] if key == "det" else None)
            fix_float_name(out, name + "_qdq_pc", name + ".onnx")
        if want(name + "_fp16"):
            half(float_path, out, name + "_fp16", True)
    float_path = os.path.join(out, "silero_vad.onnx")
    save(onnx.load(paths["vad"]), float_path)
    if want("silero_vad_dyn"):
        dynamic(float_path, out, "silero_vad_dyn")
    if want("silero_vad_dyn_conv"):
        dynamic(float_path, out, "silero_vad_dyn_conv", op_types=["Conv"])
    if want("silero_vad_fp16"):
        half(float_path, out, "silero_vad_fp16", True)
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--set", choices=["zoo", "bench", "real", "all"], default="zoo")
    ap.add_argument("--only", nargs="*", default=None, help="make only these NAMEs")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)

    def want(name):
        return args.only is None or name in args.only

    rc = 0
    with tempfile.TemporaryDirectory(prefix="ingot-quant-zoo-") as tmpdir:
        if args.set in ("zoo", "all"):
            zoo(args.out, want, tmpdir)
        if args.set in ("bench", "all"):
            bench(args.out, want, tmpdir)
        if args.set in ("real", "all"):
            rc = real(args.out, want, tmpdir)
    return rc


if __name__ == "__main__":
    raise SystemExit(main())
