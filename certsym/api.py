"""The Python API: networks from files, arrays or torch modules; exact decisions; certificates; the checker.

    >>> import certsym
    >>> v = certsym.equivalent("a.npz", "b.npz")      # truthy iff ρ(θ_a) = ρ(θ_b), decided exactly
    >>> v.certificate()                                # the certificate, a dict (json.dump it)
    >>> certsym.check(v.certificate())                 # the independent checker's report, truthy iff VALID

Every function takes a *source*: a path (parameter JSON or a model file, docs/FORMATS.md), four arrays
(W1, b1, W2, b2; a bias may be None), a state dict, a ``torch.nn.Module`` of the form Sequential(Linear, ReLU,
Linear) (other activations, an output ReLU and modules whose forward is not a Sequential are refused), or a
``Model`` from ``load``. Files, state dicts and arrays hold no activation: they are read as ReLU networks, and
every verdict says so. Decisions are those of the command line (the same paths, the same JSON fields).
"""

from __future__ import annotations

import functools
import math
import os
import re
from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Any, TypeVar

from certsym.certify import (
    affine_certificate,
    identifiability_certificate,
    replay_failure,
    stabilizer_certificate,
)
from certsym.core.canonical import Canonical, canonical_form
from certsym.core.deep import LayeredNetwork
from certsym.core.network import Network
from certsym.core.reduction import reduce
from certsym.decide.affine import AffineVerdict, decide_affine
from certsym.decide.branch_and_bound import budget
from certsym.decide.deadline import Deadline
from certsym.decide.deep import canonical_network, reduced_network
from certsym.decide.deep import reduce as reduce_deep
from certsym.decide.distance import ball as _ball
from certsym.decide.identifiability import DEFAULT_MAX_SEARCH, Fibre, decide_identifiable, describe_fibre
from certsym.decide.stabilizer import stabilizer as stab
from certsym.errors import InputError, NotReplayed
from certsym.io.sources import READ_AS_RELU, Model, read_pair
from certsym.io.sources import load as _load
from certsym.numbers import parse_rational
from certsym.workflows import bounds
from certsym.workflows.equivalence import EMBED_LIMIT, Equivalence
from certsym.workflows.equivalence import equivalent as _equivalent
from certsym.workflows.points import Points, ask
from certsym_check import check as replay

__all__ = ["EMBED_LIMIT", "READ_AS_RELU", "Equivalence", "Model", "Points", "affine", "ball", "canon", "check",
           "distance", "equivalent", "fibre", "identifiable", "load", "minimal", "points", "read_pair", "stabilizer",
           "top1"]

_T = TypeVar("_T")
# the command line's options in messages ("--keys W1,b1,W2,b2"), and what a Python caller passes instead
_OPTION = re.compile(r"--(keys|layout|state-key|max-search)[12]?\b(?: ([^\s;,()]+(?:,[^\s;,()]+)*))?")


def _python_terms(text: str) -> str:
    """``text`` with each command-line option written as the keyword argument it is in Python."""
    def keyword(match: re.Match) -> str:
        name = match[1].replace("-", "_")
        return f"{name}={match[2]!r}" if match[2] else f"{name}="
    return _OPTION.sub(keyword, text)


def _api_terms(fn: Callable[..., _T]) -> Callable[..., _T]:
    """``fn`` with its InputError messages phrased for a Python caller: "--keys A,b,M,c" becomes "keys='A,b,M,c'"."""
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> _T:
        try:
            return fn(*args, **kwargs)
        except InputError as exc:
            text = _python_terms(str(exc))
            if text == str(exc):
                raise
            raise InputError(text) from None
    return wrapper


load = _api_terms(_load)  # load(source, keys=, layout=, state_key=, activation='relu')


@_api_terms
def equivalent(a: Any, b: Any, path: str = "auto", reference: bool = False, seconds: float | None = None):
    """Theorems 3/4: decide ρ(θ_a) = ρ(θ_b) exactly. Returns an ``Equivalence`` at any depth (three-valued for
    deep networks: ``.status`` "undecided" with ``.reason``), truthy iff equivalent, with ``.certificate()``
    and, when they differ, ``.witness`` and ``.values``. ``path`` "auto" takes the fast exact path for float
    arrays, "general" the rational path. ``seconds`` (default: no limit) bounds the deep path's phase splitting:
    past it the answer is "undecided" with the reason; one hidden layer is always decided completely.
    Cost: O(n(m + k)) plus a sort, exact.

        >>> v = certsym.equivalent("a.npz", "b.npz"); bool(v), v.counts()
        (True, (6, 0, 0))
    """
    return _equivalent(a, b, path, reference, seconds)


@_api_terms
def canon(source: Any) -> Canonical:
    """The canonical form of ρ(θ) (MATH.md, "Complete classification"): a ``Canonical`` whose ``hash`` is equal
    for two one-hidden-layer networks iff they realize the same function (kinks per hyperplane, linear part,
    constant). For a deep network a ``Canonical`` too, holding the layerwise canonical form of the reduced parameter
    (MATH.md Part III, ``.layered``): its hash is an invariant of the H-orbit of the reduced parameter, not of the
    function (``.of_function`` is False). Cost O(n(m + k)) field operations plus a sort.

        >>> certsym.canon("a.npz").hash == certsym.canon("b.npz").hash
        True
    """
    model = load(source)
    if model.is_deep:
        return Canonical.of_layers(canonical_network(reduce_deep(model.layered())))
    return canonical_form(model.network)


@_api_terms
def fibre(source: Any, cap: int = 1000, max_search: int | None = None) -> Fibre:
    """The fibre of θ (MATH.md, "Fibres"), as ``certsym fibre`` describes it: for a minimal θ its zero-factor
    orbits or antiparallel configurations (at most ``cap`` listed; ``complete`` says whether that is all), for
    a non-minimal θ its free directions. Cost as ``identifiable``, times the sets listed.

        >>> f = certsym.fibre("a.json"); f.minimal, len(f.zero_factors)
        (True, 0)
    """
    if cap < 1:
        raise InputError("cap must be at least 1")
    return describe_fibre(load(source).network, cap, max_search or DEFAULT_MAX_SEARCH)


@_api_terms
def affine(source: Any) -> AffineVerdict:
    """Proposition 14: is ρ(θ) affine? The verdict (``.affine``; then ``.linear`` L and ``.constant`` C with
    ρ(θ)(x) = L x + C, else ``.points``, two points where the midpoint rule fails). Cost O(n(m + k)) plus a hash.

        >>> certsym.affine({"M": [[1, -1]], "A": [[1], [-1]], "b": [0, 0], "c": [0]}).affine
        True
    """
    model = load(source)
    v = decide_affine(model.network)
    v.attach(lambda: _replayed(affine_certificate(v, model.record)))
    return v


def check(certificate: dict | str | os.PathLike, inputs: Sequence[str | os.PathLike] | None = None):
    """Replay a certificate (a dict, or the path of its JSON file) with the independent checker, binding it to the
    ``inputs`` files when given. Returns the checker's Report, truthy iff VALID."""
    return replay(certificate, inputs)


@_api_terms
def minimal(source: Any) -> LayeredNetwork:
    """The minimal form θ_min (moves 1–3 of MATH.md: zeroing, bias shifting, merging) as a ``LayeredNetwork`` (its
    ``A``, ``b``, ``M``, ``c``, ``n`` are the one-hidden-layer view); for a deep network the parameter after the
    moves D1–D4 of MATH.md Part III (sound, not claimed minimal). Cost O(weights) + a sort."""
    model = load(source)
    if model.is_deep:
        return reduced_network(reduce_deep(model.layered()))
    return LayeredNetwork.from_shallow(reduce(model.network).minimal)


@_api_terms
def distance(a: Any, b: Any, box: Sequence[tuple[Any, Any]] | None = None, seed: int = 0, epsilon: Any = None,
             seconds: float | None = None, target: float = 1.1, regions: int | None = None) -> bounds.Distance:
    """Exact bounds [L, U] on sup over a box (default [0, 1]^m; pairs of exact numbers) of ‖f_a − f_b‖∞, as
    ``certsym distance`` computes them, at any depth: a ``Distance`` (``.lower``, ``.upper``, ``.witness``; with
    ``epsilon``, ``.verdict`` "verified", "violated" or "unknown"; ``.evidence`` the depth's search: linear
    relaxations with rational multipliers for one hidden layer, interval differences for deep networks). The search
    runs until U/L ≤ ``target``, or with ``epsilon`` until U ≤ ε or L > ε, within ``seconds`` (default 10) and
    ``regions`` (default 2000 for one hidden layer, the checker's bounds for deep networks); with ``regions`` alone
    there is no time limit, and the result depends only on the networks, the box and ``seed``.
    ``.certificate()`` gives its certificate, replayed VALID by the checker first (``NotReplayed`` with the checker's
    reason otherwise). Cost: linear in the weights per region, plus the witness search."""
    A, B = load(a), load(b)
    seconds, _ = budget(seconds, regions)
    return bounds.distance(A, B, _box(box), seed=seed, epsilon=None if epsilon is None else _exact(epsilon),
                           deadline=Deadline(seconds), target=target, regions=regions)


def _embedded(A: Model, B: Model, nets: tuple[Network, Network]) -> bool:
    """Whether a certificate embeds both networks: always for parameter files and in-memory sources, model files up
    to EMBED_LIMIT weights (beyond it they are referenced by SHA-256, as the CLI does)."""
    return A.path is None or B.path is None or sum(t.n * (t.m + t.k) for t in nets) <= EMBED_LIMIT or \
        any(m.record.model is None or m.record.model.get("format") == "nnet" for m in (A, B))


def _replayed(doc: dict, *sources: Model) -> dict:
    """``doc`` once the independent checker has replayed it VALID (bound to the model files when it references
    them); NotReplayed with the checker's reason otherwise: no certificate is given that does not replay."""
    referenced = any("parameters" not in entry for entry in doc["inputs"])
    reason = replay_failure(doc, [m.path for m in sources] if referenced and sources else None)
    if reason is not None:
        raise NotReplayed(reason)
    return doc


@_api_terms
def top1(a: Any, b: Any, box: Sequence[tuple[Any, Any]] | None = None, seed: int = 0, seconds: float | None = None,
         regions: int | None = None) -> bounds.Top1:
    """Do the two networks have the same largest output at every point of the box (default [0, 1]^m), as
    ``certsym distance --top1`` decides it, at any depth: a ``Top1`` whose ``.verdict`` is "agree" (a tree of
    per-leaf margin bounds, or exact equivalence), "differ" (``.witness``, ``.classes``, evaluated exactly) or
    "unknown" within ``seconds``. Cost: 2(k − 1) linear programs and exact bounds per region (deep networks: one
    exact interval pass per region). ``seconds`` and ``regions`` as for ``distance``; ``.certificate()`` as for
    ``distance`` (an "unknown" answer has none: InputError)."""
    A, B = load(a), load(b)
    seconds, _ = budget(seconds, regions)
    return bounds.top1(A, B, _box(box), seed=seed, deadline=Deadline(seconds), regions=regions)


@_api_terms
def points(a: Any, b: Any, X: Any, radius: Any, clip: tuple[Any, Any] | None = None, top1: bool = False,
           epsilon: Any = None, seed: int = 0, seconds: float | None = None, regions: int | None = None,
           certificates: bool = False) -> Points:
    """``certsym distance --points``: top-1 agreement (``top1=True``) or ε-equivalence (``epsilon``) on the L∞ ball
    of ``radius`` around every row of ``X`` (an array or tensor of N points, or a list of them; floats are the dyadic
    rationals they are), cut to ``clip``: a ``Points`` (truthy iff every point holds; ``.counts()``, ``.summary(r)``,
    ``.answers`` with each point's word, detail, result and, with ``certificates``, its certificate replayed VALID
    first). ``seconds`` (default 10) is shared equally among the points that remain. Cost: one search per point."""
    A, B = load(a), load(b)
    rows = X.detach().cpu().numpy() if hasattr(X, "detach") else X
    rows = rows.tolist() if hasattr(rows, "tolist") else [list(r) for r in rows]
    rows = [rows] if rows and not isinstance(rows[0], list) else rows
    if any(len(r) != A.m for r in rows):
        raise InputError(f"points of {A.m} coordinates are needed (the networks read {A.m} inputs)")
    seconds, _ = budget(seconds, regions)
    return Points("top1" if top1 else "epsilon", list(ask(
        A, B, [[_exact(t) for t in r] for r in rows], _exact(radius),
        None if clip is None else (_exact(clip[0]), _exact(clip[1])), top1=top1,
        epsilon=None if epsilon is None else _exact(epsilon), deadline=Deadline(seconds), regions=regions, seed=seed,
        certify=certificates)))


def ball(center: Any, radius: Any, clip: tuple[Any, Any] | None = None) -> list:
    """The L∞ ball of ``radius`` around ``center`` as a box for ``distance`` and ``top1``: a test point's
    neighbourhood, each interval cut to ``clip`` = (lo, hi) when given (``clip=(0, 1)`` for pixels). The center may be
    a list, a numpy array or a tensor (flattened); floats are the dyadic rationals they are, as certsym reads float
    weights, and strings such as '1/3' are exact. Cost O(m)."""
    values = center.detach().cpu().numpy() if hasattr(center, "detach") else center
    values = values.ravel().tolist() if hasattr(values, "ravel") else list(values)  # float32 widens exactly
    return _ball([_exact(x) for x in values], _exact(radius),
                 None if clip is None else (_exact(clip[0]), _exact(clip[1])))


def _box(box: Sequence[tuple[Any, Any]] | None) -> list | None:
    return None if box is None else [(_exact(lo), _exact(hi)) for lo, hi in box]


def _exact(x: Any):
    """An exact box end: an int, a Fraction, an fmpq, an exact decimal or p/q string, or a binary floating-point
    number (a Python float, a numpy floating scalar, a 0-d tensor) read as the dyadic rational it is, as certsym
    reads float weights: 0.1 is 3602879701896397/36028797018963968, not 1/10 (write '0.1' for that)."""
    if getattr(x, "ndim", None) == 0 and callable(getattr(x, "item", None)):
        x = x.item()  # a numpy scalar or a 0-d tensor: its value, as a Python number
    if isinstance(x, float):
        if not math.isfinite(x):
            raise InputError(f"a box end must be finite, not {x!r}")
        return parse_rational("{}/{}".format(*x.as_integer_ratio()))
    value = parse_rational(str(x)) if isinstance(x, str | int | Fraction) or type(x).__name__ == "fmpq" else None
    if value is None:
        raise InputError(f"a box end must be an exact number (int, Fraction, a string such as '1/3', or a float read "
                         f"as the dyadic it is), not {x!r}")
    return value


@_api_terms
def identifiable(source: Any, max_search: int | None = None):
    """Theorem 1: is the fibre of θ exactly its H_n-orbit? The verdict (truthy iff identifiable) with its evidence;
    ``.certificate()`` replayed VALID before it is returned."""
    model = load(source)
    net = model.network
    v = decide_identifiable(net, max_search or DEFAULT_MAX_SEARCH)
    embed = model.path is None or model.record.model is None or net.n * (net.m + net.k) <= EMBED_LIMIT
    v.attach(lambda: _replayed(identifiability_certificate(v, model.record, embed), model))
    return v


@_api_terms
def stabilizer(source: Any, of_rows: bool = False):
    """Theorem 2: Stab_{H_n}(θ) (or of (A, b) with ``of_rows``): classes, generators, order and type;
    ``.certificate()`` (both groups, as ``certsym stabilizer --cert`` writes it) replayed VALID first."""
    model = load(source)
    g = stab(model.network, of_rows)
    g.attach(lambda: _replayed(stabilizer_certificate(model.network, (stab(model.network, False),
                                                                      stab(model.network, True)), model.record)))
    return g
