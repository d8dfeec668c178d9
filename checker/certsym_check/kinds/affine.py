"""``affine`` and ``not_affine`` (Proposition 14): the reduction and the pairs leave exactly the stated affine map;
or three exact evaluations at x, y and their midpoint break affinity. Cost: linear in the certificate."""

from __future__ import annotations

from certsym_check.core import (
    EVAL,
    Net,
    Report,
    keys,
    seq,
)
from certsym_check.errors import Reject
from certsym_check.kinds.equivalence import (
    replay_pairs,
    replay_reduction,
    zero_matrix,
)


def check_affine(F, nets: list[Net], proof: object, rep: Report) -> None:
    """Proposition 14: the reduction, pairs accounting for every neuron, and the stated affine map."""
    p = keys(proof, {"steps", "pairs", "linear", "constant", "statement"}, "proof")
    (t,) = nets
    if p["statement"] != "Proposition 14":
        raise Reject("proof must cite 'Proposition 14'")
    replay_reduction(t, p["steps"], rep, "proof.steps")
    lin, const = replay_pairs(F, t, p["pairs"], rep)
    L = [[F.number(x) for x in seq(row, t.m, "proof.linear")] for row in seq(p["linear"], t.k, "proof.linear")]
    same = zero_matrix(L) if lin is None else lin == L
    if not same or [F.number(x) for x in seq(p["constant"], t.k, "proof.constant")] != const:
        raise Reject("the stated affine map is not the sum of the pairs' terms and c")
    rep.checks["Proposition 14: affine map"] += 1


def check_not_affine(F, nets: list[Net], proof: object, rep: Report) -> None:
    """Proposition 14, negative: rational x, y with f(x) + f(y) ≠ 2 f((x + y)/2), recomputed."""
    p = keys(proof, {"x", "y", "values", "statement"}, "proof")
    (t,) = nets
    if p["statement"] != EVAL:
        raise Reject(f"proof must cite {EVAL!r}")
    x, y = ([F.number(s) for s in seq(p[key], t.m, f"proof.{key}")] for key in ("x", "y"))
    if not all(F.is_rational(s) for s in x + y):
        raise Reject("the points must be rational")
    mid = [(s + u) * F.inverse(F.one + F.one) for s, u in zip(x, y, strict=True)]
    values = [t.evaluate(pt) for pt in (x, y, mid)]
    claimed = [[F.number(z) for z in seq(row, t.k, "proof.values")] for row in seq(p["values"], 3, "proof.values")]
    if claimed != values:
        raise Reject("proof.values are not the exact values at x, y and (x + y)/2")
    if all(F.sign(a + b - c - c) == 0 for a, b, c in zip(*values, strict=True)):
        raise Reject("f((x + y)/2) = (f(x) + f(y))/2: no evidence against affinity")
    rep.checks[EVAL] += 3
