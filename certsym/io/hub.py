"""Hugging Face layouts: a model directory, and safetensors weights sharded through an index file.

docs/FORMATS.md, "Model directories and sharded safetensors", gives their meaning:

- A model directory (one holding ``config.json``) means its one weights file: ``model.safetensors``, else
  ``model.safetensors.index.json``, else ``pytorch_model.bin``, as transformers picks them. A directory holding
  both of the first two is refused (the two could disagree); so is one holding none.
- An index file ``*.safetensors.index.json`` is a JSON object ``{"metadata": {...}, "weight_map": {tensor: shard}}``
  with no repeated key. It means the union of its shards' tensors, where every shard is a plain file name in the
  index's folder, holds exactly the tensors the weight map assigns to it, and is a safetensors file.

The checker reads the same layout itself (``certsym_check.readers.files``): certificates bind the index by its
SHA-256 and every shard by its own. Cost: a directory listing, or the index's JSON.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from certsym.errors import InputError

INDEX_SUFFIX = ".safetensors.index.json"
_PICK = ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin")
MAX_INDEX = 1 << 26  # bytes of an index file: a weight map of a million tensors fits
MAX_SHARDS = 10_000  # shards of one index, and MAX_SHARD_BYTES in all: the checker's bounds (docs/FORMATS.md)
MAX_SHARD_BYTES = 1 << 34


def is_index(path: str | os.PathLike) -> bool:
    """Whether ``path`` is named as a sharded-safetensors index (``*.safetensors.index.json``)."""
    return Path(path).name.lower().endswith(INDEX_SUFFIX)


def weights_file(directory: str | os.PathLike) -> Path:
    """The weights file a model directory means (module docstring), or InputError saying why there is none.
    Cost: a few file tests."""
    d = Path(directory)
    if not (d / "config.json").is_file():
        raise InputError(f"{d}: is a directory without config.json; give the model file itself")
    config_activation(d / "config.json")
    present = [name for name in _PICK if (d / name).is_file()]
    if "model.safetensors" in present and "model.safetensors.index.json" in present:
        raise InputError(f"{d}: holds both model.safetensors and model.safetensors.index.json, which may disagree; "
                         "give the one you mean")
    if not present:
        found = ", ".join(sorted(p.name for p in d.iterdir() if p.is_file()))[:200] or "nothing"
        raise InputError(f"{d}: a model directory without model.safetensors, model.safetensors.index.json or "
                         f"pytorch_model.bin (found {found})")
    return d / present[0]


ACTIVATION_KEYS = ("hidden_act", "activation", "activation_function", "hidden_activation")  # transformers' names
MAX_CONFIG = 1 << 20  # bytes of a config.json


def config_activation(config: Path) -> str | None:
    """The activation a model directory's config.json names (the first of ACTIVATION_KEYS at its top level), or None.
    A name other than "relu" refuses the directory: its weights read as a ReLU network would compute another
    function (docs/FORMATS.md, "Model directories"). An unreadable or oversized config.json, or a top level that is
    not an object, is refused too. Cost: reading the file."""
    if config.stat().st_size > MAX_CONFIG:
        raise InputError(f"{config}: larger than {MAX_CONFIG} bytes; certsym reads config files up to that size")
    try:
        doc = json.loads(config.read_bytes())
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        raise InputError(f"{config}: not JSON, or nested too deeply ({type(exc).__name__})") from None
    if not isinstance(doc, dict):
        raise InputError(f"{config}: its top level is not an object")
    key = next((k for k in ACTIVATION_KEYS if k in doc), None)
    if key is None:
        return None
    if doc[key] != "relu":
        raise InputError(f"{config.parent}: config.json names the activation {key} = {str(doc[key])[:40]!r}: the "
                         "model is not a ReLU network, and its weights read as one would compute another function")
    return key


def resolve(path: str) -> tuple[str, str | None]:
    """A path as certsym reads it: a model directory becomes its weights file, with the note saying so; any other
    path is itself (note None)."""
    if not os.path.isdir(path):
        return path, None
    chosen = weights_file(path)
    return str(chosen), f"the model directory {path}: its weights file {chosen.name}"


def _no_constant(name: str) -> None:
    raise ValueError(f"the constant {name}")


def _unique(pairs: list) -> dict:
    out = dict(pairs)
    if len(out) != len(pairs):
        raise ValueError("a repeated key")
    return out


def read_index(path: str | os.PathLike) -> tuple[dict[str, str], list[str]]:
    """The weight map {tensor: shard} of an index file and its shards (sorted, each a plain file name), checked
    as the module docstring says. Cost: reading the index."""
    p = Path(path)
    with open(p, "rb") as fh:
        data = fh.read(MAX_INDEX + 1)
    if len(data) > MAX_INDEX:
        raise InputError(f"{p}: an index file of more than {MAX_INDEX} bytes")
    try:
        doc = json.loads(data.decode("utf-8"), object_pairs_hook=_unique, parse_constant=_no_constant)
        json.dumps(doc, ensure_ascii=False).encode("utf-8")  # a lone surrogate (\ud800) fails here, as in the checker
    except (UnicodeError, ValueError) as exc:
        raise InputError(f"{p}: not a sharded-safetensors index ({exc})".splitlines()[0]) from None
    except RecursionError:
        raise InputError(f"{p}: not a sharded-safetensors index (nested too deeply)") from None
    if not isinstance(doc, dict) or "weight_map" not in doc or not set(doc) <= {"metadata", "weight_map"}:
        raise InputError(f"{p}: a sharded-safetensors index is an object with a weight_map (and metadata), "
                         f"found the keys {sorted(doc)[:6] if isinstance(doc, dict) else type(doc).__name__}")
    weight_map, meta = doc["weight_map"], doc.get("metadata", {})
    if not isinstance(meta, dict) or not isinstance(weight_map, dict) or not weight_map \
            or not all(isinstance(v, str) for v in weight_map.values()):
        raise InputError(f"{p}: the weight_map must map tensor names to shard file names, and metadata be an object")
    shards = sorted(set(weight_map.values()))
    if len(shards) > MAX_SHARDS:
        raise InputError(f"{p}: the index names {len(shards)} shards, more than the {MAX_SHARDS} certsym reads")
    for shard in shards:
        if not shard or "/" in shard or "\\" in shard or shard in (".", "..") or ":" in shard or "\0" in shard:
            raise InputError(f"{p}: the shard {shard[:60]!r} is not a plain file name in the index's folder")
    return weight_map, shards
