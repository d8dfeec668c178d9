"""Flax msgpack files (docs/FORMATS.md, "Flax msgpack"), written here as flax.serialization.to_bytes writes them
(msgpack maps, arrays as ext type 1 holding [shape, dtype name, bytes]): read by certsym and, with its own
decoder, by the checker, which agree; what is ambiguous is refused by both."""

from __future__ import annotations

import json
from pathlib import Path

import msgpack
import numpy as np
import pytest

from certsym.cli import main
from certsym.errors import InputError
from certsym.io.flaxfile import read_msgpack as producer_read
from certsym.io.models import bfloat16_to_float32
from certsym_check.errors import Reject
from certsym_check.readers.msgpack import read_msgpack as checker_read


def _nd(a: np.ndarray, dtype: str | None = None) -> msgpack.ExtType:
    body = a.tobytes("C") if dtype != "bfloat16" else (a.astype(np.float32).view(np.uint32) >> 16).astype(
        np.uint16).tobytes()
    return msgpack.ExtType(1, msgpack.packb((a.shape, dtype or a.dtype.name, body), use_bin_type=True))


def _dense(rng, widths, dtype=np.float32) -> list[tuple[np.ndarray, np.ndarray]]:
    return [(rng.standard_normal((widths[i], widths[i + 1])).astype(dtype),
             rng.standard_normal(widths[i + 1]).astype(dtype)) for i in range(len(widths) - 1)]


def _write(path: Path, layers, extra: dict | None = None, top: str | None = "params") -> str:
    tree = {f"Dense_{i}": {"kernel": _nd(k), "bias": _nd(b)} for i, (k, b) in enumerate(layers)}
    tree = {top: tree} if top else tree
    tree.update(extra or {})
    path.write_bytes(msgpack.packb(tree, use_bin_type=True))
    return str(path)


def _torch_npz(path: Path, layers) -> str:
    np.savez(path, **{f"{2 * i}.{part}": (k.T.copy() if part == "weight" else b)
                      for i, (k, b) in enumerate(layers) for part in ("weight", "bias")})
    return str(path)


@pytest.mark.parametrize("widths", [(3, 6, 2), (4, 5, 3, 2)])
def test_a_flax_file_equals_its_torch_form_and_the_checker_agrees(tmp_path: Path, capfd, widths) -> None:
    layers = _dense(np.random.default_rng(0), widths)
    flax = _write(tmp_path / "f.msgpack", layers, extra={"step": 7})  # a leaf that is not a tensor
    torch = _torch_npz(tmp_path / "t.npz", layers)
    for flags in ([], ["--reference"]):
        cert = tmp_path / "c.json"
        assert main(["equiv", flax, torch, "--cert", str(cert), *flags]) == 0
        capfd.readouterr()
        assert main(["check", str(cert), "--inputs", flax, torch]) == 0
        out = capfd.readouterr().out
        assert "msgpack default" in out and "(stored inputs x outputs)" in out, out
    model = json.loads(cert.read_text())["inputs"][0]["model"]
    assert model["format"] == "msgpack" and model["layout"] == "in-out"
    assert model["tensors"][0] == "params.Dense_0.kernel"


def test_other_names_by_keys_and_narrow_types(tmp_path: Path, capfd) -> None:
    rng = np.random.default_rng(1)
    k0, b0 = rng.standard_normal((3, 4)).astype(np.float32), rng.standard_normal(4).astype(np.float32)
    k1, b1 = rng.standard_normal((4, 1)).astype(np.float32), rng.standard_normal(1).astype(np.float32)
    tree = {"params": {"layers_0": {"kernel": _nd(k0, "bfloat16"), "bias": _nd(b0.astype(np.float16))},
                       "layers_2": {"kernel": _nd(k1), "bias": _nd(b1)}}}
    path = tmp_path / "seq.msgpack"
    path.write_bytes(msgpack.packb(tree, use_bin_type=True))
    keys = "params.layers_0.kernel,params.layers_0.bias,params.layers_2.kernel,params.layers_2.bias"
    cert = tmp_path / "c.json"
    assert main(["minimal", str(path), "--keys", keys, "-o", str(tmp_path / "m.json")]) == 0
    assert main(["equiv", str(path), str(path), "--keys", keys, "--cert", str(cert), "--reference"]) == 0
    capfd.readouterr()
    assert main(["check", str(cert), "--named-inputs", "--quiet"]) == 0
    # the values are the exact ones the types denote, on both sides
    got = producer_read(path, bfloat16_to_float32)
    theirs, _ = checker_read(path.read_bytes(), None)
    for name, array in got.items():
        assert [float(x) for x in array.astype(np.float64).ravel()] == [float(x) for x in theirs[name].exact()]


def _leaf(payload: tuple) -> bytes:
    """A file {"w": an array leaf with this [shape, dtype, bytes] payload}."""
    return msgpack.packb({"w": msgpack.ExtType(1, msgpack.packb(payload, use_bin_type=True))}, use_bin_type=True)


def _raw_map(*pairs: bytes) -> bytes:
    """A msgpack fixmap of already-packed key and value bytes (so that a key may repeat)."""
    return bytes([0x80 | (len(pairs) // 2)]) + b"".join(pairs)


CASES = {
    "repeated key": (lambda a: _raw_map(msgpack.packb("Dense_0"), a, msgpack.packb("Dense_0"), a), "repeat"),
    "binary key": (lambda a: _raw_map(msgpack.packb(b"Dense_0", use_bin_type=True), a), "not a string"),
    "joined names collide": (lambda a: msgpack.packb({"a.b": _nd(np.zeros(1, np.float32)), "a": {
        "b": _nd(np.zeros(1, np.float32))}}, use_bin_type=True), "both named"),
    "chunked array": (lambda a: msgpack.packb({"w": {"__msgpack_chunked_array__": True, "shape": {}, "chunks": {}}},
                                              use_bin_type=True), "chunked"),
    "unsupported dtype": (lambda a: msgpack.packb({"w": _nd(np.zeros(2, np.complex64))}, use_bin_type=True),
                          "unsupported"),
    "short array": (lambda a: msgpack.packb({"w": msgpack.ExtType(1, msgpack.packb(((3,), "float32", b"\0" * 8),
                                                                                    use_bin_type=True))},
                                            use_bin_type=True), "bytes"),
    "trailing bytes": (lambda a: msgpack.packb({"w": _nd(np.zeros(1, np.float32))}, use_bin_type=True) + b"\xc0",
                       "after"),
    "not a map": (lambda a: msgpack.packb([1, 2], use_bin_type=True), "map"),
    "long shape": (lambda a: _leaf(([1] * 65, "float32", b"\0" * 4)), "shape"),  # numpy allows 64 dimensions
    "bytes as a string": (lambda a: _leaf(((1,), "float32", "abcd")), "bin"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_ambiguous_or_malformed_files_are_refused_by_both(tmp_path: Path, case: str) -> None:
    build, _ = CASES[case]
    data = build(msgpack.packb({"kernel": _nd(np.zeros((1, 1), np.float32))}, use_bin_type=True))
    path = tmp_path / "bad.msgpack"
    path.write_bytes(data)
    with pytest.raises(InputError):
        producer_read(path, bfloat16_to_float32)
    with pytest.raises(Reject):
        checker_read(data, None)


def test_the_command_line_refuses_a_malformed_file_in_one_line(tmp_path: Path, capfd) -> None:
    path = tmp_path / "bad.msgpack"
    path.write_bytes(_raw_map(msgpack.packb("a"), msgpack.packb(1), msgpack.packb("a"), msgpack.packb(2)))
    assert main(["equiv", str(path), str(path)]) == 2
    out, err = capfd.readouterr()
    assert out == "" and err.count("\n") == 1 and "not a Flax msgpack file" in err


# -- the red team's holes, each a regression test ----------------------------------------------------------------
def test_a_file_that_is_both_msgpack_and_safetensors_is_refused_by_both(tmp_path: Path, capfd) -> None:
    """Content decides the format, so no file may read as both: each reader refuses the other's form."""
    from certsym.io.models import _safetensors_data
    from certsym_check.readers.files import read_tensors

    # {"\0\0\0\0\0\0{": <bin>} whose bytes 0-7 are also a header length (0xA781) that fits, followed by "{"
    ambiguous = b"\x81\xa7" + bytes(6) + b"{" + b"\xc5" + (50_000).to_bytes(2, "big") + bytes(50_000)
    assert ambiguous[8:9] == b"{" and int.from_bytes(ambiguous[:8], "little") <= len(ambiguous) - 8
    path = tmp_path / "poly.msgpack"
    path.write_bytes(ambiguous)
    assert main(["equiv", str(path), str(path)]) == 2
    assert "refused as ambiguous" in capfd.readouterr().err
    with pytest.raises(Reject, match="ambiguous"):
        read_tensors(ambiguous, "msgpack")
    whole_map = msgpack.packb({"a": 1}, use_bin_type=True)
    with pytest.raises(Reject, match="ambiguous"):
        read_tensors(whole_map, "safetensors")
    with pytest.raises(InputError, match="ambiguous"):
        _safetensors_data(whole_map, tmp_path / "x.safetensors")


def test_zero_dimensional_bfloat16_arrays_are_tensors_for_both(tmp_path: Path, capfd) -> None:
    layers = _dense(np.random.default_rng(2), (3, 4, 1))
    path = Path(_write(tmp_path / "s.msgpack", layers))
    tree = msgpack.unpackb(path.read_bytes(), raw=False)
    tree["params"]["scale"] = _nd(np.array(1.5, np.float32), "bfloat16")
    path.write_bytes(msgpack.packb(tree, use_bin_type=True))
    assert "params.scale" in producer_read(path, bfloat16_to_float32)
    assert "params.scale" in checker_read(path.read_bytes(), None)[1]
    assert main(["equiv", str(path), str(path)]) == 2  # an extra tensor: the default rule picks nothing, on both
    assert "the Flax default rule reads exactly Dense_0, Dense_1" in capfd.readouterr().err


def test_many_values_are_read_in_linear_space(tmp_path: Path) -> None:
    """A long list of empty maps is read through, not kept (it held 75 times the file's size)."""
    import tracemalloc

    data = msgpack.packb({"w": [{}] * 200_000, "a": _nd(np.zeros(2, np.float32))}, use_bin_type=True)
    tracemalloc.start()
    names = checker_read(data, None)[1]
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert names == ["a"] and peak < 20 * len(data)
