"""The parameter file format: the public input contract of certsym.

    {"M": [k rows of n entries], "A": [n rows of m entries], "b": [n entries], "c": [k entries],
     "shape": {"m": .., "n": .., "k": ..}}            # "shape" optional; needed only when n = 0

Entries are JSON integers, JSON number literals (read as the exact decimal written: 0.1 is 1/10),
or strings holding an integer, a fraction, a decimal or a real algebraic expression ("sqrt(2)").
Unknown keys are an error. Writers emit the same format with every entry as a string, so every
output can be read back. All irrational constants of the files read together are joined into one
number field. Files are written atomically (temporary file, then rename).
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from certsym.certify.deep import layered_json
from certsym.certify.envelope import network_to_json
from certsym.core.deep import LayeredNetwork
from certsym.core.network import Network
from certsym.errors import InputError
from certsym.io.hub import resolve
from certsym.io.models import Selection, exact, head_refusal, is_model_file, read_layers, read_model
from certsym.numbers import DEFAULT_MAX_DIGITS, Field, Scalar, parse_number, parse_number_atoms, to_field

_KEYS = {"M", "A", "b", "c", "shape"}
_LAYERED_KEYS = {"layers", "m", "output_relu"}
_MAX_FILE_BYTES = 1 << 31


class _Numeral(str):
    """A JSON number literal, kept as the text written."""


def read_text(path: str | os.PathLike) -> str:
    """The text of a file, with missing files and bad encodings reported as InputError."""
    return read_input(path)[0]


def read_input(path: str | os.PathLike) -> tuple[str, str]:
    """The text of a file and the SHA-256 of its bytes (read once)."""
    data = read_bytes(path)
    try:
        return data.decode("utf-8"), hashlib.sha256(data).hexdigest()
    except UnicodeDecodeError:
        raise InputError(f"{Path(path)}: not UTF-8 text") from None


def read_bytes(path: str | os.PathLike) -> bytes:
    """The bytes of a regular file of at most 2 GiB, with missing files, folders, devices and permissions reported
    as InputError. Cost: one read."""
    p = Path(path)
    try:
        info = p.stat()
        if stat.S_ISDIR(info.st_mode):
            raise IsADirectoryError
        if not stat.S_ISREG(info.st_mode):  # a pipe or a device: reading it could block, or never end
            raise InputError(f"{p}: not a regular file")
        if info.st_size > _MAX_FILE_BYTES:
            raise InputError(f"{p}: file is larger than 2 GiB")
        return p.read_bytes()
    except FileNotFoundError:
        raise InputError(f"{p}: no such file") from None
    except IsADirectoryError:
        raise InputError(f"{p}: is a directory") from None
    except PermissionError:
        raise InputError(f"{p}: permission denied") from None


def parse_json(text: str, source: str, max_digits: int = DEFAULT_MAX_DIGITS) -> Any:
    """Parse JSON, keeping number literals as text and refusing oversized numerals."""

    def numeral(s: str) -> _Numeral:
        digits = sum(ch.isdigit() for ch in s.lower().partition("e")[0])
        if digits > max_digits:
            raise InputError(f"{source}: numeral with {digits} digits exceeds the limit of {max_digits} digits")
        return _Numeral(s)

    def constant(name: str):
        raise InputError(f"{source}: {name} is not a real number")

    def unique(pairs: list) -> dict:  # a repeated key has two meanings; JSON would keep the last silently
        out = dict(pairs)
        if len(out) != len(pairs):
            seen: set = set()
            twice = next(key for key, _ in pairs if key in seen or seen.add(key))
            raise InputError(f"{source}: the key {twice!r} occurs twice")
        return out

    try:
        return json.loads(text, parse_int=numeral, parse_float=numeral, parse_constant=constant,
                          object_pairs_hook=unique)
    except json.JSONDecodeError as exc:
        raise InputError(f"{source}: malformed JSON: {exc.msg} at line {exc.lineno} column "
                         f"{exc.colno}") from None
    except RecursionError:
        raise InputError(f"{source}: JSON nested too deeply") from None


def _entry(x: Any, where: str, max_digits: int) -> tuple:
    if isinstance(x, bool) or not isinstance(x, str):
        kind = "null" if x is None else type(x).__name__
        if isinstance(x, bool):
            kind = "boolean"
        raise InputError(f"{where} must be a number or a string, not {kind}")
    try:
        return parse_number_atoms(x, max_digits)
    except InputError as exc:
        raise InputError(f"{where}: {exc}") from None


def _vector(x: Any, where: str) -> list:
    if not isinstance(x, list):
        raise InputError(f"{where} must be a list")
    return x


class _RawNetwork:
    """A parameter file parsed down to exact rationals and sympy expressions."""

    layers: list | None = None  # the layered form: [(W indices, b indices), …]
    output_relu = False

    def __init__(self, data: Any, source: str, max_digits: int):
        if isinstance(data, dict) and "layers" in data:
            self._layered(data, source, max_digits)
            return
        if not isinstance(data, dict):
            raise InputError(f"{source}: the parameter file must be a JSON object with keys M, A, b, c")
        unknown = sorted(set(data) - _KEYS)
        if unknown:
            raise InputError(f"{source}: unknown key(s) {', '.join(map(repr, unknown))}; "
                             f"allowed: M, A, b, c, shape")
        missing = [key for key in ("M", "A", "b", "c") if key not in data]
        if missing:
            raise InputError(f"{source}: missing key(s) {', '.join(missing)}")
        self.source = source
        self.model = None
        self.shape = self._shape(data.get("shape"))
        self.values: list = []
        self.atoms: dict[str, Any] = {}  # radicals and roots as written, innermost first
        self.M = self._matrix(data["M"], "M", max_digits)
        self.A = self._matrix(data["A"], "A", max_digits)
        self.b = self._list(data["b"], "b", max_digits)
        self.c = self._list(data["c"], "c", max_digits)

    def _layered(self, data: dict, source: str, max_digits: int) -> None:
        """The layered form {"layers": [{"W": …, "b": …}, …], "m"?, "output_relu"?} (docs/FORMATS.md)."""
        unknown = sorted(set(data) - _LAYERED_KEYS)
        if unknown:
            raise InputError(f"{source}: unknown key(s) {', '.join(map(repr, unknown))}; allowed in the layered form: "
                             "layers, m, output_relu")
        self.source, self.model, self.values, self.atoms = source, None, [], {}
        m = data.get("m")
        if m is not None and (not isinstance(m, _Numeral) or not m.isdigit()):
            raise InputError(f"{source}: m must be a positive integer")
        relu = data.get("output_relu", False)
        if not isinstance(relu, bool):
            raise InputError(f"{source}: output_relu must be true or false")
        self.shape, self.output_relu, self.layers = ({"m": int(m)} if m is not None else None), relu, []
        for ell, layer in enumerate(_vector(data["layers"], f"{source}: layers"), 1):
            if not isinstance(layer, dict) or set(layer) != {"W", "b"}:
                raise InputError(f"{source}: layers[{ell - 1}] must be an object with keys W and b")
            self.layers.append((self._matrix(layer["W"], f"layers[{ell - 1}].W", max_digits),
                                self._list(layer["b"], f"layers[{ell - 1}].b", max_digits)))

    def _shape(self, shape: Any) -> dict[str, int] | None:
        if shape is None:
            return None
        if not isinstance(shape, dict) or set(shape) - {"m", "n", "k"}:
            raise InputError(f"{self.source}: shape must be an object with keys m, n, k")
        out = {}
        for key, val in shape.items():
            if not isinstance(val, _Numeral) or not val.isdigit():
                raise InputError(f"{self.source}: shape.{key} must be a non-negative integer")
            out[key] = int(val)
        return out

    def _list(self, xs: Any, name: str, max_digits: int) -> list[int]:
        out = []
        for i, x in enumerate(_vector(xs, f"{self.source}: {name}")):
            value, atoms = _entry(x, f"{self.source}: {name}[{i}]", max_digits)
            self.values.append(value)
            for text, expr in atoms.items():
                self.atoms.setdefault(text, expr)
            out.append(len(self.values) - 1)
        return out

    def _matrix(self, rows: Any, name: str, max_digits: int) -> list[list[int]]:
        return [self._list(row, f"{name}[{i}]", max_digits)
                for i, row in enumerate(_vector(rows, f"{self.source}: {name}"))]

    @classmethod
    def from_model(cls, path: str, keys: Any) -> _RawNetwork:
        """A model file (npz, safetensors, torch, onnx): exact dyadic values, no atoms."""
        data = read_model(path, keys)
        if data["model"].get("head"):
            raise InputError(head_refusal(path, data["model"]["head"]))
        raw = cls.__new__(cls)
        raw.source, raw.values, raw.atoms = path, [], {}
        raw.shape = {"m": data.pop("m")}
        raw.model = data.pop("model")

        def index(xs):
            raw.values.extend(xs)
            return list(range(len(raw.values) - len(xs), len(raw.values)))

        raw.M = [index(row) for row in data["M"]]
        raw.A = [index(row) for row in data["A"]]
        raw.b, raw.c = index(data["b"]), index(data["c"])
        return raw

    @classmethod
    def from_layers(cls, path: str, keys: Any) -> _RawNetwork:
        """A model file of any depth (``read_layers``): exact dyadic values, no atoms."""
        arrays, model, output_relu = read_layers(path, Selection.of(keys))
        if model.get("head"):
            raise InputError(head_refusal(path, model["head"]))
        raw = cls.__new__(cls)
        raw.source, raw.values, raw.atoms, raw.model, raw.output_relu = path, [], {}, model, output_relu
        raw.shape, raw.layers = {"m": arrays[0][0].shape[1]}, []

        def index(xs):
            raw.values.extend(xs)
            return list(range(len(raw.values) - len(xs), len(raw.values)))

        for W, b in arrays:
            rows, cols = W.shape
            flat = exact(W)
            raw.layers.append(([index(flat[i * cols:(i + 1) * cols]) for i in range(rows)], index(exact(b))))
        return raw

    def network(self, field: Field, values: Sequence[Scalar]) -> Network | LayeredNetwork:
        def get(ix):
            return values[ix]

        if self.layers is not None:
            m = (self.shape or {}).get("m")
            if m is None:
                first = self.layers[0][0]
                if not first:
                    raise InputError(f"{self.source}: the first layer is empty: give the input dimension m")
                m = len(first[0])
            try:
                return LayeredNetwork.build([([[get(i) for i in row] for row in W], [get(i) for i in b])
                                          for W, b in self.layers], field, m, self.output_relu)
            except InputError as exc:
                raise InputError(f"{self.source}: {exc}") from None

        shape = self.shape or {}
        try:
            net = Network.build(
                [[get(i) for i in row] for row in self.M],
                [[get(i) for i in row] for row in self.A],
                [get(i) for i in self.b],
                [get(i) for i in self.c],
                field,
                shape.get("m"),
            )
        except InputError as exc:
            raise InputError(f"{self.source}: {exc}") from None
        for key in ("n", "k"):
            if key in shape and shape[key] != getattr(net, key):
                raise InputError(f"{self.source}: shape says {key} = {shape[key]}, "
                                 f"the matrices say {getattr(net, key)}")
        return net


@dataclass(frozen=True)
class LoadedInput:
    """A network read from a file, with what a certificate records about the file."""

    network: Network | LayeredNetwork
    name: str
    sha256: str
    atoms: tuple[tuple[str, Scalar], ...]
    model: dict | None = None  # for model files: {"format": "npz", "tensors": [W1, b1, W2, b2]}


def load_inputs(
    sources: Sequence[str | os.PathLike],
    extra_values: Sequence[Any] = (),
    max_digits: int = DEFAULT_MAX_DIGITS,
    texts: Sequence[str] | None = None,
    keys: Any = None,
    deep: bool = False,
) -> tuple[list[LoadedInput], list[Scalar]]:
    """Read parameter files into networks over ONE common field.

    ``extra_values`` (already parsed numbers, e.g. the coordinates of an evaluation point) join
    the same field and come back converted. ``texts`` replaces reading ``sources`` from disk (the
    SHA-256 is then that of the UTF-8 text). Model files (docs/FORMATS.md) are read by
    ``certsym.io.models`` with ``keys``: one selection (a ``Selection`` or four tensor names) for all, or a list
    of ``Selection``, one per source. With ``deep`` every network comes back as a LayeredNetwork (files of any
    depth, the layered form); without it, a network with more than one hidden layer or an output ReLU is refused.
    Cost: linear in the file sizes, plus one primitive-element computation if any entry is irrational.
    """
    per_source = isinstance(keys, list | tuple) and bool(keys) and not isinstance(keys[0], str | type(None))
    selections = list(keys) if per_source else [keys] * len(sources)
    if texts is None:  # a model directory is its weights file (certsym.io.hub): that file is read, hashed and named
        sources = [resolve(str(src))[0] if os.path.isdir(src) else src for src in sources]
    raws, digests = [], []
    for i, src in enumerate(sources):
        if texts is None and is_model_file(src):
            raws.append((_RawNetwork.from_layers if deep else _RawNetwork.from_model)(str(src), selections[i]))
            digests.append(file_digest(src))
            continue
        if texts is None:
            text, digest = read_input(src)
        else:
            text, digest = texts[i], hashlib.sha256(texts[i].encode()).hexdigest()
        raws.append(_RawNetwork(parse_json(text, str(src), max_digits), str(src), max_digits))
        digests.append(digest)
    # The written radicals join the field too: "sqrt(2)*sqrt(3)" is √6, but a certificate must
    # also give the value of the √2 and √3 it contains.
    flat = [v for raw in raws for v in raw.values] + [e for raw in raws for e in raw.atoms.values()]
    field, converted = to_field(flat + list(extra_values))
    nets, offset = [], 0
    for raw in raws:
        nets.append(_depth(raw.network(field, converted[offset:offset + len(raw.values)]), raw.source, deep))
        offset += len(raw.values)
    loaded = []
    for net, raw, src, digest in zip(nets, raws, sources, digests, strict=True):
        atoms = tuple(zip(raw.atoms, converted[offset:offset + len(raw.atoms)], strict=True))
        offset += len(raw.atoms)
        loaded.append(LoadedInput(net, str(src), digest, atoms, raw.model))
    return loaded, converted[offset:]


def _depth(net: Network | LayeredNetwork, source: str, deep: bool) -> Network | LayeredNetwork:
    """A LayeredNetwork for deep readers; a Network for the others, which refuse deeper networks in one line."""
    if deep:
        return LayeredNetwork.from_shallow(net) if isinstance(net, Network) else net
    if isinstance(net, Network):
        return net
    if net.is_shallow():
        return net.to_shallow()
    what = f"{net.depth} hidden layers" + (" and an output ReLU" if net.output_relu else "")
    raise InputError(f"{source}: a network with {what}: this command decides one-hidden-layer networks without an "
                     "output ReLU (certsym equiv decides deep ones)")


def file_digest(path: str | os.PathLike) -> str:
    """SHA-256 of a file's bytes, read in blocks."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def load_networks(
    sources: Sequence[str | os.PathLike],
    extra_values: Sequence[Any] = (),
    max_digits: int = DEFAULT_MAX_DIGITS,
    texts: Sequence[str] | None = None,
    keys: Any = None,
) -> tuple[list[Network], list[Scalar]]:
    """``load_inputs`` without the file records: the networks and the converted extra values."""
    loaded, extra = load_inputs(sources, extra_values, max_digits, texts, keys)
    return [item.network for item in loaded], extra


def parse_point(text: str, max_digits: int = DEFAULT_MAX_DIGITS) -> list:
    """Parse "1/2,3,sqrt(2)" into exact numbers (rationals or sympy expressions); commas inside
    parentheses, as in "root(8, 3)", belong to the coordinate."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += (ch == "(") - (ch == ")")
        if ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    if not text.strip() or any(not p.strip() for p in parts):
        raise InputError(f"cannot read the point {text!r}: expected comma-separated numbers")
    return [parse_number(p, max_digits) for p in parts]


def dump_network(net: Network) -> str:
    """The parameter file text of ``net``: one matrix row per line."""
    data = network_to_json(net)

    def rows(key: str) -> str:
        body = ",\n    ".join(json.dumps(row) for row in data[key])
        return f"[\n    {body}\n  ]" if data[key] else "[]"

    return (f'{{\n  "M": {rows("M")},\n  "A": {rows("A")},\n  "b": {json.dumps(data["b"])},\n'
            f'  "c": {json.dumps(data["c"])},\n  "shape": {json.dumps(data["shape"])}\n}}\n')


def dump_layered(net: LayeredNetwork) -> str:
    """The layered parameter file text of ``net`` (docs/FORMATS.md): one matrix row per line."""
    data = layered_json(net)
    layers = []
    for layer in data["layers"]:
        body = ",\n        ".join(json.dumps(row) for row in layer["W"])
        W = f"[\n        {body}\n      ]" if layer["W"] else "[]"
        layers.append(f'    {{\n      "W": {W},\n      "b": {json.dumps(layer["b"])}\n    }}')
    return ('{\n  "layers": [\n' + ",\n".join(layers) + f'\n  ],\n  "m": {data["m"]},\n'
            f'  "output_relu": {json.dumps(data["output_relu"])}\n}}\n')


def write_text_atomic(path: str | os.PathLike, text: str) -> None:
    """Write ``text`` to ``path`` atomically: readers see the old file or the whole new one."""
    write_bytes_atomic(path, text.encode("utf-8"))


def write_bytes_atomic(path: str | os.PathLike, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically (a temporary file in the same directory, then a rename)."""
    p = Path(path)
    directory = p.parent if str(p.parent) else Path(".")
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".tmp", dir=directory)
    except OSError as exc:
        raise InputError(f"{p}: cannot write: {exc.strerror}") from None
    try:
        umask = os.umask(0)
        os.umask(umask)
        os.fchmod(fd, 0o666 & ~umask)  # mkstemp creates 0600; a written file gets the usual mode
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, p)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_json_atomic(path: str | os.PathLike, data: Any, compact: bool = False) -> None:
    """JSON written atomically: indented (1) up to 64 kB, compact beyond or with ``compact`` (an audit's hundreds of
    certificates). Only the compact form has json's C encoder: indenting a certificate of 3,000 numbers in pure
    Python takes about as long as the decision it records."""
    text = json.dumps(data, separators=(",", ":"))
    write_text_atomic(path, (json.dumps(data, indent=1) if len(text) < 1 << 16 and not compact else text) + "\n")
