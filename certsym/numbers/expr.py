"""Safe parsing of real algebraic expressions, and joining many of them into one number field.

Grammar (a subset of Python expression syntax, read with ``ast``; nothing is ever evaluated as
code): rational and decimal numerals, ``+ - * /``, powers ``**`` or ``^`` (same meaning) with rational exponents,
``sqrt(e)``, ``cbrt(e)``, ``root(e, n)`` (the real n-th root), and ``CRootOf(p(x), i)`` (the i-th
root of a rational polynomial in ``x``, real roots first in increasing order, as in sympy).
Transcendental names (pi, e, E, exp, log, ...) and non-real values (I, sqrt(-2), non-real roots)
are rejected with a one-line message.

Joining: ``common_field`` takes every irrational constant met in the input and finds one
primitive element α with Q(α) containing them all (sympy's primitive element algorithm), its
minimal polynomial and a rational isolating interval, then writes each constant as a polynomial
in α. Cost: dominated by the primitive element computation, polynomial in the total degree.
"""

from __future__ import annotations

import ast
import warnings
from collections.abc import Iterable

import sympy
from flint import fmpq, fmpq_poly

from certsym.errors import InputError
from certsym.numbers.algebraic import NumberField
from certsym.numbers.rational import DEFAULT_MAX_DIGITS, check_digits, parse_rational

_X = sympy.Symbol("x")
_TRANSCENDENTAL = {"pi", "e", "E", "exp", "log", "ln", "sin", "cos", "tan", "atan", "oo", "inf", "nan"}
_IMAGINARY = {"I", "i", "j", "J"}
_MAX_EXPONENT = 1000


def _fail(text: str, why: str) -> InputError:
    return InputError(f"cannot read {text.strip()!r}: {why}")


class _Builder:
    """Turns a whitelisted AST into a sympy expression."""

    def __init__(self, text: str, max_digits: int):
        self.text = text
        self.max_digits = max_digits
        # Radicals and roots as written ("sqrt(2)", "2 ** (1 / 3)", "CRootOf(...)"), innermost first:
        # a certificate lists their values so that the checker can re-read the file.
        self.atoms: dict[str, sympy.Expr] = {}

    def _atom(self, node: ast.AST, value: sympy.Expr) -> sympy.Expr:
        exact = fmpq(int(value.p), int(value.q)) if value.is_Rational else value
        # as written: ast.unparse would respell numerals by their float repr (0.1000000000000000000001 as 0.1)
        self.atoms.setdefault(ast.get_source_segment(self.text, node) or ast.unparse(node), exact)
        return value

    def build(self, node: ast.AST, poly_var: bool = False) -> sympy.Expr:
        method = getattr(self, "_" + type(node).__name__, None)
        if method is None:
            raise _fail(self.text, f"unsupported syntax ({type(node).__name__})")
        return method(node, poly_var)

    def _Constant(self, node: ast.Constant, poly_var: bool) -> sympy.Expr:
        if isinstance(node.value, complex):
            raise _fail(self.text, "non-real number")
        if isinstance(node.value, bool) or not isinstance(node.value, int | float):
            raise _fail(self.text, "not a number")
        literal = ast.get_source_segment(self.text, node)
        q = parse_rational(literal or "", self.max_digits)
        if q is None:
            raise _fail(self.text, f"bad numeral {literal!r}")
        return sympy.Rational(int(q.p), int(q.q))

    def _Name(self, node: ast.Name, poly_var: bool) -> sympy.Expr:
        if node.id == "x" and poly_var:
            return _X
        if node.id in _IMAGINARY:
            raise _fail(self.text, "non-real number (imaginary unit)")
        if node.id in _TRANSCENDENTAL:
            raise _fail(self.text, f"{node.id!r} is not an algebraic number")
        raise _fail(self.text, f"unknown name {node.id!r}")

    def _UnaryOp(self, node: ast.UnaryOp, poly_var: bool) -> sympy.Expr:
        operand = self.build(node.operand, poly_var)
        if isinstance(node.op, ast.USub):
            return -operand
        if isinstance(node.op, ast.UAdd):
            return operand
        raise _fail(self.text, "unsupported unary operator")

    def _BinOp(self, node: ast.BinOp, poly_var: bool) -> sympy.Expr:
        left = self.build(node.left, poly_var)
        right = self.build(node.right, poly_var)
        op = node.op
        if isinstance(op, ast.Add):
            return left + right
        if isinstance(op, ast.Sub):
            return left - right
        if isinstance(op, ast.Mult):
            return left * right
        if isinstance(op, ast.Div):
            if right == 0:
                raise _fail(self.text, "division by zero")
            return left / right
        if isinstance(op, ast.Pow):
            value = self._power(left, right)
            return value if right.is_Integer else self._atom(node, value)
        raise _fail(self.text, "unsupported operator")

    def _power(self, base: sympy.Expr, exponent: sympy.Expr) -> sympy.Expr:
        if not exponent.is_Rational:
            raise _fail(self.text, "exponents must be rational numbers")
        if abs(exponent.p) > _MAX_EXPONENT or exponent.q > _MAX_EXPONENT:
            raise _fail(self.text, f"exponent {exponent} is too large (limit {_MAX_EXPONENT})")
        if base == 0 and exponent < 0:
            raise _fail(self.text, "division by zero")
        if base.is_Rational:
            digits = len(str(abs(base.p))) + len(str(base.q))
            if digits * abs(exponent.p) > self.max_digits * 2:
                raise _fail(self.text, f"power exceeds the limit of {self.max_digits} digits")
        if exponent.q != 1 and base.is_negative:
            raise _fail(self.text, "non-real number (fractional power of a negative number)")
        return base**exponent

    def _Call(self, node: ast.Call, poly_var: bool) -> sympy.Expr:
        if not isinstance(node.func, ast.Name) or node.keywords:
            raise _fail(self.text, "unsupported function call")
        name = node.func.id
        if name in _TRANSCENDENTAL:
            raise _fail(self.text, f"{name!r} is not algebraic")
        return self._atom(node, self._function(name, node.args, poly_var))

    def _function(self, name: str, args: list[ast.AST], poly_var: bool) -> sympy.Expr:
        if name == "sqrt" and len(args) == 1:
            return self._power(self.build(args[0], poly_var), sympy.Rational(1, 2))
        if name == "cbrt" and len(args) == 1:
            return sympy.real_root(self.build(args[0], poly_var), 3)
        if name == "root" and len(args) == 2:
            n = self.build(args[1], poly_var)
            if not (n.is_Integer and 1 <= n <= _MAX_EXPONENT):
                raise _fail(self.text, "root(e, n) needs an integer 1 <= n <= 1000")
            base = self.build(args[0], poly_var)
            if base.is_negative and n % 2 == 0:
                raise _fail(self.text, "non-real number (even root of a negative number)")
            return sympy.real_root(base, int(n))
        if name in ("CRootOf", "rootof", "RootOf") and len(args) == 2:
            return self._rootof(args[0], args[1])
        raise _fail(self.text, f"unknown function {name}() or wrong number of arguments")

    def _rootof(self, poly_node: ast.AST, index_node: ast.AST) -> sympy.Expr:
        poly_expr = self.build(poly_node, poly_var=True)
        index = self.build(index_node)
        if not index.is_Integer:
            raise _fail(self.text, "the root index must be an integer")
        try:
            poly = sympy.Poly(poly_expr, _X, domain="QQ")
        except (sympy.polys.polyerrors.PolynomialError, sympy.polys.polyerrors.CoercionFailed,
                sympy.polys.polyerrors.GeneratorsError) as exc:
            raise _fail(self.text, "CRootOf needs a polynomial in x with rational coefficients") from exc
        if poly.degree() < 1:
            raise _fail(self.text, "CRootOf needs a polynomial of degree at least 1")
        if sympy.degree(sympy.gcd(poly, poly.diff(_X))) > 0:
            raise _fail(self.text, "CRootOf needs a squarefree polynomial")
        if poly.degree() > 64:  # the checker's bound (certificates/FORMAT.md, "Bounds")
            raise _fail(self.text, "CRootOf polynomial degree is over the limit of 64")
        bits = sum(abs(int(c.p)).bit_length() + int(c.q).bit_length() for c in poly.all_coeffs())
        if bits > 1 << 14:  # the checker's bound on the polynomial's coefficients, numerators and denominators
            raise _fail(self.text, f"the CRootOf polynomial has {bits} coefficient bits, over the limit of 16384")
        if int(index) < 0:
            raise _fail(self.text, "CRootOf needs a root index 0, 1, ... (the roots in increasing order)")
        try:
            return sympy.CRootOf(poly, int(index))
        except IndexError as exc:
            raise _fail(self.text, f"root index {index} out of range") from exc


def parse_expression(text: str, max_digits: int = DEFAULT_MAX_DIGITS) -> sympy.Expr:
    """Parse a real algebraic number written as an expression; InputError if it is not one."""
    return _parse(text, max_digits)[0]


def _parse(text: str, max_digits: int) -> tuple[sympy.Expr, dict[str, sympy.Expr]]:
    check_digits(text, max_digits)
    if len(text) > 100 * max_digits:
        raise _fail(text[:40], "expression is too long")
    # "^" is a power here, and must bind like "**" (Python's "^" binds looser than "-").
    source = text.strip().replace("^", "**")
    try:
        with warnings.catch_warnings():  # Python's SyntaxWarnings must not reach the terminal
            warnings.simplefilter("ignore")
            tree = ast.parse(source, mode="eval")
        builder = _Builder(source, max_digits)
        expr = builder.build(tree.body)
    except (SyntaxError, ValueError) as exc:
        if isinstance(exc, InputError):
            raise
        raise _fail(text, "not a number or an algebraic expression") from None
    except (RecursionError, MemoryError):
        raise _fail(text[:40], "expression is nested too deeply") from None
    if expr.free_symbols:
        raise _fail(text, "unknown name 'x'")
    if expr.is_real is not True:
        if expr.is_real is False:
            raise _fail(text, "non-real number")
        raise _fail(text, "cannot establish that this number is real")
    return expr, builder.atoms


def parse_number(text: str, max_digits: int = DEFAULT_MAX_DIGITS) -> fmpq | sympy.Expr:
    """A rational (``fmpq``) when ``text`` is a rational numeral or a rational expression,
    else a sympy expression for a real algebraic irrational."""
    return parse_number_atoms(text, max_digits)[0]


def parse_number_atoms(text: str, max_digits: int = DEFAULT_MAX_DIGITS) -> tuple[fmpq | sympy.Expr, dict]:
    """``parse_number`` and ``syntactic_atoms`` in one parse."""
    q = parse_rational(text, max_digits)
    if q is not None:
        return q, {}
    expr, atoms = _parse(text, max_digits)
    if expr.is_Rational:
        return fmpq(int(expr.p), int(expr.q)), atoms
    return expr, atoms


def _to_fmpq(c) -> fmpq:
    return c if isinstance(c, fmpq) else fmpq(int(c.numerator), int(c.denominator))


def common_field(exprs: Iterable[sympy.Expr]) -> tuple[NumberField, dict[sympy.Expr, object]]:
    """One real number field Q(α) holding every expression, and each expression as an element.

    Implements the primitive element theorem through sympy; α's isolating interval is chosen
    among the exact isolating intervals of its minimal polynomial (sympy's ``intervals``) and
    re-verified exactly when the NumberField is built.
    """
    exprs = list(dict.fromkeys(exprs))
    # Generate the field by the radicals and roots inside the expressions (sorted), not by the
    # expressions themselves: files that use the same radicals then get the same presentation of
    # the field, so their canonical hashes can be compared.
    generators: set[sympy.Expr] = set()
    for e in exprs:
        generators |= {p for p in e.atoms(sympy.Pow) if not p.exp.is_Integer}
        generators |= e.atoms(sympy.CRootOf)
    try:
        K = sympy.QQ.algebraic_field(*sorted(generators, key=sympy.default_sort_key))
    except Exception as exc:  # sympy raises several types here
        raise InputError(f"cannot build a number field for {exprs[0]}: {exc}") from exc
    alpha = K.ext.as_expr()
    mod = [_to_fmpq(c) for c in reversed(K.mod.to_list())]
    poly = sympy.Poly([sympy.Rational(int(c.p), int(c.q)) for c in reversed(mod)], _X)
    value = sympy.N(alpha, 60)
    lo = hi = None
    for eps in (None, sympy.Rational(1, 10**6), sympy.Rational(1, 10**30)):
        kw = {} if eps is None else {"eps": eps}
        hits = [iv for iv, _ in poly.intervals(**kw) if iv[0] - 1e-50 <= value <= iv[1] + 1e-50]
        if len(hits) == 1:
            lo, hi = hits[0]
            break
    if lo is None:
        raise InputError(f"cannot isolate the real number {alpha}")
    field = NumberField(fmpq_poly(mod), fmpq(int(lo.p), int(lo.q)), fmpq(int(hi.p), int(hi.q)),
                        str(alpha))
    elements = {}
    for e in exprs:
        coeffs = [_to_fmpq(c) for c in reversed(K.from_sympy(e).to_list())]
        elements[e] = field.from_coefficients(coeffs)
    return field, elements
