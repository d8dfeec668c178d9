"""The checker's torch.save reader (certsym_check.readers.torchzip) against torch itself, and its refusals."""

from __future__ import annotations

import io
import math
import pickle
import random
import struct
import zipfile
import zlib
from collections import OrderedDict
from fractions import Fraction

import pytest
import torch  # in the test extra: a missing install fails here, it is not skipped
from helpers import peak_bytes

from certsym_check.errors import Reject
from certsym_check.readers.files import Tensor
from certsym_check.readers.torchzip import read_torch, state_dict

DTYPES = [torch.float32, torch.float16, torch.bfloat16, torch.float64, torch.int64, torch.int32, torch.int16,
          torch.int8, torch.uint8]
ITEMSIZE = {torch.float32: 4, torch.float16: 2, torch.bfloat16: 2, torch.float64: 8, torch.int64: 8}


def _save(obj: object, **kwargs) -> bytes:
    buffer = io.BytesIO()
    torch.save(obj, buffer, **kwargs)
    return buffer.getvalue()


def _load(data: bytes) -> object:
    return torch.load(io.BytesIO(data), weights_only=True)


def _exact(values) -> list[Fraction]:
    return [Fraction(x) for x in values]


def _torch_exact(t) -> list[Fraction]:
    flat = t.detach().flatten()
    return _exact(flat.tolist() if not flat.is_floating_point() else flat.double().tolist())


def _same(ours: Tensor, theirs) -> bool:
    return ours.shape == tuple(theirs.shape) and _exact(ours.flat()) == _torch_exact(theirs)


def _state(dtype, seed: int = 0, sizes: tuple = (5, 4, 3)) -> dict:
    m, n, k = sizes
    gen = torch.Generator().manual_seed(seed)
    model = torch.nn.Sequential(torch.nn.Linear(m, n), torch.nn.ReLU(), torch.nn.Linear(n, k))
    sd = model.state_dict()
    if dtype.is_floating_point:
        return {name: (torch.randn(t.shape, generator=gen) * 3).to(dtype) for name, t in sd.items()}
    info = torch.iinfo(dtype)
    out = {name: torch.randint(info.min, info.max, t.shape, generator=gen, dtype=dtype) for name, t in sd.items()}
    out["0.bias"][0], out["0.bias"][1] = info.min, info.max
    return out


def _rewrite(data: bytes, replace: dict | None = None, add: dict | None = None, outside: dict | None = None,
             compression: int = zipfile.ZIP_STORED) -> bytes:
    """The archive with members (by name relative to the top folder) replaced (None drops them) or added, and
    members ``outside`` added under their full names."""
    replace, add = replace or {}, add or {}
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as z, zipfile.ZipFile(out, "w", compression=compression) as w:
        for info in z.infolist():
            folder, rest = info.filename.split("/", 1)
            body = replace.get(rest, z.read(info.filename))
            if body is not None:
                w.writestr(info.filename, body)
        for rest, body in add.items():
            w.writestr(f"{folder}/{rest}", body)
        for name, body in (outside or {}).items():
            w.writestr(name, body)
    return out.getvalue()


def _members(data: bytes) -> dict[str, bytes]:
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        return {info.filename.split("/", 1)[1]: z.read(info.filename) for info in z.infolist()}


class _Storage:
    """A storage reference for the crafted pickles: its persistent id is torch's."""

    def __init__(self, cls, key: str, numel: int):
        self.cls, self.key, self.numel = cls, key, numel


class _FakeTensor:
    """Pickles as torch._utils._rebuild_tensor_v2(storage, offset, size, stride, False, hooks[, metadata])."""

    def __init__(self, storage: _Storage, offset: int, size: tuple, stride: tuple, hooks=None, extra: tuple = ()):
        self.args = (storage, offset, size, stride, False, OrderedDict() if hooks is None else hooks, *extra)

    def __reduce__(self):
        return torch._utils._rebuild_tensor_v2, self.args


class _Pickler(pickle.Pickler):
    def persistent_id(self, obj):
        if isinstance(obj, _Storage):
            return "storage", obj.cls, obj.key, "cpu", obj.numel
        return None


def _crafted(obj: object, storages: dict[str, bytes] | None = None, extra: dict | None = None) -> bytes:
    """A torch-style archive whose data.pkl pickles ``obj`` (protocol 2) with the given storage members."""
    pkl = io.BytesIO()
    _Pickler(pkl, protocol=2).dump(obj)
    return _archive(pkl.getvalue(), storages, extra)


def _archive(pkl: bytes, storages: dict[str, bytes] | None = None, extra: dict | None = None) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as w:
        w.writestr("archive/data.pkl", pkl)
        w.writestr("archive/byteorder", "little")
        for key, body in (storages or {}).items():
            w.writestr(f"archive/data/{key}", body)
        for name, body in (extra or {}).items():
            w.writestr(name, body)
        w.writestr("archive/version", "3\n")
    return out.getvalue()


def _floats(*values: float) -> bytes:
    return struct.pack(f"<{len(values)}f", *values)


def _patch_central(data: bytes, name: str, **fields: int) -> bytes:
    """The archive with fields (crc, file_size, compress_size) of one central-directory entry overwritten."""
    offsets = {"crc": 16, "compress_size": 20, "file_size": 24}
    out = bytearray(data)
    eocd = data.rindex(b"PK\x05\x06")
    at = struct.unpack("<I", data[eocd + 16:eocd + 20])[0]
    while True:
        name_len = struct.unpack("<H", data[at + 28:at + 30])[0]
        if data[at + 46:at + 46 + name_len].decode() == name:
            break
        at = data.index(b"PK\x01\x02", at + 4)
    for field, value in fields.items():
        out[at + offsets[field]:at + offsets[field] + 4] = struct.pack("<I", value)
    return bytes(out)


# ---------------------------------------------------------------------------------------------- agreement


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_state_dicts_equal_torch_load_exactly(dtype):
    sd = _state(dtype)
    data = _save(sd)
    ours, theirs = state_dict(data), _load(data)
    assert list(ours) == list(theirs) == ["0.weight", "0.bias", "2.weight", "2.bias"]
    for name, t in theirs.items():
        assert _same(ours[name], t), name
    assert ours["0.weight"].code == {torch.float32: "f4", torch.float16: "f2", torch.bfloat16: "bf16",
                                     torch.float64: "f8", torch.int64: "i8", torch.int32: "i4", torch.int16: "i2",
                                     torch.int8: "i1", torch.uint8: "u1"}[dtype]


def test_special_float_values_are_kept_bit_for_bit():
    values = [0.0, -0.0, 1e-45, -3.4e38, 2.0 ** -24, 65504.0, float("inf"), 1.0 / 3.0]
    for dtype in (torch.float16, torch.bfloat16, torch.float32, torch.float64):
        t = torch.tensor(values, dtype=torch.float64).to(dtype)
        ours = read_torch(_save({"t": t}))["t"]
        theirs = t.double().tolist()
        assert [struct.pack("<d", x) for x in ours.flat()] == [struct.pack("<d", x) for x in theirs], dtype


def test_non_contiguous_views_and_shared_storages():
    gen = torch.Generator().manual_seed(1)
    w = torch.randn(6, 5, generator=gen)
    cube = torch.randn(3, 4, 5, generator=gen)
    views = {"w": w, "t": w.t(), "slice": w[2:, 1:4], "step": w[::2, ::3], "row": w[4], "col": w[:, 3],
             "cube": cube.permute(2, 0, 1), "cube_slice": cube[1:, ::2, 3:], "expanded": w[0].expand(3, 5),
             "scalar": w[1, 1], "empty": w[:0], "empty_offset": torch.zeros(0, 3)[:, 1:]}
    data = _save(views)
    assert len([m for m in _members(data) if m.startswith("data/")]) == 3  # views share storages
    ours, theirs = read_torch(data), _load(data)
    for name, t in theirs.items():
        assert _same(ours[name], t), name


def test_a_4096_by_784_float32_tensor_reads_exactly():
    """A large tensor and its transposed view, read value for value (the speed is measured in benchmarks/)."""
    w = torch.randn(4096, 784, generator=torch.Generator().manual_seed(2))
    data = _save({"w": w, "t": w.t()})
    ours = read_torch(data)
    assert list(ours["w"].values) == w.flatten().tolist()
    assert list(ours["t"].values) == w.t().flatten().tolist()


def test_a_nested_checkpoint_is_read_and_is_not_a_state_dict():
    sd = _state(torch.float32)
    data = _save({"model": sd, "epoch": 3, "lr": 0.1, "names": ["a"], "x": None, "pair": (1, True), "neg": -2 ** 70})
    ours = read_torch(data)
    assert list(ours) == ["model", "epoch", "lr", "names", "x", "pair", "neg"]
    assert (ours["epoch"], ours["lr"], ours["names"], ours["x"], ours["pair"], ours["neg"]) == \
        (3, 0.1, ["a"], None, (1, True), -2 ** 70)
    assert type(ours["model"]) is dict and list(ours["model"]) == list(sd)
    for name, t in sd.items():
        assert _same(ours["model"][name], t)
    with pytest.raises(Reject, match="not a state dict"):
        state_dict(data)


def test_an_optimizer_state_with_int_keys_is_read():
    moments = torch.randn(2, 3, generator=torch.Generator().manual_seed(4))
    opt = {"state": {0: {"step": torch.tensor(1.0), "exp_avg": moments, "exp_avg_sq": moments * moments}},
           "param_groups": [{"lr": 1e-3, "betas": (0.9, 0.999), "params": [0, 1], "amsgrad": False}]}
    data = _save({"opt": opt})
    ours, theirs = read_torch(data)["opt"], _load(data)["opt"]
    assert list(ours["state"]) == [0]
    for name in ("step", "exp_avg", "exp_avg_sq"):
        assert _same(ours["state"][0][name], theirs["state"][0][name])
    assert ours["param_groups"] == theirs["param_groups"]


@pytest.mark.parametrize("dtype", list(ITEMSIZE), ids=str)
def test_big_endian_archives(dtype):
    sd = _state(dtype, seed=3)
    data = _save(sd)
    size = ITEMSIZE[dtype]
    swapped = {name: b"".join(body[i:i + size][::-1] for i in range(0, len(body), size))
               for name, body in _members(data).items() if name.startswith("data/")}
    big = _rewrite(data, {"byteorder": b"big", **swapped})
    ours = state_dict(big)
    for name, t in sd.items():
        assert _same(ours[name], t), name
        assert _same(ours[name], _load(big)[name]), name


def test_absent_byteorder_means_little_and_unreferenced_storages_are_ignored():
    data = _save(_state(torch.float32))
    ours = state_dict(_rewrite(data, {"byteorder": None}, {"data/99": b"\x00" * 12}))
    assert _same(ours["2.bias"], _load(data)["2.bias"])


def test_crafted_archives_the_reader_accepts():
    s = _Storage(torch.FloatStorage, "0", 6)
    body = _floats(1, 2, 3, 4, 5, 6)
    ours = read_torch(_crafted({"a": _FakeTensor(s, 1, (2, 2), (3, 1)), "b": _FakeTensor(s, 0, (3,), (2,), extra=({},)),
                                "c": _FakeTensor(s, 5, (), (), extra=(None,))}, {"0": body}))
    assert (list(ours["a"].values), list(ours["b"].values), list(ours["c"].values)) == ([2, 3, 5, 6], [1, 3, 5], [6])


def test_shared_references_are_checked_in_linear_time():
    node: list = []
    for _ in range(60):  # 2^60 paths, 60 containers
        node = [node, node]
    assert read_torch(_crafted({"x": node}))["x"][0][1] is not None


# ---------------------------------------------------------------------------------------------- refusals


def _refused(data: bytes, match: str | None = None) -> None:
    with pytest.raises(Reject, match=match):
        read_torch(data)


@pytest.mark.parametrize("pkl", [b"\x80\x02cos\nsystem\nX\x04\x00\x00\x00echo\x85R.",
                                 b"\x80\x02cbuiltins\neval\nX\x01\x00\x00\x001\x85R.",
                                 b"\x80\x02c__builtin__\neval\nX\x01\x00\x00\x001\x85R.",
                                 b"\x80\x02ctorch\nload\n.",
                                 b"\x80\x02ctorch\nBoolStorage\n."])
def test_a_foreign_global_is_refused(pkl):
    _refused(_rewrite(_save(_state(torch.float32)), {"data.pkl": pkl}), "global")


def test_foreign_opcodes_and_values_are_refused():
    cases = [pickle.dumps({1.5: 1}, 2), pickle.dumps({b"x": 1}, 3), pickle.dumps({"x": {1, 2}}, 4),
             pickle.dumps({"x": b"bytes"}, 3), pickle.dumps({"x": 1}, 4), pickle.dumps(["x"], 0),
             b"\x80\x02}(X\x01\x00\x00\x00aK\x01X\x01\x00\x00\x00aK\x02u.",  # a key set twice
             b"\x80\x02}(K\x01K\x01\x88K\x02u.",  # True after 1 would merge
             b"\x80\x02}(X\x01\x00\x00\x00aK\x01u.junk",  # bytes after STOP
             b"\x80\x02}}b.",  # BUILD on a plain dict
             b"\x80\x02ccollections\nOrderedDict\n)R}X\x01\x00\x00\x00xK\x01sb.",  # BUILD other than _metadata
             b"\x80\x02ccollections\nOrderedDict\nK\x01\x85R.",  # OrderedDict(1)
             b"\x80\x02ccollections\nOrderedDict\n.",  # a global left in the result
             b"\x80\x02K\x01K\x02.",  # two results
             b"\x80\x02(K\x01.",  # an open MARK
             b"\x80\x02(a.",  # APPEND across a MARK
             b"\x80\x02h\x05.",  # a memo entry never written
             b"\x80\x02]q\x00h\x00a.",  # a list that contains itself
             pickle.dumps(1, 2)[:-1],  # no STOP
             b"\x80\x02X\x05\x00\x00\x00ab."]  # a string past the end
    for pkl in cases:
        with pytest.raises(Reject):
            read_torch(_archive(pkl))


def test_nesting_is_capped():
    deep: list = []
    for _ in range(150):
        deep = [deep]
    _refused(_crafted(deep), "deep")
    shallow: list = []
    for _ in range(90):
        shallow = [shallow]
    assert isinstance(read_torch(_crafted(shallow)), list)


def test_a_parameter_is_its_tensor():
    weight = torch.nn.Linear(2, 2).weight
    assert read_torch(_save({"p": weight}))["p"].flat() == weight.detach().flatten().tolist()


def test_storage_members_of_the_wrong_length_are_refused():
    data = _save(_state(torch.float32))
    body = _members(data)["data/0"]
    _refused(_rewrite(data, {"data/0": body + b"\x00" * 4}), "bytes")
    _refused(_rewrite(data, {"data/0": body[:-1]}), "bytes")
    _refused(_rewrite(data, {"data/0": None}), "no archive member")


@pytest.mark.parametrize(("offset", "size", "stride"), [(1, (6,), (1,)), (0, (2, 4), (3, 1)), (0, (3, 2), (2, 3)),
                                                       (6, (1,), (1,)), (0, (7,), (1,)), (0, (2,), (-1,)),
                                                       (-1, (1,), (1,)), (0, (2, 3), (3,)), (0, (2,), (1.0,)),
                                                       (0, [2], [1]), (0, (10 ** 9,), (0,))])
def test_tensors_reaching_outside_their_storage_are_refused(offset, size, stride):
    s = _Storage(torch.FloatStorage, "0", 6)
    _refused(_crafted({"w": _FakeTensor(s, offset, size, stride)}, {"0": _floats(*range(6))}))


def test_hooks_metadata_and_inconsistent_storages_are_refused():
    s = _Storage(torch.FloatStorage, "0", 2)
    body = {"0": _floats(1, 2)}
    _refused(_crafted({"w": _FakeTensor(s, 0, (2,), (1,), hooks=OrderedDict({1: "hook"}))}, body), "hooks")
    _refused(_crafted({"w": _FakeTensor(s, 0, (2,), (1,), hooks={})}, body), "hooks")
    _refused(_crafted({"w": _FakeTensor(s, 0, (2,), (1,), extra=({"conj": True},))}, body), "metadata")
    _refused(_crafted({"w": _FakeTensor(s, 0, (2,), (1,), extra=(None, None))}, body))
    other = _Storage(torch.IntStorage, "0", 2)
    _refused(_crafted({"w": _FakeTensor(s, 0, (2,), (1,)), "v": _FakeTensor(other, 0, (2,), (1,))}, body), "two")
    _refused(_crafted({"w": _FakeTensor(_Storage(torch.FloatStorage, "../0", 2), 0, (2,), (1,))}, body))
    _refused(_crafted({"w": s}, body))  # a storage outside a tensor


def test_archive_layouts_torch_does_not_write_are_refused():
    data = _save(_state(torch.float32))
    _refused(_rewrite(data, add={"extra.txt": b"hi"}), "not one torch.save writes")
    _refused(_rewrite(data, outside={"other/data.pkl": b"."}), "top-level folder")
    _refused(_rewrite(data, outside={"loose.pkl": b"."}), "top-level folder")
    _refused(_rewrite(data, add={"data/0/x": b"."}), "not one torch.save writes")
    _refused(_rewrite(data, {"data.pkl": None}), "no data.pkl")
    _refused(_rewrite(data, {"byteorder": b"middle"}), "byteorder")
    _refused(_rewrite(data, {"byteorder": b"little\n"}), "byteorder")
    _refused(_rewrite(data, compression=zipfile.ZIP_BZIP2), "method")
    with pytest.warns(UserWarning):
        twice = _rewrite(data, add={"data/0": _members(data)["data/0"]})
    _refused(twice, "same name")


def test_deflated_archives_are_read_like_stored_ones():
    sd = _state(torch.float64)
    deflated = _rewrite(_save(sd), compression=zipfile.ZIP_DEFLATED)
    ours = state_dict(deflated)
    for name, t in _load(deflated).items():
        assert _same(ours[name], t)


def test_legacy_and_non_zip_files_are_refused():
    _refused(_save(_state(torch.float32), _use_new_zipfile_serialization=False), "legacy")
    for junk in (b"", b"hello", b"PK\x05\x06" + b"\x00" * 18, bytes(range(256))):
        _refused(junk)


def test_truncated_archives_are_refused():
    data = _save(_state(torch.float32))
    for end in list(range(0, len(data), max(1, len(data) // 80))) + [len(data) - 1]:
        _refused(data[:end])


def test_random_byte_flips_in_data_pkl_never_escape_as_other_exceptions():
    data = _save({"model": _state(torch.float32), "epoch": 3, "names": ["a", "b"]})
    pkl = _members(data)["data.pkl"]
    rng = random.Random(20240611)
    outcomes = {"reject": 0, "valid": 0}
    for _ in range(300):
        mutated = bytearray(pkl)
        for _ in range(rng.randint(1, 3)):
            mutated[rng.randrange(len(mutated))] = rng.randrange(256)
        try:
            read_torch(_rewrite(data, {"data.pkl": bytes(mutated)}))
            outcomes["valid"] += 1
        except Reject:
            outcomes["reject"] += 1
    assert outcomes["reject"] > 0


def test_random_byte_flips_in_the_archive_never_escape_as_other_exceptions():
    """Each flip is refused with Reject, or (a byte no check covers) the archive still reads as the state dict."""
    sd = _state(torch.float16)
    data = _save(sd)
    rng = random.Random(7)
    rejected = 0
    for _ in range(200):
        mutated = bytearray(data)
        mutated[rng.randrange(len(mutated))] ^= 1 << rng.randrange(8)
        try:
            ours = read_torch(bytes(mutated))
        except Reject:
            rejected += 1
            continue
        assert list(ours) == list(sd) and all(_same(ours[name], t) for name, t in sd.items())
    assert rejected > 0


def test_a_member_that_inflates_past_its_declared_size_is_refused():
    body = b"\x00" * (10 << 20)
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as w:
        w.writestr("archive/data.pkl", _pickled({"w": _FakeTensor(_Storage(torch.FloatStorage, "0", 6), 0, (6,),
                                                                                (1,))}))
        w.writestr("archive/data/0", body, compress_type=zipfile.ZIP_DEFLATED)
    bomb = _patch_central(out.getvalue(), "archive/data/0", file_size=24)
    # refused before the 10 MiB are inflated: the reader's memory stays far below them
    assert peak_bytes(lambda: _refused(bomb, "decompress")) < 2 << 20
    crc = _patch_central(bomb, "archive/data/0", crc=zlib.crc32(body[:24]))
    assert peak_bytes(lambda: _refused(crc, "decompress")) < 2 << 20


def _pickled(obj: object) -> bytes:
    out = io.BytesIO()
    _Pickler(out, protocol=2).dump(obj)
    return out.getvalue()


def test_a_member_that_claims_gigabytes_is_refused_without_decompressing():
    claim = (1 << 32) - 4
    for numel in (6, claim // 4):  # the pickle disagrees with the directory / agrees with it
        out = io.BytesIO()
        with zipfile.ZipFile(out, "w") as w:
            tensor = _FakeTensor(_Storage(torch.FloatStorage, "0", numel), 0, (numel,), (1,))
            w.writestr("archive/data.pkl", _pickled({"w": tensor}))
            w.writestr("archive/data/0", b"\x00" * (1 << 20), compress_type=zipfile.ZIP_DEFLATED)
        bomb = _patch_central(out.getvalue(), "archive/data/0", file_size=claim)
        # refused before the inflation bound: nothing near the claimed gigabytes is allocated
        words = "24 expected" if numel == 6 else "one entry per byte of the file"
        assert peak_bytes(lambda b=bomb, w=words: _refused(b, w)) < 2 << 20


# ---------------------------------------------------------------------------------------------- closed gaps
#
# Files this reader once accepted while docs/FORMATS.md (and the producer's reader) refuse them; the same cases are
# cross-checked against the producer in tests/test_io_torchfile.py (CHECKER_GAPS).


def _torch_refuses(data: bytes) -> None:
    with pytest.raises(Exception):  # noqa: B017 (torch's error types vary by the kind of lookup that fails)
        torch.load(io.BytesIO(data), weights_only=True)


@pytest.mark.parametrize("pkl", [b"\x80\x04}.", b"\x80\x05}.", b"\x80\x02}\x80\x04.", b"\x80\x03}\x80\x05."],
                         ids=["proto4", "proto5", "proto4_later", "proto5_later"])
def test_protocols_other_than_2_and_3_are_refused_even_without_their_opcodes(pkl):
    _refused(_archive(pkl), "protocol")


@pytest.mark.parametrize("pkl", [b"}.", b"}\x80\x02.", b"N."])
def test_a_pickle_that_does_not_start_with_proto_is_refused(pkl):
    _refused(_archive(pkl), "PROTO")


def test_a_later_proto_2_or_3_is_read():
    assert read_torch(_archive(b"\x80\x03}\x80\x02.")) == {}


def _escaped(old: bytes, new: bytes) -> bytes:
    """A one-tensor archive whose data.pkl has the GLOBAL lines ``old`` replaced by ``new``."""
    pkl = _pickled({"w": _FakeTensor(_Storage(torch.FloatStorage, "0", 6), 0, (6,), (1,))})
    assert pkl.count(old) == 1
    return _archive(pkl.replace(old, new), {"0": _floats(*range(6))})


@pytest.mark.parametrize(("old", "new"), [
    (b"ccollections\nOrderedDict\n", b"ccollection\\x73\nOrderedDict\n"),
    (b"ccollections\nOrderedDict\n", b"ccoll\\145ctions\nOrderedDict\n"),
    (b"ccollections\nOrderedDict\n", b"ccollections\nOrdered\\x44ict\n"),
    (b"ccollections\nOrderedDict\n", b"ccollections\r\nOrderedDict\n"),
    (b"ctorch._utils\n_rebuild_tensor_v2\n", b"ctorch\\x2e_utils\n_rebuild_tensor_v2\n"),
    (b"ctorch\nFloatStorage\n", b"ctorch\nFloat\\x53torage\n"),
], ids=["module_hex", "module_octal", "name_hex", "module_cr", "rebuild_hex", "storage_hex"])
def test_escaped_global_names_are_refused_as_torch_refuses_them(old, new):
    data = _escaped(old, new)
    _refused(data, "global")
    _torch_refuses(data)
    assert list(read_torch(_escaped(old, old))["w"].values) == [0, 1, 2, 3, 4, 5]


def test_a_global_whose_lines_split_elsewhere_is_refused():
    _refused(_archive(b"\x80\x02ccollections OrderedDict\n\n)R."), "global")
    _refused(_archive(b"\x80\x02ccollections\nOrderedDict \n)R."), "global")


def _empty(size: tuple, cls=torch.FloatStorage) -> bytes:
    stride = tuple(math.prod(size[i + 1:]) for i in range(len(size)))
    return _crafted({"e": _FakeTensor(_Storage(cls, "e", 0), 0, size, stride)}, {"e": b""})


@pytest.mark.parametrize(("size", "cls"), [((0, 1 << 62), torch.FloatStorage), ((0, 1 << 62), torch.ByteStorage),
                                           ((0, 1 << 60), torch.ByteStorage), ((1 << 60, 0), torch.DoubleStorage),
                                           ((0, 1 << 40, 1 << 40), torch.ByteStorage),
                                           ((0, 1 << 64), torch.ByteStorage)],
                         ids=["2^62_f4", "2^62_u1", "2^60_u1", "2^60_first", "2^40x2^40", "2^64"])
def test_empty_tensors_whose_other_sizes_multiply_to_2_to_the_60_are_refused(size, cls):
    _refused(_empty(size, cls), "2\\^60")


def test_more_than_64_dimensions_are_refused_and_64_are_read():
    s = _Storage(torch.FloatStorage, "0", 6)
    _refused(_crafted({"w": _FakeTensor(s, 0, (1,) * 65, (1,) * 65)}, {"0": _floats(*range(6))}), "65 dimensions")
    ours = read_torch(_crafted({"w": _FakeTensor(s, 5, (1,) * 64, (1,) * 64)}, {"0": _floats(*range(6))}))["w"]
    assert ours.shape == (1,) * 64 and list(ours.values) == [5]


def test_the_largest_empty_tensor_is_read_like_torch():
    data = _empty((0, (1 << 60) - 1), torch.DoubleStorage)
    ours, theirs = read_torch(data)["e"], _load(data)["e"]
    assert ours.shape == tuple(theirs.shape) == (0, (1 << 60) - 1) and list(ours.values) == []
