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

import hashlib
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from certsym.certificate import InputRecord
from certsym.errors import InputError
from certsym.network import Network
from certsym.numbers import QQ

EMBED_LIMIT = 200_000  # weights per certificate beyond which the fast path references the files by SHA-256


@dataclass
class Model:
    """A network with where it came from: ``record`` (name, SHA-256, the model record of docs/FORMATS.md) and,
    for model files, arrays and torch modules, the four arrays W1, b1, W2, b2 (``arrays``)."""

    name: str
    record: InputRecord
    arrays: list | None = None
    path: str | None = None
    _network: Network | None = field(default=None, repr=False)
    reading: str | None = None  # how the activation was read, when the source does not define it

    @property
    def network(self) -> Network:
        """θ over its exact field (rationals for arrays: every float is the dyadic rational it denotes)."""
        if self._network is None:
            from certsym.io.models import exact

            W1, b1, W2, b2 = self.arrays
            (n, m), k = W1.shape, W2.shape[0]
            A, M = exact(W1), exact(W2)
            self._network = Network.build([M[j * n:(j + 1) * n] for j in range(k)], [A[i * m:(i + 1) * m]
                                          for i in range(n)], exact(b1), exact(b2), QQ, m)
        return self._network


def _array(x: Any) -> np.ndarray:
    if hasattr(x, "detach"):  # a torch tensor; bfloat16 widens exactly to float32
        x = x.detach().cpu()
        x = x.float() if str(x.dtype) == "torch.bfloat16" else x
        return x.numpy()
    return np.asarray(x)


READ_AS_RELU = "read as a ReLU network (the arrays hold no activation)"
_SKIPPED = {"Identity": "the identity", "Flatten": "flattens a 1-D input: the identity on it",
            "Dropout": "read as in eval mode: the identity"}


def _from_module(module: Any) -> Model:
    """A torch module read by walking it in forward order: a Sequential (nested ones flattened) of Linear, ReLU,
    Identity, Flatten and Dropout only, which must be Linear → ReLU → Linear once the identities are dropped.
    Anything else is refused, naming the module and its class: an activation other than ReLU, a network ending
    in ReLU (σ(ρ(θ)(x)) is another function), more hidden layers, a module whose forward certsym cannot see.
    Cost: one pass over the modules."""
    import torch.nn as nn

    layers: list[tuple[str, Any]] = []

    def walk(mod: Any, where: str) -> None:
        if type(mod) is nn.Sequential:
            for name, child in mod.named_children():
                walk(child, f"{where}.{name}" if where else name)
            return
        label = f"module {where or '(the root)'} ({type(mod).__name__})"
        if type(mod) in (nn.Linear, nn.ReLU):
            layers.append((label, mod))
        elif type(mod) in (nn.Identity, nn.Flatten, nn.Dropout):
            if type(mod) is nn.Flatten and (mod.start_dim, mod.end_dim) != (1, -1):
                raise InputError(f"{label}: certsym reads Flatten() over all input dimensions only")
        elif not where and not list(mod.children()):
            raise InputError(f"a {type(mod).__name__}: certsym reads a torch.nn.Sequential of Linear, ReLU, Identity, "
                             "Flatten and Dropout")
        elif not where:
            raise InputError(f"a {type(mod).__name__}: certsym cannot see its forward; it reads a torch.nn.Sequential "
                             "of Linear, ReLU, Identity, Flatten and Dropout (pass module.state_dict() to read its "
                             "tensors as a ReLU network)")
        else:
            raise InputError(f"{label}: certsym reads ReLU networks: a Sequential of Linear, ReLU, Identity, Flatten "
                             f"and Dropout; a {type(mod).__name__} computes a different function")

    walk(module, "")
    kinds = ["Linear" if isinstance(m, nn.Linear) else "ReLU" for _, m in layers]
    if kinds == ["Linear", "ReLU", "Linear", "ReLU"]:
        raise InputError(f"{layers[-1][0]}: the network ends in a ReLU, σ(ρ(θ)(x)), a different function from "
                         "ρ(θ); certsym decides networks whose last layer is Linear")
    if kinds != ["Linear", "ReLU", "Linear"]:
        raise InputError(f"a {type(module).__name__} with the layers {' → '.join(kinds) or 'none'}: certsym decides "
                         "Linear → ReLU → Linear (one hidden layer)")
    first, second = layers[0][1], layers[2][1]
    arrays = [first.weight, first.bias, second.weight, second.bias]
    return _from_arrays(f"<{type(module).__name__}>", arrays, "out-in", "a ReLU network (the module's ReLU)")


def _from_arrays(name: str, arrays: Sequence[Any], layout: str, reading: str) -> Model:
    if len(arrays) != 4 or arrays[0] is None or arrays[2] is None:
        raise InputError("expected four arrays W1, b1, W2, b2 (a bias may be None)")
    W1, b1, W2, b2 = (None if x is None else _array(x) for x in arrays)
    if layout == "in-out":
        W1, W2 = W1.T, W2.T
    b1 = np.zeros(W1.shape[0], W1.dtype) if b1 is None else b1
    b2 = np.zeros(W2.shape[0], W2.dtype) if b2 is None else b2
    digest = hashlib.sha256(b"".join(np.ascontiguousarray(a).tobytes() for a in (W1, b1, W2, b2))).hexdigest()
    return Model(name, InputRecord(name, digest), [W1, b1, W2, b2], reading=reading)


def load(source: Any, keys: str | Sequence[str | None] | None = None, layout: str = "out-in",
         state_key: str | Sequence[str] | None = None) -> Model:
    """The network a source means (docs/FORMATS.md for files): a path, four arrays, a torch module or a Model.
    ``keys`` names the four tensors (W1, b1, W2, b2), ``layout`` is "out-in" (torch) or "in-out" (Flax, Keras),
    ``state_key`` the state dict's place in a torch checkpoint. Cost: reading the source."""
    from certsym.io.models import Selection, default_choice, is_model_file, parse_keys, read_arrays, reading
    from certsym.io.params import file_digest, load_inputs

    if isinstance(source, Model):
        return source
    if layout not in ("out-in", "in-out"):
        raise InputError("layout must be 'out-in' or 'in-out'")
    if hasattr(source, "state_dict") and callable(source.state_dict):  # a torch.nn.Module
        if keys is not None or layout != "out-in":
            raise InputError("a torch module is read by walking its layers; keys= and layout= apply to state dicts "
                             "and files (pass module.state_dict() to choose tensors by name)")
        return _from_module(source)
    if isinstance(source, dict):  # a state dict: tensors by name, no activation
        names = list(parse_keys(keys)) if keys else default_choice(list(source))
        if names is None:
            raise InputError(f"a state dict with the tensors {list(source)[:8]}: no default choice of W1, b1, W2, "
                             "b2 (0.weight, 0.bias, 2.weight, 2.bias); name them with keys=")
        missing = [k for k in names if k and k not in source]
        if missing:
            raise InputError(f"the state dict has no tensor {missing[0]!r}")
        return _from_arrays("<state dict>", [source[k] if k else None for k in names], layout, READ_AS_RELU)
    if isinstance(source, list | tuple):
        return _from_arrays("<arrays>", source, layout, READ_AS_RELU)
    if not isinstance(source, str | os.PathLike):
        raise InputError(f"cannot read a network from a {type(source).__name__}")
    path = str(source)
    selection = Selection(keys=parse_keys(keys) if keys else None, layout=layout,
                          state_key=tuple(state_key.split(".")) if isinstance(state_key, str) else
                          tuple(state_key) if state_key else None)
    if is_model_file(path):
        arrays, record = read_arrays(path, selection)
        return Model(path, InputRecord(path, file_digest(path), (), record), list(arrays), path,
                     reading=reading(record))
    (item,), _ = load_inputs([path])
    return Model(path, InputRecord(item.name, item.sha256, item.atoms, item.model), None, path, item.network)


def _pair(a: Any, b: Any) -> tuple[Network, Network, tuple[InputRecord, InputRecord]]:
    """Both networks over one field: parameter files with radicals are read together."""
    A, B = load(a), load(b)
    if A.arrays is None and B.arrays is None and A.path and B.path:
        from certsym.io.params import load_inputs

        loaded, _ = load_inputs([A.path, B.path])
        recs = tuple(InputRecord(x.name, x.sha256, x.atoms, x.model) for x in loaded)
        return loaded[0].network, loaded[1].network, recs
    t1, t2 = A.network, B.network
    if t1.field != t2.field:
        raise InputError("the two networks are over different number fields; give both as parameter files")
    return t1, t2, (A.record, B.record)


@dataclass
class Equivalence:
    """The verdict on ρ(θ1) = ρ(θ2) (Theorems 3/4), truthy iff equivalent, with its evidence: counts of H_n
    matches, cross merges and antisymmetric pairs, or a rational witness and both exact values."""

    equivalent: bool
    path: str
    verdict: Any = field(repr=False)
    records: tuple = field(repr=False)
    nets: tuple | None = field(default=None, repr=False)
    readings: tuple = ()  # (name, how its activation was read) for each source that does not define it

    def __bool__(self) -> bool:
        return self.equivalent

    @property
    def witness(self) -> list | None:
        """The rational point where the two networks differ (NOT EQUIVALENT), else None."""
        return self.verdict.witness

    @property
    def values(self) -> tuple | None:
        """ρ(θ1)(x), ρ(θ2)(x) at the witness, exactly."""
        return self.verdict.values

    def counts(self) -> tuple[int, int, int]:
        """(neurons matched by H_n, cross merges, antisymmetric pairs)."""
        return len(self.verdict.matches), len(self.verdict.merges), len(self.verdict.pairs)

    def to_json(self) -> dict:
        """The fields of ``certsym equiv --json``, the same whichever path decided."""
        out: dict = {"equivalent": self.equivalent, "field": self._field().name, "path": self.path,
                     "readings": {name: text for name, text in self.readings}}
        if self.equivalent:
            out.update(dict(zip(("matched", "merges", "pairs"), self.counts(), strict=True)))
        else:
            F = self._field()
            out.update(witness=[str(t) for t in self.witness], values=[[F.pretty(y) for y in vals]
                                                                        for vals in self.values])
        return out

    def _field(self):
        return QQ if self.path == "fast" else self.verdict.theta1.field

    def certificate(self, reference: bool | None = None) -> dict:
        """The certificate (a dict). Model files decided on the fast path are referenced by SHA-256 instead of
        embedded when ``reference`` is True, or (None) beyond EMBED_LIMIT weights."""
        from certsym.certificate import equivalence_certificate, fast_equivalence_certificate

        if self.path == "general":
            return equivalence_certificate(self.verdict, self.records)
        size = sum(t.n * (t.m + t.k + 1) + t.k for t in self.nets)
        embed = not reference if reference is not None else size <= EMBED_LIMIT
        return fast_equivalence_certificate(self.verdict, self.nets, self.records, embed)

    def reading_lines(self) -> list[str]:
        """One line per source read as a ReLU network without saying so itself."""
        return [f"  {name}: {text}" for name, text in self.readings]

    def __str__(self) -> str:
        if self.equivalent:
            m, g, p = self.counts()
            head = (f"EQUIVALENT: ρ(θ1) = ρ(θ2) ({m} neurons matched by H_n, {g} cross merges, "
                    f"{p} antisymmetric pairs)")
        else:
            F = self._field()
            v1, v2 = ([F.pretty(y) for y in vals] for vals in self.values)
            head = f"NOT EQUIVALENT at the witness x: ρ(θ1)(x) = {v1} and ρ(θ2)(x) = {v2}"
        return "\n".join([head, *self.reading_lines()])


def equivalent(a: Any, b: Any, path: str = "auto", reference: bool = False) -> Equivalence:
    """Theorems 3/4: decide ρ(θ_a) = ρ(θ_b) exactly. ``path`` "auto" takes the fast exact path (certsym.dyadic) when
    both sources are float16/bfloat16/float32 arrays, "general" the rational path. A small NOT EQUIVALENT pair gets
    the general path's witness; a large one (or with ``reference``) a sparse witness on one hyperplane.
    Cost: O(n(m + k)) plus a sort, exact."""
    from certsym.dyadic import DyadicNetwork, decide, witness

    if path not in ("auto", "general"):
        raise InputError("path must be 'auto' or 'general'")
    A, B = load(a), load(b)
    readings = tuple((x.name, x.reading) for x in (A, B) if x.reading)
    if path == "auto" and A.arrays is not None and B.arrays is not None:
        nets = (DyadicNetwork.from_arrays(*A.arrays), DyadicNetwork.from_arrays(*B.arrays))
        if None not in nets and (nets[0].m, nets[0].k) == (nets[1].m, nets[1].k):
            verdict = decide(*nets)
            small = not reference and sum(t.n * (t.m + t.k + 1) + t.k for t in nets) <= EMBED_LIMIT
            if verdict.equivalent or not small:
                if not verdict.equivalent:
                    witness(*nets, verdict)
                return Equivalence(verdict.equivalent, "fast", verdict, (A.record, B.record), nets, readings)
    from certsym.equivalence import decide as decide_general

    t1, t2, records = _pair(A, B)
    verdict = decide_general(t1, t2)
    return Equivalence(verdict.equivalent, "general", verdict, records, readings=readings)


def check(certificate: dict | str | os.PathLike, inputs: Sequence[str | os.PathLike] | None = None):
    """Replay a certificate (a dict, or the path of its JSON file) with the independent checker, binding it to the
    ``inputs`` files when given. Returns the checker's Report, truthy iff VALID."""
    from certsym_check import check as replay

    return replay(certificate, inputs)


def minimal(source: Any) -> Network:
    """The minimal form θ_min (moves 1–3 of MATH.md: zeroing, bias shifting, merging). Cost O(n(m + k)) + a sort."""
    from certsym.reduction import reduce

    return reduce(load(source).network).minimal


def identifiable(source: Any, max_search: int | None = None):
    """Theorem 1: is the fibre of θ exactly its H_n-orbit? The verdict (truthy iff identifiable) with its evidence."""
    from certsym.identifiability import DEFAULT_MAX_SEARCH, decide_identifiable

    return decide_identifiable(load(source).network, max_search or DEFAULT_MAX_SEARCH)


def stabilizer(source: Any, of_rows: bool = False):
    """Theorem 2: Stab_{H_n}(θ) (or of (A, b) with ``of_rows``): classes, generators, order and type."""
    from certsym.decide.stabilizer import stabilizer as stab

    return stab(load(source).network, of_rows)
