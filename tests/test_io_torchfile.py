"""certsym.io.torchfile: torch.save archives read without torch, value for value equal to torch.load's, and
every file outside docs/FORMATS.md ("torch") refused with a one-line InputError that starts with the path."""

from __future__ import annotations

import io
import os
import pickle
import random
import struct
import subprocess
import sys
import time
import warnings
import zipfile
from collections import OrderedDict
from pathlib import Path

import numpy as np
import pytest

from certsym.errors import InputError
from certsym.io.torchfile import load_torch, read_state_dict

torch = pytest.importorskip("torch")

ROOT = Path(__file__).resolve().parents[1]


# ---------------------------------------------------------------- helpers


def _net_state(dtype) -> OrderedDict:
    """A Sequential(Linear, ReLU, Linear) state dict in ``dtype`` (floats: with -0.0, a subnormal and a large
    value; ints: random integers over the type's range)."""
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(5, 4), torch.nn.ReLU(), torch.nn.Linear(4, 3))
    sd = net.state_dict()
    for i, key in enumerate(sd):
        if dtype.is_floating_point:
            value = sd[key].to(dtype)
            flat = value.view(-1)
            flat[0] = -0.0
            flat[-1] = torch.finfo(dtype).tiny / 2 if i % 2 else torch.finfo(dtype).max
        else:
            info = torch.iinfo(dtype)
            value = torch.randint(info.min, info.max, sd[key].shape, dtype=dtype)
        sd[key] = value
    return sd


def _save(obj, path: Path, **kwargs) -> Path:
    torch.save(obj, path, **kwargs)
    return path


def _assert_same(ours: dict, theirs: dict) -> None:
    """Bit-exact equality of our arrays with torch's tensors (bfloat16 through .float())."""
    assert list(ours) == list(theirs)
    for key, tensor in theirs.items():
        got = ours[key]
        assert isinstance(got, np.ndarray) and got.flags.c_contiguous and got.dtype.isnative
        want = tensor.float().numpy() if tensor.dtype == torch.bfloat16 else tensor.numpy()
        assert got.dtype == want.dtype and got.shape == want.shape, key
        assert got.tobytes() == np.ascontiguousarray(want).tobytes(), key


def _rezip(src: Path, dst: Path, edit=None, add=()) -> Path:
    """A copy of the archive ``src``, its folder renamed to ``dst``'s stem (as torch.save names it), with member
    bytes passed through ``edit(name, data)`` (None drops the member) and the (name, data) pairs ``add`` appended."""
    with zipfile.ZipFile(src) as z:
        members = [(dst.stem + info.filename[info.filename.index("/"):], z.read(info)) for info in z.infolist()]
    with zipfile.ZipFile(dst, "w", zipfile.ZIP_STORED) as out, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # duplicate names are written on purpose
        for name, data in members:
            data = edit(name, data) if edit else data
            if data is not None:
                out.writestr(name, data)
        for name, data in add:
            out.writestr(name, data)
    return dst


def _replace_pickle(src: Path, dst: Path, data: bytes) -> Path:
    return _rezip(src, dst, lambda name, old: data if name.endswith("/data.pkl") else old)


class _Storage:
    """A storage for ``_craft``: pickled as the persistent id ('storage', cls, key, 'cpu', numel)."""

    def __init__(self, cls, key: str, numel: int):
        self.cls, self.key, self.numel = cls, key, numel


class _Tensor:
    """A tensor for ``_craft``: pickled as _rebuild_tensor_v2(*args)."""

    def __init__(self, *args):
        self.args = args

    def __reduce__(self):
        return torch._utils._rebuild_tensor_v2, self.args


class _Pickler(pickle.Pickler):
    def persistent_id(self, obj):
        if isinstance(obj, _Storage):
            return "storage", obj.cls, obj.key, "cpu", obj.numel
        return None


def _pickle(obj, protocol: int = 2) -> bytes:
    buffer = io.BytesIO()
    _Pickler(buffer, protocol=protocol).dump(obj)
    return buffer.getvalue()


def _craft(path: Path, obj, storages: dict[str, bytes], protocol: int = 2, byteorder: bytes = b"little") -> Path:
    """An archive laid out like torch.save's, with data.pkl pickled from ``obj`` by hand."""
    top = path.stem
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as z:
        z.writestr(f"{top}/data.pkl", _pickle(obj, protocol))
        z.writestr(f"{top}/byteorder", byteorder)
        for key, data in storages.items():
            z.writestr(f"{top}/data/{key}", data)
        z.writestr(f"{top}/version", b"3\n")
    return path


def _floats(*values: float) -> bytes:
    return struct.pack(f"<{len(values)}f", *values)


def _refused(path: Path, *fragments: str, reader=load_torch) -> str:
    with pytest.raises(InputError) as info:
        reader(path)
    message = str(info.value)
    assert message.startswith(f"{path}: ") and "\n" not in message, message
    for fragment in fragments:
        assert fragment in message, message
    return message


# ---------------------------------------------------------------- values equal to torch.load's


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.float64, torch.int64,
                                   torch.int32, torch.int16, torch.int8, torch.uint8])
def test_state_dict_matches_torch(tmp_path: Path, dtype) -> None:
    path = _save(_net_state(dtype), tmp_path / "m.pt")
    theirs = torch.load(path, weights_only=True)
    _assert_same(read_state_dict(path), theirs)
    _assert_same(load_torch(str(path)), theirs)


def test_views_sharing_storage_match_torch(tmp_path: Path) -> None:
    base = torch.arange(24, dtype=torch.float32).reshape(4, 6) / 7
    sd = {"t": base.t(), "slice": base[1:, 2:5], "row": base[2], "scalar": base[3, 4], "base": base,
          "expanded": base[0, :3].expand(2, 3), "empty": base[:0], "step": base[:, ::2]}
    path = _save(sd, tmp_path / "views.pt")
    with zipfile.ZipFile(path) as z:
        assert [n for n in z.namelist() if "/data/" in n] == ["views/data/0"]  # one shared storage
    ours = read_state_dict(path)
    _assert_same(ours, torch.load(path, weights_only=True))
    assert ours["t"].shape == (6, 4) and ours["slice"].shape == (3, 3) and ours["scalar"].shape == ()


def test_bfloat16_values_are_exact_float32(tmp_path: Path) -> None:
    values = torch.tensor([1.0, -2.5, 3.0e38, 1.0e-40, 0.1], dtype=torch.bfloat16)
    ours = read_state_dict(_save({"x": values}, tmp_path / "bf.pt"))["x"]
    assert ours.dtype == np.float32
    assert (ours.view(np.uint32) >> 16).astype(np.uint16).tobytes() == values.view(torch.int16).numpy().tobytes()
    assert not (ours.view(np.uint32) & 0xFFFF).any()


def test_nested_checkpoint(tmp_path: Path) -> None:
    sd = _net_state(torch.float32)
    path = _save({"model": sd, "epoch": 3, "meta": [None, True, 1.5, ("a", -7)]}, tmp_path / "ckpt.pt")
    tree = load_torch(path)
    assert tree["epoch"] == 3 and tree["meta"] == [None, True, 1.5, ("a", -7)]
    assert type(tree["model"]) is dict
    _assert_same(tree["model"], torch.load(path, weights_only=True)["model"])
    _refused(path, "'model'", "not a tensor", reader=read_state_dict)


def test_big_endian_archive(tmp_path: Path) -> None:
    for dtype, size in ((torch.float32, 4), (torch.float64, 8), (torch.float16, 2), (torch.bfloat16, 2),
                        (torch.int64, 8), (torch.uint8, 1)):
        little = _save(_net_state(dtype), tmp_path / "little.pt")

        def swap(name: str, data: bytes, size=size) -> bytes:
            if name.endswith("/byteorder"):
                return b"big"
            if "/data/" in name:
                return np.frombuffer(data, dtype=f"<u{size}").astype(f">u{size}").tobytes()
            return data

        big = _rezip(little, tmp_path / "big.pt", swap)
        theirs = torch.load(little, weights_only=True)
        _assert_same(read_state_dict(big), theirs)
        _assert_same({k: v.numpy() if v.dtype != torch.bfloat16 else v.float().numpy()
                      for k, v in torch.load(big, weights_only=True).items()},
                     theirs)  # torch reads the rewritten archive the same way


def test_crafted_archive_matches_torch(tmp_path: Path) -> None:
    """The hand-made archives of the refusal tests are realistic: a valid one reads as torch reads it."""
    storage = _Storage(torch.FloatStorage, "0", 6)
    obj = OrderedDict(w=_Tensor(storage, 0, (2, 3), (3, 1), False, OrderedDict()),
                      v=_Tensor(storage, 2, (2, 2), (0, 1), False, OrderedDict(), {}),
                      e=_Tensor(storage, 6, (0,), (1,), False, OrderedDict()))
    path = _craft(tmp_path / "craft.pt", obj, {"0": _floats(1, 2, 3, 4, 5, 6)})
    theirs = torch.load(path, weights_only=True)
    _assert_same(read_state_dict(path), theirs)
    for protocol in (3, 4, 5):  # torch's weights_only loader stops at protocol 4's FRAME; torch.save writes 2
        _assert_same(read_state_dict(_craft(tmp_path / f"craft{protocol}.pt", obj, {"0": _floats(1, 2, 3, 4, 5, 6)},
                                            protocol)), theirs)
    big = _craft(tmp_path / "big.pt", {"w": obj["w"]}, {"0": struct.pack(">6f", 1, 2, 3, 4, 5, 6)}, byteorder=b"big")
    assert read_state_dict(big)["w"].tolist() == [[1, 2, 3], [4, 5, 6]]
    nomark = _rezip(big, tmp_path / "nomark.pt", lambda name, data: None if name.endswith("/byteorder") else data)
    assert read_state_dict(nomark)["w"][0, 0] != 1  # no byteorder member: little endian


def test_no_torch_import(tmp_path: Path) -> None:
    path = _save(_net_state(torch.float32), tmp_path / "m.pt")
    code = ("import sys; from certsym.io.torchfile import read_state_dict; sd = read_state_dict(sys.argv[1]); "
            "assert len(sd) == 4 and not any(m == 'torch' or m.startswith('torch.') for m in sys.modules)")
    subprocess.run([sys.executable, "-c", code, str(path)], check=True, cwd=ROOT, timeout=60)


# ---------------------------------------------------------------- refusals


@pytest.mark.parametrize("module, name, arg", [("os", "system", "touch {marker}"),
                                               ("builtins", "eval", "open({marker!r}, 'w')")])
def test_refuses_foreign_globals_without_running_them(tmp_path: Path, module: str, name: str, arg: str) -> None:
    marker = tmp_path / "ran"
    text = arg.format(marker=str(marker)).encode()
    data = (b"\x80\x02c" + module.encode() + b"\n" + name.encode() + b"\nq\x00X" + struct.pack("<I", len(text))
            + text + b"q\x01\x85q\x02Rq\x03.")
    valid = _save(_net_state(torch.float32), tmp_path / "m.pt")
    path = _replace_pickle(valid, tmp_path / "evil.pt", data)
    _refused(path, f"refused: the pickle names the global {module}.{name}; certsym reads only tensors")
    assert not marker.exists()


def test_refuses_rebuild_parameter(tmp_path: Path) -> None:
    path = _save({"w": torch.nn.Parameter(torch.ones(2, 2))}, tmp_path / "param.pt")
    _refused(path, "the global torch._utils._rebuild_parameter")


def test_refuses_other_globals_and_values(tmp_path: Path) -> None:
    storage = _Storage(torch.FloatStorage, "0", 2)
    two = {"0": _floats(1, 2)}
    cases = {
        "untyped": ({"x": _Storage(torch.UntypedStorage, "0", 8)}, "torch.storage.UntypedStorage"),
        "bool": ({"x": _Storage(torch.BoolStorage, "0", 2)}, "torch.BoolStorage"),
        "class": ({"x": torch.FloatStorage}, "the class torch.FloatStorage used as a value"),
        "bare": ({"x": storage}, "a storage outside a tensor"),
        "bytes": ({"x": b"ab"}, "bytes"),
        "set": ({"x": {1, 2}}, "set"),
    }
    for label, (obj, fragment) in cases.items():
        _refused(_craft(tmp_path / f"{label}.pt", obj, two, protocol=4), "refused", fragment)
    loop: list = []
    loop.append(loop)
    _refused(_craft(tmp_path / "loop.pt", {"x": loop}, two), "contains itself")
    shared = [1, 2]
    assert load_torch(_craft(tmp_path / "dag.pt", {"a": shared, "b": shared}, two)) == {"a": [1, 2], "b": [1, 2]}


def test_refuses_storage_of_wrong_length(tmp_path: Path) -> None:
    valid = _save(_net_state(torch.float32), tmp_path / "m.pt")
    path = _rezip(valid, tmp_path / "long.pt", lambda name, data: data + bytes(4) if name.endswith("/data/0")
                  else data)
    _refused(path, "the member 'long/data/0' holds 84 bytes", "80 bytes")
    missing = _rezip(valid, tmp_path / "missing.pt", lambda name, data: None if name.endswith("/data/1") else data)
    _refused(missing, "no member 'missing/data/1'")


def test_refuses_bad_tensor_arguments(tmp_path: Path) -> None:
    storage = _Storage(torch.FloatStorage, "0", 6)
    six = {"0": _floats(1, 2, 3, 4, 5, 6)}
    hooks = OrderedDict()
    assert read_state_dict(_craft(tmp_path / "edge.pt", {"w": _Tensor(storage, 0, (2, 3), (3, 1), False, hooks)},
                                  six))["w"].tolist() == [[1, 2, 3], [4, 5, 6]]
    cases = {
        "past": ((storage, 1, (2, 3), (3, 1), False, hooks), "reaches element 6 of storage '0', which has 6"),
        "stride": ((storage, 0, (2, 3), (4, 1), False, hooks), "reaches element 6"),
        "negative": ((storage, 5, (2,), (-1,), False, hooks), "non-negative ints"),
        "rank": ((storage, 0, (2, 3), (3,), False, hooks), "one stride per dimension"),
        "hooks": ((storage, 0, (6,), (1,), False, OrderedDict(h=1)), "backward hooks"),
        "metadata": ((storage, 0, (6,), (1,), False, hooks, {"neg": True}), "metadata"),
        "grad": ((storage, 0, (6,), (1,), 1, hooks), "requires_grad"),
        "arity": ((storage, 0, (6,), (1,), False), "5 arguments"),
        "nostorage": ((1, 0, (6,), (1,), False, hooks), "other than a storage"),
    }
    for label, (args, fragment) in cases.items():
        _refused(_craft(tmp_path / f"{label}.pt", {"w": _Tensor(*args)}, six), fragment)
    twice = {"a": _Tensor(storage, 0, (6,), (1,), False, hooks),
             "b": _Tensor(_Storage(torch.IntStorage, "0", 6), 0, (6,), (1,), False, hooks)}
    _refused(_craft(tmp_path / "twice.pt", twice, six), "declared twice")


def test_refuses_negated_view_saved_by_torch(tmp_path: Path) -> None:
    path = _save({"x": torch._neg_view(torch.arange(3.0))}, tmp_path / "neg.pt")
    _refused(path, "metadata {'neg': True}")


def test_ordered_dict_state(tmp_path: Path) -> None:
    class Other(OrderedDict):
        def __reduce__(self):
            return OrderedDict, (), {"other": 1}, None, iter(self.items())

    _refused(_craft(tmp_path / "state.pt", Other(a=1), {}), "a state other than torch's")
    sd = _net_state(torch.float32)
    assert hasattr(sd, "_metadata")  # torch's BUILD state, read and ignored
    assert list(read_state_dict(_save(sd, tmp_path / "m.pt"))) == list(sd)


def test_refuses_members_outside_the_format(tmp_path: Path) -> None:
    valid = _save(_net_state(torch.float32), tmp_path / "m.pt")
    _refused(_rezip(valid, tmp_path / "extra.pt", add=[("extra/notes.txt", b"hi")]), "'extra/notes.txt'",
             "not part of a torch.save archive")
    _refused(_rezip(valid, tmp_path / "dup.pt", add=[("dup/data/0", bytes(80))]), "two members named 'dup/data/0'")
    _refused(_rezip(valid, tmp_path / "tops.pt", add=[("other/version", b"3\n")]), "one top-level folder")
    _refused(_rezip(valid, tmp_path / "nopkl.pt", lambda name, data: None if name.endswith("data.pkl") else data),
             "no nopkl/data.pkl")
    _refused(_rezip(valid, tmp_path / "order.pt", lambda name, data: b"middle" if name.endswith("byteorder") else data),
             "neither 'little' nor 'big'")
    bare = tmp_path / "bare.pt"
    bare.write_bytes(pickle.dumps({"a": 1}, protocol=2))
    _refused(bare, "not a torch.save zip archive")


def test_refuses_legacy_non_zip_and_truncated_files(tmp_path: Path) -> None:
    legacy = _save(_net_state(torch.float32), tmp_path / "legacy.pt", _use_new_zipfile_serialization=False)
    _refused(legacy, "the legacy torch format (before torch 1.6) is not read; re-save it with torch.save")
    text = tmp_path / "text.pt"
    text.write_bytes(b"hello, this is not a model\n")
    _refused(text, "not a torch.save zip archive")
    empty = tmp_path / "empty.pt"
    empty.write_bytes(b"")
    _refused(empty, "not a torch.save zip archive")
    _refused(tmp_path / "absent.pt", "no such file")
    _refused(tmp_path, "cannot read the file")
    data = _save(_net_state(torch.float32), tmp_path / "m.pt").read_bytes()
    for cut in (len(data) // 2, len(data) - 10, 30):
        short = tmp_path / f"short{cut}.pt"
        short.write_bytes(data[:cut])
        _refused(short, "damaged or truncated")


def _claim_size(data: bytes, member: str, size: int) -> bytes:
    """The archive with the central directory's uncompressed size of ``member`` set to ``size``."""
    out = bytearray(data)
    at = out.find(b"PK\x01\x02")
    while at >= 0:
        name_length = struct.unpack_from("<H", out, at + 28)[0]
        if out[at + 46:at + 46 + name_length] == member.encode():
            struct.pack_into("<I", out, at + 24, size)
            return bytes(out)
        at = out.find(b"PK\x01\x02", at + 4)
    raise AssertionError(member)


def test_refuses_huge_claimed_size_without_decompressing(tmp_path: Path) -> None:
    big = torch.zeros(4, 1 << 18)  # 4 MiB of zeros, deflated to a few KiB
    path = _save({"x": big}, tmp_path / "m.pt")
    deflated = tmp_path / "deflated.pt"
    with zipfile.ZipFile(path) as z, zipfile.ZipFile(deflated, "w", zipfile.ZIP_DEFLATED) as out:
        for info in z.infolist():
            out.writestr(info.filename.replace("m/", "deflated/", 1), z.read(info))
    assert deflated.stat().st_size < 100_000
    assert read_state_dict(deflated)["x"].shape == (4, 1 << 18)
    bomb = tmp_path / "bomb.pt"
    bomb.write_bytes(_claim_size(deflated.read_bytes(), "deflated/data/0", 0xFFFFFFF0))
    start = time.perf_counter()
    _refused(bomb, "the member 'deflated/data/0' holds 4294967280 bytes", "4194304 bytes")
    assert time.perf_counter() - start < 0.5


def test_refuses_huge_memo_index_and_trailing_bytes(tmp_path: Path) -> None:
    valid = _save(_net_state(torch.float32), tmp_path / "m.pt")
    start = time.perf_counter()
    memo = b"\x80\x02Nr" + struct.pack("<I", 0x7FFFFFF0) + b"."
    _refused(_replace_pickle(valid, tmp_path / "memo.pt", memo), "memo index 2147483632")
    assert time.perf_counter() - start < 0.5
    with zipfile.ZipFile(valid) as z:
        data = z.read("m/data.pkl")
    _refused(_replace_pickle(valid, tmp_path / "trail.pt", data + b"\x00"), "bytes after the end of its pickle")
    _refused(_replace_pickle(valid, tmp_path / "cut.pt", data[:-1]), "not a well-formed pickle")


def test_read_state_dict_needs_string_keys_and_tensors(tmp_path: Path) -> None:
    x = torch.ones(2)
    _refused(_save([x], tmp_path / "list.pt"), "holds a list, not a state dict", reader=read_state_dict)
    _refused(_save({1: x}, tmp_path / "int.pt"), "the key 1, not a string", reader=read_state_dict)
    _refused(_save({"x": x, "n": 3}, tmp_path / "num.pt"), "the entry 'n' is a int", reader=read_state_dict)
    assert load_torch(tmp_path / "num.pt")["n"] == 3


def test_damaged_archives_raise_only_input_error(tmp_path: Path) -> None:
    """Random damage to the pickle (re-zipped, so it reaches the unpickler) and to the raw archive: each file
    either reads or is refused with an InputError."""
    sd = _net_state(torch.float32)
    sd["extra"] = {"nested": [1, 2.5, ("t", None)]}
    valid = _save(sd, tmp_path / "m.pt")
    with zipfile.ZipFile(valid) as z:
        pkl = z.read("m/data.pkl")
    raw = valid.read_bytes()
    rng = random.Random(1234)
    target = tmp_path / "fuzz.pt"
    outcomes = {"read": 0, "refused": 0}
    for trial in range(400):
        if trial % 2:
            data = bytearray(pkl)
            for _ in range(rng.randint(1, 3)):
                data[rng.randrange(len(data))] = rng.randrange(256)
            _replace_pickle(valid, target, bytes(data))
        else:
            data = bytearray(raw)
            for _ in range(rng.randint(1, 3)):
                data[rng.randrange(len(data))] = rng.randrange(256)
            target.write_bytes(bytes(data))
        try:
            load_torch(target)
            outcomes["read"] += 1
        except InputError as exc:
            assert str(exc).startswith(f"{target}: ") and "\n" not in str(exc)
            outcomes["refused"] += 1
    assert outcomes["refused"] > 50


def test_path_like_and_str(tmp_path: Path) -> None:
    path = _save({"x": torch.arange(3)}, tmp_path / "m.pt")
    assert read_state_dict(os.fspath(path))["x"].tolist() == read_state_dict(path)["x"].tolist() == [0, 1, 2]
