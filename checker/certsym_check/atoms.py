"""The entries of parameter files, read in the certificate's field, and the atoms they may contain.

Entries are numerals or algebraic expressions; the radicals and roots they contain ("atoms") are listed in the
certificate with their values (every replay verifies them, bound to files or not), and each value is verified by
its defining property, never searched for:
- sqrt(e), cbrt(e), root(e, n), e ** (p/q): y^n = e^p, and y > 0 when n is even (for a fractional
  power e > 0 as well); for odd n the real root is unique.
- CRootOf(P, i): P squarefree with rational coefficients, P(y) = 0, and exactly i real roots of P
  below y (Sturm sequence evaluated at y).
"""

from __future__ import annotations

import ast
import functools
import re
import warnings
from fractions import Fraction

from certsym_check.budget import charge, cost, max_size, plus, size
from certsym_check.errors import Reject
from certsym_check.fields import MAX_DEGREE, MAX_NUMBER_CHARS, integer, poly_bound, poly_mul, poly_sub, sturm, trim

_ROOTS = {"sqrt", "cbrt", "root", "CRootOf", "rootof", "RootOf"}
_DIGITS = frozenset("0123456789")


def _digits(text: str) -> bool:
    return _DIGITS.issuperset(text)


def _signed(text: str) -> tuple[int, str]:
    """(−1 or 1, the rest) for text with an optional leading sign."""
    if text[:1] in ("+", "-"):
        return (-1 if text[0] == "-" else 1), text[1:]
    return 1, text


def decimal(text: str) -> Fraction:
    """An exact decimal numeral ("0.1" is 1/10): [+-] digits [. digits] [e [+-] digits], with a digit before the
    exponent; the exponent is at most 10,000 in size. Lexed by splitting at 'e' and '.' (linear time, no
    backtracking), after the length is checked."""
    if len(text) > MAX_NUMBER_CHARS:
        raise Reject(f"a numeral of more than {MAX_NUMBER_CHARS} characters")
    mantissa, e, exponent = text.lower().partition("e")
    sign, mantissa = _signed(mantissa)
    exp_sign, exponent = _signed(exponent)
    whole, _, frac = mantissa.partition(".")
    if not (whole or frac) or not _digits(whole) or not _digits(frac) or (e and not exponent) \
            or not _digits(exponent) or len(exponent.lstrip("0")) > 5 or int(exponent or 0) > 10_000:
        raise Reject(f"not an exact decimal numeral: {text[:40]!r}")
    value = Fraction(integer((whole or "0") + frac), 10 ** len(frac)) * Fraction(10) ** (exp_sign * int(exponent or 0))
    return sign * value


_NUMERAL = frozenset("0123456789+-.eE")


def _plain(text: object) -> Fraction | None:
    """A numeral or a quotient p/q of two numerals, exactly; None for anything else (then parsed as an expression)."""
    if not isinstance(text, str) or len(text) > MAX_NUMBER_CHARS:
        return None
    parts = text.strip().split("/")
    if len(parts) > 2 or not all(part and _NUMERAL.issuperset(part) for part in parts):
        return None
    try:
        values = [decimal(part) for part in parts]
    except Reject:
        return None
    if len(values) == 2 and values[1] == 0:
        raise Reject(f"division by zero in {text[:40]!r}")
    return values[0] if len(values) == 1 else values[0] / values[1]


def _parse(text: object) -> tuple[ast.AST, str]:
    """The expression's syntax tree (charged to the work budget by its length: parsing, keys and numerals are
    linear in it)."""
    if not isinstance(text, str) or len(text) > MAX_NUMBER_CHARS:
        raise Reject(f"not an expression: {str(text)[:40]!r}")
    charge(4 + len(text) // 2, "an expression")
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
        """The entry's value: a plain numeral or p/q of numerals read directly (what ast would compute from it), any
        other expression parsed and evaluated with the certificate's atoms."""
        plain = _plain(text)
        if plain is not None:
            return self.F.zero + plain
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
                exponent = self._eval(node.right, source)  # once: nested powers must not evaluate it twice
                if poly or _is_integer(exponent):
                    return self._power(node, source, poly, _rational_of(exponent))
                return self._atom(node, source)
            a, b = self._eval(node.left, source, poly), self._eval(node.right, source, poly)
            if _value_bits(a) + _value_bits(b) > MAX_POWER_BITS:
                raise Reject("an expression is too large for the checker")
            if poly:
                if isinstance(node.op, ast.Mult) and len(a) + len(b) - 2 > MAX_DEGREE:
                    raise Reject(f"a polynomial of degree above {MAX_DEGREE}")
                if isinstance(node.op, ast.Div) and len(b) != 1:
                    raise Reject("division by a polynomial")
            elif isinstance(a, Fraction) and isinstance(b, Fraction):
                charge(cost(size(a), size(b)), "an expression")
            if isinstance(node.op, ast.Add):
                return poly_sub(a, [-c for c in b]) if poly else a + b
            if isinstance(node.op, ast.Sub):
                return poly_sub(a, b) if poly else a - b
            if isinstance(node.op, ast.Mult):
                return poly_mul(a, b) if poly else a * b
            if isinstance(node.op, ast.Div):
                if poly:
                    charge(len(a) * cost(max_size(a), size(b[0])), "an expression")
                    return [c / b[0] for c in a]
                return a * F.inverse(b)
        if not poly and isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _ROOTS \
                and not node.keywords:
            return self._atom(node, source)
        raise Reject(f"unsupported expression {ast.unparse(node)[:40]!r}")

    def _power(self, node: ast.BinOp, source: str, poly: bool, e: Fraction):
        """An integer power: of a value (exponent −1000 … 1000), or inside a CRootOf polynomial of a polynomial in x
        (0 … 200); a constant inside a polynomial is a rational, read as one (2**(-1) is 1/2)."""
        base = self._eval(node.left, source, poly)
        constant = poly and len(base) <= 1
        if e.denominator != 1 or not -1000 <= e <= (200 if poly and not constant else 1000) \
                or (poly and not constant and e < 0):
            raise Reject("unsupported exponent")
        if constant:
            value = base[0] if base else Fraction(0)
            if e < 0 and value == 0:
                raise Reject("division by zero")
            out = _repeat(value, abs(int(e)), Fraction(1))
            return trim([out if e >= 0 else 1 / out])
        out = _repeat(base, abs(int(e)), [Fraction(1)] if poly else self.F.one)
        return out if e >= 0 else self.F.inverse(out)

    def _atom(self, node: ast.AST, source: str):
        key = _key(node, source)
        if key not in self.atoms:
            raise Reject(f"the value of {_segment(source, node)[:40]!r} is not given (and verified) in the certificate")
        return self.atoms[key]

    def _verify(self, node: ast.AST, source: str, y, where: str) -> None:
        F = self.F
        name = node.func.id if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) else None
        if name in ("CRootOf", "rootof", "RootOf") and len(node.args) == 2:
            p = poly_bound(trim(self._eval(node.args[0], source, poly=True)), where)
            i = _rational_of(self._eval(node.args[1], source))
            if len(p) < 2:
                raise Reject(f"{where}: not a root of a squarefree rational polynomial")
            chain = sturm(p, where)
            if len(chain[-1]) > 1 or _horner(p, y, F) != 0:
                raise Reject(f"{where}: not a root of a squarefree rational polynomial")
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
        lhs, rhs = _repeat(y, int(n), F.one), _repeat(base, abs(p), F.one)
        if (lhs != rhs if p >= 0 else lhs * rhs != F.one) or (n % 2 == 0 and F.sign(y) <= 0):
            raise Reject(f"{where}: the value is not the real root it names")


_SYMBOLS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.Pow: "**", ast.USub: "-", ast.UAdd: "+"}


def _key(node: ast.AST, source: str) -> str:
    """An exact spelling of an atom, fully parenthesized, with every numeral replaced by its exact rational in hex
    (so 0.1 and 0.10 agree, 1e-400 and 0.0 do not, and no int-to-text limit applies). Linear in the atom's size."""
    if isinstance(node, ast.Constant):
        if type(node.value) not in (int, float):
            raise Reject("unsupported constant in an expression")
        q = decimal(_segment(source, node))
        return f"{q.numerator:#x}/{q.denominator:#x}"
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.UnaryOp) and type(node.op) in _SYMBOLS:
        return f"({_SYMBOLS[type(node.op)]}{_key(node.operand, source)})"
    if isinstance(node, ast.BinOp) and type(node.op) in _SYMBOLS:
        return f"({_key(node.left, source)}{_SYMBOLS[type(node.op)]}{_key(node.right, source)})"
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and not node.keywords:
        return f"{node.func.id}({','.join(_key(a, source) for a in node.args)})"
    raise Reject(f"unsupported expression {ast.unparse(node)[:40]!r}")


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


def _repeat(base, e: int, one):
    """one · base^e by e products (a rational, a number-field element or a polynomial), refused before it starts when
    base's total bits × e exceed MAX_POWER_BITS (or a polynomial's degree would exceed MAX_DEGREE), and as soon as an
    intermediate power has more than MAX_POWER_BITS bits in all (over Q(α) the reduction modulo the polynomial can
    make a power grow faster than the base's size predicts)."""
    if _value_bits(base) * e > MAX_POWER_BITS or (isinstance(base, list) and (len(base) - 1) * e > MAX_DEGREE):
        raise Reject("a power is too large for the checker (its base's bits × the exponent exceed "
                     f"{MAX_POWER_BITS})")
    out = one
    for _ in range(e):
        if isinstance(base, Fraction):
            charge(cost(size(out), size(base)), "a power")
        out = poly_mul(out, base) if isinstance(base, list) else out * base
        if _value_bits(out) > MAX_POWER_BITS:
            raise Reject(f"a power is too large for the checker (an intermediate power exceeds {MAX_POWER_BITS} bits)")
    return out


def _rational_of(x) -> Fraction:
    if isinstance(x, Fraction):
        return x
    if not hasattr(x, "c") or len(x.c) > 1:
        raise Reject("expected a rational number")
    return x.c[0] if x.c else Fraction(0)


def _horner(p: list, y, F):
    acc = F.zero
    for c in reversed(p):
        if isinstance(y, Fraction):  # over Q(α) the field's own arithmetic is charged
            charge(cost(size(acc), size(y)) + cost(plus(size(acc), size(y)), size(c)), "a polynomial at a root's value")
        acc = acc * y + c
    return acc


def _changes(signs: list) -> int:
    return sum(a != b for a, b in zip(signs, signs[1:], strict=False))
