"""A file read once: its bytes, and their SHA-256 computed on a second thread while the readers parse them.

A certificate binds every file it speaks of by the SHA-256 of its bytes, so the bytes a reader parses and the bytes
that are hashed must be the same ones: reading the file once gives both, even if the file changes meanwhile.
hashlib releases the GIL while it hashes a large buffer, so on two cores the hash costs the reading no wall time.
Cost: one read of the file and its SHA-256 (about 1.2 GB/s on one core), off the main thread.

``crc32`` is the CRC-32 of zip archives (zlib's function and values) from ISA-L, whose folding with carry-less
multiplication runs about six times as fast as zlib's on a member of a few MB.
"""

from __future__ import annotations

import hashlib
import os
import threading
from pathlib import Path

from isal.isal_zlib import crc32

from certsym.errors import InputError

__all__ = ["FileBytes", "crc32"]


class FileBytes:
    """The bytes of a file as read once (``data``), with their SHA-256 (``sha256()``, waiting for the hashing
    thread). ``sha256`` holds no reference to the bytes: a record that keeps it does not keep the file in memory.
    Cost: reading the file; the hash runs on its own thread from the start."""

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = Path(path)
        try:
            with open(self.path, "rb") as fh:
                self.data: bytes = fh.read()
        except OSError as exc:
            raise InputError(f"{self.path}: cannot read the file ({exc.strerror or exc})") from None
        self.sha256 = _Hashing(self.data)


class _Hashing:
    """SHA-256 of a buffer on a thread of its own; calling it waits for the hex digest. The thread drops the
    buffer when it is done."""

    def __init__(self, data: bytes) -> None:
        self._hash = hashlib.sha256()
        self._thread = threading.Thread(target=self._hash.update, args=(data,), daemon=True)
        self._thread.start()

    def __call__(self) -> str:
        self._thread.join()
        return self._hash.hexdigest()

    def __reduce__(self) -> tuple:
        return str, (self(),)  # pickled (to another process) as the digest itself

    def __eq__(self, other: object) -> bool:
        return self() == (other() if isinstance(other, _Hashing) else other)

    def __hash__(self) -> int:
        return hash(self())


def gunzip_bounded(fileobj, limit: int) -> bytes | None:
    """The decompressed bytes of a gzip stream (every member), read a MiB at a time so that memory follows what
    is decompressed; None past ``limit`` bytes. Raises what gzip raises on a damaged stream. Cost: linear in the
    bytes decompressed."""
    import gzip

    chunks, total = [], 0
    with gzip.GzipFile(fileobj=fileobj) as f:
        while True:
            chunk = f.read(1 << 20)
            if not chunk:
                return b"".join(chunks)
            total += len(chunk)
            if total > limit:
                return None
            chunks.append(chunk)
