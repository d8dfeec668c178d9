"""torch.save zip archives read without torch: the producer's reader of docs/FORMATS.md, section "torch".

An archive is a zip whose members all lie in one folder P: ``P/data.pkl`` (a pickle), the storages
``P/data/<key>`` and a few bookkeeping members, each named once (no NUL or backslash in a name), stored or
deflated, not encrypted, at the place its local header says and overlapping no other member. Members are read
from the file by this module (not by ``zipfile``'s reader, whose checks differ): a stored member is exactly its
declared size, a deflated one inflates to exactly its declared size with nothing after the deflate stream, and
every member passes its CRC check. The zip directory must be where torch's reader (miniz) finds it and where
``zipfile`` does (``_directory_span``), and member names are UTF-8 bytes that ``zipfile`` decoded to the same text,
no two equal after ASCII lowercasing (torch looks names up ignoring ASCII case).

The pickle is never executed. It must be protocol 2 or 3: it starts with PROTO 2 or 3, ends exactly at its STOP
with one object on the stack, and uses only the opcodes a protocol-2/3 pickle of plain values needs (listed in
``_OPCODES``; no FRAME or other protocol-4/5 opcode, no bytes, sets, NEWOBJ, EXT, text opcodes, DUP or POP) and
at most 2^22 memo entries. It is then run by Python's own pure-Python unpickling machine (``pickle._Unpickler``)
with a dispatch table holding only those opcodes, in which ``find_class`` returns stand-ins for exactly the
globals FORMATS.md admits (``collections.OrderedDict``, ``torch._utils._rebuild_tensor_v2`` and nine storage
classes) and REDUCE calls nothing but ``OrderedDict()`` and ``_rebuild_tensor_v2(...)`` through them, so no code
of the file's choosing runs and torch is never imported. SETITEM(S) accept only dict targets and keys that are
str, int with |k| < 2^61 - 1, bool or None, each set once per dict (``1`` then ``True`` is a key set twice);
BUILD accepts only an OrderedDict's ``{'_metadata': ...}``, which is checked and dropped.

A persistent id ``('storage', type, key, location, numel)`` becomes the numel elements of ``P/data/<key>`` (its
size in the zip directory must be numel × itemsize, checked before a byte is decompressed), in the byte order that
``P/byteorder`` names (absent: little). ``_rebuild_tensor_v2`` becomes a numpy array: the strided view of the
storage (offset, sizes and strides non-negative ints in tuples, at most 64 dimensions whose non-zero sizes multiply
to less than 2^60, its largest index inside the storage unless the tensor is empty; ``backward_hooks`` an
OrderedDict still empty when the pickle ends, ``metadata`` absent, None or empty), copied to C order and native
byte order; bfloat16 becomes float32 holding the same values. The result is a tree (no cycles, containers nested at
most 100 deep) of dicts (an OrderedDict as a dict, key order kept), lists, tuples, str, int, float, bool, None and
arrays; anything else refuses the file.

Bounds, checked before the work they bound: the members read inflate to at most 2^28 + 64 × (the file's size)
bytes, compared with the zip directory before decompressing; the tensors gather at most 2^20 + 4 × (the storage
bytes read so far) elements in all.

Every refusal is an ``InputError`` whose one-line message starts with the path; no other exception escapes.

Cost: time linear in the file's size (the members' local headers, data.pkl and the storages the pickle names) plus
the tensors' elements, which the bound above makes linear too. Memory: those storages, plus one C-order copy of
each tensor.
"""

from __future__ import annotations

import io
import math
import os
import pickle
import pickletools
import struct
import zipfile
import zlib

import numpy as np

from certsym.errors import InputError
from certsym.io.filebytes import crc32
from certsym.io.foreign import WHOLE_MODULE
from certsym.io.quantized import Dequantized, dequantize

__all__ = ["load_torch", "read_state_dict"]

_BOOKKEEPING = frozenset({"version", ".data/version", "byteorder", ".data/serialization_id", ".format_version",
                          ".storage_alignment"})
_ZIP_MAGIC = b"PK\x03\x04"
_LEGACY_MAGIC = b"\x8a\x0a\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19"  # LONG1 0x1950a86a20f9469cfc6c, torch < 1.6

_INFLATION, _INFLATION_SLACK = 64, 1 << 28  # bytes decompressed in all <= 2^28 + 64 x file size
_GATHER_PER_BYTE, _GATHER_SLACK = 4, 1 << 20  # tensor elements in all <= 2^20 + 4 x storage bytes read
_MAX_DEPTH = 100  # nesting of dicts, lists and tuples
_MAX_DIMS = 64  # dimensions of a tensor (numpy's limit too)
_EXTENT_LIMIT = 1 << 60  # a tensor's non-zero sizes multiply to less than this, empty tensors included (x 8 bytes
#                          fits numpy's signed 64-bit byte count)
_MAX_MEMO = 1 << 22  # distinct memo indices
_KEY_LIMIT = (1 << 61) - 1  # int keys: |k| < 2^61 - 1 (they hash to themselves)
_PROTOCOLS = (2, 3)

# The opcodes a protocol-2/3 pickle of FORMATS.md's values uses; any other opcode refuses the file.
_OPCODES = frozenset({"PROTO", "STOP", "MARK", "GLOBAL", "REDUCE", "BUILD", "BINPERSID", "APPEND", "APPENDS",
                      "SETITEM", "SETITEMS", "TUPLE", "TUPLE1", "TUPLE2", "TUPLE3", "NONE", "NEWFALSE", "NEWTRUE",
                      "EMPTY_TUPLE", "EMPTY_LIST", "EMPTY_DICT", "BININT", "BININT1", "BININT2", "LONG1",
                      "BINFLOAT", "BINUNICODE", "BINGET", "LONG_BINGET", "BINPUT", "LONG_BINPUT"})


class _Refused(Exception):
    """A reason to refuse the file; ``load_torch`` prefixes the path."""


def _text(value: object, limit: int = 60) -> str:
    """A printable one-line rendering of a name taken from the file, at most ``limit`` characters."""
    text = value if isinstance(value, str) else repr(value)
    text = "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)
    return text if len(text) <= limit else text[:limit] + "..."


class _StorageType:
    """Stand-in for a torch storage class: its name and element type (a numpy code; bfloat16 as raw u2); a
    quantized storage (QInt8Storage, QUInt8Storage) is read only by ``_rebuild_qtensor``."""

    __slots__ = ("name", "code", "itemsize", "quantized")

    def __init__(self, name: str, code: str, itemsize: int, quantized: str = ""):
        self.name, self.code, self.itemsize, self.quantized = name, code, itemsize, quantized

    def __repr__(self) -> str:
        return f"torch.{self.name}"


_STORAGE_TYPES = {name: _StorageType(name, code, size) for name, code, size in (
    ("HalfStorage", "f2", 2), ("BFloat16Storage", "bf16", 2), ("FloatStorage", "f4", 4), ("DoubleStorage", "f8", 8),
    ("LongStorage", "i8", 8), ("IntStorage", "i4", 4), ("ShortStorage", "i2", 2), ("CharStorage", "i1", 1),
    ("ByteStorage", "u1", 1))} | {"QInt8Storage": _StorageType("QInt8Storage", "i1", 1, "int8"),
                                   "QUInt8Storage": _StorageType("QUInt8Storage", "u1", 1, "uint8")}


class _Storage:
    """A storage read from ``P/data/<key>``: ``array`` holds its numel elements in the file's byte order
    (bfloat16 as their 16-bit patterns)."""

    __slots__ = ("type", "key", "numel", "array")
    __hash__ = None  # type: ignore[assignment]

    def __init__(self, stype: _StorageType, key: str, numel: int, array: np.ndarray):
        self.type, self.key, self.numel, self.array = stype, key, numel, array

    def __repr__(self) -> str:
        return f"<storage {self.key!r}: {self.numel} {self.type!r}>"


class _Tensor:
    """A tensor built by ``_rebuild_tensor_v2``: a C-order, native-order numpy array (unhashable)."""

    __slots__ = ("array",)
    __hash__ = None  # type: ignore[assignment]

    def __init__(self, array: np.ndarray):
        self.array = array

    def __repr__(self) -> str:
        return f"<tensor {self.array.dtype} {self.array.shape}>"


class _OrderedDict(dict):
    """Stand-in for ``collections.OrderedDict``: a dict (insertion order is kept), made only by ``OrderedDict()``."""

    __slots__ = ()


class _Rebuild:
    """Stand-in for ``torch._utils._rebuild_tensor_v2``: a marker that REDUCE recognises, never called."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "torch._utils._rebuild_tensor_v2"


_REBUILD = _Rebuild()


class _Marker:
    """Stand-in for one more global torch's quantized state dicts name: ``_rebuild_qtensor``,
    ``_rebuild_parameter``, the qschemes ``per_tensor_affine`` and ``per_channel_affine``, and the dtypes ``qint8``
    and ``quint8`` (the value of a dynamic quantized Linear's ``_packed_params.dtype``). Never called."""

    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return f"torch.{self.name}"


_MARKERS = {(module, name): _Marker(name) for module, name in (
    ("torch._utils", "_rebuild_qtensor"), ("torch._utils", "_rebuild_parameter"), ("torch", "per_tensor_affine"),
    ("torch", "per_channel_affine"), ("torch", "qint8"), ("torch", "quint8"))}
_QTENSOR = _MARKERS["torch._utils", "_rebuild_qtensor"]
_PARAMETER = _MARKERS["torch._utils", "_rebuild_parameter"]
_PER_TENSOR, _PER_CHANNEL = _MARKERS["torch", "per_tensor_affine"], _MARKERS["torch", "per_channel_affine"]
_QDTYPES = (_MARKERS["torch", "qint8"], _MARKERS["torch", "quint8"])


def _tuple_of_naturals(value: object) -> bool:
    return type(value) is tuple and all(type(v) is int and v >= 0 for v in value)


class _Zip:
    """The archive's directory, checked, and its members read from the file within the inflation budget."""

    def __init__(self, fh, infos: list[zipfile.ZipInfo]):
        self.fh = fh
        fh.seek(0, os.SEEK_END)
        self.size = fh.tell()
        self.budget = _INFLATION * self.size + _INFLATION_SLACK
        self.top, self.infos = _members(infos)
        self.begins: dict[str, int] = {}  # name inside P -> offset of its data in the file
        extents = sorted(self._extent(rest, info) for rest, info in self.infos.items())
        for (_, end, name), (start, _, other) in zip(extents, extents[1:], strict=False):
            if start < end:
                raise _Refused(f"refused: the members {_text(repr(name))} and {_text(repr(other))} overlap")

    def _extent(self, rest: str, info: zipfile.ZipInfo) -> tuple[int, int, str]:
        """(start of the member's local header, end of its data, its name), after checking that the local header
        agrees with the central directory and that the data lies inside the file."""
        name = info.orig_filename
        start = info.header_offset
        if start < 0 or start + 30 > self.size:
            raise _Refused(f"refused: the member {_text(repr(name))} lies outside the file")
        self.fh.seek(start)
        sig, _, _, method, _, _, _, _, _, name_length, extra_length = struct.unpack("<4sHHHHHIIIHH", self.fh.read(30))
        raw_name = _raw_name(info)
        if sig != _ZIP_MAGIC or method != info.compress_type or self.fh.read(name_length) != raw_name:
            raise _Refused(f"refused: the member {_text(repr(name))} has a local header that disagrees with the "
                           "zip directory")
        begin = start + 30 + name_length + extra_length
        end = begin + info.compress_size
        if end > self.size:
            raise _Refused(f"refused: the member {_text(repr(name))} runs past the end of the file")
        self.begins[rest] = begin
        return start, end, name

    def read(self, rest: str, size: int) -> bytes:
        """The bytes of member P/<rest>, whose directory entry declares ``size`` bytes (the caller checked): refused
        before anything is decompressed when the members read so far and this one exceed the inflation budget."""
        info = self.infos[rest]
        name = _text(repr(info.orig_filename))
        if size > self.budget:
            raise _Refused(f"refused: the member {name} inflates to {size} bytes, beyond the 2^28 + {_INFLATION} x "
                           "(file size) bytes read from an archive in all")
        self.budget -= size
        self.fh.seek(self.begins[rest])
        raw = self.fh.read(info.compress_size)
        if len(raw) != info.compress_size:
            raise _Refused(f"the member {name} is truncated")
        if info.compress_type == zipfile.ZIP_STORED:
            if info.compress_size != size:
                raise _Refused(f"refused: the stored member {name} has two sizes in the zip directory")
            body = raw
        else:
            inflater = zlib.decompressobj(-15)
            body = inflater.decompress(raw, size + 1)
            if len(body) != size or not inflater.eof or inflater.unused_data:
                raise _Refused(f"refused: the member {name} does not inflate to exactly its {size} bytes")
        if crc32(body) != info.CRC:
            raise _Refused(f"refused: the member {name} fails its CRC check")
        return body


def _raw_name(info: zipfile.ZipInfo) -> bytes:
    """The member's name as the bytes in the zip directory: zipfile decoded them as UTF-8 under flag 0x800, else as
    cp437 (one character per byte, so this encoding gives them back)."""
    return info.orig_filename.encode("utf-8" if info.flag_bits & 0x800 else "cp437")


def _directory_span(fh) -> tuple[int, int, int]:
    """(offset, size, entries) of the central directory as torch's reader (miniz) locates it: the offset the end
    record states or, for zip64, the one in the zip64 end record the locator points to. Refused unless the end record
    is the file's last 22 bytes (no comment), a zip64 end record without extensible data sits right before its
    locator, and the directory ends exactly where the record after it starts, so that zipfile, which infers the
    directory's place from the records' positions ("concat"), finds it at the same offset."""
    fh.seek(0, os.SEEK_END)
    end = fh.tell() - 22
    if end < 0:
        raise _Refused("a damaged or truncated zip archive (shorter than a zip end record)")
    tail_start = max(end - 76, 0)
    fh.seek(tail_start)
    tail = fh.read()
    eocd = tail[end - tail_start:]
    if eocd[:4] != b"PK\x05\x06":
        raise _Refused("a damaged or truncated zip archive, or one with a comment or bytes after it (its end record "
                       "is not the file's last 22 bytes)")
    _, disk, cd_disk, here, total, size, offset, _ = struct.unpack("<4sHHHHIIH", eocd)
    record = end
    if end >= 20 and tail[end - 20 - tail_start:end - 16 - tail_start] == b"PK\x06\x07":
        _, cd_disk64, record, disks = struct.unpack("<4sIQI", tail[end - 20 - tail_start:end - tail_start])
        if record != end - 76 or cd_disk64 != 0 or disks != 1:
            raise _Refused("refused: the zip64 locator does not point at a zip64 end record right before it (torch "
                           "follows the locator; zipfile reads the record before it)")
        sig, length, _, _, disk, cd_disk, here, total, size, offset = struct.unpack("<4sQHHIIQQQQ", tail[:56])
        if sig != b"PK\x06\x06" or length != 44:
            raise _Refused("refused: the zip64 end record is malformed or holds extensible data")
    if disk or cd_disk or here != total:
        raise _Refused("refused: a multi-disk zip archive")
    if offset + size != record:
        raise _Refused("refused: the zip directory is not at the offset the end record states (bytes prepended to "
                       "the archive, or a second directory)")
    return offset, size, total


def _members(infos: list[zipfile.ZipInfo]) -> tuple[str, dict[str, zipfile.ZipInfo]]:
    """(P, {name inside P: info}) after checking FORMATS.md's member rules."""
    names = [info.orig_filename for info in infos]
    if not names:
        raise _Refused("refused: the archive has no members")
    if len(set(names)) != len(names):
        seen: set[str] = set()
        twice = next(n for n in names if n in seen or seen.add(n))
        raise _Refused(f"refused: the archive has two members named {_text(repr(twice))}")
    raws = [_raw_name(info) for info in infos]
    for name, raw in zip(names, raws, strict=True):
        try:
            utf8 = raw.decode("utf-8")
        except UnicodeDecodeError:
            utf8 = None
        if utf8 != name:
            raise _Refused(f"refused: the member name {_text(raw)} is not UTF-8 that zipfile decodes the same way "
                           "(torch reads a name's bytes as UTF-8; zipfile, without the UTF-8 flag, as cp437)")
    lowered: dict[bytes, str] = {}
    for name, raw in zip(names, raws, strict=True):
        if raw.lower() in lowered:
            raise _Refused(f"refused: the members {_text(repr(lowered[raw.lower()]))} and {_text(repr(name))} differ "
                           "only in case (torch looks member names up ignoring ASCII case)")
        lowered[raw.lower()] = name
    tops = {name.split("/", 1)[0] for name in names}
    if len(tops) != 1 or any("/" not in name for name in names) or "" in tops:
        raise _Refused(f"refused: the members do not lie in one top-level folder (found {_text(sorted(tops)[:4])})")
    (top,) = tops
    members = {}
    for info, name in zip(infos, names, strict=True):
        rest = name[len(top) + 1:]
        key = rest[len("data/"):] if rest.startswith("data/") else None
        if (rest != "data.pkl" and rest not in _BOOKKEEPING and (not key or "/" in key)) or "\x00" in name \
                or "\\" in name:
            raise _Refused(f"refused: the member {_text(repr(name))} is not part of a torch.save archive")
        if info.flag_bits & 0x41:
            raise _Refused(f"refused: the member {_text(repr(name))} is encrypted")
        if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
            raise _Refused(f"refused: the member {_text(repr(name))} is compressed with method {info.compress_type}; "
                           "torch archives are stored or deflated")
        members[rest] = info
    if "data.pkl" not in members:
        raise _Refused(f"refused: the archive has no {_text(top)}/data.pkl")
    return top, members


_MAX_VERSION = 10  # the newest archive format torch.load reads; the oldest is 1


def _check_version(archive: _Zip) -> None:
    """torch.load requires a version record (.data/version before version) holding a format version 1 … 10; read
    strictly here as decimal digits without a leading zero and an optional newline."""
    record = ".data/version" if ".data/version" in archive.infos else "version"
    if record not in archive.infos or archive.infos[record].file_size > 8:
        raise _Refused("refused: the archive has no version record of at most 8 bytes, which torch.load requires")
    raw = archive.read(record, archive.infos[record].file_size)
    digits = raw[:-1] if raw.endswith(b"\n") else raw
    if not (digits.isascii() and digits.isdigit() and digits[:1] != b"0" and 1 <= int(digits) <= _MAX_VERSION):
        raise _Refused(f"refused: the {record} record is {_text(raw)}, not a format version 1 to {_MAX_VERSION}, "
                       "which torch.load requires")


def _check_pickle(data: bytes) -> None:
    """A well-formed pickle of protocol 2 or 3 (it starts with PROTO 2 or 3, and every PROTO says 2 or 3) that uses
    only ``_OPCODES``, at most ``_MAX_MEMO`` memo indices, and ends exactly at its STOP."""
    memo: set[int] = set()
    end = None
    if b"torch.nn.modules" in data:  # a GLOBAL naming a module class: torch.save(model), not a state dict
        raise _Refused(f"refused: {WHOLE_MODULE}")
    try:
        for opcode, arg, pos in pickletools.genops(data):
            name = opcode.name
            if name not in _OPCODES:
                raise _Refused(f"refused: data.pkl uses the pickle opcode {name} (protocol {opcode.proto}), which a "
                               "protocol 2 or 3 pickle of a state dict does not need")
            if name == "PROTO" and arg not in _PROTOCOLS:
                raise _Refused(f"refused: data.pkl is a pickle of protocol {_text(arg)}; only protocols 2 (what "
                               "torch.save writes) and 3 are read")
            if pos == 0 and name != "PROTO":
                raise _Refused("refused: data.pkl does not start with PROTO 2 or 3 (a pickle of protocol 0 or 1)")
            if name in ("BINPUT", "LONG_BINPUT") and arg not in memo:
                if len(memo) >= _MAX_MEMO:
                    raise _Refused(f"refused: data.pkl writes more than {_MAX_MEMO} memo entries")
                memo.add(arg)
            if name == "STOP":
                end = pos + 1
    except _Refused:
        raise
    except Exception:
        raise _Refused("data.pkl is not a well-formed pickle") from None
    if end != len(data):
        raise _Refused("refused: data.pkl has bytes after the end of its pickle")


class _Dispatch(dict):
    """The unpickler's opcode table: an opcode outside it refuses the file (``_check_pickle`` refused it first)."""

    def __missing__(self, code: int):
        raise _Refused(f"refused: data.pkl uses the pickle opcode {code:#04x}")


class _Unpickler(pickle._Unpickler):
    """Python's pure-Python unpickling machine restricted to ``_OPCODES``: the value opcodes, MARK, the memo,
    GLOBAL (through ``find_class``) and BINPERSID (through ``persistent_load``) are Python's own; PROTO, STOP,
    REDUCE, BUILD, APPEND(S) and SETITEM(S) are replaced by the checked versions below."""

    dispatch = _Dispatch()

    def __init__(self, data: bytes, loader: _Loader):
        super().__init__(io.BytesIO(data))
        self._loader = loader
        self.dropped: list[dict] = []  # OrderedDicts' BUILD states: checked, then ignored
        self.hooks: list[dict] = []  # every tensor's backward_hooks: still empty when the pickle ends

    def find_class(self, module: str, name: str) -> object:
        if module == "collections" and name == "OrderedDict":
            return _OrderedDict
        if module == "torch._utils" and name == "_rebuild_tensor_v2":
            return _REBUILD
        if module == "torch" and name in _STORAGE_TYPES:
            return _STORAGE_TYPES[name]
        if (module, name) in _MARKERS:
            return _MARKERS[module, name]
        raise _Refused(f"refused: the pickle names the global {_text(module)}.{_text(name)}; certsym reads only "
                       "tensors, storages and ordered dicts")

    def persistent_load(self, pid: object) -> _Storage:
        if type(pid) is not tuple or len(pid) != 5 or type(pid[0]) is not str or pid[0] != "storage":
            raise _Refused(f"refused: the persistent id {_text(pid)} is not ('storage', type, key, location, numel)")
        _, stype, key, location, numel = pid
        if not isinstance(stype, _StorageType) or type(key) is not str or not key or "/" in key \
                or type(location) is not str or type(numel) is not int or numel < 0:
            raise _Refused(f"refused: the persistent id {_text(pid)} is not ('storage', storage class, key, "
                           "location, numel)")
        if location not in ("cpu", "cuda") and not (location.startswith("cuda:") and location[5:].isascii()
                                                    and location[5:].isdigit() and len(location) <= 9):
            raise _Refused(f"refused: the storage {_text(repr(key))} has the location {_text(repr(location))}, which "
                           "torch.load does not restore to values (certsym reads cpu, cuda and cuda:N)")
        return self._loader.storage(stype, key, numel)

    def load_proto(self) -> None:
        proto = self.read(1)[0]
        if proto not in _PROTOCOLS:
            raise _Refused(f"refused: data.pkl is a pickle of protocol {proto}; only protocols 2 and 3 are read")
        self.proto = proto

    def load_stop(self) -> None:
        if self.metastack or len(self.stack) != 1:
            raise _Refused("refused: data.pkl leaves more than one object on the pickle's stack"
                           + (" (an unclosed MARK)" if self.metastack else ""))
        raise pickle._Stop(self.stack.pop())

    def load_reduce(self) -> None:
        args = self.stack.pop()
        func = self.stack[-1]
        if type(args) is not tuple:
            raise _Refused(f"refused: the pickle calls {_kind(func)} with arguments that are not a tuple")
        if func is _OrderedDict:
            if args:
                raise _Refused("refused: the pickle calls OrderedDict with arguments")
            self.stack[-1] = _OrderedDict()
        elif func is _REBUILD:
            self.stack[-1] = self._loader.tensor(args)
            self.hooks.append(args[5])
        elif func is _QTENSOR:
            self.stack[-1] = self._loader.qtensor(args)
            self.hooks.append(args[6])
        elif func is _PARAMETER:  # _rebuild_parameter(data, requires_grad, backward_hooks): the tensor itself
            if len(args) != 3 or type(args[0]) is not _Tensor or type(args[1]) is not bool \
                    or type(args[2]) is not _OrderedDict:
                raise _Refused("refused: _rebuild_parameter called with other than (tensor, requires_grad, an "
                               "OrderedDict of hooks)")
            if args[1] and isinstance(args[0].array, Dequantized):
                raise _Refused("refused: a quantized Parameter that requires grad (torch.load refuses it)")
            self.stack[-1] = args[0]
            self.hooks.append(args[2])
        else:
            what = f"torch.{func.name}" if isinstance(func, _StorageType | _Marker) else _kind(func)
            raise _Refused(f"refused: the pickle calls {what}; it may call only OrderedDict(), _rebuild_tensor_v2, "
                           "_rebuild_qtensor and _rebuild_parameter")

    def load_build(self) -> None:
        state = self.stack.pop()
        target = self.stack[-1]
        if type(target) is not _OrderedDict or type(state) not in (dict, _OrderedDict) or set(state) != {"_metadata"}:
            what = "an OrderedDict" if type(target) is _OrderedDict else _kind(target)
            raise _Refused(f"refused: the pickle sets the state of {what}; only an OrderedDict's state, torch's "
                           "{'_metadata': ...}, is read (a state other than torch's refuses the file)")
        self.dropped.append(state)

    def load_append(self) -> None:
        item = self.stack.pop()
        self._list().append(item)

    def load_appends(self) -> None:
        items = self.pop_mark()
        self._list().extend(items)

    def load_setitem(self) -> None:
        value = self.stack.pop()
        key = self.stack.pop()
        self._set_items([key, value])

    def load_setitems(self) -> None:
        self._set_items(self.pop_mark())

    def _list(self) -> list:
        target = self.stack[-1]
        if type(target) is not list:
            raise _Refused(f"refused: the pickle appends to {_kind(target)}, not a list")
        return target

    def _set_items(self, items: list) -> None:
        target = self.stack[-1]
        if type(target) not in (dict, _OrderedDict) or len(items) % 2:
            raise _Refused(f"refused: the pickle sets items of {_kind(target)}, not a dict")
        for key, value in zip(items[::2], items[1::2], strict=True):
            kind = type(key)
            if not (kind in (str, bool, type(None)) or (kind is int and -_KEY_LIMIT < key < _KEY_LIMIT)):
                what = f"the int {_text(key)}" if kind is int else _kind(key)
                raise _Refused(f"refused: a dict key is {what}; keys are strings, ints (|k| < 2^61 - 1), bools or "
                               "None")
            if key in target:
                raise _Refused(f"refused: the dict key {_text(repr(key))} is set twice in one dict (1 and True, 0 "
                               "and False are one key)")
            target[key] = value


_STANDARD = ("MARK", "GLOBAL", "BINPERSID", "TUPLE", "TUPLE1", "TUPLE2", "TUPLE3", "NONE", "NEWFALSE", "NEWTRUE",
             "EMPTY_TUPLE", "EMPTY_LIST", "EMPTY_DICT", "BININT", "BININT1", "BININT2", "LONG1", "BINFLOAT",
             "BINUNICODE", "BINGET", "LONG_BINGET", "BINPUT", "LONG_BINPUT")
_OWN = {"PROTO": _Unpickler.load_proto, "STOP": _Unpickler.load_stop, "REDUCE": _Unpickler.load_reduce,
        "BUILD": _Unpickler.load_build, "APPEND": _Unpickler.load_append, "APPENDS": _Unpickler.load_appends,
        "SETITEM": _Unpickler.load_setitem, "SETITEMS": _Unpickler.load_setitems}
_CODES = {op.name: op.code.encode("latin-1")[0] for op in pickletools.opcodes}
_Unpickler.dispatch.update({_CODES[name]: pickle._Unpickler.dispatch[_CODES[name]] for name in _STANDARD})
_Unpickler.dispatch.update({_CODES[name]: handler for name, handler in _OWN.items()})


class _Loader:
    """One archive being read: its members, the storages loaded so far and the gather budget."""

    def __init__(self, archive: _Zip, order: str):
        self.archive, self.order = archive, order
        self.cache: dict[str, _Storage] = {}
        self.storage_bytes = 0
        self.gathered = 0

    def storage(self, stype: _StorageType, key: str, numel: int) -> _Storage:
        if key in self.cache:
            known = self.cache[key]
            if known.type is not stype or known.numel != numel:
                raise _Refused(f"refused: storage {_text(repr(key))} is declared twice, as {known.numel} "
                               f"torch.{known.type.name} and as {numel} torch.{stype.name}")
            return known
        top, rest = self.archive.top, f"data/{key}"
        info = self.archive.infos.get(rest)
        if info is None:
            raise _Refused(f"refused: the pickle names storage {_text(repr(key))}, but the archive has no member "
                           f"{_text(repr(f'{top}/{rest}'))}")
        nbytes = numel * stype.itemsize
        if info.file_size != nbytes:
            raise _Refused(f"refused: the member {_text(repr(f'{top}/{rest}'))} holds {info.file_size} bytes; its "
                           f"storage declares {numel} torch.{stype.name} elements, {nbytes} bytes")
        raw = self.archive.read(rest, nbytes)
        self.storage_bytes += nbytes
        code = "u2" if stype.code == "bf16" else stype.code
        dtype = np.dtype(("|" if stype.itemsize == 1 else self.order) + code)
        self.cache[key] = _Storage(stype, key, numel, np.frombuffer(raw, dtype=dtype))
        return self.cache[key]

    def qtensor(self, args: tuple) -> _Tensor:
        """``_rebuild_qtensor(storage, offset, size, stride, quantizer_params, requires_grad, backward_hooks)``:
        the integers of a quantized storage, dequantized exactly (``certsym.io.quantized``); quantizer_params
        ``(per_tensor_affine, scale, zero_point)`` or ``(per_channel_affine, scales, zero_points, axis)``, the
        per-channel ones tensors (torch's ``_rebuild_qtensor`` also takes lists)."""
        if len(args) != 7:
            raise _Refused(f"refused: _rebuild_qtensor called with {len(args)} arguments (torch passes 7)")
        storage, offset, size, stride, params, requires_grad, hooks = args
        if not isinstance(storage, _Storage) or not storage.type.quantized:
            raise _Refused("refused: _rebuild_qtensor is given something other than a quantized storage")
        q = self._checked(storage, offset, size, stride, requires_grad, hooks, None, "_rebuild_qtensor")
        where = f"refused: a quantized tensor of torch.{storage.type.name}"
        if requires_grad:
            raise _Refused(f"{where} that requires grad (torch.load refuses it: integer tensors have no gradient)")
        if type(params) is not tuple or not params or params[0] not in (_PER_TENSOR, _PER_CHANNEL):
            raise _Refused(f"{where} whose quantization scheme is {_text(params)} (certsym reads per_tensor_affine "
                           "and per_channel_affine)")
        if params[0] is _PER_TENSOR:
            if len(params) != 3 or type(params[1]) is not float or type(params[2]) is not int:
                raise _Refused(f"{where}: per_tensor_affine needs (scheme, scale, zero_point)")
            scale, zero, axis = params[1], params[2], None
            if math.isfinite(scale) and float(np.float32(scale)) != scale:  # torch's kernels take it as a float32
                raise _Refused(f"{where}: its per-tensor scale {scale!r} is not a float32, and torch dequantizes "
                               "with the scale rounded to float32: the file and torch's reading differ")
        else:
            if len(params) != 4 or type(params[3]) is not int or \
                    (type(params[1]) is _Tensor) != (type(params[2]) is _Tensor):
                raise _Refused(f"{where}: per_channel_affine needs (scheme, scales, zero_points, axis), the scales and "
                               "zero points both tensors or both lists (torch.load refuses a mix)")
            scale, zero, axis = (self._vector(v, k, where) for k, v in zip("fi", params[1:3], strict=True)), \
                None, params[3]
            scale, zero = tuple(scale)
        try:
            return _Tensor(dequantize(q, scale, zero, axis, storage.type.quantized, where))
        except InputError as exc:
            raise _Refused(str(exc)) from None

    @staticmethod
    def _vector(value: object, kind: str, where: str) -> np.ndarray:
        """Per-channel scales (float64, ``kind`` "f") or zero points (int64, "i"): a 1-D tensor or a list."""
        if type(value) is _Tensor and value.array.ndim == 1 and not isinstance(value.array, Dequantized):
            array = value.array
        elif type(value) is list and all(type(v) is (float if kind == "f" else int) for v in value):
            array = np.array(value, dtype=np.float64 if kind == "f" else np.int64)
        else:
            raise _Refused(f"{where}: per-channel {'scales' if kind == 'f' else 'zero points'} that are not a 1-D "
                           "tensor or a list")
        if array.dtype != (np.float64 if kind == "f" else np.int64):
            raise _Refused(f"{where}: per-channel {'scales of type ' if kind == 'f' else 'zero points of type '}"
                           f"{array.dtype} (torch stores float64 scales and int64 zero points)")
        return array

    def tensor(self, args: tuple) -> _Tensor:
        """``_rebuild_tensor_v2(storage, offset, size, stride, requires_grad, backward_hooks[, metadata])``."""
        if len(args) not in (6, 7):
            raise _Refused(f"refused: _rebuild_tensor_v2 called with {len(args)} arguments (torch passes 6 or 7)")
        storage, offset, size, stride, requires_grad, hooks = args[:6]
        metadata = args[6] if len(args) == 7 else None
        return _Tensor(self._checked(storage, offset, size, stride, requires_grad, hooks, metadata,
                                     "_rebuild_tensor_v2"))

    def _checked(self, storage: object, offset: object, size: object, stride: object, requires_grad: object,
                 hooks: object, metadata: object, what: str) -> np.ndarray:
        """The strided view's values, once its arguments pass FORMATS.md's checks (module docstring)."""
        if not isinstance(storage, _Storage):
            raise _Refused(f"refused: {what} is given something other than a storage")
        if storage.type.quantized and what == "_rebuild_tensor_v2":
            raise _Refused(f"refused: _rebuild_tensor_v2 on a torch.{storage.type.name} (only _rebuild_qtensor reads "
                           "a quantized storage)")
        if type(offset) is not int or offset < 0 or not _tuple_of_naturals(size) or not _tuple_of_naturals(stride) \
                or len(size) != len(stride):
            raise _Refused(f"refused: a tensor with offset {_text(offset)}, size {_text(size)}, stride "
                           f"{_text(stride)} (need non-negative ints, sizes and strides in tuples, one stride per "
                           "dimension)")
        if len(size) > _MAX_DIMS:
            raise _Refused(f"refused: a tensor with {len(size)} dimensions (at most {_MAX_DIMS})")
        if math.prod(s for s in size if s) >= _EXTENT_LIMIT:
            raise _Refused(f"refused: a tensor of size {_text(size)}, whose non-zero sizes multiply to 2^60 or more "
                           "(even an empty tensor may not)")
        if type(requires_grad) is not bool:
            raise _Refused("refused: a tensor whose requires_grad is not a bool")
        if type(hooks) is not _OrderedDict or hooks:
            raise _Refused("refused: a tensor with backward hooks (torch saves an empty OrderedDict)")
        if metadata is not None and (type(metadata) not in (dict, _OrderedDict) or metadata):
            raise _Refused(f"refused: a tensor with metadata {_text(metadata)} (a negated or conjugated view; it "
                           "must be absent, None or empty); save the tensor with .clone() or .resolve_neg()")
        count = math.prod(size)
        if count:
            last = offset + sum((s - 1) * t for s, t in zip(size, stride, strict=True))
            if last >= storage.numel:
                raise _Refused(f"refused: a tensor of size {_text(size)}, stride {_text(stride)} and offset {offset} "
                               f"reaches element {_text(last)} of storage {_text(repr(storage.key))}, which has "
                               f"{storage.numel}")
        if self.gathered + count > _GATHER_PER_BYTE * self.storage_bytes + _GATHER_SLACK:
            raise _Refused(f"refused: the tensors gather more than 2^20 + {_GATHER_PER_BYTE} x (storage bytes read) "
                           f"elements (a tensor of size {_text(size)} after {self.gathered}; repeated or expanded "
                           "views beyond the reader's bound)")
        self.gathered += count
        return _build(storage, offset, size, stride, count)


def _build(storage: _Storage, offset: int, size: tuple, stride: tuple, count: int) -> np.ndarray:
    """The tensor's values in C order of ``size``, native byte order (bfloat16 widened to float32); the caller
    checked that its largest index lies inside the storage."""
    raw = storage.array
    if count == 0:
        out = np.empty(size, dtype=raw.dtype)
    else:  # a dimension of size 1 is never stepped along: its stride, however large, does not matter
        strides = tuple(t * raw.itemsize if s != 1 else 0 for s, t in zip(size, stride, strict=True))
        view = np.lib.stride_tricks.as_strided(raw[offset:], shape=size, strides=strides, writeable=False)
        out = np.array(view, order="C")
    if storage.type.code == "bf16":
        wide = out.astype(np.uint32)
        wide <<= 16  # in place: a 0-d array stays an array
        out = wide.view(np.float32)
    else:
        out = out.astype(out.dtype.newbyteorder("="), copy=False)
    return out if out.flags.c_contiguous else out.copy(order="C")  # (np.ascontiguousarray makes 0-d 1-d)


def _open_zip(fh) -> zipfile.ZipFile:
    head = fh.read(512)
    fh.seek(0)
    if head[:4] != _ZIP_MAGIC:
        if (head[:1] == b"\x80" and _LEGACY_MAGIC in head[:16]) or head[257:262] == b"ustar":
            raise _Refused("the legacy torch format (before torch 1.6) is not read; re-save it with torch.save")
        if head[:1] == b"\x80":
            raise _Refused("a bare pickle, not a torch.save zip archive; certsym reads only torch.save archives")
        raise _Refused("not a torch.save zip archive")
    offset, size, count = _directory_span(fh)
    fh.seek(0)
    try:
        z = zipfile.ZipFile(fh)
    except zipfile.BadZipFile:
        raise _Refused("a damaged or truncated zip archive (no readable central directory)") from None
    infos = z.infolist()
    if getattr(z, "start_dir", None) != offset or len(infos) != count \
            or sum(46 + len(_raw_name(i)) + len(i.extra) + len(i.comment) for i in infos) != size:
        z.close()
        raise _Refused("refused: zipfile reads the zip directory differently from the offset and size its end record "
                       "states (bytes before the archive, or a second directory)")
    return z


def _load(path: str | os.PathLike) -> object:
    try:
        fh = open(path, "rb")  # noqa: SIM115 (closed by the with statement below)
    except FileNotFoundError:
        raise _Refused("no such file") from None
    except OSError as exc:
        raise _Refused(f"cannot read the file ({exc.strerror or type(exc).__name__})") from None
    with fh, _open_zip(fh) as z:
        archive = _Zip(fh, z.infolist())
        order = "<"
        if "byteorder" in archive.infos:
            size = archive.infos["byteorder"].file_size
            mark = archive.read("byteorder", size) if size <= 8 else b"(longer than 8 bytes)"
            if mark not in (b"little", b"big"):
                raise _Refused(f"refused: the byteorder member is {_text(mark)}, neither 'little' nor 'big'")
            order = "<" if mark == b"little" else ">"
        data = archive.read("data.pkl", archive.infos["data.pkl"].file_size)
        _check_pickle(data)
        unpickler = _Unpickler(data, _Loader(archive, order))
        try:
            root = unpickler.load()
        except IndexError:  # Python's machine reaching below a MARK or an empty stack
            raise _Refused("refused: data.pkl takes more from the pickle's stack than it holds (or than its "
                           "innermost MARK left)") from None
        if any(unpickler.hooks):
            raise _Refused("refused: a tensor with backward hooks (torch saves an empty OrderedDict)")
        _check_version(archive)
        return _unpack_quantized(_plain(root, unpickler.dropped))


def _kind(value: object) -> str:
    if isinstance(value, _StorageType):
        return f"the class torch.{value.name} used as a value"
    if isinstance(value, _Storage):
        return "a storage outside a tensor"
    if isinstance(value, _Rebuild):
        return "the function _rebuild_tensor_v2 used as a value"
    if value is _OrderedDict:
        return "the class OrderedDict used as a value"
    if isinstance(value, _Tensor | np.ndarray):
        return "tensor"
    if isinstance(value, _Marker):
        return f"torch.{value.name} used as a value"
    return type(value).__name__


def _plain(root: object, dropped: list) -> object:
    """The unpickled tree with stand-ins replaced: OrderedDict → dict, tensor → array. Shared parts stay shared;
    a cycle, containers nested more than ``_MAX_DEPTH`` deep, or a value of any other kind, is refused; the
    dropped BUILD states are checked the same way. One visit per container."""
    done: dict[int, tuple[object, int]] = {}  # id -> (converted value, height: containers on its longest path)
    active: set[int] = set()

    def walk(value: object, depth: int) -> tuple[object, int]:
        kind = type(value)
        if value is None or kind in (bool, int, float, str):
            return value, 0
        if kind is _Tensor:
            return value.array, 0  # type: ignore[attr-defined]
        if _is_qdtype(value):  # a _packed_params.dtype, removed by _unpack_quantized or refused there
            return value, 0
        ident = id(value)
        if ident in done:
            return done[ident]
        if ident in active:
            raise _Refused("refused: the pickle holds a container that contains itself")
        if kind not in (dict, _OrderedDict, list, tuple):
            raise _Refused(f"refused: the pickle holds {_kind(value)}; certsym reads only tensors, dicts, lists, "
                           "tuples, strings, numbers, bools and None")
        if depth > _MAX_DEPTH:
            raise _Refused(f"refused: the pickle nests dicts, lists and tuples more than {_MAX_DEPTH} deep")
        active.add(ident)
        height = 0
        if kind in (dict, _OrderedDict):
            out: object = {}
            for key, item in value.items():  # type: ignore[attr-defined]
                out[key], h = walk(item, depth + 1)  # type: ignore[index]
                height = max(height, h)
        else:
            items = []
            for item in value:  # type: ignore[attr-defined]
                converted, h = walk(item, depth + 1)
                items.append(converted)
                height = max(height, h)
            out = items if kind is list else tuple(items)
        height += 1
        if height > _MAX_DEPTH:
            raise _Refused(f"refused: the pickle nests dicts, lists and tuples more than {_MAX_DEPTH} deep")
        active.discard(ident)
        done[ident] = out, height
        return out, height

    for state in dropped:
        walk(state, 1)
    return walk(root, 1)[0]


_PACKED = "_packed_params._packed_params"


def _is_qdtype(value: object) -> bool:
    return type(value) is _Marker and any(value is d for d in _QDTYPES)


def _unpack_quantized(tree: object) -> object:
    """torch's dynamic quantized Linear in a state dict, read as the Linear of its dequantized weights (FORMATS.md,
    "Quantized weights"): ``P._packed_params._packed_params`` = (weight, bias) becomes ``P.weight`` and ``P.bias``
    in its place; ``P._packed_params.dtype`` (qint8 or quint8) is dropped, and so are ``P.scale`` and
    ``P.zero_point`` when they are 1.0 and 0 (a dynamic module's unused output parameters). Other values, or any
    other ``….scale``/``….zero_point`` beside such layers (a QuantStub), mean a static quantized model, whose
    layers round their outputs to 8 bits: refused. A dtype marker left anywhere else is refused. One visit per
    container (the tree is shared, not cyclic)."""
    seen: set[int] = set()

    def walk(node: object) -> None:
        if _is_qdtype(node):
            raise _Refused("refused: a quantized dtype outside a quantized Linear's _packed_params.dtype")
        if type(node) not in (dict, list, tuple) or id(node) in seen:
            return
        seen.add(id(node))
        if type(node) is dict:
            if any(type(k) is str and (k == _PACKED or k.endswith("." + _PACKED)) for k in node):
                _unpack_dict(node)
            items = node.values()
        else:
            items = node
        for item in list(items):
            walk(item)

    walk(tree)
    return tree


def _unpack_dict(node: dict) -> None:
    """``_unpack_quantized`` on one dict holding packed params: rebuilt in place, key order kept."""
    prefixes = {k[:-len(_PACKED)] for k in node if type(k) is str and (k == _PACKED or k.endswith("." + _PACKED))}
    owned = {p + suffix for p in prefixes for suffix in ("scale", "zero_point", "_packed_params.dtype")}
    for key in node:
        if type(key) is str and key not in owned and key.rsplit(".", 1)[-1] in ("scale", "zero_point"):
            raise _Refused(f"refused: {_text(repr(key))} beside quantized Linear layers: a static quantized model "
                           "(its activations are rounded to 8 bits), which is not a ReLU network; certsym reads "
                           "dynamic quantized Linear layers (weights only)")
    out: dict = {}
    for key, value in node.items():
        if key in owned:
            continue
        if type(key) is not str or not (key == _PACKED or key.endswith("." + _PACKED)):
            out[key] = value
            continue
        prefix = key[:-len(_PACKED)]
        if not _is_qdtype(node.get(prefix + "_packed_params.dtype")):
            raise _Refused(f"refused: {_text(repr(key))} without its _packed_params.dtype (qint8 or quint8)")
        scale, zero = node.get(prefix + "scale"), node.get(prefix + "zero_point")
        if (scale is None) != (zero is None) or (scale is not None and not (
                type(scale) is np.ndarray and type(zero) is np.ndarray and scale.size == 1 and zero.size == 1
                and float(scale.ravel()[0]) == 1.0 and zero.dtype.kind in "iu" and int(zero.ravel()[0]) == 0)):
            raise _Refused(f"refused: the quantized Linear {_text(repr(prefix[:-1] or key))} has an output scale and "
                           "zero point other than 1 and 0: a static quantized layer, which rounds its outputs to 8 "
                           "bits and is not a ReLU network; certsym reads dynamic quantized Linear layers")
        pair = value
        if type(pair) is not tuple or len(pair) != 2 or not isinstance(pair[0], Dequantized) or not (
                pair[1] is None or (type(pair[1]) is np.ndarray and pair[1].dtype == np.float32)):
            raise _Refused(f"refused: {_text(repr(key))} is not (quantized weight, float32 bias or None)")
        weight = pair[0]
        # torch's dynamic Linear packs a qint8 weight, scaled per tensor or per output row (whatever axis the
        # tensor states), with the scales rounded to float32: other weights are computed otherwise than they read
        if node[prefix + "_packed_params.dtype"] is not _QDTYPES[0] or not weight.scheme.startswith("int8,") \
                or weight.axis not in (None, 0) or any(float(np.float32(x)) != x for x in weight.scales):
            raise _Refused(f"refused: the quantized Linear {_text(repr(prefix[:-1] or key))} is not a qint8 weight "
                           "scaled per tensor or per output row (axis 0) by float32 scales, the weights torch's "
                           "dynamic Linear computes with as they read")
        for name in ("weight", "bias"):
            if prefix + name in node:
                raise _Refused(f"refused: both {_text(repr(key))} and {_text(repr(prefix + name))}")
        out[prefix + "weight"] = pair[0]
        if pair[1] is not None:
            out[prefix + "bias"] = pair[1]
    node.clear()
    node.update(out)


def load_torch(path: str | os.PathLike) -> object:
    """The object tree of a torch.save zip archive: dicts (OrderedDict as dict, key order kept), lists, tuples,
    str, int, float, bool, None and numpy array leaves.

    Arrays are C-contiguous, in native byte order, of dtype float16, float32 (also for bfloat16, exactly),
    float64, int64, int32, int16, int8 or uint8. The pickle is never executed and torch is not imported. A file
    docs/FORMATS.md does not give exactly one meaning raises ``InputError`` (one line, starting with the path).
    Cost: linear in the file's size plus the tensors' elements (at most 2^20 + 4 x the storage bytes)."""
    label = os.fsdecode(os.fspath(path))
    try:
        return _load(path)
    except _Refused as exc:
        raise InputError(f"{label}: {exc}") from None
    except RecursionError:
        raise InputError(f"{label}: refused: the pickle's values are nested too deeply") from None
    except MemoryError:
        raise InputError(f"{label}: refused: a tensor is too large to build in memory") from None
    except Exception as exc:  # zipfile, zlib, OSError, pickle, numpy: a damaged archive, in one line
        detail = str(exc).splitlines()[0][:80] if str(exc) else ""
        raise InputError(f"{label}: unreadable torch archive ({type(exc).__name__}"
                         f"{': ' + detail if detail else ''})") from None


def read_state_dict(path: str | os.PathLike) -> dict[str, np.ndarray]:
    """FORMATS.md's state dict: the top-level mapping, which must map strings to arrays.

    A checkpoint that nests the weights (e.g. ``{"model": state_dict, "epoch": 3}``) is refused with the name
    of the offending entry; ``load_torch`` reads it. Cost: that of ``load_torch``."""
    label = os.fsdecode(os.fspath(path))
    tree = load_torch(path)
    if not isinstance(tree, dict):
        raise InputError(f"{label}: the file holds a {_kind(tree)}, not a state dict (a mapping from names to "
                         "tensors)")
    for key, value in tree.items():
        if type(key) is not str:
            raise InputError(f"{label}: the state dict has the key {_text(key)}, not a string")
        if not isinstance(value, np.ndarray):
            raise InputError(f"{label}: the entry {_text(repr(key))} is a {_kind(value)}, not a tensor; certsym "
                             "reads a state dict (names to tensors), e.g. a checkpoint's weights saved on their own")
    return tree  # type: ignore[return-value]
