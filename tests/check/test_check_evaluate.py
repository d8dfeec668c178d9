"""The checker's exact evaluation of a witness (``certsym_check.core.Net.evaluate``): over Q its outputs are summed
in integers over one common denominator; they must be exactly the plain Fraction evaluation, written here."""

from __future__ import annotations

from fractions import Fraction

from hypothesis import given, settings
from hypothesis import strategies as st

from certsym_check.budget import metered
from certsym_check.core import Net
from certsym_check.fields import QQ

NUMBERS = st.one_of(st.fractions(max_denominator=10**6), st.integers(-2**80, 2**80).map(lambda p: Fraction(p, 2**90)),
                    st.integers(-50, 50).map(Fraction))


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_the_integer_sum_is_the_fraction_sum(data) -> None:
    m, n, k = data.draw(st.integers(1, 3)), data.draw(st.integers(0, 8)), data.draw(st.integers(1, 3))

    def grid(rows: int, cols: int) -> list[list[str]]:
        return [[str(data.draw(NUMBERS)) for _ in range(cols)] for _ in range(rows)]

    params = {"A": grid(n, m), "b": grid(1, n)[0], "M": grid(k, n), "c": grid(1, k)[0], "shape": {"m": m, "n": n,
                                                                                                   "k": k}}
    x = [data.draw(NUMBERS) if data.draw(st.booleans()) else Fraction(0) for _ in range(m)]
    with metered():
        net = Net(QQ(), params, "theta")
        got = net.evaluate(x)
    A = [[Fraction(t) for t in row] for row in params["A"]]
    b, c = [Fraction(t) for t in params["b"]], [Fraction(t) for t in params["c"]]
    M = [[Fraction(t) for t in row] for row in params["M"]]
    z = [max(b[i] + sum((A[i][q] * x[q] for q in range(m)), Fraction(0)), Fraction(0)) for i in range(n)]
    assert got == [c[j] + sum((M[j][i] * z[i] for i in range(n)), Fraction(0)) for j in range(k)]
