"""Replay of ``top1_agreement`` and ``top1_disagreement`` certificates (certificates/FORMAT.md, Top-1 agreement).

Agreement: either an equivalence proof (ρ(θ1) = ρ(θ2), so the sets of largest outputs are equal everywhere), or a
tree of regions covering the box (the walk of ``kinds.relaxation``, over an alignment) whose every leaf names a
class c and has, for both networks and every j ≠ c, a bound below 0 of the margin f_j − f_c, each recomputed from
its multipliers (c is then the unique largest output of both networks on the leaf); or is a shift leaf, with
bounds ≤ 0 of ±(D_t − D_0) for every t ≥ 1 (f1 − f2 is the same for every output there, so both networks have the
same set of largest outputs). Disagreement: the witness lies in the box and,
evaluated exactly, both networks have a unique largest output, the two stated and different. No search.
Cost: as ``kinds.relaxation`` per region and bound; a witness, one exact evaluation of both networks.
Standard library only.
"""

from __future__ import annotations

from certsym_check.budget import charge
from certsym_check.core import Net, Report, index, keys, seq
from certsym_check.errors import Reject
from certsym_check.fields import QQ, rational
from certsym_check.kinds.boxes import MAX_NUMERATOR_BITS, box_text, denominators_bounded, numerators_bounded, parse_box
from certsym_check.kinds.distance import MAX_WEIGHTS, RELAXATION, evaluate, parse_pairs
from certsym_check.kinds.equivalence import check_equivalent
from certsym_check.kinds.relaxation import columns, columns_cost, constants_cost, walk_regions


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
    box = parse_box(p["box"], t1.m)
    return p, box


def _objectives(t1: Net, t2: Net, nets: dict):
    """The bounds of a top-1 tree, [net, c, j, B, multipliers]: the margin f_j − f_c of network ``net`` ("A" is θ1,
    "B" is θ2, its weights divided by the pairing's d as its rows are scaled by d); or ["=", t, s, B, multipliers]:
    s·(D_t − D_0), D = f1 − f2. Cost, charged before each objective is built: the differences of two columns of
    output weights (and their signs) and of the constants at their sizes (``relaxation.columns_cost``; the fixed part
    of each weight is the walk's WEIGHT_OPS)."""
    k = t1.k
    cols = {net: columns(nets[net].v, k, "the objectives' weights") for net in ("A", "B")}
    what = "a top-1 objective"

    def parse(entry: object, where: str) -> tuple:
        net, c, j, value, mult = seq(entry, 5, where)
        if net == "=":
            t, s = index(c, k, where), j
            if t == 0 or type(s) is not int or s not in (1, -1):
                raise Reject(f"{where}: a shift objective is ['=', t, s] with 1 ≤ t < k and s the integer 1 or -1")
            # a difference and its product by the sign per weight, at the sizes of the columns
            charge(2 * (columns_cost(cols["A"][t], cols["A"][0]) + columns_cost(cols["B"][t], cols["B"][0]))
                   + constants_cost([t1.c[t], t2.c[t], t1.c[0], t2.c[0]]), what)
            weights = {("A", i): (v[t] - v[0]) * s for i, v in enumerate(nets["A"].v)}
            weights |= {("B", i): -(v[t] - v[0]) * s for i, v in enumerate(nets["B"].v)}
            return ("=", t, s), weights, (t1.c[t] - t2.c[t] - t1.c[0] + t2.c[0]) * s, value, mult
        if net not in ("A", "B"):
            raise Reject(f"{where}: the objective names network 'A' or 'B', or '='")
        c, j = index(c, k, where), index(j, k, where)
        if c == j:
            raise Reject(f"{where}: a margin of a class over itself")
        const = (t1 if net == "A" else t2).c
        charge(columns_cost(cols[net][j], cols[net][c]) + constants_cost([const[j], const[c]]), what)
        weights = {(net, i): v[j] - v[c] for i, v in enumerate(nets[net].v)}
        return (net, c, j), weights, const[j] - const[c], value, mult

    return parse


def check_top1_agreement(F, nets: list[Net], proof: object, rep: Report) -> None:
    """A ``top1_agreement`` certificate (module docstring)."""
    t1, t2 = nets
    equivalent = isinstance(proof, dict) and "equivalence" in proof
    p, box = _common(F, nets, proof, {"box", "statement"} | ({"equivalence"} if equivalent else {"pairs", "regions"}))
    if equivalent:
        if p["statement"] != "Theorems 3/4":
            raise Reject("an equivalence proof cites 'Theorems 3/4'")
        check_equivalent(F, nets, p["equivalence"], rep)
        rep.facts.append(f"the same largest outputs at every point: rho(theta1) = rho(theta2); box {box_text(box)}")
        return
    if p["statement"] != RELAXATION:
        raise Reject(f"proof must cite {RELAXATION!r}")
    pairs = parse_pairs(p["pairs"], t1, t2)
    numbers = [y for b in box for y in b] + [d for _, _, d in pairs]
    numerators_bounded(numbers, MAX_NUMERATOR_BITS, "the box and the scalings")
    denominators_bounded(nets, numbers)
    k = t1.k

    def leaf(effective: dict, node: dict, where: str) -> int | None:
        # the bounds are Fractions in lowest terms: the sign of the numerator is the sign (a leaf reads 2(k − 1))
        if node.get("shift") is True and "class" not in node:
            for t in range(1, k):
                for s in (1, -1):
                    bound = effective.get(("=", t, s))
                    if bound is None or bound.numerator > 0:
                        raise Reject(f"{where}: a shift leaf without a bound ≤ 0 of {s}·(D_{t} − D_0)")
            return None
        if "class" not in node or "shift" in node:
            raise Reject(f"{where}: a leaf names its class, or is a shift leaf ('shift': true)")
        c = index(node["class"], k, f"{where}.class")
        for net in ("A", "B"):
            for j in range(k):
                if j != c and ((bound := effective.get((net, c, j))) is None or bound.numerator >= 0):
                    raise Reject(f"{where}: no bound below 0 for the margin of class {j} over class {c} in "
                                 f"network {'1' if net == 'A' else '2'}")
        return c

    leaves = walk_regions(t1, t2, box, pairs, p["regions"], _objectives, leaf, {"class", "shift"})
    classes = sorted({c for c in leaves if c is not None})
    shifted = sum(c is None for c in leaves)
    rep.checks["top-1: every leaf's margins (or output shifts) recomputed from their multipliers, the leaves "
               "covering the box"] += 1
    rep.facts.append(f"the same largest outputs at every point of the box {box_text(box)} ({len(leaves)} "
                     f"{'leaf' if len(leaves) == 1 else 'leaves'}: classes {classes}"
                     + (f", {shifted} where f1 − f2 is the same for every output" if shifted else "") + ")")


def check_top1_disagreement(F, nets: list[Net], proof: object, rep: Report) -> None:
    """A ``top1_disagreement`` certificate (module docstring)."""
    t1, t2 = nets
    p, box = _common(F, nets, proof, {"box", "witness", "classes"})
    x = [rational(y) for y in seq(p["witness"], t1.m, "proof.witness")]
    numerators_bounded([y for b in box for y in b] + x, MAX_NUMERATOR_BITS, "the box and the witness")
    denominators_bounded(nets, [y for b in box for y in b] + x)
    a, b = (index(c, t1.k, "proof.classes") for c in seq(p["classes"], 2, "proof.classes"))
    if a == b:
        raise Reject("proof.classes: the two classes must differ")
    if any(not lo <= y <= hi for y, (lo, hi) in zip(x, box, strict=True)):
        raise Reject("the witness lies outside the box")
    for t, c, name in ((t1, a, "1"), (t2, b, "2")):
        out = evaluate(t, x)
        if any(v >= out[c] for i, v in enumerate(out) if i != c):
            raise Reject(f"at the witness, output {c} is not the unique largest of network {name}")
    rep.checks["top-1: both networks evaluated exactly at the witness, in the box"] += 1
    rep.facts.append(f"at the witness the unique largest output is {a} for theta1 and {b} for theta2; box "
                     f"{box_text(box)}")
