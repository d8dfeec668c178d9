"""The certificate envelope (certificates/FORMAT.md): the JSON document that ``certsym_check`` replays.

    {"format": "certsym-certificate", "version": 1, "kind": ..., "claim": ..., "field": ...,
     "inputs": [{"name", "sha256", "parameters"}], "proof": {...}}

Numbers are strings: over Q "p/q"; over Q(α) a list of coefficient strings (lowest degree first)
of a polynomial in α. The field is {"type": "QQ"} or {"type": "number_field", "minpoly": [...],
"interval": [lo, hi], "generator": "..."} (α the unique root of minpoly in [lo, hi]).
Building a certificate costs time linear in its size.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from certsym.core.network import Network
from certsym.core.reduction import Step
from certsym.errors import InputError
from certsym.numbers import Field, NumberField, Scalar

FORMAT = "certsym-certificate"


VERSION = 1


CLAIMS = {
    "equivalent": "rho(theta1) = rho(theta2)",
    "not_equivalent": "rho(theta1) != rho(theta2)",
    "minimal_form": "theta_min is a minimal form of theta1 and rho(theta_min) = rho(theta1)",
    "affine": "rho(theta1) is the affine map x -> L x + C given",
    "not_affine": "rho(theta1) is not affine",
    "identifiable": "the fibre of theta1 in Omega(m,n,k) is exactly its H_n-orbit",
    "not_identifiable": "theta' realizes rho(theta1) and lies outside the H_n-orbit of theta1",
    "stabilizer": "Stab_H_n(theta) and Stab_H_n(A,b) are the products of symmetric groups and H_n' stated",
    "critical_point": "the restricted loss has exactly one critical point in the box, a critical point of F on M(k,k), "
                      "with F in the interval given",
    "distance_bound": "sup over the box of ||rho(theta1)(x) - rho(theta2)(x)||_inf lies in [lower, upper]",
    "hessian_inertia": "the Hessian of F at the certified critical point has no zero eigenvalue and the number of "
                       "negative eigenvalues given",
    "landscape_threshold": "the family's critical points of the restricted loss form one continuous branch for k in "
                           "the bracket; at its left end some compressed Hessian has a negative eigenvalue, at its "
                           "right end every one is positive definite",
    "wide_critical_point": "F on M(n,k) has exactly one critical point in the box of the fixed-point space of the "
                           "group generated, with F in the interval given (and, if stated, positive definite Hessian)",
    "added_neuron": "the certified critical point with one neuron added (a split row or a zero row) is not a local "
                    "minimum of F on M(k+1,k)",
    "deep_equivalent": "rho(theta1) = rho(theta2) for the deep networks given (and sigma of both when both end in a "
                       "ReLU)",
    "deep_not_equivalent": "rho(theta1) != rho(theta2) for the deep networks given (sigma of each that ends in a "
                           "ReLU)",
    "top1_agreement": "at every point of the box, rho(theta1) and rho(theta2) have the same set of largest outputs",
    "top1_disagreement": "at the witness in the box, rho(theta1) and rho(theta2) have unique largest outputs, and "
                         "they differ",
    "deep_top1_agreement": "at every point of the box, the deep networks f1 and f2 have the same set of largest "
                           "outputs",
    "deep_top1_disagreement": "at the witness in the box, the deep networks f1 and f2 have unique largest outputs, "
                              "and they differ",
    "deep_distance_bound": "sup over the box of ||f1(x) - f2(x)||_inf lies in [lower, upper] for the deep networks "
                           "given (f = rho(theta), or sigma(rho(theta)) for a network that ends in a ReLU)",
    "vnnlib_unsat": "no input in the property's input region makes its output part true for the networks given: "
                    "the property holds (unsat)",
    "vnnlib_sat": "the witness lies in the property's input region and makes its output part true for the networks "
                  "given (sat)",
}


@dataclass(frozen=True)
class InputRecord:
    """Where a parameter came from: a display name, the SHA-256 of the file's bytes, and the
    radicals and roots written in the file with their values (so the checker can re-read it)."""

    name: str
    digest: str | Callable[[], str]  # the SHA-256 in hex, or a function that waits for it (a file still hashing)
    atoms: tuple[tuple[str, Scalar], ...] = ()
    model: dict | None = None  # model files: the format and the tensor names read

    @property
    def sha256(self) -> str:
        """The SHA-256 of the file's bytes, in hex (waiting for a hash still being computed)."""
        return self.digest if isinstance(self.digest, str) else self.digest()


def field_json(F: Field) -> dict[str, Any]:
    """The "field" entry: {"type": "QQ"} or the number field's minimal polynomial and isolating interval."""
    if isinstance(F, NumberField):
        coeffs = [str(c) for c in F.minpoly.coeffs()]
        bits = sum(abs(int(c.split("/")[0])).bit_length() + (int(c.split("/")[1]).bit_length() if "/" in c else 1)
                   for c in coeffs)
        if len(coeffs) - 1 > 64 or bits > 1 << 14:  # the checker's bounds (certificates/FORMAT.md, "Bounds")
            raise InputError(f"the number field Q({F.expr}) has degree {len(coeffs) - 1} and {bits} coefficient bits: "
                             "beyond what the checker replays (degree 64, 16384 bits); no certificate written")
        return {
            "type": "number_field",
            "minpoly": coeffs,
            "interval": [str(F.lo), str(F.hi)],
            "generator": F.expr,
        }
    return {"type": "QQ"}


def number_json(F: Field, x: Scalar) -> str | list[str]:
    """An exact number: "p/q" over Q, or coefficient strings (lowest degree first) over Q(α)."""
    if isinstance(F, NumberField):
        coeffs = F(x).poly.coeffs()
        return [str(c) for c in coeffs] if coeffs else ["0"]
    return str(x)


def network_to_json(net: Network, encode=None) -> dict[str, Any]:
    """The parameter-file JSON of ``net``: entries as exact strings (or ``encode(x)``); shape included."""
    s = encode or net.field.to_string
    return {
        "M": [[s(x) for x in row] for row in net.M],
        "A": [[s(x) for x in row] for row in net.A],
        "b": [s(x) for x in net.b],
        "c": [s(x) for x in net.c],
        "shape": {"m": net.m, "n": net.n, "k": net.k},
    }


def parameters_json(net: Network) -> dict[str, Any]:
    """θ with every entry encoded exactly (number_json); shape always included."""
    return network_to_json(net, lambda x: number_json(net.field, x))


def input_json(F: Field, rec: InputRecord, net: Network | None, shape: tuple[int, int, int] | None) -> dict:
    """One "inputs" entry: the parameters embedded, or (``net`` None) the model file referenced by its
    SHA-256 and shape only; the checker then reads the file itself."""
    entry = {"name": rec.name, "sha256": rec.sha256,
             "atoms": [{"expr": text, "value": number_json(F, value)} for text, value in rec.atoms],
             **({"model": rec.model} if rec.model else {})}
    if net is None:
        m, n, k = shape
        return {**entry, "shape": {"m": m, "n": n, "k": k}}
    return {**entry, "parameters": parameters_json(net)}


def envelope(kind: str, F: Field, inputs: list[tuple[InputRecord, Network]], proof: dict, embed: bool = True) -> dict:
    """A certificate about ``inputs``: their parameters embedded, or (``embed`` False) the model files referenced
    by SHA-256 and shape (the checker then reads the files itself)."""
    return document(kind, F, [input_json(F, rec, net if embed else None, (net.m, net.n, net.k))
                              for rec, net in inputs], proof)


def document(kind: str, F: Field, inputs: list[dict], proof: dict) -> dict:
    return {"format": FORMAT, "version": VERSION, "kind": kind, "claim": CLAIMS[kind], "field": field_json(F),
            "inputs": inputs, "proof": proof}


def steps_json(F: Field, steps: list[Step]) -> list[dict[str, Any]]:
    """Reduction steps (moves 1–3) as certificate steps, each citing its lemma."""
    out = []
    for s in steps:
        if s.kind == "merge":
            out.append({"step": "merge", "into": s.neuron, "from": s.source,
                        "lambda": number_json(F, s.lam), "statement": s.statement})
        else:
            out.append({"step": s.kind, "neuron": s.neuron, "statement": s.statement})
    return out


def pairs_json(F: Field, pairs) -> list[dict]:
    return [
        {
            "i": p.i,
            "j": p.j,
            "lambda": number_json(F, p.lam),
            "linear": [[number_json(F, x) for x in row] for row in p.linear],
            "constant": [number_json(F, x) for x in p.constant],
            "statement": "sigma(z) - sigma(-z) = z",
        }
        for p in pairs
    ]
