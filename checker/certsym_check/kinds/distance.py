"""Replay of ``distance_bound`` certificates: sup_{x ∈ B} ‖ρ(θ1)(x) − ρ(θ2)(x)‖∞ ∈ [L, U].

The checker recomputes U itself from the box and the stated alignment (pairs (i, i', d), d > 0, each neuron in
at most one pair), by the rule of certificates/FORMAT.md: every neuron's extremes on the box, the exact affine
part of the stably active terms maximized exactly on the box, and the interval terms of the others. It requires
the stated U to be that number, the witness to lie in the box, and L = ‖D(witness)‖∞ evaluated exactly. An
exactly equivalent pair instead carries an equivalence proof, replayed as such, and L = U = 0. No search: every
step is linear in the number of weights, in integer arithmetic (each row scaled to integers once).
Standard library only.
"""

from __future__ import annotations

from fractions import Fraction

from certsym_check.budget import (
    charge,
    charge_axpy,
    charge_int_products,
    charge_ops,
    cost,
    gcd_ops,
    int_ops,
    lcm,
    max_size,
    plus,
)
from certsym_check.core import Net, Report, index, keys, seq
from certsym_check.errors import Reject
from certsym_check.fields import QQ, rational, show
from certsym_check.kinds.boxes import (
    MAX_NUMERATOR_BITS,
    box_text,
    denominators_bounded,
    epsilon_verdict,
    numerators_bounded,
    parse_box,
)
from certsym_check.kinds.equivalence import check_equivalent
from certsym_check.kinds.integer_rows import IntegerRows, bits, box_ends, combine, integer_form, row_extremes, scaled
from certsym_check.kinds.relaxation import check_regions

RELAXATION = "linear relaxations with rational multipliers over a tree of regions"

MAX_WEIGHTS = 2 * 10**7  # (n1 + n2)·(m + k) entries: each pass over them is a few integer operations per entry
MAX_BOUND_BITS = 1 << 17  # of the stated L and U (compared with the recomputed ones, never computed with)


def check_distance(F, nets: list[Net], proof: object, rep: Report) -> None:
    """A ``distance_bound`` certificate (certificates/FORMAT.md)."""
    if not isinstance(F, QQ):
        raise Reject("distance_bound certificates are over QQ")
    t1, t2 = nets
    if (t1.m, t1.k) != (t2.m, t2.k):
        raise Reject("the two networks differ in input or output size")
    m, k = t1.m, t1.k
    if (t1.n + t2.n) * (m + k) > MAX_WEIGHTS:
        raise Reject(f"beyond the checker's bounds ((n1 + n2)(m + k) ≤ {MAX_WEIGHTS})")
    equivalent = isinstance(proof, dict) and "equivalence" in proof
    relaxed = isinstance(proof, dict) and "regions" in proof
    required = {"box", "upper", "lower", "equivalence", "statement"} if equivalent else \
        {"box", "upper", "lower", "pairs", "witness", "statement"} | ({"regions"} if relaxed else set())
    if isinstance(proof, dict) and "epsilon" in proof:
        required |= {"epsilon", "verdict"}
    p = keys(proof, required, "proof")
    box = parse_box(p["box"], m)
    upper, lower = rational(p["upper"]), rational(p["lower"])
    if lower > upper:
        raise Reject("proof: the lower bound exceeds the upper bound")
    if equivalent:
        if p["statement"] != "Theorems 3/4" or upper != 0 or lower != 0:
            raise Reject("an equivalence proof gives L = U = 0 and cites 'Theorems 3/4'")
        check_equivalent(F, nets, p["equivalence"], rep)
        rep.facts.append(f"distance 0 on every box: rho(theta1) = rho(theta2); box {box_text(box)}")
        epsilon_verdict(p, lower, upper, rep)
        return
    statement = RELAXATION if relaxed else "symbolic intervals and exact evaluation"
    if p["statement"] != statement:
        raise Reject(f"proof must cite {statement!r}")
    pairs = parse_pairs(p["pairs"], t1, t2)
    x = [rational(y) for y in seq(p["witness"], m, "proof.witness")]
    numerators_bounded([y for b in box for y in b] + [d for _, _, d in pairs] + x, MAX_NUMERATOR_BITS, "the box, "
                        "the scalings and the witness")
    numerators_bounded([upper, lower], MAX_BOUND_BITS, "the bounds")
    denominators_bounded(nets, [y for b in box for y in b] + [d for _, _, d in pairs] + x + [upper, lower])
    if relaxed:
        computed = check_regions(t1, t2, box, pairs, p["regions"])
        if upper != computed:
            raise Reject(f"the stated upper bound is not the largest leaf bound ({show(computed)})")
        rep.checks["distance: every region's bounds recomputed from its multipliers, the leaves covering the box"] += 1
    else:
        computed = _upper(t1, t2, box, pairs)
        if upper != computed:
            raise Reject(f"the stated upper bound is not the one the alignment gives ({show(computed)})")
        rep.checks["distance: U recomputed from the box, the alignment and every neuron's extremes"] += 1
    if any(not lo <= y <= hi for y, (lo, hi) in zip(x, box, strict=True)):
        raise Reject("the witness lies outside the box")
    value = _distance_at(evaluate(t1, x), evaluate(t2, x))
    if value != lower:
        raise Reject(f"the stated lower bound is not ‖D(witness)‖∞ ({show(value)})")
    rep.checks["distance: L = ‖D(witness)‖∞ evaluated exactly, witness in the box"] += 1
    rep.facts.append(f"sup over the box of the output difference in [{show(lower)}, {show(upper)}]; box "
                     f"{box_text(box)}")
    epsilon_verdict(p, lower, upper, rep)


def parse_pairs(given: object, t1: Net, t2: Net) -> list[tuple[int, int, Fraction]]:
    """The alignment [[i, i', d], ...]: each neuron of θ1 and of θ2 at most once, d > 0."""
    pairs, used1, used2 = [], set(), set()
    for s, pair in enumerate(seq(given, None, "proof.pairs")):
        i, j, d = seq(pair, 3, f"proof.pairs[{s}]")
        i, j, d = index(i, t1.n, "proof.pairs"), index(j, t2.n, "proof.pairs"), rational(d)
        if d <= 0 or i in used1 or j in used2:
            raise Reject(f"proof.pairs[{s}]: scalings must be positive and each neuron paired at most once")
        used1.add(i)
        used2.add(j)
        pairs.append((i, j, d))
    return pairs


def evaluate(t: Net, x: list[Fraction]) -> list[Fraction]:
    """ρ(θ)(x) exactly, rows in integers. Cost, charged before each step: the witness and each row brought to
    integers (``integer_form``), each row's products with the witness and their sum (``products_ops``), the gcd that
    reduces z, and each active neuron's column added to the output (``charge_axpy``)."""
    what = "evaluating the witness"
    X, Dx = integer_form(x, what)
    XD = [*X, Dx]
    out = list(t.c)
    for r, v in zip(t.rows, t.v, strict=True):
        ints, den = integer_form(r, what)
        charge_int_products(ints, XD, what)
        charge_ops(gcd_ops(bits(ints) + bits(XD) + len(ints).bit_length(), den.bit_length() + Dx.bit_length()), what)
        z = Fraction(sum(a * y for a, y in zip(ints, XD, strict=True)), den * Dx)
        charge_axpy(out, v, z, what)
        if z > 0:
            out = [o + w * z for o, w in zip(out, v, strict=True)]
    return out


def _distance_at(o1: list[Fraction], o2: list[Fraction]) -> Fraction:
    """max_t |o1_t − o2_t|, charged before: a difference and a comparison per output at the largest sizes."""
    s1, s2 = max_size(o1), max_size(o2)
    charge(len(o1) * 2 * cost(s1, s2), "evaluating the witness")
    return max(abs(a - b) for a, b in zip(o1, o2, strict=True))


def _upper(t1: Net, t2: Net, box: list, pairs: list) -> Fraction:
    """U by the rule of certificates/FORMAT.md, recomputed. Cost, each step charged before it runs (by its length
    and the sizes of its numbers): the box and every row brought to integers, every neuron's (and unstable pair's)
    extremes on the box, the interval terms (a few rational operations per output and term), and the exact affine
    part, k × (stably active terms) × (m + 1) multiply-adds, whose fixed part is charged at once before any of it
    (so that a certificate whose affine part cannot fit is refused before it starts)."""
    k, what = t1.k, "the box of U"
    LO, Db = integer_form([lo for lo, _ in box], what)
    HI, Dh = integer_form([hi for _, hi in box], what)
    Db2 = lcm((Db, Dh), what)
    LO, HI = scaled(LO, Db2 // Db, what), scaled(HI, Db2 // Dh, what)
    ends = box_ends(LO, HI, Db2)
    R1, R2 = IntegerRows(t1, {}), IntegerRows(t2, {j: d for _, j, d in pairs})
    z1 = [R1.extremes(i, LO, HI, Db2, ends) for i in range(t1.n)]
    z2 = [R2.extremes(j, LO, HI, Db2, ends) for j in range(t2.n)]
    elo, ehi = [Fraction(0)] * k, [Fraction(0)] * k
    active: list[tuple[IntegerRows, int, list]] = []  # (rows, neuron, weights) entering the exact affine part

    def interval(t: int, a: Fraction, b: Fraction) -> None:
        elo[t] += min(a, b)
        ehi[t] += max(a, b)

    def charge_intervals(columns: list, ends_: list[Fraction], products: int) -> None:
        """Per output: ``products`` products of a column's weight (or a difference of two) by an extreme, their
        comparisons, and two sums into elo and ehi at their present sizes (read before, a pass over them)."""
        sv = max_size(w for v in columns for w in v)
        sv = (sv[0] + sv[1] + 1, 2 * sv[1]) if len(columns) > 1 else sv
        term = plus(sv, max_size(ends_))
        se = plus(max_size(elo + ehi), term)
        charge(k * (products * (cost(sv, max_size(ends_)) + 4) + (len(columns) - 1) * cost(sv, sv)
                    + products * cost(se, term)), "the interval terms of U")

    partner = {i: j for i, j, _ in pairs}
    for i in range(t1.n):
        (lo1, hi1) = z1[i]
        if i in partner:
            j = partner[i]
            lo2, hi2 = z2[j]
            if lo1 >= 0 and lo2 >= 0:
                charge(k * cost(max_size(R2.v[j]), (1, 1)), "the affine part of U")
                active.append((R1, i, R1.v[i]))
                active.append((R2, j, [-w for w in R2.v[j]]))
                continue
            if hi1 <= 0 and hi2 <= 0:
                continue
            den = lcm((R1.dens[i], R2.dens[j]), "an unstable pair's difference")
            diff = combine(R1.rows[i], den // R1.dens[i], R2.rows[j], den // R2.dens[j], "an unstable pair's "
                           "difference")
            dlo, dhi = row_extremes(diff, den, LO, HI, Db2, ends)
            s_lo, s_hi, d_lo, d_hi = max(lo1, 0), max(hi1, 0), min(dlo, 0), max(dhi, 0)
            charge_intervals([R1.v[i], R2.v[j]], [s_lo, s_hi, d_lo, d_hi], 4)
            for t in range(k):
                dv, vb = R1.v[i][t] - R2.v[j][t], R2.v[j][t]
                interval(t, dv * s_lo, dv * s_hi)
                interval(t, vb * d_lo, vb * d_hi)
            continue
        _single(R1, i, lo1, hi1, 1, active, interval, charge_intervals, k)
    paired = set(partner.values())
    for j in range(t2.n):
        if j not in paired:
            _single(R2, j, *z2[j], -1, active, interval, charge_intervals, k)
    return _affine(t1, t2, active, LO, HI, Db2, ends, elo, ehi)


def _affine(t1: Net, t2: Net, active: list, LO: list[int], HI: list[int], Db: int, ends: int, elo: list,
            ehi: list) -> Fraction:
    """max over t of the exact affine part of the stably active terms, maximized on the box, plus the interval
    terms elo, ehi (the rule of FORMAT.md). Cost: k × len(active) comparisons to find each output's terms, then
    (m + 1) multiply-adds per (output, nonzero term): their fixed part charged at once before any of them (a
    certificate whose affine part cannot fit is refused before it starts), the part that grows with the sizes of
    the scaling and the row per term, before it; each output's common denominator (``lcm``) and extremes
    (``row_extremes``)."""
    k, m, what = t1.k, t1.m, "the affine part of U"
    charge_ops(k * len(active), what)
    terms: list[list[tuple[IntegerRows, int, Fraction]]] = [[] for _ in range(k)]
    for rows, i, w in active:
        for t, x in enumerate(w):
            if x:
                terms[t].append((rows, i, x))
    charge_ops((sum(map(len, terms)) + k) * (m + 1), what)  # every multiply-add of the loop below, and each acc
    best = Fraction(0)
    for t in range(k):
        coeffs = terms[t]
        G = lcm((w.denominator * rows.dens[i] for rows, i, w in coeffs), what)
        acc = [0] * (m + 1)
        width = len(coeffs).bit_length()
        for rows, i, w in coeffs:
            den = w.denominator * rows.dens[i]
            charge_ops(2 * int_ops(G.bit_length(), den.bit_length()) + int_ops(w.numerator.bit_length(),
                                                                                G.bit_length()), what)
            s = w.numerator * (G // den)
            # the fixed part of these m + 1 multiply-adds is charged above; here the part that grows with the sizes
            charge_ops((m + 1) * (int_ops(s.bit_length() + width, rows.widths[i]) - 1), what)
            acc = [x + s * y for x, y in zip(acc, rows.rows[i], strict=True)]
        amin, amax = row_extremes(acc, G, LO, HI, Db, ends)
        c = t1.c[t] - t2.c[t]
        sizes = max_size([amin, amax, t1.c[t], t2.c[t], elo[t], ehi[t], best])
        charge(6 * cost(plus(sizes, sizes), plus(sizes, sizes)), what)
        best = max(best, amax + c + ehi[t], -(amin + c + elo[t]))
    return best


def _single(rows: IntegerRows, i: int, lo: Fraction, hi: Fraction, sign: int, active: list, interval, charge_intervals,
            k: int) -> None:
    """An unpaired neuron: a stably active one enters the affine part (its column times ``sign``), an unstable one
    the interval terms, [min(0, sign·v·hi), max(0, sign·v·hi)] per output; each charged before."""
    if lo >= 0:
        charge(k * cost(max_size(rows.v[i]), (1, 1)), "the affine part of U")
        active.append((rows, i, [sign * w for w in rows.v[i]]))
    elif hi > 0:
        charge_intervals([rows.v[i]], [hi, Fraction(sign)], 2)
        for t in range(k):
            interval(t, sign * rows.v[i][t] * hi, Fraction(0))
