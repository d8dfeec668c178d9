"""certsym_check.binding: exact numerals (``decimal``) and the Reader of parameter-file entries with verified atoms.

``decimal`` is compared with Python's own exact readers (decimal.Decimal, then fractions.Fraction) on generated
numerals, and must refuse malformed ones with a Reject. The Reader is exercised on rationals and on the atoms
sqrt, cbrt, root, fractional powers and CRootOf over number fields declared as a certificate declares them: a
correct atom value is accepted, a wrong root is refused, an atom the certificate does not give is refused.
"""

from __future__ import annotations

from decimal import Decimal
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from certsym_check.atoms import Reader, decimal
from certsym_check.errors import Reject
from certsym_check.fields import MAX_NUMBER_CHARS, QQ, make_field

SQRT2 = {"type": "number_field", "minpoly": ["-2", "0", "1"], "interval": ["1", "2"], "generator": "sqrt(2)"}
CBRT2 = {"type": "number_field", "minpoly": ["-2", "0", "0", "1"], "interval": ["1", "2"], "generator": "2^(1/3)"}

digits = st.text("0123456789", max_size=12)


@st.composite
def numerals(draw) -> str:
    """[+-] digits [. digits] [(e|E) [+-] digits], with a digit in the mantissa and |exponent| ≤ 400."""
    whole, frac = draw(digits), draw(st.none() | digits)
    if not whole and not frac:
        whole = draw(st.text("0123456789", min_size=1, max_size=5))
    text = draw(st.sampled_from(["", "+", "-"])) + whole + ("" if frac is None else "." + frac)
    if draw(st.booleans()):
        exponent = str(draw(st.integers(0, 400))).zfill(draw(st.integers(1, 4)))
        text += draw(st.sampled_from("eE")) + draw(st.sampled_from(["", "+", "-"])) + exponent
    return text


@settings(max_examples=60, deadline=None)
@given(numerals())
def test_decimal_equals_pythons_exact_reading(text: str) -> None:
    """decimal(text) is the exact rational Python's Decimal (and Fraction, where it accepts the spelling) reads."""
    value = decimal(text)
    assert isinstance(value, Fraction)
    assert value == Fraction(Decimal(text))
    try:
        fraction = Fraction(text)
    except ValueError:
        return  # a spelling Fraction refuses ("5." on old Pythons); Decimal's reading was compared above
    assert value == fraction


def test_decimal_exponent_limits() -> None:
    """Exponents up to 10,000 in size are read exactly (zeros in front allowed); beyond that they are refused."""
    assert decimal("1e10000") == Fraction(10) ** 10000
    assert decimal("-2.5E-0010000") == Fraction(-25, 10) / Fraction(10) ** 10000
    for text in ("1e10001", "1e-10001", "1e100000", "1e999999"):
        with pytest.raises(Reject, match="not an exact decimal numeral"):
            decimal(text)


MALFORMED = ["", "+", "-", ".", "+.", "e5", ".e5", "1e", "1e+", "1.2.3", "1e1.5", "--1", "+-1", "1e+-2", " 1",
             "1 ", "0x10", "1_000", "inf", "nan", "1/2", "1,5", "١٢", "²", "1e٣", "1.5f", "e", "1ee2"]


@pytest.mark.parametrize("text", MALFORMED)
def test_decimal_rejects_malformed_numerals(text: str) -> None:
    """Anything but [+-] digits [. digits] [e [+-] digits] is refused with a Reject naming the numeral."""
    with pytest.raises(Reject, match="not an exact decimal numeral"):
        decimal(text)


def test_decimal_rejects_oversized_numerals() -> None:
    """A numeral longer than MAX_NUMBER_CHARS is refused before it is lexed."""
    with pytest.raises(Reject, match="more than"):
        decimal("1" * (MAX_NUMBER_CHARS + 1))
    assert decimal("1" * 5000) == int("1" * 4000) * 10**1000 + int("1" * 1000)


@settings(max_examples=60, deadline=None)
@given(st.fractions(max_denominator=1000), st.fractions(max_denominator=1000), numerals())
def test_reader_reads_rationals_and_expressions_over_q(x: Fraction, y: Fraction, text: str) -> None:
    """Over Q with no atoms: plain numerals, p/q of numerals and arithmetic expressions of them evaluate to the
    exact rationals Fraction computes."""
    reader = Reader(QQ(), [], "inputs[0]")
    assert reader.value(text) == Fraction(Decimal(text))
    assert reader.value(f"{x.numerator}/{x.denominator}") == x
    expr = f"({x.numerator})/({x.denominator}) * ({y.numerator}) - ({y.denominator})^2 + 1/4"
    assert reader.value(expr) == x * y.numerator - y.denominator**2 + Fraction(1, 4)
    assert reader.value(f"-({x.numerator}/{x.denominator})**3") == -x**3


def test_reader_rejects_division_by_zero_and_unknown_syntax() -> None:
    """1/0, a name, a call of an unknown function and a non-numeric constant are refused."""
    reader = Reader(QQ(), [], "inputs[0]")
    for text in ("1/0", "x", "exp(1)", "'1'", "1 if 1 else 2", "[1]", "2**(1/2)"):
        with pytest.raises(Reject):
            reader.value(text)


def test_reader_verifies_square_root_atoms() -> None:
    """Over Q(√2): the atom sqrt(2) = α is accepted and entries using it evaluate exactly; −α, α + 1 and a rational
    are not square roots of 2 (refused); an entry needing sqrt(3) is refused as not given."""
    F = make_field(SQRT2)
    reader = Reader(F, [{"expr": "sqrt(2)", "value": ["0", "1"]}], "inputs[0]")
    alpha = F.number(["0", "1"])
    assert reader.value("sqrt(2)") == alpha
    assert reader.value("sqrt(2)*sqrt(2)") == F.number(["2"])
    assert reader.value("1/2 + sqrt(2)/5") == F.number(["1/2", "1/5"])
    assert reader.value("(1 - sqrt(2))^2") == F.number(["3", "-2"])
    assert reader.value("sqrt(2.0)") == alpha  # atoms are keyed by exact value: 2.0 and 2 are one numeral
    with pytest.raises(Reject, match="not given"):
        reader.value("sqrt(3)")
    for wrong in (["0", "-1"], ["1", "1"], ["2"], ["0", "2"]):
        with pytest.raises(Reject, match="not the real root"):
            Reader(F, [{"expr": "sqrt(2)", "value": wrong}], "inputs[0]")


def test_reader_verifies_cube_roots_and_fractional_powers() -> None:
    """Over Q(∛2): cbrt(2), root(2, 3) and 2^(1/3) are each α; 2^(2/3) is α²; the value α² for cbrt(2) and α for
    2^(2/3) are refused; sqrt(4) = 2 is a rational atom, and 2 is accepted but −2 is not."""
    F = make_field(CBRT2)
    alpha, square = F.number(["0", "1"]), F.number(["0", "0", "1"])
    for expr in ("cbrt(2)", "root(2, 3)", "2^(1/3)", "2**(1/3)"):
        reader = Reader(F, [{"expr": expr, "value": ["0", "1"]}], "inputs[0]")
        assert reader.value(expr) == alpha
        assert reader.value(f"({expr})^3 - 2") == F.zero
    assert Reader(F, [{"expr": "2^(2/3)", "value": ["0", "0", "1"]}], "a").value("2^(2/3)") == square
    with pytest.raises(Reject, match="not the real root"):
        Reader(F, [{"expr": "cbrt(2)", "value": ["0", "0", "1"]}], "a")
    with pytest.raises(Reject, match="not the real root"):
        Reader(F, [{"expr": "2^(2/3)", "value": ["0", "1"]}], "a")
    assert Reader(QQ(), [{"expr": "sqrt(4)", "value": "2"}], "a").value("sqrt(4) + 1") == 3
    with pytest.raises(Reject, match="not the real root"):
        Reader(QQ(), [{"expr": "sqrt(4)", "value": "-2"}], "a")


def test_reader_verifies_crootof_by_its_index() -> None:
    """CRootOf(x^2 - 2, i): root 1 (in increasing order) is √2 = α, root 0 is −α; swapping the values is refused;
    a polynomial that is not squarefree is refused."""
    F = make_field(SQRT2)
    alpha = F.number(["0", "1"])
    assert Reader(F, [{"expr": "CRootOf(x**2 - 2, 1)", "value": ["0", "1"]}], "a").value(
        "CRootOf(x**2 - 2, 1)") == alpha
    assert Reader(F, [{"expr": "CRootOf(x^2 - 2, 0)", "value": ["0", "-1"]}], "a").value(
        "2*CRootOf(x^2 - 2, 0)") == F.number(["0", "-2"])
    with pytest.raises(Reject, match="root number"):
        Reader(F, [{"expr": "CRootOf(x^2 - 2, 0)", "value": ["0", "1"]}], "a")
    with pytest.raises(Reject, match="squarefree"):
        Reader(F, [{"expr": "CRootOf((x^2 - 2)^2, 1)", "value": ["0", "1"]}], "a")


def test_reader_rejects_malformed_atom_lists() -> None:
    """atoms must be a list of objects with exactly the keys expr and value, and name a radical or root."""
    F = make_field(SQRT2)
    bad = [({"expr": "sqrt(2)", "value": ["0", "1"]}, "must be a list"),
           ([{"expr": "sqrt(2)"}], "exactly the keys"),
           ([{"expr": "sqrt(2)", "value": ["0", "1"], "note": "x"}], "exactly the keys"),
           (["sqrt(2)"], "exactly the keys"),
           ([{"expr": "1 + 1", "value": ["2"]}], "not a radical or root"),
           ([{"expr": "sqrt(2)", "value": "0/1 + 1"}], "not a number-field element")]
    for atoms, reason in bad:
        with pytest.raises(Reject, match=reason):
            Reader(F, atoms, "inputs[0]")
