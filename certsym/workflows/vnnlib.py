"""A VNN-LIB property answered as written (docs/FORMATS.md, "VNN-LIB"; MATH.md Part IV, VNN-LIB properties): its
asserts describe a counterexample, so the answer is **sat** (an exact counterexample), **unsat** (the property
holds, with a certificate), or **unknown** (with the reason).

- sat: candidate inputs are searched in floats in every box (random points, the box's centre and corners, then a
  shrinking local search on the best disjunct's least atom) and every candidate is checked exactly: it must lie in
  the box and make every atom of one disjunct true at the networks' exact outputs, strict and non-strict apart.
- unsat, for two networks f, g: an atom Σ_j s_j (Y_g[j] − Y_f[j]) + c ≥ 0 (> 0) is false wherever
  ‖f − g‖∞ ≤ U with Σ|s_j| U + c < 0 (≤ 0), so a certified distance bound U on a box refutes it there; each box's
  U comes from ``certsym.decide.deep_distance`` with ε the least threshold the disjuncts need, and every disjunct of
  the output part must have such an atom. Other atoms (one network's outputs alone) are answered by sat only.

Cost: the search's float passes (POINTS points and LOCAL_STEPS steps a box) and exact evaluations of the best
candidates, plus a distance search a box within the deadline.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from flint import fmpq

from certsym.certify import InputRecord, replay_failure
from certsym.certify.vnnlib import spec_json, vnnlib_sat_certificate, vnnlib_unsat_certificate
from certsym.core.decision import FAILS, HOLDS, UNKNOWN, Decision
from certsym.core.deep import LayeredNetwork, float_forward, float_layers
from certsym.decide.deadline import Deadline
from certsym.decide.deep_distance import DeepDistance, deep_distance
from certsym.decide.distance import box_text
from certsym.errors import InputError, NotReplayed
from certsym.io.vnnlib import Atom, Spec

POINTS = 4000  # random points a box, for the counterexample search
LOCAL_STEPS = 300  # steps of the local search from the best points
EXACT_CANDIDATES = 20  # candidates checked exactly a box
_OUTCOME = {"unsat": HOLDS, "sat": FAILS, "unknown": UNKNOWN}


@dataclass(eq=False)
class VnnlibAnswer(Decision):
    """``result`` "unsat" (the property holds), "sat" (``witness``, an exact counterexample, with the networks'
    exact ``outputs``) or "unknown" (``reason``); ``question`` says in words what the file asks; ``distances`` are
    the certified bounds of the boxes (unsat)."""

    result: str
    question: str
    reason: str = ""
    witness: list[fmpq] | None = None
    outputs: list[list[fmpq]] | None = None
    distances: list[DeepDistance] = field(default_factory=list)
    _write: Callable[[], dict] | None = field(default=None, repr=False)

    @property
    def outcome(self) -> str:
        return _OUTCOME[self.result]

    def certificate(self) -> dict:
        """The certificate, replayed VALID by the independent checker first; NotReplayed with the checker's reason
        when it refuses; InputError for an unknown answer. Cost: writing it and one replay."""
        if self._write is None:
            raise InputError("an unknown answer has no certificate: nothing was proved or refuted")
        doc = self._write()
        reason = replay_failure(doc, None)
        if reason is not None:
            raise NotReplayed(reason)
        return doc


def atom_text(atom: Atom, spec: Spec) -> str:
    """An atom in words, positive terms first, e.g. ``Y_g[1] − Y_f[1] > 0.05``."""
    def name(n: int, j: int) -> str:
        d = spec.networks[n]
        return f"{d.outputs}_{j}" if spec.version == "1.0" else f"{d.outputs}[{j}]"

    terms = sorted(atom.terms, key=lambda t: (t[2] < 0, t[0], t[1]))
    head = ""
    for i, (n, j, c) in enumerate(terms):
        size = "" if abs(c) == 1 else f"{decimal(abs(c))}·"
        sign = ("−" if c < 0 else "") if i == 0 else (" − " if c < 0 else " + ")
        head += f"{sign}{size}{name(n, j)}"
    return f"{head or '0'} {'>' if atom.strict else '≥'} {decimal(-atom.constant)}"


def decimal(x: fmpq) -> str:
    """x as its exact decimal when it has one (a denominator 2^a 5^b), else as a fraction."""
    q, twos, fives = int(x.q), 0, 0
    while q % 2 == 0:
        q, twos = q // 2, twos + 1
    while q % 5 == 0:
        q, fives = q // 5, fives + 1
    if q != 1:
        return str(x)
    digits = max(twos, fives)
    scaled = abs(int(x.p) * 10**digits // int(x.q))
    whole, frac = divmod(scaled, 10**digits)
    sign = "-" if x < 0 else ""
    return f"{sign}{whole}" + (f".{frac:0{digits}d}".rstrip("0") if digits else "")


def question(spec: Spec) -> str:
    """What the property asks, in words, with a note when a condition holds wherever the networks agree (a file
    asserting the safe band instead of its violation: every point where f = g is then a counterexample)."""
    boxes = " or ".join(box_text(b) for b in spec.boxes[:3]) + (f" (and {len(spec.boxes) - 3} more boxes)"
                                                                   if len(spec.boxes) > 3 else "")
    parts = [" and ".join(atom_text(a, spec) for a in conj) or "anything" for conj in spec.outputs[:6]]
    more = f", or {len(spec.outputs) - 6} more conditions" if len(spec.outputs) > 6 else ""
    text = f"is there an input in {boxes} where {'; or '.join(parts)}{more}?"
    agree = [i for i, conj in enumerate(spec.outputs) if all(_holds_where_equal(a) for a in conj)]
    if agree and len(spec.networks) == 2:
        text += (f" (note: condition {agree[0] + 1} holds wherever the two networks agree; VNN-LIB asserts describe a "
                 "counterexample, so any point where f = g answers it: the file asserts the safe band, not its "
                 "violation)")
    return text


def _holds_where_equal(atom: Atom) -> bool:
    t = threshold(atom)
    return t is not None and (t[0] < 0 or (t[0] == 0 and not t[1]))


def threshold(atom: Atom) -> tuple[fmpq, bool] | None:
    """For an atom over the difference of two networks' outputs, Σ_j s_j (Y_1[j] − Y_0[j]) + c (≥ or >) 0: (t,
    strict), the atom false wherever ‖f − g‖∞ < t (≤ t when strict); None for any other atom."""
    by: dict[int, dict[int, fmpq]] = {}
    for n, j, c in atom.terms:
        if n > 1:
            return None
        by.setdefault(j, {})[n] = c
    if not by or any(len(v) != 2 or v[0] != -v[1] for v in by.values()):
        return None
    size = sum(abs(v[1]) for v in by.values())
    return -atom.constant / size, atom.strict


def _needed(conj: list[Atom]) -> tuple[fmpq, bool] | None:
    """The weakest requirement on U that refutes one atom of the conjunction: its largest threshold (a strict
    atom's first on a tie: U ≤ t is weaker than U < t); None when no atom is a difference atom."""
    best = None
    for atom in conj:
        t = threshold(atom)
        if t is not None and (best is None or t[0] > best[0] or (t[0] == best[0] and t[1])):
            best = t
    return best


def _refuted(upper: fmpq, need: tuple[fmpq, bool]) -> bool:
    t, strict = need
    return upper <= t if strict else upper < t


def satisfied(spec: Spec, outputs: list[list[fmpq]]) -> int | None:
    """The first disjunct of the output part whose every atom holds at the exact outputs, or None."""
    for i, conj in enumerate(spec.outputs):
        if all(a.holds(outputs) for a in conj):
            return i
    return None


def _score(spec: Spec, Y: list[np.ndarray]) -> np.ndarray:
    """In floats, for each row: the best disjunct's least atom value (> 0 where the row is a counterexample)."""
    best = np.full(len(Y[0]), -np.inf)
    for conj in spec.outputs:
        least = np.full(len(Y[0]), np.inf)
        for a in conj:
            v = np.full(len(Y[0]), float(a.constant))
            for n, j, c in a.terms:
                v = v + float(c) * Y[n][:, j]
            least = np.minimum(least, v)
        best = np.maximum(best, least)
    return best


def counterexample(spec: Spec, nets: tuple[LayeredNetwork, ...], box: list, seed: int = 0,
                   floats: list | None = None) -> tuple[list[fmpq], list[list[fmpq]]] | None:
    """An exact counterexample in ``box`` (the point and the networks' exact outputs), or None when the search
    finds none (module docstring). Cost: POINTS + LOCAL_STEPS float passes and EXACT_CANDIDATES exact
    evaluations."""
    floats = floats or [float_layers(t) for t in nets]
    lo = np.array([float(a) for a, _ in box])
    hi = np.array([float(c) for _, c in box])
    rng = np.random.default_rng(seed)
    m = len(box)
    X = lo + (hi - lo) * rng.random((POINTS, m))
    corners = [lo, hi, (lo + hi) / 2]
    if m <= 10:
        corners += [np.where([(c >> q) & 1 for q in range(m)], hi, lo) for c in range(1 << m)]
    X = np.vstack([X, *corners])

    def score(P: np.ndarray) -> np.ndarray:
        return _score(spec, [float_forward(f, P, t.output_relu) for f, t in zip(floats, nets, strict=True)])

    s = score(X)
    order = np.argsort(-s)[:8]
    starts, values = X[order], s[order]
    step = (hi - lo) / 4
    for _ in range(LOCAL_STEPS):  # a shrinking random search from the best points (all at once)
        trial = np.clip(starts + step * rng.standard_normal(starts.shape), lo, hi)
        t = score(trial)
        better = t > values
        starts[better], values[better] = trial[better], t[better]
        step = step * (0.985 if not better.any() else 1.0)
    candidates = np.vstack([starts, X[np.argsort(-s)[:EXACT_CANDIDATES]]])
    for point in candidates[np.argsort(-score(candidates))][:EXACT_CANDIDATES]:
        x = [min(max(fmpq(*float(v).as_integer_ratio()), a), c) for v, (a, c) in zip(point, box, strict=True)]
        outputs = [t(x) for t in nets]
        if satisfied(spec, outputs) is not None:
            return x, outputs
    return None


def answer(spec: Spec, nets: tuple[LayeredNetwork, ...], records: tuple[InputRecord, ...], spec_record: dict,
           deadline: Deadline, seed: int = 0, progress: Callable[[str], None] | None = None) -> VnnlibAnswer:
    """The property ``spec`` over the networks it declares, in order (module docstring); ``spec_record`` is the
    property as the certificate holds it (``certify.vnnlib.spec_json``). Cost: see the module."""
    asked = question(spec)
    floats = [float_layers(t) for t in nets]
    for q, box in enumerate(spec.boxes):
        found = counterexample(spec, nets, box, seed + q, floats)
        if found is not None:
            return _sat(asked, found, spec_record, records, nets)
    needs = [_needed(conj) for conj in spec.outputs]
    if len(nets) != 2 or any(n is None for n in needs):
        which = "one network's outputs" if len(nets) == 1 else "atoms other than differences of the two " \
            "networks' outputs"
        return VnnlibAnswer("unknown", asked, f"no counterexample found; the output part has {which}, which certsym "
                            "refutes only through a certified distance bound between two networks")
    need = min(needs, key=lambda n: (n[0], not n[1]))
    if need[0] < 0 or (need[0] == 0 and not need[1]):
        return VnnlibAnswer("unknown", asked, "no counterexample found; a disjunct holds wherever the networks "
                            f"differ by less than {decimal(need[0])}, which no distance bound can refute")
    distances = []
    for q, box in enumerate(spec.boxes):
        left = len(spec.boxes) - q
        d = deep_distance(*nets, box, seed=seed + q, epsilon=need[0], deadline=deadline.share(1 / left),
                          progress=progress)
        if d.witness:
            outputs = [t(d.witness) for t in nets]
            if satisfied(spec, outputs) is not None:
                return _sat(asked, (d.witness, outputs), spec_record, records, nets)
        if not all(_refuted(d.upper, n) for n in needs):
            return VnnlibAnswer("unknown", asked, f"no counterexample found; on box {q} the certified distance bound "
                                f"U ≈ {float(d.upper):.6g} does not refute every disjunct (it needs U "
                                f"{'≤' if need[1] else '<'} {decimal(need[0])}; the search stopped at {d.stopped})",
                                distances=[*distances, d])
        distances.append(d)
    answer_ = VnnlibAnswer("unsat", asked, distances=distances)
    answer_._write = lambda: vnnlib_unsat_certificate(spec_record, distances, records, nets)
    return answer_


def _sat(asked: str, found: tuple, spec_record: dict, records, nets) -> VnnlibAnswer:
    x, outputs = found
    a = VnnlibAnswer("sat", asked, witness=x, outputs=outputs)
    a._write = lambda: vnnlib_sat_certificate(spec_record, x, records, nets)
    return a


__all__ = ["VnnlibAnswer", "answer", "atom_text", "counterexample", "question", "satisfied", "spec_json",
           "threshold"]
