"""Replay of ``vnnlib_sat`` and ``vnnlib_unsat`` (certificates/FORMAT.md): a VNN-LIB property, read by the checker
itself from the text the certificate holds (``certsym_check.vnnlib``; the envelope compares that text and its
SHA-256 with the property's file when it is given), about the networks the certificate embeds, in the property's
order.

- ``vnnlib_sat``: the witness x lies in one of the property's boxes and, at the networks' exact outputs, every atom
  of one disjunct of the output part holds (strict atoms strictly).
- ``vnnlib_unsat``: two networks f, g; for each box of the property, in order, a ``deep_distance_bound`` proof on
  exactly that box (``kinds.deep_distance``), whose verified U refutes one atom of every disjunct: an atom
  Σ_j s_j (Y_g[j] − Y_f[j]) + c ≥ 0 is false wherever ‖f − g‖∞ ≤ U when Σ_j |s_j| U + c < 0 (≤ 0 for > 0), since
  each |Y_g[j] − Y_f[j]| ≤ U there. Atoms of any other form refute nothing.

No search. Cost: reading the property (linear in its text, its normal forms at most MAX_DISJUNCTS disjuncts), one
exact evaluation per network (sat), or each box's distance replay, all boxes' symbolic trees on one meter of
SYMBOLIC_BUDGET units, and O(atoms) comparisons (unsat).
"""

from __future__ import annotations

import copy
from fractions import Fraction

from certsym_check.budget import charge, metered
from certsym_check.core import Report, keys, seq
from certsym_check.errors import Reject
from certsym_check.fields import QQ, rational, show
from certsym_check.kinds.boxes import box_text, parse_box
from certsym_check.kinds.deep import DeepNet
from certsym_check.kinds.deep_distance import SYMBOLIC_BUDGET, box_numbers_short, check_deep_distance
from certsym_check.vnnlib import Atom, Property, read_property


def spec_record(proof: object) -> dict:
    """``proof.spec``: the property's file name, its SHA-256 and its text."""
    p = keys(proof, {"name", "sha256", "text"}, "proof.spec")
    if not all(isinstance(p[k], str) for k in p):
        raise Reject("proof.spec: name, sha256 and text are strings")
    return p


def _property(proof: dict, nets: list[DeepNet]) -> Property:
    prop = read_property(spec_record(proof["spec"])["text"])
    if len(prop.networks) != len(nets):
        raise Reject(f"the property declares {len(prop.networks)} networks; the certificate has {len(nets)}")
    for i, ((name, m, k), t) in enumerate(zip(prop.networks, nets, strict=True)):
        if (t.m, t.k) != (m, k):
            raise Reject(f"inputs[{i}]: {t.m} inputs and {t.k} outputs; the property declares {m} and {k} for "
                         f"network {name or '(unnamed)'}")
    return prop


def check_vnnlib_sat(F, nets: list[DeepNet], proof: object, rep: Report) -> None:
    """A ``vnnlib_sat`` certificate (module docstring)."""
    if not isinstance(F, QQ):
        raise Reject("vnnlib certificates are over QQ")
    p = keys(proof, {"spec", "witness", "statement"}, "proof")
    if p["statement"] != "exact evaluation":
        raise Reject("proof must cite 'exact evaluation'")
    prop = _property(p, nets)
    x = [rational(y) for y in seq(p["witness"], nets[0].m, "proof.witness")]
    box_numbers_short(x, "the witness")
    inside = next((i for i, box in enumerate(prop.boxes) if all(lo <= y <= hi for y, (lo, hi) in
                                                                   zip(x, box, strict=True))), None)
    if inside is None:
        raise Reject("the witness lies in no box of the property's input part")
    outputs = [t.evaluate(x) for t in nets]
    charge(_terms(prop), "the property's atoms")
    holds = next((i for i, conj in enumerate(prop.disjuncts) if all(a.holds(outputs) for a in conj)), None)
    if holds is None:
        raise Reject("at the witness no disjunct of the property's output part holds (evaluated exactly)")
    rep.checks["vnnlib: the witness in a box of the property, evaluated exactly"] += 1
    rep.checks["vnnlib: every atom of one disjunct of the output part holds at the exact outputs"] += 1
    rep.facts.append(f"a counterexample in box {inside} of the property ({box_text(prop.boxes[inside])}): disjunct "
                     f"{holds} of {len(prop.disjuncts)} holds (VNN-LIB {prop.version}, "
                     f"{len(nets)} network{'s' if len(nets) > 1 else ''})")


def _terms(prop: Property) -> int:
    """The units a pass over the output part's atoms is charged before it is made: four a term (a rational product
    and sum, or a comparison) and one an atom, in the normal form (an atom shared by disjuncts counts in each)."""
    return 1 + sum(1 + 4 * len(a.terms) for conj in prop.disjuncts for a in conj)


def refutes(atom: Atom, upper: Fraction) -> bool:
    """Whether ‖f − g‖∞ ≤ U makes the atom false everywhere (module docstring)."""
    per: dict[int, dict[int, Fraction]] = {}
    for (n, j), c in atom.terms.items():
        if n not in (0, 1):
            return False
        per.setdefault(j, {})[n] = c
    if not per or any(set(v) != {0, 1} or v[0] != -v[1] for v in per.values()):
        return False
    most = sum(abs(v[1]) for v in per.values()) * upper + atom.constant
    return most <= 0 if atom.strict else most < 0


def check_vnnlib_unsat(F, nets: list[DeepNet], proof: object, rep: Report) -> None:
    """A ``vnnlib_unsat`` certificate (module docstring)."""
    if not isinstance(F, QQ):
        raise Reject("vnnlib certificates are over QQ")
    p = keys(proof, {"spec", "boxes", "statement"}, "proof")
    if p["statement"] != "distance bounds refute every disjunct":
        raise Reject("proof must cite 'distance bounds refute every disjunct'")
    if len(nets) != 2:
        raise Reject("vnnlib_unsat refutes through the distance of two networks")
    prop = _property(p, nets)
    proofs = seq(p["boxes"], len(prop.boxes), "proof.boxes")
    uppers = []
    weights = sum(len(row) + 1 for t in nets for W in t.W for row in W)
    charge(_terms(prop) * max(1, len(prop.boxes)), "the property's atoms, on every box")  # on the certificate's meter
    with metered(SYMBOLIC_BUDGET):  # every box's symbolic tree on one meter
        for q, (box, bp) in enumerate(zip(prop.boxes, proofs, strict=True)):
            if not isinstance(bp, dict) or parse_box(bp.get("box"), len(box)) != box:
                raise Reject(f"proof.boxes[{q}]: the box differs from the property's box {q}")
            boxed = nets
            if "equivalence" in bp:  # the block lemma's moves change the networks they replay on: fresh copies
                charge(weights, "copies of the networks")
                boxed = copy.deepcopy(nets)
            check_deep_distance(F, boxed, bp, rep, own_meter=False)
            upper = rational(bp["upper"])
            for i, conj in enumerate(prop.disjuncts):
                if not any(refutes(a, upper) for a in conj):
                    raise Reject(f"proof.boxes[{q}]: U = {show(upper)} refutes no atom of disjunct {i} of the "
                                 "property's output part")
            uppers.append(upper)
    rep.checks["vnnlib: the property's boxes, each with a verified distance bound"] += len(uppers)
    rep.checks["vnnlib: every disjunct of the output part refuted on every box"] += len(prop.disjuncts)
    rep.facts.append(f"the property holds (unsat): VNN-LIB {prop.version}, {len(prop.boxes)} box(es), "
                     f"{len(prop.disjuncts)} disjunct(s), U ≤ {', '.join(show(u) for u in uppers)}")
