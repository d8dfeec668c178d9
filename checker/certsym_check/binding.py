"""Binding a certificate to the input files given on the command line: the file must have the SHA-256 the
certificate records, and every entry of the file, read by this module (``atoms.Reader`` evaluates the entries of a
parameter file, ``readers`` the model formats), must equal the embedded parameter."""

from __future__ import annotations

import json

from certsym_check.atoms import Reader
from certsym_check.errors import Reject
from certsym_check.inputs import InputFile, unique_object
from certsym_check.readers.files import layered_entries, model_entries


class _JsonInt(str):
    """A JSON integer literal, kept as text."""


def _grid(x: object, rows: int, cols: int) -> bool:
    return isinstance(x, list) and len(x) == rows and all(isinstance(y, list) and len(y) == cols for y in x)


def _bind_model(record: dict, file: InputFile, entries_of, expected: list, where: str) -> str:
    """A model file's SHA-256 and entries (``entries_of()``: the entries and the line saying what was bound)."""
    if file.sha256() != record["sha256"]:
        raise Reject(f"{where}: the SHA-256 of the given file differs from the certificate's")
    try:
        entries, bound = entries_of()
    except Reject as exc:
        raise type(exc)(f"{where}: {exc}") from None
    if entries != expected:
        raise Reject(f"{where}: the model file's weights differ from the embedded parameters")
    return bound


def _parameter_doc(record: dict, file: InputFile, where: str) -> object:
    """A parameter file's JSON (numbers kept as their text), after its SHA-256."""
    if file.sha256() != record["sha256"]:
        raise Reject(f"{where}: the SHA-256 of the given file differs from the certificate's")
    try:
        return json.loads(file.data.decode("utf-8"), parse_float=str, parse_int=_JsonInt,
                          object_pairs_hook=unique_object)
    except (ValueError, UnicodeDecodeError, RecursionError):
        raise Reject(f"{where}: the given file is not JSON") from None
    except Reject as exc:
        raise Reject(f"{where}: {exc}") from None


def _shallow_entries(doc: object, shape: tuple, where: str) -> list:
    """The entries A (row by row), b, M (row by row), c of a shallow parameter file of shape (m, n, k): its keys,
    its grids and its declared shape checked (docs/FORMATS.md; shape.m required when n = 0)."""
    if not isinstance(doc, dict) or not {"M", "A", "b", "c"} <= set(doc) <= {"M", "A", "b", "c", "shape"}:
        raise Reject(f"{where}: the given file is not a parameter file")
    m, n, k = shape
    A, b, M, c = doc["A"], doc["b"], doc["M"], doc["c"]
    if not (_grid(A, n, m) and _grid(M, k, n) and _grid([b], 1, n) and _grid([c], 1, k)):
        raise Reject(f"{where}: the given file has a different shape")
    declared = doc.get("shape")
    if declared is not None and (not isinstance(declared, dict) or not set(declared) <= {"m", "n", "k"} or any(
            not isinstance(val, _JsonInt) or int(val) != dict(zip("mnk", shape, strict=True))[key]
            for key, val in declared.items())):
        raise Reject(f"{where}: the file's shape differs")
    if n == 0 and (declared is None or "m" not in declared):
        raise Reject(f"{where}: a file without neurons must declare shape.m")
    return [x for row in A for x in row] + b + [x for row in M for x in row] + c


def _same_entries(entries: list, expected: list, reader: Reader, where: str) -> None:
    """Every entry of the file, read exactly, equals the embedded parameter at its place."""
    if len(entries) != len(expected):
        raise Reject(f"{where}: the given file has a different shape")
    for x, y in zip(entries, expected, strict=True):
        if reader.value(x) != y:
            raise Reject(f"{where}: entry {str(x)[:40]!r} differs from the embedded parameter")


def bind(record: dict, file: InputFile, shape: tuple, expected: list, reader: Reader, where: str) -> str:
    """The given file's bytes hash to record["sha256"], its layout is ``shape`` = (m, n, k), and its
    entries equal ``expected`` (A row by row, then b, M row by row, c). Returns what was bound, in one line."""
    if "model" in record:
        return _bind_model(record, file, lambda: model_entries(file, record["model"], shape), expected, where)
    doc = _parameter_doc(record, file, where)
    m, n, k = shape
    _same_entries(_shallow_entries(doc, shape, where), expected, reader, where)
    return f"parameter file, every entry: m = {m}, n = {n}, k = {k}"


def bind_layered(record: dict, file: InputFile, widths: tuple, output_relu: bool, expected: list, reader: Reader,
                 where: str) -> str:
    """As ``bind`` for a deep network of the given widths (m, n_1, …, k) and output ReLU: ``expected`` holds W_ℓ
    row by row then b_ℓ for every layer in turn. A parameter file is read in its layered form (or the shallow one
    for one hidden layer, which has no output ReLU), its "output_relu" compared; of the model files only an ONNX
    graph can end in a Relu, and its graph must agree. Returns what was bound, in one line."""
    if "model" in record:
        return _bind_model(record, file, lambda: layered_entries(file, record["model"], widths, output_relu),
                           expected, where)
    doc = _parameter_doc(record, file, where)
    relu = doc.get("output_relu", False) if isinstance(doc, dict) and "layers" in doc else False
    if type(relu) is not bool or relu != output_relu:
        raise Reject(f"{where}: the file's output ReLU ({relu!r}) differs from the embedded network's")
    if isinstance(doc, dict) and "layers" not in doc and len(widths) == 3:
        entries = _shallow_entries(doc, widths, where)
    elif isinstance(doc, dict) and "layers" in doc and set(doc) <= {"layers", "m", "output_relu"}:
        declared = doc.get("m")
        if declared is not None and (not isinstance(declared, _JsonInt) or int(declared) != widths[0]):
            raise Reject(f"{where}: the file's input dimension m ({str(declared)[:20]!r}) differs from the embedded "
                         f"network's ({widths[0]})")
        if declared is None and widths[1] == 0:
            raise Reject(f"{where}: a file whose first layer is empty must declare m")
        layers = doc["layers"]
        if not isinstance(layers, list) or len(layers) != len(widths) - 1:
            raise Reject(f"{where}: the given file has a different number of layers")
        entries = []
        for ell, layer in enumerate(layers, 1):
            if not isinstance(layer, dict) or set(layer) != {"W", "b"} or \
                    not _grid(layer["W"], widths[ell], widths[ell - 1]) or not _grid([layer["b"]], 1, widths[ell]):
                raise Reject(f"{where}: layer {ell} of the given file has a different shape")
            entries += [x for row in layer["W"] for x in row] + layer["b"]
    else:
        raise Reject(f"{where}: the given file is not a parameter file")
    _same_entries(entries, expected, reader, where)
    return f"parameter file, every entry: widths {'-'.join(map(str, widths))}"
