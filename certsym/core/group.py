"""The group H_n ≅ (R_{>0})^n ⋊ S_n of permutations with positive scalings (MATH.md, Part I).

An element h = D P is stored as (perm, scale): (P z)_i = z_{perm[i]} and D = diag(scale). It acts by
h·(M, A, b, c) = (M h^{-1}, hA, hb, c): neuron i of h·θ is neuron perm[i] of θ with its row
multiplied by scale[i] and its output column divided by scale[i]. Because σ(hz) = hσ(z),
ρ(h·θ) = ρ(θ) ("H_n invariance"). Composition, inverse and the action cost O(n) and
O(n(m + k)) field operations.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from certsym.core.network import Network, Neuron
from certsym.errors import InputError
from certsym.numbers import Scalar


@dataclass(frozen=True)
class HElement:
    """h = D P ∈ H_n: ``perm`` a permutation of range(n), ``scale`` positive field elements."""

    perm: tuple[int, ...]
    scale: tuple[Scalar, ...]

    def __post_init__(self) -> None:
        n = len(self.perm)
        if len(self.scale) != n:
            raise InputError(f"H_n element: {n} permutation entries but {len(self.scale)} scalings")
        if sorted(self.perm) != list(range(n)):
            raise InputError("H_n element: the permutation is not a bijection of 0..n-1")
        for d in self.scale:
            if not d > 0:
                raise InputError("H_n element: every scaling must be positive")

    @property
    def n(self) -> int:
        return len(self.perm)

    @classmethod
    def identity(cls, n: int, one: Scalar = 1) -> HElement:
        """The identity of H_n."""
        return cls(tuple(range(n)), (one,) * n)

    @classmethod
    def make(cls, perm: Sequence[int], scale: Sequence[Scalar]) -> HElement:
        """An H_n element from any sequences (validated)."""
        return cls(tuple(perm), tuple(scale))

    def compose(self, other: HElement) -> HElement:
        """self · other (apply ``other`` first): (h1 h2)·θ = h1·(h2·θ)."""
        if self.n != other.n:
            raise InputError("cannot compose elements of different H_n")
        p1, p2 = self.perm, other.perm
        return HElement(
            tuple(p2[p1[i]] for i in range(self.n)),
            tuple(self.scale[i] * other.scale[p1[i]] for i in range(self.n)),
        )

    def __mul__(self, other: HElement) -> HElement:
        return self.compose(other)

    def inverse(self) -> HElement:
        """h^{-1} = P^{-1} D^{-1}: perm⁻¹, and 1/d at the permuted places. O(n)."""
        inv = [0] * self.n
        for i, p in enumerate(self.perm):
            inv[p] = i
        return HElement(tuple(inv), tuple(1 / self.scale[inv[i]] for i in range(self.n)))

    def act(self, theta: Network) -> Network:
        """h·θ = (M h^{-1}, hA, hb, c)."""
        if theta.n != self.n:
            raise InputError(f"H_{self.n} element cannot act on a network of width {theta.n}")
        neurons = []
        for i in range(self.n):
            src = theta.neuron(self.perm[i])
            d = theta.field(self.scale[i])
            neurons.append(Neuron(tuple(d * x for x in src.a), d * src.b, tuple(x / d for x in src.v)))
        return Network.from_neurons(neurons, theta.c, theta.field, theta.m)

    def __call__(self, theta: Network) -> Network:
        return self.act(theta)
