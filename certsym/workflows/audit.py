"""Auditing many networks: group them by the function they realize, and certify each class.

An audit has four steps.

1. Collection (``collect_paths``): files, directories (searched recursively) and glob patterns become one list
   of files, in the order given. A sharded safetensors index stands for its shards, which are audited on their
   own only when the index cannot be read; pipes, devices and other frameworks' files are listed as unreadable.
2. Proposal (``propose``): each file is read once and reduced to a proposal hash that is EQUAL for any two files
   that realize the same function, because it is built from exact invariants of the function only: for every
   hyperplane H of the minimal form with a nonzero kink J_H = Σ_{i on H} λ_i v_i (MATH.md, "Complete
   classification"), the plane id of the normalized row (u_H, β_H) (a hash of the float32 bits of β_H and of u_H up
   to its 16th nonzero entry, their binary64 bits where float32 leaves its normal range: correctly rounded floats
   of a real vector that depends on H alone,
   ``certsym.decide.dyadic``, fact 1) and J_H computed exactly. The affine part
   (L, C) is left out. Float networks (float16/bfloat16/float32 model files) are reduced on numpy
   (``certsym.decide.dyadic.reduce``); the others (parameter files, float64 with wider values, integer weights, number
   fields) by their canonical form (``certsym.core.canonical``), which yields the same hash for the same function.
   Invariants that are not rational (number fields) enter only by their count. Different functions may share
   a hash: the hash only PROPOSES classes.
3. Decisions in blocks (``survey``): the files are cut into one contiguous block per worker, and steps 2 and 3
   run together on each block, in order. Each float network is decided exactly (``workflows.equivalence.equivalent``
   on the fast path) against the earlier float networks of its block with the same hash, which the block keeps
   in memory with their reductions; a file equal to none of them starts a class of the block. So each file is
   read, hashed and reduced once.
4. Confirmation across blocks (``decide_chunk``): in each group of equal hashes, the first file of every block
   class is decided exactly against the group's representative (a float network when there is one; the general
   decision for the others), which needs both read again. A block class that is not equivalent to it is decided
   against the next representative, or becomes one. A class is therefore exactly a class of equal functions,
   whatever the hash does. With a certificate directory, each member's decision is written as a certificate
   against the member it was decided equal to (``AuditClass.against``: the representative, or the first file of
   its block class), so that the certificates of a class form a tree rooted at its representative (model files
   decided on the fast path are referenced by SHA-256: replay with ``certsym check CERT --inputs OTHER
   MEMBER``, or a whole audit with ``certsym check --named-inputs CERTS...``). A file read again in this step
   must have the SHA-256 of its first read; one that went away or changed is listed as unreadable, and the
   members the first step decided against it are decided again.

Jobs run in this process (one worker), in local processes (``ProcessPoolExecutor``; each worker imports numpy
and certsym's readers once, and reports each file read on a queue), or on Dask (``local``/``local:N`` starts a
LocalCluster). Cost: one read, one reduction (O(n(m + k)) on numpy for float networks) and one exact decision
(O(n(m + k)) plus a sort) per file, plus, per group of equal hashes, one decision with two reads for each block
class beyond the first; more only when a hash is shared by several functions. Memory: the float networks a
block holds, at most HELD_WEIGHTS weights (a class found beyond that is not held, and its later members start
classes of their own, joined in step 4).
"""

from __future__ import annotations

import contextlib
import glob
import hashlib
import logging
import math
import multiprocessing
import os
import re
import socket
import struct
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from flint import fmpq

from certsym.certify import InputRecord, deep_certificate, equivalence_certificate
from certsym.core.canonical import canonical_form
from certsym.core.deep import LayeredNetwork
from certsym.decide import deep
from certsym.decide.dyadic import HASH_WEIGHTS, PLANE_NONZEROS, reduce
from certsym.decide.equivalence import decide
from certsym.decide.nearmiss import near_miss
from certsym.errors import InputError
from certsym.io.hub import is_index, read_index
from certsym.io.models import Selection, is_model_file
from certsym.io.params import load_inputs, write_json_atomic
from certsym.io.sources import Model, load
from certsym.numbers import DEFAULT_MAX_DIGITS
from certsym.numbers import rational_from_float as exact_float
from certsym.workflows.equivalence import equivalent

PROPOSAL_VERSION = b"certsym-audit-proposal-2"
DEEP_PROPOSAL_VERSION = b"certsym-audit-deep-proposal-1"
MAX_DEEP_PAIRS = 200  # pairs of deep classes compared for a witness after the audit
_MAGIC = re.compile(r"[*?[]")
_PARAMETER_JSON = re.compile(r'^\ufeff?\s*\{\s*"(?:M|A|b|c|shape|layers|m|output_relu)"\s*:')
_MAX_CHUNK = 16  # members per decision job: small enough for progress and balance, large enough to hide its cost
HELD_WEIGHTS = 1 << 25  # weights of the float networks a block keeps in memory to decide later files against


@dataclass(frozen=True)
class Job:
    """What every file of an audit is read with: the tensor selection of model files (a
    ``certsym.io.models.Selection``, or None for the default rule) and the numeral limit of parameter files."""

    keys: object = None
    max_digits: int = DEFAULT_MAX_DIGITS


@dataclass(frozen=True)
class Proposal:
    """One file's proposal: its hash (see the module docstring), its shape (m, n, k), whether it is a float
    network (the fast path applies), or why it could not be read (``error``)."""

    path: str
    hash: str = ""
    shape: tuple[int, int, int] = (0, 0, 0)
    fast: bool = False
    error: str = ""
    widths: tuple[int, ...] | None = None  # a deep network (or an output ReLU): (m, n_1, …, n_L, k)
    sha256: str = ""  # of the bytes read: the second step refuses a file that changed since


@dataclass
class AuditClass:
    """A class of files realizing one function: the proposal hash, the representative's shape (m, n, k), the
    members (representative included, in the order audited), per member its certificate file and the member
    that certificate shows it equal to (the representative, or an earlier member: the certificates form a tree
    rooted at the representative)."""

    hash: str
    shape: tuple[int, int, int]
    representative: str
    members: list[str]
    certificates: dict[str, str] = field(default_factory=dict)
    widths: tuple[int, ...] | None = None  # deep classes: the representative's widths (m, n_1, …, n_L, k)
    against: dict[str, str] = field(default_factory=dict)
    hidden: dict[str, int] = field(default_factory=dict)  # each member's own number of hidden units, as stored

    def to_json(self) -> dict:
        """{"hash", "shape": {"m", "n", "k"}, "members", "representative", "certificates": {member: file},
        "against": {member: the member its certificate is against}, "hidden": {member: its hidden units}}, and
        "widths" for a deep class. Cost: linear in the members."""
        m, n, k = self.shape
        return {"hash": self.hash, "shape": {"m": m, "n": n, "k": k}, "members": list(self.members),
                "representative": self.representative, "certificates": dict(self.certificates),
                "against": dict(self.against), "hidden": dict(self.hidden),
                **({"widths": list(self.widths)} if self.widths else {})}


@dataclass
class AuditResult:
    """The classes (ordered by their first member), the files that could not be read, with the reason, and the
    engine the jobs ran on."""

    classes: list[AuditClass]
    unreadable: dict[str, str]
    deep_pairs: list[dict] = field(default_factory=list)  # (``compare_deep_classes``)
    engine: str = "this process"
    near_misses: list[dict] = field(default_factory=list)  # (``near_misses``)

    def to_json(self) -> dict:
        """{"classes": [...], "unreadable": {path: reason}, "deep_pairs": [...], "engine": text,
        "near_misses": [...]}. Cost: linear in the files."""
        return {"classes": [c.to_json() for c in self.classes], "unreadable": dict(self.unreadable),
                "deep_pairs": [dict(p) for p in self.deep_pairs], "engine": self.engine,
                "near_misses": [dict(x) for x in self.near_misses]}


# -- collection ------------------------------------------------------------------------------------------------
def is_candidate(path: str) -> bool:
    """True for a file that a search (directory or glob pattern) takes: a model file by its content or suffix
    (``certsym.io.models.is_model_file``), or a ``.json`` file whose first key is one of a parameter file's
    (M, A, b, c, shape; layers, m, output_relu for the layered form), so that configuration files and
    certificates beside the models are passed over.
    Cost: a few bytes (and a zip directory) of the file."""
    if not os.path.isfile(path) or is_index(path):
        return True  # a pipe, a device or a dangling link is never opened here: the reader reports it
    if path.lower().endswith(".json"):
        try:
            with open(path, "rb") as fh:
                head = fh.read(1024).decode("utf-8", errors="replace")
        except OSError:
            return True  # the reader reports why
        return _PARAMETER_JSON.match(head) is not None
    try:
        return is_model_file(path)
    except InputError:
        return True  # another framework's file (certsym.io.foreign): listed as unreadable, with its recipe


def _walk(directory: str) -> list[str]:
    out = []
    for root, dirs, files in os.walk(directory):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        out.extend(os.path.join(root, f) for f in sorted(files) if not f.startswith(".")
                   and is_candidate(os.path.join(root, f)))
    return out


def _covered(files: Sequence[str]) -> dict[str, str]:
    """{shard: index} for the shards named by the sharded safetensors indexes among ``files`` (certsym.io.hub):
    such a shard is a part of its index's network, not a network, and is audited on its own only when the index
    turns out unreadable. Cost: the indexes' JSON."""
    out: dict[str, str] = {}
    for path in files:
        if is_index(path):
            with contextlib.suppress(InputError, OSError):  # an unreadable index stands for nothing
                for shard in read_index(path)[1]:
                    out.setdefault(os.path.normpath(os.path.join(os.path.dirname(path), shard)), path)
    return out


def collect_paths(paths: Sequence[str]) -> tuple[list[str], dict[str, str]]:
    """The files of an audit, each once, in the order given, and the arguments that name nothing ({argument:
    reason}). A file is taken as named; a directory is searched recursively (hidden entries skipped) for the
    files ``is_candidate`` accepts; an argument that names no file and holds ``*``, ``?``, ``[...]`` or ``**``
    is a glob pattern (``**`` spans directories), whose matches are taken like a directory's entries.
    Cost: one directory listing per directory and a few bytes per file found."""
    files: list[str] = []
    seen: set[str] = set()
    missing: dict[str, str] = {}

    def add(path: str) -> None:
        key = os.path.normpath(os.path.abspath(path))
        if key not in seen:
            seen.add(key)
            files.append(path)

    for arg in paths:
        if os.path.isdir(arg):
            found = _walk(arg)
            if not found:
                missing[arg] = "no model or parameter file in this directory"
        elif os.path.exists(arg):
            found = [arg]
        elif _MAGIC.search(arg):
            found = []
            for match in sorted(glob.glob(arg, recursive=True)):
                if os.path.isdir(match):
                    found.extend(_walk(match))
                elif is_candidate(match):
                    found.append(match)
            if not found:
                missing[arg] = "no model or parameter file matches this pattern"
        else:
            found = []
            missing[arg] = "no such file or directory"
        for path in found:
            add(path)
    return files, missing


# -- proposal hashes -------------------------------------------------------------------------------------------
def float32_bits(x: fmpq) -> int:
    """The bits of x rounded to float32 as IEEE division rounds (to nearest, ties to even; ±inf beyond the
    range; +0 for every result 0, as the fast path turns −0 into +0). Cost: a few integer operations."""
    p, q = int(x.p), int(x.q)
    if p == 0:
        return 0
    sign = 0x80000000 if p < 0 else 0
    p = abs(p)
    e = p.bit_length() - q.bit_length()  # then 2^(e-1) < x < 2^(e+1)
    if (p << max(0, -e)) < (q << max(0, e)):
        e -= 1  # now 2^e <= x < 2^(e+1)
    quantum = max(e, -126) - 23
    num, den = (p, q << quantum) if quantum >= 0 else (p << -quantum, q)
    m, r = divmod(num, den)
    if 2 * r > den or (2 * r == den and m & 1):
        m += 1
    if m == 0:
        return 0
    if m == 1 << 24:
        m, quantum = 1 << 23, quantum + 1
    if m < 1 << 23:
        return sign | m  # subnormal
    biased = quantum + 23 + 127
    return sign | (0x7F800000 if biased >= 255 else biased << 23 | (m - (1 << 23)))


def _binary64(x: fmpq) -> float | None:
    """x as a binary64 number when it is one exactly, else None."""
    try:
        f = int(x.p) / int(x.q)
    except OverflowError:
        return None
    return f + 0.0 if fmpq(*f.as_integer_ratio()) == x else None


class _Records:
    """The (hyperplane, J) records of one function: rows of uint64 (plane id, then the binary64 bits of each
    entry of J) when every entry of J is a binary64 number, else a text record. Either way a record is a
    function of the exact values only."""

    def __init__(self, m: int, k: int) -> None:
        self.m, self.k = m, k
        self.rows: list[np.ndarray] = []
        self.texts: list[str] = []
        self.irrational = 0

    def add_exact(self, plane: int, J: Sequence[fmpq]) -> None:
        values = [_binary64(x) for x in J]
        if None in values:
            self.texts.append(f"{plane:016x}:" + ",".join(str(x) for x in J))
        else:
            bits = np.array(values, dtype=np.float64).view(np.uint64).tolist()
            self.rows.append(np.array([[plane, *bits]], dtype=np.uint64))

    def digest(self) -> str:
        table = np.concatenate(self.rows) if self.rows else np.zeros((0, self.k + 1), dtype=np.uint64)
        if len(table):  # rows in lexicographic order; by the plane id alone when no two rows share it
            order = np.argsort(table[:, 0], kind="stable")
            ids = table[order, 0]
            if (ids[1:] == ids[:-1]).any():
                order = np.lexsort(table.T[::-1])
            table = table[order]
        h = hashlib.sha256(PROPOSAL_VERSION + f" m={self.m} k={self.k} rows={len(table)}\n".encode())
        h.update(np.ascontiguousarray(table, dtype="<u8").tobytes())
        h.update(("\n" + "\n".join(sorted(self.texts)) + f"\nirrational {self.irrational}\n").encode())
        return h.hexdigest()


def fast_proposal(net) -> str:
    """The proposal hash of a float network (a ``certsym.decide.dyadic.DyadicNetwork``): its minimal form on numpy
    (``certsym.decide.dyadic.reduce``), then per exact hyperplane with a nonzero kink the plane id (the fast path's hash
    of the float32 normalized row) and J_H = Σ λ_i v_i, exact: a product λ_i v_i of two float32 numbers is exact in
    binary64, and the few hyperplanes holding several neurons (a shared plane id) or merged neurons are summed
    in rationals. Cost: one ``reduce`` (O(n(m + k)) vectorized) plus O(n k) vectorized and O(k) rational
    operations per merged or shared hyperplane."""
    rows = reduce(net).rows
    out = _Records(net.m, net.k)
    order = np.argsort(rows.plane, kind="stable")
    planes = rows.plane[order]
    starts = np.flatnonzero(np.r_[True, planes[1:] != planes[:-1]]) if len(order) else np.zeros(0, np.int64)
    sizes = np.diff(np.r_[starts, len(order)])
    lone = np.zeros(len(rows), dtype=bool)
    lone[order[starts[sizes == 1]]] = True
    merged = np.zeros(len(rows), dtype=bool)
    merged[list(rows.vex)] = True
    single = lone & ~merged
    if single.any():  # the common case: one neuron on its hyperplane, v as stored, so J = λ v exactly in binary64
        J = rows.V[single].astype(np.float64) * rows.lam[single][:, None] + 0.0
        out.rows.append(np.column_stack([rows.plane[single], J.view(np.uint64)]))
    groups: list[list[int]] = [[i] for i in np.flatnonzero(lone & merged).tolist()]
    for start, size in zip(starts[sizes > 1].tolist(), sizes[sizes > 1].tolist(), strict=True):
        groups.extend(rows.planes(sorted(order[start:start + size].tolist())))  # a shared plane id, cut exactly
    for group in groups:
        J = [fmpq(0)] * net.k
        for i in group:
            lam = exact_float(float(rows.lam[i]))
            J = [x + lam * y for x, y in zip(J, rows.v(i), strict=True)]
        if any(x != 0 for x in J):
            out.add_exact(int(rows.plane[group[0]]), J)
    return out.digest()


def _plane_id(key: Sequence[fmpq]) -> int:
    """The fast path's plane id (``certsym.decide.dyadic._plane_ids``) of an exact normalized row (a, b): the float32
    bits of each entry of a up to its PLANE_NONZEROS-th nonzero one and of b, weighted and summed modulo 2^64; the
    binary64 bits instead when a nonzero one of them rounds to a float32 subnormal, 0 or ±inf."""
    m = len(key) - 1
    weights = HASH_WEIGHTS[np.arange(len(key)) % len(HASH_WEIGHTS)].tolist()
    nonzero = [q for q in range(m) if key[q] != 0]
    cut = nonzero[PLANE_NONZEROS - 1] + 1 if len(nonzero) >= PLANE_NONZEROS else m
    hashed = [*range(cut), m]
    bits = [float32_bits(key[q]) for q in hashed]
    if any(key[q] != 0 and (b >> 23) & 0xFF in (0, 0xFF) for q, b in zip(hashed, bits, strict=True)):
        bits = [struct.unpack("<Q", struct.pack("<d", int(key[q].p) / int(key[q].q) + 0.0))[0] for q in hashed]
    return sum(b * weights[q] for q, b in zip(hashed, bits, strict=True)) % (1 << 64)


def canonical_proposal(theta) -> str:
    """The proposal hash of a network over any field (a ``certsym.core.network.Network``), from its canonical form
    (``certsym.core.canonical``): the same hash as ``fast_proposal`` for the same function. Kinks whose hyperplane or
    J is not rational (number fields) are only counted. Cost: the canonical form (O(n(m + k)) field operations)
    plus O(m) integer operations per hyperplane."""
    can = canonical_form(theta)
    F = can.field
    out = _Records(can.m, can.k)
    for key, J in can.kinks.items():
        if all(F.is_rational(x) for x in key) and all(F.is_rational(y) for y in J):
            out.add_exact(_plane_id([F.to_rational(x) for x in key]), [F.to_rational(y) for y in J])
        else:
            out.irrational += 1
    return out.digest()


def _reason(path: str, exc: BaseException) -> str:
    text = str(exc) if isinstance(exc, InputError) else (getattr(exc, "strerror", None) or str(exc))
    return text[len(path) + 2:] if text.startswith(f"{path}: ") else text


def deep_proposal(theta: LayeredNetwork) -> str:
    """The proposal hash of a deep network (or one ending in a ReLU): the layerwise canonical form of hidden layers
    1..L−1 after the moves D1–D4 and ``canonical_proposal`` of the top block on those canonical coordinates
    (MATH.md Part III, the block lemma). Two networks the block lemma shows equivalent get the same hash; equal
    functions may get different ones (the moves are not complete at depth ≥ 2). Cost: the reduction and the
    forms (linear in the weights plus a sort per layer) and the top block's canonical form."""
    red = deep.reduce(theta)
    L, F = theta.depth, theta.field
    form = deep.canonical_form(red, L - 1)
    inputs = None if L == 1 else list(zip(form.order[-1], form.scale[-1], strict=True))
    h = hashlib.sha256(DEEP_PROPOSAL_VERSION)
    h.update(repr((theta.m, theta.k, theta.output_relu, [len(rows) for rows in form.rows])).encode())
    for rows in form.rows:
        for key in rows:
            h.update(",".join(F.to_string(x) for x in key).encode() + b";")
    h.update(canonical_proposal(deep.top_block(red, inputs)).encode())
    return h.hexdigest()


def propose(path: str, job: Job) -> Proposal:
    """Read one file (once) and compute its proposal hash: ``fast_proposal`` for float networks,
    ``canonical_proposal`` for the others, ``deep_proposal`` for deep ones. A file that cannot be read gives its
    reason instead. Cost: reading the file, plus the hash's cost."""
    return _read(path, job)[0]


def _read(path: str, job: Job) -> tuple[Proposal, Model | None]:
    """The proposal of ``propose`` and, for a float network, the Model read (its reduction cached: a decision
    against it reduces it no more)."""
    try:
        if is_model_file(path):
            model = _load(path, job)
            net = None if model.is_deep else model.dyadic()
            if net is not None:
                (n, m), k = model.arrays[0].shape, model.arrays[2].shape[0]
                return Proposal(path, fast_proposal(net), (m, n, k), True, sha256=model.record.sha256), model
            theta, digest = model.layered(), model.record.sha256
        else:
            (item,), _ = load_inputs([path], max_digits=job.max_digits, keys=job.keys, deep=True)
            theta, digest = item.network, item.sha256
        if theta.is_shallow():
            net = theta.to_shallow()
            return Proposal(path, canonical_proposal(net), (net.m, net.n, net.k), sha256=digest), None
        return Proposal(path, deep_proposal(theta), (theta.m, sum(theta.widths[1:-1]), theta.k),
                        widths=theta.widths, sha256=digest), None
    except (InputError, OSError) as exc:
        return Proposal(path, error=_reason(path, exc)), None


# -- the first step: one pass over each block of files -----------------------------------------------------------
@dataclass
class _Local:
    """A class found inside one block: its first file, the Model of that file while it is held in memory, and
    the files decided equal to it (with their certificate files, "" without a certificate directory)."""

    hash: str
    rep: str
    model: Model | None
    members: list[tuple[str, str]] = field(default_factory=list)
    unlike: list[str] = field(default_factory=list)  # the block classes it was decided different from


def survey(paths: Sequence[str], job: Job, cert_dir: str | None,
           tick: Callable[[], None] | None = None) -> tuple[list[Proposal], list[tuple[str, str, list, list]]]:
    """The first step on one block of files, in order: read each file once, compute its proposal, and decide a
    float network at once against the earlier float networks of the block with the same proposal that are held
    in memory (at most HELD_WEIGHTS weights of them), writing its certificate when it is equal to one of them;
    a file equal to none starts a class of the block. Returns the proposals and the block's classes as (hash,
    first file, [(member, certificate file)], [first files of the block classes it was decided different
    from]). ``tick`` is called after each file (in a worker process it defaults to the progress queue its
    initializer received). Cost: one read, one reduction and one proposal
    per file, and one exact decision per float network that joins a class of the block (O(n(m + k)) plus a
    sort), one more for each class of the same proposal that it is not equal to."""
    tick = tick or _worker_tick
    proposals: list[Proposal] = []
    found: list[_Local] = []
    held: dict[str, list[_Local]] = {}
    budget = HELD_WEIGHTS
    for path in paths:
        proposal, model = _read(path, job)
        home = None
        if model is not None:
            for local in held.get(proposal.hash, ()):
                verdict = equivalent(local.model, model, reference=True)
                if verdict.equivalent:
                    cert = os.path.join(cert_dir, certificate_name(path)) if cert_dir else ""
                    if cert:
                        write_json_atomic(cert, verdict.certificate(reference=True), compact=True)
                    local.members.append((path, cert))
                    home = local
                    break
        if home is None and not proposal.error:
            size = sum(a.size for a in model.arrays) if model is not None else 0
            local = _Local(proposal.hash, path, model if 0 < size <= budget else None,
                           unlike=[x.rep for x in held.get(proposal.hash, ())] if model is not None else [])
            if local.model is not None:
                budget -= size
                held.setdefault(proposal.hash, []).append(local)
            found.append(local)
        proposals.append(proposal)
        tick()
    return proposals, [(x.hash, x.rep, x.members, x.unlike) for x in found]


# -- confirmation ----------------------------------------------------------------------------------------------
def _load(path: str, job: Job):
    sel = Selection.of(job.keys)
    return load(path, keys=sel.keys, layout=sel.layout, state_key=sel.state_key, activation=sel.activation)


def decide_chunk(rep: str, rep_fast: bool, members: Sequence[tuple[str, bool, str | None]], job: Job,
                 digests: dict[str, str] | None = None) -> tuple[str, str, list[tuple[str, str, str]]]:
    """Decide each member (path, float network?, certificate file or None) against the representative ``rep``:
    (rep, why rep cannot be read or "", [(member, "equivalent" | "different" | "error" | "undecided", certificate
    file or reason)]); members are "undecided" when rep cannot be read. Two float networks are decided by
    ``workflows.equivalence.equivalent`` on the fast path and certified with a referenced certificate; any other pair is
    read into one field and decided by the general path, its certificate embedding both networks. A file whose
    SHA-256 differs from the one in ``digests`` (the first step's) changed during the audit and cannot be
    decided. Certificates are written atomically, for equivalent members only. Cost: one read of rep, and per
    member one read and one exact decision (plus the certificate)."""
    digests = digests or {}

    def unchanged(path: str, digest: str) -> None:
        if digests.get(path, digest) != digest:
            raise InputError(f"{path}: changed during the audit (its SHA-256 differs from the first read)")

    rep_model = None
    if rep_fast:
        try:
            rep_model = _load(rep, job)
            unchanged(rep, rep_model.record.sha256)
        except (InputError, OSError) as exc:
            return rep, _reason(rep, exc), [(member, "undecided", "") for member, _, _ in members]
    out: list[tuple[str, str, str]] = []
    for member, fast, cert in members:
        try:
            if rep_model is not None and fast:
                other = _load(member, job)
                unchanged(member, other.record.sha256)
                verdict = equivalent(rep_model, other, reference=True)
                same = verdict.equivalent
                if same and cert:
                    write_json_atomic(cert, verdict.certificate(reference=True), compact=True)
            else:
                loaded, _ = load_inputs([rep, member], max_digits=job.max_digits, keys=job.keys, deep=True)
                unchanged(rep, loaded[0].sha256)
                unchanged(member, loaded[1].sha256)
                theta1, theta2 = (x.network for x in loaded)
                records = tuple(InputRecord(x.name, x.sha256, x.atoms, x.model) for x in loaded)
                if theta1.is_shallow() and theta2.is_shallow():
                    verdict = decide(theta1.to_shallow(), theta2.to_shallow())
                    same = verdict.equivalent
                    if same and cert:
                        write_json_atomic(cert, equivalence_certificate(verdict, records), compact=True)
                else:
                    deep_verdict = deep.decide(theta1, theta2)
                    same = deep_verdict.equivalent
                    if same and cert:
                        write_json_atomic(cert, deep_certificate(deep_verdict, records), compact=True)
        except (InputError, OSError) as exc:
            if str(exc).startswith(f"{rep}: "):
                return rep, _reason(rep, exc), out + [(x, "undecided", "") for x, _, _ in members[len(out):]]
            out.append((member, "error", _reason(member, exc)))
            continue
        out.append((member, "equivalent" if same else "different", cert if same and cert else ""))
    return rep, "", out


# -- where the jobs run ----------------------------------------------------------------------------------------
_QUEUE = None  # a worker process's progress queue (``warm``)


def warm(queue=None) -> None:
    """The worker initializer: a worker that runs it has imported this module, and with it everything jobs need
    (numpy, the readers, the fast path), once per process, and reports progress on ``queue``. Cost: the imports,
    about a second in a fresh process, nothing in a forked one."""
    global _QUEUE
    if queue is not None:
        _QUEUE = queue


def _worker_tick() -> None:
    if _QUEUE is not None:
        _QUEUE.put(1)


def _blocks(items: list, count: int) -> list[list]:
    """``items`` cut into ``count`` contiguous blocks of nearly equal length (fewer when there are fewer items)."""
    count = max(1, min(count, len(items)))
    edges = [round(i * len(items) / count) for i in range(count + 1)]
    return [items[edges[i]:edges[i + 1]] for i in range(count)]


def _chunks(items: list, workers: int) -> list[list]:
    size = max(1, min(_MAX_CHUNK, math.ceil(len(items) / (4 * workers))))
    return [items[i:i + size] for i in range(0, len(items), size)]


def _dask_client(spec: str, workers: int):
    """A Dask client: a new LocalCluster for "local" / "local:N", else a connection to a scheduler."""
    try:
        from dask.distributed import Client, LocalCluster  # optional: the dask extra
    except ImportError:
        raise InputError("--dask needs dask.distributed (pip install 'dask[distributed]')") from None
    if spec == "local" or spec.startswith("local:"):
        count = spec[6:]
        if count and not (count.isdigit() and int(count) >= 1):
            raise InputError(f"--dask {spec}: expected 'local' or 'local:N' with N ≥ 1 workers")
        import dask  # optional: the dask extra

        # Dask starts its workers with MALLOC_TRIM_THRESHOLD_ set, which turns off glibc's adaptive mmap threshold:
        # then every array of a few MB is a fresh mmap whose pages fault in, and an audit took twice as long.
        environ = {key: value for key, value in dask.config.get("distributed.nanny.pre-spawn-environ", {}).items()
                   if key != "MALLOC_TRIM_THRESHOLD_"}
        with dask.config.set({"distributed.nanny.pre-spawn-environ": environ}):
            cluster = LocalCluster(n_workers=int(count) if count else workers, threads_per_worker=1,
                                   processes=True, dashboard_address=None, silence_logs=logging.ERROR)
        return Client(cluster), cluster
    _reachable(spec)
    try:
        return Client(spec, timeout=10), None
    except Exception as exc:  # OSError, TimeoutError, ValueError for a malformed address, ...
        text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise InputError(f"--dask {spec}: cannot reach the Dask scheduler ({text})") from None


def _reachable(address: str) -> None:
    """Fail at once on a TCP scheduler address whose port refuses connections (Dask would retry until its
    timeout)."""
    match = re.fullmatch(r"(?:tcp://)?\[?([^\[\]/]+?)\]?:(\d+)", address)
    if not match:
        return
    try:
        socket.create_connection((match[1], int(match[2])), timeout=5).close()
    except OSError as exc:
        raise InputError(f"--dask {address}: cannot reach the Dask scheduler ({exc.strerror or exc})") from None


class _Runner:
    """Runs jobs in this process, in a process pool, or on Dask; ``run`` yields results as they complete, and
    calls ``ticks(count)`` as the pool's workers report progress."""

    def __init__(self, workers: int, dask: str | None) -> None:
        self.workers, self.dask = max(1, workers), dask
        self.pool = self.client = self.cluster = self.queue = None

    def __enter__(self) -> _Runner:
        if self.dask:
            self.client, self.cluster = _dask_client(self.dask, self.workers)
            self.client.run(warm)
            self.workers = max(1, len(self.client.scheduler_info().get("workers", {})))
        elif self.workers > 1:
            context = multiprocessing.get_context()
            self.queue = context.SimpleQueue()
            self.pool = ProcessPoolExecutor(max_workers=self.workers, mp_context=context, initializer=warm,
                                            initargs=(self.queue,))
            self.pool.submit(warm).result()  # forks every worker now, while this process has no thread
        return self

    def __exit__(self, *exc) -> None:
        if self.pool is not None:
            self.pool.shutdown(wait=True, cancel_futures=True)
        if self.client is not None:
            self.client.close()
        if self.cluster is not None:
            self.cluster.close()

    def _drain(self, ticks: Callable[[int], None] | None) -> None:
        count = 0
        while not self.queue.empty():
            count += self.queue.get()
        if count and ticks is not None:
            ticks(count)

    def run(self, fn: Callable, jobs: list[tuple], ticks: Callable[[int], None] | None = None) -> Iterator:
        if self.client is not None:
            from dask.distributed import as_completed as dask_completed  # optional: the dask extra

            futures = [self.client.submit(fn, *args, pure=False) for args in jobs]
            try:
                for future in dask_completed(futures):
                    yield future.result()
            finally:
                self.client.cancel(futures)
        elif self.pool is not None:
            waiting = {self.pool.submit(fn, *args) for args in jobs}
            try:
                while waiting:
                    done, waiting = wait(waiting, timeout=0.25, return_when=FIRST_COMPLETED)
                    self._drain(ticks)
                    for future in done:
                        yield future.result()
            finally:
                for future in waiting:
                    future.cancel()
        else:
            for args in jobs:
                yield fn(*args)


def certificate_name(member: str) -> str:
    """The certificate file name of a member: its file name and a digest of its full path (unique in one
    directory). Cost: one SHA-256 of the path."""
    digest = hashlib.sha256(os.path.abspath(member).encode()).hexdigest()[:12]
    return re.sub(r"[^A-Za-z0-9._-]", "_", Path(member).name) + f"-{digest}.json"


def audit(paths: Sequence[str], job: Job | None = None, workers: int = 1, dask: str | None = None,
          cert_dir: str | None = None, progress: Callable[[str, int, int], None] | None = None) -> AuditResult:
    """Group the networks of ``paths`` (files, directories, glob patterns: ``collect_paths``) into classes of
    equal realized functions, confirmed by exact decisions (module docstring), and with ``cert_dir`` write one
    certificate per member, against the member it was decided equal to (``AuditClass.against``). ``workers``
    local processes (1: this process), or ``dask``: "local", "local:N" or a scheduler address.
    ``progress(stage, done, total)`` is called as work completes (stages "files read" and "decisions"). Prints
    nothing. Cost: one read, one reduction and at most a few exact decisions per file in the blocks, then one
    decision (two reads) per class of a block that another block's class of the same proposal is tried against
    (module docstring), spread over the workers."""
    job = job or Job()
    report = progress or (lambda stage, done, total: None)
    files, unreadable = collect_paths(paths)
    if cert_dir:  # a certificate records names as UTF-8: a name that is not cannot be certified
        for path in [f for f in files if not _utf8(f)]:
            files.remove(path)
            unreadable[path] = "the file name is not valid UTF-8, which a certificate needs to record it"
    order = {path: i for i, path in enumerate(files)}
    covered = _covered(files)
    proposals: dict[str, Proposal] = {}
    locals_: dict[str, list[tuple[str, str]]] = {}  # a block's class: its first file → [(member, certificate)]
    different: set[frozenset[str]] = set()  # pairs of block classes already decided different
    if cert_dir:
        Path(cert_dir).mkdir(parents=True, exist_ok=True)
    with _Runner(workers, dask) as runner:
        todo = [f for f in files if os.path.normpath(f) not in covered]
        read = 0

        def ticks(count: int) -> None:
            nonlocal read
            read += count
            report("files read", read, len(todo))

        in_process = runner.pool is None and runner.client is None
        engine = ("this process" if in_process else f"{runner.workers} local worker processes" if runner.pool
                  else f"Dask, {runner.workers} worker{'s' if runner.workers != 1 else ''} ({dask})")
        report("files read", 0, len(todo))
        while todo:
            jobs = [(block, job, cert_dir, (lambda: ticks(1)) if in_process else None)
                    for block in _blocks(todo, runner.workers)]
            for batch, found in runner.run(survey, jobs, ticks):
                proposals.update((p.path, p) for p in batch)
                for _, rep, members, unlike in found:
                    locals_[rep] = members
                    different.update(frozenset((rep, other)) for other in unlike)
                if not in_process:
                    read = sum(p in proposals for p in todo) - 1
                    ticks(1)
            # the shards of an index that cannot be read are audited on their own
            todo = [f for f in files if f not in proposals and proposals.get(covered.get(os.path.normpath(f), ""),
                                                                              Proposal("")).error]
            if todo:
                read = 0
                report("files read", 0, len(todo))
        files = [f for f in files if f in proposals]
        pending: dict[str, list[str]] = {}
        for path in files:
            p = proposals[path]
            if p.error:
                unreadable[path] = p.error
            elif path in locals_:
                pending.setdefault(p.hash, []).append(path)
        classes: list[AuditClass] = []
        decided = total = 0
        while any(pending.values()):
            jobs, current = [], {}
            for digest, waiting in pending.items():
                if not waiting:
                    continue
                rep = next((x for x in waiting if proposals[x].fast), waiting[0])
                cls = AuditClass(digest, proposals[rep].shape, rep, [rep], widths=proposals[rep].widths)
                _join(cls, rep, locals_[rep])
                current[rep] = (digest, cls)
                rest = [x for x in waiting if x != rep and frozenset((rep, x)) not in different]
                jobs.extend(_decision_jobs(rep, rest, proposals, job, cert_dir, runner.workers))
                pending[digest] = [x for x in waiting if x != rep and frozenset((rep, x)) in different]
            lost: set[str] = set()
            joined: dict[str, list[str]] = {}
            while jobs:
                total += sum(len(j[2]) for j in jobs)
                report("decisions", decided, total)
                again: dict[str, list[str]] = {}  # members of a block class whose first file went away
                for rep, error, results in runner.run(decide_chunk, jobs):
                    digest, cls = current[rep]
                    if error:
                        lost.add(rep)
                        unreadable[rep] = error
                    for member, status, detail in results:
                        if status == "equivalent":
                            joined.setdefault(rep, []).append(member)
                            _join(cls, rep, [(member, detail)])
                            _join(cls, member, locals_[member])
                        elif status in ("different", "undecided"):
                            pending[digest].append(member)
                        else:  # gone or changed since the first step: its block's members are decided again
                            unreadable[member] = detail
                            for other, cert in locals_.pop(member, []):
                                _discard(cert)
                                locals_[other] = []
                                again.setdefault(rep, []).append(other)
                    decided += len(results)
                    report("decisions", decided, total)
                jobs = []
                for rep, members in again.items():  # against the same representative, unless it went away too
                    if rep in lost:
                        pending[current[rep][0]].extend(members)
                    else:
                        jobs.extend(_decision_jobs(rep, members, proposals, job, cert_dir, runner.workers))
            for rep, (digest, cls) in current.items():
                if rep not in lost:
                    classes.append(cls)
                    continue
                # the representative went away: its block's members, and the block classes joined to it, are tried
                # again (these keep their own members, whose certificates are against them)
                for member, cert in locals_.pop(rep):
                    _discard(cert)
                    locals_[member] = []
                    pending[digest].append(member)
                for member in joined.get(rep, []):
                    _discard(cls.certificates.get(member, ""))
                    pending[digest].append(member)
            gone = set(unreadable)
            for digest in pending:
                pending[digest] = sorted(set(pending[digest]) - gone, key=order.__getitem__)
    for cls in classes:
        cls.members.sort(key=order.__getitem__)
        cls.hidden = {x: proposals[x].shape[1] for x in cls.members}
        cls.certificates = {m: cls.certificates[m] for m in cls.members if m in cls.certificates}
        cls.against = {m: cls.against[m] for m in cls.certificates}
    classes.sort(key=lambda c: order[c.members[0]])
    ordered = {p: unreadable[p] for p in sorted(unreadable, key=lambda p: order.get(p, -1))}
    fast = {p for p, x in proposals.items() if x.fast}
    return AuditResult(classes, ordered, compare_deep_classes(classes, job), engine,
                       near_misses(classes, fast, job))


MAX_NEAR = 200  # comparisons of a lone network with other classes, for the near-miss hints
NEAR_ULPS = 64  # a lone network is a near miss when its unpartnered neurons are within this many ulps


def near_misses(classes: Sequence[AuditClass], fast: set[str], job: Job) -> list[dict]:
    """For each class of one float network, the nearest other class of the same m and k by
    ``certsym.decide.nearmiss`` (the most neurons with an exact partner, then the fewest ulps): {"member",
    "class", "representative", "neurons", "partnered", "ulps"}, listed when at most three neurons lack a
    partner and those are within NEAR_ULPS ulps of the file's type (a last-bit change, say). A hint for the
    reader, never a verdict: the classes were decided exactly. At most MAX_NEAR comparisons. Cost: one read of
    each representative compared, and O((n1 + n2)(m + k)) per comparison."""
    lone = [c for c in classes if len(c.members) == 1 and c.representative in fast and not c.widths]
    others = [(i, c) for i, c in enumerate(classes) if c.representative in fast and not c.widths]
    out, budget, arrays = [], MAX_NEAR, {}

    def read(path: str):
        if path not in arrays:
            try:
                arrays[path] = _load(path, job).arrays
            except (InputError, OSError):
                arrays[path] = None
        return arrays[path]

    for single in lone:
        best = None
        for i, cls in others:
            if cls is single or (cls.shape[0], cls.shape[2]) != (single.shape[0], single.shape[2]) or budget <= 0:
                continue
            budget -= 1
            a, b = read(single.representative), read(cls.representative)
            if a is None or b is None:
                continue
            nm = near_miss(a, b)
            ulps = max((w[3] for w in nm.worst), default=0.0)
            key = (nm.partnered - nm.n, -ulps)
            if best is None or key > best[0]:
                best = (key, i, cls, nm, ulps)
        if best is not None:
            _, i, cls, nm, ulps = best
            if nm.n - nm.partnered <= 3 and ulps <= NEAR_ULPS:
                out.append({"member": single.representative, "class": i, "representative": cls.representative,
                            "neurons": nm.n, "partnered": nm.partnered, "ulps": ulps})
    return out


def _decision_jobs(rep: str, members: Sequence[str], proposals: dict[str, Proposal], job: Job,
                   cert_dir: str | None, workers: int) -> list[tuple]:
    """The ``decide_chunk`` jobs deciding ``members`` against ``rep``, each with its certificate file and the
    first step's SHA-256 of every file it reads."""
    rest = [(x, proposals[x].fast, os.path.join(cert_dir, certificate_name(x)) if cert_dir else None)
            for x in members]
    return [(rep, proposals[rep].fast, chunk, job, {x: proposals[x].sha256 for x in [rep, *(c[0] for c in chunk)]})
            for chunk in _chunks(rest, workers)]


def _utf8(path: str) -> bool:
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _discard(cert: str) -> None:
    if cert:
        Path(cert).unlink(missing_ok=True)


def _join(cls: AuditClass, first: str, members: Sequence[tuple[str, str]]) -> None:
    """Add a block's class (its first file ``first`` and the members decided equal to it) to ``cls``."""
    for member, cert in members:
        cls.members.append(member)
        if cert:
            cls.certificates[member] = cert
            cls.against[member] = first


def compare_deep_classes(classes: Sequence[AuditClass], job: Job) -> list[dict]:
    """For deep classes, which the block lemma alone groups (equal functions may fall into two of them), decide
    each pair of representatives of one input and output width: {"classes": [i, j], "status": "not_equivalent",
    "witness": [...]} with an exact witness, "equivalent" (functions equal only on the image of the layers below,
    which phase splitting shows: the block lemma would have given both the same proposal hash) or "undecided", with
    the reason. At most MAX_DEEP_PAIRS pairs; the rest are reported as "not compared". Cost: one deep decision per
    pair (MATH.md Parts III and IV)."""
    deep_ids = [i for i, c in enumerate(classes) if c.widths]
    pairs = [(i, j) for a, i in enumerate(deep_ids) for j in deep_ids[a + 1:]
             if (classes[i].widths[0], classes[i].widths[-1]) == (classes[j].widths[0], classes[j].widths[-1])]
    out: list[dict] = []
    for count, (i, j) in enumerate(pairs):
        if count >= MAX_DEEP_PAIRS:
            out.append({"classes": [i, j], "status": "not compared", "reason": f"more than {MAX_DEEP_PAIRS} pairs"})
            continue
        try:
            loaded, _ = load_inputs([classes[i].representative, classes[j].representative],
                                    max_digits=job.max_digits, keys=job.keys, deep=True)
            v = deep.decide(loaded[0].network, loaded[1].network)
        except (InputError, OSError) as exc:
            out.append({"classes": [i, j], "status": "undecided", "reason": str(exc)})
            continue
        if v.status == deep.NOT_EQUIVALENT:
            F = loaded[0].network.field
            out.append({"classes": [i, j], "status": "not_equivalent", "witness": [F.to_string(x) for x in v.witness]})
        else:
            out.append({"classes": [i, j], "status": "undecided" if not v.equivalent else "equivalent",
                        "reason": v.reason})
    return out
