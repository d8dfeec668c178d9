"""Model files: .npz, .safetensors, PyTorch state dicts (.pt/.pth) and ONNX, read into exact parameters.

A shallow ReLU network is four tensors: the first layer's weight (n×m) and bias (n), the second layer's
weight (k×n) and bias (k). Default names follow torch.nn.Sequential(Linear, ReLU, Linear): "0.weight",
"0.bias", "2.weight", "2.bias"; "A", "b", "M", "c" are accepted too, and ``keys`` overrides both.
Floating-point weights (float16/32/64) become the exact dyadic rationals they are. Nothing is ever
unpickled: .npz is read with allow_pickle=False, and PyTorch files only through torch.load(weights_only=True)
(torch is optional). A layout that is not Linear–ReLU–Linear is reported by what was found.
Cost: linear in the number of weights.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path

from flint import fmpq

from certsym.errors import InputError

SUFFIXES = {".npz", ".safetensors", ".pt", ".pth", ".onnx"}
TORCH_KEYS = ("0.weight", "0.bias", "2.weight", "2.bias")
LETTER_KEYS = ("A", "b", "M", "c")


def is_model_file(path: str | os.PathLike) -> bool:
    """True for .npz, .safetensors, .pt/.pth and .onnx paths."""
    return Path(path).suffix.lower() in SUFFIXES


def exact(values) -> list:
    """Exact rationals of a numpy array's entries (floats are dyadic; ints are ints), flattened."""
    import numpy as np

    arr = np.asarray(values)
    if arr.dtype.kind == "f":
        flat = arr.astype(np.float64).ravel().tolist()  # float16/32 → float64 is exact
        out = []
        for x in flat:
            if x != x or x in (float("inf"), float("-inf")):
                raise InputError("the model holds a NaN or infinite weight")
            num, den = x.as_integer_ratio()
            out.append(fmpq(num, den))
        return out
    if arr.dtype.kind in "iub":
        return [fmpq(int(x)) for x in arr.ravel().tolist()]
    raise InputError(f"unsupported weight type {arr.dtype}")


def _tensors(path: Path) -> dict:
    suffix = path.suffix.lower()
    try:
        if suffix == ".npz":
            import numpy as np

            try:
                with np.load(path, allow_pickle=False) as data:
                    return {key: data[key] for key in data.files}
            except ValueError as exc:
                if "pickle" in str(exc):
                    raise InputError(f"{path}: refused: the file holds pickled objects, which certsym never "
                                     "loads") from None
                raise
        if suffix == ".safetensors":
            try:
                from safetensors.numpy import load_file
            except ImportError:
                raise InputError("reading .safetensors needs the 'safetensors' package "
                                 "(pip install 'certsym[models]')") from None
            return load_file(str(path))
        if suffix in (".pt", ".pth"):
            return _torch_state_dict(path)
        if suffix == ".onnx":
            return _onnx_tensors(path)
    except InputError:
        raise
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except Exception as exc:  # corrupt files raise many types; report them in one line
        raise InputError(f"{path}: cannot read the model file ({type(exc).__name__}: {exc})".splitlines()[0]) from None
    raise InputError(f"{path}: unknown model format")


def _torch_state_dict(path: Path) -> dict:
    try:
        import torch
    except ImportError:
        raise InputError("reading PyTorch files needs torch (pip install torch); certsym never unpickles "
                         "them itself") from None
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:
        raise InputError(f"{path}: refused: not a plain tensor state dict ({type(exc).__name__})") from None
    if not isinstance(state, dict):
        raise InputError(f"{path}: expected a state dict, found {type(state).__name__}")
    return {key: value.detach().cpu().numpy() for key, value in state.items()}


def _onnx_tensors(path: Path) -> dict:
    try:
        import onnx
        from onnx import numpy_helper
    except ImportError:
        raise InputError("reading ONNX needs the 'onnx' package (pip install 'certsym[models]')") from None
    model = onnx.load(str(path))
    init = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    ops = [node.op_type for node in model.graph.node]
    layers, activations = [], []
    pending = None
    for node in model.graph.node:
        if node.op_type == "Gemm":
            weight, bias = (init.get(name) for name in (list(node.input) + [None, None, None])[1:3])
            trans_b = next((a.i for a in node.attribute if a.name == "transB"), 0)
            if weight is None:
                raise InputError(f"{path}: a Gemm without a weight initializer")
            layers.append((weight if trans_b else weight.T, bias))
        elif node.op_type == "MatMul":
            weight = next((init[name] for name in node.input if name in init), None)
            if weight is None:
                raise InputError(f"{path}: a MatMul without a weight initializer")
            pending = weight.T  # x @ W: the Linear weight is W^T
        elif node.op_type == "Add" and pending is not None:
            bias = next((init[name] for name in node.input if name in init), None)
            layers.append((pending, bias))
            pending = None
        elif node.op_type == "Relu":
            activations.append("Relu")
        elif node.op_type not in ("Identity", "Flatten", "Reshape"):
            raise InputError(f"{path}: found a {node.op_type} node; expected Gemm/MatMul+Add, Relu, Gemm/MatMul+Add")
    if pending is not None:
        layers.append((pending, None))
    if len(layers) != 2 or len(activations) != 1:
        raise InputError(f"{path}: expected Linear, ReLU, Linear; found {len(layers)} linear layer(s) and "
                         f"{len(activations)} ReLU(s) among {ops}")
    (w1, b1), (w2, b2) = layers
    if b1 is None or b2 is None:
        raise InputError(f"{path}: a linear layer has no bias")
    return {"0.weight": w1, "0.bias": b1, "2.weight": w2, "2.bias": b2}


def read_arrays(path: str | os.PathLike, keys: Sequence[str] | None = None) -> tuple[list, dict]:
    """The four tensors (W1, b1, W2, b2) as numpy arrays, layout-checked, with the "model" record (the file
    format and the tensor names used, which certificates record). Cost: reading the file."""
    path = Path(path)
    tensors = _tensors(path)
    names = tuple(keys) if keys else next((ks for ks in (TORCH_KEYS, LETTER_KEYS) if all(k in tensors for k in ks)),
                                          None)
    if names is None or not all(k in tensors for k in names):
        layers = sorted({m.group(1) for k in tensors if (m := re.match(r"(\d+)\.weight$", k))}, key=int)
        if len(layers) > 2:
            raise InputError(f"{path}: found {len(layers)} linear layers ({', '.join(l + '.weight' for l in layers)}); "
                             "certsym handles one hidden layer")
        missing = [k for k in (keys or TORCH_KEYS) if k not in tensors]
        raise InputError(f"{path}: missing {', '.join(missing)} (found {', '.join(sorted(tensors)) or 'nothing'}); "
                         "set the key names with --keys")
    extra = sorted(set(tensors) - set(names))
    if extra and not keys:
        layers = sorted({m.group(1) for k in tensors if (m := re.match(r"(\d+)\.weight$", k))}, key=int)
        what = f"{len(layers)} linear layers" if len(layers) > 2 else "extra tensors"
        raise InputError(f"{path}: found {what} ({', '.join(extra)}) besides {', '.join(names)}; certsym reads "
                         "one hidden layer (Linear, ReLU, Linear); choose tensors with --keys")
    arrays = [tensors[k] for k in names]
    shapes = [getattr(t, "shape", None) for t in arrays]
    if len(shapes[0]) != 2 or len(shapes[2]) != 2 or len(shapes[1]) != 1 or len(shapes[3]) != 1 \
            or shapes[1][0] != shapes[0][0] or shapes[2][1] != shapes[0][0] or shapes[3][0] != shapes[2][0]:
        raise InputError(f"{path}: mismatched shapes {[tuple(s) for s in shapes]} for (W1, b1, W2, b2); expected "
                         "(n, m), (n,), (k, n), (k,)")
    return arrays, {"format": path.suffix.lower().lstrip("."), "tensors": list(names)}


def read_model(path: str | os.PathLike, keys: Sequence[str] | None = None) -> dict:
    """The four tensors as exact nested lists: {"A": n×m, "b": n, "M": k×n, "c": k}, with "m" and
    "model" (see ``read_arrays``)."""
    (W1, b1, W2, b2), model = read_arrays(path, keys)
    n, m = W1.shape
    k = W2.shape[0]
    A, M = exact(W1), exact(W2)
    return {"A": [A[i * m:(i + 1) * m] for i in range(n)], "b": exact(b1),
            "M": [M[j * n:(j + 1) * n] for j in range(k)], "c": exact(b2), "m": m, "model": model}
