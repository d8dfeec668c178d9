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

import os
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

from certsym.audit.pair import EMBED_LIMIT, Equivalence, equivalent
from certsym.core.deep import DeepNetwork
from certsym.core.network import Network
from certsym.core.reduction import reduce
from certsym.decide.deep import reduce as reduce_deep
from certsym.decide.deep import reduced_network
from certsym.decide.deep_distance import deep_distance
from certsym.decide.distance import distance as shallow_distance
from certsym.decide.distance import parse_box
from certsym.decide.identifiability import DEFAULT_MAX_SEARCH, decide_identifiable
from certsym.decide.stabilizer import stabilizer as stab
from certsym.errors import InputError
from certsym.io.sources import READ_AS_RELU, Model, load, read_pair
from certsym.numbers import parse_rational
from certsym_check import check as replay

__all__ = ["EMBED_LIMIT", "READ_AS_RELU", "Equivalence", "Model", "check", "distance", "equivalent", "identifiable",
           "load", "minimal", "read_pair", "stabilizer"]


def check(certificate: dict | str | os.PathLike, inputs: Sequence[str | os.PathLike] | None = None):
    """Replay a certificate (a dict, or the path of its JSON file) with the independent checker, binding it to the
    ``inputs`` files when given. Returns the checker's Report, truthy iff VALID."""
    return replay(certificate, inputs)


def minimal(source: Any) -> Network | DeepNetwork:
    """The minimal form θ_min (moves 1–3 of MATH.md: zeroing, bias shifting, merging); for a deep network the
    parameter after the moves D1–D4 of MATH.md Part III (sound, not claimed minimal). Cost O(weights) + a sort."""
    model = load(source)
    if model.is_deep:
        return reduced_network(reduce_deep(model.deep_network()))
    return reduce(model.network).minimal


def distance(a: Any, b: Any, box: Sequence[tuple[Any, Any]] | None = None, seed: int = 0):
    """Exact bounds [L, U] on sup over a box (default [0, 1]^m; pairs of exact numbers) of ‖f_a − f_b‖∞, as
    ``certsym distance`` computes them: a ``Distance`` for one-hidden-layer networks, a ``DeepDistance`` otherwise
    (``.lower``, ``.upper``, ``.witness``). Cost: linear in the weights, plus the witness search."""
    A, B = load(a), load(b)
    m = (A.deep_network() if A.is_deep else A.network).m
    ends = parse_box(None, m) if box is None else [(_exact(lo), _exact(hi)) for lo, hi in box]
    if A.is_deep or B.is_deep:
        return deep_distance(A.deep_network(), B.deep_network(), ends, seed)
    t1, t2, _ = read_pair(A, B)
    return shallow_distance(t1, t2, ends, seed)


def _exact(x: Any):
    """An exact box end: an int, a Fraction, an fmpq or an exact decimal or p/q string (a float is refused)."""
    value = parse_rational(str(x)) if isinstance(x, str | int | Fraction) or type(x).__name__ == "fmpq" else None
    if value is None:
        raise InputError(f"a box end must be an exact number (int, Fraction or a string such as '1/3'), not {x!r}")
    return value


def identifiable(source: Any, max_search: int | None = None):
    """Theorem 1: is the fibre of θ exactly its H_n-orbit? The verdict (truthy iff identifiable) with its evidence."""
    return decide_identifiable(load(source).network, max_search or DEFAULT_MAX_SEARCH)


def stabilizer(source: Any, of_rows: bool = False):
    """Theorem 2: Stab_{H_n}(θ) (or of (A, b) with ``of_rows``): classes, generators, order and type."""
    return stab(load(source).network, of_rows)
