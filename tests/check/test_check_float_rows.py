"""The checker's whole-row test for float32 rows, ``scaled_float32`` (y = 2^e·x decided on the rows' bits as
integers), against exact rationals; its byte test of finiteness; and certificates over model files whose matchings
it decides, honest and forged.
"""

from __future__ import annotations

import hashlib
import json
import math
from array import array
from fractions import Fraction

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from certsym.cli import main
from certsym_check.core import float32_below_range_top, scaled_float32
from certsym_check.envelope import finite_tensor as _finite
from certsym_check.readers.tensor import Tensor

float32 = st.one_of(
    st.floats(width=32, allow_nan=False, allow_infinity=False),
    st.sampled_from([0.0, -0.0, 1e-45, -1e-45, 1.1754942e-38, 1.1754944e-38, 3.4028235e38, -3.4028235e38]))


def _view(xs) -> memoryview:
    return memoryview(array("f", xs))


def _proved(x, y, e: int) -> bool:
    """What the whole-row test promises to prove, entry by entry in exact arithmetic: zeros equal bit for bit
    (sign included), every other x_t normal with 2^e·x_t normal too, and y_t = 2^e·x_t."""
    if not -253 <= e <= 253 or len(x) != len(y):
        return False
    for a, b in zip(x, y, strict=True):
        if a == 0:
            if b != 0 or math.copysign(1, a) != math.copysign(1, b):
                return False
        elif not (abs(a) >= 2.0 ** -126 and 2.0 ** -126 <= abs(Fraction(a) * Fraction(2) ** e) < 2 ** 128) or \
                Fraction(b) != Fraction(a) * Fraction(2) ** e:
            return False
    return True


@settings(max_examples=400, deadline=None)
@given(st.lists(float32, min_size=1, max_size=40), st.integers(-300, 300), st.integers(0, 3), st.data())
def test_an_accepted_row_is_exactly_scaled(x, e, how, data) -> None:
    """The test answers True exactly when y = 2^e·x in exact arithmetic within its stated range (``_proved``).
    y is 2^e·x rounded to float32 (exact or not), a word of it moved by one unit, or arbitrary."""
    with np.errstate(over="ignore", under="ignore"):
        y = (np.array(x, dtype=np.float32) * np.float32(2.0) ** np.float32(max(min(e, 127), -149))).tolist() \
            if -149 <= e <= 127 else [0.0] * len(x)
    if how == 1:
        t = data.draw(st.integers(0, len(x) - 1))
        y[t] = float(np.nextafter(np.float32(y[t]), np.float32(np.inf)))
    elif how == 2:
        y = data.draw(st.lists(float32, min_size=len(x), max_size=len(x)))
    y = [0.0 if not np.isfinite(t) else t for t in y]
    assert scaled_float32(_view(x), _view(y), e) == _proved(array("f", x), array("f", y), e)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(min_value=2.0 ** -100, max_value=2.0 ** 100, width=32), min_size=1, max_size=40),
       st.lists(st.booleans(), min_size=40, max_size=40), st.integers(-20, 20))
def test_normal_rows_scaled_by_a_power_of_two_are_recognized(x, signs, e) -> None:
    """Completeness on the common case: normal entries (and +0) whose exponents stay in range."""
    x = [(-a if s else a) for a, s in zip(x, signs, strict=False)] + [0.0]
    y = [a * 2.0 ** e for a in x]
    assert scaled_float32(_view(x), _view(y), e)
    assert not scaled_float32(_view(x), _view(y), e + 1)


def test_words_at_the_edges() -> None:
    big, tiny = 2.0 ** 127, 2.0 ** -126  # the largest and smallest normal exponents
    assert scaled_float32(_view([tiny]), _view([tiny * 2]), 1) and not scaled_float32(_view([big]), _view([0.0]), 1)
    assert not scaled_float32(_view([2.0 ** -140]), _view([2.0 ** -139]), 1)  # subnormal: left to the float test
    assert not scaled_float32(_view([-0.0]), _view([0.0]), 3)  # −0 against +0: left to the float test
    assert scaled_float32(_view([-0.0, 0.0]), _view([-0.0, 0.0]), 3)
    assert not scaled_float32(_view([1.0]), _view([2.0]), 300)  # beyond the exponent range of the test
    assert not scaled_float32(_view([1.0, 2.0]), _view([2.0]), 1)


def _files(tmp_path, scale_exponents, tweak=None):
    rng = np.random.default_rng(4)
    n, m, k = 12, 9, 3
    W1, b1 = rng.standard_normal((n, m)).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    W2, b2 = rng.standard_normal((k, n)).astype(np.float32), rng.standard_normal(k).astype(np.float32)
    W1[0, :3] = [1e-42, -0.0, 0.0]  # a subnormal entry and zeros of both signs
    perm = rng.permutation(n)
    exps = np.array(scale_exponents)
    exps[perm == 0] = 2  # the row with the subnormal entry: scaled up, so that it stays exact
    s = (2.0 ** exps).astype(np.float32)
    V1 = (W1[perm] * s[:, None]).astype(np.float32)
    if tweak is not None:
        V1[tweak] = np.nextafter(V1[tweak], np.float32(np.inf))
    a, b = tmp_path / "a.npz", tmp_path / "b.npz"
    np.savez(a, **{"0.weight": W1, "0.bias": b1, "2.weight": W2, "2.bias": b2})
    np.savez(b, **{"0.weight": V1, "0.bias": b1[perm] * s, "2.weight": W2[:, perm] / s, "2.bias": b2})
    return a, b


def test_model_file_certificates_with_power_of_two_scales(tmp_path, capfd) -> None:
    exps = [3, -2, 0, 1, 5, -7, 2, 0, -1, 4, 6, -3]
    a, b = _files(tmp_path, exps)
    cert = tmp_path / "c.json"
    assert main(["equiv", str(a), str(b), "--reference", "--cert", str(cert)]) == 0
    assert main(["check", str(cert), "--inputs", str(a), str(b)]) == 0
    assert "VALID equivalent" in capfd.readouterr().out
    # the same certificate bound to a second file whose row differs by one ulp in one weight: refused
    doc = json.loads(cert.read_text())
    for where in [(3, 4), (5, 8)]:
        folder = tmp_path / f"f{where[0]}"
        folder.mkdir()
        _, forged = _files(folder, exps, tweak=where)
        doc["inputs"][1]["sha256"] = hashlib.sha256(forged.read_bytes()).hexdigest()
        bad = tmp_path / f"bad{where[0]}.json"
        bad.write_text(json.dumps(doc))
        capfd.readouterr()
        assert main(["check", str(bad), "--inputs", str(a), str(forged)]) == 1
        assert "INVALID" in capfd.readouterr().out


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, 2**32 - 1), max_size=40), st.booleans())
def test_the_byte_test_of_finiteness_never_passes_a_nan_or_infinity(words, view) -> None:
    """``float32_below_range_top`` says True only for finite entries, and says it whenever every entry is below
    2^127 in magnitude; the checker's ``_finite`` agrees with math.isfinite on every entry either way."""
    values = array("f", array("I", words).tobytes())
    storage = memoryview(values.tobytes()).cast("B").cast("f") if view else values
    floats = list(values)
    got = float32_below_range_top(storage)
    assert not got or all(map(math.isfinite, floats))
    assert got == all(math.isfinite(x) and abs(x) < 2.0**127 for x in floats)
    assert _finite(Tensor((len(floats),), storage, False, "f4")) == all(map(math.isfinite, floats))


def test_the_byte_test_reads_every_chunk() -> None:
    """A NaN in the last entry of the second megabyte chunk is found (the chunks step over the whole storage)."""
    values = array("f", [1.5]) * ((1 << 21) // 4 * 4)  # 8 MiB: two chunks of 4 MiB
    assert float32_below_range_top(values)
    values[-1] = math.nan
    assert not float32_below_range_top(values)
    values[-1] = -math.inf
    assert not float32_below_range_top(values)


def test_a_strided_float_view_is_left_to_the_sum() -> None:
    values = memoryview(array("f", [1.0, math.nan, 2.0, math.inf]))[::2]
    assert not float32_below_range_top(values)
    assert _finite(Tensor((2,), values, False, "f4"))
    assert not _finite(Tensor((2,), memoryview(array("f", [1.0, math.nan, 2.0, math.inf]))[1::2], False, "f4"))
