"""A claim about two networks, decided on the right path: ρ(θ_a) = ρ(θ_b) exactly (Theorems 3/4), on the fast
exact path (``certsym.decide.dyadic``) when both sources are float arrays, else on the general rational path, with
the certificate either way. Cost: O(n(m + k)) plus a sort, exact."""

from __future__ import annotations

import decimal
import html
import math
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
from flint import fmpq

from certsym.certify import equivalence_certificate, fast_equivalence_certificate
from certsym.certify.deep import deep_certificate
from certsym.core.decision import FAILS, HOLDS, UNKNOWN, Decision
from certsym.decide.deadline import Deadline
from certsym.decide.deep import EQUIVALENT, NOT_EQUIVALENT, UNDECIDED, DeepVerdict
from certsym.decide.deep import decide as decide_deep
from certsym.decide.deep_dyadic import decide as decide_deep_dyadic
from certsym.decide.dyadic import decide, witness
from certsym.decide.dyadic import evaluate as evaluate_fast
from certsym.decide.equivalence import decide as decide_general
from certsym.decide.equivalence import match_columns
from certsym.decide.nearmiss import near_miss
from certsym.errors import InputError
from certsym.io.sources import Model, load, read_pair
from certsym.numbers import QQ

EMBED_LIMIT = 200_000  # weights per certificate beyond which the fast path references the files by SHA-256


@dataclass
class Equivalence(Decision):
    """The verdict on ρ(θ1) = ρ(θ2) at any depth, one type: ``status`` "equivalent", "not_equivalent" or (deep
    networks only, MATH.md Part III) "undecided" with its ``reason``; truthy iff equivalent. The evidence: counts of
    H_n matches, cross merges and antisymmetric pairs (one hidden layer), the moves D1–D4 and the aligned layers
    (deep), or a rational witness with both exact values. ``path`` says which decision ran: "fast" (dyadic),
    "general" (rational) or "deep"."""

    path: str
    verdict: Any = field(repr=False)
    records: tuple = field(repr=False)
    nets: tuple | None = field(default=None, repr=False)
    readings: tuple = ()  # (name, how its activation was read) for each source that does not define it
    distance: Any = field(default=None, repr=False)  # deep and UNDECIDED over Q: [L, U] on [0, 1]^m
    near: Any = field(default=None, repr=False)  # NOT EQUIVALENT float arrays: certsym.decide.nearmiss's summary
    box_note: str = ""  # NOT EQUIVALENT: why the witness lies outside the box it was wanted in, else ""

    @property
    def status(self) -> str:
        """"equivalent", "not_equivalent" or "undecided"."""
        if self.path == "deep":
            return self.verdict.status
        return EQUIVALENT if self.verdict.equivalent else NOT_EQUIVALENT

    @property
    def outcome(self) -> str:
        return {EQUIVALENT: HOLDS, NOT_EQUIVALENT: FAILS}.get(self.status, UNKNOWN)

    @property
    def equivalent(self) -> bool:
        return self.status == EQUIVALENT

    @property
    def undecided(self) -> bool:
        return self.status == UNDECIDED

    @property
    def reason(self) -> str:
        """Why no verdict was reached (UNDECIDED), else ""."""
        return self.verdict.reason if self.undecided else ""

    @property
    def witness(self) -> list | None:
        """The rational point where the two networks differ (NOT EQUIVALENT), else None."""
        return self.verdict.witness

    @property
    def values(self) -> tuple | None:
        """Both networks' outputs at the witness, exactly."""
        return self.verdict.values

    def __repr__(self) -> str:
        extra = f", witness in Q^{len(self.witness)}" if self.status == NOT_EQUIVALENT else \
            f", reason={_short(self.reason)!r}" if self.undecided else ""
        return f"Equivalence({self.status}, path={self.path}{extra})"

    def reading_lines(self) -> list[str]:
        """One line per source read as a ReLU network without saying so itself."""
        return [f"  {name}: {text}" for name, text in self.readings]

    def _repr_html_(self) -> str:
        """The verdict in a notebook: its text, escaped, in a <pre>."""
        return f"<pre>{html.escape(str(self))}</pre>"

    def counts(self) -> tuple[int, int, int]:
        """(neurons matched by H_n, cross merges, antisymmetric pairs): one hidden layer, EQUIVALENT."""
        self._shallow("counts()")
        return len(self.verdict.matches), len(self.verdict.merges), len(self.verdict.pairs)

    def moves(self) -> tuple[dict[str, int], dict[str, int]]:
        """For θ1 and θ2, how many of each move the reduction to θ_min made (MATH.md moves 1–3): "zero" (a dead
        neuron removed: v_i = 0, or a_i = 0 with b_i ≤ 0), "bias_shift" (a constant neuron moved into c) and
        "merge" (a neuron merged into a positively proportional one of the same network). One hidden layer."""
        self._shallow("moves()")
        return tuple({kind: sum(s.kind == kind for s in red.steps) for kind in ("zero", "bias_shift", "merge")}
                     for red in (self.verdict.red1, self.verdict.red2))

    def exact_partners(self) -> tuple[list[int], list[int]] | None:
        """The neurons (of θ1, of θ2) the fast decision matched by H_n, one to one, when neither reduction merged
        neurons (its rows are then the live neurons themselves); None otherwise. Cost O(matches)."""
        if self.path != "fast" or any(red.steps and any(s.kind == "merge" for s in red.steps)
                                      for red in (self.verdict.red1, self.verdict.red2)):
            return None
        first, second, _ = match_columns(self.verdict.matches)
        return list(first), list(second)

    def prefer_witness_in(self, box: list, seed: int = 0, where: str = "[0, 1]^m") -> bool:
        """NOT EQUIVALENT: move the witness into ``box`` (pairs of exact ends; ``where`` names it in the note)
        when a floating-point search finds a point of the box where the two differ, verified exactly; True when
        the witness lies in the box afterwards, else ``box_note`` says it does not. Equal functions on the box keep
        a witness outside it. Cost: the search (linear in the weights per point tried) and one exact evaluation of
        each network, O(n (m + k)) big-integer operations."""
        if self.equivalent:
            return False
        self.box_note = ""
        if all(lo <= x <= hi for x, (lo, hi) in zip(self.witness, box, strict=True)):
            return True
        self.box_note = f"  no point of {where} where they differ was found: the witness lies outside it"
        if self.path == "deep":  # no search inside a box for deep networks: said, not hidden
            self.box_note = f"  the witness lies outside {where}: deep networks get no search for one inside it"
            return False
        from certsym.decide.distance import search_float_witness, search_witness  # imported where a search runs

        try:
            if self.path == "fast":
                t1, t2 = self.nets
                x = search_float_witness(_float_arrays(t1), _float_arrays(t2), box, seed)
                values = (evaluate_fast(t1, x), evaluate_fast(t2, x))
            else:
                t1, t2 = self.verdict.theta1, self.verdict.theta2
                x = search_witness(t1, t2, box, seed)
                values = (t1.evaluate(x), t2.evaluate(x))
        except (OverflowError, ValueError):  # a box beyond binary64: the float search cannot run there
            self.box_note = f"  the witness lies outside {where}, whose numbers are beyond floating point: no search"
            return False
        if values[0] == values[1]:
            return False
        self.verdict.witness, self.verdict.values = x, values
        self.box_note = ""
        return True

    def to_json(self) -> dict:
        """The fields of ``certsym equiv --json``, the same whichever path decided (deep networks add
        ``status``, the widths and, when UNDECIDED, the reason and the distance on [0, 1]^m)."""
        if self.path == "deep":
            return self._deep_json()
        out: dict = {"equivalent": self.equivalent, "field": self._field().name, "path": self.path,
                     "readings": {name: text for name, text in self.readings}}
        if self.equivalent:
            out.update(dict(zip(("matched", "merges", "pairs"), self.counts(), strict=True)))
            out["moves"] = list(self.moves())
        else:
            F = self._field()
            out.update(witness=[str(t) for t in self.witness], values=[[F.pretty(y) for y in vals]
                                                                        for vals in self.values])
            if self.near is not None:
                out["near_miss"] = self.near.to_json()
        return out

    def _deep_json(self) -> dict:
        v = self.verdict
        out: dict = {"equivalent": v.equivalent if v.status != UNDECIDED else None, "status": v.status,
                     "field": v.theta1.field.name, "path": "deep", "widths": [list(v.theta1.widths),
                                                                             list(v.theta2.widths)],
                     "readings": {name: text for name, text in self.readings}}
        if v.status == EQUIVALENT and v.phases is not None:
            out.update(proof="phase splitting", nodes=len(v.phases))
        elif v.status == EQUIVALENT:
            out.update(moves=[len(r.steps) for r in v.reductions], aligned_layers=len(v.alignment))
        elif v.status == NOT_EQUIVALENT:
            F = v.theta1.field
            out.update(witness=[str(t) for t in v.witness], values=[[F.pretty(y) for y in vals] for vals in v.values])
        else:
            out.update(reason=v.reason, lines=v.lines)
            if self.distance is not None:
                out.update(distance={"box": "[0, 1]^m", "lower": str(self.distance.lower),
                                     "upper": str(self.distance.upper)})
        return out

    def _field(self):
        return QQ if self.path == "fast" else self.verdict.theta1.field

    def _shallow(self, what: str) -> None:
        if self.path == "deep":
            raise InputError(f"{what} describes a one-hidden-layer decision; a deep verdict's evidence is in "
                             ".to_json() (moves D1–D4, aligned layers)")

    def certificate(self, reference: bool | None = None) -> dict:
        """The certificate (a dict). Model files decided on the fast path are referenced by SHA-256 instead of
        embedded when ``reference`` is True, or (None) beyond EMBED_LIMIT weights. Deep networks: a
        ``deep_equivalent`` or ``deep_not_equivalent`` certificate, model files referenced the same way when the
        fast path decided (``certsym.decide.deep_dyadic``), else embedded; UNDECIDED has none (InputError)."""
        if self.path == "deep":
            weights = sum(t.weights for t in (self.verdict.theta1, self.verdict.theta2))
            embed = not reference if reference is not None else weights <= EMBED_LIMIT
            return deep_certificate(self.verdict, self.records, embed)
        if self.path == "general":
            return equivalence_certificate(self.verdict, self.records)
        size = sum(t.n * (t.m + t.k + 1) + t.k for t in self.nets)
        embed = not reference if reference is not None else size <= EMBED_LIMIT
        return fast_equivalence_certificate(self.verdict, self.nets, self.records, embed)

    def __str__(self) -> str:
        if self.path == "deep":
            head = self._deep_text() + (f"\n{self.box_note}" if self.box_note else "")
        elif self.equivalent:
            m, g, p = self.counts()
            head = (f"EQUIVALENT: ρ(θ1) = ρ(θ2) ({m} neurons matched by H_n, {g} cross merges, "
                    f"{p} antisymmetric pairs)")
            for name, moves in zip(("θ1", "θ2"), self.moves(), strict=True):
                if any(moves.values()):
                    head += f"\n  {name}: {_moves_text(moves)}"
        else:
            head = _not_equivalent_text(self) + (f"\n{self.box_note}" if self.box_note else "")
        first, *rest = head.split("\n")
        assumed = [name for name, text in self.readings if text.startswith("read as a ReLU network")]
        if assumed:  # on the verdict's own line: a reader of the headline alone sees what was assumed
            first += f"  [assuming ReLU: {', '.join(Path(n).name for n in assumed)} hold{'s' * (len(assumed) == 1)} " \
                "no activation]"
        near = self.near.lines() if self.near is not None else []
        return "\n".join([first, *rest, *self.reading_lines(), *near])

    def _shape(self) -> str:
        t1, t2 = self.verdict.theta1, self.verdict.theta2
        return f"widths {'-'.join(map(str, t1.widths))} and {'-'.join(map(str, t2.widths))}" + \
            ("" if not (t1.output_relu or t2.output_relu) else "; an output ReLU on " +
             ("both" if t1.output_relu and t2.output_relu else "theta1" if t1.output_relu else "theta2"))

    def _deep_text(self) -> str:
        v = self.verdict
        if v.status == EQUIVALENT and v.phases is not None:
            return (f"EQUIVALENT: ρ(θ1) = ρ(θ2) ({self._shape()}: by phase splitting on all of R^m, "
                    f"{v.reason.removeprefix('phase splitting: ')}, every other region empty or without interior)")
        if v.status == EQUIVALENT:
            moves = " and ".join(str(len(r.steps)) for r in v.reductions)
            aligned = f"hidden layers 1..{len(v.alignment)} aligned by H, " if v.alignment else ""
            return (f"EQUIVALENT: ρ(θ1) = ρ(θ2) ({self._shape()}: {moves} moves D1–D4, {aligned}the top blocks "
                    "equal by Theorems 3/4)")
        if v.status == NOT_EQUIVALENT:
            F = v.theta1.field
            v1, v2 = ("[" + ", ".join(_number_text(F, y) for y in vals) + "]" for vals in v.values)
            long = any(len(F.pretty(y)) > _SHORT for y in (*v.witness, *v.values[0], *v.values[1]))
            return (f"NOT EQUIVALENT at the witness x = {_point_text(F, v.witness)}: the outputs are {v1} and {v2} "
                    f"({self._shape()})" + ("; ≈ decimals, exact in --json and the certificate" if long else ""))
        head = f"UNDECIDED ({self._shape()}): {v.reason}"
        if self.distance is not None:
            d = self.distance
            head += (f"\n  certified distance on [0, 1]^m: sup ‖f1 − f2‖∞ ∈ [{float(d.lower):.6g}, "
                     f"{float(d.upper):.6g}] (certsym distance --cert writes its certificate)")
        return head


def _short(text: str, limit: int = 120) -> str:
    """``text`` cut to ``limit`` characters for a one-line repr."""
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _float_arrays(t) -> tuple:
    return tuple(np.asarray(a, dtype=np.float64) for a in (t.A, t.b, t.M, t.c))


def _moves_text(moves: dict[str, int]) -> str:
    """What a reduction did, in words: "2 dead neurons removed, 1 merged into a proportional one"."""
    words = {"zero": ("dead neuron removed", "dead neurons removed"),
             "bias_shift": ("constant neuron moved into c", "constant neurons moved into c"),
             "merge": ("neuron merged into a proportional one", "neurons merged into proportional ones")}
    return ", ".join(f"{count} {words[kind][count != 1]}" for kind, count in moves.items() if count) + \
        " before the matching"


def equivalent(a: Any, b: Any, path: str = "auto", reference: bool = False,
               seconds: float | None = None) -> Equivalence:
    """Theorems 3/4: decide ρ(θ_a) = ρ(θ_b) exactly. ``path`` "auto" takes the fast exact path
    (certsym.decide.dyadic) when both sources are float16/bfloat16/float32 arrays, "general" the rational path.
    A small NOT EQUIVALENT pair gets the general path's witness; a large one (or with ``reference``) a sparse
    witness on one hyperplane. ``seconds`` bounds the deep path's phase splitting (bounded by its node count anyway;
    past the budget the verdict is UNDECIDED and says so); one hidden layer is decided completely whatever it is.
    Cost: O(n(m + k)) plus a sort, exact."""
    if path not in ("auto", "general"):
        raise InputError("path must be 'auto' or 'general'")
    deadline = Deadline(math.inf if seconds is None else seconds)
    A, B = load(a), load(b)
    readings = tuple((x.name, x.reading) for x in (A, B) if x.reading)
    if A.is_deep or B.is_deep:
        return deep_equivalent(A, B, readings, deadline, fast=path == "auto")
    result = None
    if path == "auto" and A.arrays is not None and B.arrays is not None:
        nets = (A.dyadic(), B.dyadic())
        if None not in nets and (nets[0].m, nets[0].k) == (nets[1].m, nets[1].k):
            verdict = decide(*nets)
            small = not reference and _size(nets) <= EMBED_LIMIT
            if verdict.equivalent or not small:
                if not verdict.equivalent:
                    witness(*nets, verdict)
                result = Equivalence("fast", verdict, (A.record, B.record), nets, readings)
    if result is None:
        t1, t2, records = read_pair(A, B)
        result = Equivalence("general", decide_general(t1, t2), records, readings=readings)
    if not result.equivalent:
        _explain(result, A, B)
    return result


def _size(nets: tuple) -> int:
    """The numbers two one-hidden-layer networks hold."""
    return sum(t.n * (t.m + t.k + 1) + t.k for t in nets)


def _explain(result: Equivalence, A: Model, B: Model) -> None:
    """NOT EQUIVALENT on one hidden layer: the witness moved into [0, 1]^m when a point there differs (pairs of at
    most EMBED_LIMIT numbers: the search costs a few thousand float evaluations), and for two networks of float
    arrays the near-miss summary (``certsym.decide.nearmiss``: what differs, in words). Cost: linear in the weights
    per point tried."""
    nets = result.nets or (result.verdict.theta1, result.verdict.theta2)
    if _size(nets) <= EMBED_LIMIT:
        result.prefer_witness_in([(fmpq(0), fmpq(1))] * len(result.witness))
    elif not all(0 <= t <= 1 for t in result.witness):
        result.box_note = (f"  the witness lies outside [0, 1]^m: beyond {EMBED_LIMIT:,} numbers no search for one "
                           "inside it is made (certsym equiv --box asks for one)")
    if A.arrays is not None and B.arrays is not None and \
            all(np.asarray(a).dtype.kind == "f" for x in (A, B) for a in x.arrays):
        result.near = near_miss(A.arrays, B.arrays, result.exact_partners())



def _not_equivalent_text(verdict: Equivalence) -> str:
    """NOT EQUIVALENT with the witness: its nonzero coordinates when it is sparse, each exact value followed by a
    decimal; a witness longer than a line is left to --json and the certificate."""
    F = verdict._field()
    x = verdict.witness
    nonzero = [(q, t) for q, t in enumerate(x) if t != 0]
    point = ", ".join(f"x{q} = {t}" for q, t in nonzero) or "x = 0"
    if len(point) > 200:
        point = f"a rational point with {len(nonzero)} nonzero coordinates (see --json or the certificate)"
    elif len(nonzero) < len(x):
        point = f"the point with {point} (other coordinates 0)"
    else:
        point = f"x = ({', '.join(str(t) for t in x)})"

    def shown(vals) -> str:
        return "[" + ", ".join(F.pretty(y) + _decimal(y) for y in vals) + "]"

    v1, v2 = (shown(vals) for vals in verdict.values)
    if len(v1) + len(v2) > 400 and all(hasattr(y, "q") for vals in verdict.values for y in vals):
        v1, v2 = ("≈ [" + ", ".join(_decimal(y, 9).strip(" (≈)") for y in vals) + "]" for vals in verdict.values)
        return (f"NOT EQUIVALENT: at {point}, ρ(θ1)(x) {v1} and ρ(θ2)(x) {v2} (exact values in --json and the "
                "certificate)")
    return f"NOT EQUIVALENT: at {point}, ρ(θ1)(x) = {v1} and ρ(θ2)(x) = {v2}"


def _decimal(y, digits: int = 6) -> str:
    """" (≈ 0.123457)" for a rational that is not an integer, else ""."""
    if not hasattr(y, "q") or int(y.q) == 1:
        return "" if digits == 6 else f" (≈ {int(y.p)})"
    return f" (≈ {approx(Fraction(int(y.p), int(y.q)), digits)})"


def approx(x: Fraction, digits: int = 10) -> str:
    """x as a decimal of ``digits`` significant digits, also beyond binary64's range (1e+400). Cost O(size of x)."""
    try:
        return f"{float(x):.{digits}g}"
    except OverflowError:
        with decimal.localcontext() as ctx:
            ctx.prec, ctx.Emax, ctx.Emin = digits, decimal.MAX_EMAX, decimal.MIN_EMIN
            return f"{decimal.Decimal(x.numerator) / decimal.Decimal(x.denominator):.{digits - 1}E}"


_SHORT = 24  # characters of an exact number shown as it is; a longer rational is shown as its ≈ decimal


def _number_text(F, y) -> str:
    """A number for a message: exact when short, else (a rational) ≈ its decimal."""
    text = F.pretty(y)
    if len(text) <= _SHORT or not F.is_rational(y):
        return text
    r = F.to_rational(y)
    return f"≈{approx(Fraction(int(r.p), int(r.q)))}"


def _point_text(F, x: list) -> str:
    """A point for a message: in full when short, else its nonzero coordinates (x_q, from 1)."""
    if len(x) <= 8:
        return "[" + ", ".join(_number_text(F, t) for t in x) + "]"
    nonzero = [(q, t) for q, t in enumerate(x, 1) if t != 0]
    if not nonzero:
        return "0"
    shown = ", ".join(f"x_{q} = {_number_text(F, t)}" for q, t in nonzero[:8])
    return f"({shown}{', …' if len(nonzero) > 8 else ''}; the other coordinates 0)"


def deep_equivalent(A: Model, B: Model, readings: tuple = (), deadline: Deadline | None = None,
                    fast: bool = True) -> Equivalence:
    """MATH.md Part III on two sources, one of them deep: EQUIVALENT, NOT EQUIVALENT or UNDECIDED, exactly, the
    searches within ``deadline`` (none by default). Float16/float32 layers go to the fast path first (unless
    ``fast`` is false: ``path="general"``), ``certsym.decide.deep_dyadic``, the same steps on numpy, which hands the
    pair to the general one when it cannot decide in float32. Cost: see those modules."""
    nets = (A.dyadic_layers(), B.dyadic_layers()) if fast else (None, None)
    if None not in nets:
        verdict = decide_deep_dyadic(*nets)
        if verdict is not None:
            result = Equivalence("deep", verdict, (A.record, B.record), readings=readings)
            if verdict.status == NOT_EQUIVALENT:
                result.prefer_witness_in([(fmpq(0), fmpq(1))] * nets[0].m)
            return result
    t1, t2 = A.layered(), B.layered()
    if t1.field != t2.field:
        raise InputError("the two networks are over different number fields; give both as parameter files")
    verdict = decide_deep(t1, t2, deadline=deadline)
    distance = None
    if verdict.status == UNDECIDED and t1.field == QQ:
        from certsym.decide.deep_distance import deep_distance  # imported where an UNDECIDED pair needs it

        distance = deep_distance(t1, t2, [(fmpq(0), fmpq(1))] * t1.m, verdict=verdict)
        if distance.lower > 0:  # the distance's witness, evaluated exactly, already tells them apart
            verdict = DeepVerdict(NOT_EQUIVALENT, t1, t2, witness=distance.witness, values=distance.values)
            distance = None
    result = Equivalence("deep", verdict, (A.record, B.record), readings=readings, distance=distance)
    if verdict.status == NOT_EQUIVALENT:
        result.prefer_witness_in([(fmpq(0), fmpq(1))] * t1.m)
    return result
