"""VNN-LIB 1.0 properties (docs/FORMATS.md, "VNN-LIB"): the input region a property states, as exact boxes.

A property is SMT-LIB text: ``(declare-const X_i Real)`` for the inputs, ``(declare-const Y_j Real)`` for the
outputs, and ``(assert …)`` forms whose conjunction describes a counterexample. Each assert is an atom
``(op a b)`` with op one of ``<=``, ``>=``, ``<``, ``>`` and a, b a variable or a number (the constant on either
side: ``(<= 0.0 X_774)`` is ``X_774 >= 0``; a number may be written ``(- c)``), or an ``and`` / ``or`` of such
forms. The input part is the conjunction of the asserts over inputs alone, in disjunctive normal form; each
disjunct must give every input a lower and an upper bound (non-strict: a box is closed), and becomes one box.
Asserts that mention an output form the output part, which ``input_boxes`` returns as text, never drops: the
caller says that it answers its own question on the boxes. Numbers are the exact decimals written (``0.1`` is
1/10, not a binary64). A gzipped file (``.gz``, or the gzip magic) is read decompressed, up to 256 MiB.

Cost: linear in the text, plus the product of the disjunctions' sizes (at most MAX_BOXES boxes).
"""

from __future__ import annotations

import gzip
import io
import os
import re
import zlib
from dataclasses import dataclass

from flint import fmpq

from certsym.errors import InputError
from certsym.io.params import read_bytes
from certsym.numbers import parse_rational

MAX_BOXES = 4096  # disjuncts of the input part, after distributing ``and`` over ``or``
MAX_NESTING = 100  # parentheses open at once: the readers below recurse once per level
MAX_TEXT_BYTES = 256 << 20  # a decompressed property (the largest VNN-COMP properties are a few MB)
_TOKEN = re.compile(r"\(|\)|[^\s()]+")
_VARIABLE = re.compile(r"([XY])_(0|[1-9][0-9]*)\Z")  # X_01 and non-ASCII digits are other names
_FLIP = {"<=": ">=", ">=": "<=", "<": ">", ">": "<"}

Box = list[tuple[fmpq, fmpq]]


@dataclass
class Property:
    """The boxes of the input part (one per disjunct) and the asserts of the output part, as written."""

    boxes: list[Box]
    outputs: list[str]


def read_vnnlib(path: str | os.PathLike) -> str:
    """The text of a VNN-LIB file, gunzipped when it is gzip. Cost: linear in the file."""
    data = read_bytes(path)
    if data[:2] == b"\x1f\x8b":
        try:
            with gzip.GzipFile(fileobj=io.BytesIO(data)) as f:
                data = f.read(MAX_TEXT_BYTES + 1)
        except (OSError, EOFError, zlib.error) as exc:
            raise InputError(f"{os.fspath(path)}: not a readable gzip file ({exc})") from None
        if len(data) > MAX_TEXT_BYTES:
            raise InputError(f"{os.fspath(path)}: decompresses to more than 256 MiB")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError(f"{os.fspath(path)}: not UTF-8 text") from None


def _parse(text: str) -> list:
    """The S-expressions of ``text`` (comments from ``;`` to the end of a line dropped), as nested lists."""
    text = re.sub(r";[^\n]*", "", text)
    stack: list[list] = [[]]
    for token in _TOKEN.findall(text):
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


def _number(term) -> fmpq | None:
    if isinstance(term, list) and len(term) == 2 and term[0] == "-" and isinstance(term[1], str):
        value = _number(term[1])
        return None if value is None else -value
    return parse_rational(term) if isinstance(term, str) and not _VARIABLE.match(term) else None


def _text(form) -> str:
    return form if isinstance(form, str) else "(" + " ".join(_text(f) for f in form) + ")"


def _mentions_output(form) -> bool:
    return any(_mentions_output(f) for f in form) if isinstance(form, list) else form.startswith("Y_")


def _dnf(form) -> list[list[tuple[int, str, fmpq]]]:
    """The input atoms of ``form`` in disjunctive normal form: [[(i, op, c) meaning X_i op c]]."""
    if not isinstance(form, list) or not form:
        raise InputError(f"VNN-LIB: expected a comparison, 'and' or 'or', found {_text(form)!r}")
    head, args = form[0], form[1:]
    if head in ("and", "or"):
        parts = [_dnf(arg) for arg in args]
        if head == "or":
            out = [conj for part in parts for conj in part]
        else:
            out = [[]]
            for part in parts:
                if len(out) * len(part) > MAX_BOXES:  # refused before the product is built
                    raise InputError(f"VNN-LIB: the input part has more than {MAX_BOXES} disjuncts")
                out = [a + b for a in out for b in part]
        if len(out) > MAX_BOXES:
            raise InputError(f"VNN-LIB: the input part has more than {MAX_BOXES} disjuncts")
        return out
    if head not in _FLIP or len(args) != 2:
        raise InputError(f"VNN-LIB: expected (<= a b), (>= a b), (< a b), (> a b), 'and' or 'or', found "
                         f"{_text(form)!r}")
    a, b = args
    if isinstance(a, str) and _VARIABLE.match(a) and _number(b) is not None:
        var, op, value = a, head, _number(b)
    elif isinstance(b, str) and _VARIABLE.match(b) and _number(a) is not None:
        var, op, value = b, _FLIP[head], _number(a)
    else:
        raise InputError(f"VNN-LIB: an input bound compares one variable X_i with a number, not {_text(form)!r}")
    if op in ("<", ">"):
        raise InputError(f"VNN-LIB: the strict input bound {_text(form)!r}: a box is closed, so certsym reads "
                         "non-strict input bounds only")
    return [[(int(_VARIABLE.match(var)[2]), op, value)]]


def _box(atoms: list[tuple[int, str, fmpq]], m: int) -> Box:
    lo: dict[int, fmpq] = {}
    hi: dict[int, fmpq] = {}
    for i, op, value in atoms:
        if i >= m:
            raise InputError(f"VNN-LIB: X_{i} is beyond the network's {m} inputs")
        side = hi if op == "<=" else lo
        side[i] = value if i not in side else (min if op == "<=" else max)(side[i], value)
    missing = [q for q in range(m) if q not in lo or q not in hi]
    if missing:
        raise InputError(f"VNN-LIB: every input X_0 … X_{m - 1} needs a lower and an upper bound; X_{missing[0]} "
                         f"has {'no lower' if missing[0] not in lo else 'no upper'} bound")
    if any(lo[q] > hi[q] for q in range(m)):
        raise InputError("VNN-LIB: a lower bound exceeds its upper bound (an empty box)")
    return [(lo[q], hi[q]) for q in range(m)]


def input_boxes(text: str, m: int) -> Property:
    """The input part of a VNN-LIB 1.0 property over m inputs as boxes (one per disjunct), and its output asserts
    as text (module docstring). InputError for anything else. Cost: linear in the text, times the disjuncts."""
    conjuncts: list = []
    outputs: list[str] = []
    for form in _parse(text):
        if not isinstance(form, list) or not form:
            raise InputError(f"VNN-LIB: a bare token {_text(form)!r} at the top level")
        if form[0] == "declare-const":
            if len(form) != 3 or not isinstance(form[1], str) or not _VARIABLE.match(form[1]) or form[2] != "Real":
                raise InputError(f"VNN-LIB: expected (declare-const X_i Real) or (declare-const Y_j Real), found "
                                 f"{_text(form)!r}")
        elif form[0] == "assert" and len(form) == 2:
            if _mentions_output(form[1]):
                outputs.append(_text(form[1]))
            else:
                conjuncts.append(form[1])
        else:
            raise InputError(f"VNN-LIB: expected declare-const or assert, found {_text(form)[:80]!r}")
    return Property([_box(atoms, m) for atoms in _dnf(["and", *conjuncts])], outputs)
