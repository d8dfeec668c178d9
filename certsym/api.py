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
from typing import Any

from certsym.audit.pair import EMBED_LIMIT, Equivalence, equivalent
from certsym.core.network import Network
from certsym.core.reduction import reduce
from certsym.decide.identifiability import DEFAULT_MAX_SEARCH, decide_identifiable
from certsym.decide.stabilizer import stabilizer as stab
from certsym.io.sources import READ_AS_RELU, Model, load, read_pair
from certsym_check import check as replay

__all__ = ["EMBED_LIMIT", "READ_AS_RELU", "Equivalence", "Model", "check", "equivalent", "identifiable", "load",
           "minimal", "read_pair", "stabilizer"]


def check(certificate: dict | str | os.PathLike, inputs: Sequence[str | os.PathLike] | None = None):
    """Replay a certificate (a dict, or the path of its JSON file) with the independent checker, binding it to the
    ``inputs`` files when given. Returns the checker's Report, truthy iff VALID."""
    return replay(certificate, inputs)


def minimal(source: Any) -> Network:
    """The minimal form θ_min (moves 1–3 of MATH.md: zeroing, bias shifting, merging). Cost O(n(m + k)) + a sort."""
    return reduce(load(source).network).minimal


def identifiable(source: Any, max_search: int | None = None):
    """Theorem 1: is the fibre of θ exactly its H_n-orbit? The verdict (truthy iff identifiable) with its evidence."""
    return decide_identifiable(load(source).network, max_search or DEFAULT_MAX_SEARCH)


def stabilizer(source: Any, of_rows: bool = False):
    """Theorem 2: Stab_{H_n}(θ) (or of (A, b) with ``of_rows``): classes, generators, order and type."""
    return stab(load(source).network, of_rows)
