"""certsym.io.params: reading parameter JSON exactly, refusing bad input with one-line InputErrors, writing
atomically.

Numerals are compared with Python's exact readers (fractions.Fraction, decimal.Decimal); radicals and roots are
checked by their defining equations in the field they are read into; errors must be certsym.errors.InputError
with a single-line message naming the file; an interrupted write must leave the old file (or none) and no
temporary file behind.
"""

from __future__ import annotations

import json
import os
from decimal import Decimal
from fractions import Fraction
from pathlib import Path

import pytest
from flint import fmpq
from hypothesis import given, settings
from hypothesis import strategies as st

from certsym.core.network import Network
from certsym.errors import InputError
from certsym.io.params import (
    dump_network,
    load_inputs,
    load_networks,
    parse_point,
    write_bytes_atomic,
    write_json_atomic,
    write_text_atomic,
)
from certsym.numbers import QQ


def _frac(x) -> Fraction:
    """An element of Q (fmpq, or a number-field element that is rational) as a Fraction."""
    x = x if isinstance(x, fmpq) else x.field.to_rational(x)
    return Fraction(int(x.p), int(x.q))


def _doc(M, A, b, c) -> str:
    return json.dumps({"M": M, "A": A, "b": b, "c": c})


def _read(text: str, name: str = "p.json") -> Network:
    (net,), _ = load_networks([name], texts=[text])
    return net


# -- exact numerals -------------------------------------------------------------------------------------------

@st.composite
def spellings(draw) -> tuple[str, Fraction]:
    """(a JSON value's source text, its exact value): JSON integers and number literals, and strings holding an
    integer, p/q, or a decimal with an exponent."""
    num, den = draw(st.integers(-10**30, 10**30)), draw(st.integers(1, 10**6))
    kind = draw(st.sampled_from(["int", "literal", "fraction", "decimal", "exponent"]))
    if kind == "int":
        return str(num), Fraction(num)
    if kind == "fraction":
        return json.dumps(f"{num}/{den}"), Fraction(num, den)
    digits = str(abs(num)).zfill(7)
    text = ("-" if num < 0 else "") + digits[:-6] + "." + digits[-6:]
    if kind == "exponent":
        text += f"e{draw(st.integers(-40, 40))}"
    value = Fraction(Decimal(text))
    return (text if kind == "literal" else json.dumps(text)), value


@settings(max_examples=60, deadline=None)
@given(st.lists(spellings(), min_size=4, max_size=4))
def test_numerals_are_read_exactly(entries: list[tuple[str, Fraction]]) -> None:
    """Every spelling (JSON integer, JSON number literal such as 0.1, strings "p/q", "1.5e-3") is the exact rational
    Fraction/Decimal reads: M = [[x0]], A = [[x1]], b = [x2], c = [x3]."""
    (t0, v0), (t1, v1), (t2, v2), (t3, v3) = entries
    net = _read(f'{{"M": [[{t0}]], "A": [[{t1}]], "b": [{t2}], "c": [{t3}]}}')
    assert net.field is QQ
    assert [_frac(net.M[0][0]), _frac(net.A[0][0]), _frac(net.b[0]), _frac(net.c[0])] == [v0, v1, v2, v3]


def test_json_number_literals_are_the_decimals_written() -> None:
    """0.1 is 1/10 (not the binary double), 1e2 is 100, -0.0 is 0, 1E-3 is 1/1000."""
    net = _read('{"M": [[0.1, 1e2]], "A": [[-0.0], [1E-3]], "b": [0, 0], "c": [0]}')
    assert [_frac(x) for x in net.M[0]] == [Fraction(1, 10), Fraction(100)]
    assert [_frac(r[0]) for r in net.A] == [Fraction(0), Fraction(1, 1000)]
    assert Fraction(1, 10) != Fraction(0.1)  # the double 0.1 is another number


# -- radicals and the common field ----------------------------------------------------------------------------

RADICALS = {  # entry -> its defining property, as a test on the element read
    "sqrt(2)": lambda x: x * x == 2 and x > 0,
    "2^(1/3)": lambda x: x * x * x == 2 and x > 0,
    "root(5, 3)": lambda x: x * x * x == 5 and x > 0,
    "1/2 + sqrt(3)/5": lambda x: ((x - fmpq(1, 2)) * 5) ** 2 == 3 and x > fmpq(1, 2),
    "CRootOf(x^5 - x - 1, 0)": lambda x: x**5 - x - 1 == 0 and fmpq(1) < x < fmpq(2),  # its one real root
    "CRootOf(x^2 - 2, 0)": lambda x: x * x == 2 and x < 0,
}


@pytest.mark.parametrize("expr", sorted(RADICALS))
def test_radicals_satisfy_their_defining_equations(expr: str) -> None:
    """A radical or root written in a file is read into a number field where it satisfies its defining equation
    exactly, with the sign it names."""
    net = _read(_doc([[expr]], [["1"]], ["0"], ["0"]))
    assert net.field is not QQ
    assert RADICALS[expr](net.M[0][0])


def test_several_radicals_in_one_file_share_a_field() -> None:
    """sqrt(2) and 2^(1/3) in one file are read into one field of degree 6, where (√2 · ∛2)^6 = 2^5."""
    net = _read(_doc([["sqrt(2)", "2^(1/3)"]], [["1"], ["1"]], ["0", "0"], ["0"]))
    s2, c2 = net.M[0]
    assert net.field.degree == 6
    assert s2 * s2 == 2 and c2**3 == 2 and s2 != c2 and (s2 * c2) ** 6 == 2**5


def test_two_files_share_one_field_and_atoms_are_recorded() -> None:
    """Files read together with sqrt(2) in one and sqrt(3) in the other get one field, where their entries multiply;
    a written product sqrt(2)*sqrt(3) records both atoms with their values; extra values join the field too."""
    t1 = _doc([["sqrt(2)*sqrt(3)"]], [["1"]], ["0"], ["0"])
    t2 = _doc([["sqrt(3)"]], [["1"]], ["0"], ["0"])
    loaded, (extra,) = load_inputs(["a.json", "b.json"], extra_values=[fmpq(1, 3)], texts=[t1, t2])
    n1, n2 = loaded[0].network, loaded[1].network
    assert n1.field == n2.field and n1.field is not QQ
    six, three = n1.M[0][0], n2.M[0][0]
    assert six * six == 6 and three * three == 3 and (six * three) ** 2 == 18
    atoms = dict(loaded[0].atoms)
    assert set(atoms) == {"sqrt(2)", "sqrt(3)"}
    assert atoms["sqrt(2)"] * atoms["sqrt(3)"] == six
    assert loaded[1].atoms == (("sqrt(3)", three),)
    assert extra * 3 == 1
    assert loaded[0].sha256 != loaded[1].sha256 and len(loaded[0].sha256) == 64


def test_rational_files_stay_over_q() -> None:
    """Rational expressions ("(1/2)^2 + 3", "sqrt(4)", "-root(16, 4)") are rationals; no number field is made."""
    net = _read(_doc([["(1/2)^2 + 3"]], [["sqrt(4)"]], ["-root(16, 4)"], ["2^3"]))
    assert net.field is QQ
    assert (_frac(net.M[0][0]), _frac(net.A[0][0]), _frac(net.b[0]), _frac(net.c[0])) == \
        (Fraction(13, 4), Fraction(2), Fraction(-2), Fraction(8))


def test_written_files_read_back_to_the_same_network(tmp_path: Path) -> None:
    """dump_network's text, written atomically and read back, gives the same network (over Q), and over Q(√2)
    entries that satisfy the same equations."""
    net = Network.build([[fmpq(1, 3), fmpq(-2)]], [[fmpq(1), fmpq(0)], [fmpq(5, 7), fmpq(-1)]], [fmpq(0), fmpq(3)],
                        [fmpq(-1, 2)], m=2)
    path = tmp_path / "p.json"
    write_text_atomic(path, dump_network(net))
    (back,), _ = load_networks([path])
    assert back == net
    irr = _read(_doc([["sqrt(2) - 1"]], [["1"]], ["0"], ["0"]))
    write_text_atomic(path, dump_network(irr))
    (back,), _ = load_networks([path])
    x = back.M[0][0]
    assert (x + 1) ** 2 == 2 and x > 0


def test_shape_is_needed_only_without_neurons() -> None:
    """n = 0 needs "shape": {"m": ...}; with it the network is read with m inputs and no neurons."""
    net = _read('{"M": [[]], "A": [], "b": [], "c": ["1"], "shape": {"m": 3, "n": 0, "k": 1}}')
    assert (net.m, net.n, net.k) == (3, 0, 1)
    with pytest.raises(InputError, match="needs its input dimension"):
        _read('{"M": [[]], "A": [], "b": [], "c": ["1"]}')


# -- errors ---------------------------------------------------------------------------------------------------

BAD = {
    "malformed JSON": '{"M": [[1]], "A": [[1]], "b": [0], "c": [0]',
    "unknown key": '{"M": [[1]], "A": [[1]], "b": [0], "c": [0], "bias": [1]}',
    "missing key": '{"M": [[1]], "A": [[1]], "b": [0]}',
    "repeated key": '{"M": [[1]], "M": [[2]], "A": [[1]], "b": [0], "c": [0]}',
    "not an object": "[[1], [1], [0], [0]]",
    "boolean": '{"M": [[true]], "A": [[1]], "b": [0], "c": [0]}',
    "null": '{"M": [[null]], "A": [[1]], "b": [0], "c": [0]}',
    "NaN": '{"M": [[NaN]], "A": [[1]], "b": [0], "c": [0]}',
    "Infinity": '{"M": [[Infinity]], "A": [[1]], "b": [0], "c": [0]}',
    "nested list entry": '{"M": [[[1]]], "A": [[1]], "b": [0], "c": [0]}',
    "row not a list": '{"M": [1], "A": [[1]], "b": [0], "c": [0]}',
    "division by zero": '{"M": [["1/0"]], "A": [[1]], "b": [0], "c": [0]}',
    "not real": '{"M": [["sqrt(-1)"]], "A": [[1]], "b": [0], "c": [0]}',
    "unknown name": '{"M": [["x + 1"]], "A": [[1]], "b": [0], "c": [0]}',
    "code": '{"M": [["__import__(\'os\').getcwd()"]], "A": [[1]], "b": [0], "c": [0]}',
    "transcendental": '{"M": [["pi"]], "A": [[1]], "b": [0], "c": [0]}',
    "shape of M": '{"M": [[1, 2]], "A": [[1]], "b": [0], "c": [0]}',
    "shape of A": '{"M": [[1, 2]], "A": [[1], [1, 2]], "b": [0, 0], "c": [0]}',
    "shape of b": '{"M": [[1]], "A": [[1]], "b": [0, 1], "c": [0]}',
    "empty c": '{"M": [], "A": [[1]], "b": [0], "c": []}',
    "shape disagrees": '{"M": [[1]], "A": [[1]], "b": [0], "c": [0], "shape": {"m": 2}}',
    "shape not an integer": '{"M": [[1]], "A": [[1]], "b": [0], "c": [0], "shape": {"n": "1"}}',
    "shape unknown key": '{"M": [[1]], "A": [[1]], "b": [0], "c": [0], "shape": {"width": 1}}',
    "too many digits": '{"M": [[' + "9" * 200 + ']], "A": [[1]], "b": [0], "c": [0]}',
}


@pytest.mark.parametrize("name", sorted(BAD))
def test_bad_files_raise_one_line_input_errors(name: str) -> None:
    """Every malformed parameter file raises InputError (and nothing else) with a single-line message that names
    the file."""
    with pytest.raises(InputError) as info:
        load_networks(["bad.json"], texts=[BAD[name]], max_digits=100)
    message = str(info.value)
    assert "\n" not in message and message.startswith("bad.json")


def test_unreadable_files_raise_input_errors(tmp_path: Path) -> None:
    """A missing file, a directory and a file that is not UTF-8 are InputErrors naming the path, on one line."""
    (tmp_path / "latin1.json").write_bytes('{"M": [["é"]]}'.encode("latin-1"))
    for path, reason in ((tmp_path / "missing.json", "no such file"), (tmp_path, "is a directory"),
                         (tmp_path / "latin1.json", "not UTF-8")):
        with pytest.raises(InputError, match=reason) as info:
            load_networks([path])
        assert "\n" not in str(info.value) and str(path) in str(info.value)


def test_parse_point() -> None:
    """Points: comma-separated exact numbers, commas inside parentheses belonging to one coordinate; empty
    coordinates are an InputError."""
    x = parse_point("1/2, 3, root(8, 3), -0.25")
    assert len(x) == 4 and x[0] == fmpq(1, 2) and x[2] == 2 and x[3] == fmpq(-1, 4)
    for bad in ("", " ", "1,,2", "1,", "(1"):
        with pytest.raises(InputError):
            parse_point(bad)


# -- atomic writes --------------------------------------------------------------------------------------------

def test_atomic_write_replaces_the_whole_file(tmp_path: Path) -> None:
    """A write replaces the old text entirely, leaves no temporary file, and gives the usual mode (0o666 & ~umask)."""
    path = tmp_path / "out.json"
    path.write_text("old and longer " * 100)
    write_json_atomic(path, {"a": [1, "2"]})
    assert json.loads(path.read_text()) == {"a": [1, "2"]}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.json"]
    umask = os.umask(0)
    os.umask(umask)
    assert path.stat().st_mode & 0o777 == 0o666 & ~umask


def test_failed_rename_leaves_the_old_file_and_no_partial_file(tmp_path: Path, monkeypatch) -> None:
    """When the final rename fails, the old file is unchanged and the temporary file is removed."""
    path = tmp_path / "out.json"
    path.write_text("old")

    def fail(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", fail)
    with pytest.raises(OSError):
        write_bytes_atomic(path, b"new" * 1000)
    assert path.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.json"]


def test_failed_write_midway_leaves_no_partial_file(tmp_path: Path, monkeypatch) -> None:
    """When writing the bytes fails partway (a full disk), neither the target nor a temporary file remains."""
    path = tmp_path / "new.json"
    real_fdopen = os.fdopen

    class Full:
        def __init__(self, fh):
            self.fh = fh

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.fh.close()
            return False

        def write(self, data: bytes) -> int:
            self.fh.write(data[: len(data) // 2])
            self.fh.flush()
            raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fdopen", lambda fd, mode="r", *a, **k: Full(real_fdopen(fd, mode, *a, **k)))
    with pytest.raises(OSError):
        write_text_atomic(path, "x" * 10_000)
    assert list(tmp_path.iterdir()) == []


def test_unserializable_data_and_missing_directories(tmp_path: Path) -> None:
    """JSON that cannot be encoded fails before any file exists; a directory that does not exist is an InputError."""
    path = tmp_path / "out.json"
    with pytest.raises(TypeError):
        write_json_atomic(path, {"a": {1, 2}})
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(InputError, match="cannot write") as info:
        write_text_atomic(tmp_path / "no" / "such" / "dir.json", "x")
    assert "\n" not in str(info.value)
