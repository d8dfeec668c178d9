"""The elementary function-preserving moves and the minimal form θ_min (MATH.md, Part I).

Moves, each recorded as an explicit step so that the independent checker can replay it:

1. Zeroing: v_i = 0, or a_i = 0 and b_i ≤ 0: the neuron contributes nothing; set it to 0.
2. Bias shifting: a_i = 0 and b_i > 0: the neuron is the constant v_i b_i; add it to c, zero it.
3. Merging: r_j = λ r_i with λ > 0 (r = (a, b)): v_i σ(z) + v_j σ(λz) = (v_i + λ v_j) σ(z).
4. Antisymmetric cancellation, σ(z) − σ(−z) = z, is NOT a reduction move; it appears in the
   equivalence certificates (``certsym.decide.equivalence``).

θ_min is what moves 1–3 leave: every nonzero neuron has v_i ≠ 0, a_i ≠ 0, and no two rows are
positively proportional; removed neurons stay as zero neurons, so θ_min ∈ Ω(m, n, k).
Cost: O(n(m + k)) field operations plus one hash of the normalized rows.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from flint import fmpq

from certsym.core.network import Network, Neuron, Vector
from certsym.numbers import Scalar

ZEROING = "zeroing lemma"
BIAS_SHIFT = "bias shifting"
MERGE = "merge lemma"


@dataclass(frozen=True)
class Step:
    """One move. ``kind`` is "zero", "bias_shift" or "merge"; ``lam`` only for merges."""

    kind: str
    neuron: int
    source: int | None = None
    lam: Scalar | None = None
    statement: str = ""


@dataclass
class Reduction:
    """θ → θ_min with its trace."""

    original: Network
    minimal: Network
    steps: list[Step] = field(default_factory=list)


class Key(tuple):
    """A normalized hyperplane (u_H, β_H): a tuple of field elements whose hash is computed once.

    Keys are hashed several times (minimal form, kink invariants, pairing), and hashing an
    ``fmpq`` is slow, so the hash is cached and computed from numerators and denominators, of at most
    HASHED entries spread evenly over the key (equality still compares every entry: a hash only has to agree
    on equal keys, and keys of one length that agree on the sampled entries are rare).
    """

    HASHED = 32

    def __new__(cls, entries):
        self = super().__new__(cls, entries)
        step = max(1, len(self) // Key.HASHED)
        self._hash = hash((len(self), *((x.p, x.q) if type(x) is fmpq else x for x in self[::step])))
        return self

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other) -> bool:
        return tuple.__eq__(self, other)

    def __ne__(self, other) -> bool:
        return tuple.__ne__(self, other)


def hyperplane_key(a: Vector, b: Scalar) -> tuple[Key, int, Scalar] | None:
    """The unoriented hyperplane of r = (a, b) with a ≠ 0, by rational operations only.

    Returns (key, s, λ) where p is the first index with a_p ≠ 0, λ = |a_p|, s = sign(a_p) and
    key = s·r/λ (its first nonzero entry is +1). None when a = 0.
    """
    lead = next((x for x in a if x != 0), None)
    if lead is None:
        return None
    s = 1 if lead > 0 else -1
    lam = lead if s > 0 else -lead
    inv = s / lam
    return Key(x * inv for x in (*a, b)), s, lam


def _is_zero(vec: Vector) -> bool:
    return all(x == 0 for x in vec)


def reduce(theta: Network) -> Reduction:
    """Moves 1–3 until none applies: θ_min with the trace of steps (MATH.md "minimal form")."""
    F = theta.field
    zero_a = (F.zero,) * theta.m
    zero_v = (F.zero,) * theta.k
    dead = Neuron(zero_a, F.zero, zero_v)
    neurons = theta.neurons()
    c = list(theta.c)
    steps: list[Step] = []

    def kill(i: int) -> None:
        neurons[i] = dead

    for i, nu in enumerate(neurons):
        if nu == dead:
            continue
        if _is_zero(nu.v):
            steps.append(Step("zero", i, statement=ZEROING))
            kill(i)
        elif _is_zero(nu.a):
            if nu.b > 0:
                c = [cj + vj * nu.b for cj, vj in zip(c, nu.v, strict=True)]
                steps.append(Step("bias_shift", i, statement=BIAS_SHIFT))
            else:
                steps.append(Step("zero", i, statement=ZEROING))
            kill(i)

    first: dict[tuple, tuple[int, Scalar]] = {}
    for j, nu in enumerate(neurons):
        if nu == dead:
            continue
        key, s, lam = hyperplane_key(nu.a, nu.b)
        oriented = (key, s)
        if oriented not in first:
            first[oriented] = (j, lam)
            continue
        i, lam_i = first[oriented]
        mu = lam / lam_i  # r_j = μ r_i with μ > 0
        target = neurons[i]
        neurons[i] = Neuron(target.a, target.b,
                            tuple(vi + mu * vj for vi, vj in zip(target.v, nu.v, strict=True)))
        steps.append(Step("merge", i, source=j, lam=mu, statement=MERGE))
        kill(j)

    for i, _ in first.values():
        if neurons[i] != dead and _is_zero(neurons[i].v):
            steps.append(Step("zero", i, statement=ZEROING))
            kill(i)

    minimal = Network.from_neurons(neurons, c, F, theta.m)
    return Reduction(theta, minimal, steps)


def minimal_form(theta: Network) -> Network:
    """θ_min (see ``reduce``)."""
    return reduce(theta).minimal


def is_minimal(theta: Network) -> bool:
    """True when no move 1–3 applies to θ (every nonzero neuron is live and rows are not
    positively proportional). Cost O(n(m + k)) plus a hash."""
    return not reduce(theta).steps
