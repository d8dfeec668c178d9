"""``not_identifiable`` (Corollary 9): θ' realizes ρ(θ) (an equivalence proof replayed) and lies outside the
H_n-orbit (the multisets of normalized neurons differ). Cost: linear plus a sort."""

from __future__ import annotations

from functools import cmp_to_key

from certsym_check.core import (
    Net,
    Report,
    is_zero,
    keys,
    normal_form,
)
from certsym_check.errors import Reject
from certsym_check.kinds.equivalence import (
    check_equivalent,
)


def _clone(t: Net) -> Net:
    c = Net.__new__(Net)
    c.F, c.m, c.n, c.k = t.F, t.m, t.n, t.k
    c.rows, c.v, c.c = [list(r) for r in t.rows], [list(v) for v in t.v], list(t.c)
    return c


def _orbit_invariant(F, t: Net) -> tuple[int, list]:
    """The multiset of positively normalized neurons (sorted), and the number of zero neurons."""
    keyed = [normal_form(F, r, v) for r, v in zip(t.rows, t.v, strict=True) if not (is_zero(r) and is_zero(v))]

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
