"""Replay of ``top1_agreement`` and ``top1_disagreement`` certificates (certificates/FORMAT.md, Top-1 agreement).

Agreement: either an equivalence proof (ρ(θ1) = ρ(θ2), so the sets of largest outputs are equal everywhere), or a
tree of regions covering the box (the walk of ``kinds.relaxation``) whose every leaf names a class c and has, for
both networks and every j ≠ c, a bound below 0 of the margin f_j − f_c, each recomputed from its multipliers:
c is then the unique largest output of both networks on the leaf. Disagreement: the witness lies in the box and,
evaluated exactly, both networks have a unique largest output, the two stated and different. No search.
Cost: as ``kinds.relaxation`` per region and bound; a witness, one exact evaluation of both networks.
Standard library only.
"""

from __future__ import annotations

from fractions import Fraction

from certsym_check.core import Net, Report, index, keys, seq
from certsym_check.errors import Reject
from certsym_check.fields import QQ, rational
from certsym_check.kinds.distance import (
    MAX_NUMERATOR_BITS,
    MAX_WEIGHTS,
    RELAXATION,
    _box_text,
    _denominators_bounded,
    _evaluate,
    _numerators_bounded,
)
from certsym_check.kinds.equivalence import check_equivalent
from certsym_check.kinds.relaxation import walk_regions


def _common(F, nets: list[Net], proof: object, required: set) -> tuple[dict, list]:
    """The checks both kinds share: QQ, equal shapes, the size bound, the proof's fields and its box."""
    if not isinstance(F, QQ):
        raise Reject("top-1 certificates are over QQ")
    t1, t2 = nets
    if (t1.m, t1.k) != (t2.m, t2.k):
        raise Reject("the two networks differ in input or output size")
    if (t1.n + t2.n) * (t1.m + t1.k) > MAX_WEIGHTS:
        raise Reject(f"beyond the checker's bounds ((n1 + n2)(m + k) ≤ {MAX_WEIGHTS})")
    p = keys(proof, required, "proof")
    box = [tuple(rational(y) for y in seq(b, 2, "proof.box[]")) for b in seq(p["box"], t1.m, "proof.box")]
    if any(lo > hi for lo, hi in box):
        raise Reject("proof.box: lo > hi")
    return p, box


def _margins(t1: Net, t2: Net, nets: dict) -> tuple:
    """The objectives (net, c, j) of a top-1 tree: f_j − f_c of network ``net`` ("A" is θ1, "B" is θ2)."""
    k = t1.k

    def parse(head: list, where: str) -> tuple:
        net, c, j = head
        if net not in ("A", "B"):
            raise Reject(f"{where}: the network is 'A' or 'B'")
        c, j = index(c, k, where), index(j, k, where)
        if c == j:
            raise Reject(f"{where}: a margin of a class over itself")
        const = (t1 if net == "A" else t2).c
        weights = {(net, i): v[j] - v[c] for i, v in enumerate(nets[net].v)}
        return (net, c, j), weights, const[j] - const[c]

    return 5, parse


def check_top1_agreement(F, nets: list[Net], proof: object, rep: Report) -> None:
    """A ``top1_agreement`` certificate (module docstring)."""
    t1, t2 = nets
    equivalent = isinstance(proof, dict) and "equivalence" in proof
    p, box = _common(F, nets, proof, {"box", "statement", "equivalence" if equivalent else "regions"})
    if equivalent:
        if p["statement"] != "Theorems 3/4":
            raise Reject("an equivalence proof cites 'Theorems 3/4'")
        check_equivalent(F, nets, p["equivalence"], rep)
        rep.facts.append(f"the same largest outputs at every point: rho(theta1) = rho(theta2); box {_box_text(box)}")
        return
    if p["statement"] != RELAXATION:
        raise Reject(f"proof must cite {RELAXATION!r}")
    _numerators_bounded([y for b in box for y in b], MAX_NUMERATOR_BITS, "the box")
    _denominators_bounded(nets, [y for b in box for y in b])
    k = t1.k

    def leaf(effective: dict, node: dict, where: str) -> int:
        if "class" not in node:
            raise Reject(f"{where}: a leaf names its class")
        c = index(node["class"], k, f"{where}.class")
        for net in ("A", "B"):
            for j in range(k):
                if j != c and not effective.get((net, c, j), Fraction(0)) < 0:
                    raise Reject(f"{where}: no bound below 0 for the margin of class {j} over class {c} in "
                                 f"network {'1' if net == 'A' else '2'}")
        return c

    classes = walk_regions(t1, t2, box, [], p["regions"], _margins, leaf, {"class"})
    rep.checks["top-1: every leaf's margins recomputed from their multipliers and below 0, the leaves covering "
               "the box"] += 1
    rep.facts.append(f"the same unique largest output at every point of the box {_box_text(box)} "
                     f"({len(classes)} {'leaf' if len(classes) == 1 else 'leaves'}; classes {sorted(set(classes))})")


def check_top1_disagreement(F, nets: list[Net], proof: object, rep: Report) -> None:
    """A ``top1_disagreement`` certificate (module docstring)."""
    t1, t2 = nets
    p, box = _common(F, nets, proof, {"box", "witness", "classes"})
    x = [rational(y) for y in seq(p["witness"], t1.m, "proof.witness")]
    _numerators_bounded([y for b in box for y in b] + x, MAX_NUMERATOR_BITS, "the box and the witness")
    _denominators_bounded(nets, [y for b in box for y in b] + x)
    a, b = (index(c, t1.k, "proof.classes") for c in seq(p["classes"], 2, "proof.classes"))
    if a == b:
        raise Reject("proof.classes: the two classes must differ")
    if any(not lo <= y <= hi for y, (lo, hi) in zip(x, box, strict=True)):
        raise Reject("the witness lies outside the box")
    for t, c, name in ((t1, a, "1"), (t2, b, "2")):
        out = _evaluate(t, x)
        if any(v >= out[c] for i, v in enumerate(out) if i != c):
            raise Reject(f"at the witness, output {c} is not the unique largest of network {name}")
    rep.checks["top-1: both networks evaluated exactly at the witness, in the box"] += 1
    rep.facts.append(f"at the witness the unique largest output is {a} for theta1 and {b} for theta2; box "
                     f"{_box_text(box)}")
