"""Sources: what a network given to the Python API means (docs/FORMATS.md for files). A path (parameter JSON or a
model file), four arrays (W1, b1, W2, b2; a bias may be None), a state dict, a ``torch.nn.Module`` of the form
Sequential(Linear, ReLU, Linear), or a ``Model`` already read. Files, state dicts and arrays hold no activation:
they are read as ReLU networks, and the ``Model`` says so. Cost: reading the source.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from certsym.certify.envelope import InputRecord
from certsym.core.deep import LayeredNetwork
from certsym.core.network import Network
from certsym.decide.deep_dyadic import DyadicLayers
from certsym.decide.dyadic import DyadicNetwork
from certsym.errors import InputError
from certsym.io.filebytes import FileBytes
from certsym.io.hub import resolve
from certsym.io.models import (
    Selection,
    chain_choice,
    default_choice,
    exact,
    head_refusal,
    is_model_file,
    parse_keys,
    read_layers,
)
from certsym.io.models import reading as reading_of
from certsym.io.params import file_digest, load_inputs
from certsym.numbers import QQ
from certsym.numbers.floats import refuse_flushed_subnormals


@dataclass
class Model:
    """A network with where it came from: ``record`` (name, SHA-256, the model record of docs/FORMATS.md) and,
    for model files, arrays and torch modules, the four arrays W1, b1, W2, b2 (``arrays``)."""

    name: str
    record: InputRecord
    arrays: list | None = None
    path: str | None = None
    _network: Network | None = field(default=None, repr=False)
    reading: str | None = None  # how the activation was read, when the source does not define it
    layers: list | None = None  # a deep source: the arrays [(W_1, b_1), …] (``arrays`` is None then)
    output_relu: bool = False
    _deep: LayeredNetwork | None = field(default=None, repr=False)
    _dyadic: DyadicNetwork | None | bool = field(default=False, repr=False)  # False: not built yet
    finite: bool = False  # every entry of ``arrays`` verified finite (by a model file's reader)

    @property
    def head(self) -> str | None:
        """The Softmax or LogSoftmax that ends an ONNX graph (the layers are its logits), else None."""
        return (self.record.model or {}).get("head")

    def _values(self) -> None:
        """Refuse to give the network of a Softmax-headed file where the values of its outputs matter."""
        if self.head:
            raise InputError(head_refusal(self.name, self.head))

    def logits_network(self) -> Network:
        """``network``, a Softmax head aside: the logits, which only top-1 questions may read in place of the
        file's outputs (a monotone normalization cannot change the largest output). Cost as ``network``."""
        return self._exact_network()

    def logits_layered(self) -> LayeredNetwork:
        """``layered()``, a Softmax head aside (as ``logits_network``)."""
        return self._exact_layered()

    def __repr__(self) -> str:
        """One line: the name, the format and element type, the widths (never the arrays)."""
        if self.layers is not None:
            widths = [self.layers[0][0].shape[1], *(W.shape[0] for W, _ in self.layers)]
        elif self.arrays is not None:
            widths = [self.arrays[0].shape[1], self.arrays[0].shape[0], self.arrays[2].shape[0]]
        else:
            widths = list(self._exact_layered().widths)
        kind = (self.record.model or {}).get("format") or ("parameters" if self.path else "in memory")
        dtype = f" {self.arrays[0].dtype}" if self.arrays is not None and hasattr(self.arrays[0], "dtype") else \
            f" {self.layers[-1][0].dtype}" if self.layers is not None and getattr(self.layers[-1][0], "dtype", object) \
            is not np.dtype(object) else " exact decimals" if kind == "nnet" else ""
        if (self.record.model or {}).get("normalization"):
            dtype += ", input normalization folded"
        relu = ", output ReLU" if self.output_relu else ""
        return f"Model({self.name!r}, {kind}{dtype}, {'-'.join(map(str, widths))}{relu})"

    def dyadic(self) -> DyadicNetwork | None:
        """The fast path's network of the four arrays (None when an entry is not float16/bfloat16/float32-exact,
        or the source has no arrays), built once. Cost O(n(m + k)) the first time."""
        self._values()
        if self._dyadic is False:
            self._dyadic = DyadicNetwork.from_arrays(*self.arrays, finite=self.finite) \
                if self.arrays is not None else None
        return self._dyadic

    def dyadic_layers(self) -> DyadicLayers | None:
        """The deep fast path's float32 layers (``certsym.decide.deep_dyadic``), or None when an entry is not
        float16/bfloat16/float32-exact or the source holds exact numbers, not float arrays. Cost O(weights)."""
        self._values()
        model = self.record.model or {}
        if model.get("normalization") or model.get("alpha_beta") or model.get("format") == "nnet":
            return None  # folded into exact rationals by the reader
        pairs = self.layers if self.layers is not None else \
            [tuple(self.arrays[:2]), tuple(self.arrays[2:])] if self.arrays is not None and \
            self.arrays[1] is not None and self.arrays[3] is not None else None
        return None if pairs is None else DyadicLayers.from_arrays(pairs, self.output_relu, self.finite)

    @property
    def m(self) -> int:
        """The input dimension."""
        if self.layers is not None:
            return self.layers[0][0].shape[1]
        if self.arrays is not None:
            return self.arrays[0].shape[1]
        return (self._exact_layered() if self.is_deep else self._exact_network()).m

    @property
    def is_deep(self) -> bool:
        """More than one hidden layer, or an output ReLU: decided by ``certsym.decide.deep``."""
        return self.layers is not None or self._deep is not None

    def layered(self) -> LayeredNetwork:
        """θ as a LayeredNetwork, whatever its depth (a shallow one as its two layers)."""
        self._values()
        return self._exact_layered()

    def _exact_layered(self) -> LayeredNetwork:
        if self._deep is None:
            if self.layers is None:
                return LayeredNetwork.from_shallow(self._exact_network())
            rows = []
            for W, b in self.layers:
                (r, c), flat = W.shape, exact(W)
                rows.append(([flat[i * c:(i + 1) * c] for i in range(r)], exact(b)))
            self._deep = LayeredNetwork.build(rows, QQ, self.layers[0][0].shape[1], self.output_relu)
        return self._deep

    @property
    def network(self) -> Network:
        """θ over its exact field (rationals for arrays: every float is the dyadic rational it denotes)."""
        self._values()
        return self._exact_network()

    def _exact_network(self) -> Network:
        if self.is_deep:
            raise InputError(f"{self.name}: a deep network: this decision reads one-hidden-layer networks without an "
                             "output ReLU (certsym.equivalent decides deep ones)")
        if self._network is None:
            W1, b1, W2, b2 = self.arrays
            (n, m), k = W1.shape, W2.shape[0]
            A, M = exact(W1), exact(W2)
            self._network = Network.build([M[j * n:(j + 1) * n] for j in range(k)], [A[i * m:(i + 1) * m]
                                          for i in range(n)], exact(b1), exact(b2), QQ, m)
        return self._network


def _array(x: Any) -> np.ndarray:
    if hasattr(x, "detach"):  # a torch tensor; bfloat16 widens exactly to float32
        x = x.detach().cpu()
        x = x.float() if str(x.dtype) == "torch.bfloat16" else x
        x = x.numpy()
    out = np.asarray(x)
    if (out.dtype.kind, out.dtype.itemsize) not in _ARRAY_TYPES and not (out.dtype.kind == "O" and out.size == 0):
        raise InputError(f"an array of {out.dtype} is not read: certsym reads float16, float32 and float64 (exactly, "
                         "as the dyadic rationals they are) and integers of at most 64 bits (a wider float would be "
                         "rounded; give float64 or exact parameter files)")
    return out


_ARRAY_TYPES = {("f", 2), ("f", 4), ("f", 8), ("i", 1), ("i", 2), ("i", 4), ("i", 8), ("u", 1), ("u", 2), ("u", 4),
                ("u", 8)}  # element types the API reads exactly


READ_AS_RELU = "read as a ReLU network (the arrays hold no activation)"
STATED_RELU = "a ReLU network, as stated with activation='relu' (the arrays hold no activation)"
_SKIPPED = {"Identity": "the identity", "Flatten": "flattens a 1-D input: the identity on it",
            "Dropout": "read as in eval mode: the identity"}


def _from_module(module: Any) -> Model:
    """A torch module read by walking it in forward order: a Sequential (nested ones flattened) of Linear, ReLU,
    Identity, Flatten and Dropout only, which must be Linear → ReLU → Linear once the identities are dropped.
    Anything else is refused, naming the module and its class: an activation other than ReLU, a network ending
    in ReLU (σ(ρ(θ)(x)) is another function), more hidden layers, a module whose forward certsym cannot see.
    Cost: one pass over the modules."""
    import torch.nn as nn  # optional: only a torch module's caller has torch

    layers: list[tuple[str, Any]] = []

    def walk(mod: Any, where: str) -> None:
        if type(mod) is nn.Sequential:
            for name, child in mod.named_children():
                walk(child, f"{where}.{name}" if where else name)
            return
        label = f"module {where or '(the root)'} ({type(mod).__name__})"
        if type(mod) in (nn.Linear, nn.ReLU):
            layers.append((label, mod))
        elif type(mod) in (nn.Identity, nn.Flatten, nn.Dropout):
            if type(mod) is nn.Flatten and (mod.start_dim, mod.end_dim) != (1, -1):
                raise InputError(f"{label}: certsym reads Flatten() over all input dimensions only")
        elif not where and not list(mod.children()):
            raise InputError(f"a {type(mod).__name__}: certsym reads a torch.nn.Sequential of Linear, ReLU, Identity, "
                             "Flatten and Dropout")
        elif not where:
            raise InputError(f"a {type(mod).__name__}: certsym cannot see its forward; it reads a torch.nn.Sequential "
                             "of Linear, ReLU, Identity, Flatten and Dropout (pass module.state_dict() to read its "
                             "tensors as a ReLU network)")
        elif isinstance(mod, nn.modules.batchnorm._BatchNorm):
            raise InputError(f"{label}: certsym reads ReLU networks: a Sequential of Linear, ReLU, Identity, Flatten "
                             f"and Dropout. In eval mode a {type(mod).__name__} is an affine map, but its exact fold "
                             "into the Linear before it has 1/√(var + eps), irrational for most stored values: fold "
                             "it in floats (torch.nn.utils.fusion.fuse_linear_bn_eval) and compare folds with "
                             "certsym distance")
        else:
            raise InputError(f"{label}: certsym reads ReLU networks: a Sequential of Linear, ReLU, Identity, Flatten "
                             f"and Dropout; a {type(mod).__name__} computes a different function")

    walk(module, "")
    kinds = ["Linear" if isinstance(m, nn.Linear) else "ReLU" for _, m in layers]
    output_relu = kinds[-1:] == ["ReLU"]
    body = kinds[:-1] if output_relu else kinds
    if len(body) < 3 or body[::2] != ["Linear"] * ((len(body) + 1) // 2) or body[1::2] != ["ReLU"] * (len(body) // 2):
        raise InputError(f"a {type(module).__name__} with the layers {' → '.join(kinds) or 'none'}: certsym decides "
                         "Linear → ReLU → Linear → … → Linear (one ReLU between consecutive Linear layers, and "
                         "optionally one after the last)")
    linears = [m for _, m in layers if isinstance(m, nn.Linear)]
    name, text = f"<{type(module).__name__}>", "a ReLU network (the module's ReLU)"
    if len(linears) == 2 and not output_relu:
        first, second = linears
        return _from_arrays(name, [first.weight, first.bias, second.weight, second.bias], "out-in", text)
    return _from_layers(name, [(lin.weight, lin.bias) for lin in linears], "out-in", text, output_relu)


def _from_arrays(name: str, arrays: Sequence[Any], layout: str, reading: str) -> Model:
    if len(arrays) != 4 or arrays[0] is None or arrays[2] is None:
        raise InputError("expected four arrays W1, b1, W2, b2 (a bias may be None)")
    W1, b1, W2, b2 = (None if x is None else _array(x) for x in arrays)
    if layout == "in-out":
        W1, W2 = W1.T, W2.T
    b1 = np.zeros(W1.shape[0], W1.dtype) if b1 is None else b1
    b2 = np.zeros(W2.shape[0], W2.dtype) if b2 is None else b2
    digest = hashlib.sha256(b"".join(np.ascontiguousarray(a).tobytes() for a in (W1, b1, W2, b2))).hexdigest()
    return Model(name, InputRecord(name, digest), [W1, b1, W2, b2], reading=reading)


def _from_layers(name: str, pairs: Sequence[tuple[Any, Any]], layout: str, reading: str,
                 output_relu: bool = False) -> Model:
    """A deep Model from (weight, bias or None) arrays, one pair per affine layer."""
    layers = []
    for W, b in pairs:
        W = _array(W)
        W = W.T if layout == "in-out" else W
        b = np.zeros(W.shape[0], W.dtype) if b is None else _array(b)
        layers.append((W, b))
    digest = hashlib.sha256(b"".join(np.ascontiguousarray(a).tobytes() for pair in layers for a in pair)).hexdigest()
    return Model(name, InputRecord(name, digest), None, reading=reading, layers=layers, output_relu=output_relu)


def load(source: Any, keys: str | Sequence[str | None] | None = None, layout: str = "out-in",
         state_key: str | Sequence[str] | None = None, activation: str | None = None) -> Model:
    """The network a source means (docs/FORMATS.md for files): a path, four arrays, a torch module or a Model.
    ``keys`` names the tensors (W1, b1, W2, b2, and W3, b3, … for a deep network), ``layout`` is "out-in"
    (torch) or "in-out" (Flax, Keras),
    ``state_key`` the state dict's place in a torch checkpoint; ``activation`` "relu" states that a source holding
    no activation (a tensor file, arrays, a state dict) is a ReLU network, which its record and reading then say
    instead of "assumed". Refused in a process that flushes subnormal numbers to zero. Cost: reading the source."""
    refuse_flushed_subnormals()
    Selection(activation=activation)  # checks the value
    if isinstance(source, Model):
        return source
    if layout not in ("out-in", "in-out"):
        raise InputError("layout must be 'out-in' or 'in-out'")
    arrays_reading = READ_AS_RELU if activation is None else STATED_RELU
    if hasattr(source, "state_dict") and callable(source.state_dict):  # a torch.nn.Module
        if keys is not None or layout != "out-in":
            raise InputError("a torch module is read by walking its layers; keys= and layout= apply to state dicts "
                             "and files (pass module.state_dict() to choose tensors by name)")
        return _from_module(source)
    if isinstance(source, dict):  # a state dict: tensors by name, no activation
        names = list(parse_keys(keys)) if keys else default_choice(list(source))
        chain = chain_choice(list(source)) if names is None and not keys else None
        if names is not None and len(names) > 4:
            missing = [k for k in names if k and k not in source]
            if missing:
                raise InputError(f"the state dict has no tensor {missing[0]!r}")
            chain = list(zip(names[::2], names[1::2], strict=True))
        if chain is not None:
            return _from_layers("<state dict>", [(source[w], source[b] if b else None) for w, b in chain], layout,
                                arrays_reading)
        if names is None:
            raise InputError(f"a state dict with the tensors {list(source)[:8]}: no default choice of W1, b1, W2, "
                             "b2 (0.weight, 0.bias, 2.weight, 2.bias); name them with keys=")
        missing = [k for k in names if k and k not in source]
        if missing:
            raise InputError(f"the state dict has no tensor {missing[0]!r}")
        return _from_arrays("<state dict>", [source[k] if k else None for k in names], layout, arrays_reading)
    if isinstance(source, list | tuple):
        return _from_arrays("<arrays>", source, layout, arrays_reading)
    if not isinstance(source, str | os.PathLike):
        raise InputError(f"cannot read a network from a {type(source).__name__}")
    path = resolve(str(source))[0]  # a model directory is its weights file (certsym.io.hub)
    selection = Selection(keys=parse_keys(keys) if keys else None, layout=layout,
                          state_key=tuple(state_key.split(".")) if isinstance(state_key, str) else
                          tuple(state_key) if state_key else None, activation=activation)
    if is_model_file(path):
        blob = FileBytes(path) if os.path.isfile(path) else None  # read once: parsed and hashed alike
        layers, record, output_relu = read_layers(path, selection, blob)
        # the hash goes on while the caller decides: the record waits for it only when a certificate needs it
        rec = InputRecord(path, blob.sha256 if blob is not None else file_digest(path), (), record)
        if len(layers) > 2 or output_relu or record.get("normalization") or record.get("alpha_beta") or \
                record.get("format") == "nnet":  # exact rationals, not float arrays: the general path
            return Model(path, rec, None, path, reading=reading_of(record), layers=layers, output_relu=output_relu)
        (W1, b1), (W2, b2) = layers
        return Model(path, rec, [W1, b1, W2, b2], path, reading=reading_of(record), finite=True)
    (item,), _ = load_inputs([path], deep=True)
    rec = InputRecord(item.name, item.sha256, item.atoms, item.model)
    if item.network.is_shallow():
        return Model(path, rec, None, path, item.network.to_shallow())
    return Model(path, rec, None, path, _deep=item.network)


def read_pair(a: Any, b: Any, logits: bool = False) -> tuple[Network, Network, tuple[InputRecord, InputRecord]]:
    """Both networks over one field: parameter files with radicals are read together; with ``logits`` (top-1
    questions only), a Softmax-headed file's logits. Cost: reading both."""
    A, B = load(a), load(b)
    if A.arrays is None and B.arrays is None and A.path and B.path:
        loaded, _ = load_inputs([A.path, B.path])
        recs = tuple(InputRecord(x.name, x.sha256, x.atoms, x.model) for x in loaded)
        return loaded[0].network, loaded[1].network, recs
    t1, t2 = (A.logits_network(), B.logits_network()) if logits else (A.network, B.network)
    if t1.field != t2.field:
        raise InputError("the two networks are over different number fields; give both as parameter files")
    return t1, t2, (A.record, B.record)


