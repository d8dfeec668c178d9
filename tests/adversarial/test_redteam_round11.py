"""Red team round 11: NNet text files (``.nnet``), read by the producer (``certsym.io.nnetfile``, through
``certsym.io.models``) and by the checker (``certsym_check.readers.nnet``, bound by ``readers.files._nnet_layered``
when an input's model record is {"format": "nnet", …} and the file is given with ``--inputs``).

Holes found, each closed in the same round (its test, once a strict xfail, asserts the fixed behaviour):
- the readers' number bounds differ: the producer reads up to 10,000 digits and exponents up to 10,000 (written
  with any number of digits), the checker 400 characters and exponents of at most 3 digits, so ``1e0005``,
  ``1e-1000`` or a 421-character decimal give certificates the checker refuses;
- the flag line: the checker takes any text (``abc``, an empty field), the producer refuses it;
- the checker parses every number of the file (up to 10^8 weights, about 120 bytes of memory each) before it
  compares the file's layer sizes with the certificate's, and charges nothing while it does;
- the fold of the means and ranges is not charged: coprime ranges make every first-layer bias as long as all the
  ranges together, quadratic time per neuron from a file of linear size (one neuron of an 800-input file costs
  more than the whole work budget at the budget's own rates);
- lines are split where ``str.splitlines`` splits (form feed, U+001C, U+2028, …), NNet's readers only at ``\\n``:
  a file NNet reads as a 1-1-1 network both readers read as a 2-1-1-1 network;
- lines without the trailing comma: NNet's Python reader drops the last field of every line, its C readers do not;
  both readers here accept such a file, with the C readers' output normalization;
- Unicode spaces around a number (U+00A0, U+3000, …) are stripped here; C's atof (ReluVal, Marabou, NNet's C++
  reader) reads such a field as 0;
- certificates the producer writes for a one-hidden-layer ``.nnet`` on the shallow kinds (identifiable,
  stabilizer, minimal_form, not_affine, audit's equivalent) were refused by the checker with the file given.
Now: one number rule in both readers (400 characters, exponents up to 999), the flag read as numbers, the sizes
compared before the numbers are read and the fold charged, lines broken at \\n only (other controls refused), the
trailing comma required, only ASCII spaces and tabs stripped, and NNet files bound by the shallow kinds too (and
always embedded, never referenced).
Everything else here is an attack both readers refuse, or read alike and as NNet reads it, kept as regressions.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from certsym.cli import main
from certsym.errors import InputError
from certsym.io.nnetfile import read_nnet as producer_read_nnet
from certsym_check import check_certificate
from certsym_check.budget import charge_products, metered
from certsym_check.errors import Reject
from certsym_check.readers import nnet as checker_nnet
from certsym_check.readers.nnet import read_nnet as checker_read_nnet

# ------------------------------------------------------------------------------------------------ helpers


def _nnet(widths: list[int], seed: int = 0, means: list[str] | None = None, ranges: list[str] | None = None,
          flag: str = "0", header: tuple[str, ...] = ("// a network of the red team",), end: str = ",") -> str:
    """A well-formed NNet text (every line ending in ``end``, a comma by default), small decimal weights."""
    rng = random.Random(seed)
    m = widths[0]
    means = means or [f"{rng.randint(-20, 20) / 10}" for _ in range(m + 1)]
    ranges = ranges or [f"{rng.randint(5, 30) / 10}" for _ in range(m + 1)]
    lines = [*header, f"{len(widths) - 1},{m},{widths[-1]},{max(widths)}", ",".join(map(str, widths)), flag,
             ",".join(["-10"] * m), ",".join(["10"] * m), ",".join(means), ",".join(ranges)]
    for a, b in zip(widths, widths[1:], strict=False):
        lines += [",".join(f"{rng.randint(-99, 99) / 100}" for _ in range(a)) for _ in range(b)]
        lines += [f"{rng.randint(-99, 99) / 100}" for _ in range(b)]
    return "\n".join(line if line.startswith("//") else line + end for line in lines) + "\n"


def _fraction(v) -> Fraction:
    return Fraction(int(v.p), int(v.q)) if hasattr(v, "p") else Fraction(v)


def _producer(path: Path):
    """The producer's layers [(W rows, b)] as Fractions, or the string "refused"."""
    try:
        layers, _ = producer_read_nnet(path)
    except InputError:
        return "refused"
    return [([[_fraction(w) for w in row] for row in W.tolist()], [_fraction(c) for c in b.tolist()])
            for W, b in layers]


def _checker(data: bytes):
    """The checker's layers [(W rows, b)], or the string "refused"."""
    try:
        layers, _ = checker_read_nnet(data)
    except Reject:
        return "refused"
    return [([list(row) for row in W], list(b)) for W, b in layers]


def _both(tmp_path: Path, text: str | bytes, name: str = "t.nnet"):
    data = text.encode("utf-8") if isinstance(text, str) else text
    path = tmp_path / name
    path.write_bytes(data)
    return _producer(path), _checker(data)


def _apply(layers, x: list) -> list:
    """The network of folded layers at x: a ReLU after every layer but the last."""
    h = list(x)
    for ell, (W, b) in enumerate(layers):
        z = [sum((w * t for w, t in zip(row, h, strict=True)), c) for row, c in zip(W, b, strict=True)]
        h = [max(t, 0) for t in z] if ell < len(layers) - 1 else z
    return h


def _nnet_python(text: str, number=float) -> dict:
    """NNet's Python reader (sisl/NNet python/nnet.py, NNet.__init__), step by step: lines as a text file's
    readline gives them (``\\n``, ``\\r\\n``, ``\\r``), header lines starting with ``//`` at column 0, every list
    ``line.strip().split(",")[:-1]`` (the last field dropped), the flag and the biases the first field; the output
    normalization ``ranges[-1]``, ``means[-1]``."""
    lines = iter(text.replace("\r\n", "\n").replace("\r", "\n").split("\n"))
    line = next(lines)
    while line.startswith("//"):
        line = next(lines)
    count, m, k, _ = (int(x) for x in line.strip().split(",")[:-1])
    sizes = [int(x) for x in next(lines).strip().split(",")[:-1]]
    int(next(lines).strip().split(",")[0])
    mins, maxes, means, ranges = ([number(x) for x in next(lines).strip().split(",")[:-1]] for _ in range(4))
    layers = []
    for ell in range(count):
        W = np.zeros((sizes[ell + 1], sizes[ell]), dtype=object)
        for i in range(sizes[ell + 1]):
            W[i] = [number(x) for x in next(lines).strip().split(",")[:-1]]  # numpy broadcasts a single value
        b = [number(next(lines).strip().split(",")[0]) for _ in range(sizes[ell + 1])]
        layers.append((W.tolist(), b))
    return {"widths": sizes, "m": m, "means": means[:m], "ranges": ranges[:m], "out": (ranges[-1], means[-1]),
            "layers": layers}


_C_SPACE = " \t\n\v\f\r"


def _atof(token: str) -> float:
    """C's atof in the C locale: leading C spaces skipped, the longest decimal prefix, 0.0 when there is none."""
    match = re.match(r"[ \t\n\v\f\r]*([+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)", token)
    return float(match.group(1)) if match else 0.0


def _nnet_c(text: str) -> dict:
    """NNet's C readers (ReluVal's and Marabou's nnet.c, NNet's nnet.cpp): fgets lines (``\\n`` only), header lines
    containing ``//``, fields by strtok(",\\n") (empty ones skipped) read with atoi/atof, as many as the sizes say;
    the output normalization ``ranges[inputSize]``, ``means[inputSize]``."""
    lines = iter(text.split("\n"))

    def fields(line: str) -> list[str]:
        return [t for t in line.split(",") if t]

    line = next(lines)
    while "//" in line:
        line = next(lines)
    count, m, k = (int(_atof(t)) for t in fields(line)[:3])
    sizes = [int(_atof(t)) for t in fields(next(lines))[:count + 1]]
    next(lines)
    mins, maxes = ([_atof(t) for t in fields(next(lines))[:m]] for _ in range(2))
    means, ranges = ([_atof(t) for t in fields(next(lines))[:m + 1]] for _ in range(2))
    layers = []
    for ell in range(count):
        W = [[_atof(t) for t in fields(next(lines))[:sizes[ell]]] for _ in range(sizes[ell + 1])]
        b = [_atof(fields(next(lines))[0]) for _ in range(sizes[ell + 1])]
        layers.append((W, b))
    return {"widths": sizes, "m": m, "means": means[:m], "ranges": ranges[:m], "out": (ranges[m], means[m]),
            "layers": layers}


def _nnet_value(reading: dict, x: list) -> list:
    """NNet's evaluation of a reading at x inside [minimums, maximums] (where its clamp is the identity)."""
    h = [(t - mu) / r for t, mu, r in zip(x, reading["means"], reading["ranges"], strict=True)]
    r_out, mu_out = reading["out"]
    return [y * r_out + mu_out for y in _apply(reading["layers"], h)]


def _certificate(tmp_path: Path, text: str, name: str = "base.nnet") -> tuple[dict, bytes]:
    """A deep_equivalent certificate of the network of ``text`` with itself (certsym equiv), and the file's bytes."""
    path = tmp_path / name
    path.write_text(text)
    cert = tmp_path / f"{name}.json"
    assert main(["equiv", str(path), str(path), "--cert", str(cert)]) == 0
    return json.loads(cert.read_text()), path.read_bytes()


def _rebound(doc: dict, data: bytes) -> dict:
    """The certificate with its first input's SHA-256 the one of ``data`` (the file an attacker gives)."""
    forged = json.loads(json.dumps(doc))
    forged["inputs"][0]["sha256"] = hashlib.sha256(data).hexdigest()
    return forged


# ================================================================================================ holes

_NUMBER_BOUNDS = {
    "exponent-written-with-4-digits": "1e0005",  # 10^5: the producer reads it, the checker's exponent has 1-3 digits
    "exponent-1000": "1e-1000",
    "number-of-421-characters": "0." + "0" * 418 + "1",
}


@pytest.mark.parametrize("case", list(_NUMBER_BOUNDS))
def test_the_readers_agree_on_the_bounds_of_numbers(tmp_path: Path, case: str) -> None:
    text = _nnet([1, 2, 1], 1).replace("\n-10,\n", f"\n{_NUMBER_BOUNDS[case]},\n", 1)  # the input's minimum
    assert f"\n{_NUMBER_BOUNDS[case]},\n" in text
    produced, checked = _both(tmp_path, text)
    assert (produced == "refused") == (checked == "refused")


@pytest.mark.parametrize("flag", ["abc", "", "0,x"])
def test_the_readers_agree_on_the_flag_line(tmp_path: Path, flag: str) -> None:
    produced, checked = _both(tmp_path, _nnet([2, 3, 1], 2, flag=flag))
    assert produced == "refused"
    assert checked == "refused"


def test_the_layer_sizes_are_compared_before_the_numbers_are_parsed(tmp_path: Path, monkeypatch) -> None:
    doc, _ = _certificate(tmp_path, _nnet([2, 3, 1], 3))
    n = 2000  # declared 2-2000-1: about 8,000 numbers to read before the sizes are found to differ
    lines = [f"2,2,1,{n},", f"2,{n},1,", "0,", "-1,-1,", "1,1,", "0,0,0,", "1,1,1,"]
    lines += ["1,1,"] * n + ["0,"] * n + [",".join(["1"] * n) + ",", "0,"]
    data = ("\n".join(lines) + "\n").encode()
    parsed = []
    real = checker_nnet._number

    def counting(token: str) -> Fraction:
        parsed.append(token)
        return real(token)

    monkeypatch.setattr(checker_nnet, "_number", counting)
    report = check_certificate(_rebound(doc, data), [data, data])
    assert not report.valid
    assert len(parsed) <= 64, f"{len(parsed):,} numbers parsed before the layer sizes were compared"


def _coprime_ranges_file(m: int, n: int, digits: int = 390, seed: int = 11) -> bytes:
    """A 1-hidden-layer m-n-1 NNet file whose means and ranges are random integers of ``digits`` digits: the
    ranges are nearly coprime, so each folded first-layer bias b − Σ w·μ/r has a denominator of about
    m·digits digits."""
    rng = random.Random(seed)

    def big() -> str:
        return str(rng.randrange(10 ** (digits - 1), 10 ** digits))

    lines = [f"2,{m},1,{max(m, n)},", f"{m},{n},1,", "0,", ",".join(["-1"] * m) + ",", ",".join(["1"] * m) + ",",
             ",".join(big() for _ in range(m + 1)) + ",", ",".join(big() for _ in range(m + 1)) + ","]
    lines += [",".join(["1"] * m) + ","] * n + ["1,"] * n + [",".join(["1"] * n) + ",", "0,"]
    return ("\n".join(lines) + "\n").encode()


def test_the_fold_of_the_normalization_is_charged(tmp_path: Path) -> None:
    m = 64
    doc, _ = _certificate(tmp_path, _nnet([m, 2, 1], 4))
    data = _coprime_ranges_file(m, 2)
    text = data.decode().splitlines()
    means = [Fraction(x) for x in text[5].split(",")[:m]]
    ranges = [Fraction(x) for x in text[6].split(",")[:m]]
    row = [Fraction(1)] * m
    with metered(10**15) as meter:  # the budget's rates for the products and running sum of one neuron's fold
        charge_products(row, [mu / r for mu, r in zip(means, ranges, strict=True)], "one neuron's fold")
    estimate = 2 * meter.used  # two first-layer neurons
    report = check_certificate(_rebound(doc, data), [data, data])
    assert not report.valid
    assert report.work >= estimate // 8 or re.search("budget|bound", report.reason), \
        f"{report.work:,} units charged for a fold of about {estimate:,}"


# A file NNet's readers read line by line at "\n": its first line is a header for them, and the form feed in it
# starts a line for str.splitlines, so that both readers here read "3,2,1,1," as the sizes line and everything after
# shifted by one line (the last line, after NNet's last bias, NNet never reads).
_SHIFTED = ("// a comment\x0c3,2,1,1,\n2,1,1,1,\n1,1,1,\n0,0,\n-1,-1,\n1,1,1,\n0.5,0.25,0.25,\n2,3,\n5,\n6,\n7,\n8,\n"
            "9,\n")


def test_lines_break_where_nnet_breaks_them(tmp_path: Path) -> None:
    for reading in (_nnet_python(_SHIFTED), _nnet_c(_SHIFTED)):  # NNet's own readers: 1-1-1, one input
        assert reading["widths"] == [1, 1, 1]
        assert reading["out"] == (3.0, 0.25)
    produced, checked = _both(tmp_path, _SHIFTED)
    for got in (produced, checked):
        assert got == "refused" or len(got[0][0][0]) == 1, "read with another number of inputs than NNet reads"


_NO_TRAILING_COMMA = "1,1,1,1,\n1,1,\n0,\n-1,\n1,\n0,5\n1,3\n2,\n0,\n"  # means and ranges without the last comma


def test_a_line_without_its_trailing_comma_is_not_read_one_of_two_ways(tmp_path: Path) -> None:
    python, c = _nnet_python(_NO_TRAILING_COMMA), _nnet_c(_NO_TRAILING_COMMA)
    assert _nnet_value(python, [1.0]) == [2.0]
    assert _nnet_value(c, [1.0]) == [11.0]
    produced, checked = _both(tmp_path, _NO_TRAILING_COMMA)
    assert produced == "refused"
    assert checked == "refused"


@pytest.mark.parametrize("space", ["\u00a0", "\u3000", "\u2009"])
def test_unicode_spaces_around_a_number_are_refused(tmp_path: Path, space: str) -> None:
    text = _nnet([1, 1, 1], 5, means=["0", "0"], ranges=["1", "1"])
    lines = text.splitlines()
    lines[-4] = f"{space}1.5,"  # the first layer's only weight
    text = "\n".join(lines) + "\n"
    assert _nnet_c(text)["layers"][0][0] == [[0.0]]
    produced, checked = _both(tmp_path, text)
    for got in (produced, checked):
        assert got == "refused" or got[0][0] == [[0]], "a weight C's atof reads as 0 was read as 1.5"


@pytest.mark.parametrize("command", ["identifiable", "stabilizer", "minimal", "affine"])
def test_a_shallow_certificate_of_an_nnet_file_is_checked_with_the_file(tmp_path: Path, command: str) -> None:
    path = tmp_path / "s.nnet"
    path.write_text(_nnet([2, 3, 1], 6))
    cert = tmp_path / "s.json"
    code = main([command, str(path), "--cert", str(cert)])
    if code == 2:  # the other fix: the producer does not certify a .nnet with a shallow kind
        return
    assert code in (0, 1)
    doc = json.loads(cert.read_text())
    assert doc["inputs"][0]["model"]["format"] == "nnet"
    report = check_certificate(doc, [path.read_bytes()])
    assert report.valid, report.reason


# ================================================================================================ attacks that hold

_AGREED_TOKENS = [".5", "5.", "+1", "1e5", "1E-3", "+.5", "-.5e+2", "1.e5", "1e999", "1e-999", "01.50", "-0",
                  "1e+010", "1e-0", "1" * 399, "7" * 396 + "e999", " 1", "1 ", "\t1",
                  # refused by both
                  "nan", "inf", "-inf", "0x10", "1_000", "\u0661", "\uff11", "\u00bd", "1e", "e1", ".", "-", "+",
                  "1.5.", "1\x00", "1\u200b", "1 5", "1;", "--1", "1e+-3", "0b1", "1/2", "1d3", "", "1" * 10_001]


@pytest.mark.parametrize("token", _AGREED_TOKENS, ids=[repr(t)[:24] for t in _AGREED_TOKENS])
def test_both_readers_read_a_number_alike(tmp_path: Path, token: str) -> None:
    text = _nnet([1, 1, 1], 7, means=["0", "0"], ranges=["1", "1"])
    lines = text.splitlines()
    lines[-4] = f"{token},"
    produced, checked = _both(tmp_path, "\n".join(lines) + "\n")
    assert produced == checked
    if produced != "refused":
        assert produced[0][0] == [[Fraction(token.strip())]]


def _edit(text: str, old: str, new: str) -> str:
    assert old in text
    return text.replace(old, new, 1)


_BASE = _nnet([2, 3, 1], 8, means=["0.5", "-1", "0.25"], ranges=["2", "0.5", "3"])
_LAYOUTS_READ = {
    "crlf": _BASE.replace("\n", "\r\n"),
    "blank-lines": _BASE.replace("\n", "\n\n  \n"),
    "tabs-and-spaces-around-fields": _BASE.replace(",", " ,\t"),
    "indented-header": "   " + _BASE,
    "no-header": _BASE.split("\n", 1)[1],
    "bare-header": "//\n" + _BASE,
    "trailing-blank-lines": _BASE + "\n  \n\t\n",
    "counts-with-leading-zeros": _edit(_BASE, "2,3,1,\n", "002,0003,01,\n"),
    "flag-a-decimal": _edit(_BASE, "\n0,\n", "\n1.5,\n"),
    "negative-range": _edit(_BASE, "2,0.5,3,", "2,-0.5,3,"),
}
_LAYOUTS_REFUSED = {
    "utf8-bom": "\ufeff" + _BASE,
    "latin-1-header": _BASE.encode().replace(b"// a network", b"// \xe9 network"),
    "comment-after-the-header": _edit(_BASE, "\n0,\n", "\n// more\n0,\n"),
    "text-after-the-last-bias": _BASE + "0,\n",
    "a-comment-after-the-last-bias": _BASE + "// end\n",
    "two-trailing-commas": _edit(_BASE, "2,0.5,3,", "2,0.5,3,,"),
    "an-empty-field": _edit(_BASE, "2,0.5,3,", "2,,0.5,3,"),
    "semicolons": _BASE.replace(",", ";"),
    "fullwidth-commas": _BASE.replace(",", "\uff0c"),
    "signed-count": _edit(_BASE, "2,3,1,\n", "+2,3,1,\n"),
    "decimal-count": _edit(_BASE, "2,3,1,\n", "2.0,3,1,\n"),
    "exponent-count": _edit(_BASE, "2,3,1,\n", "2e0,3,1,\n"),
    "count-of-8-digits": _edit(_BASE, "2,2,1,3,", "2,2,1,00000003,"),
    "negative-max-layer-size": _edit(_BASE, "2,2,1,3,", "2,2,1,-3,"),
    "zero-input-range": _edit(_BASE, "2,0.5,3,", "0,0.5,3,"),
    "zero-output-range": _edit(_BASE, "2,0.5,3,", "2,0.5,0.0e5,"),
    "sizes-disagree-with-input-size": _edit(_BASE, "2,3,1,\n", "3,3,1,\n"),
    "empty-layer": _edit(_BASE, "2,3,1,\n", "2,0,1,\n"),
    "no-layers": "0,1,1,1,\n1,\n0,\n-1,\n1,\n0,0,\n1,1,\n",
    "ends-early": "\n".join(_BASE.splitlines()[:-2]) + "\n",
    "a-short-weight-row": _edit(_BASE, "\n2,0.5,3,\n", "\n2,0.5,3,\n1,\n"),
    "empty-file": "",
    "header-only": "// a\n// b\n",
}


@pytest.mark.parametrize("case", list(_LAYOUTS_READ))
def test_both_readers_read_these_layouts_as_the_plain_file(tmp_path: Path, case: str) -> None:
    plain, _ = _both(tmp_path, _BASE, "plain.nnet")
    produced, checked = _both(tmp_path, _LAYOUTS_READ[case])
    assert produced == checked != "refused"
    if case not in ("flag-a-decimal", "negative-range"):
        assert produced == plain


@pytest.mark.parametrize("case", list(_LAYOUTS_REFUSED))
def test_both_readers_refuse_these_files(tmp_path: Path, case: str) -> None:
    assert _both(tmp_path, _LAYOUTS_REFUSED[case]) == ("refused", "refused")


@pytest.mark.parametrize("widths", [[3, 4, 2], [2, 3], [1, 2, 2, 1]])
def test_the_reading_is_the_network_nnet_evaluates_inside_its_bounds(tmp_path: Path, widths: list[int]) -> None:
    """Exactly (Fractions), against NNet's Python and C readers and its evaluation; one layer is both the first and
    the last (both folds)."""
    text = _nnet(widths, 9, means=[f"{(-1) ** i * (i + 1) / 8}" for i in range(widths[0] + 1)],
                 ranges=[f"{(-1) ** i * (i + 3) / 4}" for i in range(widths[0] + 1)])
    produced, checked = _both(tmp_path, text)
    assert produced == checked != "refused"
    python, c = _nnet_python(text, Fraction), _nnet_c(text)
    rng = random.Random(1)
    for _ in range(5):
        x = [Fraction(rng.randint(-999, 999), 100) for _ in range(widths[0])]  # inside [-10, 10]: no clamp
        expected = _nnet_value(python, x)
        assert _apply(checked, x) == expected
        assert np.allclose([float(v) for v in _nnet_value(c, [float(t) for t in x])], [float(v) for v in expected])


def test_the_certificate_binds_every_folded_entry_of_the_file(tmp_path: Path) -> None:
    doc, data = _certificate(tmp_path, _BASE)
    report = check_certificate(doc, [data, data])
    assert report.valid, report.reason
    assert any("nnet (deep)" in line and "clamp" in line for line in report.bound)

    def forged(edit) -> dict:
        out = json.loads(json.dumps(doc))
        edit(out["inputs"][0]["parameters"]["layers"])
        return out

    def unfolded(layers: list) -> None:  # the file's own numbers, the means and ranges not folded in
        lines = [line.rstrip(",").split(",") for line in _BASE.splitlines() if not line.startswith("//")]
        layers[0]["W"] = [lines[7 + i] for i in range(3)]
        layers[0]["b"] = [lines[10 + i][0] for i in range(3)]

    def nudge(where: str, i: int):
        def edit(layers: list) -> None:
            b = layers[-1]["b"] if where == "last bias" else layers[0]["W"][0]
            b[i] = str(Fraction(b[i]) + Fraction(1, 10**300))
        return edit

    def unscaled_output(layers: list) -> None:  # the output normalization left out
        layers[-1]["b"] = [str((Fraction(v) - Fraction("0.25")) / 3) for v in layers[-1]["b"]]
        layers[-1]["W"] = [[str(Fraction(w) / 3) for w in row] for row in layers[-1]["W"]]

    for edit in (unfolded, nudge("last bias", 0), nudge("first weight", 1), unscaled_output):
        report = check_certificate(forged(edit), [data, data])
        assert not report.valid
    other = _BASE.replace("// a network", "// another network").encode()  # same network, other bytes
    assert not check_certificate(doc, [other, data]).valid


def test_a_file_declaring_10_to_the_8_weights_is_refused_early(tmp_path: Path, monkeypatch) -> None:
    n = 10_000  # 1-9999-10000: 99,999,999 weights declared (just within the bound), a file of a few lines
    short = f"2,1,{n},{n},\n1,{n - 1},{n},\n0,\n-1,\n1,\n0,0,\n1,1,\n1,\n"
    over = f"2,1,{n},{n},\n1,{n},{n + 1},\n"  # 10^8 + 2·10^4 weights: beyond the bound
    units = "1,1,1,1,\n1,1000000,\n"
    layers = "9999999,1,1,1,\n1,1,\n"
    parsed = []
    real = checker_nnet._number
    monkeypatch.setattr(checker_nnet, "_number", lambda t: parsed.append(t) or real(t))
    for text in (short, over, units, layers):
        assert _both(tmp_path, text) == ("refused", "refused")
    assert len(parsed) <= 16


def test_neither_reader_raises_anything_but_its_refusal(tmp_path: Path) -> None:
    """Mutated files: the checker raises Reject only (never a crash, reported as a malformed certificate), the
    producer InputError only (a one-line error)."""
    alphabet = [*"0123456789,.-+eE \t\n\r/x", "\x0c", "\u2028", "\u00a0", "1e999", "9" * 300, "\ufeff"]
    rng = random.Random(11)
    seeds = [_BASE, "1,1,1,1,\n1,1,\n0,\n-1,\n1,\n0,0,\n1,1,\n2,\n3,\n"]
    for _ in range(300):
        s = list(rng.choice(seeds))
        for _ in range(rng.randint(1, 4)):
            at = rng.randrange(len(s))
            if rng.random() < 0.5:
                s.insert(at, rng.choice(alphabet))
            else:
                s[at] = rng.choice(alphabet)
        _both(tmp_path, "".join(s))  # each reader's own refusal is caught there; anything else fails the test


_BAD_FOR_THE_PRODUCER = {
    "empty": "", "header-only": "// a\n", "not-utf8": b"// \xff\n1,1,1,1,\n", "digits-10001": "1" * 10_001,
    "exponent-10001": "1e10001", "exponent-of-20-digits": "1e99999999999999999999", "nul": "0.3\x00456",
    "bom": "\ufeff", "range-0": "range-0", "text-after": "text-after", "one-layer": "one-layer",
    "units": "units", "directory": "directory",
}


@pytest.mark.parametrize("case", list(_BAD_FOR_THE_PRODUCER))
def test_the_producer_refuses_a_bad_file_in_one_line(tmp_path: Path, capfd, case: str) -> None:
    good = tmp_path / "good.nnet"
    good.write_text(_BASE)
    bad = tmp_path / "bad.nnet"
    value = _BAD_FOR_THE_PRODUCER[case]
    if case == "directory":
        bad.mkdir()
    elif isinstance(value, bytes) or case in ("empty", "header-only"):
        bad.write_bytes(value if isinstance(value, bytes) else value.encode())
    elif case == "bom":
        bad.write_text("\ufeff" + _BASE)
    elif case == "range-0":
        bad.write_text(_edit(_BASE, "2,0.5,3,", "2,0,3,"))
    elif case == "text-after":
        bad.write_text(_BASE + "x\n")
    elif case == "one-layer":
        bad.write_text(_nnet([2, 1], 1))
    elif case == "units":
        bad.write_text(_edit(_BASE, "2,3,1,\n", "2,999999,1,\n"))
    else:
        lines = _BASE.splitlines()
        lines[-1] = value + ","
        bad.write_text("\n".join(lines) + "\n")
    capfd.readouterr()
    assert main(["equiv", str(bad), str(good)]) == 2
    err = capfd.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("certsym: error:"), err
