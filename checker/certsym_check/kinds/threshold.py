"""Replay of ``landscape_threshold``: the real k at which a family of critical points turns from saddle into
minimum, bracketed, in mpmath interval arithmetic (independent of certsym's producer).

The restricted loss F(x; k) of ``landscape`` (MATH.md, Part II) is analytic in the block sizes, so it makes sense
for a real k: the layout is (k − Σ fixed, fixed_1, …), only the first block's size real. The certificate gives a
bracket [a, b] inside [n, n + 1] for an integer n and three boxes.
- branch: Krawczyk for every k in [a, b] at once. With x̃ the centre, K = [a, b], k₀ its midpoint and δ = (b − a)/2,
  g(x̃, k) ∈ g(x̃, k₀) + ∂g/∂k(x̃, K)·[−δ, δ] (mean value; k is a jet variable of its own, so ∂g/∂k is the mixed
  partial of the jet) and H(X, K) ⊇ ∇_x g over X × K. If −C g + (I − C H)(X − x̃) ⊂ int X, then for each k ∈ K the
  gradient has exactly one zero x(k) in X and every H there is nonsingular, so x(k) is a C¹ curve (implicit
  function theorem): one branch of critical points.
- below (k = a) and above (k = b): a Krawczyk box with its loss, inside the branch box (so its point is x(a),
  x(b)), and for every probe of the checker's isotypic table of the layout (``landscape.decomposition``, its
  parts evaluated at that k) the congruence Q certifying the signs of the compressed Hessian (Gershgorin).
Claim: at a some probe's compressed Hessian has a negative eigenvalue; at b every probe's is positive definite.
Eigenvalues move continuously along x(k), so some probe's compressed Hessian is singular at a k* ∈ (a, b): the
threshold. At an integer k the probes' signs are those of the isotypic blocks of the full Hessian (saddle or
minimum); between integers only the probes are defined, so the claim is about them, and the block the integer-k
table would read from the counts is named for the reader only.
Bounds, before the work: those of ``landscape`` (at most 40 parameters, k ≤ 10^9), numbers of at most 4,096 bits
in the bracket. Cost: O(P³) interval operations per box and per probe (P ≤ 40, at most 9 probes).
"""

from __future__ import annotations

from fractions import Fraction

from certsym_check.core import Report, keys, seq
from certsym_check.errors import Reject
from certsym_check.fields import rational
from certsym_check.kinds.landscape import (  # mpmath's interval arithmetic stays in the landscape module
    MAX_K,
    MAX_PARAMS,
    contracts,
    decimals,
    decomposition,
    enclose,
    family_of,
    iv,
    krawczyk,
    loss_jet,
    negative_count,
    parameter_count,
    refined_box,
    solve_isotypic,
    working_precision,
)

MAX_BITS = 4096
STATEMENT = "Krawczyk over an interval of k, and the signs of every compressed Hessian at both ends"


def _box(obj: object, P: int, where: str, loss: bool) -> tuple[list[Fraction], Fraction, list[list[Fraction]]]:
    """(centre, radius, preconditioner) of a box proof with P parameters."""
    b = keys(obj, {"center", "radius", "preconditioner"} | ({"loss", "Q", "negative"} if loss else set()), where)
    center = [rational(v) for v in seq(b["center"], P, f"{where}.center")]
    r = rational(b["radius"])
    if r <= 0:
        raise Reject(f"{where}.radius must be positive")
    C = [[rational(v) for v in seq(row, P, f"{where}.preconditioner")]
         for row in seq(b["preconditioner"], P, f"{where}.preconditioner")]
    return center, r, C


def _sizes(k: Fraction, fixed: list[int]) -> list:
    return [k - sum(fixed), *fixed]


def _table(sizes: list) -> list[dict]:
    """The checker's probes for the layout (not the full Hessian: a threshold needs the isotypic table)."""
    table = decomposition(sizes)
    if table is None:
        raise Reject(f"no isotypic table for block sizes {[decimals(Fraction(s)) for s in sizes]}")
    return table


def _end(obj: object, k: Fraction, fixed: list[int], branch: tuple, family: str, where: str,
         rep: Report) -> tuple[list[int], tuple[Fraction, Fraction]]:
    """One end of the bracket: its Krawczyk box inside the branch box, its family, and the certified negative
    counts of every probe's compressed Hessian (which must equal the stated ones); returns them with the loss
    interval."""
    sizes = _sizes(k, fixed)
    P = parameter_count(sizes)
    center, r, C = _box(obj, P, where, loss=True)
    c0, r0 = branch
    if any(abs(c - e) + r >= r0 for c, e in zip(center, c0, strict=True)):
        raise Reject(f"{where}: the box does not lie inside the branch box")
    irreps, probes = _table(sizes)
    Qs = seq(obj["Q"], len(probes), f"{where}.Q")
    X = [enclose(q, r) for q in center]
    loss = krawczyk(loss_jet(sizes, [enclose(q) for q in center]), loss_jet(sizes, X), C, r,
                    seq(obj["loss"], 2, f"{where}.loss"))
    found = family_of(sizes, X)
    if found != family:
        raise Reject(f"{where}: the certified point belongs to {found!r}, not {family[:40]!r}")
    counts = []
    for s, (probe, Q) in enumerate(zip(probes, Qs, strict=True)):
        new, Y = refined_box(sizes, X, probe["parts"])
        M = len(Y)
        Qi = [[enclose(rational(v)) for v in seq(row, M, f"{where}.Q[{s}]")] for row in seq(Q, M, f"{where}.Q[{s}]")]
        counts.append(negative_count(loss_jet(new, Y).h, Qi))
        rep.checks["certified signs of a compressed Hessian"] += 1
    stated = obj["negative"]
    if not isinstance(stated, list) or any(type(v) is not int for v in stated) or stated != counts:
        raise Reject(f"{where}: the probes' negative eigenvalues are {counts}, not the certificate's")
    rep.checks["Krawczyk: a unique critical point in the box"] += 1
    return counts, loss


def check_threshold(F, nets: list, proof: object, rep: Report) -> None:
    """``landscape_threshold`` (module docstring). The kind has no inputs (``F`` and ``nets`` unused)."""
    p = keys(proof, {"family", "fixed", "bracket", "branch", "below", "above", "statement"}, "proof")
    if p["statement"] != STATEMENT or not isinstance(p["family"], str):
        raise Reject(f"proof must cite {STATEMENT!r} and name its family")
    fixed = p["fixed"]
    if not isinstance(fixed, list) or len(fixed) >= MAX_PARAMS or any(
            type(s) is not int or not 1 <= s <= MAX_K for s in fixed):
        raise Reject("proof.fixed must list the blocks after the first, positive integers")
    a, b = (rational(v) for v in seq(p["bracket"], 2, "proof.bracket"))
    if any(max(abs(x.numerator), x.denominator).bit_length() > MAX_BITS for x in (a, b)):
        raise Reject(f"proof.bracket: numbers of more than {MAX_BITS} bits")
    n = a.numerator // a.denominator
    if not (a < b <= n + 1) or b > MAX_K:
        raise Reject("proof.bracket must be [a, b] with a < b inside [n, n + 1] for an integer n (k ≤ 10^9)")
    sizes = _sizes(a, fixed)
    if sizes[0] < 2:
        raise Reject("the first block must have size ≥ 2 on the whole bracket")
    P = parameter_count(sizes)
    if P > MAX_PARAMS:
        raise Reject(f"more than {MAX_PARAMS} parameters")
    tables = [_table(_sizes(k, fixed)) for k in (Fraction(n), a, b, Fraction(n + 1))]
    if len({tuple(ir["name"] for ir in t[0]) for t in tables}) != 1 or any(
            part < 2 and part != int(part) for t in tables[1:3] for pr in t[1] for blocks in pr["parts"]
            for part in blocks):
        raise Reject("the isotypic table must be the same at n, a, b and n + 1, with every real part ≥ 2")
    center, r, C = _box(p["branch"], P, "proof.branch", loss=False)
    with working_precision():
        K = iv.mpf([enclose(a).a, enclose(b).b])
        delta = enclose((b - a) / 2)
        at_mid = loss_jet(_sizes((a + b) / 2, fixed), [enclose(q) for q in center])
        mixed = loss_jet(sizes, [enclose(q) for q in center], k=K)
        X = [enclose(q, r) for q in center]
        over = loss_jet(sizes, X, k=K)
        g = [at_mid.g[i] + mixed.h[i][P] * iv.mpf([-delta.b, delta.b]) for i in range(P)]
        contracts(g, [row[:P] for row in over.h[:P]], C, r)
        found = family_of(sizes, X)
        if found != p["family"]:
            raise Reject(f"proof.branch: the certified branch belongs to {found!r}, not {p['family'][:40]!r}")
        rep.checks["Krawczyk for every k in the bracket: one branch of critical points"] += 1
        below, loss_a = _end(p["below"], a, fixed, (center, r), p["family"], "proof.below", rep)
        above, loss_b = _end(p["above"], b, fixed, (center, r), p["family"], "proof.above", rep)
    if not any(below) or any(above):
        raise Reject(f"no sign change: negative eigenvalues {below} at a and {above} at b (need some at a, none at b)")
    irreps, probes = tables[1]
    try:  # how the isotypic table would read these counts at an integer k (a name for the reader, not a claim)
        blocks = solve_isotypic(below, [pr["fixed"] for pr in probes], [ir["block"] for ir in irreps])
        reading = "; at an integer k this pattern would be the block " + ", ".join(
            ir["name"] for ir, v in zip(irreps, blocks, strict=True) if v)
    except Reject:
        reading = ""
    negative = [pr["parts"] for pr, v in zip(probes, below, strict=True) if v]
    smallest = min(negative, key=lambda parts: parameter_count([x for blk in parts for x in blk]))
    shown = " | ".join(", ".join(decimals(Fraction(x), 8) for x in blk) for blk in smallest)
    rep.facts.append(
        f"family {p['family']}, layout ({', '.join(['k − ' + str(sum(fixed)) if fixed else 'k', *map(str, fixed)])}):"
        f" for every k in [a, b] = [{a}, {b}] (width {decimals(b - a, 3)}) exactly one critical point x(k) of the "
        f"restricted loss in the branch box ({P} parameters), F(x(a)) in [{decimals(loss_a[0])}, "
        f"{decimals(loss_a[1])}], F(x(b)) in [{decimals(loss_b[0])}, {decimals(loss_b[1])}]; at k = a "
        f"{len(negative)} of the {len(probes)} probes' compressed Hessians have a negative eigenvalue, the smallest "
        f"({shown}){reading}; at k = b every one is positive definite: some probe's compressed Hessian is singular "
        f"at a k* in ({decimals(a, 10)}, {decimals(b, 10)})")
    rep.checks[STATEMENT] += 1
