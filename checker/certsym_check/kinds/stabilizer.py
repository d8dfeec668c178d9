"""``stabilizer`` (Theorem 2): the classes of neurons identical up to H_1, the zero neurons and the generators
recomputed from the normal forms and compared with the certificate's. Cost: linear plus a sort."""

from __future__ import annotations

import math

from certsym_check.core import (
    Net,
    Report,
    distinct_sorted,
    index,
    is_zero,
    keys,
    normal_form,
    seq,
)
from certsym_check.errors import Reject


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
        normal = [normal_form(F, t.rows[i], None if rows_only else t.v[i]) for i in c]
        if any(x != normal[0] for x in normal):
            raise Reject(f"{where}: class {c} holds neurons that differ after positive scaling")
        keyed.append(normal[0])
    distinct_sorted(F, keyed, f"{where}: two classes hold neurons equal after positive scaling")
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
