"""VNN-LIB 1.0 input regions (certsym.io.vnnlib): every assert form the benchmarks write gives exactly the box (or
boxes) it states; output asserts are returned, never dropped; gzip is read; malformed files are one-line errors."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pytest
from flint import fmpq

from certsym.cli import main
from certsym.errors import InputError
from certsym.io.vnnlib import input_boxes, read_vnnlib


def _declare(m: int, k: int = 0) -> str:
    return "".join(f"(declare-const X_{i} Real)\n" for i in range(m)) + \
        "".join(f"(declare-const Y_{j} Real)\n" for j in range(k))


def test_constant_first_and_negated_numbers_and_comments_give_the_box() -> None:
    text = _declare(3, 1) + "; MNIST style, the constant first\n(assert (<= 0.00000000 X_0))\n(assert (>= 0.5 X_0))\n" \
        "(assert (<= X_1 (- 0.25)))\n(assert (>= X_1 (- 1)))\n(assert (and (>= X_2 0.1) (<= X_2 0.3)))\n" \
        "(assert (<= Y_0 0.0))  ; the output part\n"
    prop = input_boxes(text, 3)
    assert prop.boxes == [[(0, fmpq(1, 2)), (-1, fmpq(-1, 4)), (fmpq(1, 10), fmpq(3, 10))]]
    assert prop.outputs == ["(<= Y_0 0.0)"]


def test_a_disjunction_of_input_regions_gives_one_box_per_disjunct() -> None:
    """ACAS Xu property 6's form: (or (and …) (and …)) over the inputs, and a shared bound outside it."""
    text = _declare(2) + "(assert (or (and (>= X_0 0) (<= X_0 1)) (and (>= X_0 2) (<= X_0 3))))\n" \
        "(assert (>= X_1 -1))\n(assert (<= X_1 1))\n"
    assert input_boxes(text, 2).boxes == [[(0, 1), (-1, 1)], [(2, 3), (-1, 1)]]


def test_repeated_bounds_intersect() -> None:
    text = _declare(1) + "(assert (<= X_0 1))\n(assert (<= X_0 0.5))\n(assert (>= X_0 0))\n"
    assert input_boxes(text, 1).boxes == [[(0, fmpq(1, 2))]]


@pytest.mark.parametrize("body, words", [
    ("(assert (< X_0 1))\n(assert (>= X_0 0))", "strict input bound"),
    ("(assert (>= X_0 0))", "X_0 has no upper bound"),
    ("(assert (<= X_0 0))\n(assert (>= X_0 1))", "empty box"),
    ("(assert (<= X_0 X_1))\n(assert (>= X_0 0))", "one variable X_i with a number"),
    ("(assert (<= X_0 1)", "without its '\\)'"),
    ("(assert (<= X_5 1))\n(assert (>= X_0 0))\n(assert (<= X_0 1))", "beyond the network's 1 inputs"),
    ("(assert (<= X_1 1))\n(assert (>= X_0 0))\n(assert (<= X_0 1))", "beyond the network's 1 inputs"),
    ("(assert (<= X_0 1/2))\n(assert (>= X_0 0))", "neither a number nor a declared variable"),
    ("(check-sat)", "expected declare-const or assert"),
])
def test_malformed_regions_are_refused_with_the_reason(body: str, words: str) -> None:
    with pytest.raises(InputError, match=words):
        input_boxes(_declare(2) + body, 1)


def test_a_gzipped_property_reads_as_its_text(tmp_path: Path) -> None:
    text = _declare(2) + "(assert (>= X_0 0))\n(assert (<= X_0 1))\n(assert (>= X_1 0))\n(assert (<= X_1 1))\n"
    plain, packed = tmp_path / "p.vnnlib", tmp_path / "p.vnnlib.gz"
    plain.write_text(text)
    packed.write_bytes(gzip.compress(text.encode()))
    assert read_vnnlib(packed) == read_vnnlib(plain) == text
    (tmp_path / "bad.vnnlib.gz").write_bytes(b"\x1f\x8b" + b"not gzip")
    with pytest.raises(InputError, match="not a readable gzip file"):
        read_vnnlib(tmp_path / "bad.vnnlib.gz")


def test_distance_reads_a_constant_first_property_and_names_its_output_part(tmp_path: Path, capsys) -> None:
    a = {"M": [["1"]], "A": [["1"]], "b": ["0"], "c": ["0"]}
    b = {"M": [["1"]], "A": [["1"]], "b": ["1/8"], "c": ["0"]}
    import json

    pa, pb = tmp_path / "a.json", tmp_path / "b.json"
    pa.write_text(json.dumps(a))
    pb.write_text(json.dumps(b))
    spec = tmp_path / "p.vnnlib.gz"
    spec.write_bytes(gzip.compress((_declare(1, 1) + "(assert (<= 1 X_0))\n(assert (>= 2 X_0))\n"
                                    "(assert (>= Y_0 5))\n").encode()))
    assert main(["distance", str(pa), str(pb), "--box", str(spec), "--json", "--regions", "4"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["box"] == [["1", "2"]] and np.isclose(json.loads(out)["upper_float"], 0.125)
    assert "1 output assert(s) are not" in err


def _two_networks(output: str, couple: bool = True) -> str:
    """A VNN-LIB 2.0 property in the form of VNN-COMP 2026's equivalence benchmarks: f and g on [1, 1, 1, 2] inputs,
    the inputs made equal index by index, and ``output`` asserted over Y_f, Y_g of shape [1, 2]."""
    bounds = "".join(f"(assert (>= X_f[0,0,0,{i}] {lo}))\n(assert (<= X_f[0, 0, 0, {i}] {hi}))\n"
                     for i, (lo, hi) in enumerate([("-0.5", "0.5"), ("0", "0.25")]))
    coupled = "".join(f"(assert (== X_f[0,0,0,{i}] X_g[0,0,0,{i}]))\n" for i in range(2)) if couple else ""
    return ("; two networks\n(vnnlib-version <2.0>)\n"
            "(declare-network f (declare-input X_f real [1, 1, 1, 2]) (declare-output Y_f real [1, 2]))\n"
            "(declare-network g (isomorphic-to f) (declare-input X_g real [1, 1, 1, 2]) "
            "(declare-output Y_g real [1, 2]))\n" + bounds + coupled + f"(assert {output})\n")


def test_a_two_network_property_gives_its_shared_box_and_its_output_atoms() -> None:
    from certsym.io.vnnlib import read_spec

    band = "(or (> Y_g[0,1] (+ Y_f[0,1] 0.05)) (< Y_g[0,1] (- Y_f[0,1] 0.05)))"
    spec = read_spec(_two_networks(band))
    assert spec.version == "2.0" and [d.name for d in spec.networks] == ["f", "g"]
    assert spec.networks[1].relation == "isomorphic-to f" and spec.networks[0].m == 2 and spec.networks[0].k == 2
    assert spec.boxes == [[(fmpq(-1, 2), fmpq(1, 2)), (0, fmpq(1, 4))]]
    first, second = spec.outputs
    # Y_g − Y_f − 0.05 > 0, then Y_f − Y_g − 0.05 > 0 (strict), each one atom
    assert first[0].terms == ((0, 1, -1), (1, 1, 1)) and first[0].constant == fmpq(-1, 20) and first[0].strict
    assert second[0].terms == ((0, 1, 1), (1, 1, -1)) and second[0].constant == fmpq(-1, 20)
    assert first[0].holds([[0, 0], [0, fmpq(1, 10)]]) and not first[0].holds([[0, 0], [0, fmpq(1, 20)]])


def test_inputs_not_made_equal_are_refused_and_linear_input_bounds_divide_out() -> None:
    from certsym.io.vnnlib import read_spec

    with pytest.raises(InputError, match="not made equal"):
        read_spec(_two_networks("(> Y_g[0,0] Y_f[0,0])", couple=False))
    text = "(vnnlib-version <2.0>)\n(declare-network acc (declare-input X Real [2]) (declare-output Y Real []))\n" \
        "(assert (<= (* -1.0 X [0]) 0.0))\n(assert (<= X [0] 50.0))\n(assert (>= (* 2 X[1]) -1))\n" \
        "(assert (>= (- X[1]) -0.25))\n(assert (or (<= Y -3.0) (>= Y 0.0)))\n"
    spec = read_spec(text)
    assert spec.boxes == [[(0, 50), (fmpq(-1, 2), fmpq(1, 4))]]
    assert len(spec.outputs) == 2 and spec.networks[0].k == 1
    with pytest.raises(InputError, match="mixes inputs and outputs"):
        read_spec(text + "(assert (<= Y X[0]))\n")
    with pytest.raises(InputError, match="is not a declared input"):
        read_spec(text + "(assert (<= Z 1))\n")
    with pytest.raises(InputError, match="versions 1.0 and 2.0"):
        read_spec(text.replace("<2.0>", "<3.0>"))
