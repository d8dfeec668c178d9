"""Replay of certsym certificates: every step recomputed exactly, every side condition checked.

Standard library only (plus ``fields``); it imports nothing else from certsym. It never searches:
the certificate names every index, λ, scaling, pair and witness, and the checker verifies each one
in time linear in the certificate (plus one sort for minimality claims). Anything it cannot fully
verify is rejected with the reason: an unknown format, version, kind, key or step, a missing or
extra neuron, inputs that differ from the files given.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections import Counter
from dataclasses import dataclass, field
from fractions import Fraction
from functools import cmp_to_key

from certsym_check.binding import Reader, bind
from certsym_check.budget import charge_axpy, charge_products, metered
from certsym_check.fields import QQ, CannotCheck, Reject, WrongInputs, make_field
from certsym_check.tensors import NARROW, InputFile, model_tensors

FORMAT, VERSION = "certsym-certificate", 1
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
    "wide_critical_point": "F on M(n,k) has exactly one critical point in the box of the fixed-point space of the "
                           "group generated, with F in the interval given (and, if stated, positive definite Hessian)",
    "added_neuron": "the certified critical point with one neuron added (a split row or a zero row) is not a local "
                    "minimum of F on M(k+1,k)",
}
_SHA256 = re.compile(r"[0-9a-f]{64}")
ZERO, SHIFT, MERGE, HN = "zeroing lemma", "bias shifting", "merge lemma", "H_n invariance"
PAIR, AFFINE, EVAL = "sigma(z) - sigma(-z) = z", "affine parts cancel", "exact evaluation"


@dataclass
class Report:
    """The outcome of one replay: ``valid``, or the ``reason`` it is not; ``cannot_check`` when an input the
    certificate needs was not available (neither valid nor invalid). ``checks`` counts the statements
    verified, ``bound`` says what each input was bound to, ``facts`` what a landscape certificate proved. ``usage``
    marks a call that gave the wrong number of input files (a usage error, not a verdict); ``work`` is the part of
    the work budget the replay used (budget.WORK_BUDGET units at most)."""

    valid: bool = False
    kind: str = "?"
    reason: str = ""
    cannot_check: bool = False
    usage: bool = False
    work: int = 0
    checks: Counter = field(default_factory=Counter)
    notes: list = field(default_factory=list)
    bound: list = field(default_factory=list)
    facts: list = field(default_factory=list)

    def __bool__(self) -> bool:
        return self.valid


def keys(obj: object, required: set, where: str) -> dict:
    """The object, if it is a dict with exactly the ``required`` keys; otherwise reject."""
    if not isinstance(obj, dict):
        raise Reject(f"{where} must be an object")
    if set(obj) != required:
        extra, missing = sorted(set(obj) - required), sorted(required - set(obj))
        raise Reject(f"{where}: unknown keys {extra}" if extra else f"{where}: missing keys {missing}")
    return obj


def index(x: object, bound: int, where: str) -> int:
    """An int index in 0..bound−1 (booleans refused); otherwise reject."""
    if isinstance(x, bool) or not isinstance(x, int) or not 0 <= x < bound:
        raise Reject(f"{where}: index {x!r} out of range 0..{bound - 1}")
    return x


def seq(x: object, length: int | None, where: str) -> list:
    """The list, if it is one (of the given length); otherwise reject."""
    if not isinstance(x, list) or (length is not None and len(x) != length):
        raise Reject(f"{where} must be a list" + (f" of length {length}" if length is not None else ""))
    return x


class Net:
    """θ as neuron rows r_i = (a_i, b_i), output columns v_i and the constant c."""

    def __init__(self, F, params: object, where: str):
        p = keys(params, {"M", "A", "b", "c", "shape"}, where)
        shape = keys(p["shape"], {"m", "n", "k"}, f"{where}.shape")
        m, n, k = (index(shape[s], 10**9, f"{where}.shape.{s}") for s in "mnk")
        if m < 1 or k < 1:
            raise Reject(f"{where}: m and k must be positive")
        A = [seq(row, m, f"{where}.A[{i}]") for i, row in enumerate(seq(p["A"], n, f"{where}.A"))]
        M = [seq(row, n, f"{where}.M[{j}]") for j, row in enumerate(seq(p["M"], k, f"{where}.M"))]
        b, c = seq(p["b"], n, f"{where}.b"), seq(p["c"], k, f"{where}.c")
        self.F, self.m, self.n, self.k = F, m, n, k
        self.rows = [[F.number(x) for x in A[i]] + [F.number(b[i])] for i in range(n)]
        self.v = [[F.number(M[j][i]) for j in range(k)] for i in range(n)]
        self.c = [F.number(x) for x in c]

    def evaluate(self, x: list) -> list:
        """ρ(θ)(x) exactly; only the nonzero coordinates of x are read (witnesses are often sparse)."""
        support = [q for q, t in enumerate(x) if t != 0]
        sparse = getattr(self.rows, "sparse", None)
        out = list(self.c)
        for i, v in enumerate(self.v):
            if sparse is not None:
                coeffs, b = sparse(i, support)
            else:
                r = self.rows[i]
                coeffs, b = [r[q] for q in support], r[-1]
            charge_products(coeffs + [b], [x[q] for q in support] + [1], "evaluating a witness")
            z = b + sum((a * x[q] for a, q in zip(coeffs, support, strict=True)), self.F.zero)
            if self.F.sign(z) > 0:
                charge_axpy(out, v, z, "evaluating a witness")
                out = [o + vj * z for o, vj in zip(out, v, strict=True)]
        return out


class FloatRows:
    """The rows r_i = (a_i, b_i) of a model file referenced by a certificate, read as Fractions only when
    used (a 10^5 × 784 layer would take gigabytes as Fractions). Rows of float16/float32 tensors also
    give their raw floats (``raw``), on which ``proportional`` tests exactly with binary64 products."""

    def __init__(self, W1, b1: list, narrow: bool):
        self.W1, self.b1, self.narrow, self.killed = W1, b1, narrow, {}

    def __len__(self) -> int:
        return len(self.b1)

    def raw(self, i: int) -> list | None:
        return None if i in self.killed or not self.narrow else self.W1.row(i) + [self.b1[i]]

    def __getitem__(self, i: int) -> list:
        if i in self.killed:
            return self.killed[i]
        return [Fraction(x) for x in self.W1.row(i)] + [Fraction(self.b1[i])]

    def sparse(self, i: int, columns: list[int]) -> tuple[list, Fraction]:
        """The entries of row i in ``columns``, and b_i, as Fractions."""
        if i in self.killed:
            row = self.killed[i]
            return [row[q] for q in columns], row[-1]
        return [Fraction(self.W1.at(i, q)) for q in columns], Fraction(self.b1[i])

    def __setitem__(self, i: int, row: list) -> None:
        self.killed[i] = row

    def __iter__(self):
        return (self[i] for i in range(len(self)))


class RowChain:
    """Two row sequences one after the other (the neurons of D = θ1 ⊖ θ2)."""

    def __init__(self, first, second):
        self.parts = (first, second)

    def _at(self, i: int):
        first = self.parts[0]
        return (first, i) if i < len(first) else (self.parts[1], i - len(first))

    def __len__(self) -> int:
        return sum(len(p) for p in self.parts)

    def raw(self, i: int) -> list | None:
        part, j = self._at(i)
        return part.raw(j) if hasattr(part, "raw") else None

    def __getitem__(self, i: int) -> list:
        part, j = self._at(i)
        return part[j]

    def __setitem__(self, i: int, row: list) -> None:
        part, j = self._at(i)
        part[j] = row


def concat(first, second):
    """``first + second`` for row sequences (lists, or model rows read on demand)."""
    return first + second if isinstance(first, list) and isinstance(second, list) else RowChain(first, second)


def raw_row(rows, i: int) -> list | None:
    """The raw floats of row i when it comes unmodified from a float16/float32 tensor, else None."""
    return rows.raw(i) if hasattr(rows, "raw") else None


def row_is_zero(rows, i: int) -> bool:
    raw = raw_row(rows, i)
    return not any(raw) if raw is not None else is_zero(rows[i])


MODEL_SLACK = 1 << 20  # weights a referenced model file may define beyond one per byte of the file


def model_net(F, record: dict, file: InputFile, where: str, rep: Report) -> Net:
    """θ read from the model file a certificate references by SHA-256 only (no embedded parameters)."""
    if hashlib.sha256(file.data).hexdigest() != record["sha256"]:
        raise Reject(f"{where}: the SHA-256 of the given file differs from the certificate's")
    shape = keys(record["shape"], {"m", "n", "k"}, f"{where}.shape")
    m, n, k = (index(shape[s], 10**9, f"{where}.shape.{s}") for s in "mnk")
    if m < 1 or k < 1:
        raise Reject(f"{where}: m and k must be positive")
    entries = n * (m + 1) + k * (n + 1)
    if entries > len(file.data) + MODEL_SLACK:  # memory O(file size): compressed zeros cannot make it gigabytes
        raise Reject(f"{where}: {entries:,} weights from a file of {len(file.data):,} bytes: beyond the checker's "
                     f"bound of one weight per byte of the file (+ {MODEL_SLACK:,})")
    try:
        (W1, b1, W2, b2), bound = model_tensors(file, record["model"], (m, n, k))
    except Reject as exc:
        raise type(exc)(f"{where}: {exc}") from None
    rep.bound.append(f"{where} {record['name']} (sha256 {record['sha256'][:16]}…, read from the file): {bound}")
    M, c = W2.exact(), b2.exact()  # exact() rejects NaN and infinities
    b1.exact()
    if not all(map(math.isfinite, W1.values)):
        raise Reject(f"{where}: the model file holds a NaN or infinite weight")
    net = Net.__new__(Net)
    net.F, net.m, net.n, net.k = F, m, n, k
    narrow = W1.code in NARROW and b1.code in NARROW
    net.rows = FloatRows(W1, list(b1.flat()), narrow)
    net.v = [[M[j * n + i] for j in range(k)] for i in range(n)]
    net.c = c
    return net


def is_zero(vec: list) -> bool:
    """Every entry exactly zero (remainder test over number fields)."""
    return all(x == 0 for x in vec)


def kill(net: Net, i: int) -> None:
    """Neuron i becomes the zero neuron."""
    net.rows[i] = [net.F.zero] * (net.m + 1)
    net.v[i] = [net.F.zero] * net.k


def proportional(net: Net, i: int, j: int, lam, sign: int, where: str) -> None:
    """Check r_j = sign·λ r_i with λ > 0 (sign = -1: antisymmetric pair).

    Rows straight from float16/float32 tensors are compared as floats: with p the first index where
    r_i,p ≠ 0, r_j = (r_j,p / r_i,p) r_i iff r_j,q · r_i,p = r_i,q · r_j,p for all q, and these products of
    two ≤ 24-bit numbers are exact in binary64."""
    if i == j or net.F.sign(lam) <= 0:
        raise Reject(f"{where}: needs two distinct neurons and λ > 0")
    ri, rj = raw_row(net.rows, i), raw_row(net.rows, j)
    if ri is not None and rj is not None:
        p = next((q for q, x in enumerate(ri) if x), None)
        same = not any(rj) if p is None else sign * lam == Fraction(rj[p]) / Fraction(ri[p]) and \
            [x * ri[p] for x in rj] == [y * rj[p] for y in ri]
    else:
        charge_products(net.rows[i], [lam] * (net.m + 1), "a proportional-row test", accumulate=False)
        same = all(rj == sign * lam * ri for ri, rj in zip(net.rows[i], net.rows[j], strict=True))
    if not same:
        raise Reject(f"{where}: row {j} is not {'' if sign > 0 else '-'}λ times row {i}")


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
    D.v = t1.v + [[-x for x in v] for v in t2.v]
    D.c = [x - y for x, y in zip(t1.c, t2.c, strict=True)]
    used1, used2 = set(), set()
    for s, mt in enumerate(seq(p["matching"], None, "proof.matching")):
        w = f"proof.matching[{s}]"
        keys(mt, {"theta1", "theta2", "scale", "statement"}, w)
        i, j, lam = index(mt["theta1"], n1, w), index(mt["theta2"], n2, w), F.number(mt["scale"])
        if i in used1 or j in used2 or mt["statement"] != HN:
            raise Reject(f"{w}: neurons matched twice, or the step does not cite {HN!r}")
        used1.add(i)
        used2.add(j)
        proportional(D, i, n1 + j, lam, 1, w)
        if any(x * lam != y for x, y in zip(t2.v[j], t1.v[i], strict=True)):
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
        if not is_zero(D.v[i]):
            raise Reject(f"neuron {i} is not accounted for by the pairs")
    return lin, const


def zero_matrix(lin: list | None) -> bool:
    """True for an absent (lazily built) or all-zero matrix."""
    return lin is None or all(is_zero(row) for row in lin)


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
    for t, vals, w in ((t1, values[0], "proof.values[0]"), (t2, values[1], "proof.values[1]")):
        if [F.number(y) for y in seq(vals, t.k, w)] != t.evaluate(x):
            raise Reject(f"{w} is not the exact value at the witness")
    if all(F.sign(a - b) == 0 for a, b in zip(t1.evaluate(x), t2.evaluate(x), strict=True)):
        raise Reject("the two values at the witness are equal")
    rep.checks[EVAL] += 2


def check_minimal_form(F, nets: list[Net], proof: object, rep: Report) -> None:
    """Replay moves 1–3, compare with the claimed θ_min, and check it is minimal (one sort)."""
    p = keys(proof, {"steps", "minimal"}, "proof")
    (t,) = nets
    replay_reduction(t, p["steps"], rep, "proof.steps")
    claimed = Net(F, p["minimal"], "proof.minimal")
    if (claimed.m, claimed.n, claimed.k) != (t.m, t.n, t.k) or claimed.rows != t.rows \
            or claimed.v != t.v or claimed.c != t.c:
        raise Reject("proof.minimal is not what the steps produce")
    keyed = []
    for i in range(t.n):
        r, v = t.rows[i], t.v[i]
        if is_zero(r) and is_zero(v):
            continue
        if all(F.sign(x) == 0 for x in v) or all(F.sign(x) == 0 for x in r[:-1]):
            raise Reject(f"neuron {i} of theta_min is dead or constant: not minimal")
        keyed.append(_normal(F, r, None))
    _distinct_sorted(F, keyed, "two rows of theta_min are positively proportional: not minimal")
    rep.checks["minimality (no move 1-3 applies)"] += 1


def _distinct_sorted(F, keyed: list, what: str) -> None:
    """Sort normalized keys with certified comparisons; equal neighbours mean a repeated key."""

    def cmp(u, w):
        return next((s for s in (F.sign(x - y) for x, y in zip(u, w, strict=True)) if s), 0)

    keyed.sort(key=cmp_to_key(cmp))
    if any(cmp(u, w) == 0 for u, w in zip(keyed, keyed[1:], strict=False)):
        raise Reject(what)


def _normal(F, r: list, v: list | None) -> list:
    """The neuron (or row) scaled by a positive factor so that its first nonzero entry is +-1."""
    if any(F.sign(x) for x in r):
        lead = next(x for x in r if F.sign(x))
        lam = lead if F.sign(lead) > 0 else -lead
        inv = F.inverse(lam)
        return [x * inv for x in r] + ([] if v is None else [x * lam for x in v])
    lead = next(x for x in v if F.sign(x))
    inv = F.inverse(lead if F.sign(lead) > 0 else -lead)
    return list(r) + [x * inv for x in v]


def _check_group(F, t: Net, g: object, rows_only: bool, rep: Report, where: str) -> None:
    g = keys(g, {"zero", "classes", "generators", "finite_order", "type"}, where)
    zero = [index(i, t.n, where) for i in seq(g["zero"], None, f"{where}.zero")]
    classes = [[index(i, t.n, where) for i in seq(c, None, where)] for c in seq(g["classes"], None, where)]
    if sorted(zero + [i for c in classes for i in c]) != list(range(t.n)) or any(not c for c in classes):
        raise Reject(f"{where}: zero neurons and classes do not partition the neurons")

    def vec(i):
        return t.rows[i] + ([] if rows_only else t.v[i])

    if any(not is_zero(vec(i)) for i in zero):
        raise Reject(f"{where}: a neuron listed as zero is not zero")
    keyed = []
    for c in classes:
        if any(is_zero(vec(i)) for i in c):
            raise Reject(f"{where}: a zero neuron is listed in a class")
        normal = [_normal(F, t.rows[i], None if rows_only else t.v[i]) for i in c]
        if any(x != normal[0] for x in normal):
            raise Reject(f"{where}: class {c} holds neurons that differ after positive scaling")
        keyed.append(normal[0])
    _distinct_sorted(F, keyed, f"{where}: two classes hold neurons equal after positive scaling")
    wanted = [(c[s], c[s + 1]) for c in classes for s in range(len(c) - 1)]
    gens = seq(g["generators"], len(wanted), f"{where}.generators")
    for s, (gen, (i, j)) in enumerate(zip(gens, wanted, strict=True)):
        w = f"{where}.generators[{s}]"
        keys(gen, {"swap", "scale"}, w)
        if seq(gen["swap"], 2, w) != [i, j]:
            raise Reject(f"{w}: expected the transposition of consecutive class members {i}, {j}")
        di, dj = (F.number(x) for x in seq(gen["scale"], 2, w))
        if F.sign(di) <= 0 or F.sign(dj) <= 0:
            raise Reject(f"{w}: scalings must be positive")
        # h fixes θ: d_i r_j = r_i and d_j r_i = r_j (rows), v_j = d_i v_i and v_i = d_j v_j (weights)
        ok = all(di * y == x for x, y in zip(t.rows[i], t.rows[j], strict=True))
        ok = ok and all(dj * x == y for x, y in zip(t.rows[i], t.rows[j], strict=True))
        if not rows_only:
            ok = ok and all(y == di * x and x == dj * y for x, y in zip(t.v[i], t.v[j], strict=True))
        if not ok:
            raise Reject(f"{w}: the transposition does not fix the parameter")
    order = 1
    for c in classes:
        order *= math.factorial(len(c))
    parts = [f"S_{len(c)}" for c in sorted(classes, key=len, reverse=True) if len(c) > 1]
    parts += [f"H_{len(zero)}"] if zero else []
    if not isinstance(g["finite_order"], str) or g["finite_order"] != _decimal_text(order) \
            or g["type"] != (" × ".join(parts) or "1"):
        raise Reject(f"{where}: finite_order or type is not the one the classes give")
    rep.checks["Theorem 2 (" + ("rows" if rows_only else "neurons") + "): generator fixes theta"] += len(wanted)
    rep.checks["Theorem 2: classes are exactly the H_1-orbit classes"] += 1


def _decimal_text(n: int) -> str:
    """n ≥ 0 in decimal, of any size (Python's int-to-text conversion stops at 4,300 digits): split in halves."""
    if n < 10**4000:
        return str(n)
    k = n.bit_length() * 30103 // 200000  # about half its digits
    high, low = divmod(n, 10**k)
    return _decimal_text(high) + _decimal_text(low).rjust(k, "0")


def check_stabilizer(F, nets: list[Net], proof: object, rep: Report) -> None:
    """Theorem 2 for θ and for (A, b)."""
    p = keys(proof, {"theta", "rows", "statement"}, "proof")
    if p["statement"] != "Theorem 2":
        raise Reject("proof must cite 'Theorem 2'")
    _check_group(F, nets[0], p["theta"], False, rep, "proof.theta")
    _check_group(F, nets[0], p["rows"], True, rep, "proof.rows")


def _clone(t: Net) -> Net:
    c = Net.__new__(Net)
    c.F, c.m, c.n, c.k = t.F, t.m, t.n, t.k
    c.rows, c.v, c.c = [list(r) for r in t.rows], [list(v) for v in t.v], list(t.c)
    return c


def _orbit_invariant(F, t: Net) -> tuple[int, list]:
    """The multiset of positively normalized neurons (sorted), and the number of zero neurons."""
    keyed = [_normal(F, r, v) for r, v in zip(t.rows, t.v, strict=True) if not (is_zero(r) and is_zero(v))]

    def cmp(u, w):
        return next((s for s in (F.sign(x - y) for x, y in zip(u, w, strict=True)) if s), 0)

    return t.n - len(keyed), sorted(keyed, key=cmp_to_key(cmp)), cmp


def check_not_identifiable(F, nets: list[Net], proof: object, rep: Report) -> None:
    """Corollary 9: θ' equivalent to θ (replayed) and outside its H_n-orbit (normalized neurons differ)."""
    p = keys(proof, {"counterexample", "equivalence", "statement"}, "proof")
    (t,) = nets
    other = Net(F, p["counterexample"], "proof.counterexample")
    if (other.m, other.n, other.k) != (t.m, t.n, t.k) or p["statement"] != "Corollary 9":
        raise Reject("the counterexample must lie in the same Omega(m,n,k); the proof must cite 'Corollary 9'")
    (z1, s1, cmp), (z2, s2, _) = _orbit_invariant(F, t), _orbit_invariant(F, other)
    if z1 == z2 and all(cmp(u, w) == 0 for u, w in zip(s1, s2, strict=True)):
        raise Reject("the counterexample has the same normalized neurons: it may lie in the orbit")
    rep.checks["orbit separation: the multisets of normalized neurons differ"] += 1
    check_equivalent(F, [_clone(t), _clone(other)], p["equivalence"], rep)


KINDS = {"equivalent": (2, check_equivalent), "not_equivalent": (2, check_not_equivalent),
         "minimal_form": (1, check_minimal_form), "stabilizer": (1, check_stabilizer),
         "affine": (1, check_affine), "not_affine": (1, check_not_affine),
         "identifiable": (1, lambda F, nets, proof, rep: _theorem1().check_identifiable(F, nets, proof, rep)),
         "not_identifiable": (1, check_not_identifiable),
         "distance_bound": (2, lambda F, nets, proof, rep: _distance().check_distance(F, nets, proof, rep)),
         "critical_point": (0, lambda F, nets, proof, rep: _landscape().check_box(proof, rep, keys, seq)),
         "hessian_inertia": (0, lambda F, nets, proof, rep: _landscape().check_inertia(proof, rep, keys, seq)),
         "added_neuron": (0, lambda F, nets, proof, rep: _added_neuron().check_added_neuron(proof, rep, keys, seq)),
         "wide_critical_point": (0, lambda F, nets, proof, rep: _wide().check_wide(proof, rep, keys, seq))}


def _distance():
    """The distance replay (its own module)."""
    from certsym_check import distance

    return distance


def _theorem1():
    """The Theorem 1 replay (its own module: three certificate forms)."""
    from certsym_check import theorem1

    return theorem1


def _added_neuron():
    """The added-neuron replay (over-parameterization: its own module, on top of the landscape replay)."""
    from certsym_check import added_neuron

    return added_neuron


def _wide():
    """The replay of critical points on M(n, k) under a permutation group (its own module)."""
    from certsym_check import wide

    return wide


def _landscape():
    """The landscape replay, imported only for its kinds (it needs mpmath)."""
    from certsym_check import landscape

    return landscape


def _record(r: object, i: int) -> dict:
    """An "inputs" entry: embedded parameters, or a model file referenced by SHA-256, shape and tensor names."""
    where = f"inputs[{i}]"
    if isinstance(r, dict) and "parameters" not in r and "shape" in r:
        rec = keys(r, {"name", "sha256", "atoms", "model", "shape"}, where)
    else:
        rec = keys(r, {"name", "sha256", "atoms", "parameters"} | ({"model"} if isinstance(r, dict) and "model" in r
                                                                    else set()), where)
    if not isinstance(rec["name"], str) or not isinstance(rec["sha256"], str) or not _SHA256.fullmatch(rec["sha256"]):
        raise Reject(f"{where}: name must be a string and sha256 64 lowercase hex digits")
    return rec


def check_certificate(doc: object, files: list | None = None) -> Report:
    """Replay one certificate; ``files`` are the input files (``InputFile``, or their bytes) when they are to be
    bound. Any failure inside the replay is a rejection of this certificate, never an exception."""
    rep = Report()
    try:
        with metered() as meter:
            try:
                _replay(doc, None if files is None else [f if isinstance(f, InputFile) else InputFile(f)
                                                         for f in files], rep)
            finally:
                rep.work = meter.used
        rep.valid = True
    except WrongInputs as exc:
        rep.reason, rep.cannot_check, rep.usage = str(exc), True, True
    except CannotCheck as exc:
        rep.reason, rep.cannot_check = str(exc), True
    except Reject as exc:
        rep.reason = str(exc)
    except RecursionError:
        rep.reason = "malformed certificate (nested too deeply)"
    except MemoryError:
        rep.reason = "the certificate needs more memory than the checker allows"
    except Exception as exc:  # noqa: BLE001 - whatever went wrong, this certificate is not accepted
        rep.reason = f"malformed certificate ({type(exc).__name__})"
    if not rep.valid:
        rep.bound.clear()
        rep.facts.clear()
    return rep


def _replay(doc: object, files: list[InputFile] | None, rep: Report) -> None:
    d = keys(doc, {"format", "version", "kind", "claim", "field", "inputs", "proof"}, "certificate")
    if d["format"] != FORMAT or type(d["version"]) is not int or d["version"] != VERSION:
        raise Reject(f"unsupported format/version {d['format']!r} {d['version']!r} (need {VERSION})")
    if not isinstance(d["kind"], str) or d["kind"] not in KINDS:
        raise Reject(f"unknown kind {str(d['kind'])[:60]!r}")
    rep.kind = d["kind"]
    if d["claim"] != CLAIMS[rep.kind]:
        raise Reject("the claim does not match the kind")
    F = make_field(d["field"])
    count, verify = KINDS[rep.kind]
    inputs = seq(d["inputs"], count, "inputs")
    records = [_record(r, i) for i, r in enumerate(inputs)]
    if files is not None and len(files) != count:
        raise WrongInputs(f"{len(files)} input file{'s' if len(files) != 1 else ''} given; the certificate has "
                          f"{count} input{'s' if count != 1 else ''} (give them with --inputs, in its order)")
    referenced = ["parameters" not in r for r in records]
    if any(referenced):
        if rep.kind not in ("equivalent", "not_equivalent", "distance_bound") or not isinstance(F, QQ):
            raise Reject("inputs referenced by SHA-256 only are accepted in 'equivalent', 'not_equivalent' and "
                         "'distance_bound' certificates over QQ")
        if files is None:
            raise CannotCheck("the certificate references its input files by SHA-256 without embedding them: give "
                              "them with --inputs")
        if any(r["atoms"] != [] for r in records):
            raise Reject("a referenced model file has no atoms")
    nets = [model_net(F, r, files[i], f"inputs[{i}]", rep) if referenced[i] else Net(F, r["parameters"], f"inputs[{i}]")
            for i, r in enumerate(records)]
    readers = [Reader(F, r["atoms"], f"inputs[{i}]") for i, r in enumerate(records)]  # verifies atoms
    if files is not None:
        for i, (rec, file, t) in enumerate(zip(records, files, nets, strict=True)):
            if referenced[i]:
                continue
            expected = [x for r in t.rows for x in r[:-1]] + [r[-1] for r in t.rows]
            expected += [v[j] for j in range(t.k) for v in t.v] + t.c
            bound = bind(rec, file, (t.m, t.n, t.k), expected, readers[i], f"inputs[{i}]")
            rep.bound.insert(i, f"inputs[{i}] {rec['name']} (sha256 {rec['sha256'][:16]}…, equal to the embedded "
                                f"parameters): {bound}")
    elif count:
        rep.bound.append("inputs not bound to files (embedded parameters only): the names and SHA-256 in the "
                         "certificate were not compared with any file")
    verify(F, nets, d["proof"], rep)
