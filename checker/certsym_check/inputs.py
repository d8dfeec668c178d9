"""The files given to the checker: their bytes, fixed once given, hashed on a thread beside the replay; the files
beside them (external data, shards), read as regular files only; the checks that run beside the replay and are
settled before its verdict (a large zip member's CRC-32); and the JSON reader that refuses a repeated key. Used by
every replay (the certificate is read with ``unique_object``); the model formats are read in ``readers``."""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import json
import os
import stat
import threading
import zlib
from collections.abc import Callable, Iterator

from certsym_check.errors import CannotCheck, Reject

MAX_SIBLING = 1 << 34  # bytes of one external data file, and of all the shards of a sharded safetensors file


class Background:
    """``work()`` run on a thread of its own, or at once when no thread can be had; ``result()`` waits for it and
    gives its value, or raises its exception in the caller's thread; ``done`` says whether it has finished.
    hashlib and zlib release the GIL on large buffers, so their work runs beside the replay on a second core."""

    def __init__(self, work: Callable[[], object]) -> None:
        self._work, self._value, self._error = work, None, None
        self._thread: threading.Thread | None = threading.Thread(target=self._run, daemon=True)
        try:
            self._thread.start()
        except RuntimeError:
            self._thread = None
            self._run()

    def _run(self) -> None:
        try:
            self._value = self._work()
        except BaseException as exc:  # noqa: BLE001 - raised again by result(), in the caller's thread
            self._error = exc

    @property
    def done(self) -> bool:
        return self._thread is None or not self._thread.is_alive()

    def result(self) -> object:
        if self._thread is not None:
            self._thread.join()
        if self._error is not None:
            raise self._error
        return self._value


_DEFERRED: contextvars.ContextVar[list | None] = contextvars.ContextVar("certsym_check_deferred", default=None)
_INPUT: contextvars.ContextVar[str] = contextvars.ContextVar("certsym_check_input", default="")
_DEFER_BYTES = 1 << 20  # a member's CRC-32 runs beside the replay from this size on (smaller ones cost nothing)


@contextlib.contextmanager
def deferred_checks() -> Iterator[list]:
    """The checks of the files read inside the block that run on threads beside the replay (a large stored
    member's CRC-32), collected for ``settle``, which every replay calls before it can be valid."""
    pending: list = []
    token = _DEFERRED.set(pending)
    try:
        yield pending
    finally:
        _DEFERRED.reset(token)


@contextlib.contextmanager
def reading(where: str) -> Iterator[None]:
    """The input being read inside the block (``where``, "inputs[i]"): a deferred check's rejection names it, as
    the reader's own rejections are named by their caller."""
    token = _INPUT.set(where)
    try:
        yield
    finally:
        _INPUT.reset(token)


def settle(pending: list) -> None:
    """Wait for every deferred check; Reject with the first that fails."""
    for check in pending:
        check()


def crc_matches(view: memoryview, crc: int, message: str) -> None:
    """The member's CRC-32 is ``crc``, else Reject(message): at once, or, inside ``deferred_checks`` and for a large
    member, on a thread whose verdict ``settle`` waits for."""
    pending = _DEFERRED.get()
    if pending is None or len(view) < _DEFER_BYTES:
        if zlib.crc32(view) != crc:
            raise Reject(message)
        return
    computed = Background(lambda: zlib.crc32(view))
    where = _INPUT.get()
    message = f"{where}: {message}" if where else message

    def check() -> None:
        if computed.result() != crc:
            raise Reject(message)

    pending.append(check)


class InputFile:
    """A file given to the checker: its bytes, fixed once given (``data``, read-only; a mutable buffer is copied,
    so what is hashed is what is parsed), their SHA-256, and the files beside it (the external data of an ONNX
    model), read only when a certificate names them by a relative location."""

    def __init__(self, data: bytes, path: str | None = None):
        self._data = data if type(data) is bytes else bytes(memoryview(data))
        self.path, self._siblings = path, {}
        self._lock = threading.Lock()
        self._hashing: Background | None = None

    @property
    def data(self) -> bytes:
        return self._data

    def hash_in_background(self) -> None:
        """Start the SHA-256 of the bytes on a thread of its own, once (``Background``); ``sha256`` waits for
        it."""
        with self._lock:
            if self._hashing is None:
                self._hashing = Background(lambda: hashlib.sha256(self._data).hexdigest())

    def sha256(self, wait: bool = True) -> str | None:
        """The SHA-256 of the bytes, in hex (waiting for ``hash_in_background``, started here if it was not); with
        ``wait`` false, None while it is still being computed."""
        self.hash_in_background()
        if not wait and not self._hashing.done:
            return None
        return self._hashing.result()

    def sibling(self, location: str) -> bytes:
        """The bytes of the file at ``location``, relative to this file's folder, inside it."""
        parts = location.replace("\\", "/").split("/")
        if not location or location.startswith("/") or ".." in parts or ":" in location:
            raise Reject(f"external data location {location[:60]!r} is not a plain relative path")
        if self.path is None:
            raise CannotCheck(f"the model's external data {location[:60]!r} is not available (give the model file "
                              "with --inputs, with its data file beside it)")
        if location not in self._siblings:
            folder = os.path.realpath(os.path.dirname(self.path) or ".")
            target = os.path.realpath(os.path.join(folder, *parts))
            if os.path.commonpath([folder, target]) != folder:
                raise Reject(f"external data location {location[:60]!r} leads outside the model's folder")
            here = folder
            for part in parts:  # onnx.load refuses external data reached through a link
                here = os.path.join(here, part)
                if os.path.islink(here):
                    raise Reject(f"external data location {location[:60]!r} passes through a symbolic link, which "
                                 "onnx refuses")
            links = os.stat(target).st_nlink if os.path.exists(target) else 1
            if links > 1:
                raise Reject(f"external data {location[:60]!r} has {links} hard links, which onnx refuses")
            self._siblings[location] = read_regular(target, MAX_SIBLING, f"the external data file {location[:60]!r}")
        return self._siblings[location]

    def shard(self, name: str) -> bytes:
        """The bytes of a shard of a sharded safetensors index: a plain file name in this file's folder, followed
        through a symbolic link as transformers does (a hub cache links every file), and a regular file of at
        most MAX_SIBLING bytes, opened without blocking."""
        self._plain(name)
        key = "shard:" + name
        if key not in self._siblings:
            self._siblings[key] = read_regular(self._beside(name), MAX_SIBLING, f"the shard {name[:60]!r}")
        return self._siblings[key]

    def shard_size(self, name: str) -> int:
        """The size of a shard (as ``shard`` finds it) by its metadata, without reading it."""
        self._plain(name)
        return regular_size(self._beside(name), MAX_SIBLING, f"the shard {name[:60]!r}")

    def _beside(self, name: str) -> str:
        if self.path is None:
            raise CannotCheck(f"the shard {name[:60]!r} is not available (give the index file with --inputs, with its "
                              "shards beside it)")
        return os.path.join(os.path.dirname(self.path) or ".", name)

    @staticmethod
    def _plain(name: str) -> None:
        if not name or "/" in name or "\\" in name or name in (".", "..") or ":" in name or "\0" in name:
            raise Reject(f"the shard {name[:60]!r} is not a plain file name in the index's folder")


def regular_size(path: str, limit: int, what: str) -> int:
    """The size of the regular file at ``path`` (symbolic links followed), from its metadata: CannotCheck when
    there is no such file, Reject when it is not a regular file of at most ``limit`` bytes. Nothing is opened."""
    try:
        info = os.stat(path)
    except (OSError, ValueError) as exc:  # ValueError: a NUL or a name the file system cannot encode
        raise CannotCheck(f"cannot read {what} ({getattr(exc, 'strerror', None) or 'not a usable file name'})") \
            from None
    if not stat.S_ISREG(info.st_mode) or info.st_size > limit:
        raise Reject(f"{what} is not a regular file of at most {limit} bytes")
    return info.st_size


def read_regular(path: str, limit: int, what: str) -> bytes:
    """The bytes of a regular file of at most ``limit`` bytes: its metadata checked before it is opened (opening a
    device may have effects), opened without blocking, checked again on the open descriptor, and read to its
    size (no buffer of ``limit`` bytes is reserved). Cost: the file's size in time and memory."""
    regular_size(path, limit, what)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except (OSError, ValueError) as exc:
        raise CannotCheck(f"cannot read {what} ({getattr(exc, 'strerror', None) or 'not a usable file name'})") \
            from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > limit:
            raise Reject(f"{what} is not a regular file of at most {limit} bytes")
        chunks, size = [], 0
        while size <= info.st_size:
            chunk = os.read(fd, min(1 << 24, info.st_size + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    finally:
        os.close(fd)
    if size > limit:
        raise Reject(f"{what} grew beyond {limit} bytes while it was read")
    return b"".join(chunks)


def model_directory_file(path: str) -> str:
    """docs/FORMATS.md, model directories: the one weights file a directory holding config.json means —
    model.safetensors, else model.safetensors.index.json, else pytorch_model.bin; both of the first two, or none,
    or no config.json, is refused. Cost: a few file tests."""
    if not os.path.isfile(os.path.join(path, "config.json")):
        raise Reject(f"{path[:80]} is a directory without config.json")
    _relu_config(os.path.join(path, "config.json"))
    present = [n for n in ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin")
               if os.path.isfile(os.path.join(path, n))]
    if present[:2] == ["model.safetensors", "model.safetensors.index.json"]:
        raise Reject(f"{path[:80]} holds both model.safetensors and model.safetensors.index.json")
    if not present:
        raise Reject(f"{path[:80]} is a model directory without a weights file")
    return os.path.join(path, present[0])


def _relu_config(config: str) -> None:
    """A model directory's config.json naming an activation (hidden_act, activation, activation_function or
    hidden_activation, the first present) must name "relu" (docs/FORMATS.md); at most 2^20 bytes of JSON."""
    if os.path.getsize(config) > 1 << 20:
        raise Reject("config.json is larger than 2^20 bytes")
    try:
        with open(config, "rb") as fh:
            doc = json.loads(fh.read())
    except (ValueError, UnicodeDecodeError, RecursionError):
        raise Reject("config.json is not JSON, or is nested too deeply") from None
    if not isinstance(doc, dict):
        raise Reject("config.json's top level is not an object")
    key = next((k for k in ("hidden_act", "activation", "activation_function", "hidden_activation") if k in doc), None)
    if key is not None and doc[key] != "relu":
        raise Reject(f"config.json names the activation {key} = {str(doc[key])[:40]!r}: not a ReLU network")


def unique_object(pairs: list) -> dict:
    """A JSON object whose keys are all distinct (``object_pairs_hook``): a repeated key is ambiguous."""
    out = dict(pairs)
    if len(out) != len(pairs):
        seen = set()
        twice = next(k for k, _ in pairs if k in seen or seen.add(k))
        raise Reject(f"the JSON key {str(twice)[:40]!r} occurs twice")
    return out


def gunzip_bounded(data: bytes, limit: int) -> bytes | None:
    """The decompressed bytes of gzip data (every member), read a MiB at a time so that memory follows what is
    decompressed; None past ``limit`` bytes. Raises what gzip raises on damaged data (OSError, EOFError,
    zlib.error). Linear in the bytes decompressed."""
    import gzip
    import io

    chunks, total = [], 0
    with gzip.GzipFile(fileobj=io.BytesIO(data)) as f:
        while True:
            chunk = f.read(1 << 20)
            if not chunk:
                return b"".join(chunks)
            total += len(chunk)
            if total > limit:
                return None
            chunks.append(chunk)
