"""Binding a certificate to the input files given on the command line.

The file must have the SHA-256 the certificate records, and every entry of the file, read by this
module, must equal the embedded parameter. Entries are numerals or algebraic expressions; the
radicals and roots they contain ("atoms") are listed in the certificate with their values, and each
value is verified by its defining property, never searched for:
- sqrt(e), cbrt(e), root(e, n), e ** (p/q): y^n = e^p, and y > 0 when n is even (for a fractional
  power e > 0 as well); for odd n the real root is unique.
- CRootOf(P, i): P squarefree with rational coefficients, P(y) = 0, and exactly i real roots of P
  below y (Sturm sequence evaluated at y).
"""

from __future__ import annotations

import ast
import copy
import functools
import hashlib
import json
import re
import warnings
from fractions import Fraction

from certsym.check.fields import (
    MAX_DEGREE,
    MAX_NUMBER_CHARS,
    Reject,
    _divmod,
    _gcd,
    _mul,
    _sub,
    _trim,
    integer,
    poly_bound,
    primitive,
)
from certsym.check.tensors import InputFile, model_entries, unique_object

_DECIMAL = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE]([+-]?[0-9]+))?")
_ROOTS = {"sqrt", "cbrt", "root", "CRootOf", "rootof", "RootOf"}


def decimal(text: str) -> Fraction:
    """An exact decimal numeral ("0.1" is 1/10); exponents are bounded."""
    m = _DECIMAL.fullmatch(text)
    if not m or len(text) > MAX_NUMBER_CHARS or (m.group(1) and abs(int(m.group(1))) > 10_000):
        raise Reject(f"not an exact decimal numeral: {text[:40]!r}")
    mantissa, _, exponent = text.lower().partition("e")
    whole, _, frac = mantissa.lstrip("+-").partition(".")
    value = Fraction(integer((whole or "0") + frac), 10 ** len(frac)) * Fraction(10) ** int(exponent or 0)
    return -value if mantissa.startswith("-") else value


def _parse(text: object) -> tuple[ast.AST, str]:
    if not isinstance(text, str) or len(text) > MAX_NUMBER_CHARS:
        raise Reject(f"not an expression: {str(text)[:40]!r}")
    source = text.strip().replace("^", "**")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ast.parse(source, mode="eval").body, source
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        raise Reject(f"cannot read the entry {text[:40]!r}") from None


class Reader:
    """Evaluates parameter-file entries in the certificate's field, with verified atoms."""

    def __init__(self, F, atoms: object, where: str):
        self.F, self.atoms = F, {}
        if not isinstance(atoms, list):
            raise Reject(f"{where}.atoms must be a list")
        for k, atom in enumerate(atoms):
            if not isinstance(atom, dict) or set(atom) != {"expr", "value"}:
                raise Reject(f"{where}.atoms[{k}] must have exactly the keys expr, value")
            node, source = _parse(atom["expr"])
            y = F.number(atom["value"])
            self._verify(node, source, y, f"{where}.atoms[{k}]")
            self.atoms[_key(node, source)] = y

    def value(self, text: object):
        node, source = _parse(text)
        return self._eval(node, source)

    def _eval(self, node: ast.AST, source: str, poly: bool = False):
        F = self.F
        if isinstance(node, ast.Constant) and type(node.value) in (int, float):
            c = decimal(_segment(source, node))
            return [c] if poly else F.zero + c
        if poly and isinstance(node, ast.Name) and node.id == "x":
            return [Fraction(0), Fraction(1)]
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
            v = self._eval(node.operand, source, poly)
            return v if isinstance(node.op, ast.UAdd) else ([-c for c in v] if poly else -v)
        if isinstance(node, ast.BinOp):
            if isinstance(node.op, ast.Pow):
                if poly or _is_integer(self._eval(node.right, source)):
                    return self._power(node, source, poly)
                return self._atom(node, source)
            a, b = self._eval(node.left, source, poly), self._eval(node.right, source, poly)
            if _value_bits(a) + _value_bits(b) > MAX_POWER_BITS:
                raise Reject("an expression is too large for the checker")
            if isinstance(node.op, ast.Add):
                return _sub(a, [-c for c in b]) if poly else a + b
            if isinstance(node.op, ast.Sub):
                return _sub(a, b) if poly else a - b
            if isinstance(node.op, ast.Mult):
                if poly and len(a) + len(b) - 2 > MAX_DEGREE:
                    raise Reject(f"a polynomial of degree above {MAX_DEGREE}")
                return _mul(a, b) if poly else a * b
            if isinstance(node.op, ast.Div):
                if poly:
                    if len(b) != 1:
                        raise Reject("division by a polynomial")
                    return [c / b[0] for c in a]
                return a * F.inverse(b)
        if not poly and isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _ROOTS \
                and not node.keywords:
            return self._atom(node, source)
        raise Reject(f"unsupported expression {ast.unparse(node)[:40]!r}")

    def _power(self, node: ast.BinOp, source: str, poly: bool):
        e = _rational_of(self._eval(node.right, source))
        if e.denominator != 1 or not -1000 <= e <= (200 if poly else 1000) or (poly and e < 0):
            raise Reject("unsupported exponent")
        base, out = self._eval(node.left, source, poly), [Fraction(1)] if poly else self.F.one
        _size_guard(base, abs(int(e)))
        for _ in range(abs(int(e))):
            out = _mul(out, base) if poly else out * base
        return out if e >= 0 else self.F.inverse(out)

    def _atom(self, node: ast.AST, source: str):
        key = _key(node, source)
        if key not in self.atoms:
            raise Reject(f"the value of {key[:40]!r} is not given (and verified) in the certificate")
        return self.atoms[key]

    def _verify(self, node: ast.AST, source: str, y, where: str) -> None:
        F = self.F
        name = node.func.id if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) else None
        if name in ("CRootOf", "rootof", "RootOf") and len(node.args) == 2:
            p = poly_bound(_trim(self._eval(node.args[0], source, poly=True)), where)
            i = _rational_of(self._eval(node.args[1], source))
            deriv = _trim([k * c for k, c in enumerate(p)][1:])
            if len(p) < 2 or len(_gcd(p, deriv)) > 1 or _horner(p, y, F) != 0:
                raise Reject(f"{where}: not a root of a squarefree rational polynomial")
            chain = [p, deriv]
            while len(chain[-1]) > 1:
                chain.append(primitive([-c for c in _divmod(chain[-2], chain[-1])[1]]))
            at_minus_inf = [(1 if q[-1] > 0 else -1) * (-1) ** (len(q) - 1) for q in chain]
            at_y = [s for s in (F.sign(_horner(q, y, F)) for q in chain) if s]
            below = _changes(at_minus_inf) - _changes(at_y) - 1
            if i.denominator != 1 or below != i:
                raise Reject(f"{where}: the value is not root number {i} of the polynomial")
            return
        if name in ("sqrt", "cbrt") and len(node.args) == 1:
            base, n, p = self._eval(node.args[0], source), 2 if name == "sqrt" else 3, 1
        elif name == "root" and len(node.args) == 2:
            base, n, p = self._eval(node.args[0], source), _rational_of(self._eval(node.args[1], source)), 1
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow):
            base, r = self._eval(node.left, source), _rational_of(self._eval(node.right, source))
            n, p = r.denominator, r.numerator
            if F.sign(base) <= 0:
                raise Reject(f"{where}: a fractional power needs a positive base")
        else:
            raise Reject(f"{where}: not a radical or root")
        if n.denominator != 1 or not 1 <= n <= 1000 or abs(p) > 1000:
            raise Reject(f"{where}: unsupported root degree")
        lhs, rhs = F.one, F.one
        _size_guard(y, int(n))
        _size_guard(base, abs(p))
        for _ in range(int(n)):
            lhs = lhs * y
        for _ in range(abs(p)):
            rhs = rhs * base
        if (lhs != rhs if p >= 0 else lhs * rhs != F.one) or (n % 2 == 0 and F.sign(y) <= 0):
            raise Reject(f"{where}: the value is not the real root it names")


def _key(node: ast.AST, source: str) -> str:
    """An exact spelling of an atom: every numeral replaced by its exact rational (``ast.unparse``
    alone prints floats by repr, so 1e-400 and 0.0 would collide)."""
    node = copy.deepcopy(node)
    for sub in ast.walk(node):
        if isinstance(sub, ast.Constant):
            if type(sub.value) not in (int, float):
                raise Reject("unsupported constant in an expression")
            q = decimal(_segment(source, sub))
            sub.value = f"{q.numerator}/{q.denominator}"  # a string constant: no numeral spells it
    return ast.unparse(node)


@functools.lru_cache(maxsize=16)
def _lines(source: str) -> tuple[bytes, list[int]]:
    """The source's UTF-8 bytes and the byte offset where each line starts (computed once per source), lines broken
    as ast breaks them: at \\r\\n, \\r or \\n."""
    data = source.encode("utf-8")
    return data, [0] + [m.end() for m in re.finditer(rb"\r\n|\r|\n", data)]


def _segment(source: str, node: ast.AST) -> str:
    """The source text of ``node``, as ast.get_source_segment gives it (which re-splits the whole source on every
    call: quadratic in the length); ast's column offsets count UTF-8 bytes."""
    data, starts = _lines(source)
    begin, end = starts[node.lineno - 1] + node.col_offset, starts[node.end_lineno - 1] + node.end_col_offset
    return data[begin:end].decode("utf-8", "replace")


def _value_bits(x) -> int:
    """The size of a value or polynomial in bits (its coefficients' numerators and denominators)."""
    coeffs = x if isinstance(x, list) else [x] if isinstance(x, Fraction) else list(x.c)
    return sum(c.numerator.bit_length() + c.denominator.bit_length() for c in coeffs)


def _is_integer(x) -> bool:
    return (isinstance(x, Fraction) or len(x.c) <= 1) and _rational_of(x).denominator == 1


MAX_POWER_BITS = 400_000


def _size_guard(x, e: int) -> None:
    """Refuse powers whose result would exceed ~MAX_POWER_BITS bits (a certificate could otherwise
    ask for a tower like ((10**1000)**1000)**1000)."""
    coeffs = x if isinstance(x, list) else [x] if isinstance(x, Fraction) else list(x.c)
    bits = max((c.numerator.bit_length() + c.denominator.bit_length() for c in coeffs), default=1)
    if bits * e > MAX_POWER_BITS or (isinstance(x, list) and (len(x) - 1) * e > MAX_DEGREE):
        raise Reject("an expression is too large for the checker")


def _rational_of(x) -> Fraction:
    if isinstance(x, Fraction):
        return x
    if not hasattr(x, "c") or len(x.c) > 1:
        raise Reject("expected a rational number")
    return x.c[0] if x.c else Fraction(0)


def _horner(p: list, y, F):
    acc = F.zero
    for c in reversed(p):
        acc = acc * y + c
    return acc


def _changes(signs: list) -> int:
    return sum(a != b for a, b in zip(signs, signs[1:], strict=False))


class _JsonInt(str):
    """A JSON integer literal, kept as text."""


def _grid(x: object, rows: int, cols: int) -> bool:
    return isinstance(x, list) and len(x) == rows and all(isinstance(y, list) and len(y) == cols for y in x)


def bind(record: dict, file: InputFile, shape: tuple, expected: list, reader: Reader, where: str) -> str:
    """The given file's bytes hash to record["sha256"], its layout is ``shape`` = (m, n, k), and its
    entries equal ``expected`` (A row by row, then b, M row by row, c). Returns what was bound, in one line."""
    digest = hashlib.sha256(file.data).hexdigest()
    if digest != record["sha256"]:
        raise Reject(f"{where}: the SHA-256 of the given file differs from the certificate's")
    if "model" in record:
        try:
            entries, bound = model_entries(file, record["model"], shape)
        except Reject as exc:
            raise type(exc)(f"{where}: {exc}") from None
        if entries != expected:
            raise Reject(f"{where}: the model file's weights differ from the embedded parameters")
        return bound
    try:
        doc = json.loads(file.data.decode("utf-8"), parse_float=str, parse_int=_JsonInt,
                         object_pairs_hook=unique_object)
    except (ValueError, UnicodeDecodeError, RecursionError):
        raise Reject(f"{where}: the given file is not JSON") from None
    except Reject as exc:
        raise Reject(f"{where}: {exc}") from None
    if not isinstance(doc, dict) or not {"M", "A", "b", "c"} <= set(doc) <= {"M", "A", "b", "c", "shape"}:
        raise Reject(f"{where}: the given file is not a parameter file")
    m, n, k = shape
    A, b, M, c = doc["A"], doc["b"], doc["M"], doc["c"]
    if not (_grid(A, n, m) and _grid(M, k, n) and _grid([b], 1, n) and _grid([c], 1, k)):
        raise Reject(f"{where}: the given file has a different shape")
    declared = doc.get("shape")
    if declared is not None and (not isinstance(declared, dict) or not set(declared) <= {"m", "n", "k"} or any(
            not isinstance(val, _JsonInt) or int(val) != dict(zip("mnk", shape, strict=True))[key]
            for key, val in declared.items())):
        raise Reject(f"{where}: the file's shape differs")
    if n == 0 and (declared is None or "m" not in declared):
        raise Reject(f"{where}: a file without neurons must declare shape.m")
    entries = [x for row in A for x in row] + b + [x for row in M for x in row] + c
    if len(entries) != len(expected):
        raise Reject(f"{where}: the given file has a different shape")
    for x, y in zip(entries, expected, strict=True):
        if reader.value(x) != y:
            raise Reject(f"{where}: entry {str(x)[:40]!r} differs from the embedded parameter")
    return f"parameter file, every entry: m = {m}, n = {n}, k = {k}"
