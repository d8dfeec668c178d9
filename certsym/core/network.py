"""Shallow ReLU networks θ = (M, A, b, c) ∈ Ω(m, n, k) over an exact field.

ρ(θ)(x) = M σ(Ax + b) + c with σ(t) = max(t, 0). Neuron i is (a_i, b_i, v_i): a_i row i of A,
b_i entry i of b, v_i column i of M. Subtraction θ ⊖ θ' = ([M | −M'], [A; A'], [b; b'], c − c')
realizes ρ(θ) − ρ(θ') (MATH.md, Part I, "Setting").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from certsym.errors import InputError
from certsym.numbers import QQ, Field, Scalar

Vector = tuple[Scalar, ...]
Matrix = tuple[Vector, ...]


@dataclass(frozen=True)
class Neuron:
    """Neuron i of a network: incoming row a, bias b, outgoing column v."""

    a: Vector
    b: Scalar
    v: Vector


@dataclass(frozen=True)
class Network:
    """θ = (M, A, b, c) ∈ Ω(m, n, k) over ``field``; shapes k×n, n×m, n, k (validated)."""

    field: Field
    M: Matrix
    A: Matrix
    b: Vector
    c: Vector
    m: int
    n: int
    k: int

    def __repr__(self) -> str:
        return f"Network(m={self.m}, n={self.n}, k={self.k}, field={self.field.name})"

    @classmethod
    def build(
        cls,
        M: Sequence[Sequence[Scalar]],
        A: Sequence[Sequence[Scalar]],
        b: Sequence[Scalar],
        c: Sequence[Scalar],
        field: Field = QQ,
        m: int | None = None,
    ) -> Network:
        """Validate shapes and convert every entry into ``field``. Cost O(n(m + k)).

        ``m`` is needed only when n = 0 (then A has no row to tell it).
        """
        n = len(b)
        k = len(c)
        if len(A) != n:
            raise InputError(f"shape mismatch: A has {len(A)} rows but b has {n} entries")
        if n:
            widths = {len(row) for row in A}
            if len(widths) != 1:
                raise InputError(f"shape mismatch: rows of A have different lengths {sorted(widths)}")
            (m_rows,) = widths
            if m is not None and m != m_rows:
                raise InputError(f"shape mismatch: A has {m_rows} columns, shape says m = {m}")
            m = m_rows
        elif m is None:
            raise InputError("a network with no neurons needs its input dimension m")
        if m < 1:
            raise InputError("the input dimension m must be at least 1")
        if k < 1:
            raise InputError("the output dimension k must be at least 1 (c is empty)")
        if len(M) != k:
            raise InputError(f"shape mismatch: M has {len(M)} rows but c has {k} entries")
        for row in M:
            if len(row) != n:
                raise InputError(f"shape mismatch: a row of M has {len(row)} entries, expected n = {n}")
        conv = field
        return cls(
            field=field,
            M=tuple(tuple(conv(x) for x in row) for row in M),
            A=tuple(tuple(conv(x) for x in row) for row in A),
            b=tuple(conv(x) for x in b),
            c=tuple(conv(x) for x in c),
            m=m,
            n=n,
            k=k,
        )

    @classmethod
    def zero(cls, m: int, n: int, k: int, field: Field = QQ) -> Network:
        """The zero parameter of Ω(m, n, k)."""
        z = field.zero
        return cls.build([[z] * n for _ in range(k)], [[z] * m for _ in range(n)], [z] * n,
                         [z] * k, field, m)

    def neuron(self, i: int) -> Neuron:
        """Neuron i: (a_i, b_i, v_i)."""
        return Neuron(self.A[i], self.b[i], tuple(row[i] for row in self.M))

    def neurons(self) -> list[Neuron]:
        return [self.neuron(i) for i in range(self.n)]

    @classmethod
    def from_neurons(cls, neurons: Sequence[Neuron], c: Sequence[Scalar], field: Field,
                     m: int) -> Network:
        """Assemble θ from neurons (a_i, b_i, v_i) and the constant c."""
        k = len(c)
        return cls.build([[nu.v[j] for nu in neurons] for j in range(k)],
                         [nu.a for nu in neurons], [nu.b for nu in neurons], c, field, m)

    def evaluate(self, x: Sequence[Scalar]) -> list[Scalar]:
        """ρ(θ)(x), exactly. Cost O(n(m + k)) field operations and n exact sign tests."""
        if len(x) != self.m:
            raise InputError(f"the point has {len(x)} coordinates, the network expects m = {self.m}")
        x = [self.field(t) for t in x]
        out = list(self.c)
        for i in range(self.n):
            z = self.b[i]
            for aij, xj in zip(self.A[i], x, strict=True):
                z = z + aij * xj
            if z > 0:
                for j in range(self.k):
                    out[j] = out[j] + self.M[j][i] * z
        return out

    def __call__(self, x: Sequence[Scalar]) -> list[Scalar]:
        return self.evaluate(x)

    def minus(self, other: Network) -> Network:
        """θ ⊖ θ' ∈ Ω(m, n + n', k): realizes ρ(θ) − ρ(θ'). Cost O((n + n')(m + k))."""
        if (self.m, self.k) != (other.m, other.k):
            raise InputError(
                f"cannot subtract: shapes (m={self.m}, k={self.k}) and (m={other.m}, k={other.k})"
            )
        if self.field != other.field:
            raise InputError("cannot subtract networks over different fields")
        return Network.build(
            [list(r1) + [-x for x in r2] for r1, r2 in zip(self.M, other.M, strict=True)],
            list(self.A) + list(other.A),
            list(self.b) + list(other.b),
            [x - y for x, y in zip(self.c, other.c, strict=True)],
            self.field,
            self.m,
        )

    def __sub__(self, other: Network) -> Network:
        return self.minus(other)

    def with_field(self, field: Field) -> Network:
        """The same parameter, read in a larger field."""
        return Network.build(self.M, self.A, self.b, self.c, field, self.m)
