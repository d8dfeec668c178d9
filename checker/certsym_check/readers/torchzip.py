"""torch.save zip archives read with the standard library, by docs/FORMATS.md ("torch"); nothing is executed.

The archive: a zip file starting with a local file header (torch's own test for the zip format; the legacy
pre-1.6 format, a bare pickle stream, is refused). Every member lies in one top-level folder P and is one of
``P/data.pkl`` (required), ``P/data/<key>``, ``P/version``, ``P/.data/version``, ``P/byteorder`` (``little``
or ``big``, absent = little), ``P/.data/serialization_id``, ``P/.format_version``, ``P/.storage_alignment``.
Member names are unique, members do not overlap, and each is stored or deflated (what torch's reader reads).
The directory is where torch's reader (miniz) finds it and where zipfile does (``_directory_span``), member
names are UTF-8 bytes that zipfile decoded to the same text, and no two are equal after ASCII lowercasing.

``data.pkl`` is not unpickled: a small interpreter walks its opcodes (``pickletools.genops`` parses them) and
builds only plain values. It starts with PROTO 2 or 3 (and every PROTO says 2 or 3), and its opcodes are a
subset of the ones torch's own weights-only unpickler accepts (protocol 2 and 3 opcodes, no NEWOBJ, INST, OBJ,
EXT, sets, bytes or frames). The only globals are markers that this module interprets itself:
``collections.OrderedDict`` (called with no arguments: a dict), ``torch._utils._rebuild_tensor_v2`` (a
``Tensor``) and the storage classes ``torch.<T>Storage``, each matched against the raw bytes of GLOBAL's two
lines (what Python's and torch's unpicklers look up; pickletools would un-escape ``\x73`` and the like);
nothing is imported, looked up or called by name. A persistent id ``('storage', <storage class>, key, location,
numel)`` is the member ``P/data/<key>`` of exactly numel × itemsize bytes in the declared byte order.
``_rebuild_tensor_v2(storage, offset, size, stride, requires_grad, backward_hooks[, metadata])`` gathers
``storage[offset + Σ idx_i·stride_i]`` over ``size`` in C order (at most 64 dimensions whose non-zero sizes
multiply to less than 2^60, non-negative strides, largest index inside the storage; ``backward_hooks`` an
empty OrderedDict, ``metadata`` empty or None). An OrderedDict's BUILD state ``{'_metadata': ...}`` is read
and dropped. Dict keys are strings, ints (|k| < 2^61 - 1), bools or None, and a key set twice is refused.
The result is a tree (no cycles) of depth at most ``MAX_DEPTH``.

Cost: linear in the input. Members are read in one pass each after their sizes in the zip directory are
compared with what the pickle declares; decompressed bytes in total are at most 2^28 + 64 × the file size
(as for npz; stored members, which torch writes, are part of the file), elements gathered into tensors at
most 2^20 + 4 × the storage bytes read (views that share or expand a storage), and the pickle interpreter
does O(1) work per opcode apart from copying MARKed items once; the result is checked in one visit per
container.
Malformed input raises ``Reject`` with a short reason, never another exception.
"""

from __future__ import annotations

import io
import math
import pickletools
import struct
import sys
import zipfile
import zlib
from array import array

from certsym_check.errors import Reject
from certsym_check.readers.quantized import dequantized
from certsym_check.readers.tensor import WIDTH, Tensor

MAX_DEPTH = 100  # nesting of dicts, lists and tuples in the result
MAX_DIMS = 64  # dimensions of a tensor
EXTENT_LIMIT = 1 << 60  # a tensor's non-zero sizes multiply to less than this (empty tensors included)
MAX_MEMO = 1 << 22  # memo entries
INFLATION, INFLATION_SLACK = 64, 1 << 28  # decompressed bytes in all <= 2^28 + 64 x file (stored: <= 1 x file)
GATHER_PER_BYTE, GATHER_SLACK = 4, 1 << 20  # tensor elements <= 2^20 + 4 x storage bytes (shared, expanded views)
_HASH_LIMIT = (1 << 61) - 1  # ints below this hash to themselves: no crafted collisions among dict keys

_BOOKKEEPING = {"version", ".data/version", "byteorder", ".data/serialization_id", ".format_version",
                ".storage_alignment"}
_STORAGES = {"HalfStorage": "f2", "BFloat16Storage": "bf16", "FloatStorage": "f4", "DoubleStorage": "f8",
             "LongStorage": "i8", "IntStorage": "i4", "ShortStorage": "i2", "CharStorage": "i1",
             "ByteStorage": "u1"}
_ARRAY = {"f4": "f", "f8": "d", "i1": "b", "i2": "h", "i4": "i", "i8": "q", "u1": "B"}
_STRUCT = {"f2": "e", "f4": "f", "f8": "d", "i1": "b", "i2": "h", "i4": "i", "i8": "q", "u1": "B"}


class _Global:
    """A global the pickle named and this module allows: a marker, never a Python callable."""

    def __init__(self, name: str, code: str | None = None):
        self.name, self.code = name, code


_ORDERED_DICT = _Global("collections.OrderedDict")
_REBUILD = _Global("torch._utils._rebuild_tensor_v2")
# Keyed by the raw bytes of GLOBAL's two lines, which is what Python's and torch's unpicklers look up (decoded as
# UTF-8, never un-escaped); pickletools un-escapes them (``collection\x73`` would read as ``collections``).
_GLOBALS = {(b"collections", b"OrderedDict"): _ORDERED_DICT, (b"torch._utils", b"_rebuild_tensor_v2"): _REBUILD}
_GLOBALS.update({(b"torch", name.encode()): _Global(f"torch.{name}", code) for name, code in _STORAGES.items()})
# quantized state dicts (FORMATS.md, "Quantized weights"): the integer storages, read only by _rebuild_qtensor
_QSTORAGES = {"QInt8Storage": ("i1", "int8"), "QUInt8Storage": ("u1", "uint8")}
_QKIND = {f"torch.{name}": kind for name, (_, kind) in _QSTORAGES.items()}
_GLOBALS.update({(b"torch", name.encode()): _Global(f"torch.{name}", code) for name, (code, _) in _QSTORAGES.items()})
_REBUILD_Q = _Global("torch._utils._rebuild_qtensor")
_PARAMETER = _Global("torch._utils._rebuild_parameter")
_PER_TENSOR, _PER_CHANNEL = _Global("torch.per_tensor_affine"), _Global("torch.per_channel_affine")
_QDTYPE = (_Global("torch.qint8"), _Global("torch.quint8"))
_GLOBALS.update({(b"torch._utils", b"_rebuild_qtensor"): _REBUILD_Q,
                 (b"torch._utils", b"_rebuild_parameter"): _PARAMETER,
                 (b"torch", b"per_tensor_affine"): _PER_TENSOR, (b"torch", b"per_channel_affine"): _PER_CHANNEL,
                 (b"torch", b"qint8"): _QDTYPE[0], (b"torch", b"quint8"): _QDTYPE[1]})


class _Storage:
    """A storage the pickle loaded: its element type and values (an ``array``, or a list where none fits);
    ``quantized`` "int8" or "uint8" for a quantized storage, else ""."""

    def __init__(self, code: str, numel: int, values, quantized: str = ""):
        self.code, self.numel, self.values, self.quantized = code, numel, values, quantized


_LEAVES = (str, int, float, bool, type(None), Tensor)  # and the qint8/quint8 dtypes, which unpack_linears removes


def read_torch(data: bytes) -> object:
    """The unpickled object tree of a torch.save zip archive: dicts (OrderedDict becomes dict, key order kept),
    lists, tuples, str, int, float, bool, None, and Tensor leaves. Refuses everything docs/FORMATS.md refuses,
    with a one-line reason (``Reject``), never another exception. Cost: linear in ``len(data)``."""
    try:
        return _Archive(data if isinstance(data, bytes) else bytes(data)).read()
    except Reject:
        raise
    except zipfile.BadZipFile as exc:
        raise Reject(f"not a readable torch zip archive ({str(exc)[:80]})") from None
    except Exception as exc:  # the boundary: any malformation is a refusal
        raise Reject(f"unreadable torch file ({type(exc).__name__}: {str(exc)[:80]})") from None


def state_dict(data: bytes) -> dict[str, Tensor]:
    """docs/FORMATS.md's state dict of a torch.save zip archive: its top-level mapping, which must map strings
    to Tensors (``read_torch``'s refusals apply)."""
    obj = read_torch(data)
    if not isinstance(obj, dict):
        raise Reject(f"the torch file holds a {type(obj).__name__}, not a mapping of names to tensors")
    for key, value in obj.items():
        if not isinstance(key, str) or not isinstance(value, Tensor):
            raise Reject(f"the torch file's top-level entry {str(key)[:60]!r} is not a tensor under a string name: "
                         "the file is not a state dict")
    return obj


class _Archive:
    """One archive being read: its directory, storages loaded so far and the work budgets."""

    def __init__(self, data: bytes):
        self.data = data
        self.inflate_budget = INFLATION * len(data) + INFLATION_SLACK
        self.storage_bytes = 0
        self.decoded = 0
        self.gathered = 0
        self.storages: dict[str, _Storage] = {}
        self.begins: dict[str, int] = {}  # member name -> offset of its data in the file

    def read(self) -> object:
        if not self.data.startswith(b"PK\x03\x04"):
            if self.data.startswith(b"\x80"):
                raise Reject("a legacy (non-zip, torch < 1.6) torch file: only the zip format is read")
            raise Reject("not a torch zip archive")
        offset, size, count = _directory_span(self.data)
        with zipfile.ZipFile(io.BytesIO(self.data)) as z:
            infos = z.infolist()
            start = getattr(z, "start_dir", None)
        if start != offset or len(infos) != count \
                or sum(46 + len(_raw_name(i)) + len(i.extra) + len(i.comment) for i in infos) != size:
            raise Reject("the zip directory reads differently from the offset its end record states (bytes before "
                         "the archive, or a second directory)")
        self.members = self._directory(infos)
        self.big = False
        if "byteorder" in self.members:
            size = self.members["byteorder"].file_size
            order = bytes(self._member("byteorder", size)) if size <= 8 else b"(too long)"
            if order not in (b"little", b"big"):
                raise Reject(f"the byteorder member says {order[:16]!r}, not little or big")
            self.big = order == b"big"
        if "data.pkl" not in self.members:
            raise Reject("the torch archive has no data.pkl")
        pkl = bytes(self._member("data.pkl", self.members["data.pkl"].file_size))
        tree = _Interpreter(self).run(pkl)
        record = ".data/version" if ".data/version" in self.members else "version"  # torch's order
        if record not in self.members or self.members[record].file_size > 8:
            raise Reject("the torch archive has no version record of at most 8 bytes (torch.load requires one)")
        if not _version_ok(bytes(self._member(record, self.members[record].file_size))):
            raise Reject(f"the torch archive's {record} record is not a format version 1 to {MAX_VERSION} "
                         "(digits and an optional newline), which torch.load requires")
        return tree

    def _directory(self, infos: list[zipfile.ZipInfo]) -> dict[str, zipfile.ZipInfo]:
        """{name inside P: ZipInfo}, after the checks on names, folders and extents."""
        if not infos:
            raise Reject("the torch archive is empty")
        names = [info.orig_filename for info in infos]
        if len(set(names)) != len(names):
            raise Reject("the torch archive has two members with the same name")
        raws = [_raw_name(info) for info in infos]
        for name, raw in zip(names, raws, strict=True):
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError:
                text = None
            if text != name:
                raise Reject(f"the archive member name {raw[:60]!r} is not UTF-8 that zipfile decodes the same way "
                             "(torch reads names as UTF-8 bytes, zipfile without the UTF-8 flag as cp437)")
        if len({raw.lower() for raw in raws}) != len(raws):
            raise Reject("the torch archive has two members whose names differ only in case (torch looks names up "
                         "ignoring ASCII case)")
        folder = names[0].split("/", 1)[0]
        members = {}
        for info, name in zip(infos, names, strict=True):
            head, sep, rest = name.partition("/")
            if not sep or head != folder or not folder:
                raise Reject(f"the archive member {name[:60]!r} is not in the archive's one top-level folder")
            key = rest[5:] if rest.startswith("data/") else None
            if not (rest == "data.pkl" or rest in _BOOKKEEPING or (key and "/" not in key)) \
                    or "\x00" in name or "\\" in name:
                raise Reject(f"the archive member {name[:60]!r} is not one torch.save writes")
            if info.flag_bits & 0x41:
                raise Reject(f"the archive member {name[:60]!r} is encrypted")
            if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
                raise Reject(f"the archive member {name[:60]!r} is compressed with method {info.compress_type} "
                             "(torch reads stored and deflated members only)")
            members[rest] = info
        extents = sorted(self._extent(info) for info in infos)
        for (_, end), (start, _) in zip(extents, extents[1:], strict=False):
            if start < end:
                raise Reject("two archive members overlap")
        return members

    def _extent(self, info: zipfile.ZipInfo) -> tuple[int, int]:
        """(start of the local header, end of the member's data), checked against the central directory."""
        start = info.header_offset
        if start < 0 or start + 30 > len(self.data):
            raise Reject(f"the archive member {info.orig_filename[:60]!r} lies outside the file")
        sig, _, _, method, _, _, _, _, _, name_len, extra_len = struct.unpack(
            "<4sHHHHHIIIHH", self.data[start:start + 30])
        name = _raw_name(info)
        if sig != b"PK\x03\x04" or method != info.compress_type or self.data[start + 30:start + 30 + name_len] != name:
            raise Reject(f"the archive member {info.orig_filename[:60]!r} has a local header that disagrees "
                         "with the directory")
        begin = start + 30 + name_len + extra_len
        end = begin + info.compress_size
        if end > len(self.data):
            raise Reject(f"the archive member {info.orig_filename[:60]!r} runs past the end of the file")
        self.begins[info.orig_filename] = begin
        return start, end

    def _member(self, name: str, size: int) -> bytes | memoryview:
        """The bytes of member P/<name>, which the directory must declare as exactly ``size`` bytes; refused
        before any decompression when it does not, or when the inflation budget would be exceeded."""
        info = self.members[name]
        if info.file_size != size:
            raise Reject(f"the archive member {name[:60]!r} holds {info.file_size} bytes, {size} expected")
        if size > self.inflate_budget:
            raise Reject(f"the archive member {name[:60]!r} decompresses to {size} bytes, more than the "
                         f"2^28 + {INFLATION} x (file size) bytes the reader decompresses in all")
        self.inflate_budget -= size
        begin = self.begins[info.orig_filename]
        raw = memoryview(self.data)[begin:begin + info.compress_size]
        if info.compress_type == zipfile.ZIP_STORED:
            if info.compress_size != size:
                raise Reject(f"the stored archive member {name[:60]!r} has two sizes")
            body = raw
        else:
            inflater = zlib.decompressobj(-15)
            body = inflater.decompress(raw, size + 1)
            if len(body) != size or not inflater.eof or inflater.unused_data:
                raise Reject(f"the archive member {name[:60]!r} does not decompress to exactly {size} bytes")
        if zlib.crc32(body) != info.CRC:
            raise Reject(f"the archive member {name[:60]!r} fails its CRC check")
        return body

    def storage(self, pid: object) -> _Storage:
        """The storage a persistent id names, read once per key."""
        if type(pid) is not tuple or len(pid) != 5 or pid[0] != "storage" or type(pid[0]) is not str:
            raise Reject("a persistent id that is not ('storage', class, key, location, numel)")
        _, cls, key, location, numel = pid
        if not isinstance(cls, _Global) or cls.code is None or type(key) is not str or type(location) is not str \
                or type(numel) is not int or numel < 0:
            raise Reject("a persistent id that is not ('storage', class, key, location, numel)")
        if not _restorable(location):
            raise Reject(f"storage {key[:40]!r} has the location {location[:40]!r}, which torch.load does not restore "
                         "to values (cpu, cuda and cuda:N are read)")
        if key in self.storages:
            known = self.storages[key]
            if (known.code, known.numel, known.quantized) != (cls.code, numel, _QKIND.get(cls.name, "")):
                raise Reject(f"storage {key[:40]!r} is declared with two types or sizes")
            return known
        if "/" in key or f"data/{key}" not in self.members:
            raise Reject(f"storage {key[:40]!r} has no archive member data/{key[:40]}")
        self.decoded += numel  # each entry becomes a Python number: bounded by the file, not by its inflation
        if self.decoded > len(self.data) + DECODED_SLACK:
            raise Reject(f"the storages hold {self.decoded:,} entries in a file of {len(self.data):,} bytes: beyond "
                         f"the checker's bound of one entry per byte of the file (+ {DECODED_SLACK:,})")
        body = self._member(f"data/{key}", numel * WIDTH[cls.code])
        self.storage_bytes += len(body)
        storage = _Storage(cls.code, numel, _decode(body, cls.code, self.big), _QKIND.get(cls.name, ""))
        self.storages[key] = storage
        return storage

    def qtensor(self, args: object, odicts: dict[int, dict]) -> Tensor:
        """``_rebuild_qtensor(storage, offset, size, stride, quantizer_params, requires_grad, backward_hooks)``:
        the integers q of a quantized storage as the exact values scale·(q − zero point), by
        ``readers.quantized``; quantizer_params (per_tensor_affine, scale, zero_point) or (per_channel_affine,
        scales, zero_points, axis) with 1-D float64 and int64 tensors (or lists) per channel."""
        if type(args) is not tuple or len(args) != 7:
            raise Reject("_rebuild_qtensor takes 7 arguments")
        storage, params = args[0], args[4]
        if not isinstance(storage, _Storage) or not storage.quantized:
            raise Reject("_rebuild_qtensor on something that is not a quantized storage")
        if args[5] is not False:
            raise Reject("a quantized tensor that requires grad (torch.load refuses it)")
        ints = self.tensor((*args[:4], args[5], args[6]), odicts, quantized=True)
        if type(params) is not tuple or not params or params[0] not in (_PER_TENSOR, _PER_CHANNEL):
            raise Reject("a quantized tensor whose scheme is not per_tensor_affine or per_channel_affine")
        if params[0] is _PER_TENSOR:
            if len(params) != 3 or type(params[1]) is not float or type(params[2]) is not int:
                raise Reject("per_tensor_affine quantizer parameters are not (scheme, scale, zero point)")
            if math.isfinite(params[1]) and struct.unpack("<f", struct.pack("<f", params[1]))[0] != params[1]:
                raise Reject("a per-tensor scale that is not a float32 (torch dequantizes with it rounded to one)")
            return dequantized(ints, [params[1]], [params[2]], None, storage.quantized)
        if len(params) != 4 or type(params[3]) is not int or isinstance(params[1], Tensor) != isinstance(params[2],
                                                                                                      Tensor):
            raise Reject("per_channel_affine quantizer parameters are not (scheme, scales, zero points, axis), both "
                         "tensors or both lists")
        scales, zeros = (_channel_list(v, kind) for v, kind in ((params[1], float), (params[2], int)))
        return dequantized(ints, scales, zeros, params[3], storage.quantized)

    def tensor(self, args: object, odicts: dict[int, dict], quantized: bool = False) -> Tensor:
        """``_rebuild_tensor_v2(*args)``; ``odicts`` are the dicts that OrderedDict() made, by id."""
        if type(args) is not tuple or len(args) not in (6, 7):
            raise Reject("_rebuild_tensor_v2 takes 6 or 7 arguments")
        storage, offset, size, stride, requires_grad, backward_hooks = args[:6]
        metadata = args[6] if len(args) == 7 else None
        if not isinstance(storage, _Storage):
            raise Reject("_rebuild_tensor_v2 on something that is not a storage")
        if storage.quantized and not quantized:
            raise Reject("_rebuild_tensor_v2 on a quantized storage (only _rebuild_qtensor reads one)")
        if type(offset) is not int or offset < 0 or type(size) is not tuple or type(stride) is not tuple \
                or len(size) != len(stride) or any(type(d) is not int or d < 0 for d in size + stride):
            raise Reject("a tensor with a malformed offset, size or stride (need non-negative ints)")
        if len(size) > MAX_DIMS:
            raise Reject(f"a tensor with {len(size)} dimensions (at most {MAX_DIMS})")
        if math.prod(d for d in size if d) >= EXTENT_LIMIT:
            raise Reject(f"a tensor of size {str(size)[:80]}: its non-zero sizes multiply to 2^60 or more")
        if type(requires_grad) is not bool:
            raise Reject("a tensor whose requires_grad is not a bool")
        if type(backward_hooks) is not dict or id(backward_hooks) not in odicts or backward_hooks:
            raise Reject("a tensor with backward hooks (must be an empty OrderedDict)")
        if metadata is not None and (type(metadata) is not dict or metadata):
            raise Reject("a tensor with metadata (must be empty or None)")
        count = math.prod(size)
        if count and offset + sum((d - 1) * s for d, s in zip(size, stride, strict=True)) >= storage.numel:
            raise Reject(f"a tensor (offset {offset}, size {size}, stride {stride}) reaches past its storage of "
                         f"{storage.numel} elements")
        if self.gathered + count > GATHER_PER_BYTE * self.storage_bytes + GATHER_SLACK:
            raise Reject(f"the tensors hold more than {GATHER_PER_BYTE} elements per byte of their storages "
                         "(repeated or expanded views beyond the reader's bound)")
        self.gathered += count
        return Tensor(size, _gather(storage.values, offset, size, stride), False, storage.code)


MAX_VERSION = 10  # caffe2's kMaxSupportedFileFormatVersion; the minimum is 1
DECODED_SLACK = 1 << 20  # storage entries an archive may decode beyond one per byte of the file


def _version_ok(raw: bytes) -> bool:
    """A version record torch.load accepts, read strictly: decimal digits (no sign, no leading zero), an optional
    newline, a value from 1 to MAX_VERSION."""
    digits = raw[:-1] if raw.endswith(b"\n") else raw
    return digits.isdigit() and digits.isascii() and digits[:1] != b"0" and 1 <= int(digits) <= MAX_VERSION


def _restorable(location: str) -> bool:
    """A storage location that torch.load restores to values: "cpu", "cuda" or "cuda:N" (it refuses unknown ones and
    gives "meta" storages no values)."""
    if location in ("cpu", "cuda"):
        return True
    index = location[len("cuda:"):]
    return location.startswith("cuda:") and index.isdigit() and index.isascii() and len(index) <= 4


def _raw_name(info: zipfile.ZipInfo) -> bytes:
    """A member's name as the bytes in the zip directory (zipfile decoded them as UTF-8 under flag 0x800, else as
    cp437, which maps each byte to its own character)."""
    return info.orig_filename.encode("utf-8" if info.flag_bits & 0x800 else "cp437")


def _directory_span(data: bytes) -> tuple[int, int, int]:
    """(offset, size, entries) of the central directory where torch's reader (miniz) finds it: at the offset the
    end record states, or for zip64 the zip64 end record its locator points to. Refused unless the end record ends
    the file (no comment), a zip64 end record (no extensible data) sits right before its locator, and the directory
    ends right where the record after it starts: then zipfile, which infers the offsets from the records' positions,
    reads the same directory."""
    end = len(data) - 22
    if end < 0 or data[end:end + 4] != b"PK\x05\x06":
        raise Reject("a damaged or truncated zip archive, or one with a comment or bytes after it (its end record is "
                     "not the file's last 22 bytes)")
    _, disk, cd_disk, here, total, size, offset, _ = struct.unpack("<4sHHHHIIH", data[end:])
    record = end
    if end >= 20 and data[end - 20:end - 16] == b"PK\x06\x07":
        _, cd_disk64, record, disks = struct.unpack("<4sIQI", data[end - 20:end])
        if record != end - 76 or cd_disk64 != 0 or disks != 1:
            raise Reject("the zip64 locator does not point at a zip64 end record right before it (torch follows the "
                         "locator, zipfile reads the record before it)")
        sig, length, _, _, disk, cd_disk, here, total, size, offset = struct.unpack("<4sQHHIIQQQQ",
                                                                                    data[record:end - 20])
        if sig != b"PK\x06\x06" or length != 44:
            raise Reject("the zip64 end record is malformed or holds extensible data")
    if disk or cd_disk or here != total:
        raise Reject("a multi-disk zip archive")
    if offset + size != record:
        raise Reject("the zip directory is not where the end record states (bytes prepended to the archive, or a "
                     "second directory)")
    return offset, size, total


def _decode(body: bytes | memoryview, code: str, big: bool):
    """The values of a storage's bytes: an ``array`` (list where no array type fits), in the declared order."""
    swap = big != (sys.byteorder == "big")
    if code == "bf16":  # the upper half of a float32: interleave two zero bytes per element, read as <f4
        body = bytes(body)
        wide = bytearray(2 * len(body))
        wide[2::4], wide[3::4] = (body[1::2], body[0::2]) if big else (body[0::2], body[1::2])
        values = array("f")
        values.frombytes(wide)
        if sys.byteorder == "big":
            values.byteswap()
        return values
    if code == "f2":
        count = len(body) // 2
        return array("d", struct.unpack(f"{'>' if big else '<'}{count}e", body))
    width = WIDTH[code]
    if array(_ARRAY[code]).itemsize == width:
        values = array(_ARRAY[code])
        values.frombytes(body)
        if swap:
            values.byteswap()
        return values
    return [x for (x,) in struct.iter_unpack(("<>"[big]) + _STRUCT[code], body)]  # pragma: no cover


def _gather(values, offset: int, size: tuple, stride: tuple):
    """values[offset + Σ idx_i·stride_i] over ``size`` in C order (the caller checked the bounds); each
    innermost run is one slice."""
    count = math.prod(size)
    if count == 0:
        return values[:0]
    dims = [(d, s) for d, s in zip(size, stride, strict=True) if d != 1]
    contiguous, step = True, 1
    for d, s in reversed(dims):
        contiguous = contiguous and s == step
        step *= d
    if contiguous:
        return values if offset == 0 and count == len(values) else values[offset:offset + count]
    *outer, (last, last_stride) = dims
    starts = [offset]
    for d, s in outer:
        starts = [b + i * s for b in starts for i in range(d)]
    out = values[:0]
    if last_stride == 0:
        for b in starts:
            out += values[b:b + 1] * last
    else:
        span = (last - 1) * last_stride + 1
        for b in starts:
            out += values[b:b + span:last_stride]
    return out


# The opcodes read (a subset of torch's weights-only unpickler's); every other opcode refuses the file.
_ALLOWED = {"PROTO", "STOP", "MARK", "GLOBAL", "REDUCE", "BUILD", "BINPERSID", "APPEND", "APPENDS", "SETITEM",
            "SETITEMS", "TUPLE", "TUPLE1", "TUPLE2", "TUPLE3", "NONE", "NEWFALSE", "NEWTRUE", "EMPTY_TUPLE",
            "EMPTY_LIST", "EMPTY_DICT", "BININT", "BININT1", "BININT2", "LONG1", "BINFLOAT", "BINUNICODE",
            "BINGET", "LONG_BINGET", "BINPUT", "LONG_BINPUT"}
_CONSTANTS = {"NONE": None, "NEWFALSE": False, "NEWTRUE": True, "EMPTY_TUPLE": ()}


class _Interpreter:
    """The pickle machine over plain values, with MARK fences: no opcode reaches below the innermost MARK."""

    def __init__(self, archive: _Archive):
        self.archive = archive
        self.stack: list = []
        self.fences: list[int] = []
        self.memo: dict[int, object] = {}
        self.odicts: dict[int, dict] = {}  # id -> the dicts OrderedDict() made (kept alive, so ids stay unique)
        self.hooks: list[dict] = []  # every tensor's backward_hooks: still empty when the pickle ends
        self.dropped: list = []  # BUILD states of OrderedDicts: read, validated, ignored

    def pop(self) -> object:
        if len(self.stack) <= (self.fences[-1] if self.fences else 0):
            raise Reject("the pickle pops past a MARK or an empty stack")
        return self.stack.pop()

    def top(self) -> object:
        if len(self.stack) <= (self.fences[-1] if self.fences else 0):
            raise Reject("the pickle reads past a MARK or an empty stack")
        return self.stack[-1]

    def pop_mark(self) -> list:
        if not self.fences:
            raise Reject("the pickle closes a MARK it did not open")
        fence = self.fences.pop()
        items = self.stack[fence:]
        del self.stack[fence:]
        return items

    def run(self, pkl: bytes) -> object:
        end = None
        ops = pickletools.genops(pkl)
        while True:
            try:
                op, arg, pos = next(ops)
            except StopIteration:
                break
            except ValueError as exc:  # genops's word for a malformed opcode or argument (incl. UnicodeError)
                raise Reject(f"data.pkl is not a well-formed pickle ({str(exc)[:80]})") from None
            name = op.name
            if name not in _ALLOWED:
                raise Reject(f"the pickle uses the opcode {name}, which a torch.save state dict does not need")
            if pos == 0 and name != "PROTO":
                raise Reject("data.pkl does not start with PROTO 2 or 3 (a pickle of protocol 0 or 1)")
            if name == "STOP":
                end = pos + 1
                break
            if name == "GLOBAL":  # the two lines as the unpickler reads them (genops checked both end in \n)
                eol = pkl.index(b"\n", pos + 1)
                arg = (pkl[pos + 1:eol], pkl[eol + 1:pkl.index(b"\n", eol + 1)])
            self.step(name, arg)
        if end != len(pkl):
            raise Reject("data.pkl has bytes after its STOP")
        if self.fences or len(self.stack) != 1:
            raise Reject("the pickle leaves more than its result on the stack")
        result = self.stack[0]
        _check_tree([result, *self.dropped])
        result = unpack_linears(result)
        if any(self.hooks):
            raise Reject("a tensor with backward hooks (must be an empty OrderedDict)")
        return result

    def step(self, name: str, arg: object) -> None:
        stack = self.stack
        if name in _CONSTANTS:
            stack.append(_CONSTANTS[name])
        elif name in ("BININT", "BININT1", "BININT2", "LONG1", "BINFLOAT", "BINUNICODE"):
            stack.append(arg)
        elif name == "PROTO":
            if arg not in (2, 3):
                raise Reject(f"pickle protocol {arg}: only protocols 2 (what torch.save writes) and 3 are read")
        elif name == "MARK":
            self.fences.append(len(stack))
        elif name == "EMPTY_LIST":
            stack.append([])
        elif name == "EMPTY_DICT":
            stack.append({})
        elif name in ("BINPUT", "LONG_BINPUT"):
            if len(self.memo) >= MAX_MEMO and arg not in self.memo:
                raise Reject("the pickle's memo is too large")
            self.memo[arg] = self.top()
        elif name in ("BINGET", "LONG_BINGET"):
            if arg not in self.memo:
                raise Reject(f"the pickle reads memo entry {arg}, which it never wrote")
            stack.append(self.memo[arg])
        elif name == "TUPLE":
            stack.append(tuple(self.pop_mark()))
        elif name in ("TUPLE1", "TUPLE2", "TUPLE3"):
            items = [self.pop() for _ in range(int(name[-1]))]
            stack.append(tuple(reversed(items)))
        elif name == "APPEND":
            item = self.pop()
            self.list_target().append(item)
        elif name == "APPENDS":
            items = self.pop_mark()
            self.list_target().extend(items)
        elif name == "SETITEM":
            value, key = self.pop(), self.pop()
            self.set_items([key, value])
        elif name == "SETITEMS":
            self.set_items(self.pop_mark())
        elif name == "GLOBAL":  # arg: the raw (module, name) lines
            if arg not in _GLOBALS:
                module, attr = (part.decode("utf-8", "backslashreplace") for part in arg)
                raise Reject(f"the pickle names the global {module[:40]!r}.{attr[:40]!r}, which is not allowed")
            stack.append(_GLOBALS[arg])
        elif name == "BINPERSID":
            stack.append(self.archive.storage(self.pop()))
        elif name == "REDUCE":
            args = self.pop()
            func = self.pop()
            stack.append(self.reduce(func, args))
        elif name == "BUILD":
            state = self.pop()
            target = self.top()
            if id(target) not in self.odicts or type(state) is not dict or set(state) != {"_metadata"}:
                raise Reject("the pickle sets attributes (BUILD) other than an OrderedDict's _metadata")
            self.dropped.append(state)
        else:  # pragma: no cover (every allowed opcode is handled above)
            raise Reject(f"the pickle opcode {name} is not handled")

    def list_target(self) -> list:
        target = self.top()
        if type(target) is not list:
            raise Reject("the pickle appends to something that is not a list")
        return target

    def set_items(self, items: list) -> None:
        target = self.top()
        if type(target) is not dict or len(items) % 2:
            raise Reject("the pickle sets items on something that is not a dict")
        for key, value in zip(items[::2], items[1::2], strict=True):
            if not (type(key) in (str, bool, type(None)) or (type(key) is int and -_HASH_LIMIT < key < _HASH_LIMIT)):
                raise Reject(f"a dict key of type {type(key).__name__} (keys are strings, ints, bools or None)")
            if key in target:
                raise Reject(f"the dict key {str(key)[:60]!r} is set twice")
            target[key] = value

    def reduce(self, func: object, args: object) -> object:
        if func is _ORDERED_DICT:
            if args != () or type(args) is not tuple:
                raise Reject("OrderedDict is called with arguments")
            made: dict = {}
            self.odicts[id(made)] = made
            return made
        if func is _REBUILD:
            tensor = self.archive.tensor(args, self.odicts)
            self.hooks.append(args[5])
            return tensor
        if func is _REBUILD_Q:
            tensor = self.archive.qtensor(args, self.odicts)
            self.hooks.append(args[6])
            return tensor
        if func is _PARAMETER:  # (tensor, requires_grad, backward_hooks): the tensor itself
            if type(args) is not tuple or len(args) != 3 or not isinstance(args[0], Tensor) \
                    or type(args[1]) is not bool or type(args[2]) is not dict or id(args[2]) not in self.odicts:
                raise Reject("_rebuild_parameter takes (tensor, requires_grad, an OrderedDict of hooks)")
            if args[1] and args[0].quantized:
                raise Reject("a quantized Parameter that requires grad (torch.load refuses it)")
            self.hooks.append(args[2])
            return args[0]
        what = func.name if isinstance(func, _Global) else f"a {type(func).__name__}"
        raise Reject(f"the pickle calls {what[:60]}, which is not allowed")


def _check_tree(roots: list) -> None:
    """Every value reachable from ``roots`` is a plain value or a Tensor, there is no cycle, and containers
    nest at most MAX_DEPTH deep; one visit per container (the memo makes a DAG, not a tree)."""
    height: dict[int, int] = {}
    open_: set[int] = set()
    pending = list(roots)
    while pending:
        node = pending[-1]
        kind = type(node)
        if kind not in (dict, list, tuple):
            pending.pop()
            if not isinstance(node, _LEAVES) and node not in _QDTYPE:
                raise _foreign(node)
            continue
        nid = id(node)
        if nid in height:
            pending.pop()
            continue
        kids = [v for v in (node.values() if kind is dict else node) if type(v) in (dict, list, tuple)]
        if nid not in open_:
            open_.add(nid)
            for value in node.values() if kind is dict else node:
                if type(value) in (dict, list, tuple):
                    if id(value) in open_:
                        raise Reject("the pickle builds a cyclic structure")
                    if id(value) not in height:
                        pending.append(value)
                elif not isinstance(value, _LEAVES) and not any(value is d for d in _QDTYPE):
                    raise _foreign(value)
            continue
        height[nid] = 1 + max((height[id(v)] for v in kids), default=0)
        if height[nid] > MAX_DEPTH:
            raise Reject(f"the pickle nests containers more than {MAX_DEPTH} deep")
        open_.discard(nid)
        pending.pop()


def _channel_list(value: object, kind: type) -> list:
    """Per-channel scales (float64) or zero points (int64): a 1-D tensor of that type, or a list of such numbers."""
    code = "f8" if kind is float else "i8"
    if isinstance(value, Tensor) and len(value.shape) == 1 and value.code == code and not value.quantized:
        return value.flat()
    if type(value) is list and all(type(v) is kind for v in value):
        return value
    raise Reject(f"per-channel {'scales' if kind is float else 'zero points'} that are not a 1-D "
                 f"{'float64' if kind is float else 'int64'} tensor or a list")


_PACKED = "_packed_params._packed_params"


def unpack_linears(tree: object) -> object:
    """torch's dynamic quantized Linear, as FORMATS.md reads it: in a dict holding ``P._packed_params.
    _packed_params`` = (quantized weight, float bias or None), that entry becomes ``P.weight`` and ``P.bias`` in its
    place, ``P._packed_params.dtype`` (qint8 or quint8) is dropped, and ``P.scale`` and ``P.zero_point`` are
    dropped when they are one-element tensors holding 1 and 0 (a dynamic layer's); other values, or another key
    ending in ``.scale`` or ``.zero_point`` in that dict, mean a static quantized model: refused. A qint8 or quint8
    anywhere else is refused. One visit per container."""
    seen: set[int] = set()
    pending = [tree]
    while pending:
        node = pending.pop()
        if any(node is d for d in _QDTYPE):
            raise Reject("a quantized dtype outside a quantized Linear's _packed_params.dtype")
        if type(node) not in (dict, list, tuple) or id(node) in seen:
            continue
        seen.add(id(node))
        if type(node) is dict and any(_packed(k) for k in node):
            _unpack(node)
        pending.extend(node.values() if type(node) is dict else node)
    return tree


def _packed(key: object) -> bool:
    return type(key) is str and (key == _PACKED or key.endswith("." + _PACKED))


def _one(t: object, value: int) -> bool:
    return isinstance(t, Tensor) and not t.quantized and math.prod(t.shape) == 1 and t.flat()[0] == value and \
        (value == 1 or t.code in ("i1", "i2", "i4", "i8", "u1"))


def _unpack(node: dict) -> None:
    prefixes = [k[:-len(_PACKED)] for k in node if _packed(k)]
    owned = {p + s for p in prefixes for s in ("scale", "zero_point", "_packed_params.dtype")}
    if any(type(k) is str and k not in owned and k.rsplit(".", 1)[-1] in ("scale", "zero_point") for k in node):
        raise Reject("a scale or zero point beside quantized Linear layers: a static quantized model (activations "
                     "rounded to 8 bits), not a ReLU network")
    out: dict = {}
    for key, value in node.items():
        if key in owned:
            continue
        if not _packed(key):
            out[key] = value
            continue
        prefix = key[:-len(_PACKED)]
        if not any(node.get(prefix + "_packed_params.dtype") is d for d in _QDTYPE):
            raise Reject(f"{key[:60]!r} without a _packed_params.dtype of qint8 or quint8")
        scale, zero = node.get(prefix + "scale"), node.get(prefix + "zero_point")
        if (scale, zero) != (None, None) and not (_one(scale, 1) and _one(zero, 0)):
            raise Reject(f"the quantized Linear {key[:60]!r} has an output scale and zero point other than 1 and 0: "
                         "a static quantized layer (outputs rounded to 8 bits), not a ReLU network")
        if type(value) is not tuple or len(value) != 2 or not isinstance(value[0], Tensor) or not value[0].quantized \
                or not (value[1] is None or (isinstance(value[1], Tensor) and not value[1].quantized
                                             and value[1].code == "f4")):
            raise Reject(f"{key[:60]!r} is not (a quantized weight, a float32 bias or None)")
        weight = value[0]
        # what torch's dynamic Linear computes with: a qint8 weight, per tensor or per output row, float32 scales
        if node[prefix + "_packed_params.dtype"] is not _QDTYPE[0] or not weight.quantized.startswith("int8,") \
                or weight.qaxis not in (None, 0) or any(struct.unpack("<f", struct.pack("<f", x))[0] != x
                                                         for x in weight.qscales):
            raise Reject(f"the quantized Linear {key[:60]!r} is not a qint8 weight scaled per tensor or per output "
                         "row by float32 scales")
        if prefix + "weight" in node or prefix + "bias" in node:
            raise Reject(f"{key[:60]!r} beside a {prefix[:60]}weight or bias of its own")
        out[prefix + "weight"] = value[0]
        if value[1] is not None:
            out[prefix + "bias"] = value[1]
    node.clear()
    node.update(out)


def _foreign(value: object) -> Reject:
    what = value.name if isinstance(value, _Global) else "storage" if isinstance(value, _Storage) else \
        type(value).__name__
    return Reject(f"the pickle leaves a {what[:60]} in its result (only dicts, lists, tuples, strings, numbers, "
                  "None and tensors may occur)")
