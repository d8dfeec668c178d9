"""The approximate questions about two networks, at any depth, for the API and the command line alike: the distance
sup over a box of ‖f1 − f2‖∞ (certified [L, U], with ε the verdict VERIFIED / VIOLATED / UNKNOWN) and top-1 agreement
(AGREE / DIFFER / UNKNOWN). Each is read → decided → certified here once, and returned as one result type whatever
the depth (``Distance``, ``Top1``), whose ``evidence`` is the depth's search: linear relaxations of the aligned
networks for one hidden layer (``certsym.decide.distance``, ``certsym.decide.top1``), interval differences over
halvings of the box for deep networks (``certsym.decide.deep_distance``, ``certsym.decide.deep_top1``).

The certificate is written on demand (``certificate()``) and replayed by the independent checker before it is
returned: a certificate the checker refuses raises ``NotReplayed`` with the checker's reason. A deep distance tree
asked for with ``sized=True`` is sized from the replay of its root, so that its certificate replays within the
checker's work budget. Cost: that of the search (at most ``regions`` regions, within ``deadline``), plus one replay.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from flint import fmpq

from certsym.certify import (
    deep_distance_certificate,
    deep_top1_certificate,
    distance_certificate,
    replay_failure,
    replay_share,
    top1_certificate,
)
from certsym.core.decision import FAILS, HOLDS, UNKNOWN, Decision
from certsym.decide import deep, symbolic
from certsym.decide.branch_and_bound import MAX_REGIONS
from certsym.decide.deadline import Deadline
from certsym.decide.deep_distance import deep_distance
from certsym.decide.deep_top1 import deep_top1
from certsym.decide.distance import Box, bounds_text, box_text, parse_box
from certsym.decide.distance import distance as shallow_distance
from certsym.decide.top1 import top1 as shallow_top1
from certsym.decide.top1 import top1_text
from certsym.errors import InputError, NotReplayed
from certsym.io.sources import Model, read_pair
from certsym.workflows.equivalence import EMBED_LIMIT

_DISTANCE_OUTCOME = {None: HOLDS, "verified": HOLDS, "violated": FAILS, "unknown": UNKNOWN}
_TOP1_OUTCOME = {"agree": HOLDS, "differ": FAILS, "unknown": UNKNOWN}


@dataclass(eq=False)
class _Bound(Decision):
    """What both approximate answers share: the evidence, the readings, whether the certificate embeds the
    networks, and the writer that builds the certificate for the checker to replay."""

    evidence: Any = field(repr=False)
    readings: tuple = ()  # (name, how its activation was read) for each source that does not define it
    embedded: bool = True  # the certificate embeds both networks (else it references the model files)
    depth: int = 1  # hidden layers of the deeper network
    _write: Callable[[], dict] | None = field(default=None, repr=False)
    _files: tuple | None = field(default=None, repr=False)

    @property
    def box(self) -> Box:
        return self.evidence.box

    @property
    def witness(self) -> list[fmpq] | None:
        return self.evidence.witness

    @property
    def regions(self) -> int:
        """The regions the search bounded."""
        return self.evidence.regions

    @property
    def leaves(self) -> int:
        """The regions whose bounds cover the box."""
        return self.evidence.leaves

    @property
    def stopped(self) -> str:
        """Where the search stopped: the time or region budget, the checker's bounds, a verdict, equivalence."""
        return self.evidence.stopped

    @property
    def seconds(self) -> float:
        return self.evidence.seconds

    @property
    def equivalent(self) -> bool:
        """Whether exact equivalence answered (L = U = 0, or AGREE everywhere)."""
        return self.evidence.equivalence is not None

    @property
    def reason(self) -> str:
        return f"stopped at {self.stopped}" if self.outcome == UNKNOWN else ""

    @property
    def has_certificate(self) -> bool:
        """Whether the answer has a certificate (an UNKNOWN top-1 has none)."""
        return self._write is not None

    def certificate(self) -> dict:
        """The certificate, replayed VALID by the independent checker first (bound to the model files when it
        references them). ``NotReplayed`` with the checker's reason when it refuses; InputError for an UNKNOWN
        answer, which has none. Cost: writing it and one replay."""
        if self._write is None:
            raise InputError("an UNKNOWN answer has no certificate: nothing was proved or refuted")
        doc = self._write()
        reason = replay_failure(doc, None if self.embedded else self._files)
        if reason is not None:
            raise NotReplayed(reason)
        return doc


@dataclass(eq=False, repr=False)
class Distance(_Bound):
    """sup over ``box`` of ‖f1 − f2‖∞ ∈ [``lower``, ``upper``] (exact rationals), L attained at ``witness``; with
    ``epsilon`` the ``verdict`` "verified" (U ≤ ε), "violated" (L > ε) or "unknown". ``outcome``: HOLDS for a
    verified ε or bounds alone, FAILS for a violated one, UNKNOWN otherwise."""

    @property
    def lower(self) -> fmpq:
        return self.evidence.lower

    @property
    def upper(self) -> fmpq:
        return self.evidence.upper

    @property
    def epsilon(self) -> fmpq | None:
        return self.evidence.epsilon

    @property
    def verdict(self) -> str | None:
        return self.evidence.verdict

    @property
    def ratio(self) -> float | None:
        return self.evidence.ratio

    @property
    def outcome(self) -> str:
        return _DISTANCE_OUTCOME[self.verdict]

    def __repr__(self) -> str:
        against = f", ε≈{float(self.epsilon):.6g}: {self.verdict}" if self.epsilon is not None else ""
        return (f"Distance({bounds_text(self.lower, self.upper)}, box={box_text(self.box)}, "
                f"{self.leaves} region{'s' * (self.leaves != 1)}{against})")


@dataclass(eq=False, repr=False)
class Top1(_Bound):
    """Whether both networks have the same unique largest output at every point of ``box``: ``verdict`` "agree"
    (margins certified on every leaf, or exact equivalence), "differ" (``witness``, ``outputs`` and ``classes``,
    exact) or "unknown"."""

    @property
    def verdict(self) -> str:
        return self.evidence.verdict

    @property
    def classes(self) -> tuple[int, int] | None:
        return self.evidence.classes

    @property
    def outputs(self) -> tuple[list[fmpq], list[fmpq]] | None:
        return self.evidence.outputs

    @property
    def labels(self) -> list[int]:
        """The classes the leaves certify (AGREE), sorted."""
        return self.evidence.labels

    @property
    def outcome(self) -> str:
        return _TOP1_OUTCOME[self.verdict]

    def __repr__(self) -> str:
        return top1_text("Top1", self.verdict, self.box, self.classes, self.regions, self.stopped)


def _nonempty(box: Box | None) -> Box | None:
    """The box, each of whose intervals must have lo ≤ hi (an empty box asks nothing)."""
    for q, (lo, hi) in enumerate(box or []):
        if lo > hi:
            raise InputError(f"the box's interval {q} has lo > hi ({float(lo):.17g} > {float(hi):.17g})")
    return box


def _embeds(A: Model, B: Model, nets: tuple, reference: bool) -> bool:
    """Whether a certificate embeds both networks: parameter files and in-memory sources always (the checker
    re-reads model files only), model files up to EMBED_LIMIT weights unless ``reference`` asks for references."""
    if A.path is None or B.path is None or any(x.record.model is None or x.record.model.get("format") == "nnet"
                                               for x in (A, B)):
        return True
    return not reference and sum(t.n * (t.m + t.k) for t in nets) <= EMBED_LIMIT


def _readings(A: Model, B: Model) -> tuple:
    return tuple((x.name, x.reading) for x in (A, B) if x.reading)


def _result(kind: type[_Bound], evidence: Any, A: Model, B: Model, embedded: bool, depth: int,
            write: Callable[[], dict] | None) -> _Bound:
    return kind(evidence, _readings(A, B), embedded, depth, write, (A.path, B.path))


# the share of the checker's work budget a deep distance tree is sized for, from its root's replay: a leaf costs
# about what the root does without its one-time work (the moved network, the differences, the witness), and a
# halving adds a bit to one coordinate, so the margin covers the leaves' slightly longer box numbers
_TREE_SHARE = 0.8


def _replayable_regions(root, records, nets, epsilon, regions: int | None) -> int | None:
    """The regions a deep distance tree may have so that its certificate replays within the checker's work budget:
    the root's certificate is replayed and the tree sized to _TREE_SHARE of the budget at that cost per leaf (at
    most ``regions`` when given). Cost: one replay of the root's certificate."""
    share = replay_share(deep_distance_certificate(root, records, nets, epsilon))
    leaves = 1 if share is None else max(1, int(_TREE_SHARE / max(share, 1e-9)))
    return min(2 * leaves - 1, regions) if regions is not None else 2 * leaves - 1


def distance(A: Model, B: Model, box: Box | None = None, *, seed: int = 0, epsilon: fmpq | None = None,
             deadline: Deadline, target: float = 1.1, regions: int | None = None, reference: bool = False,
             sized: bool = True, progress: Callable[[str], None] | None = None) -> Distance:
    """Exact bounds [L, U] on sup over ``box`` (default [0, 1]^m) of ‖f_A − f_B‖∞ at any depth, searched within
    ``deadline`` and ``regions`` (default MAX_REGIONS for one hidden layer, the checker's bounds for deep
    networks), until U ≤ ``target``·L or, with ``epsilon``, until U ≤ ε or L > ε. ``sized``: a deep tree is sized
    so that its certificate replays. Cost: the search's (linear in the weights per region) plus, when ``sized``,
    one replay of the root's certificate."""
    records, box = (A.record, B.record), _nonempty(box)
    if epsilon is not None and epsilon > 2**1000:
        raise InputError("ε beyond 2^1000, where the search's floating point ends: give a smaller ε")
    if A.is_deep or B.is_deep:
        nets = (A.layered(), B.layered())
        box = parse_box(None, nets[0].m) if box is None else box
        verdict = deep.decide(*nets, seed)
        asked = regions
        if sized and not verdict.equivalent and not symbolic.applies(*nets):  # a symbolic tree sizes itself
            regions = _replayable_regions(deep_distance(*nets, box, seed=seed, verdict=verdict), records, nets,
                                          epsilon, regions)
        d = deep_distance(*nets, box, seed=seed, verdict=verdict, deadline=deadline, target=target, epsilon=epsilon,
                          max_regions=regions, progress=progress)
        if d.stopped == "the region budget" and (asked is None or regions < asked):
            d.stopped = "the checker's bounds"  # the tree was sized to the checker's work budget, not to --regions
        depth = max(len(t.layers) - 1 for t in nets)
        return _result(Distance, d, A, B, True, depth, lambda: deep_distance_certificate(d, records, nets, epsilon))
    t1, t2, records = read_pair(A, B)
    box = parse_box(None, t1.m) if box is None else box
    d = shallow_distance(t1, t2, box, seed, deadline=deadline, target=target, epsilon=epsilon,
                         max_regions=MAX_REGIONS if regions is None else regions, progress=progress)
    embed = _embeds(A, B, (t1, t2), reference)
    return _result(Distance, d, A, B, embed, 1, lambda: distance_certificate(d, records, (t1, t2), embed))


def top1(A: Model, B: Model, box: Box | None = None, *, seed: int = 0, deadline: Deadline,
         regions: int | None = None, reference: bool = False,
         progress: Callable[[str], None] | None = None) -> Top1:
    """AGREE / DIFFER / UNKNOWN on whether f_A and f_B have the same unique largest output at every point of
    ``box`` (default [0, 1]^m), at any depth, within ``deadline`` and ``regions`` (defaults as for ``distance``).
    An UNKNOWN answer has no certificate. Cost: per region 2(k − 1) linear programs and exact bounds (one hidden
    layer) or symbolic margins (deep networks). A Softmax-headed file is read as its logits (the head cannot change
    the largest output)."""
    box = _nonempty(box)
    if A.is_deep or B.is_deep:
        nets = (A.logits_layered(), B.logits_layered())
        records = (A.record, B.record)
        box = parse_box(None, nets[0].m) if box is None else box
        r = deep_top1(*nets, box, seed, deadline=deadline, max_regions=regions, progress=progress)
        write = None if r.verdict == "unknown" else lambda: deep_top1_certificate(r, records, nets)
        return _result(Top1, r, A, B, True, max(len(t.layers) - 1 for t in nets), write)
    t1, t2, records = read_pair(A, B, logits=True)
    box = parse_box(None, t1.m) if box is None else box
    r = shallow_top1(t1, t2, box, seed, deadline=deadline, max_regions=MAX_REGIONS if regions is None else regions,
                     progress=progress)
    embed = _embeds(A, B, (t1, t2), reference)
    write = None if r.verdict == "unknown" else lambda: top1_certificate(r, records, (t1, t2), embed)
    return _result(Top1, r, A, B, embed, 1, write)
