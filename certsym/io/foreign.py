"""Files certsym does not read, recognized by their content, each refused with a one-line recipe to convert it.

docs/FORMATS.md gives one meaning to each format certsym reads; a file of another framework is not guessed at
(a Keras archive is a zip, but not an npz; an HDF5 file is not JSON). ``foreign_format`` names the
format and says how to write the same weights as a file certsym reads. Cost: a few bytes of the file, and a zip
directory.
"""

from __future__ import annotations

import functools
import os
import zipfile
from pathlib import Path

_TO_NPZ = ("np.savez('weights.npz', **{str(i): w for i, w in enumerate(model.get_weights())}), then certsym ... "
           "weights.npz --keys 0,1,2,3 --layout in-out")
KERAS = f"a Keras model archive (.keras), which certsym does not read; convert it: {_TO_NPZ}"
HDF5 = f"an HDF5 file (Keras .h5 / .weights.h5), which certsym does not read; convert it: {_TO_NPZ}"
TORCHSCRIPT = ("a TorchScript archive (torch.jit.save), which certsym does not read; save its state dict: "
               "torch.save(torch.jit.load(path).state_dict(), 'model.pt')")
WHOLE_MODULE = ("a whole module saved with torch.save(model), whose pickle certsym does not run; save its state dict "
                "instead: torch.save(model.state_dict(), 'model.pt')")

_HDF5_SIGNATURE = b"\x89HDF\r\n\x1a\n"


def foreign_format(path: str | os.PathLike) -> str | None:
    """Why ``path`` is a format certsym refuses, with the recipe (above), or None. Recognized: Keras archives (a zip
    with metadata.json and config.json), HDF5 (its signature, at offset 0 or 512), and TorchScript archives (a zip
    with constants.pkl or code/). (Model directories and Flax msgpack files are read: ``certsym.io.hub``,
    ``certsym.io.flaxfile``.)"""
    p = Path(path)
    if not p.is_file():  # a pipe or a device is never opened here (reading it could block)
        return None
    try:
        with open(p, "rb") as fh:
            head = fh.read(520)
    except OSError:
        return None
    if head.startswith(_HDF5_SIGNATURE) or head[512:520] == _HDF5_SIGNATURE:
        return HDF5
    if head[:4] == b"PK\x03\x04":
        names = zip_names(p)
        if names is None:
            return None
        if "metadata.json" in names and "config.json" in names:
            return KERAS
        if is_torchscript(names):
            return TORCHSCRIPT
    return None


def zip_names(path: str | os.PathLike) -> tuple[str, ...] | None:
    """The member names of a zip archive (None when zipfile cannot read its directory), remembered for the file as
    it is now (device, inode, size and modification time): the format tests ask for them several times a file.
    Cost: one read of the zip directory per version of the file."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return _zip_names(os.fspath(path), st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


@functools.lru_cache(maxsize=64)
def _zip_names(path: str, *version: int) -> tuple[str, ...] | None:
    try:
        with zipfile.ZipFile(path) as z:
            return tuple(z.namelist())
    except (OSError, zipfile.BadZipFile):
        return None


def is_torchscript(names: list[str]) -> bool:
    """A torch.jit.save archive: its members include constants.pkl or code/ (a torch.save one has neither)."""
    return any(n.endswith("/constants.pkl") or "/code/" in n for n in names)
