"""A question asked around every point of a test set: top-1 agreement or ε-equivalence on the L∞ ball of a radius
around each point (cut to a clip box), one certified answer per point and the counts, "verified accuracy" in
auto_LiRPA's words. ``certsym distance --points`` and ``certsym.points`` both run it. Cost: one search per point,
each given an equal share of what is left of the time budget, and one replay per certificate kept."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from flint import fmpq

from certsym.core.decision import FAILS, HOLDS, UNKNOWN
from certsym.decide.deadline import Deadline
from certsym.decide.distance import ball
from certsym.errors import InputError, NotReplayed
from certsym.io.sources import Model
from certsym.workflows import bounds

WORDS = {"top1": {HOLDS: "AGREE", FAILS: "DIFFER", UNKNOWN: "UNKNOWN"},
         "epsilon": {HOLDS: "VERIFIED", FAILS: "VIOLATED", UNKNOWN: "UNKNOWN"}}


@dataclass
class PointAnswer:
    """One point's answer: ``outcome`` (HOLDS, FAILS or UNKNOWN), its word, a detail in words, the search's result
    (a ``bounds.Top1`` or ``bounds.Distance``) and its certificate when one was asked for and replayed."""

    index: int
    outcome: str
    word: str
    detail: str
    result: object = field(repr=False)
    certificate: dict | None = field(default=None, repr=False)


@dataclass
class Points:
    """The answers around every point and the counts; truthy iff every point holds."""

    question: str
    answers: list[PointAnswer]

    def counts(self) -> dict[str, int]:
        """{HOLDS, FAILS, UNKNOWN: how many points}."""
        out = {HOLDS: 0, FAILS: 0, UNKNOWN: 0}
        for a in self.answers:
            out[a.outcome] += 1
        return out

    def __bool__(self) -> bool:
        return all(a.outcome == HOLDS for a in self.answers)

    def summary(self, radius: object, clip: object = None) -> str:
        """"3 points, L∞ radius 0.01: 3 AGREE, 0 DIFFER, 0 UNKNOWN"."""
        c, w = self.counts(), WORDS[self.question]
        return (f"{len(self.answers)} points, L∞ radius {radius}" + (f" clipped to [{clip}]" if clip else "") +
                f": {c[HOLDS]} {w[HOLDS]}, {c[FAILS]} {w[FAILS]}, {c[UNKNOWN]} UNKNOWN")

    def __str__(self) -> str:
        return "\n".join(f"point {a.index}: {a.word}" + (f" ({a.detail})" if a.detail else "") for a in self.answers)


def ask(A: Model, B: Model, points: list[list[fmpq]], radius: fmpq, clip: tuple | None, *, top1: bool,
        epsilon: fmpq | None, deadline: Deadline, regions: int | None = None, seed: int = 0, target: float = 1.1,
        reference: bool = False, certify: bool = False) -> Iterator[PointAnswer]:
    """The answer around each point in turn (module docstring); with ``certify`` each answered point's certificate,
    replayed VALID first (a certificate that does not replay makes the point UNKNOWN, and says why)."""
    if not top1 and epsilon is None:
        raise InputError("a question per point: give top1 or epsilon")
    question = "top1" if top1 else "epsilon"
    for n, x in enumerate(points):
        common = dict(seed=seed, deadline=deadline.share(1 / (len(points) - n)), regions=regions, reference=reference)
        box = ball(x, radius, clip)
        r = bounds.top1(A, B, box, **common) if top1 else \
            bounds.distance(A, B, box, epsilon=epsilon, target=target, sized=certify, **common)
        outcome, note, doc = r.outcome, "", None
        if certify and outcome != UNKNOWN and r.has_certificate:
            try:
                doc = r.certificate()
            except NotReplayed as exc:
                outcome, note = UNKNOWN, f"the certificate does not replay ({exc.reason})"
        detail = note or (f"U ≈ {float(r.upper):.6g}" if question == "epsilon" else
                          f"classes {r.labels}" if outcome == HOLDS and not r.equivalent else
                          "f1 = f2 exactly" if outcome == HOLDS else
                          f"classes {r.classes} at an exact witness" if outcome == FAILS else r.reason)
        yield PointAnswer(n, outcome, WORDS[question][outcome], detail, r, doc)
