"""certsym.io.torchfile: torch.save archives read without torch, value for value equal to torch.load's, and
every file outside docs/FORMATS.md ("torch") refused with a one-line InputError that starts with the path."""

from __future__ import annotations

import io
import math
import os
import pickle
import pickletools
import random
import struct
import subprocess
import sys
import warnings
import zipfile
import zlib
from collections import OrderedDict
from pathlib import Path

import numpy as np
import pytest
import torch  # in the test extra: a missing install fails here, it is not skipped
from helpers import REPO, peak_bytes

from certsym.errors import InputError
from certsym.io.torchfile import load_torch, read_state_dict
from certsym_check.errors import Reject
from certsym_check.readers.files import Tensor
from certsym_check.readers.torchzip import read_torch, state_dict

ROOT = REPO


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
    _assert_same(read_state_dict(_craft(tmp_path / "craft3.pt", obj, {"0": _floats(1, 2, 3, 4, 5, 6)}, 3)), theirs)
    for protocol in (4, 5):  # FORMATS.md: protocol 2 (what torch.save writes) or 3 only
        _refused(_craft(tmp_path / f"craft{protocol}.pt", obj, {"0": _floats(1, 2, 3, 4, 5, 6)}, protocol),
                 f"protocol {protocol}")
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


def test_a_parameter_is_its_tensor(tmp_path: Path) -> None:
    """_rebuild_parameter(tensor, requires_grad, hooks) is the tensor (a quantized Linear's bias is saved so)."""
    path = _save({"w": torch.nn.Parameter(torch.arange(4.0).reshape(2, 2))}, tmp_path / "param.pt")
    assert np.array_equal(load_torch(path)["w"], np.arange(4.0, dtype=np.float32).reshape(2, 2))


def test_refuses_other_globals_and_values(tmp_path: Path) -> None:
    storage = _Storage(torch.FloatStorage, "0", 2)
    two = {"0": _floats(1, 2)}
    cases = {
        "untyped": ({"x": _Storage(torch.UntypedStorage, "0", 8)}, 2, "torch.storage.UntypedStorage"),
        "bool": ({"x": _Storage(torch.BoolStorage, "0", 2)}, 2, "torch.BoolStorage"),
        "class": ({"x": torch.FloatStorage}, 2, "the class torch.FloatStorage used as a value"),
        "bare": ({"x": storage}, 2, "a storage outside a tensor"),
        "bytes2": ({"x": b"ab"}, 2, "the global _codecs.encode"),
        "bytes3": ({"x": b"ab"}, 3, "BINBYTES (protocol 3)"),
        "set": ({"x": {1, 2}}, 2, "the global __builtin__.set"),
    }
    for label, (obj, protocol, fragment) in cases.items():
        _refused(_craft(tmp_path / f"{label}.pt", obj, two, protocol=protocol), "refused", fragment)
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
    # refused before the member is inflated: far less memory than its 4 MiB of zeros (a count, not a time)
    peak = peak_bytes(lambda: _refused(bomb, "the member 'deflated/data/0' holds 4294967280 bytes", "4194304 bytes"))
    assert peak < 1 << 20, peak


def test_huge_memo_index_is_cheap_and_trailing_bytes_are_refused(tmp_path: Path) -> None:
    valid = _save(_net_state(torch.float32), tmp_path / "m.pt")
    memo = b"\x80\x02Nr" + struct.pack("<I", 0x7FFFFFF0) + b"."  # the memo is a dict: no table of 2^31 entries
    crafted = _replace_pickle(valid, tmp_path / "memo.pt", memo)
    loaded = []
    peak = peak_bytes(lambda: loaded.append(load_torch(crafted)))
    assert loaded == [None] and peak < 1 << 20, peak  # as the checker reads it, in far less than 2^31 entries
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


def test_zero_dim_tensors_are_arrays(tmp_path: Path) -> None:
    sd = {"bf": torch.tensor(1.5, dtype=torch.bfloat16), "h": torch.tensor(2.5, dtype=torch.float16),
          "f": torch.tensor(-3.0)}
    ours = read_state_dict(_save(sd, tmp_path / "scalars.pt"))
    assert all(type(v) is np.ndarray and v.shape == () for v in ours.values())
    assert [float(v) for v in ours.values()] == [1.5, 2.5, -3.0]


# ---------------------------------------------------------------- FORMATS.md's stricter rules, one case each
#
# Each case is an archive (bytes) and the fragment of the producer's refusal; None means the file is read. The same
# cases go through the checker in the cross-check below.


def _u(text: str) -> bytes:
    """BINUNICODE ``text``."""
    data = text.encode()
    return b"X" + struct.pack("<I", len(data)) + data


def _zip(members: list[tuple], compression: int = zipfile.ZIP_STORED) -> bytes:
    """A zip of (name, data) or (name, data, compress_type) members, in that order."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression) as z, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name, data, *method in members:
            z.writestr(name, data, *method)
    return out.getvalue()


def _archive(pkl: bytes, storages: dict[str, bytes] | None = None, extra: tuple = (),
             compression: int = zipfile.ZIP_STORED) -> bytes:
    """A torch-style archive in the folder ``archive`` with the given data.pkl, storages and further members."""
    members = [("archive/data.pkl", pkl), ("archive/byteorder", b"little")]
    members += [(f"archive/data/{key}", data) for key, data in (storages or {}).items()]
    return _zip([*members, *extra, ("archive/version", b"3\n")], compression)


def _crafted(obj, storages: dict[str, bytes] | None = None, protocol: int = 2) -> bytes:
    return _archive(_pickle(obj, protocol), storages)


def _saved(obj, **kwargs) -> bytes:
    buffer = io.BytesIO()
    torch.save(obj, buffer, **kwargs)
    return buffer.getvalue()


def _rewritten(data: bytes, compression: int = zipfile.ZIP_STORED, **compress_types: int) -> bytes:
    """The archive re-zipped with ``compression``; members named in ``compress_types`` (inside the folder, with
    ``_`` for ``.`` and ``/``) get their own method."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as z, zipfile.ZipFile(out, "w", compression) as w:
        for info in z.infolist():
            rest = info.filename.split("/", 1)[1].replace(".", "_").replace("/", "_")
            w.writestr(info.filename, z.read(info), compress_type=compress_types.get(rest, compression))
    return out.getvalue()


_CENTRAL = {"flag_bits": (8, "<H"), "method": (10, "<H"), "crc": (16, "<I"), "compress_size": (20, "<I"),
            "file_size": (24, "<I")}


def _patch(data: bytes, member: str, local: dict | None = None, **fields: int) -> bytes:
    """The archive with fields of ``member``'s central-directory entry (and ``local``: {offset: bytes} in its local
    header) overwritten."""
    out = bytearray(data)
    at = out.find(b"PK\x01\x02")
    while at >= 0:
        length = struct.unpack_from("<H", out, at + 28)[0]
        if out[at + 46:at + 46 + length] == member.encode():
            for field, value in fields.items():
                offset, fmt = _CENTRAL[field]
                struct.pack_into(fmt, out, at + offset, value)
            for offset, value in (local or {}).items():
                start = struct.unpack_from("<I", out, at + 42)[0]
                out[start + offset:start + offset + len(value)] = value
            return bytes(out)
        at = out.find(b"PK\x01\x02", at + 4)
    raise AssertionError(member)


def _zip64(data: bytes, locator: int | None = None) -> bytes:
    """The archive with a zip64 end record and its locator inserted before the end record (which then says 0xFFFF);
    ``locator``: the offset the locator states (default: the zip64 record's own)."""
    end = len(data) - 22
    _, _, _, count, _, size, offset, _ = struct.unpack("<4sHHHHIIH", data[end:])
    record = struct.pack("<4sQ2H2I4Q", b"PK\x06\x06", 44, 45, 45, 0, 0, count, count, size, offset)
    return (data[:end] + record + struct.pack("<4sIQI", b"PK\x06\x07", 0, end if locator is None else locator, 1)
            + struct.pack("<4sHHHHIIH", b"PK\x05\x06", 0, 0, 0xFFFF, 0xFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0))


def _commented(data: bytes) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as z, zipfile.ZipFile(out, "w") as w:
        for info in z.infolist():
            w.writestr(info.filename, z.read(info))
        w.comment = b"a comment"
    return out.getvalue()


def _deflated_member(raw: bytes, stream: bytes) -> bytes:
    """An archive whose storage ``archive/data/0`` (6 floats, ``raw``) is the deflate ``stream``, exactly as given."""
    tensor = _Tensor(_Storage(torch.FloatStorage, "0", 6), 0, (6,), (1,), False, OrderedDict())
    data = _archive(_pickle({"w": tensor}), {"0": stream})
    return _patch(data, "archive/data/0", {8: struct.pack("<H", 8)}, method=8, file_size=len(raw), crc=zlib.crc32(raw))


def _deflate(raw: bytes) -> bytes:
    packer = zlib.compressobj(9, zlib.DEFLATED, -15)
    return packer.compress(raw) + packer.flush()


def _nest(depth: int, leaf=None) -> list:
    """``depth`` lists, one inside the other, around ``leaf`` (without one: the innermost list is empty)."""
    node = [] if leaf is None else leaf
    for _ in range(depth - (leaf is None)):
        node = [node]
    return node


class _WithState(OrderedDict):
    """An OrderedDict pickled with a BUILD state ``state`` (torch's is {'_metadata': ...})."""

    def __init__(self, state, **items):
        super().__init__(**items)
        self.state = state

    def __reduce__(self):
        return OrderedDict, (), self.state, None, iter(self.items())


def _loop() -> list:
    loop: list = []
    loop.append(loop)
    return loop


def _hooks_filled_later() -> bytes:
    """[({'w': tensor}, hooks)] where the tensor's backward_hooks OrderedDict, empty when the tensor is built, gets an
    item afterwards (through the memo)."""
    pkl = _pickle({"w": _Tensor(_Storage(torch.FloatStorage, "0", 2), 0, (2,), (1,), False, OrderedDict())})
    ops = list(pickletools.genops(pkl))
    at = next(i for i, (op, arg, _) in enumerate(ops) if arg == "collections OrderedDict")
    assert [op.name for op, _, _ in ops[at + 1:at + 5]] == ["BINPUT", "EMPTY_TUPLE", "REDUCE", "BINPUT"]
    index = ops[at + 4][1]
    return b"\x80\x02]" + pkl[2:-1] + b"h" + bytes([index]) + _u("hook") + b"K\x01s\x86a."


def _gather_case(count: int, extra: int = 0) -> bytes:
    """One float of storage expanded by stride 0 to ``count`` elements (and a second view of ``extra``)."""
    storage = _Storage(torch.FloatStorage, "0", 1)
    obj = {"a": _Tensor(storage, 0, (count,), (0,), False, OrderedDict())}
    if extra:
        obj["b"] = _Tensor(storage, 0, (extra,), (0,), False, OrderedDict())
    return _crafted(obj, {"0": _floats(1.5)})


_GATHER = (1 << 20) + 4 * 4  # elements one float32 of storage allows


def _inflation_case(total: bool) -> bytes:
    """Storage 1's directory claims a size that fits the inflation budget alone but not after storage 0 (8 MiB of
    zeros, deflated) and data.pkl (``total``), or that exceeds the budget by itself."""
    zeros = bytes(8 << 20)

    def build(claim: int) -> bytes:
        tensors = {"a": _Tensor(_Storage(torch.FloatStorage, "0", len(zeros) // 4), 0, (1,), (1,), False,
                                OrderedDict()),
                   "b": _Tensor(_Storage(torch.FloatStorage, "1", claim // 4), 0, (1,), (1,), False, OrderedDict())}
        return _zip([("archive/data.pkl", _pickle(tensors)), ("archive/data/0", zeros, zipfile.ZIP_DEFLATED),
                     ("archive/data/1", bytes(64))])

    budget = (1 << 28) + 64 * len(build(1 << 28))  # the pickle's length does not depend on the claim (BININT)
    claim = budget - (4 << 20) if total else budget + 4
    claim -= claim % 4
    data = build(claim)
    assert (1 << 28) + 64 * len(data) == budget
    return _patch(data, "archive/data/1", file_size=claim)


def _escaped_global() -> bytes:
    return _archive(b"\x80\x02ccollection\\x73\nOrderedDict\n)R.")


def _escaped_storage_global() -> bytes:
    """A tensor whose persistent id names ``torch.Float\\x53torage`` (pickletools reads FloatStorage)."""
    pkl = _pickle(_tensor6(0, (6,), (1,), False, _EMPTY_HOOKS))
    assert pkl.count(b"ctorch\nFloatStorage\n") == 1
    return _archive(pkl.replace(b"ctorch\nFloatStorage\n", b"ctorch\nFloat\\x53torage\n"), _SIX)


def _empty(size: tuple, cls=None) -> dict:
    """An empty tensor of ``size`` (C-order strides) on an empty storage of ``cls`` (FloatStorage)."""
    stride = tuple(math.prod(size[i + 1:]) for i in range(len(size)))
    return {"e": _Tensor(_Storage(cls or torch.FloatStorage, "e", 0), 0, size, stride, False, _EMPTY_HOOKS)}


_EMPTY_HOOKS = OrderedDict()
_SIX = {"0": _floats(1, 2, 3, 4, 5, 6)}


def _tensor6(*args) -> dict:
    return {"w": _Tensor(_Storage(torch.FloatStorage, "0", 6), *args)}


# label -> (builder of the archive's bytes, fragment of the producer's refusal or None for a file both read)
STRICT_CASES = {
    # protocol: PROTO 2 or 3, nothing of protocol 4 or 5
    "proto0": (lambda: _archive(b"\x80\x00}."), "protocol 0"),
    "proto1": (lambda: _archive(b"\x80\x01}."), "protocol 1"),
    "proto3": (lambda: _crafted(_tensor6(0, (6,), (1,), False, _EMPTY_HOOKS), _SIX, protocol=3), None),
    "proto4": (lambda: _archive(pickle.dumps({"a": 1}, 4)), "protocol 4"),
    "proto5": (lambda: _archive(pickle.dumps({"a": 1}, 5)), "protocol 5"),
    "frame": (lambda: _archive(b"\x80\x02\x95" + struct.pack("<Q", 2) + b"}."), "opcode FRAME"),
    "short_binunicode": (lambda: _archive(b"\x80\x02\x8c\x01a."), "opcode SHORT_BINUNICODE"),
    "torch_protocol4": (lambda: _saved({"x": torch.ones(2)}, pickle_protocol=4), "protocol 4"),
    "long4": (lambda: _archive(pickle.dumps({"a": 1 << 3000}, 2)), "opcode LONG4"),
    "pop": (lambda: _archive(b"\x80\x02K\x01K\x020."), "opcode POP"),
    # compression: stored or deflated, every member
    "bzip2": (lambda: _rewritten(_saved({"x": torch.ones(2)}), zipfile.ZIP_BZIP2), "method 12"),
    "lzma_bookkeeping": (lambda: _rewritten(_saved({"x": torch.ones(2)}), version=zipfile.ZIP_LZMA), "method 14"),
    "deflated": (lambda: _rewritten(_saved({"x": torch.arange(6.0)}), zipfile.ZIP_DEFLATED), None),
    # dict keys
    "key_float": (lambda: _crafted({1.5: 1}), "a dict key is float"),
    "key_tuple": (lambda: _crafted({(1,): 1}), "a dict key is tuple"),
    "key_big": (lambda: _crafted({(1 << 61) - 1: 1}), "the int 2305843009213693951"),
    "key_big_negative": (lambda: _crafted({1 - (1 << 61): 1}), "the int -2305843009213693951"),
    "key_edges": (lambda: _crafted({(1 << 61) - 2: 1, 2 - (1 << 61): 2, True: 3, None: 4, "": 5, 7: 6}), None),
    "key_twice": (lambda: _archive(b"\x80\x02}(" + _u("a") + b"K\x01" + _u("a") + b"K\x02u."), "'a' is set twice"),
    "key_1_true": (lambda: _archive(b"\x80\x02}(K\x01K\x01\x88K\x02u."), "the dict key True is set twice"),
    "key_0_false": (lambda: _archive(b"\x80\x02}K\x00K\x01s\x89K\x02s."), "the dict key False is set twice"),
    "key_twice_ordered": (lambda: _archive(b"\x80\x02ccollections\nOrderedDict\n)R(" + _u("w") + b"Nu(" + _u("w")
                                           + b"Nu."), "'w' is set twice"),
    "setitem_on_list": (lambda: _archive(b"\x80\x02]K\x05aK\x00K\x07s."), "sets items of list"),
    # nesting and cycles
    "depth_100": (lambda: _crafted({"x": _nest(99)}), None),
    "depth_101": (lambda: _crafted({"x": _nest(100)}), "more than 100 deep"),
    "depth_via_shared": (lambda: _crafted({"x": [(shared := _nest(60)), _nest(40, shared)]}), "more than 100 deep"),
    "shared_dag": (lambda: _crafted({"x": [(shared := _nest(60)), _nest(38, shared), shared]}), None),
    "cycle_dict": (lambda: _archive(b"\x80\x02}q\x00" + _u("me") + b"h\x00s."), "contains itself"),
    "cycle_in_state": (lambda: _crafted({"x": _WithState({"_metadata": _loop()}, a=1)}), "contains itself"),
    "depth_in_state": (lambda: _crafted(_WithState({"_metadata": _nest(101)}, w=1)), "more than 100 deep"),
    "state_other": (lambda: _crafted(_WithState({"_metadata": {}, "x": 1}, w=1)), "a state other than torch's"),
    # the end of the pickle
    "after_stop": (lambda: _archive(b"\x80\x02}.\x00"), "bytes after the end of its pickle"),
    "two_objects": (lambda: _archive(b"\x80\x02}K\x01."), "more than one object"),
    "open_mark": (lambda: _archive(b"\x80\x02(}."), "an unclosed MARK"),
    "append_past_mark": (lambda: _archive(b"\x80\x02](K\x01a."), "takes more from the pickle's stack"),
    # metadata
    "metadata_none": (lambda: _crafted(_tensor6(0, (6,), (1,), False, _EMPTY_HOOKS, None), _SIX), None),
    "metadata_empty": (lambda: _crafted(_tensor6(0, (6,), (1,), False, _EMPTY_HOOKS, {}), _SIX), None),
    "metadata_empty_ordered": (lambda: _crafted(_tensor6(0, (6,), (1,), False, _EMPTY_HOOKS, OrderedDict()), _SIX),
                               None),
    "metadata_neg": (lambda: _saved({"x": torch._neg_view(torch.arange(3.0))}), "metadata {'neg': True}"),
    "metadata_false": (lambda: _crafted(_tensor6(0, (6,), (1,), False, _EMPTY_HOOKS, False), _SIX), "metadata False"),
    "metadata_list": (lambda: _crafted(_tensor6(0, (6,), (1,), False, _EMPTY_HOOKS, []), _SIX), "metadata []"),
    # tensor arguments the checker refuses too
    "size_list": (lambda: _crafted(_tensor6(0, [6], [1], False, _EMPTY_HOOKS), _SIX), "in tuples"),
    "hooks_filled_later": (lambda: _archive(_hooks_filled_later(), {"0": _floats(1, 2)}), "backward hooks"),
    "ordered_dict_args": (lambda: _archive(b"\x80\x02ccollections\nOrderedDict\n]R."), "not a tuple"),
    "ordered_dict_pairs": (lambda: _archive(b"\x80\x02ccollections\nOrderedDict\n))\x86R."),
                           "calls OrderedDict with arguments"),
    # the gather bound: one float32 (4 bytes) of storage allows 2^20 + 16 elements in all
    "gather_at_bound": (lambda: _gather_case(_GATHER), None),
    "gather_over_bound": (lambda: _gather_case(_GATHER + 1), "gather more than 2^20 + 4 x"),
    "gather_over_in_all": (lambda: _gather_case(_GATHER // 2, _GATHER // 2 + 1), "gather more than 2^20 + 4 x"),
    # the inflation bound, against the zip directory before decompressing
    "inflation_one_member": (lambda: _inflation_case(total=False), "beyond the 2^28 + 64 x (file size)"),
    "inflation_in_all": (lambda: _inflation_case(total=True), "beyond the 2^28 + 64 x (file size)"),
    # empty tensors: any non-negative offset
    "empty_offset_torch": (lambda: _saved({"e": torch.zeros(0, 3)[:, 1:], "z": torch.zeros(0)}), None),
    "empty_offset_crafted": (lambda: _crafted({"e": _Tensor(_Storage(torch.FloatStorage, "e", 0), 7, (0, 3), (3, 1),
                                                             False, _EMPTY_HOOKS),
                                               **_tensor6(100, (2, 0), (10 ** 30, 1), False, _EMPTY_HOOKS)},
                                              {"e": b"", **_SIX}), None),
    "size_one_huge_stride": (lambda: _crafted(_tensor6(2, (1, 3, 1), (10 ** 30, 1, 5), False, _EMPTY_HOOKS), _SIX),
                             None),
    # dimensions: at most 64, non-zero sizes multiplying to less than 2^60 (the edges read)
    "rank_64": (lambda: _crafted(_tensor6(5, (1,) * 64, (1,) * 64, False, _EMPTY_HOOKS), _SIX), None),
    "empty_extent_edge": (lambda: _crafted(_empty((0, (1 << 60) - 1), torch.DoubleStorage), {"e": b""}), None),
    # PROTO: only the first opcode must be one; a later PROTO says 2 or 3 too
    "proto_3_then_2": (lambda: _archive(b"\x80\x03}\x80\x02."), None),
    "proto_later_4": (lambda: _archive(b"\x80\x02}\x80\x04."), "protocol 4"),
    # the zip directory and the members' bytes
    "encrypted_bookkeeping": (lambda: _patch(_saved({"x": torch.ones(2)}), "archive/version", flag_bits=1),
                              "is encrypted"),
    "backslash_name": (lambda: _archive(b"\x80\x02}.", extra=[("archive/data/9\\x", b"")]), "not part of"),
    "nul_name": (lambda: _archive(b"\x80\x02}.", extra=[("archive/data/9Zx", b"")]).replace(b"/9Zx", b"/9\x00x"),
                 "not part of"),
    "overlap": (lambda: _patch(_archive(b"\x80\x02}."), "archive/byteorder", compress_size=40), "overlap"),
    "local_name": (lambda: _patch(_archive(b"\x80\x02}."), "archive/version", {30: b"A"}), "local header"),
    "local_method": (lambda: _patch(_archive(b"\x80\x02}."), "archive/version", {8: b"\x08"}), "local header"),
    "stored_two_sizes": (lambda: _patch(_crafted(_tensor6(0, (6,), (1,), False, _EMPTY_HOOKS), _SIX),
                                        "archive/data/0", compress_size=20), "two sizes"),
    "deflate_exact": (lambda: _deflated_member(_floats(*range(6)), _deflate(_floats(*range(6)))), None),
    "deflate_then_junk": (lambda: _deflated_member(_floats(*range(6)), _deflate(_floats(*range(6))) + b"junk"),
                          "does not inflate to exactly"),
    "deflate_short": (lambda: _deflated_member(_floats(*range(6)), _deflate(_floats(*range(5)))),
                      "does not inflate to exactly"),
    "deflate_crc": (lambda: _deflated_member(_floats(*range(6)), _deflate(_floats(*range(5), 9))),
                    "fails its CRC check"),
    # where the directory is, and member names, as torch's reader (miniz) and zipfile both see them
    "zip64_end": (lambda: _zip64(_crafted(_tensor6(0, (6,), (1,), False, _EMPTY_HOOKS), _SIX)), None),
    "zip64_locator_elsewhere": (lambda: _zip64(_archive(b"\x80\x02}."), locator=0), "zip64 locator"),
    "concatenated": (lambda: _archive(b"\x80\x02}.") + _archive(b"\x80\x02}."),
                     "not at the offset the end record states"),
    "concatenated_torch": (lambda: _archive(b"\x80\x02}.") + _saved({"x": torch.ones(2)}), "zip64 locator"),
    "trailing_byte": (lambda: _saved({"x": torch.ones(2)}) + b"\x00", "last 22 bytes"),
    "archive_comment": (lambda: _commented(_saved({"x": torch.ones(2)})), "last 22 bytes"),
    "case_twins": (lambda: _archive(b"\x80\x02}.", extra=[("archive/VERSION", b"3\n")]), "differ only in case"),
    "utf8_flag_name": (lambda: _archive(b"\x80\x02}.", extra=[("archive/data/\u00e9", b"")]), None),
    "cp437_name": (lambda: _patch(_archive(b"\x80\x02}.", extra=[("archive/data/\u00e9", b"")]),
                                  "archive/data/\u00e9", flag_bits=0), "is not UTF-8 that zipfile decodes"),
    "invalid_utf8_name": (lambda: _archive(b"\x80\x02}.", extra=[("archive/data/9Zx", b"")]).replace(
        b"/9Zx", b"/9\xffx"), "is not UTF-8 that zipfile decodes"),
}

# Files the checker used to read while FORMATS.md and the producer refuse them (see test_checker_gaps): now both
# readers refuse each. The dangerous direction, a file the producer reads and the checker refuses, never had a case.
CHECKER_GAPS = {
    "proto4_no_frame": (lambda: _archive(b"\x80\x04}."), "protocol 4"),
    "proto5_no_frame": (lambda: _archive(b"\x80\x05}."), "protocol 5"),
    "no_proto": (lambda: _archive(b"}."), "does not start with PROTO"),
    "no_proto_later_proto": (lambda: _archive(b"}\x80\x02."), "does not start with PROTO"),
    # GLOBAL's lines are looked up as they are (pickletools un-escapes them): none of these is an admitted global
    "escaped_global": (_escaped_global, "the global collection\\x73.OrderedDict"),
    "escaped_global_octal": (lambda: _archive(b"\x80\x02ccoll\\145ctions\nOrderedDict\n)R."), "coll\\145ctions"),
    "escaped_global_name": (lambda: _archive(b"\x80\x02ccollections\nOrdered\\x44ict\n)R."), "Ordered\\x44ict"),
    "escaped_rebuild": (lambda: _archive(_pickle(_tensor6(0, (6,), (1,), False, _EMPTY_HOOKS)).replace(
        b"ctorch._utils\n", b"ctorch\\x2e_utils\n"), _SIX), "torch\\x2e_utils"),
    "escaped_storage": (_escaped_storage_global, "Float\\x53torage"),
    "global_space": (lambda: _archive(b"\x80\x02ccollections OrderedDict\n\n)R."), "the global collections"),
    "global_cr": (lambda: _archive(b"\x80\x02ccollections\r\nOrderedDict\n)R."), "the global collections\\r"),
    # dimensions: more than 64, or non-zero sizes multiplying to 2^60 or more (an empty tensor included)
    "rank_65": (lambda: _crafted(_tensor6(0, (1,) * 65, (1,) * 65, False, _EMPTY_HOOKS), _SIX), "65 dimensions"),
    "empty_huge": (lambda: _crafted(_tensor6(0, (0, 1 << 62), (1, 1), False, _EMPTY_HOOKS), _SIX), "2^60 or more"),
    "empty_huge_bytes": (lambda: _crafted(_empty((0, 1 << 62), torch.ByteStorage), {"e": b""}), "2^60 or more"),
    "empty_extent": (lambda: _crafted(_empty((0, 1 << 60), torch.ByteStorage), {"e": b""}), "2^60 or more"),
    "empty_product": (lambda: _crafted(_empty((0, 1 << 40, 1 << 40), torch.ByteStorage), {"e": b""}), "2^60 or more"),
}


@pytest.mark.parametrize("label", list(STRICT_CASES) + list(CHECKER_GAPS))
def test_strict_rules(tmp_path: Path, label: str) -> None:
    build, fragment = {**STRICT_CASES, **CHECKER_GAPS}[label]
    path = tmp_path / f"{label}.pt"
    path.write_bytes(build())
    def read() -> None:
        if fragment is None:
            assert isinstance(load_torch(path), dict)
        else:
            _refused(path, fragment)

    # decided without the work a hostile file asks for: a bounded memory peak (a count, the same on any machine)
    peak = peak_bytes(read)
    assert peak < 64 << 20, peak  # the inflation cases inflate their 8 MiB member, never the 256 MiB claimed


def test_values_at_the_edges(tmp_path: Path) -> None:
    def read(label: str):
        path = tmp_path / f"{label}.pt"
        path.write_bytes(STRICT_CASES[label][0]())
        return load_torch(path)

    assert list(read("key_edges")) == [(1 << 61) - 2, 2 - (1 << 61), True, None, "", 7]
    assert read("gather_at_bound")["a"].shape == (_GATHER,) and set(read("gather_at_bound")["a"].tolist()) == {1.5}
    empty = read("empty_offset_crafted")
    assert empty["e"].shape == (0, 3) and empty["w"].shape == (2, 0)
    assert read("size_one_huge_stride")["w"].tolist() == [[[3.0], [4.0], [5.0]]]
    assert read("deflate_exact")["w"].tolist() == [0, 1, 2, 3, 4, 5]
    assert read("empty_offset_torch")["e"].shape == (0, 2)
    assert read("rank_64")["w"].shape == (1,) * 64 and read("rank_64")["w"].ravel().tolist() == [6.0]
    assert read("empty_extent_edge")["e"].shape == (0, (1 << 60) - 1)
    assert read("proto_3_then_2") == {}


def test_only_the_admitted_opcodes_are_dispatched() -> None:
    from certsym.io import torchfile

    names = {op.code.encode("latin-1")[0]: op.name for op in pickletools.opcodes}
    assert {names[code] for code in torchfile._Unpickler.dispatch} == torchfile._OPCODES
    assert "FRAME" not in torchfile._OPCODES and "LONG4" not in torchfile._OPCODES


# ---------------------------------------------------------------- the producer against the checker


def _agree(ours: object, theirs: object, where: str = "") -> None:
    """Our tree (numpy leaves) equals the checker's (Tensor leaves): types, key order and every value exactly."""
    if isinstance(theirs, Tensor):
        assert isinstance(ours, np.ndarray) and ours.shape == tuple(theirs.shape), where
        assert ours.dtype == _DTYPES[theirs.code], where
        for a, b in zip(ours.ravel().tolist(), theirs.flat(), strict=True):
            _same_number(a, b, where)
        return
    assert type(ours) is type(theirs), (where, type(ours), type(theirs))
    if type(theirs) is dict:
        assert [(type(k), k) for k in ours] == [(type(k), k) for k in theirs], where
        for key in theirs:
            _agree(ours[key], theirs[key], f"{where}/{key!r}")
    elif type(theirs) in (list, tuple):
        assert len(ours) == len(theirs), where
        for i, (a, b) in enumerate(zip(ours, theirs, strict=True)):
            _agree(a, b, f"{where}[{i}]")
    else:
        _same_number(ours, theirs, where)


_DTYPES = {"f2": np.float16, "bf16": np.float32, "f4": np.float32, "f8": np.float64, "i1": np.int8, "i2": np.int16,
           "i4": np.int32, "i8": np.int64, "u1": np.uint8}


def _same_number(a: object, b: object, where: str) -> None:
    assert type(a) is type(b), (where, a, b)
    if type(a) is float:
        assert (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b)), where
    else:
        assert a == b, (where, a, b)


def _verdicts(path: Path, data: bytes) -> tuple[str | None, str | None, object, object]:
    """(the producer's refusal or None, the checker's or None, and the two trees)."""
    ours = theirs = ours_error = their_error = None
    try:
        ours = load_torch(path)
    except InputError as exc:
        ours_error = str(exc)
        assert ours_error.startswith(f"{path}: ") and "\n" not in ours_error, ours_error
    try:
        theirs = read_torch(data)
    except Reject as exc:
        their_error = str(exc)
    return ours_error, their_error, ours, theirs



def _tally(trial: int, path, data: bytes, outcomes: dict) -> None:
    """Both readers on one mutant: they must refuse together, and agree on what they read."""
    path.write_bytes(data)
    ours_error, their_error, ours, theirs = _verdicts(path, data)
    assert (ours_error is None) == (their_error is None), (trial, ours_error, their_error)
    if ours_error is None:
        _agree(ours, theirs)
        outcomes["read"] += 1
    else:
        outcomes["refused"] += 1

def _cross_check(path: Path, data: bytes) -> bool:
    """The producer refuses exactly when the checker does (for the tree and for the state dict) and, when both read
    the file, the trees agree exactly. True when the file is read."""
    path.write_bytes(data)
    ours_error, their_error, ours, theirs = _verdicts(path, data)
    assert (ours_error is None) == (their_error is None), (path.name, ours_error, their_error)
    if ours_error is None:
        _agree(ours, theirs)
        try:
            read_state_dict(path)
            ours_sd = True
        except InputError:
            ours_sd = False
        try:
            state_dict(data)
            their_sd = True
        except Reject:
            their_sd = False
        assert ours_sd == their_sd, path.name
    return ours_error is None


def _reference_archives() -> dict[str, bytes]:
    """Valid archives made by torch and by hand, and refusals of the tests above the stricter rules."""
    base = torch.arange(24, dtype=torch.float32).reshape(4, 6) / 7
    values = torch.tensor([0.0, -0.0, 1e-45, -3.4e38, float("nan"), float("inf"), 1 / 3], dtype=torch.float64)
    out = {f"state_{dtype}": _saved(_net_state(dtype)) for dtype in (torch.float32, torch.float16, torch.bfloat16,
                                                                      torch.float64, torch.int64, torch.int32,
                                                                      torch.int16, torch.int8, torch.uint8)}
    out.update({
        "views": _saved({"t": base.t(), "slice": base[1:, 2:5], "row": base[2], "scalar": base[3, 4], "base": base,
                         "expanded": base[0, :3].expand(2, 3), "empty": base[:0], "step": base[:, ::2]}),
        "specials": _saved({str(dtype): values.to(dtype) for dtype in (torch.float16, torch.bfloat16, torch.float32,
                                                                      torch.float64)}),
        "scalars": _saved({"bf": torch.tensor(1.5, dtype=torch.bfloat16), "h": torch.tensor(2.5, dtype=torch.float16)}),
        "checkpoint": _saved({"model": _net_state(torch.float32), "epoch": 3, "lr": 0.1, "meta": [None, True, 1.5,
                                                                                                 ("a", -7)],
                              "neg": -2 ** 70, "opt": {"state": {0: {"step": torch.tensor(1.0)}},
                                                       "param_groups": [{"params": [0, 1], "betas": (0.9, 0.99)}]}}),
        "list": _saved([torch.ones(2)]),
        "int_key": _saved({1: torch.ones(2)}),
        "parameter": _saved({"w": torch.nn.Parameter(torch.ones(2, 2))}),
        "legacy": _saved({"x": torch.ones(2)}, _use_new_zipfile_serialization=False),
        "bool_storage": _saved({"x": torch.ones(2, dtype=torch.bool)}),
        "foreign_global": _archive(b"\x80\x02cos\nsystem\n" + _u("true") + b"\x85R."),
        "memo_index": _archive(b"\x80\x02Nr" + struct.pack("<I", 0x7FFFFFF0) + b"."),
        "memo_unwritten": _archive(b"\x80\x02h\x05."),
        "list_loop": _archive(b"\x80\x02]q\x00h\x00a."),
        "bare_pickle": pickle.dumps({"a": 1}, 2),
        "empty_file": b"",
    })
    state = _saved(_net_state(torch.float32))
    with zipfile.ZipFile(io.BytesIO(state)) as z:
        members = [(info.filename, z.read(info)) for info in z.infolist()]
    folder = members[0][0].split("/")[0]
    swapped = [(name, b"big" if name.endswith("/byteorder") else
                np.frombuffer(data, "<f4").astype(">f4").tobytes() if "/data/" in name else data)
               for name, data in members]
    out["big_endian"] = _zip(swapped)
    out["no_byteorder"] = _zip([m for m in members if not m[0].endswith("/byteorder")])
    out["extra_member"] = _zip([*members, (f"{folder}/notes.txt", b"hi")])
    out["two_folders"] = _zip([*members, ("other/version", b"3\n")])
    out["unreferenced_storage"] = _zip([*members, (f"{folder}/data/99", b"\x00" * 12)])
    out["storage_too_long"] = _zip([(n, d + bytes(4) if n.endswith("/data/0") else d) for n, d in members])
    out["byteorder_middle"] = _zip([(n, b"middle" if n.endswith("/byteorder") else d) for n, d in members])
    out["truncated"] = state[:len(state) // 2]
    out["claimed_size"] = _patch(state, f"{folder}/data/0", file_size=0xFFFFFFF0)
    return out


def test_producer_and_checker_agree(tmp_path: Path) -> None:
    cases = {label: build() for label, (build, _) in {**STRICT_CASES, **CHECKER_GAPS}.items()}
    cases.update(_reference_archives())
    read = {label: _cross_check(tmp_path / f"{label}.pt", data) for label, data in cases.items()}
    expected = {label for label, (_, fragment) in STRICT_CASES.items() if fragment is None}
    assert {label for label in STRICT_CASES if read[label]} == expected
    assert sum(read.values()) >= 30 and len(read) - sum(read.values()) >= 60


def test_checker_gaps(tmp_path: Path) -> None:
    """Files the checker once read and FORMATS.md (and the producer) refuse; both readers refuse them now: a PROTO 4
    or 5 header without FRAME, a pickle that does not start with PROTO, a GLOBAL whose lines name an admitted global
    only once un-escaped (pickletools decodes ``collection\\x73`` as ``collections``; Python's unpickler and
    torch's look up the lines as they are), a tensor of more than 64 dimensions, and one, empty or not, whose
    non-zero sizes multiply to 2^60 or more ((0, 2^62) in any type; (0, 2^40, 2^40), which numpy cannot hold)."""
    for label, (build, fragment) in CHECKER_GAPS.items():
        path = tmp_path / f"{label}.pt"
        data = build()
        path.write_bytes(data)
        ours_error, their_error, _, _ = _verdicts(path, data)
        assert ours_error is not None and fragment in ours_error, (label, ours_error)
        assert their_error is not None, label


def test_producer_and_checker_agree_on_damaged_files(tmp_path: Path) -> None:
    """Random damage to data.pkl (re-zipped) and to the raw archive: the producer reads a file exactly when the
    checker does, and then the two trees agree."""
    sd = _net_state(torch.float16)
    state = _saved({"model": sd, "epoch": 3, "names": ["a", "b"], "pair": (1.5, None), 7: True})
    with zipfile.ZipFile(io.BytesIO(state)) as z:
        members = [(info.filename, z.read(info)) for info in z.infolist()]
    pkl = next(data for name, data in members if name.endswith("/data.pkl"))
    rng = random.Random(20250101)
    path = tmp_path / "fuzz.pt"
    outcomes = {"read": 0, "refused": 0}
    for trial in range(500):
        if trial % 2:
            mutated = bytearray(pkl)
            for _ in range(rng.randint(1, 3)):
                mutated[rng.randrange(len(mutated))] = rng.randrange(256)
            data = _zip([(name, bytes(mutated) if name.endswith("/data.pkl") else body) for name, body in members])
        else:
            mutated = bytearray(state)
            for _ in range(rng.randint(1, 2)):
                mutated[rng.randrange(len(mutated))] ^= 1 << rng.randrange(8)
            data = bytes(mutated)
        _tally(trial, path, data, outcomes)
    assert outcomes["read"] > 20 and outcomes["refused"] > 100, outcomes


# Arguments and opcodes a mutation puts into a torch-saved pickle: GLOBAL lines, escaped or not, PROTO values, ints at
# the format's edges (sizes, strides, offsets, numels, keys) and short strings.
_MUTANT_GLOBALS = [b"collections\nOrderedDict", b"torch._utils\n_rebuild_tensor_v2", b"torch\nFloatStorage",
                   b"torch\nHalfStorage", b"torch\nLongStorage", b"torch\nBoolStorage", b"collection\\x73\nOrderedDict",
                   b"collections\nOrdered\\x44ict", b"torch\\x2e_utils\n_rebuild_tensor_v2", b"torch\nFloat\\x53torage",
                   b"collections \nOrderedDict", b"collections OrderedDict\n", b"torch\nFloatStorage\\", b"\\x\ny"]
_MUTANT_INTS = [0, 1, 2, 6, 64, 65, 255, 256, 2 ** 31 - 1, -1, (1 << 60) - 1, 1 << 60, (1 << 61) - 2, (1 << 61) - 1,
                1 << 62, 1 << 64, 10 ** 30]


def _mutant_op(rng: random.Random, kind: int | None = None) -> bytes:
    """An opcode with its argument: ``kind`` 0 GLOBAL, 1 PROTO, 2 an int, 3 a string, 4 one without an argument
    (or one outside protocol 2), 5 a memo access; None: any."""
    kind = rng.randrange(6) if kind is None else kind
    if kind == 0:
        return b"c" + rng.choice(_MUTANT_GLOBALS) + b"\n"
    if kind == 1:
        return b"\x80" + bytes([rng.choice([0, 1, 2, 3, 4, 5])])
    if kind == 2:
        value = rng.choice(_MUTANT_INTS)
        body = pickle.encode_long(value)
        return rng.choice([b"\x8a" + bytes([len(body)]) + body] + ([b"K" + bytes([value])] if 0 <= value < 256 else []))
    if kind == 3:
        return _u(rng.choice(["", "0", "1", "storage", "cpu", "_metadata", "../0"]))
    if kind == 4:
        return rng.choice([b"(", b"t", b"\x85", b"\x86", b")", b"]", b"}", b"N", b"\x88", b"\x89", b"R", b"b", b"Q",
                           b"a", b"e", b"s", b"u", b".", b"0", b"\x8c\x01a"])
    return rng.choice([b"h", b"q"]) + bytes([rng.randrange(8)])


_KINDS = {b"c": 0, b"\x80": 1, b"K": 2, b"M": 2, b"J": 2, b"\x8a": 2, b"X": 3}


def test_producer_and_checker_agree_on_mutated_opcodes(tmp_path: Path) -> None:
    """Opcodes of torch-saved pickles replaced, inserted, dropped or repeated (GLOBAL lines escaped or not, PROTO 0 to
    5, sizes, strides and offsets at the format's edges): the producer reads a file exactly when the checker does,
    and then the two trees agree."""
    base = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    sources = [_saved({"w": base, "t": base.t(), "e": base[:0], "s": base[1, 2], "h": torch.ones(2, dtype=torch.half)}),
               _saved({"model": _net_state(torch.float32), "step": 3, "names": ["a"], 5: (1.5, None)}),
               _crafted({**_tensor6(1, (2, 2), (3, 1), False, _EMPTY_HOOKS), **_empty((0, 3))}, {**_SIX, "e": b""})]
    rng = random.Random(20260101)
    path = tmp_path / "mutant.pt"
    outcomes = {"read": 0, "refused": 0}
    for trial in range(500):
        data = rng.choice(sources)
        with zipfile.ZipFile(io.BytesIO(data)) as z:
            members = [(info.filename, z.read(info)) for info in z.infolist()]
        pkl = next(body for name, body in members if name.endswith("/data.pkl"))
        ops = list(pickletools.genops(pkl))
        chunks = [pkl[pos:(ops[i + 1][2] if i + 1 < len(ops) else len(pkl))] for i, (_, _, pos) in enumerate(ops)]
        for _ in range(rng.choice([1, 1, 1, 2])):
            at, action = rng.randrange(len(chunks)), rng.randrange(5)
            if action == 4:  # an argument of the same kind: another global, protocol, int or string
                at = rng.choice([i for i, chunk in enumerate(chunks) if chunk[:1] in _KINDS])
                chunks[at] = _mutant_op(rng, _KINDS[chunks[at][:1]])
            elif action == 0:
                chunks[at] = _mutant_op(rng)
            elif action == 1:
                chunks.insert(at, _mutant_op(rng))
            elif action == 2 and len(chunks) > 1:
                del chunks[at]
            else:
                chunks[at:at] = chunks[at:at + rng.randint(1, 4)]
        mutated = b"".join(chunks)
        data = _zip([(name, mutated if name.endswith("/data.pkl") else body) for name, body in members])
        _tally(trial, path, data, outcomes)
    assert outcomes["read"] > 40 and outcomes["refused"] > 200, outcomes
