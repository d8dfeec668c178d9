"""Red team round 15: deep certificates that reference their model files by SHA-256 (checker kinds/deep_files.py:
``FloatMatrix``, ``Aligned``, ``BlockRows``, ``evaluate_layer``, ``referenced_layers``; their use in kinds/deep.py and
envelope.py; the producer's ``certsym.decide.deep_dyadic`` and ``certify.deep._input``).

Holes found, each fixed and kept as a regression test:

- A referenced file whose tensors are not float16/bfloat16/float32 (float64, or integers) cannot be replayed by the
  block lemma: ``FloatMatrix.entries`` reads ``self.exact[r]`` for every row when the tensor is not narrow, also for
  rows never read as Fractions, so the first D1 step, D2 fold or top block raises KeyError, reported as "malformed
  certificate (KeyError)". The producer references such files (float64 arrays that are float32-exact go through the
  deep fast path; integer files through the general path), so ``certsym equiv A B --reference`` on two float64 or
  int8 .npz files writes a certificate of a true claim that its own checker refuses.
- A top block's rows (``BlockRows.__getitem__``) are products W_L[j][q]·d of the file's weights and the alignment's
  scalings, recomputed on every access and charged 4 operations per entry whatever the size of d, where the embedded
  path charges them once by their sizes (``charge_products`` in ``_block``). A scaling is free when the aligned
  neurons have zero rows and biases (0·d' = d·0), so d may have 100,000 digits: a VALID certificate whose block
  reduction zeroes each neuron (two row constructions per step) is charged 1/28 of its embedded twin's work (200
  neurons, two scalings of 20,000 digits) while doing more. Measured beside these tests: 2,000 neurons and four
  scalings of 99,000 digits replay in 1.4 s charged 19,621 units (the embedded twin: 5,258,612 units, 1.0 s); the
  budget's 20M units would allow about 2 million such neurons (a file of some 12 MB), about 23 minutes of arithmetic
  for a nominal 20 s.

What held (plain tests): on seeded pairs (hidden units permuted and scaled by 2^e, |e| ≤ 60, subnormal and −0.0
weights, moves D1–D4 undone, weights moved) and mutations of their certificates (scalings times 2, 1/2, 3, −1, 0, 2/3,
2^±130, swapped pairs, dropped or added moves, matching scalings changed, witnesses and values moved), the referenced
replay agrees with the replay of the same certificate with the weights embedded; the producer's referenced
certificates replay VALID for float16, bfloat16 and float32 files (npz and safetensors) with every move and merges by
powers of two and by 3; forged alignments (powers of two beyond 2^128, non-powers of two, zero, negative, non-strings)
are refused while true ones (d = 2^−128 on subnormal rows, 2^126, 2^±100) are accepted on the raw floats; −0.0 against
0.0 is equality; D1/D2/D4 forged by one subnormal entry, D4 on layer 1, D3 by a wrong λ are refused; folds that leave
a bias of more than 24 bits are compared as Fractions; a merge's materialized rows are compared as Fractions; NaN and
infinity in weights or biases (float16, float32) are refused with a reason; widths that do not match the file, too few
hidden layers, output_relu other than false, extra or missing keys, atoms, referenced records in kinds that do not
accept them, non-QQ fields, widths far beyond the file's bytes and missing files are refused (or CANNOT CHECK); wrong,
equal or mis-sized witness values are refused and dense non-dyadic witnesses evaluate exactly; one network referenced
beside one embedded replays as both embedded.
"""

from __future__ import annotations

import copy
import hashlib
import io
import json
import random
import struct
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

import certsym
from certsym_check import check_certificate
from certsym_check.budget import cost
from certsym_check.envelope import CLAIMS
from certsym_check.fields import rational
from certsym_check.kinds import deep_files

ACTIVATION = "relu, assumed: the file holds no activation"
F = Fraction


# -- files, records, certificates ------------------------------------------------------------------------------------
def _arrays(layers: list, dtype=np.float32) -> dict:
    return {f"{2 * i}.{part}": np.ascontiguousarray(np.asarray(x, dtype=np.float64).astype(dtype))
            for i, (W, b) in enumerate(layers) for part, x in (("weight", W), ("bias", b))}


def _npz(layers: list, dtype=np.float32) -> bytes:
    buf = io.BytesIO()
    np.savez(buf, **_arrays(layers, dtype))
    return buf.getvalue()


_SAFE = {"F16": ("<f2", 2), "F32": ("<f4", 4), "F64": ("<f8", 8), "BF16": (None, 2)}


def _safetensors(layers: list, code: str) -> bytes:
    """A .safetensors file of the layers, written by hand (BF16: the upper halves of the float32 values)."""
    header, chunks, offset = {}, [], 0
    for name, x in _arrays(layers, np.float64).items():
        if code == "BF16":
            bits = np.asarray(x, np.float32).view(np.uint32)
            assert not (bits & 0xFFFF).any(), "a value that is not a bfloat16"
            raw = (bits >> 16).astype("<u2").tobytes()
        else:
            raw = np.asarray(x).astype(_SAFE[code][0]).tobytes()
        header[name] = {"dtype": code, "shape": list(x.shape), "data_offsets": [offset, offset + len(raw)]}
        chunks.append(raw)
        offset += len(raw)
    text = json.dumps(header).encode()
    return struct.pack("<Q", len(text)) + text + b"".join(chunks)


def _widths(layers: list) -> list[int]:
    return [len(layers[0][0][0])] + [len(b) for _, b in layers]


def _record(data: bytes, layers: list, name: str = "a.npz", fmt: str = "npz") -> dict:
    tensors = [f"{2 * i}.{part}" for i in range(len(layers)) for part in ("weight", "bias")]
    return {"name": name, "sha256": hashlib.sha256(data).hexdigest(), "atoms": [],
            "model": {"format": fmt, "rule": "default", "tensors": tensors, "layout": "out-in",
                      "activation": ACTIVATION},
            "widths": _widths(layers), "output_relu": False}


def _doc(kind: str, inputs: list, proof: dict) -> dict:
    return {"format": "certsym-certificate", "version": 1, "kind": kind, "claim": CLAIMS[kind],
            "field": {"type": "QQ"}, "inputs": inputs, "proof": proof}


def _check(doc: dict, files: list):
    return check_certificate(json.loads(json.dumps(doc)), list(files))


def _pair_doc(kind: str, layers1: list, layers2: list, proof: dict, dtype=np.float32):
    a, b = _npz(layers1, dtype), _npz(layers2, dtype)
    return _doc(kind, [_record(a, layers1, "a.npz"), _record(b, layers2, "b.npz")], proof), [a, b]


def _parameters(layers: list) -> dict:
    return {"layers": [{"W": [[str(F(float(x))) for x in row] for row in W], "b": [str(F(float(x))) for x in b]}
                       for W, b in layers], "m": len(layers[0][0][0]), "output_relu": False}


def _embedded(doc: dict, files: list) -> dict:
    """The same certificate with every referenced npz file's layers embedded (read back with numpy)."""
    out = copy.deepcopy(doc)
    for entry, data in zip(out["inputs"], files, strict=True):
        if "widths" not in entry:
            continue
        z = np.load(io.BytesIO(data))
        names = entry["model"]["tensors"]
        layers = [(z[names[2 * i]].astype(np.float64), z[names[2 * i + 1]].astype(np.float64))
                  for i in range(len(names) // 2)]
        del entry["widths"], entry["output_relu"]
        entry["parameters"] = _parameters(layers)
    return out


def _produced(tmp_path: Path, A: dict, B: dict, suffix: str = ".npz", writer=None):
    """certsym's referenced certificate of two files written from the arrays, and the files' bytes."""
    paths = []
    for name, arrays in (("a", A), ("b", B)):
        path = tmp_path / f"{name}{suffix}"
        if writer is None:
            np.savez(path, **{k: np.ascontiguousarray(v) for k, v in arrays.items()})
        else:
            path.write_bytes(writer(arrays))
        paths.append(str(path))
    result = certsym.equivalent(*paths)
    return result, result.certificate(reference=True), [Path(p).read_bytes() for p in paths]


# -- seeded pairs ----------------------------------------------------------------------------------------------------
def _disguise(seed: int, spread: int = 2, odd: bool = False) -> tuple[dict, dict]:
    """θ (integers in [−3, 3] times 2^[−spread, spread], some subnormal or −0.0 when ``odd``) and a disguise of it:
    hidden units permuted and scaled by powers of two, a move D1–D4 undone (D3 by λ = 2) in some layers, sometimes
    one weight moved by 1/8. Float32 arrays, keys "0.weight", "0.bias", …"""
    rng = np.random.default_rng(seed)
    depth, m = int(rng.integers(2, 4)), int(rng.integers(1, 4))
    widths = [m] + [int(rng.integers(1, 5)) for _ in range(depth)] + [int(rng.integers(1, 3))]

    def values(shape):
        x = rng.integers(-3, 4, shape) * 2.0 ** rng.integers(-spread, spread + 1, shape)
        if odd:
            x = np.where(rng.random(shape) < 0.15, rng.integers(-3, 4, shape) * 2.0 ** -149, x)
            x = np.where(rng.random(shape) < 0.1, -0.0, x)
        return x

    base = [(values((b, a)), values(b)) for a, b in zip(widths, widths[1:], strict=False)]
    W, B = [w.copy() for w, _ in base], [b.copy() for _, b in base]
    for ell in range(1, depth + 1):
        n = len(B[ell - 1])
        perm, e = rng.permutation(n), rng.integers(-min(spread, 100), min(spread, 100) + 1, n)
        W[ell - 1], B[ell - 1] = np.ldexp(W[ell - 1][perm], e[:, None]), np.ldexp(B[ell - 1][perm], e)
        W[ell] = np.ldexp(W[ell][:, perm], -e[None, :])
        move, width, column = ["none", "D1", "D2", "D3", "D4"][int(rng.integers(0, 5))], W[ell - 1].shape[1], None
        if move == "D1":
            row, bias, column = rng.integers(-3, 4, (1, width)), 1.0, np.zeros(W[ell].shape[0])
        elif move == "D2":
            row, bias, column = np.zeros((1, width)), 2.0, rng.integers(-2, 3, W[ell].shape[0]).astype(np.float64)
            B[ell] = B[ell] - column * 2
        elif move == "D3":
            row, bias = 2 * W[ell - 1][:1], 2 * B[ell - 1][0]
            column = W[ell][:, 0] / 4
            W[ell][:, 0] = W[ell][:, 0] / 2
        elif move == "D4" and ell >= 2:
            row, bias, column = -rng.integers(0, 4, (1, width)), -1.0, rng.integers(-3, 4, W[ell].shape[0])
        if column is not None:
            W[ell - 1] = np.vstack([W[ell - 1], row])
            B[ell - 1] = np.append(B[ell - 1], bias)
            W[ell] = np.hstack([W[ell], np.asarray(column, np.float64)[:, None]])
    if rng.random() < 0.25:
        ell = int(rng.integers(0, len(W)))
        W[ell].flat[int(rng.integers(0, W[ell].size))] += 0.125
    with np.errstate(over="ignore"):
        return _arrays(base), _arrays(list(zip(W, B, strict=True)))


def _thirds(seed: int) -> tuple[dict, dict]:
    """Integer layers and a disguise scaled by 1, 2 or 3 per unit (the next layer's columns of θ1 scaled instead),
    with merges by λ = 3: the general path's certificates (scalings and λ not powers of two)."""
    rng = np.random.default_rng(seed)
    depth, m = int(rng.integers(2, 4)), int(rng.integers(1, 4))
    widths = [m] + [int(rng.integers(1, 5)) for _ in range(depth)] + [int(rng.integers(1, 3))]
    base = [(rng.integers(-3, 4, (b, a)).astype(np.float64), rng.integers(-3, 4, b).astype(np.float64))
            for a, b in zip(widths, widths[1:], strict=False)]
    A = [[w.copy(), b.copy()] for w, b in base]
    C = [[w.copy(), b.copy()] for w, b in base]
    for ell in range(1, depth + 1):
        n = len(base[ell - 1][1])
        d = rng.integers(1, 4, n).astype(np.float64)
        C[ell - 1] = [C[ell - 1][0] * d[:, None], C[ell - 1][1] * d]
        A[ell][0] = A[ell][0] * d[None, :]
        perm = rng.permutation(n)
        C[ell - 1] = [C[ell - 1][0][perm], C[ell - 1][1][perm]]
        C[ell][0] = C[ell][0][:, perm]
        if rng.random() < 0.5:  # unit 0 split into itself and 3 times itself
            W, b = C[ell - 1]
            C[ell - 1] = [np.vstack([W, 3 * W[:1]]), np.append(b, 3 * b[0])]
            t = rng.integers(-2, 3, C[ell][0].shape[0]).astype(np.float64)
            C[ell][0] = np.hstack([C[ell][0], t[:, None]])
            C[ell][0][:, 0] -= 3 * t
    if rng.random() < 0.2:
        C[-1][1][0] += 1
    return _arrays(A), _arrays(C)


def _mutations(doc: dict, rng: random.Random, count: int) -> list[dict]:
    """Forgeries of a deep certificate: scalings changed, pairs swapped, moves dropped or added, matching scalings
    changed, witnesses or values moved."""
    out = []
    for _ in range(count):
        d = copy.deepcopy(doc)
        p = d["proof"]
        if "witness" in p:
            if rng.random() < 0.5:
                q = rng.randrange(len(p["witness"]))
                p["witness"][q] = str(F(p["witness"][q]) + F(1, 64))
            else:
                p["values"][rng.randrange(2)][0] = str(F(p["values"][0][0]) + F(1, 2**100))
            out.append(d)
            continue
        if "alignment" not in p:
            continue
        choice = rng.randrange(5)
        layer = rng.choice(p["alignment"]) if p["alignment"] else []
        if choice == 0 and layer:
            pair = rng.choice(layer)
            pair[2] = str(F(pair[2]) * F(rng.choice(["2", "1/2", "3", "-1", "0", "2/3", str(2**130),
                                                       f"1/{2**130}"])))
        elif choice == 1 and len(layer) >= 2:
            a, b = rng.sample(range(len(layer)), 2)
            layer[a][1], layer[b][1] = layer[b][1], layer[a][1]
        elif choice == 2 and any(p["reduction"]):
            steps = rng.choice([s for s in p["reduction"] if s])
            del steps[rng.randrange(len(steps))]
        elif choice == 3:
            steps = p["reduction"][rng.randrange(2)]
            steps.insert(rng.randrange(len(steps) + 1), {"step": rng.choice(["D1", "D2", "D4"]),
                                                         "layer": rng.randint(1, 2), "neuron": rng.randint(0, 4)})
        elif isinstance(p["block"].get("matching"), dict) and p["block"]["matching"]["scale"]:
            scales = p["block"]["matching"]["scale"]
            e = rng.randrange(len(scales))
            scales[e] = str(F(scales[e]) * rng.choice([2, F(1, 2), 3]))
        else:
            continue
        out.append(d)
    return out


# -- holes -----------------------------------------------------------------------------------------------------------
def _simple_pair(dtype) -> tuple[dict, dict]:
    """A 2-3-3-2-2 network of small integers and the same network with its hidden units permuted (true for any
    element type that holds small integers)."""
    rng = np.random.default_rng(11)
    widths = [2, 3, 3, 2]
    layers = [(rng.integers(-3, 4, (b, a)), rng.integers(-3, 4, b)) for a, b in zip(widths, widths[1:], strict=False)]
    W, B = [np.array(w, np.float64) for w, _ in layers], [np.array(b, np.float64) for _, b in layers]
    for ell, perm in ((1, [2, 0, 1]), (2, [1, 2, 0])):
        W[ell - 1], B[ell - 1] = W[ell - 1][perm], B[ell - 1][perm]
        W[ell] = W[ell][:, perm]
    return _arrays(layers, dtype), _arrays(list(zip(W, B, strict=True)), dtype)


@pytest.mark.parametrize("dtype", [np.float64, np.int8], ids=["float64", "int8"])
def test_the_producers_certificate_of_float64_or_integer_files_replays(tmp_path: Path, dtype) -> None:
    A, B = _simple_pair(dtype)
    result, doc, files = _produced(tmp_path, A, B)
    assert result.equivalent
    assert all("widths" in entry for entry in doc["inputs"])  # referenced, not embedded
    report = _check(doc, files)
    assert "malformed" not in report.reason, report.reason
    assert report.valid, report.reason


def test_a_d1_step_on_a_float64_file_is_replayed() -> None:
    # θ: 1-2-1-1 with hidden unit 1 of layer 1 unused (its output column is 0): D1 removes it, on both networks
    layers = [([[1.0], [2.0]], [0.0, 1.0]), ([[1.0, 0.0]], [0.0]), ([[1.0]], [0.0])]
    proof = {"reduction": [[{"step": "D1", "layer": 1, "neuron": 1}], [{"step": "D1", "layer": 1, "neuron": 1}]],
             "alignment": [[[0, 0, "1"]]],
             "block": {"reduction": [[], []], "matching": [{"theta1": 0, "theta2": 0, "scale": "1",
                                                            "statement": "H_n invariance"}],
                       "merges": [], "pairs": [], "statement": "affine parts cancel"},
             "statement": "block lemma"}
    doc, files = _pair_doc("deep_equivalent", layers, layers, proof, np.float64)
    assert _check(_embedded(doc, files), files).valid
    report = _check(doc, files)
    assert report.valid, report.reason


def _costly_block(n: int, p: int, digits: int) -> tuple[dict, list, int]:
    """A true deep_equivalent certificate of one file against itself: p hidden units of layer 1 with zero rows and
    biases (aligned with p scalings of ``digits`` digits, which nothing constrains), n units of layer 2 reading each
    of them with weight 1.5, a zero output layer; the block reduction zeroes every unit of both networks. Returns the
    certificate, the files and the cost of the products W_2[j][q]·d_q of θ1's block, each taken once."""
    layers = [([[0.0]] * p, [0.0] * p), ([[1.5] * p] * n, [1.0] * n), ([[0.0] * n], [0.0])]
    scalings = [str(q + 1) * digits for q in range(p)]

    def zero() -> list:
        return [{"step": "zero", "neuron": i, "statement": "zeroing lemma"} for i in range(n)]

    proof = {"reduction": [[], []], "alignment": [[[q, q, scalings[q]] for q in range(p)]],
             "block": {"reduction": [zero(), zero()], "matching": [], "merges": [], "pairs": [],
                       "statement": "affine parts cancel"},
             "statement": "block lemma"}
    doc, files = _pair_doc("deep_equivalent", layers, layers, proof)
    bits = rational(scalings[0]).numerator.bit_length()
    return doc, files, n * p * cost((2, 1), (bits, 1))


def test_a_top_blocks_rows_are_charged_by_the_size_of_their_scalings() -> None:
    doc, files, products = _costly_block(200, 2, 20_000)
    embedded = _check(_embedded(doc, files), files)
    assert embedded.valid and embedded.work >= products  # the embedded twin pays for its products
    report = _check(doc, files)
    assert report.valid, report.reason
    assert report.work >= products, f"charged {report.work:,} units for products costing {products:,}"


# -- what held: the producer's certificates --------------------------------------------------------------------------
@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("kind", ["npz-f32", "npz-f16", "safetensors-bf16", "safetensors-f32"])
def test_the_producers_certificates_of_narrow_files_replay(tmp_path: Path, seed: int, kind: str) -> None:
    A, B = _disguise(seed)
    if kind == "npz-f16":
        A, B = ({k: v.astype(np.float16) for k, v in X.items()} for X in (A, B))
        _, doc, files = _produced(tmp_path, A, B)
    elif kind.startswith("safetensors"):
        code = kind.split("-")[1].upper()
        _, doc, files = _produced(tmp_path, A, B, ".safetensors",
                                  lambda arrays: _safetensors_arrays(arrays, code))
    else:
        _, doc, files = _produced(tmp_path, A, B)
    assert all("widths" in entry for entry in doc["inputs"])
    report = _check(doc, files)
    assert report.valid, report.reason


def _safetensors_arrays(arrays: dict, code: str) -> bytes:
    count = len(arrays) // 2
    return _safetensors([(arrays[f"{2 * i}.weight"], arrays[f"{2 * i}.bias"]) for i in range(count)], code)


@pytest.mark.parametrize("seed", range(10))
def test_the_general_paths_referenced_certificates_replay(tmp_path: Path, seed: int) -> None:
    A, B = _thirds(seed)
    _, doc, files = _produced(tmp_path, A, B)
    assert all("widths" in entry for entry in doc["inputs"])
    report = _check(doc, files)
    assert report.valid, report.reason


def test_a_phase_splitting_proof_on_referenced_files_replays(tmp_path: Path) -> None:
    one, zero = np.float32(1), np.zeros(2, np.float32)
    A = {"0.weight": np.array([[1], [-1]], np.float32), "0.bias": zero, "2.weight": np.eye(2, dtype=np.float32),
         "2.bias": zero, "4.weight": np.array([[1, -1]], np.float32), "4.bias": np.zeros(1, np.float32)}
    B = dict(A, **{"2.weight": np.array([[one, -one], [-one, one]], np.float32)})
    result, doc, files = _produced(tmp_path, A, B)
    assert result.equivalent and doc["proof"]["statement"] == "phase splitting"
    assert _check(doc, files).valid
    forged = copy.deepcopy(doc)
    forged["proof"]["phases"][2] = ["flat", ["1/2", "1/3"]]
    assert not _check(forged, files).valid


# -- what held: referenced and embedded replays agree ----------------------------------------------------------------
@pytest.mark.parametrize("spread,odd", [(2, False), (40, True), (60, False)], ids=["small", "subnormal", "wide"])
def test_referenced_and_embedded_replays_agree(tmp_path: Path, spread: int, odd: bool) -> None:
    rng = random.Random(spread)
    agree = 0
    for seed in range(14):
        A, B = _disguise(seed + 100 * spread, spread, odd)
        if not all(np.isfinite(v).all() for v in (*A.values(), *B.values())):
            continue
        result, doc, files = _produced(tmp_path, A, B)
        if result.status == "undecided":
            continue
        for forged in [doc, *_mutations(doc, rng, 4)]:
            referenced, embedded = _check(forged, files), _check(_embedded(forged, files), files)
            assert (referenced.valid, "malformed" in referenced.reason) == (embedded.valid, False), \
                (seed, referenced.reason, embedded.reason)
            agree += 1
    assert agree >= 40


@pytest.mark.parametrize("seed", range(6))
def test_referenced_and_embedded_replays_agree_on_the_general_path(tmp_path: Path, seed: int) -> None:
    A, B = _thirds(seed + 50)
    _, doc, files = _produced(tmp_path, A, B)
    for forged in [doc, *_mutations(doc, random.Random(seed), 6)]:
        referenced, embedded = _check(forged, files), _check(_embedded(forged, files), files)
        assert referenced.valid == embedded.valid, (referenced.reason, embedded.reason)


# -- what held: alignments on raw floats -----------------------------------------------------------------------------
def _scaled_pair(e: int, tiny: bool) -> tuple[list, list, str]:
    """θ1: 2-2-2-1 and θ2 whose first hidden layer is θ1's times 2^e (the next columns times 2^−e): the alignment of
    layer 1 is d = 2^−e. ``tiny``: θ1's first layer is subnormal (multiples of 2^−149)."""
    unit = 2.0 ** -149 if tiny else 1.0
    W1 = [[3 * unit, -unit], [unit, 5 * unit]]
    b1 = [-unit, 0.0]
    W2 = [[1.0, -2.0], [0.5, 1.0]]
    W3 = [[1.0, -1.0]]
    s = 2.0 ** e
    first = [([[x * s for x in row] for row in W1], [x * s for x in b1]),
             ([[x / s for x in row] for row in W2], [0.25, -0.5]), (W3, [0.0])]
    return [(W1, b1), (W2, [0.25, -0.5]), (W3, [0.0])], first, str(F(2) ** -e)


def _lemma(alignment: list, n: int = 2) -> dict:
    return {"reduction": [[], []], "alignment": alignment,
            "block": {"reduction": [[], []], "matching": [{"theta1": i, "theta2": i, "scale": "1",
                                                           "statement": "H_n invariance"} for i in range(n)],
                      "merges": [], "pairs": [], "statement": "affine parts cancel"},
            "statement": "block lemma"}


@pytest.mark.parametrize("e,tiny", [(128, True), (100, True), (-100, False), (-126, False), (60, False)])
def test_true_alignments_by_large_powers_of_two_replay(monkeypatch, e: int, tiny: bool) -> None:
    layers1, layers2, d = _scaled_pair(e, tiny)
    assert all(np.isfinite(np.float32(x)) and float(np.float32(x)) == x
               for W, b in layers2 for row in (*W, b) for x in row)
    seen, test = [], deep_files.Aligned.test

    def spy(self, *args):
        seen.append(test(self, *args))
        return seen[-1]

    monkeypatch.setattr(deep_files.Aligned, "test", spy)
    doc, files = _pair_doc("deep_equivalent", layers1, layers2, _lemma([[[0, 0, d], [1, 1, d]]]))
    report = _check(doc, files)
    assert report.valid, report.reason
    assert seen == [True, True]  # compared on the raw floats


@pytest.mark.parametrize("factor", ["2", "1/2", "3", "1/3", "-1", "0", str(2**129), f"1/{2**129}", "2/2"])
def test_forged_alignment_scalings_are_refused(factor: str) -> None:
    layers1, layers2, d = _scaled_pair(128, True)
    forged = str(F(d) * F(factor))
    doc, files = _pair_doc("deep_equivalent", layers1, layers2, _lemma([[[0, 0, forged], [1, 1, d]]]))
    report = _check(doc, files)
    assert report.valid == (factor == "2/2") and "malformed" not in report.reason, report.reason


@pytest.mark.parametrize("scaling", [2, 1.0, None, ["1"], "0x2", "1e3", " 1"])
def test_alignment_scalings_that_are_not_rational_strings_are_refused(scaling) -> None:
    layers = _scaled_pair(0, False)[0]
    doc, files = _pair_doc("deep_equivalent", layers, layers, _lemma([[[0, 0, scaling], [1, 1, "1"]]]))
    report = _check(doc, files)
    assert not report.valid and "malformed" not in report.reason, report.reason


def test_a_subnormal_ulp_breaks_an_alignment_by_two_to_the_128() -> None:
    layers1, layers2, d = _scaled_pair(128, True)
    layers1[0][0][1][1] += 2.0 ** -149  # 5·2^−149 → 6·2^−149: still a float32
    doc, files = _pair_doc("deep_equivalent", layers1, layers2, _lemma([[[0, 0, d], [1, 1, d]]]))
    report = _check(doc, files)
    assert not report.valid and "d * z2" in report.reason, report.reason


def test_negative_zero_is_zero_in_alignments_and_moves() -> None:
    # θ1 has −0.0 where θ2 has 0.0 (weights, biases, the zero column removed by D1)
    layers1 = [([[-0.0, 1.0], [2.0, -0.0], [1.0, 1.0]], [-0.0, 1.0, 0.5]), ([[1.0, -0.0, -0.0], [0.0, 1.0, -0.0]],
               [-0.0, 0.0]), ([[1.0, 2.0]], [-0.0])]
    layers2 = [([[0.0, 1.0], [2.0, 0.0], [1.0, 1.0]], [0.0, 1.0, 0.5]), ([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]],
               [0.0, 0.0]), ([[1.0, 2.0]], [0.0])]
    proof = _lemma([[[0, 0, "1"], [1, 1, "1"]]])
    proof["reduction"] = [[{"step": "D1", "layer": 1, "neuron": 2}], [{"step": "D1", "layer": 1, "neuron": 2}]]
    doc, files = _pair_doc("deep_equivalent", layers1, layers2, proof)
    report = _check(doc, files)
    assert report.valid, report.reason


# -- what held: moves against raw rows -------------------------------------------------------------------------------
_TINY = 2.0 ** -149


def _moves_net(column: float = 0.0, row: float = 0.0, bias: float = -1.0) -> list:
    """1-2-2-1: hidden unit 1 of layer 2 has the row [row, 0], bias ``bias`` and output weight ``column``."""
    return [([[1.0], [-1.0]], [0.0, 0.0]), ([[1.0, 1.0], [row, 0.0]], [0.0, bias]), ([[1.0, column]], [0.0])]


@pytest.mark.parametrize("step,net,valid", [
    ("D1", _moves_net(column=0.0), True),
    ("D1", _moves_net(column=_TINY), False),
    ("D1", _moves_net(column=-_TINY), False),
    ("D2", _moves_net(row=0.0, bias=-1.0), True),
    ("D2", _moves_net(row=_TINY, bias=-1.0), False),
    ("D4", _moves_net(row=-1.0, bias=-1.0), True),
    ("D4", _moves_net(row=_TINY, bias=-1.0), False),
    ("D4", _moves_net(row=-1.0, bias=_TINY), False),
])
def test_moves_forged_by_one_subnormal_entry_are_refused(step: str, net: list, valid: bool) -> None:
    reduced = [([[1.0], [-1.0]], [0.0, 0.0]), ([[1.0, 1.0]], [0.0]), ([[1.0]], [0.0])]
    proof = _lemma([[[0, 0, "1"], [1, 1, "1"]]], 1)
    proof["reduction"] = [[{"step": step, "layer": 2, "neuron": 1}], []]
    doc, files = _pair_doc("deep_equivalent", net, reduced, proof)
    report = _check(doc, files)
    assert report.valid == valid and "malformed" not in report.reason, report.reason


def test_d4_on_the_first_layer_and_wrong_merges_are_refused() -> None:
    net = [([[-1.0], [-2.0], [1.0]], [-1.0, -2.0, 0.0]), ([[1.0, 1.0, 1.0]], [0.0]), ([[1.0]], [0.0])]
    for steps in ([{"step": "D4", "layer": 1, "neuron": 0}],
                  [{"step": "D3", "layer": 1, "into": 0, "from": 1, "lambda": "3"}],
                  [{"step": "D3", "layer": 1, "into": 0, "from": 1, "lambda": "0"}],
                  [{"step": "D3", "layer": 1, "into": 0, "from": 0, "lambda": "1"}],
                  [{"step": "D3", "layer": 1, "into": 0, "from": 1, "lambda": "2", "extra": 1}],
                  [{"step": "D1", "layer": 3, "neuron": 0}], [{"step": "D1", "layer": 0, "neuron": 0}],
                  [{"step": "D2", "layer": 1, "neuron": 7}], [{"step": "D5", "layer": 1, "neuron": 0}]):
        proof = _lemma([[[0, 0, "1"], [1, 1, "1"], [2, 2, "1"]]], 1)
        proof["reduction"] = [steps, []]
        doc, files = _pair_doc("deep_equivalent", net, net, proof)
        report = _check(doc, files)
        assert not report.valid and "malformed" not in report.reason, (steps, report.reason)


def _merge_pair() -> tuple[list, list]:
    """θ1: 1-3-2-1 where hidden unit 2 of layer 1 is 2 × unit 0 (merged by D3, λ = 2, which changes θ1's layer-2
    columns in place); θ2: the merged network."""
    theta1 = [([[1.0], [-1.0], [2.0]], [0.5, 0.0, 1.0]), ([[1.0, 2.0, 0.5], [0.0, 1.0, -1.0]], [0.0, 0.25]),
              ([[1.0, -1.0]], [0.0])]
    theta2 = [([[1.0], [-1.0]], [0.5, 0.0]), ([[2.0, 2.0], [-2.0, 1.0]], [0.0, 0.25]), ([[1.0, -1.0]], [0.0])]
    return theta1, theta2


def test_a_merges_rows_are_compared_as_fractions() -> None:
    theta1, theta2 = _merge_pair()
    proof = _lemma([[[0, 0, "1"], [1, 1, "1"]], [[0, 0, "1"], [1, 1, "1"]]], 2)
    proof["reduction"] = [[{"step": "D3", "layer": 1, "into": 0, "from": 2, "lambda": "2"}], []]
    deeper = [theta1[0], theta1[1], ([[1.0, 0.0], [0.0, 1.0]], [0.0, 0.0]), theta1[2]]
    deeper2 = [theta2[0], theta2[1], ([[1.0, 0.0], [0.0, 1.0]], [0.0, 0.0]), theta2[2]]
    doc, files = _pair_doc("deep_equivalent", deeper, deeper2, proof)
    assert _check(doc, files).valid
    # θ2 with layer 2 as it was before the merge (its columns 0 and 1) is not equivalent: refused
    wrong = [theta2[0], ([[1.0, 2.0], [0.0, 1.0]], [0.0, 0.25]), deeper2[2], theta2[2]]
    doc, files = _pair_doc("deep_equivalent", deeper, wrong, proof)
    assert not _check(doc, files).valid
    lam = copy.deepcopy(proof)
    lam["reduction"][0][0]["lambda"] = "4"
    doc, files = _pair_doc("deep_equivalent", deeper, deeper2, lam)
    assert not _check(doc, files).valid


@pytest.mark.parametrize("weight,bias,valid", [
    (1 + 2.0**-23, 1 + 2.0**-22, False),  # (1 + 2^-23)^2 = 1 + 2^-22 + 2^-46 (47 bits): a float32 bias only rounds it
    (1 + 2.0**-23, 1 + 2.0**-22 + 2.0**-23, False),
    (1.0, 1 + 2.0**-23, True),  # the fold leaves a float32 bias: raw rows on both sides
    (2.0**100, 2.0**100 * (1 + 2.0**-23), True),
])
def test_a_fold_to_a_bias_of_more_than_24_bits_is_compared_as_a_fraction(weight: float, bias: float,
                                                                          valid: bool) -> None:
    # θ1: 1-2-1-1 whose hidden unit 1 of layer 1 is the constant σ(1 + 2^-23), folded by D2 into layer 2's bias
    theta1 = [([[1.0], [0.0]], [0.0, 1 + 2.0**-23]), ([[1.0, weight]], [0.0]), ([[1.0]], [0.0])]
    theta2 = [([[1.0]], [0.0]), ([[1.0]], [bias]), ([[1.0]], [0.0])]
    assert all(float(np.float32(x)) == x for x in (weight, bias))
    proof = _lemma([[[0, 0, "1"]]], 1)
    proof["reduction"] = [[{"step": "D2", "layer": 1, "neuron": 1}], []]
    doc, files = _pair_doc("deep_equivalent", theta1, theta2, proof)
    report = _check(doc, files)
    assert report.valid == valid and "malformed" not in report.reason, report.reason


# -- what held: files and records ------------------------------------------------------------------------------------
def _plain() -> list:
    return _scaled_pair(0, False)[0]


@pytest.mark.parametrize("where,value,dtype", [
    ("W", float("nan"), np.float32), ("W", float("inf"), np.float32), ("W", -float("inf"), np.float16),
    ("b", float("nan"), np.float32), ("b", float("inf"), np.float16), ("W", float("nan"), np.float16),
])
def test_non_finite_files_are_refused_with_a_reason(where: str, value: float, dtype) -> None:
    bad = copy.deepcopy(_plain())
    if where == "W":
        bad[1][0][0][1] = value
    else:
        bad[1][1][1] = value
    doc, files = _pair_doc("deep_equivalent", bad, bad, _lemma([[[0, 0, "1"], [1, 1, "1"]]]), dtype)
    report = _check(doc, files)
    assert not report.valid and "NaN or infinite" in report.reason, report.reason


def _with(doc: dict, change) -> dict:
    out = copy.deepcopy(doc)
    change(out)
    return out


@pytest.mark.parametrize("change", [
    lambda d: d["inputs"][0].update(widths=[2, 2, 3, 1]),
    lambda d: d["inputs"][0].update(widths=[2, 2, 1]),
    lambda d: d["inputs"][0].update(widths=[2, 2, 2, True]),
    lambda d: d["inputs"][0].update(widths=[2, 2, 2, 1, 1]),
    lambda d: d["inputs"][0].update(widths=[2, 2, 2, 0]),
    lambda d: d["inputs"][0].update(widths="2-2-2-1"),
    lambda d: d["inputs"][0].update(widths=[10**9, 10**9, 10**9, 1]),
    lambda d: d["inputs"][0].update(output_relu=True),
    lambda d: d["inputs"][0].update(output_relu=None),
    lambda d: d["inputs"][0].update(output_relu=0),
    lambda d: d["inputs"][0].pop("output_relu"),
    lambda d: d["inputs"][0].update(extra=1),
    lambda d: d["inputs"][0].update(atoms=[{"expr": "2^(1/2)", "value": "1"}]),
    lambda d: d["inputs"][0].update(shape={"m": 2, "n": 2, "k": 1}),
    lambda d: d["inputs"][0].update(parameters=_parameters(_plain())),
    lambda d: d["inputs"][0]["model"].update(format="onnx"),
    lambda d: d["inputs"][0]["model"].update(format="nnet"),
    lambda d: d["inputs"][0]["model"].update(tensors=["2.weight", "2.bias", "0.weight", "0.bias", "4.weight",
                                                      "4.bias"]),
    lambda d: d["inputs"][0]["model"].update(layout="in-out"),
    lambda d: d["inputs"][0].update(sha256="0" * 64),
    lambda d: d.update(field={"type": "QQ(sqrt)", "modulus": ["-2", "0", "1"]}),
    lambda d: d.update(kind="deep_distance_bound", claim=CLAIMS["deep_distance_bound"]),
    lambda d: d.update(kind="deep_top1_agreement", claim=CLAIMS["deep_top1_agreement"]),
    lambda d: d.update(kind="equivalent", claim=CLAIMS["equivalent"]),
    lambda d: d.update(kind="not_equivalent", claim=CLAIMS["not_equivalent"]),
    lambda d: d.update(kind="distance_bound", claim=CLAIMS["distance_bound"]),
])
def test_records_that_do_not_describe_the_file_are_refused(change) -> None:
    layers = _plain()
    doc, files = _pair_doc("deep_equivalent", layers, layers, _lemma([[[0, 0, "1"], [1, 1, "1"]]]))
    assert _check(doc, files).valid
    report = _check(_with(doc, change), files)
    assert not report.valid and "malformed" not in report.reason, report.reason


def test_a_referenced_certificate_without_its_files_cannot_be_checked() -> None:
    layers = _plain()
    doc, _ = _pair_doc("deep_equivalent", layers, layers, _lemma([[[0, 0, "1"], [1, 1, "1"]]]))
    report = check_certificate(json.loads(json.dumps(doc)))
    assert not report.valid and report.cannot_check


def test_widths_far_beyond_a_small_file_are_refused_before_reading() -> None:
    # a deflated file of 1.1M zeros is a few KB: a referenced file defines at most one weight per byte (+ 2^20)
    buf = io.BytesIO()
    np.savez_compressed(buf, **{"0.weight": np.zeros((1100, 1000), np.float32), "0.bias": np.zeros(1100, np.float32),
                                "2.weight": np.zeros((1, 1100), np.float32), "2.bias": np.zeros(1, np.float32),
                                "4.weight": np.zeros((1, 1), np.float32), "4.bias": np.zeros(1, np.float32)})
    data = buf.getvalue()
    assert len(data) < 100_000
    rec = _record(data, [([[0.0]], [0.0])] * 3)
    rec["widths"] = [1000, 1100, 1, 1]
    doc = _doc("deep_equivalent", [rec, rec], _lemma([[[i, i, "1"] for i in range(1100)]], 1))
    report = _check(doc, [data, data])
    assert not report.valid and "beyond the checker's bound" in report.reason, report.reason


# -- what held: witnesses --------------------------------------------------------------------------------------------
def _apart() -> tuple[list, list]:
    theta1 = _plain()
    theta2 = copy.deepcopy(theta1)
    theta2[1][0][1][0] += 2.0 ** -20
    return theta1, theta2


def _evaluate(layers: list, x: list) -> list:
    h = [F(v) for v in x]
    for ell, (W, b) in enumerate(layers, 1):
        z = [sum((F(float(w)) * t for w, t in zip(row, h, strict=True)), F(float(c))) for row, c in zip(W, b,
                                                                                                       strict=True)]
        h = [max(t, F(0)) for t in z] if ell < len(layers) else z
    return h


@pytest.mark.parametrize("x", [["1", "1"], ["1/3", "5/7"], [f"{3**60}/{7**50}", "-2/9"], ["0", "0"]])
def test_witnesses_are_evaluated_exactly(x: list) -> None:
    theta1, theta2 = _apart()
    v1, v2 = _evaluate(theta1, x), _evaluate(theta2, x)
    proof = {"witness": x, "values": [[str(t) for t in v1], [str(t) for t in v2]], "statement": "exact evaluation"}
    doc, files = _pair_doc("deep_not_equivalent", theta1, theta2, proof)
    report = _check(doc, files)
    assert report.valid == (v1 != v2), report.reason
    if v1 != v2:
        for forged in (lambda d: d["proof"]["values"][0].__setitem__(0, str(v1[0] + F(1, 2**200))),
                       lambda d: d["proof"]["values"].__setitem__(1, d["proof"]["values"][0]),
                       lambda d: d["proof"]["values"][1].append("0"),
                       lambda d: d["proof"]["witness"].append("0"),
                       lambda d: d["proof"].update(statement="evaluation")):
            bad = _check(_with(doc, forged), files)
            assert not bad.valid and "malformed" not in bad.reason, bad.reason


# -- what held: one network referenced, one embedded -----------------------------------------------------------------
@pytest.mark.parametrize("embedded_side", [0, 1])
def test_one_referenced_network_beside_an_embedded_one(embedded_side: int) -> None:
    layers1, layers2, d = _scaled_pair(100, True)
    doc, files = _pair_doc("deep_equivalent", layers1, layers2, _lemma([[[0, 0, d], [1, 1, d]]]))
    mixed = copy.deepcopy(doc)
    mixed["inputs"][embedded_side] = _embedded(doc, files)["inputs"][embedded_side]
    assert _check(mixed, files).valid
    forged = copy.deepcopy(mixed)
    forged["proof"]["alignment"][0][1][2] = str(2 * F(d))
    report = _check(forged, files)
    assert not report.valid and "d * z2" in report.reason, report.reason
