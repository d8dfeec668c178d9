"""The canonical form of the realized FUNCTION: kink invariants (MATH.md, "Complete classification").

With the hyperplane key (u_H, β_H) of each neuron (``reduction.hyperplane_key``),

    ρ(θ)(x) = Σ_H J_H σ(ℓ_H(x)) + L x + C,   J_H = Σ_{i on H} λ_i v_i,
    L = −Σ_H N_H u_H^T,   C = −Σ_H N_H β_H + Σ_{a_i = 0} v_i σ(b_i) + c,
    N_H = Σ_{i on H, s_i = −1} λ_i v_i.

Theorem: ρ(θ) = ρ(θ') iff both have the same hyperplanes with J_H ≠ 0, the same J_H on each,
the same L and the same C. The invariants are computed in O(n(m + k)) field operations plus a hash;
the stable hash is SHA-256 of a canonical JSON text (sorted hyperplanes), so it compares networks
over the same field (for Q: always).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

from flint import fmpq, fmpq_mat

from certsym.core.deep import LayeredNetwork
from certsym.core.network import Network
from certsym.core.reduction import hyperplane_key
from certsym.numbers import Field, Scalar


@dataclass(frozen=True)
class Canonical:
    """The canonical form of θ, one type at every depth. One hidden layer: the kink invariants of ρ(θ), {key_H: J_H}
    (only J_H ≠ 0), L (k×m) and C (k), equal for two networks iff they compute the same function
    (``of_function``). Deeper: ``layered``, the layerwise canonical form of the reduced parameter (MATH.md Part
    III), an invariant of its H-orbit, not of the function (no kinks, linear part or constant then)."""

    field: Field
    m: int
    k: int
    kinks: dict[tuple, tuple[Scalar, ...]]
    linear: tuple[tuple[Scalar, ...], ...]
    constant: tuple[Scalar, ...]
    layered: LayeredNetwork | None = None

    @property
    def of_function(self) -> bool:
        """Whether ``hash`` is an invariant of the function (one hidden layer) rather than of an H-orbit."""
        return self.layered is None

    def __repr__(self) -> str:
        what = f"kinks={len(self.kinks)}" if self.layered is None else \
            f"widths={'-'.join(map(str, self.layered.widths))}"
        return f"Canonical(m={self.m}, k={self.k}, {what}, field={self.field.name}, hash={self.hash[:16]}…)"

    @classmethod
    def of_layers(cls, layered: LayeredNetwork) -> Canonical:
        """The canonical form of a deep θ: its layerwise canonical form (``certsym.decide.deep``). Cost O(1)."""
        return cls(layered.field, layered.m, layered.k, {}, (), (), layered)

    def to_json(self) -> dict:
        """Canonical JSON: hyperplanes sorted by their string form; numbers as exact strings (deep: the layered
        parameter's JSON, as ``LayeredNetwork.hash`` hashes it)."""
        if self.layered is not None:
            return self.layered.to_json()
        s = self.field.to_string
        kinks = sorted(
            ([s(x) for x in key], [s(x) for x in J]) for key, J in self.kinks.items()
        )
        return {
            "field": self.field.name,
            "m": self.m,
            "k": self.k,
            "kinks": [{"hyperplane": key, "J": J} for key, J in kinks],
            "linear": [[s(x) for x in row] for row in self.linear],
            "constant": [s(x) for x in self.constant],
        }

    @property
    def hash(self) -> str:
        """SHA-256 of the canonical JSON text."""
        if self.layered is not None:
            return self.layered.hash
        text = json.dumps(self.to_json(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()


def canonical_form(theta: Network) -> Canonical:
    """Theorem (complete classification): the kink invariants of ρ(θ). Cost O(n(m + k)) + hash."""
    F = theta.field
    m, k = theta.m, theta.k
    kinks: dict[tuple, list[Scalar]] = {}
    linear = [[F.zero] * m for _ in range(k)]
    constant = list(theta.c)
    flipped: list[tuple[list[Scalar], tuple]] = []  # (λ v, ℓ_H) of the neurons with s < 0
    for nu in theta.neurons():
        hk = hyperplane_key(nu.a, nu.b)
        if hk is None:
            if nu.b > 0:
                constant = [cj + vj * nu.b for cj, vj in zip(constant, nu.v, strict=True)]
            continue
        key, s, lam = hk
        lv = [lam * vj for vj in nu.v]
        J = kinks.setdefault(key, [F.zero] * k)
        for j in range(k):
            J[j] = J[j] + lv[j]
        if s < 0:
            flipped.append((lv, key))
    # σ(−ℓ) = σ(ℓ) − ℓ: each flipped neuron adds −λ v ℓ_H to the affine part, a k × (m + 1) outer product; over Q
    # their sum is one product of matrices in python-flint rather than k·(m + 1) Python operations per neuron.
    if flipped and all(type(x) is fmpq for lv, key in flipped[:1] for x in (*lv, *key)):
        V = fmpq_mat(k, len(flipped), [lv[j] for j in range(k) for lv, _ in flipped])
        H = fmpq_mat(len(flipped), m + 1, [x for _, key in flipped for x in key])
        P = V * H
        linear = [[linear[j][q] - P[j, q] for q in range(m)] for j in range(k)]
        constant = [constant[j] - P[j, m] for j in range(k)]
    else:
        for lv, key in flipped:
            for j in range(k):
                for q in range(m):
                    linear[j][q] = linear[j][q] - lv[j] * key[q]
                constant[j] = constant[j] - lv[j] * key[m]
    nonzero = {key: tuple(J) for key, J in kinks.items() if any(x != 0 for x in J)}
    return Canonical(F, m, k, nonzero, tuple(map(tuple, linear)), tuple(constant))
