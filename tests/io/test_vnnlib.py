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
    text = _declare(1) + "(assert (<= X_0 1))\n(assert (<= X_0 1/2))\n(assert (>= X_0 0))\n"
    assert input_boxes(text, 1).boxes == [[(0, fmpq(1, 2))]]


@pytest.mark.parametrize("body, words", [
    ("(assert (< X_0 1))\n(assert (>= X_0 0))", "strict input bound"),
    ("(assert (>= X_0 0))", "X_0 has no upper bound"),
    ("(assert (<= X_0 0))\n(assert (>= X_0 1))", "empty box"),
    ("(assert (<= X_0 X_1))\n(assert (>= X_0 0))", "one variable X_i with a number"),
    ("(assert (<= X_0 1)", "without its '\\)'"),
    ("(assert (<= X_5 1))\n(assert (>= X_0 0))\n(assert (<= X_0 1))", "beyond the network's 1 inputs"),
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
