"""The checker's ONNX reader binds BFLOAT16 initializers only from opset 13, as docs/FORMATS.md, the producer and
onnxruntime do (a graph with BFLOAT16 weights under opset 12 is INVALID_GRAPH to onnxruntime)."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper

from certsym_check.errors import Reject
from certsym_check.readers.onnx import read_onnx

BF16 = TensorProto.BFLOAT16


def _bfloat16(name: str, values: np.ndarray) -> TensorProto:
    """An initializer of BFLOAT16 raw data: the high 16 bits of each float32."""
    bits = (values.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)
    return helper.make_tensor(name, BF16, values.shape, bits.tobytes(), raw=True)


def _model(opset: int) -> bytes:
    """Gemm, Relu, Gemm with BFLOAT16 weights (3 inputs, 2 neurons, 1 output) importing ``opset``."""
    rng = np.random.default_rng(0)
    inits = [_bfloat16(name, rng.standard_normal(shape)) for name, shape in
             (("W1", (2, 3)), ("b1", (2,)), ("W2", (1, 2)), ("b2", (1,)))]
    nodes = [helper.make_node("Gemm", ["x", "W1", "b1"], ["h"], transB=1), helper.make_node("Relu", ["h"], ["r"]),
             helper.make_node("Gemm", ["r", "W2", "b2"], ["y"], transB=1)]
    graph = helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info("x", BF16, [None, 3])],
                              [helper.make_tensor_value_info("y", BF16, None)], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=9).SerializeToString()


@pytest.mark.parametrize("opset", [7, 12])
def test_bfloat16_below_opset_13_is_refused(opset):
    reason = f"BFLOAT16, which ONNX allows from opset 13 \\(the model imports opset {opset}\\)"
    with pytest.raises(Reject, match=reason):
        read_onnx(_model(opset))


@pytest.mark.parametrize("opset", [13, 17])
def test_bfloat16_from_opset_13_is_read(opset):
    tensors = read_onnx(_model(opset))
    assert tensors, "the graph's weights are read"
