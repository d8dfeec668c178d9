"""The layered ReLU network θ = ((W_1, b_1), …, (W_{L+1}, b_{L+1})) over an exact field, of any depth L ≥ 1
(MATH.md, Part III, "Setting"); what ``certsym.minimal`` returns whatever the depth.

h_0 = x, h_ℓ = σ(W_ℓ h_{ℓ−1} + b_ℓ) for ℓ = 1..L, and ρ(θ)(x) = W_{L+1} h_L + b_{L+1}; with ``output_relu`` the
network computes σ(ρ(θ)(x)) instead, a different function that is kept, never dropped. Widths n_0 = m, n_1, …,
n_L, n_{L+1} = k; a hidden layer may have width 0 only if every later one does not need it (an empty layer makes
the rest constant). L = 1 without an output ReLU is Part I's network (M, A, b, c): a view of it (``shallow``, and
``A``, ``b``, ``M``, ``c``, ``n`` read through that view), not another kind of network.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from certsym.core.network import Network
from certsym.errors import InputError
from certsym.numbers import Field, Scalar

Row = tuple[Scalar, ...]


@dataclass(frozen=True)
class Layer:
    """One affine layer z = W h + b: ``W`` has one row per output neuron."""

    W: tuple[Row, ...]
    b: Row

    @property
    def width(self) -> int:
        return len(self.b)


@dataclass(frozen=True)
class LayeredNetwork:
    """θ with L = len(layers) − 1 hidden layers over ``field`` (shapes validated by ``build``)."""

    field: Field
    layers: tuple[Layer, ...]
    m: int
    output_relu: bool = False

    def __repr__(self) -> str:
        relu = ", output_relu=True" if self.output_relu else ""
        return f"LayeredNetwork(widths={'-'.join(map(str, self.widths))}, field={self.field.name}{relu})"

    @property
    def hash(self) -> str:
        """SHA-256 of the parameters as canonical JSON (exact strings, the layers in order, m, the output ReLU):
        equal for equal parameters. On ``certsym.canon``'s output, the layerwise canonical form of the reduced
        parameter, it is an invariant of that parameter's H-orbit (MATH.md Part III), as ``Canonical.hash`` is of
        a one-hidden-layer function. Cost O(weights)."""
        return hashlib.sha256(json.dumps(self.to_json(), separators=(",", ":")).encode()).hexdigest()

    def to_json(self) -> dict:
        """The parameters as JSON: exact strings, the layers in order, m, the output ReLU. Cost O(weights)."""
        s = self.field.to_string
        return {"field": self.field.name, "m": self.m, "output_relu": self.output_relu,
                "layers": [{"W": [[s(x) for x in row] for row in layer.W], "b": [s(x) for x in layer.b]}
                           for layer in self.layers]}

    @classmethod
    def build(cls, layers: Sequence[tuple[Sequence[Sequence[Scalar]], Sequence[Scalar]]], field: Field, m: int,
              output_relu: bool = False) -> LayeredNetwork:
        """Validate that consecutive widths agree and convert every entry into ``field``. Cost O(weights)."""
        if len(layers) < 2:
            raise InputError("a network needs at least one hidden layer and an output layer")
        if m < 1:
            raise InputError("the input dimension m must be at least 1")
        width, out = m, []
        for ell, (W, b) in enumerate(layers, 1):
            if len(W) != len(b):
                raise InputError(f"layer {ell}: W has {len(W)} rows but b has {len(b)} entries")
            for row in W:
                if len(row) != width:
                    raise InputError(f"layer {ell}: a row of W has {len(row)} entries, expected {width} (the width "
                                     "of the layer before)")
            out.append(Layer(tuple(tuple(field(x) for x in row) for row in W), tuple(field(x) for x in b)))
            width = len(b)
        if width < 1:
            raise InputError("the output dimension k must be at least 1")
        return cls(field, tuple(out), m, output_relu)

    @classmethod
    def from_shallow(cls, net: Network, output_relu: bool = False) -> LayeredNetwork:
        """Part I's θ = (M, A, b, c) as the layers (A, b), (M, c)."""
        return cls(net.field, (Layer(net.A, net.b), Layer(net.M, net.c)), net.m, output_relu)

    @property
    def depth(self) -> int:
        """L, the number of hidden layers."""
        return len(self.layers) - 1

    @property
    def k(self) -> int:
        return self.layers[-1].width

    @property
    def widths(self) -> tuple[int, ...]:
        """(n_0 = m, n_1, …, n_L, n_{L+1} = k)."""
        return (self.m, *(layer.width for layer in self.layers))

    @property
    def weights(self) -> int:
        """The number of entries of all W_ℓ and b_ℓ."""
        return sum(layer.width * (len(layer.W[0]) if layer.W else 0) + layer.width for layer in self.layers)

    def is_shallow(self) -> bool:
        """One hidden layer and no output ReLU: Part I applies, completely."""
        return self.depth == 1 and not self.output_relu

    def to_shallow(self) -> Network:
        """The Part I network (M, A, b, c) of a one-hidden-layer θ (``is_shallow``)."""
        if self.depth != 1:
            raise InputError(f"a network with {self.depth} hidden layers is not shallow")
        (A, b), (M, c) = ((layer.W, layer.b) for layer in self.layers)
        return Network.build(M, A, b, c, self.field, self.m)

    @cached_property
    def shallow(self) -> Network:
        """The one-hidden-layer view (M, A, b, c) of Part I, built once. InputError for a deeper θ. Cost
        O(weights) the first time."""
        return self.to_shallow()

    @property
    def A(self) -> tuple[Row, ...]:
        """The hidden layer's weights (one hidden layer: the view's A)."""
        return self.shallow.A

    @property
    def b(self) -> Row:
        return self.shallow.b

    @property
    def M(self) -> tuple[Row, ...]:
        return self.shallow.M

    @property
    def c(self) -> Row:
        return self.shallow.c

    @property
    def n(self) -> int:
        """The hidden width (one hidden layer)."""
        return self.shallow.n

    def evaluate(self, x: Sequence[Scalar]) -> list[Scalar]:
        """ρ(θ)(x) (σ(ρ(θ)(x)) with an output ReLU), exactly. Cost O(weights) field operations."""
        if len(x) != self.m:
            raise InputError(f"the point has {len(x)} coordinates, the network expects m = {self.m}")
        F = self.field
        h = [F(t) for t in x]
        for ell, layer in enumerate(self.layers, 1):
            z = [sum((w * t for w, t in zip(row, h, strict=True) if t != 0), bias)
                 for row, bias in zip(layer.W, layer.b, strict=True)]
            last = ell == len(self.layers)
            h = [t if F.sign(t) > 0 else F.zero for t in z] if not last or self.output_relu else z
        return h

    def __call__(self, x: Sequence[Scalar]) -> list[Scalar]:
        return self.evaluate(x)

    def with_field(self, field: Field) -> LayeredNetwork:
        """The same parameter, read in a larger field."""
        return LayeredNetwork.build([(layer.W, layer.b) for layer in self.layers], field, self.m, self.output_relu)


def float_layers(theta: LayeredNetwork) -> list[tuple[np.ndarray, np.ndarray]]:
    """θ's layers in binary64 (over QQ), for float searches only: every result they propose is checked exactly.
    Cost O(weights)."""
    return [(np.array([[float(x) for x in row] for row in layer.W], dtype=float).reshape(layer.width, -1),
             np.array([float(x) for x in layer.b], dtype=float)) for layer in theta.layers]


def float_forward(layers: list[tuple[np.ndarray, np.ndarray]], X: np.ndarray, output_relu: bool) -> np.ndarray:
    """The network of ``float_layers`` on the rows of X in binary64, σ after every layer but the last (and after it
    with ``output_relu``). Cost O(rows × weights)."""
    H = X
    for ell, (W, b) in enumerate(layers, 1):
        Z = H @ W.T + b if W.size else np.broadcast_to(b, (H.shape[0], b.shape[0])).copy()
        H = np.maximum(Z, 0) if ell < len(layers) or output_relu else Z
    return H
