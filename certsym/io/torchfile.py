"""torch.save zip archives read without torch: the producer's reader of docs/FORMATS.md, section "torch".

An archive is a zip whose members all lie in one folder P: ``P/data.pkl`` (a pickle), the storages
``P/data/<key>`` and a few bookkeeping members. The pickle is never executed: it is read by a
``pickle.Unpickler`` whose ``find_class`` returns stand-ins for exactly the globals FORMATS.md admits
(``collections.OrderedDict``, ``torch._utils._rebuild_tensor_v2`` and nine storage classes) and refuses
every other global, so no code of the file's choosing runs and torch is never imported. A persistent id
``('storage', type, key, location, numel)`` becomes the numel elements of ``P/data/<key>`` (its size in the
zip directory must be numel × itemsize, checked before a byte is decompressed), in the byte order that
``P/byteorder`` names (absent: little). ``_rebuild_tensor_v2`` becomes a numpy array: the strided view of the
storage, after checking that its largest index lies inside it, copied to C order and native byte order;
bfloat16 becomes float32 holding the same values. The result is a tree of dicts (an OrderedDict as a dict,
key order kept), lists, tuples, str, int, float, bool, None and arrays; anything else refuses the file.

Every refusal is an ``InputError`` whose one-line message starts with the path; no other exception escapes.

Cost: time linear in the bytes of data.pkl and of the storages the pickle names, plus the elements of the
tensors built. Memory: those storages, plus one C-order copy of each tensor (a tensor whose strides repeat
elements, e.g. a stride of 0, can be larger than its storage). A memo index beyond the pickle's length, which
would make the C unpickler allocate in proportion to the index, is refused before unpickling.
"""

from __future__ import annotations

import io
import math
import os
import pickle
import pickletools
import zipfile

import numpy as np

from certsym.errors import InputError

__all__ = ["load_torch", "read_state_dict"]

_BOOKKEEPING = frozenset({"version", ".data/version", "byteorder", ".data/serialization_id", ".format_version",
                          ".storage_alignment"})
_ZIP_MAGIC = b"PK\x03\x04"
_LEGACY_MAGIC = b"\x8a\x0a\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19"  # LONG1 0x1950a86a20f9469cfc6c, torch < 1.6


class _Refused(Exception):
    """A reason to refuse the file; ``load_torch`` prefixes the path."""


def _text(value: object, limit: int = 60) -> str:
    """A printable one-line rendering of a name taken from the file, at most ``limit`` characters."""
    text = value if isinstance(value, str) else repr(value)
    text = "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)
    return text if len(text) <= limit else text[:limit] + "..."


class _StorageType:
    """Stand-in for a torch storage class: its name and element type (a numpy code; bfloat16 as raw u2)."""

    __slots__ = ("name", "code", "itemsize")

    def __init__(self, name: str, code: str, itemsize: int):
        self.name, self.code, self.itemsize = name, code, itemsize

    def __repr__(self) -> str:
        return f"torch.{self.name}"

    def __call__(self, *args: object, **kwargs: object) -> None:
        raise _Refused(f"refused: the pickle calls torch.{self.name}; storages come only from the archive's members")

    def __setstate__(self, state: object) -> None:
        raise _Refused(f"refused: the pickle sets the state of torch.{self.name}")


_STORAGE_TYPES = {name: _StorageType(name, code, size) for name, code, size in (
    ("HalfStorage", "f2", 2), ("BFloat16Storage", "bf16", 2), ("FloatStorage", "f4", 4), ("DoubleStorage", "f8", 8),
    ("LongStorage", "i8", 8), ("IntStorage", "i4", 4), ("ShortStorage", "i2", 2), ("CharStorage", "i1", 1),
    ("ByteStorage", "u1", 1))}


class _Storage:
    """A storage read from ``P/data/<key>``: ``array`` holds its numel elements in the file's byte order
    (bfloat16 as their 16-bit patterns)."""

    __slots__ = ("type", "key", "numel", "array")
    __hash__ = None  # type: ignore[assignment]

    def __init__(self, stype: _StorageType, key: str, numel: int, array: np.ndarray):
        self.type, self.key, self.numel, self.array = stype, key, numel, array

    def __repr__(self) -> str:
        return f"<storage {self.key!r}: {self.numel} {self.type!r}>"

    def __setstate__(self, state: object) -> None:
        raise _Refused("refused: the pickle sets the state of a storage")


class _Tensor:
    """A tensor built by ``_rebuild_tensor_v2``: a C-order, native-order numpy array (unhashable, immutable
    to the pickle: no item assignment, no state)."""

    __slots__ = ("array",)
    __hash__ = None  # type: ignore[assignment]

    def __init__(self, array: np.ndarray):
        self.array = array

    def __repr__(self) -> str:
        return f"<tensor {self.array.dtype} {self.array.shape}>"

    def __setstate__(self, state: object) -> None:
        raise _Refused("refused: the pickle sets the state of a tensor")


class _OrderedDict(dict):
    """Stand-in for ``collections.OrderedDict``: a dict (insertion order is kept) whose only accepted BUILD
    state is ``{"_metadata": ...}``, which torch adds to state dicts and which does not change the weights."""

    __slots__ = ()

    def __setstate__(self, state: object) -> None:
        if type(state) is not dict or set(state) != {"_metadata"}:
            raise _Refused("refused: an OrderedDict carries a state other than torch's {'_metadata': ...}")


def _is_int(value: object) -> bool:
    return type(value) is int


def _int_sequence(value: object) -> bool:
    return type(value) in (tuple, list) and all(_is_int(v) and v >= 0 for v in value)


class _Rebuild:
    """Stand-in for ``torch._utils._rebuild_tensor_v2(storage, offset, size, stride, requires_grad,
    backward_hooks[, metadata])``."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "torch._utils._rebuild_tensor_v2"

    def __setstate__(self, state: object) -> None:
        raise _Refused("refused: the pickle sets the state of _rebuild_tensor_v2")

    def __call__(self, *args: object) -> _Tensor:
        if len(args) not in (6, 7):
            raise _Refused(f"refused: _rebuild_tensor_v2 called with {len(args)} arguments (torch passes 6 or 7)")
        storage, offset, size, stride, requires_grad, hooks = args[:6]
        metadata = args[6] if len(args) == 7 else None
        if not isinstance(storage, _Storage):
            raise _Refused("refused: _rebuild_tensor_v2 is given something other than a storage")
        if not _is_int(offset) or offset < 0 or not _int_sequence(size) or not _int_sequence(stride) \
                or len(size) != len(stride):
            raise _Refused(f"refused: a tensor with offset {_text(offset)}, size {_text(size)}, stride "
                           f"{_text(stride)} (need non-negative ints, one stride per dimension)")
        if type(requires_grad) is not bool:
            raise _Refused("refused: a tensor whose requires_grad is not a bool")
        if type(hooks) is not _OrderedDict or hooks:
            raise _Refused("refused: a tensor with backward hooks (torch saves an empty OrderedDict)")
        if metadata is not None and (type(metadata) not in (dict, _OrderedDict) or metadata):
            raise _Refused(f"refused: a tensor with metadata {_text(metadata)} (a negated or conjugated view); "
                           "save the tensor with .clone() or .resolve_neg()")
        return _Tensor(_build(storage, offset, tuple(size), tuple(stride)))


_REBUILD = _Rebuild()


def _build(storage: _Storage, offset: int, size: tuple, stride: tuple) -> np.ndarray:
    """The tensor's values in C order of ``size``, native byte order (bfloat16 widened to float32)."""
    raw = storage.array
    if math.prod(size) == 0:
        out = np.empty(size, dtype=raw.dtype)
    else:
        last = offset + sum((s - 1) * t for s, t in zip(size, stride, strict=True))
        if last >= storage.numel:
            raise _Refused(f"refused: a tensor of size {_text(size)}, stride {_text(stride)} and offset {offset} "
                           f"reaches element {_text(last)} of storage {_text(repr(storage.key))}, which has "
                           f"{storage.numel}")
        view = np.lib.stride_tricks.as_strided(raw[offset:], shape=size,
                                               strides=tuple(t * raw.itemsize for t in stride), writeable=False)
        out = np.array(view, order="C")
    if storage.type.code == "bf16":
        out = (out.astype(np.uint32) << 16).view(np.float32)
    else:
        out = out.astype(out.dtype.newbyteorder("="), copy=False)
    return out if out.flags.c_contiguous else out.copy(order="C")  # (np.ascontiguousarray makes 0-d 1-d)


class _Unpickler(pickle.Unpickler):
    """Resolves only FORMATS.md's globals (to stand-ins) and storage persistent ids (through ``storage``)."""

    def __init__(self, data: bytes, storage):
        super().__init__(io.BytesIO(data))
        self._storage = storage

    def find_class(self, module: str, name: str) -> object:
        if module == "collections" and name == "OrderedDict":
            return _OrderedDict
        if module == "torch._utils" and name == "_rebuild_tensor_v2":
            return _REBUILD
        if module == "torch" and name in _STORAGE_TYPES:
            return _STORAGE_TYPES[name]
        raise _Refused(f"refused: the pickle names the global {_text(module)}.{_text(name)}; certsym reads only "
                       "tensors, storages and ordered dicts")

    def persistent_load(self, pid: object) -> _Storage:
        if type(pid) is not tuple or len(pid) != 5 or type(pid[0]) is not str or pid[0] != "storage":
            raise _Refused(f"refused: the persistent id {_text(pid)} is not ('storage', type, key, location, numel)")
        _, stype, key, location, numel = pid
        if not isinstance(stype, _StorageType) or type(key) is not str or not key or "/" in key \
                or type(location) is not str or not _is_int(numel) or numel < 0:
            raise _Refused(f"refused: the persistent id {_text(pid)} is not ('storage', storage class, key, "
                           "location, numel)")
        return self._storage(stype, key, numel)


def _check_pickle(data: bytes) -> None:
    """A well-formed pickle that ends at its STOP and whose memo indices stay below its length (the C
    unpickler sizes its memo table by the largest index it is given)."""
    try:
        end = None
        for opcode, arg, pos in pickletools.genops(data):
            if opcode.name in ("PUT", "BINPUT", "LONG_BINPUT") and (not _is_int(arg) or arg >= len(data)):
                raise _Refused(f"refused: data.pkl uses the memo index {_text(arg)}, beyond its own length")
            end = pos
    except _Refused:
        raise
    except Exception:
        raise _Refused("data.pkl is not a well-formed pickle") from None
    if end is None or end + 1 != len(data):
        raise _Refused("data.pkl has bytes after the end of its pickle")


def _open_zip(fh) -> zipfile.ZipFile:
    head = fh.read(512)
    fh.seek(0)
    if head[:4] != _ZIP_MAGIC:
        if (head[:1] == b"\x80" and _LEGACY_MAGIC in head[:16]) or head[257:262] == b"ustar":
            raise _Refused("the legacy torch format (before torch 1.6) is not read; re-save it with torch.save")
        if head[:1] == b"\x80":
            raise _Refused("a bare pickle, not a torch.save zip archive; certsym reads only torch.save archives")
        raise _Refused("not a torch.save zip archive")
    try:
        return zipfile.ZipFile(fh)
    except zipfile.BadZipFile:
        raise _Refused("a damaged or truncated zip archive (no readable central directory)") from None


def _members(z: zipfile.ZipFile) -> tuple[str, dict[str, zipfile.ZipInfo]]:
    """(P, {name: info}) after checking FORMATS.md's member rules."""
    infos = z.infolist()
    names = [info.filename for info in infos]
    if len(set(names)) != len(names):
        seen: set[str] = set()
        twice = next(n for n in names if n in seen or seen.add(n))
        raise _Refused(f"refused: the archive has two members named {_text(repr(twice))}")
    tops = {name.split("/", 1)[0] for name in names}
    if len(tops) != 1 or any("/" not in name for name in names) or "" in tops:
        raise _Refused(f"refused: the members do not lie in one top-level folder (found {_text(sorted(tops)[:4])})")
    (top,) = tops
    for name in names:
        rest = name[len(top) + 1:]
        key = rest[len("data/"):] if rest.startswith("data/") else None
        if rest != "data.pkl" and rest not in _BOOKKEEPING and (not key or "/" in key):
            raise _Refused(f"refused: the member {_text(repr(name))} is not part of a torch.save archive")
    by_name = dict(zip(names, infos, strict=True))
    if f"{top}/data.pkl" not in by_name:
        raise _Refused(f"refused: the archive has no {_text(top)}/data.pkl")
    return top, by_name


def _byteorder(z: zipfile.ZipFile, info: zipfile.ZipInfo | None) -> str:
    if info is None:
        return "<"
    if info.file_size > 8:
        raise _Refused("refused: the byteorder member is neither 'little' nor 'big'")
    mark = z.read(info)
    if mark not in (b"little", b"big"):
        raise _Refused(f"refused: the byteorder member is {_text(mark)}, neither 'little' nor 'big'")
    return "<" if mark == b"little" else ">"


def _load(path: str | os.PathLike) -> object:
    try:
        fh = open(path, "rb")  # noqa: SIM115 (closed by the with statement below)
    except FileNotFoundError:
        raise _Refused("no such file") from None
    except OSError as exc:
        raise _Refused(f"cannot read the file ({exc.strerror or type(exc).__name__})") from None
    with fh, _open_zip(fh) as z:
        top, infos = _members(z)
        order = _byteorder(z, infos.get(f"{top}/byteorder"))
        cache: dict[str, _Storage] = {}

        def storage(stype: _StorageType, key: str, numel: int) -> _Storage:
            if key in cache:
                known = cache[key]
                if known.type is not stype or known.numel != numel:
                    raise _Refused(f"refused: storage {_text(repr(key))} is declared twice, as {known.numel} "
                                   f"torch.{known.type.name} and as {numel} torch.{stype.name}")
                return known
            name = f"{top}/data/{key}"
            info = infos.get(name)
            if info is None:
                raise _Refused(f"refused: the pickle names storage {_text(repr(key))}, but the archive has no member "
                               f"{_text(repr(name))}")
            nbytes = numel * stype.itemsize
            if info.file_size != nbytes:
                raise _Refused(f"refused: the member {_text(repr(name))} holds {info.file_size} bytes; its storage "
                               f"declares {numel} torch.{stype.name} elements, {nbytes} bytes")
            with z.open(info) as member:
                raw = member.read(nbytes)
            if len(raw) != nbytes:
                raise _Refused(f"the member {_text(repr(name))} is truncated")
            code = "u2" if stype.code == "bf16" else stype.code
            dtype = np.dtype(("|" if stype.itemsize == 1 else order) + code)
            cache[key] = _Storage(stype, key, numel, np.frombuffer(raw, dtype=dtype))
            return cache[key]

        data = z.read(infos[f"{top}/data.pkl"])
        _check_pickle(data)
        return _plain(_Unpickler(data, storage).load())


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
    return type(value).__name__


def _plain(root: object) -> object:
    """The unpickled tree with stand-ins replaced: OrderedDict → dict, tensor → array. Shared parts stay
    shared; a cycle, or a value of any other kind, is refused."""
    done: dict[int, object] = {}
    active: set[int] = set()

    def walk(value: object) -> object:
        kind = type(value)
        if value is None or kind in (bool, int, float, str):
            return value
        if kind is _Tensor:
            return value.array  # type: ignore[attr-defined]
        ident = id(value)
        if ident in done:
            return done[ident]
        if ident in active:
            raise _Refused("refused: the pickle holds a container that contains itself")
        active.add(ident)
        if kind in (dict, _OrderedDict):
            out: object = {walk(k): walk(v) for k, v in value.items()}  # type: ignore[attr-defined]
        elif kind is list:
            out = [walk(v) for v in value]  # type: ignore[attr-defined]
        elif kind is tuple:
            out = tuple(walk(v) for v in value)  # type: ignore[attr-defined]
        else:
            raise _Refused(f"refused: the pickle holds {_kind(value)}; certsym reads only tensors, dicts, lists, "
                           "tuples, strings, numbers, bools and None")
        active.discard(ident)
        done[ident] = out
        return out

    return walk(root)


def load_torch(path: str | os.PathLike) -> object:
    """The object tree of a torch.save zip archive: dicts (OrderedDict as dict, key order kept), lists, tuples,
    str, int, float, bool, None and numpy array leaves.

    Arrays are C-contiguous, in native byte order, of dtype float16, float32 (also for bfloat16, exactly),
    float64, int64, int32, int16, int8 or uint8. The pickle is never executed and torch is not imported. A file
    docs/FORMATS.md does not give exactly one meaning raises ``InputError`` (one line, starting with the path).
    Cost: linear in the bytes of the pickle and of the storages it names, plus the tensors' elements."""
    label = os.fsdecode(os.fspath(path))
    try:
        return _load(path)
    except _Refused as exc:
        raise InputError(f"{label}: {exc}") from None
    except RecursionError:
        raise InputError(f"{label}: refused: the pickle's values are nested too deeply") from None
    except MemoryError:
        raise InputError(f"{label}: refused: a tensor is too large to build in memory") from None
    except Exception as exc:  # zipfile, zlib, lzma, OSError, pickle, numpy: a damaged archive, in one line
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
