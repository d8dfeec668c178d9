"""Replay of ``deep_top1_agreement`` and ``deep_top1_disagreement`` for two deep ReLU networks over QQ (neither
ending in a ReLU), by the rule of certificates/FORMAT.md:

- agreement: the tree, in preorder, cuts the box: ["split", q] halves the current region at the midpoint of
  coordinate q (left half first), ["leaf", c] claims class c on it. On a leaf, each network's last hidden layer
  is bounded by plain intervals (``deep_distance.plain_intervals``: a row's extremes over a box of inputs are exact) and
  every margin f_c − f_j = (W_c − W_j)·h + (b_c − b_j), j ≠ c, must have an exact lower bound > 0 over that box
  of h: then c is the unique largest output of both networks at every point of the leaf (with the statement
  "halvings of the box and symbolic margins", the margins' lower forms from ``kinds.symbolic.leads`` instead,
  leaves × ``symbolic.margin_products`` ≤ MAX_SYMBOLIC_WORK). The tree must end with
  every region a leaf (so the leaves cover the box). Or, for an equivalent pair, a ``deep_equivalent`` proof
  (one function: the same set of largest outputs, ties included).
- disagreement: the witness lies in the box, both networks are evaluated there exactly, each has a unique
  largest output, they are the stated classes and they differ.
No search. Bounds, before the work: those of ``deep_distance_bound`` (weights, denominators) and of its tree
(``deep_distance.halvings``: MAX_NODES nodes, MAX_DEPTH nested halvings, leaves × (weights + 2k² × the last hidden
width) ≤ MAX_WORK and nodes × (m + 1) ≤ MAX_WORK, each split copying its region), box and witness numbers of at
most MAX_BOX_BITS bits (so a midpoint costs O(m + bits)). Cost: that many integer operations. Standard library only.
"""

from __future__ import annotations

from fractions import Fraction

from certsym_check.core import Report, index, keys, seq
from certsym_check.errors import Reject
from certsym_check.fields import QQ, rational
from certsym_check.kinds import symbolic
from certsym_check.kinds.boxes import box_text, parse_box
from certsym_check.kinds.deep import LEMMA, PHASES, DeepNet, check_deep_equivalent
from certsym_check.kinds.deep_distance import (
    MAX_SYMBOLIC_WORK,
    MAX_WORK,
    affine_extremes,
    box_numbers_short,
    halvings,
    plain_intervals,
    relu_interval,
    sizes_bounded,
)

STATEMENT = "halvings of the box and interval margins"
SYMBOLIC_STATEMENT = "halvings of the box and symbolic margins"


def _nets(F, nets: list[DeepNet]) -> tuple[DeepNet, DeepNet]:
    if not isinstance(F, QQ):
        raise Reject("deep top-1 certificates are over QQ")
    t1, t2 = nets
    if (t1.m, t1.k) != (t2.m, t2.k):
        raise Reject("the two networks differ in input or output size")
    if t1.output_relu or t2.output_relu:
        raise Reject("top-1 certificates are for networks without an output ReLU (σ(f) ties at 0)")
    return t1, t2


def _box(value: object, m: int) -> list[tuple[Fraction, Fraction]]:
    box = parse_box(value, m)
    box_numbers_short([y for b in box for y in b], "the box")
    return box


def _unique_top(values: list[Fraction]) -> int | None:
    best = max(values)
    tops = [j for j, v in enumerate(values) if v == best]
    return tops[0] if len(tops) == 1 else None


def leads(t: DeepNet, region: list, c: int) -> bool:
    """Every margin f_c − f_j (j ≠ c) of t has an exact interval lower bound > 0 on the region."""
    layers, _ = plain_intervals(t, region)
    h = relu_interval(layers[-2])
    W, b = t.W[-1], t.b[-1]
    rows = [[x - y for x, y in zip(W[c], W[j], strict=True)] for j in range(t.k) if j != c]
    low, _ = affine_extremes(rows, [b[c] - b[j] for j in range(t.k) if j != c], *h)
    return all(x > 0 for x in low)


def check_deep_top1_agreement(F, nets: list[DeepNet], proof: object, rep: Report) -> None:
    """A ``deep_top1_agreement`` certificate (module docstring)."""
    t1, t2 = _nets(F, nets)
    equivalent = isinstance(proof, dict) and "equivalence" in proof
    p = keys(proof, {"box", "equivalence", "statement"} if equivalent else {"box", "tree", "statement"}, "proof")
    if p["statement"] not in ((LEMMA, PHASES) if equivalent else (STATEMENT, SYMBOLIC_STATEMENT)):
        raise Reject(f"proof must cite {LEMMA!r}" if equivalent else
                     f"proof must cite {STATEMENT!r} or {SYMBOLIC_STATEMENT!r}")
    box = _box(p["box"], t1.m)
    if equivalent:
        check_deep_equivalent(F, nets, p["equivalence"], rep)
        rep.facts.append(f"the same largest outputs at every point: f1 = f2 ({p['statement']}); box "
                         f"{box_text(box)}")
        return
    sizes_bounded(t1, t2, {"proof.box": [y for b in box for y in b]})
    if p["statement"] == SYMBOLIC_STATEMENT:
        free = sum(1 for a, c in box if a < c)
        work = sum(symbolic.margin_products([t.m, *(len(x) for x in t.b)], free) for t in (t1, t2))
        max_work, how = MAX_SYMBOLIC_WORK, "symbolic"

        def lead(t: DeepNet, region: list, c: int) -> bool:
            return symbolic.leads(t.W, t.b, region, c)
    else:
        work = sum(len(row) + 1 for t in (t1, t2) for W in t.W for row in W) + 2 * t1.k ** 2 * max(
            len(t1.W[-1][0]), len(t2.W[-1][0]))
        max_work, how, lead = MAX_WORK, "interval", leads
    classes, leaves = set(), 0
    for where, kind, c, region, *_ in halvings(p["tree"], box, lambda v, at: index(v, t1.k, at), work, max_work):
        if kind != "leaf":
            continue
        if not (lead(t1, region, c) and lead(t2, region, c)):
            raise Reject(f"{where}: class {c} does not lead every other output of both networks by {how} margins "
                         "on its region")
        classes.add(c)
        leaves += 1
    rep.checks[f"deep top-1: {how} margins > 0 on every leaf, for both networks"] += leaves
    rep.checks["deep top-1: the halvings cover the box"] += 1
    rep.facts.append(f"the same unique largest output at every point of the box {box_text(box)}: {leaves} leaves, "
                     f"classes {sorted(classes)}")  # (a unique one on every leaf: the claim's set of largest outputs)


def check_deep_top1_disagreement(F, nets: list[DeepNet], proof: object, rep: Report) -> None:
    """A ``deep_top1_disagreement`` certificate (module docstring)."""
    t1, t2 = _nets(F, nets)
    p = keys(proof, {"box", "witness", "classes", "statement"}, "proof")
    if p["statement"] != "exact evaluation":
        raise Reject("proof must cite 'exact evaluation'")
    box = _box(p["box"], t1.m)
    x = [rational(y) for y in seq(p["witness"], t1.m, "proof.witness")]
    box_numbers_short(x, "the witness")
    a, b = (index(c, t1.k, "proof.classes") for c in seq(p["classes"], 2, "proof.classes"))
    sizes_bounded(t1, t2, {"proof.box": [y for bb in box for y in bb], "proof.witness": x})
    if any(not lo <= y <= hi for y, (lo, hi) in zip(x, box, strict=True)):
        raise Reject("the witness lies outside the box")
    tops = (_unique_top(t1.evaluate(x)), _unique_top(t2.evaluate(x)))
    if tops != (a, b) or a == b:
        raise Reject(f"at the witness the unique largest outputs are {tops}, not the stated different {[a, b]}")
    rep.checks["deep top-1: both networks evaluated exactly at the witness"] += 1
    rep.facts.append(f"at the witness (in the box {box_text(box)}) f1's unique largest output is {a} and f2's is {b}")
