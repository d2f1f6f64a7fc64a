"""com.microsoft DynamicQuantizeLSTM (onnxruntime.quantization.quantize_dynamic's
LSTM) against the float LSTM of its dequantized weights, for the tests.

Ingot runs DynamicQuantizeLSTM as an LSTM over the dequantized int8 weights in
float32 (lower/lower_rnn.c); ONNX Runtime's kernel also quantizes X and the
hidden state to uint8 at every step. `dequantized(model)` writes what Ingot
computes as a plain ONNX model (each DynamicQuantizeLSTM an ONNX LSTM with
W[d] = ((Wq[d] - Wz) * Ws)^T, float32, R likewise), so ONNX Runtime running it
is Ingot's reference, and its distance from ONNX Runtime running the
quantized model is the activation-quantization gap of ONNX Runtime's own
kernel: what a tolerance against that kernel has to allow.
"""
import numpy as np


def _deq(q, scale, zero):
    """[D, cols, 4H] 8-bit -> ONNX's [D, 4H, cols] float32: (q - z) * s with
    s, z per direction [D] or per gate column [D, 4H]."""
    q = q.astype(np.float32)
    d = q.shape[0]
    s = scale.astype(np.float32).reshape(d, 1, -1)
    z = zero.astype(np.float32).reshape(d, 1, -1)
    return np.ascontiguousarray(((q - z) * s).transpose(0, 2, 1)).astype(np.float32)


def dequantized(model):
    """A copy of `model` (onnx.ModelProto) whose DynamicQuantizeLSTM nodes are
    ONNX LSTMs over the dequantized weights (new initializers); their W, R,
    scale and zero-point inputs must be initializers."""
    import onnx
    from onnx import helper, numpy_helper
    m = onnx.ModelProto()
    m.CopyFrom(model)
    inits = {t.name: t for t in m.graph.initializer}
    nodes = []
    for n in m.graph.node:
        if n.op_type != "DynamicQuantizeLSTM" or n.domain != "com.microsoft":
            nodes.append(n)
            continue
        ins = list(n.input) + [""] * (12 - len(n.input))
        arr = {k: numpy_helper.to_array(inits[ins[k]]) for k in (1, 2, 8, 9, 10, 11)}
        w = _deq(arr[1], arr[8], arr[9])
        r = _deq(arr[2], arr[10], arr[11])
        wn, rn = n.name + "_W_dequantized", n.name + "_R_dequantized"
        m.graph.initializer.extend([numpy_helper.from_array(w, wn), numpy_helper.from_array(r, rn)])
        lstm_in = [ins[0], wn, rn] + ins[3:8]
        while lstm_in and not lstm_in[-1]:
            lstm_in.pop()
        lstm = helper.make_node("LSTM", lstm_in, list(n.output), name=n.name + "_float")
        lstm.attribute.extend(n.attribute)
        nodes.append(lstm)
    del m.graph.node[:]
    m.graph.node.extend(nodes)
    used = {i for n in m.graph.node for i in n.input}
    keep = [t for t in m.graph.initializer if t.name in used or t.name in {o.name for o in m.graph.output}]
    del m.graph.initializer[:]
    m.graph.initializer.extend(keep)
    onnx.checker.check_model(m)
    return m


def ort_outputs(model_or_path, feeds):
    """ONNX Runtime's outputs (one thread, CPU) by name."""
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    src = model_or_path if isinstance(model_or_path, str) else model_or_path.SerializeToString()
    sess = ort.InferenceSession(src, so, providers=["CPUExecutionProvider"])
    return {o.name: v for o, v in zip(sess.get_outputs(), sess.run(None, feeds))}

