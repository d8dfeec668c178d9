"""Parameter files (readers, writers) and the ``certsym`` command line: values, error contract."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from flint import fmpq
from helpers import small_rationals
from hypothesis import given, settings
from hypothesis import strategies as st

from certsym.cli import main
from certsym.core.network import Network
from certsym.errors import InputError
from certsym.io import (
    dump_network,
    load_networks,
    network_to_json,
    parse_point,
    write_json_atomic,
)
from certsym.numbers import QQ, NumberField
from certsym.reproduce.examples import EXAMPLES

FAST = settings(max_examples=50, deadline=None)
Cap = pytest.CaptureFixture[str]

E1: dict[str, Any] = EXAMPLES["E1"][0]  # σ(x) + 2σ(x − 1)
S1: dict[str, Any] = EXAMPLES["S1 (over Q(sqrt 2))"][0]  # (√2−1)σ((√2+1)x) + σ(x − √2)


def write(tmp_path: Path, data: Any, name: str = "p.json") -> str:
    """Write ``data`` as JSON (or a raw string as is) and return the path."""
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")
    return str(path)


def run_ok(argv: list[str], capfd: Cap) -> list[str]:
    rc = main(argv)
    out, err = capfd.readouterr()
    assert rc == 0, err
    assert err == ""
    return out.splitlines()


def one_entry_file(numeral: str) -> str:
    """JSON text of σ(x) + c with ``numeral`` written verbatim as c (a literal or a string)."""
    return '{"M": [[1]], "A": [[1]], "b": [0], "c": [' + numeral + "]}"


def assert_input_error(argv: list[str], capfd: Cap) -> str:
    """Exit code 2, exactly one line on stderr starting "certsym: error:", nothing on stdout."""
    rc = main(argv)
    out, err = capfd.readouterr()
    assert rc == 2
    assert out == ""
    assert "Traceback" not in err
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("certsym: error:")
    assert err.endswith("\n")
    return lines[0]


# --------------------------------------------------------------------------------------------
# Reading numbers from parameter files
# --------------------------------------------------------------------------------------------


def test_json_float_literal_is_exact_decimal(tmp_path: Path, capfd: Cap) -> None:
    # JSON literal 0.1 is the decimal 1/10, not the binary float 0.1000000000000000055...
    path = write(tmp_path, '{"M": [[0]], "A": [[1]], "b": [0], "c": [0.1]}')
    assert run_ok(["eval", path, "--at", "5"], capfd) == ["1/10"]
    (net,), _ = load_networks([path])
    assert net.c == (fmpq(1, 10),)


def test_json_literals_exact(tmp_path: Path) -> None:
    text = ('{"M": [[1e-3, -2.5E+4, 0.30000000000000004]], "A": [[1], [1], [1]], '
            '"b": [0, 0, 0], "c": [-0]}')
    (net,), _ = load_networks([write(tmp_path, text)])
    (row,) = net.M
    assert row == (fmpq(1, 1000), fmpq(-25000), fmpq(30000000000000004, 10**17))
    assert net.c == (fmpq(0),)


def test_load_with_extra_values_joins_field(tmp_path: Path) -> None:
    (net,), (x,) = load_networks([write(tmp_path, E1)], extra_values=parse_point("sqrt(2)"))
    assert isinstance(net.field, NumberField)
    # σ(√2) + 2σ(√2 − 1) = 3√2 − 2
    assert net.evaluate([x]) == [3 * x - 2]


def test_load_two_files_one_field(tmp_path: Path) -> None:
    p1 = write(tmp_path, {"M": [[1]], "A": [["sqrt(2)"]], "b": [0], "c": [0]}, "a.json")
    p2 = write(tmp_path, {"M": [[1]], "A": [["sqrt(3)"]], "b": [0], "c": [0]}, "b.json")
    (n1, n2), _ = load_networks([p1, p2])
    assert n1.field == n2.field
    assert n1.field.degree == 4
    assert n1.A[0][0] * n1.A[0][0] == 2
    assert n2.A[0][0] * n2.A[0][0] == 3


def test_shape_key_for_empty_network(tmp_path: Path, capfd: Cap) -> None:
    data = {"M": [[]], "A": [], "b": [], "c": ["7/2"], "shape": {"m": 2, "n": 0, "k": 1}}
    assert run_ok(["eval", write(tmp_path, data), "--at", "1,2"], capfd) == ["7/2"]


# --------------------------------------------------------------------------------------------
# Writers: network_to_json reads back to the same network
# --------------------------------------------------------------------------------------------


def test_writer_format(tmp_path: Path) -> None:
    (net,), _ = load_networks([write(tmp_path, E1)])
    data = network_to_json(net)
    assert data["shape"] == {"m": 1, "n": 2, "k": 1}
    entries = [x for key in ("M", "A") for row in data[key] for x in row] + data["b"] + data["c"]
    assert all(isinstance(x, str) for x in entries)
    assert json.loads(dump_network(net)) == data


@FAST
@given(st.data())
def test_writer_round_trip_q(data: st.DataObject) -> None:
    m, n, k = (data.draw(st.integers(lo, hi)) for lo, hi in ((1, 3), (0, 3), (1, 2)))

    def vec(size: int) -> list[fmpq]:
        return data.draw(st.lists(small_rationals, min_size=size, max_size=size))

    net = Network.build([vec(n) for _ in range(k)], [vec(m) for _ in range(n)], vec(n), vec(k),
                        QQ, m)
    (back,), _ = load_networks(["written"], texts=[dump_network(net)])
    assert back == net


@settings(max_examples=8, deadline=None)  # each load runs sympy's primitive element: slow
@given(st.data())
def test_writer_round_trip_sqrt2(data: st.DataObject) -> None:
    """Write entries as "a + b*sqrt(2)", load, write with network_to_json, and load the original
    and the written file together: in their common field they are the same network."""
    m, n, k = (data.draw(st.integers(lo, hi)) for lo, hi in ((1, 2), (1, 2), (1, 2)))
    pair = st.tuples(small_rationals, small_rationals)

    def vec(size: int) -> list[str]:
        return [f"({a}) + ({b})*sqrt(2)" for a, b in
                data.draw(st.lists(pair, min_size=size, max_size=size))]

    original = json.dumps({"M": [vec(n) for _ in range(k)], "A": [vec(m) for _ in range(n)],
                           "b": vec(n), "c": [*vec(k - 1), "sqrt(2)"]})
    (net,), _ = load_networks(["original"], texts=[original])
    assert isinstance(net.field, NumberField)
    written = json.dumps(network_to_json(net))
    (p, q), _ = load_networks(["original", "written"], texts=[original, written])
    assert p == q


def test_writer_round_trip_e7() -> None:
    original = json.dumps(S1)
    (net,), _ = load_networks(["S1"], texts=[original])
    (p, q), _ = load_networks(["S1", "written"], texts=[original, dump_network(net)])
    assert p == q
    x = p.field(3)
    assert q.evaluate([x]) == p.evaluate([x])


def test_write_json_atomic(tmp_path: Path) -> None:
    (net,), _ = load_networks(["E1"], texts=[json.dumps(E1)])
    target = tmp_path / "out.json"
    target.write_text("old", encoding="utf-8")
    write_json_atomic(target, network_to_json(net))
    (back,), _ = load_networks([target])
    assert back == net
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.json"]  # no temporary left
    with pytest.raises(InputError):
        write_json_atomic(tmp_path / "no" / "such" / "dir.json", {})


# --------------------------------------------------------------------------------------------
# certsym eval
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("at", "expected"),
    [
        ("-1", "0"),  # σ(−1) + 2σ(−2)
        ("1/2", "1/2"),  # σ(1/2) + 2σ(−1/2)
        ("2", "4"),  # σ(2) + 2σ(1) = 2 + 2
        ("0.5", "1/2"),
        ("3", "7"),  # 3 + 2·2
    ],
)
def test_eval_e1(tmp_path: Path, capfd: Cap, at: str, expected: str) -> None:
    assert run_ok(["eval", write(tmp_path, E1), "--at", at], capfd) == [expected]


def test_eval_e1_at_irrational_point(tmp_path: Path, capfd: Cap) -> None:
    # σ(√2) + 2σ(√2 − 1) = 3√2 − 2
    (line,) = run_ok(["eval", write(tmp_path, E1), "--at", "sqrt(2)"], capfd)
    assert line.replace(" ", "") in {"-2+3*sqrt(2)", "3*sqrt(2)-2"}


def test_eval_e7_over_sqrt2(tmp_path: Path, capfd: Cap) -> None:
    # at x = 3: (√2 − 1)(√2 + 1)·3 + σ(3 − √2) = 3 + 3 − √2 = 6 − √2
    (line,) = run_ok(["eval", write(tmp_path, S1), "--at", "3"], capfd)
    assert line == "6 - sqrt(2)"
    # re-parse the printed value in one field with √2: it is exactly 6 − √2
    check = {"M": [[0], [0]], "A": [[0]], "b": [0], "c": [line, "6 - sqrt(2)"]}
    (net,), _ = load_networks(["check"], texts=[json.dumps(check)])
    assert net.c[0] == net.c[1]
    # at x = 1 < √2: (√2 − 1)(√2 + 1) = 1, rational output
    assert run_ok(["eval", write(tmp_path, S1), "--at", "1"], capfd) == ["1"]


def test_eval_one_line_per_output(tmp_path: Path, capfd: Cap) -> None:
    # E6 rows with two outputs; at (1/2, 3) the neurons are σ(1/2) = 1/2, σ(3) = 3, σ(−5/2) = 0:
    # output 1 = 1/2 + 3 + 0 = 7/2, output 2 = 0·1/2 + 2·3 − 0 − 1/3 = 17/3
    data = {"M": [[1, 1, 1], [0, 2, -1]], "A": [[1, 0], [0, 1], [-1, -1]], "b": [0, 0, 1],
            "c": [0, "-1/3"]}
    assert run_ok(["eval", write(tmp_path, data), "--at", "1/2,3"], capfd) == ["7/2", "17/3"]


def test_eval_json_output(tmp_path: Path, capfd: Cap) -> None:
    out = run_ok(["eval", write(tmp_path, E1), "--at", "3", "--json"], capfd)
    data = json.loads("\n".join(out))
    assert data["value"] == ["7"]
    assert data["x"] == ["3"]
    assert data["field"] == "QQ"


# --------------------------------------------------------------------------------------------
# The error contract: exit code 2, one line on stderr, nothing on stdout, no traceback
# --------------------------------------------------------------------------------------------

GOOD = {"M": [[1, 2]], "A": [[1], [1]], "b": [0, -1], "c": [0]}


def _with(**changes: Any) -> dict[str, Any]:
    data = json.loads(json.dumps(GOOD))
    data.update(changes)
    return data


BAD_FILES: dict[str, Any] = {
    "malformed JSON": '{"M": [[1, 2]], "A": [[1], [1]], "b": [0, -1], "c": [0]',
    "trailing garbage": json.dumps(GOOD) + " x",
    "empty file": "",
    "top-level list": json.dumps([GOOD]),
    "top-level number": "3",
    "A rows differ in length": _with(A=[[1], [1, 2]]),
    "M wrong number of columns": _with(M=[[1, 2, 3]]),
    "b length mismatch": _with(b=[0]),
    "M rows vs c length": _with(c=[0, 0]),
    "empty c": _with(c=[], M=[]),
    "unknown key": _with(d=[1]),
    "missing key": {"M": [[1, 2]], "A": [[1], [1]], "b": [0, -1]},
    "division by zero": _with(c=["1/0"]),
    "imaginary unit": _with(c=["I"]),
    "pi": _with(c=["pi"]),
    "sqrt(-2)": _with(c=["sqrt(-2)"]),
    "boolean entry": _with(c=[True]),
    "null entry": _with(c=[None]),
    "list entry": _with(b=[[0], -1]),
    "A not a list of rows": _with(A=[1, 1]),
    "b not a list": _with(b="0, -1"),
    "shape disagrees": _with(shape={"m": 1, "n": 3, "k": 1}),
    "shape not an integer": _with(shape={"m": "1"}),
    "shape unknown key": _with(shape={"w": 1}),
    "NaN literal": '{"M": [[1, 2]], "A": [[1], [1]], "b": [0, -1], "c": [NaN]}',
    "Infinity literal": '{"M": [[1, 2]], "A": [[1], [1]], "b": [0, -1], "c": [-Infinity]}',
    "20001-digit JSON integer": one_entry_file("7" * 20001),
    "20001-digit string": _with(c=["7" * 20001]),
    "huge exponent": _with(c=["1e99999"]),
    "deeply nested JSON": "[" * 100_000 + "]" * 100_000,
}


@pytest.mark.parametrize("name", sorted(BAD_FILES))
def test_bad_parameter_file(tmp_path: Path, capfd: Cap, name: str) -> None:
    path = write(tmp_path, BAD_FILES[name])
    assert_input_error(["eval", path, "--at", "1"], capfd)


def test_missing_file(tmp_path: Path, capfd: Cap) -> None:
    line = assert_input_error(["eval", str(tmp_path / "nope.json"), "--at", "1"], capfd)
    assert "no such file" in line


def test_directory_as_file(tmp_path: Path, capfd: Cap) -> None:
    assert_input_error(["eval", str(tmp_path), "--at", "1"], capfd)


def test_not_utf8(tmp_path: Path, capfd: Cap) -> None:
    path = tmp_path / "latin1.json"
    path.write_bytes(b'{"M": [[1]], "A": [[1]], "b": [0], "c": ["\xe9"]}')
    assert_input_error(["eval", str(path), "--at", "1"], capfd)


@pytest.mark.parametrize("numeral", ["123456", '"123456"', "1.23456", '"-123456"'])
def test_max_digits_option(tmp_path: Path, capfd: Cap, numeral: str) -> None:
    path = write(tmp_path, one_entry_file(numeral))
    assert_input_error(["--max-digits", "5", "eval", path, "--at", "1"], capfd)
    # the same file is fine under the default limit
    assert len(run_ok(["eval", path, "--at", "1"], capfd)) == 1


@pytest.mark.parametrize("numeral", ['"12345"', '"-12345"', "12345"])
def test_max_digits_allows_limit(tmp_path: Path, capfd: Cap,
                                 numeral: str) -> None:
    path = write(tmp_path, one_entry_file(numeral))
    expected = str(int(numeral.strip('"')) + 1)  # c + σ(1)
    assert run_ok(["--max-digits", "5", "eval", path, "--at", "1"], capfd) == [expected]


@pytest.mark.parametrize(("numeral", "expected"), [("-12345", "-12344"), ("1.2345", "4469/2000")])
def test_max_digits_counts_digits_of_json_literals(
    tmp_path: Path, capfd: Cap, numeral: str, expected: str
) -> None:
    # c + σ(1) = c + 1; -12345 + 1 = -12344, 1.2345 + 1 = 22345/10000 = 4469/2000
    path = write(tmp_path, one_entry_file(numeral))
    assert run_ok(["--max-digits", "5", "eval", path, "--at", "1"], capfd) == [expected]


def test_default_limit_negative_json_literal(tmp_path: Path, capfd: Cap) -> None:
    digits = "9" * 10_000
    path = write(tmp_path, one_entry_file("-" + digits))
    assert run_ok(["eval", path, "--at", "0"], capfd) == ["-" + digits]


@pytest.mark.parametrize(
    "at", ["1,2", "1,,2", "", " ", "pi", "1/0", "I", "x", "1e99999", ",1"]
)
def test_bad_point(tmp_path: Path, capfd: Cap, at: str) -> None:
    assert_input_error(["eval", write(tmp_path, E1), "--at", at], capfd)


@pytest.mark.parametrize(
    "argv",
    [
        ["eval", "P.json"],  # missing --at
        ["frobnicate"],  # unknown subcommand
        ["eval"],  # missing file
        ["eval", "P.json", "--at", "1", "--bogus"],
        ["--max-digits", "x", "eval", "P.json", "--at", "1"],
        ["--max-digits", "0", "eval", "P.json", "--at", "1"],
    ],
)
def test_usage_errors(tmp_path: Path, capfd: Cap, argv: list[str]) -> None:
    path = write(tmp_path, E1)
    assert_input_error([path if a == "P.json" else a for a in argv], capfd)


def test_no_arguments(capfd: Cap) -> None:
    assert_input_error([], capfd)


def test_no_arguments_exit_code(capfd: Cap) -> None:
    # The part of the contract that holds today: a usage problem, exit code 2, no traceback.
    assert main([]) == 2
    out, err = capfd.readouterr()
    assert "Traceback" not in out + err


def test_negative_point_with_equals_sign(tmp_path: Path, capfd: Cap) -> None:
    # E1 at −1/2: σ(−1/2) + 2σ(−3/2) = 0; "--at=VALUE" is the argparse way to pass "-..."
    assert run_ok(["eval", write(tmp_path, E1), "--at=-1/2"], capfd) == ["0"]
    assert run_ok(["eval", write(tmp_path, E1), "--at", "-0.5"], capfd) == ["0"]


@pytest.mark.parametrize("at", ["-1/2", "-sqrt(2)"])
def test_negative_point_after_space(tmp_path: Path, capfd: Cap, at: str) -> None:
    # E1 is 0 on x <= 0 (both neurons off): σ(x) + 2σ(x − 1) = 0
    assert run_ok(["eval", write(tmp_path, E1), "--at", at], capfd) == ["0"]


def test_point_with_two_argument_functions() -> None:
    point = parse_point("root(8, 3),CRootOf(x^2 - 4, 1)")  # = (2, 2)
    assert point == [fmpq(2), fmpq(2)]


def test_crootof_irrational_coefficient_in_file(tmp_path: Path, capfd: Cap) -> None:
    path = write(tmp_path, _with(c=["CRootOf(x^2 - sqrt(2), 0)"]))
    assert_input_error(["eval", path, "--at", "1"], capfd)


def test_long_expression_entry(tmp_path: Path, capfd: Cap) -> None:
    path = write(tmp_path, _with(c=["+".join(["1"] * 500)]))
    try:
        rc = main(["eval", path, "--at", "0"])
    except RecursionError:
        # report briefly: formatting a 1000-frame traceback would cost seconds
        pytest.fail("RecursionError escaped from main()", pytrace=False)
    out, err = capfd.readouterr()
    # E1 at 0 is 0, so the output is the constant 500; or the entry is refused cleanly
    assert (rc, out) == (0, "500\n") or (rc == 2 and len(err.splitlines()) == 1)


def test_input_error_messages_are_single_line(tmp_path: Path) -> None:
    with pytest.raises(InputError) as info:
        load_networks([write(tmp_path, _with(c=["pi"]))])
    assert "\n" not in str(info.value)
    assert "c[0]" in str(info.value)


# --------------------------------------------------------------------------------------------
# The real console entry point
# --------------------------------------------------------------------------------------------


def _run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "certsym", *args], capture_output=True,
                          text=True, timeout=120)


def test_subprocess_single_stderr_line_on_syntax_warning(tmp_path: Path) -> None:
    bad = write(tmp_path, _with(c=["1if 1 else 2"]), "warn.json")
    result = _run_cli("eval", bad, "--at", "1")
    assert result.returncode == 2
    assert result.stdout == ""
    assert len(result.stderr.splitlines()) == 1, result.stderr


def test_subprocess_exit_codes(tmp_path: Path) -> None:
    good = write(tmp_path, E1, "good.json")
    bad = write(tmp_path, _with(c=["pi"]), "bad.json")
    ok = _run_cli("eval", good, "--at", "1/2")
    assert ok.returncode == 0
    assert ok.stdout == "1/2\n"
    assert ok.stderr == ""
    fail = _run_cli("eval", bad, "--at", "1")
    assert fail.returncode == 2
    assert fail.stdout == ""
    assert len(fail.stderr.splitlines()) == 1
    assert fail.stderr.startswith("certsym: error:")
    assert "Traceback" not in fail.stderr


def test_per_file_selection_options(tmp_path: Path, capfd: Cap) -> None:
    """A Lightning checkpoint (the state dict under "state_dict", names prefixed "model.") against a plain state dict,
    and a Flax-style in×out npz against a torch one: each needs options for one file only."""
    import numpy as np
    import torch

    rng = np.random.default_rng(8)
    W1, b1 = rng.standard_normal((5, 3)).astype(np.float32), rng.standard_normal(5).astype(np.float32)
    W2, b2 = rng.standard_normal((2, 5)).astype(np.float32), rng.standard_normal(2).astype(np.float32)
    plain = {"0.weight": W1, "0.bias": b1, "2.weight": W2, "2.bias": b2}
    torch_file, lightning = tmp_path / "plain.pt", tmp_path / "run.ckpt"
    torch.save({k: torch.from_numpy(v) for k, v in plain.items()}, torch_file)
    torch.save({"state_dict": {f"model.{k}": torch.from_numpy(v) for k, v in plain.items()}, "epoch": 3,
                "optimizer_states": []}, lightning)
    assert main(["equiv", str(lightning), str(torch_file), "--state-key1", "state_dict"]) == 0
    assert "EQUIVALENT" in capfd.readouterr().out
    assert main(["equiv", str(lightning), str(torch_file), "--state-key", "state_dict"]) == 2  # the plain file has none
    assert "state_dict" in capfd.readouterr().err
    flax = tmp_path / "flax.npz"
    np.savez(flax, **{"0.weight": W1.T, "0.bias": b1, "2.weight": W2.T, "2.bias": b2})  # kernels inputs x outputs
    assert main(["equiv", str(flax), str(torch_file), "--layout1", "in-out"]) == 0
    assert "EQUIVALENT" in capfd.readouterr().out
    assert main(["distance", str(torch_file), str(flax), "--layout2", "in-out", "--json"]) == 0
    bounds = json.loads(capfd.readouterr().out)
    assert bounds["upper"] == bounds["lower"] == "0"
    assert main(["equiv", str(flax), str(torch_file)]) == 2  # 3x5 is not the shape torch's layout needs
    assert "--layout in-out" in capfd.readouterr().err
