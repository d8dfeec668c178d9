"""certsym.decide.deep_dyadic: the deep decision on float32 layers is the general deep path's (MATH.md Part III).

Random float32 networks (integers times powers of two) and their disguises (hidden units permuted and rescaled by
powers of two in every hidden layer, a move D1–D4 undone, sometimes one weight moved) are decided by both paths:
the same moves in the same order, the same alignment (as sets of pairs), EQUIVALENT exactly when the general path
proves it by the block lemma, and every NOT EQUIVALENT witness evaluated exactly by the general path's own
evaluation (``LayeredNetwork.evaluate``, which shares no code with ``exact_matvec``). Certificates of files replay
VALID with the files and are refused when forged.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from flint import fmpq
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import certsym
from certsym.decide import deep, deep_dyadic
from certsym.decide.deep_dyadic import DyadicLayers, StepAside
from certsym.numbers.floats import exact_matvec
from certsym_check import check_certificate

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _exact(x: float) -> fmpq:
    return fmpq(*float(x).as_integer_ratio())


@st.composite
def float_pairs(draw) -> tuple[DyadicLayers, DyadicLayers, bool]:
    """(θ, a disguise of θ, whether one weight was moved): float32 layers of integers in [-3, 3] times 2^[-2, 2]."""
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    depth, m = int(rng.integers(2, 4)), int(rng.integers(1, 4))
    widths = [m] + [int(rng.integers(1, 5)) for _ in range(depth)] + [int(rng.integers(1, 3))]
    layers = [((rng.integers(-3, 4, (b, a)) * 2.0 ** rng.integers(-2, 3, (b, a))).astype(np.float32),
               (rng.integers(-3, 4, b) * 2.0 ** rng.integers(-2, 3, b)).astype(np.float32))
              for a, b in zip(widths, widths[1:], strict=False)]
    W, B = [w.copy() for w, _ in layers], [b.copy() for _, b in layers]
    for ell in range(1, depth + 1):
        n = len(B[ell - 1])
        perm, d = rng.permutation(n), (2.0 ** rng.integers(-1, 2, n)).astype(np.float32)
        W[ell - 1], B[ell - 1] = W[ell - 1][perm] * d[:, None], B[ell - 1][perm] * d
        W[ell] = W[ell][:, perm] / d[None, :]
        move, width = draw(st.sampled_from(["none", "D1", "D2", "D3", "D4"])), W[ell - 1].shape[1]
        column = None
        if move == "D1":  # a unit whose outgoing column is zero
            row, bias, column = rng.integers(-3, 4, (1, width)), 1, np.zeros(W[ell].shape[0])
        elif move == "D2":  # a constant unit σ(2) = 2, compensated in the next bias
            row, bias, column = np.zeros((1, width)), 2, rng.integers(-2, 3, W[ell].shape[0]).astype(np.float64)
            B[ell] = (B[ell] - column * 2).astype(np.float32)
        elif move == "D3":  # unit 0 split into itself and twice itself, sharing its outgoing weights v/2 + 2·v/4
            row, bias = 2 * W[ell - 1][:1], 2 * B[ell - 1][0]
            column = W[ell][:, 0] / 4
            W[ell][:, 0] = W[ell][:, 0] / 2
        elif move == "D4" and ell >= 2:  # a row ≤ 0 on the nonnegative orthant: always 0
            row, bias, column = -rng.integers(0, 4, (1, width)), -1, rng.integers(-3, 4, W[ell].shape[0])
        if column is not None:
            W[ell - 1] = np.vstack([W[ell - 1], row]).astype(np.float32)
            B[ell - 1] = np.append(B[ell - 1], bias).astype(np.float32)
            W[ell] = np.hstack([W[ell], np.asarray(column, np.float32)[:, None]])
    moved = draw(st.booleans()) and draw(st.booleans())
    if moved:
        ell = int(rng.integers(0, len(W)))
        W[ell].flat[int(rng.integers(0, W[ell].size))] += np.float32(0.125)
    relu = draw(st.booleans()) and draw(st.booleans())
    return DyadicLayers.from_arrays(layers, relu), DyadicLayers.from_arrays(list(zip(W, B, strict=True)), relu), moved


@SETTINGS
@given(float_pairs())
def test_the_fast_path_takes_the_general_paths_steps(pair) -> None:
    a, b, _ = pair
    ea, eb = a.exact(), b.exact()
    aside = False
    for t, e in ((a, ea), (b, eb)):
        try:
            assert deep_dyadic.reduce(t).steps == deep.reduce(e).steps
        except StepAside:  # a merge by a ratio other than a power of two: the general path decides
            aside = True
    fast, general = deep_dyadic.decide(a, b), deep.decide(ea, eb)
    by_lemma = general.status == deep.EQUIVALENT and general.phases is None
    if fast is not None and fast.status == deep.EQUIVALENT:
        assert by_lemma
        assert [sorted(layer) for layer in fast.alignment] == [sorted(layer) for layer in general.alignment]
    if by_lemma and not aside:
        assert fast is not None and fast.status == deep.EQUIVALENT
    if fast is not None and fast.status == deep.NOT_EQUIVALENT:
        assert general.status != deep.EQUIVALENT
        assert (ea(fast.witness), eb(fast.witness)) == fast.values
        assert fast.values[0] != fast.values[1]


def _steps_aside(t: DyadicLayers) -> bool:
    try:
        deep_dyadic.reduce(t)
    except StepAside:
        return True
    return False


@SETTINGS
@given(float_pairs())
def test_disguises_are_equivalent_and_moved_weights_never_are(pair) -> None:
    """A disguise without a moved weight is EQUIVALENT on the fast path unless a merge ratio is not a power of two
    (then the general path decides); with a moved weight, EQUIVALENT only where the general path proves it too."""
    a, b, moved = pair
    fast = deep_dyadic.decide(a, b)
    equivalent = fast is not None and fast.status == deep.EQUIVALENT
    if moved:
        assert not equivalent or deep.decide(a.exact(), b.exact()).status == deep.EQUIVALENT
    else:
        assert equivalent or _steps_aside(a) or _steps_aside(b)


@settings(max_examples=80, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from([np.float16, np.float32, np.float64]))
def test_exact_matvec_is_the_rational_product(seed: int, dtype) -> None:
    rng = np.random.default_rng(seed)
    rows, cols = (int(x) for x in rng.integers(1, 9, 2))
    spread = {np.float16: 5, np.float32: 30, np.float64: 200}[dtype]
    W = (rng.standard_normal((rows, cols)) * 2.0 ** rng.integers(-spread, spread, (rows, cols))).astype(dtype)
    W[rng.random((rows, cols)) < 0.2] = 0
    b = rng.standard_normal(rows).astype(dtype)
    h = [fmpq(int(rng.integers(-10**12, 10**12)), 2 ** int(rng.integers(0, 90))) for _ in range(cols)]
    want = [sum((_exact(W[i, j]) * h[j] for j in range(cols)), fmpq(0)) + _exact(b[i]) for i in range(rows)]
    got = exact_matvec(W, b, h)
    assert got == want or (got is None and dtype is np.float64)


def test_exact_matvec_refuses_a_point_that_is_not_dyadic() -> None:
    assert exact_matvec(np.ones((2, 2), np.float32), np.zeros(2, np.float32), [fmpq(1, 3), fmpq(1)]) is None


# -- certificates of files --------------------------------------------------------------------------------------
def _files(tmp_path: Path, n: int = 24, seed: int = 5) -> tuple[str, str, str]:
    """θ (784-n-n-10 would be the benchmark; 12-n-n-3 here), a disguise (both hidden layers permuted and scaled by
    powers of two, a dead unit in each) and θ with one weight of layer 2 moved by one ulp, as .npz files."""
    rng = np.random.default_rng(seed)
    widths = [12, n, n, 3]
    a = {}
    for i, (fan_in, fan_out) in enumerate(zip(widths, widths[1:], strict=False)):
        a[f"{2 * i}.weight"] = (rng.standard_normal((fan_out, fan_in)) / np.sqrt(fan_in)).astype(np.float32)
        a[f"{2 * i}.bias"] = (rng.standard_normal(fan_out) * 0.1).astype(np.float32)
    b = {k: v.copy() for k, v in a.items()}
    for layer in (0, 2):
        perm, s = rng.permutation(n), (2.0 ** rng.integers(-2, 3, n)).astype(np.float32)
        b[f"{layer}.weight"] = b[f"{layer}.weight"][perm] * s[:, None]
        b[f"{layer}.bias"] = b[f"{layer}.bias"][perm] * s
        b[f"{layer + 2}.weight"] = b[f"{layer + 2}.weight"][:, perm] / s[None, :]
        b[f"{layer}.weight"] = np.vstack([b[f"{layer}.weight"], np.ones((1, b[f"{layer}.weight"].shape[1]),
                                                                         np.float32)])
        b[f"{layer}.bias"] = np.append(b[f"{layer}.bias"], np.float32(0.5))
        nxt = b[f"{layer + 2}.weight"]
        b[f"{layer + 2}.weight"] = np.hstack([nxt, np.zeros((nxt.shape[0], 1), np.float32)])
    c = {k: v.copy() for k, v in a.items()}
    c["2.weight"][3, 5] = np.nextafter(c["2.weight"][3, 5], np.float32(10))
    paths = []
    for name, z in (("a", a), ("b", b), ("c", c)):
        paths.append(str(tmp_path / f"{name}.npz"))
        np.savez(paths[-1], **z)
    return tuple(paths)


def _replay(doc: dict, files: list[str]):
    return check_certificate(json.loads(json.dumps(doc)), [Path(p).read_bytes() for p in files])


def test_certificates_of_files_reference_them_and_replay(tmp_path: Path) -> None:
    a, b, c = _files(tmp_path)
    same = certsym.equivalent(a, b)
    assert same.equivalent and same.verdict.reductions[1].steps  # the dead units removed by D1
    doc = same.certificate(reference=True)
    assert all("parameters" not in entry and entry["widths"][0] == 12 for entry in doc["inputs"])
    report = _replay(doc, [a, b])
    assert report.valid, report.reason
    assert report.checks["H alignment of a hidden layer"] == 1
    embedded = check_certificate(json.loads(json.dumps(same.certificate())))
    assert embedded.valid, embedded.reason
    apart = certsym.equivalent(a, c)
    assert apart.status == deep.NOT_EQUIVALENT
    assert apart.verdict.theta1.exact()(apart.witness) == apart.values[0]
    report = _replay(apart.certificate(reference=True), [a, c])
    assert report.valid, report.reason


def test_forged_certificates_of_files_are_refused(tmp_path: Path) -> None:
    a, b, c = _files(tmp_path)
    doc = certsym.equivalent(a, b).certificate(reference=True)

    def refused(change, files=(a, b)) -> str:
        forged = json.loads(json.dumps(doc))
        change(forged)
        report = _replay(forged, list(files))
        assert not report.valid
        return report.reason

    def scale(d):
        d["proof"]["alignment"][0][0][2] = str(2 * fmpq(d["proof"]["alignment"][0][0][2]))

    assert "d * z2" in refused(scale)
    assert refused(lambda d: d["proof"]["reduction"][1].insert(0, {"step": "D1", "layer": 1, "neuron": 0}))
    assert refused(lambda d: d["inputs"][1].update(widths=[12, 25, 24, 3]))
    assert "output_relu" in refused(lambda d: d["inputs"][0].update(output_relu=True))
    assert refused(lambda d: None, files=(a, c))  # another file than the certificate's
    apart = certsym.equivalent(a, c).certificate(reference=True)
    apart["proof"]["values"][1] = apart["proof"]["values"][0]
    assert not _replay(apart, [a, c]).valid
    shallow = json.loads(json.dumps(doc))
    shallow["kind"], shallow["claim"] = "equivalent", None
    assert not _replay(shallow, [a, b]).valid


@pytest.mark.parametrize("moved", [False, True])
def test_the_cli_writes_a_referenced_deep_certificate_the_checker_replays(tmp_path: Path, moved: bool) -> None:
    from certsym.cli import main
    from certsym_check.main import main as check_main

    a, b, c = _files(tmp_path)
    cert = str(tmp_path / "cert.json")
    code = main(["equiv", a, c if moved else b, "--cert", cert, "--reference"])
    assert code == (1 if moved else 0)
    assert check_main(["--inputs", a, c if moved else b, "--", cert]) == 0


def test_a_process_that_flushes_subnormals_is_refused_by_producer_and_checker(tmp_path: Path) -> None:
    """With the FTZ/DAZ modes torch.set_flush_denormal(True) sets, a subnormal weight reads as 0 in numpy and in
    Python alike: two networks that differ only there would look equal. Both sides refuse to work in such a
    process, and work again once it is switched off."""
    torch = pytest.importorskip("torch")
    from certsym.errors import InputError

    a, b, _ = _files(tmp_path)
    doc = certsym.equivalent(a, b).certificate(reference=True)
    assert torch.set_flush_denormal(True)
    try:
        with pytest.raises(InputError, match="flushes subnormal numbers"):
            certsym.equivalent(a, b)
        report = _replay(doc, [a, b])
    finally:
        torch.set_flush_denormal(False)
    assert report.cannot_check and "flushes subnormal numbers" in report.reason
    assert _replay(doc, [a, b]).valid
