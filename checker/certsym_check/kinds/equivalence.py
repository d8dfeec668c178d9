"""``equivalent`` and ``not_equivalent`` (Theorems 3/4): the reduction steps (moves 1–3), the H_n matching, the
merges and the antisymmetric pairs σ(z) − σ(−z) = z replayed until nothing is left but a zero affine part; or
the witness evaluated exactly in both networks. Cost: linear in the certificate."""

from __future__ import annotations

from fractions import Fraction
from itertools import repeat
from operator import mul

from certsym_check.budget import charge_axpy, charge_products
from certsym_check.core import (
    AFFINE,
    EVAL,
    HN,
    MERGE,
    PAIR,
    SHIFT,
    ZERO,
    Net,
    Report,
    concat,
    index,
    is_zero,
    keys,
    negated_after,
    raw_row,
    row_bits,
    row_is_zero,
    scaled_float32,
    seq,
)
from certsym_check.errors import Reject


def kill(net: Net, i: int) -> None:
    """Neuron i becomes the zero neuron. Every killed neuron shares one zero row and one zero output column
    (rows and columns are replaced, never changed in place): 10^5 killed rows of 785 entries would otherwise
    take gigabytes, and ``is_killed`` can tell them by identity."""
    zero = getattr(net, "zero", None)
    if zero is None:
        zero = net.zero = ([net.F.zero] * (net.m + 1), [net.F.zero] * net.k)
    net.rows[i], net.v[i] = zero


def is_killed(net: Net, i: int) -> bool:
    """Was neuron i killed (its output column the shared zero column)?"""
    zero = getattr(net, "zero", None)
    return zero is not None and net.v[i] is zero[1]


def _power_of_two(lam) -> float | None:
    """λ as a float when λ = ±2^e with |e| ≤ 600: then x·λ is exact in binary64 for every float32 x (the
    product stays a normal binary64 number), so float rows can be compared with one product per entry."""
    num, den = abs(lam.numerator), lam.denominator
    if num & (num - 1) or den & (den - 1) or max(num, den).bit_length() > 601:
        return None
    return float(lam)


def scale_of(lam) -> float | None:
    """``_power_of_two`` of a rational λ, None for a number-field element."""
    return _power_of_two(lam) if isinstance(lam, Fraction) else None


def proportional(net: Net, i: int, j: int, lam, sign: int, where: str, scale: float | None | bool = False) -> None:
    """Check r_j = sign·λ r_i with λ > 0 (sign = -1: antisymmetric pair).

    Rows straight from float16/float32 tensors are compared as floats: for λ = 2^e, r_j = ±λ r_i entry by
    entry (exact products, ``_power_of_two``); otherwise, with p the first index where r_i,p ≠ 0,
    r_j = (r_j,p / r_i,p) r_i iff r_j,q · r_i,p = r_i,q · r_j,p for all q, and these products of two ≤ 24-bit
    numbers are exact in binary64. ``scale``: ``scale_of(lam)`` when the caller has it (False: not given). Cost
    O(m)."""
    if i == j or (lam <= 0 if type(lam) is Fraction else net.F.sign(lam) <= 0):  # one comparison for a rational
        raise Reject(f"{where}: needs two distinct neurons and λ > 0")
    if scale is False:
        scale = scale_of(lam)
    if scale is not None and sign > 0:
        bi, bj = row_bits(net.rows, i), row_bits(net.rows, j)
        if bi is not None and bj is not None and bj[1] == scale * bi[1] and \
                scaled_float32(bi[0], bj[0], lam.numerator.bit_length() - lam.denominator.bit_length()):
            return
    ri, rj = raw_row(net.rows, i), raw_row(net.rows, j)
    if scale is not None and ri is not None and rj is not None:
        same = list(map(mul, ri, repeat(sign * scale))) == rj
    elif ri is not None and rj is not None:
        p = next((q for q, x in enumerate(ri) if x), None)
        same = not any(rj) if p is None else sign * lam == Fraction(rj[p]) / Fraction(ri[p]) and \
            [x * ri[p] for x in rj] == [y * rj[p] for y in ri]
    else:
        charge_products(net.rows[i], [lam] * (net.m + 1), "a proportional-row test", accumulate=False)
        same = all(rj == sign * lam * ri for ri, rj in zip(net.rows[i], net.rows[j], strict=True))
    if not same:
        raise Reject(f"{where}: row {j} is not {'' if sign > 0 else '-'}λ times row {i}")


def _scaled(cols, j: int, lam, other, i: int, scale: float | None) -> bool:
    """cols[j]·λ = other[i], on the raw floats when both are unchanged float16/float32 columns and λ = 2^e (``scale``,
    from ``scale_of``)."""
    vj, vi = (raw_row(cols, j), raw_row(other, i)) if scale is not None else (None, None)
    if vj is not None and vi is not None:
        return list(map(mul, vj, repeat(scale))) == vi
    charge_products(cols[j], [lam] * len(cols[j]), "an output column scaled", accumulate=False)
    return all(x * lam == y for x, y in zip(cols[j], other[i], strict=True))


def _remove_once(removed: set, i: int, where: str) -> None:
    """Each step removes a neuron that is still there: at most n steps, each O(m + k) (a certificate could
    otherwise repeat cheap steps on zero rows without end)."""
    if i in removed:
        raise Reject(f"{where}: neuron {i} was already removed")
    removed.add(i)


def replay_reduction(net: Net, steps: object, rep: Report, where: str) -> None:
    """Moves 1-3 of MATH.md, each with its side condition; each neuron is removed at most once."""
    F = net.F
    removed: set = set()
    for s, st in enumerate(seq(steps, None, where)):
        w = f"{where}[{s}]"
        kind = st.get("step") if isinstance(st, dict) else None
        if kind in ("zero", "bias_shift"):
            keys(st, {"step", "neuron", "statement"}, w)
            i = index(st["neuron"], net.n, w)
            a, b, v = net.rows[i][:-1], net.rows[i][-1], net.v[i]
            if kind == "zero" and not (is_zero(v) or (is_zero(a) and F.sign(b) <= 0)):
                raise Reject(f"{w}: zeroing needs v_i = 0, or a_i = 0 and b_i <= 0")
            if kind == "bias_shift":
                if not is_zero(a) or F.sign(b) <= 0:
                    raise Reject(f"{w}: bias shifting needs a_i = 0 and b_i > 0")
                charge_axpy(net.c, v, b, "a bias shift")
                net.c = [cj + vj * b for cj, vj in zip(net.c, v, strict=True)]
            statement = ZERO if kind == "zero" else SHIFT
        elif kind == "merge":
            keys(st, {"step", "into", "from", "lambda", "statement"}, w)
            i, j, lam = index(st["into"], net.n, w), index(st["from"], net.n, w), F.number(st["lambda"])
            proportional(net, i, j, lam, 1, w)
            charge_axpy(net.v[i], net.v[j], lam, "a merge")
            net.v[i] = [x + lam * y for x, y in zip(net.v[i], net.v[j], strict=True)]
            statement = MERGE
        else:
            raise Reject(f"{w}: unknown step {kind!r}")
        if st["statement"] != statement:
            raise Reject(f"{w}: step must cite {statement!r}")
        _remove_once(removed, j if kind == "merge" else i, w)
        kill(net, j if kind == "merge" else i)
        rep.checks[statement] += 1


def check_equivalent(F, nets: list[Net], proof: object, rep: Report) -> None:
    """Theorems 3/4 form: reductions, H_n matching, merges, antisymmetric pairs, affine identity. Linear time."""
    p = keys(proof, {"reduction", "matching", "merges", "pairs", "statement"}, "proof")
    if p["statement"] != AFFINE:
        raise Reject(f"proof must cite {AFFINE!r}")
    red = seq(p["reduction"], 2, "proof.reduction")
    t1, t2 = nets
    if (t1.m, t1.k) != (t2.m, t2.k):
        raise Reject("inputs have different m or k")
    for t, steps, name in ((t1, red[0], "theta1"), (t2, red[1], "theta2")):
        replay_reduction(t, steps, rep, f"proof.reduction[{name}]")
    n1, n2 = t1.n, t2.n
    # D = θ1_min ⊖ θ2_min, realizing ρ(θ1) − ρ(θ2)
    D = Net.__new__(Net)
    D.F, D.m, D.k, D.n = F, t1.m, t1.k, n1 + n2
    D.rows = concat(t1.rows, t2.rows)
    D.v = negated_after(t1.v, t2.v)
    D.c = [x - y for x, y in zip(t1.c, t2.c, strict=True)]
    used1, used2 = set(), set()
    scales: dict[str, tuple] = {}  # a matching repeats few scales: each text is read once, with its scale_of
    for w, mt in matching_entries(p["matching"], min(n1, n2)):
        i, j, text = index(mt["theta1"], n1, w), index(mt["theta2"], n2, w), mt["scale"]
        known = scales.get(text) if isinstance(text, str) else None
        if known is None:
            try:
                lam = F.number(text)
            except Reject as exc:
                raise Reject(f"{w}: {exc}") from None
            known = (lam, scale_of(lam))
            if isinstance(text, str):
                scales[text] = known
        lam, scale = known
        if i in used1 or j in used2 or mt["statement"] != HN:
            raise Reject(f"{w}: neurons matched twice, or the step does not cite {HN!r}")
        used1.add(i)
        used2.add(j)
        proportional(D, i, n1 + j, lam, 1, w, scale)
        if not _scaled(t2.v, j, lam, t1.v, i, scale):
            raise Reject(f"{w}: v2_j * scale != v1_i")
        kill(D, i)
        kill(D, n1 + j)
        rep.checks[HN] += 1
    merged = {i for i in used1} | {n1 + j for j in used2}
    for s, mg in enumerate(seq(p["merges"], None, "proof.merges")):
        w = f"proof.merges[{s}]"
        keys(mg, {"into", "from", "lambda", "statement"}, w)
        i, j, lam = index(mg["into"], D.n, w), index(mg["from"], D.n, w), F.number(mg["lambda"])
        if mg["statement"] != MERGE:
            raise Reject(f"{w}: must cite {MERGE!r}")
        _remove_once(merged, j, w)
        proportional(D, i, j, lam, 1, w)
        charge_axpy(D.v[i], D.v[j], lam, "a cross merge")
        D.v[i] = [x + lam * y for x, y in zip(D.v[i], D.v[j], strict=True)]
        kill(D, j)
        rep.checks[MERGE] += 1
    lin, const = replay_pairs(F, D, p["pairs"], rep)
    if not zero_matrix(lin) or not is_zero(const):
        raise Reject("the affine terms and c1 - c2 do not sum to zero")
    rep.checks[AFFINE] += 1
    def rest_zero(t: Net, used: set) -> bool:
        return all(i in used or (row_is_zero(t.rows, i) and is_zero(t.v[i])) for i in range(t.n))

    if n1 == n2 and not p["merges"] and not p["pairs"] and rest_zero(t1, used1) and rest_zero(t2, used2):
        rep.notes.append("theta2_min = h . theta1_min for the H_n element given by the matching")


def matching_entries(matching: object, limit: int):
    """The matching's entries as records {"theta1", "theta2", "scale", "statement"}, each with where it stands, one
    at a time: from a list of records, or from the columnar object {"theta1": [...], "theta2": [...], "scale": [...],
    "statement"} whose three lists have one length (certificates/FORMAT.md). More than ``limit`` entries (each
    neuron is matched at most once: min(n1, n2)) is rejected before any is read, as is anything else. Linear."""
    if isinstance(matching, dict):
        cols = keys(matching, {"theta1", "theta2", "scale", "statement"}, "proof.matching")
        count = len(seq(cols["theta1"], None, "proof.matching.theta1"))
        seq(cols["theta2"], count, "proof.matching.theta2")
        seq(cols["scale"], count, "proof.matching.scale")
        if count > limit:
            raise Reject(f"proof.matching: {count} entries, more than the {limit} neurons a matching can pair")
        for s, (i, j, lam) in enumerate(zip(cols["theta1"], cols["theta2"], cols["scale"], strict=True)):
            yield f"proof.matching (entry {s})", {"theta1": i, "theta2": j, "scale": lam,
                                                  "statement": cols["statement"]}
        return
    records = seq(matching, None, "proof.matching")
    if len(records) > limit:
        raise Reject(f"proof.matching: {len(records)} entries, more than the {limit} neurons a matching can pair")
    for s, mt in enumerate(records):
        yield f"proof.matching[{s}]", keys(mt, {"theta1", "theta2", "scale", "statement"}, f"proof.matching[{s}]")


def replay_pairs(F, D: Net, pairs: object, rep: Report) -> tuple[list, list]:
    """Antisymmetric pairs in D; afterwards every neuron must have zero output weight.
    Returns the sum of the pairs' affine terms: (linear part, constant part + c_D)."""
    lin = None  # built lazily: m may be huge when there are no neurons
    const = list(D.c)
    paired = set()
    for s, pr in enumerate(seq(pairs, None, "proof.pairs")):
        w = f"proof.pairs[{s}]"
        keys(pr, {"i", "j", "lambda", "linear", "constant", "statement"}, w)
        i, j, lam = index(pr["i"], D.n, w), index(pr["j"], D.n, w), F.number(pr["lambda"])
        if i in paired or j in paired or pr["statement"] != PAIR:
            raise Reject(f"{w}: neuron used in two pairs, or the step does not cite {PAIR!r}")
        paired |= {i, j}
        proportional(D, i, j, lam, -1, w)
        vi, vj, a, b = D.v[i], D.v[j], D.rows[i][:-1], D.rows[i][-1]
        if is_zero(vi) or any(y * lam != -x for x, y in zip(vi, vj, strict=True)):
            raise Reject(f"{w}: not antisymmetric (need v_i != 0 and v_j * lambda = -v_i)")
        L = [[F.number(x) for x in seq(row, D.m, w)] for row in seq(pr["linear"], D.k, w)]
        C = [F.number(x) for x in seq(pr["constant"], D.k, w)]
        if [[vr * aq for aq in a] for vr in vi] != L or [vr * b for vr in vi] != C:
            raise Reject(f"{w}: the affine term is not v_i (a_i . x + b_i)")
        lin = L if lin is None else [[x + y for x, y in zip(u, w, strict=True)] for u, w in zip(lin, L, strict=True)]
        const = [x + y for x, y in zip(const, C, strict=True)]
        kill(D, i)
        kill(D, j)
        rep.checks[PAIR] += 1
    for i in range(D.n):
        if not is_killed(D, i) and not is_zero(D.v[i]):
            raise Reject(f"neuron {i} is not accounted for by the pairs")
    return lin, const


def zero_matrix(lin: list | None) -> bool:
    """True for an absent (lazily built) or all-zero matrix."""
    return lin is None or all(is_zero(row) for row in lin)


def check_not_equivalent(F, nets: list[Net], proof: object, rep: Report) -> None:
    """A rational witness where both networks are evaluated exactly and differ."""
    p = keys(proof, {"witness", "values", "statement"}, "proof")
    t1, t2 = nets
    if (t1.m, t1.k) != (t2.m, t2.k) or p["statement"] != EVAL:
        raise Reject(f"inputs have different m or k, or the proof does not cite {EVAL!r}")
    x = [F.number(t) for t in seq(p["witness"], t1.m, "proof.witness")]
    if not all(F.is_rational(t) for t in x):
        raise Reject("the witness must be a rational point")
    values = seq(p["values"], 2, "proof.values")
    got = []
    for t, vals, w in ((t1, values[0], "proof.values[0]"), (t2, values[1], "proof.values[1]")):
        got.append(t.evaluate(x))  # once per network
        if [F.number(y) for y in seq(vals, t.k, w)] != got[-1]:
            raise Reject(f"{w} is not the exact value at the witness")
    if all(F.sign(a - b) == 0 for a, b in zip(*got, strict=True)):
        raise Reject("the two values at the witness are equal")
    rep.checks[EVAL] += 2
