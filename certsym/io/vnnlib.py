"""VNN-LIB 1.0 and 2.0 properties (docs/FORMATS.md, "VNN-LIB"): the networks a property declares, its input region
as exact boxes and its output part as a disjunction of conjunctions of linear atoms.

A property is SMT-LIB text whose asserts, taken together, describe a *counterexample*. VNN-LIB 1.0 declares one
network's inputs and outputs as ``(declare-const X_i Real)`` and ``(declare-const Y_j Real)``; VNN-LIB 2.0 starts
with ``(vnnlib-version <2.0>)`` and declares networks, ``(declare-network f (declare-input X_f Real [1, 5])
(declare-output Y_f Real [1, 5]))``, optionally ``(isomorphic-to g)`` or ``(equal-to g)``, with tensor elements
written ``X_f[0,3]`` (row-major flat index 3). An assert is a comparison ``(op a b)`` (``<=``, ``>=``, ``<``,
``>``, ``==``, ``!=``) of linear expressions (numbers, variables, ``(+ …)``, ``(- a …)``, ``(- a)``, ``(* …)``
with at most one factor that is not a number), or an ``and`` / ``or`` of asserts.

The input part (the asserts over inputs alone) is put in disjunctive normal form; each disjunct must give every
input of the first network a lower and an upper bound, non-strict (a box is closed), with each coefficient
divided out (``(<= (* -1.0 X[0]) 0.0)`` is X_0 ≥ 0), and every other network's input i must be made equal to the
first's by ``==`` (one shared input): each disjunct becomes one box. The output part (the asserts over outputs
alone) becomes a disjunction of conjunctions of atoms Σ c·Y + c_0 ≥ 0 or > 0. An assert mixing inputs and outputs,
inputs related otherwise than by bounds and equalities, and anything else are refused with the reason. Numbers are
the exact decimals written (``0.1`` is 1/10, not a binary64). A gzipped file (``.gz``, or the gzip magic) is read
decompressed, up to 256 MiB.

Cost: linear in the text, plus the product of the disjunctions' sizes (at most MAX_BOXES disjuncts in each part).
"""

from __future__ import annotations

import hashlib
import io
import math
import os
import re
import zlib
from dataclasses import dataclass, field

from flint import fmpq

from certsym.errors import InputError
from certsym.io.filebytes import gunzip_bounded
from certsym.io.params import read_bytes
from certsym.numbers import parse_rational

MAX_BOXES = 4096  # disjuncts of the input part, and of the output part, after distributing ``and`` over ``or``
MAX_ATOMS = 10**6  # atoms of either part's normal form
MAX_NUMBER_CHARS = 400  # characters of a number, and the largest decimal exponent
MAX_NUMBER_BITS = 4096  # numerator and denominator of every coefficient and constant
MAX_RANK = 32  # dimensions of a declared tensor
MAX_NESTING = 100  # parentheses open at once: the readers below recurse once per level
MAX_TEXT_BYTES = 256 << 20  # a decompressed property (the largest VNN-COMP properties are a few MB)
MAX_ELEMENTS = 10**7  # elements of one declared tensor
_TOKEN = re.compile(r"\(|\)|[^\s()]+")
_VARIABLE = re.compile(r"([XY])_(0|[1-9][0-9]{0,8})\Z")  # X_01 and non-ASCII digits are other names
_INDEX = r"(?:0|[1-9][0-9]{0,8})"  # at most 9 digits: past MAX_ELEMENTS beyond
_NUMBER = re.compile(r"[+-]?[0-9]+(?:\.[0-9]+)?(?:[eE]([+-]?[0-9]+))?\Z")
_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]*\Z")
_ELEMENT = re.compile(rf"([A-Za-z][A-Za-z0-9_]*)\[((?:{_INDEX}(?:,{_INDEX})*)?)\]\Z")
_SHAPE = re.compile(rf"([A-Za-z][A-Za-z0-9_]*)\[((?:{_INDEX}(?:,{_INDEX})*)?)\]\Z")
_FLIP = {"<=": ">=", ">=": "<=", "<": ">", ">": "<"}

Box = list[tuple[fmpq, fmpq]]
Variable = tuple[int, bool, int]  # (network, an output?, flat index)


@dataclass
class Property:
    """The boxes of the input part (one per disjunct) and the asserts of the output part, as written."""

    boxes: list[Box]
    outputs: list[str]


@dataclass(frozen=True)
class Declared:
    """One network a property declares: its name, its input and output variables and their shapes (VNN-LIB 1.0:
    the name "" and flat shapes), and ``relation`` to another ("isomorphic-to g", "equal-to g" or "")."""

    name: str
    inputs: str
    outputs: str
    input_shape: tuple[int, ...]
    output_shape: tuple[int, ...]
    relation: str = ""

    @property
    def m(self) -> int:
        return math.prod(self.input_shape)

    @property
    def k(self) -> int:
        return math.prod(self.output_shape)


@dataclass(frozen=True)
class Atom:
    """Σ c · Y_{network}[j] + constant ≥ 0 (> 0 when ``strict``), ``terms`` as (network, j, c) with c ≠ 0."""

    terms: tuple[tuple[int, int, fmpq], ...]
    constant: fmpq
    strict: bool

    def holds(self, outputs: list[list[fmpq]]) -> bool:
        """The atom at exact outputs (one list per network). Cost O(terms)."""
        value = sum((c * outputs[n][j] for n, j, c in self.terms), self.constant)
        return value > 0 if self.strict else value >= 0


@dataclass
class Spec:
    """A property: its VNN-LIB version, the networks it declares, the input boxes (over the first network's
    inputs, shared by every network) and the output part in disjunctive normal form (``[[]]``: no output assert,
    so every input of a box is a counterexample), with the output asserts' text."""

    version: str
    networks: list[Declared]
    boxes: list[Box]
    outputs: list[list[Atom]]
    output_text: list[str] = field(default_factory=list)

def read_vnnlib(path: str | os.PathLike) -> str:
    """The text of a VNN-LIB file, gunzipped when it is gzip. Cost: linear in the file."""
    return read_property(path)[0]


def read_property(path: str | os.PathLike) -> tuple[str, str]:
    """The text of a VNN-LIB file (gunzipped when it is gzip) and the SHA-256 of the file's bytes, which a
    certificate records. Cost: linear in the file."""
    data = read_bytes(path)
    digest = hashlib.sha256(data).hexdigest()
    if data[:2] == b"\x1f\x8b":
        try:
            data = gunzip_bounded(io.BytesIO(data), MAX_TEXT_BYTES)
        except (OSError, EOFError, zlib.error) as exc:
            raise InputError(f"{os.fspath(path)}: not a readable gzip file ({exc})") from None
        if data is None:
            raise InputError(f"{os.fspath(path)}: decompresses to more than 256 MiB")
    try:
        return data.decode("utf-8"), digest
    except UnicodeDecodeError:
        raise InputError(f"{os.fspath(path)}: not UTF-8 text") from None


def _tokens(text: str) -> list[str]:
    """The tokens of ``text``, a tensor's index joined to its name (``X [0, 1]`` is ``X[0,1]``): a token that opens
    a bracket takes the tokens after it up to the one that closes it, and one starting with ``[`` joins the one
    before. Linear in the text."""
    out: list[list[str]] = []
    depth = 0
    for token in _TOKEN.findall(text):
        paren = token in ("(", ")")
        if not paren and out and out[-1][0] not in ("(", ")") and (depth > 0 or token.startswith("[")):
            out[-1].append(token)
        else:
            out.append([token])
            depth = 0
        if not paren:
            depth += token.count("[") - token.count("]")
    return ["".join(pieces) for pieces in out]


def _parse(text: str) -> list:
    """The S-expressions of ``text`` (comments from ``;`` to the end of a line dropped; ``_tokens``), as nested
    lists."""
    text = re.sub(r";[^\n]*", " ", text)
    stack: list[list] = [[]]
    for token in _tokens(text):
        if token == "(":
            if len(stack) > MAX_NESTING:
                raise InputError(f"VNN-LIB: more than {MAX_NESTING} parentheses open at once")
            stack.append([])
        elif token == ")":
            if len(stack) == 1:
                raise InputError("VNN-LIB: a ')' without its '('")
            done = stack.pop()
            stack[-1].append(done)
        else:
            stack[-1].append(token)
    if len(stack) != 1:
        raise InputError("VNN-LIB: a '(' without its ')'")
    return stack[0]


def _small(x: fmpq) -> fmpq:
    """x, when its numerator and denominator have at most MAX_NUMBER_BITS bits."""
    if max(int(abs(x.p)).bit_length(), int(x.q).bit_length()) > MAX_NUMBER_BITS:
        raise InputError(f"VNN-LIB: a number past {MAX_NUMBER_BITS} bits (numerator or denominator)")
    return x


def _text(form) -> str:
    return form if isinstance(form, str) else "(" + " ".join(_text(f) for f in form) + ")"


class _Reader:
    """The declarations read so far: variable names to (network, output?, shape)."""

    def __init__(self) -> None:
        self.version = "1.0"
        self.networks: list[Declared] = []
        self.tensors: dict[str, tuple[int, bool, tuple[int, ...]]] = {}
        self.legacy: dict[str, tuple[bool, int]] = {}  # VNN-LIB 1.0: X_i, Y_j

    def variable(self, token: str) -> Variable | None:
        """The variable a token names, None for a number; InputError for an undeclared name."""
        legacy = _VARIABLE.match(token) if self.version == "1.0" else None
        if legacy:  # VNN-LIB 1.0 names have one reading, declared or not
            return 0, legacy[1] == "Y", int(legacy[2])
        match = _ELEMENT.match(token)
        name, index = (match[1], tuple(int(x) for x in match[2].split(",")) if match[2] else ()) if match else \
            (token, ())
        if name in self.tensors:
            n, output, shape = self.tensors[name]
            if len(index) != len(shape) or any(i >= d for i, d in zip(index, shape, strict=True)):
                raise InputError(f"VNN-LIB: {token[:60]} does not index {name}, of shape {list(shape)}")
            flat = 0
            for i, d in zip(index, shape, strict=True):
                flat = flat * d + i
            return n, output, flat
        if match or _NAME.match(token) or _VARIABLE.match(token):
            raise InputError(f"VNN-LIB: {token[:60]!r} is not a declared input or output")
        return None

    def linear(self, term) -> tuple[dict[Variable, fmpq], fmpq]:
        """A linear expression as (coefficients, constant)."""
        if isinstance(term, str):
            var = self.variable(term)
            if var is not None:
                return {var: fmpq(1)}, fmpq(0)
            match = _NUMBER.match(term)  # VNN-LIB numbers are decimals
            if match is None:
                raise InputError(f"VNN-LIB: {term[:60]!r} is neither a number nor a declared variable")
            if len(term) > MAX_NUMBER_CHARS or (match[1] and abs(int(match[1][:5])) > MAX_NUMBER_CHARS):
                raise InputError(f"VNN-LIB: a number of more than {MAX_NUMBER_CHARS} characters, or an exponent past "
                                 f"{MAX_NUMBER_CHARS}")
            return {}, _small(parse_rational(term))
        if not term or term[0] not in ("+", "-", "*") or len(term) < 2:
            raise InputError(f"VNN-LIB: expected a number, a variable, (+ …), (- …) or (* …), found {_text(term)!r}")
        parts = [self.linear(t) for t in term[1:]]
        if term[0] == "-" and len(parts) == 1:
            coefficients, constant = parts[0]
            return {v: -c for v, c in coefficients.items()}, -constant
        if term[0] == "*":
            variable = [p for p in parts if p[0]]
            if len(variable) > 1:
                raise InputError(f"VNN-LIB: {_text(term)!r} multiplies variables: not linear")
            factor = fmpq(1)
            for p in parts:
                if not p[0]:
                    factor = _small(factor * p[1])
            coefficients, constant = variable[0] if variable else ({}, fmpq(1))
            return {v: _small(c * factor) for v, c in coefficients.items() if c * factor != 0}, \
                _small(constant * factor)
        total: dict[Variable, fmpq] = dict(parts[0][0])
        constant = parts[0][1]
        sign = -1 if term[0] == "-" else 1
        for coefficients, c in parts[1:]:
            for v, x in coefficients.items():
                total[v] = _small(total.get(v, fmpq(0)) + sign * x)
            constant = _small(constant + sign * c)
        return {v: c for v, c in total.items() if c != 0}, constant

    def atoms(self, form) -> list[list[tuple[dict[Variable, fmpq], fmpq, str]]]:
        """``form`` in disjunctive normal form: disjuncts of atoms (coefficients, constant, op), op ">=" or ">"
        meaning Σ c·v + constant op 0."""
        if not isinstance(form, list) or not form:
            raise InputError(f"VNN-LIB: expected a comparison, 'and' or 'or', found {_text(form)!r}")
        head, args = form[0], form[1:]
        if head in ("and", "or"):
            return _combine([self.atoms(arg) for arg in args], head)
        if head not in (*_FLIP, "==", "!=") or len(args) != 2:
            raise InputError(f"VNN-LIB: expected (<= a b), (>= a b), (< a b), (> a b), (== a b), (!= a b), 'and' or "
                             f"'or', found {_text(form)!r}")
        (ca, xa), (cb, xb) = self.linear(args[0]), self.linear(args[1])
        _small(xa - xb)
        up = {v: _small(ca.get(v, fmpq(0)) - cb.get(v, fmpq(0))) for v in {*ca, *cb}}
        up = {v: c for v, c in up.items() if c != 0}
        down = {v: -c for v, c in up.items()}
        ge, le = (up, xa - xb), (down, xb - xa)  # a − b ≥ 0, b − a ≥ 0
        if head == "==":
            return [[(*ge, ">="), (*le, ">=")]]
        if head == "!=":
            return [[(*ge, ">")], [(*le, ">")]]
        return [[(*(ge if head in (">=", ">") else le), ">" if head in ("<", ">") else ">=")]]


def _combine(parts: list[list[list]], head: str) -> list[list]:
    """The disjunctive normal form of an ``and`` or ``or`` of forms in that form, its size checked before it is
    built (MAX_BOXES disjuncts, MAX_ATOMS atoms): an ``or`` counted part by part, an ``and``'s parts of one disjunct
    gathered and appended last, its other parts multiplied with their sizes counted first."""
    too_big = f"VNN-LIB: a part of the property has more than {MAX_BOXES} disjuncts or {MAX_ATOMS} atoms"
    if head == "or":
        out: list = []
        atoms = 0
        for part in parts:
            atoms += sum(map(len, part))
            if len(out) + len(part) > MAX_BOXES or atoms > MAX_ATOMS:
                raise InputError(too_big)
            out.extend(part)
        return out
    common: list = []
    out = [[]]
    for part in parts:
        if len(part) == 1:
            common.extend(part[0])
            if len(common) > MAX_ATOMS:
                raise InputError(too_big)
            continue
        if len(out) * len(part) > MAX_BOXES or \
                len(part) * sum(map(len, out)) + len(out) * sum(map(len, part)) > MAX_ATOMS:
            raise InputError(too_big)
        out = [a + b for a in out for b in part]
    if len(out) * len(common) + sum(map(len, out)) > MAX_ATOMS:
        raise InputError(too_big)
    return [conj + common for conj in out]


def _shape(token: object, where: str) -> tuple[str, tuple[int, ...]]:
    """An element type with its shape (``Real[1,5]``; ``Real[]`` a scalar)."""
    match = _SHAPE.match(token) if isinstance(token, str) else None
    if not match:
        raise InputError(f"VNN-LIB: {where}: expected an element type and a shape such as Real [1, 5]")
    if match[1] not in ("Real", "real"):
        raise InputError(f"VNN-LIB: {where}: element type {match[1][:20]!r}; certsym reads Real (the reals), the type "
                         "of a query about the networks' functions")
    shape = tuple(int(x) for x in match[2].split(",")) if match[2] else ()
    if len(shape) > MAX_RANK or not 0 < math.prod(shape) <= MAX_ELEMENTS:
        raise InputError(f"VNN-LIB: {where}: a tensor of 0 or more than {MAX_ELEMENTS:,} elements, or of more than "
                         f"{MAX_RANK} dimensions")
    return match[1], shape


def _network(form: list, reader: _Reader) -> None:
    """A ``declare-network`` form (VNN-LIB 2.0) read into ``reader``."""
    if len(form) < 2 or not isinstance(form[1], str) or not _NAME.match(form[1]):
        raise InputError(f"VNN-LIB: expected (declare-network NAME …), found {_text(form)[:80]!r}")
    n, name = len(reader.networks), form[1]
    relation, tensors = "", {"declare-input": [], "declare-output": []}
    for part in form[2:]:
        if isinstance(part, list) and len(part) == 2 and part[0] in ("isomorphic-to", "equal-to") and \
                any(d.name == part[1] for d in reader.networks):
            relation = f"{part[0]} {part[1]}"
        elif isinstance(part, list) and len(part) >= 3 and part[0] in tensors and isinstance(part[1], str) and \
                _NAME.match(part[1]):
            if len(part) != 3:
                raise InputError(f"VNN-LIB: network {name}: {_text(part)[:80]!r}: certsym reads inputs and outputs "
                                 "without options")
            if part[1] in reader.tensors:
                raise InputError(f"VNN-LIB: {part[1]} is declared twice")
            shape = _shape(part[2], f"network {name}, {part[1]}")[1]
            reader.tensors[part[1]] = (n, part[0] == "declare-output", shape)
            tensors[part[0]].append((part[1], shape))
        else:
            raise InputError(f"VNN-LIB: network {name}: {_text(part)[:80]!r} is not read (one declare-input, one "
                             "declare-output, and optionally isomorphic-to or equal-to an earlier network)")
    if len(tensors["declare-input"]) != 1 or len(tensors["declare-output"]) != 1:
        raise InputError(f"VNN-LIB: network {name}: certsym reads networks of one input and one output tensor")
    (x, xs), (y, ys) = tensors["declare-input"][0], tensors["declare-output"][0]
    reader.networks.append(Declared(name, x, y, xs, ys, relation))


def read_spec(text: str, m: int | None = None) -> Spec:
    """The networks, input boxes and output part of a VNN-LIB 1.0 or 2.0 property (module docstring); a 1.0
    property is read over ``m`` inputs when given (the network's), else over the X_i it declares. InputError for
    anything else. Cost: linear in the text, times the disjuncts."""
    forms = _parse(text)
    reader = _Reader()
    version = "1.0"
    if forms and isinstance(forms[0], list) and forms[0][:1] == ["vnnlib-version"]:
        if forms[0] != ["vnnlib-version", "<2.0>"]:
            raise InputError(f"VNN-LIB: {_text(forms[0])!r}: certsym reads versions 1.0 and 2.0")
        version, forms = "2.0", forms[1:]
    reader.version = version
    inputs: list = []
    outputs: list = []
    text_out: list[str] = []
    for form in forms:
        if not isinstance(form, list) or not form:
            raise InputError(f"VNN-LIB: a bare token {_text(form)!r} at the top level")
        if form[0] == "declare-const" and version == "1.0":
            match = _VARIABLE.match(form[1]) if len(form) == 3 and isinstance(form[1], str) else None
            if not match or form[2] != "Real":
                raise InputError(f"VNN-LIB: expected (declare-const X_i Real) or (declare-const Y_j Real), found "
                                 f"{_text(form)!r}")
            reader.legacy[form[1]] = (match[1] == "Y", int(match[2]))
        elif form[0] == "declare-network" and version == "2.0":
            _network(form, reader)
        elif form[0] == "assert" and len(form) == 2:
            disjuncts = reader.atoms(form[1])
            kinds = {v[1] for conj in disjuncts for coefficients, _, _ in conj for v in coefficients}
            if kinds == {False, True}:
                raise InputError(f"VNN-LIB: the assert {_text(form[1])[:80]!r} mixes inputs and outputs")
            (outputs if True in kinds else inputs).append(disjuncts)
            if True in kinds:
                text_out.append(_text(form[1]))
        else:
            expected = "declare-const or assert" if version == "1.0" else "declare-network or assert"
            raise InputError(f"VNN-LIB: expected {expected}, found {_text(form)[:80]!r}")
    if version == "1.0":
        for output in (False, True):
            indices = sorted(i for o, i in reader.legacy.values() if o is output)
            if indices != list(range(len(indices))):
                raise InputError(f"VNN-LIB: the declared {'Y' if output else 'X'}_i are not numbered 0, 1, 2, …")
        used = [v for conj in inputs for disjunct in conj for atom in disjunct for v in atom[0]]
        k = max((i + 1 for o, i in reader.legacy.values() if o), default=0)
        k = max([k] + [v[2] + 1 for part in outputs for disjunct in part for atom in disjunct for v in atom[0]])
        if m is None:
            m = max((i + 1 for o, i in reader.legacy.values() if not o), default=0)
            m = max(m, max((i + 1 for _, _, i in used), default=0))
        reader.networks = [Declared("", "X", "Y", (m,), (k,))]
    if not reader.networks:
        raise InputError("VNN-LIB: the property declares no network")
    boxes = [_box(conj, reader.networks) for conj in _combine(inputs, "and")]
    dnf = [[_atom(a) for a in conj] for conj in _combine(outputs, "and")]
    return Spec(version, reader.networks, boxes, dnf, text_out)


def _atom(atom: tuple[dict[Variable, fmpq], fmpq, str]) -> Atom:
    coefficients, constant, op = atom
    return Atom(tuple(sorted((n, j, c) for (n, _, j), c in coefficients.items())), constant, op == ">")


def _box(atoms: list, networks: list[Declared]) -> Box:
    """One disjunct of the input part as a box over the first network's inputs: bounds on one variable each, and
    every other network's input i equal to the first's by an atom pair X_g[i] − X_f[i] ≥ 0, ≤ 0."""
    m = networks[0].m
    lo: dict[int, fmpq] = {}
    hi: dict[int, fmpq] = {}
    equal: set[tuple[Variable, Variable]] = set()
    for coefficients, constant, op in atoms:
        name = _text([op, " ".join(f"{c}·{v}" for v, c in coefficients.items()), str(constant)])
        if len(coefficients) == 2 and sorted(coefficients.values()) == [-1, 1] and constant == 0 and op == ">=" and \
                len({v[0] for v in coefficients}) == 2:
            (u, _), (v, _) = sorted(coefficients.items(), key=lambda item: item[1])
            equal.add((u, v))  # v ≥ u, one half of an equality between two networks' inputs
            continue
        if len(coefficients) != 1:
            raise InputError(f"VNN-LIB: an input bound compares one variable X_i with a number, not {name} "
                             "(certsym reads boxes, and inputs made equal by ==)")
        if op == ">":
            raise InputError(f"VNN-LIB: the strict input bound {name}: a box is closed, so certsym reads "
                             "non-strict input bounds only")
        ((n, _, i), c), = coefficients.items()
        if n != 0:
            raise InputError("VNN-LIB: a bound on another network's input; certsym reads the bounds of the first "
                             "network's inputs, the others made equal to them by ==")
        if i >= m:
            raise InputError(f"VNN-LIB: X_{i} is beyond the network's {m} inputs")
        value = -constant / c
        side, keep = (lo, max) if c > 0 else (hi, min)  # c x + d ≥ 0: x ≥ −d/c when c > 0
        side[i] = value if i not in side else keep(side[i], value)
    shared = set()
    for n in range(1, len(networks)):
        if networks[n].m != m:
            raise InputError(f"VNN-LIB: network {networks[n].name} has {networks[n].m} inputs, {networks[0].name} "
                             f"{m}")
        for i in range(m):
            a, b = (0, False, i), (n, False, i)
            if (a, b) not in equal or (b, a) not in equal:
                raise InputError(f"VNN-LIB: input {i} of network {networks[n].name} is not made equal to "
                                 f"{networks[0].name}'s by ==; certsym reads networks on one shared input")
            shared |= {(a, b), (b, a)}
    if equal != shared:
        raise InputError("VNN-LIB: inputs of two networks related other than index by index by ==")
    missing = [q for q in range(m) if q not in lo or q not in hi]
    if missing:
        raise InputError(f"VNN-LIB: every input X_0 … X_{m - 1} needs a lower and an upper bound; X_{missing[0]} "
                         f"has {'no lower' if missing[0] not in lo else 'no upper'} bound")
    if any(lo[q] > hi[q] for q in range(m)):
        raise InputError("VNN-LIB: a lower bound exceeds its upper bound (an empty box)")
    return [(lo[q], hi[q]) for q in range(m)]


def input_boxes(text: str, m: int) -> Property:
    """The input part of a VNN-LIB property over one network of m inputs as boxes (one per disjunct), and its
    output asserts as text (module docstring). InputError for anything else. Cost: linear in the text, times the
    disjuncts."""
    spec = read_spec(text, m)
    if len(spec.networks) != 1:
        raise InputError(f"VNN-LIB: the property declares {len(spec.networks)} networks; this command reads one")
    if spec.networks[0].m != m and spec.version == "2.0":
        raise InputError(f"VNN-LIB: the property's network has {spec.networks[0].m} inputs, the network given {m}")
    if spec.networks[0].m > m:
        raise InputError(f"VNN-LIB: X_{spec.networks[0].m - 1} is beyond the network's {m} inputs")
    if spec.networks[0].m < m:
        missing = spec.networks[0].m
        raise InputError(f"VNN-LIB: every input X_0 … X_{m - 1} needs a lower and an upper bound; X_{missing} has no "
                         "lower bound")
    return Property(spec.boxes, spec.output_text)
