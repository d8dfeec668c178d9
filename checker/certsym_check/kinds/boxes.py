"""The input box of the distance and top-1 kinds, parsed by one rule, and what their replays share around it: the
box for a report line, the sizes of the numbers bounded before the work, the verdict against ε of a distance
bound. Standard library only."""

from __future__ import annotations

import itertools
from fractions import Fraction

from certsym_check.core import Net, Report, seq
from certsym_check.errors import Reject
from certsym_check.fields import rational, show

MAX_DENOMINATOR_BITS = 1 << 16  # the distinct denominators together: bounds every common denominator formed
MAX_NUMERATOR_BITS = 1 << 12  # of each box end, scaling and witness coordinate (a float64 needs at most 1,075)


def parse_box(value: object, m: int) -> list[tuple[Fraction, Fraction]]:
    """``proof.box``: m pairs [lo, hi] of rationals, lo ≤ hi."""
    box = [tuple(rational(y) for y in seq(b, 2, "proof.box[]")) for b in seq(value, m, "proof.box")]
    if any(lo > hi for lo, hi in box):
        raise Reject("proof.box: lo > hi")
    return box


def box_text(box: list) -> str:
    """The box for a report line: [lo, hi]^m, the intervals themselves up to four, else their count and widths
    (the certificate holds every end exactly)."""
    distinct = set(box)
    if len(distinct) == 1:
        lo, hi = box[0]
        return f"[{show(lo)}, {show(hi)}]^{len(box)}"
    if len(box) <= 4:
        return " x ".join(f"[{show(lo)}, {show(hi)}]" for lo, hi in box)
    widths = [hi - lo for lo, hi in box]
    return f"({len(box)} intervals in the certificate, widths {show(min(widths))} to {show(max(widths))})"


def epsilon_verdict(p: dict, lower: Fraction, upper: Fraction, rep: Report) -> None:
    """The verdict against ε, when one is stated: verified (U ≤ ε), violated (L > ε) or unknown (L ≤ ε < U)."""
    if "epsilon" not in p:
        return
    eps = rational(p["epsilon"])
    if eps < 0:
        raise Reject("proof.epsilon must be nonnegative")
    verdict = "verified" if upper <= eps else "violated" if lower > eps else "unknown"
    if p["verdict"] != verdict:
        raise Reject(f"proof.verdict must be {verdict!r} for the bounds and epsilon stated")
    text = {"verified": "VERIFIED: sup ≤ ε", "violated": "VIOLATED: ‖D(witness)‖∞ > ε",
            "unknown": "UNKNOWN: L ≤ ε < U"}[verdict]
    rep.facts.append(f"{text}, ε = {show(eps)}")


def denominators_bounded(nets: list[Net], numbers: list[Fraction]) -> None:
    """Reject before the work when the distinct denominators exceed MAX_DENOMINATOR_BITS in total: common
    denominators (and so every intermediate number) stay within that size."""
    seen: set[int] = set()
    total = 0
    for x in itertools.chain(numbers, *(itertools.chain(*t.rows, *t.v, t.c) for t in nets)):
        d = x.denominator
        if d not in seen:
            seen.add(d)
            total += d.bit_length()
            if total > MAX_DENOMINATOR_BITS:
                raise Reject(f"beyond the checker's bounds: the distinct denominators exceed {MAX_DENOMINATOR_BITS} "
                             "bits in total")


def numerators_bounded(numbers: list[Fraction], bound: int, what: str) -> None:
    """Reject before the work when one of the numbers has a numerator of more than ``bound`` bits."""
    worst = max((x.numerator.bit_length() for x in numbers), default=0)
    if worst > bound:
        raise Reject(f"beyond the checker's bounds: a numerator of {worst} bits in {what} (at most {bound})")
