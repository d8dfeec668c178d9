"""The certificate envelope (certificates/FORMAT.md): format, version, kind, claim, field and inputs checked, the
inputs bound to the files given, then the kind's replay (``kinds.KINDS``, its module imported when it is
replayed). Every failure inside is a rejection of that certificate with its reason, never an exception. Cost: the
binding (linear in the files) plus the replay."""

from __future__ import annotations

import math
import re

from certsym_check.atoms import Reader
from certsym_check.budget import metered
from certsym_check.core import (
    FloatColumns,
    FloatRows,
    Net,
    Report,
    float32_below_range_top,
    forget_scalings,
    index,
    keys,
    seq,
)
from certsym_check.errors import CannotCheck, Reject, WrongInputs
from certsym_check.fields import QQ, make_field
from certsym_check.inputs import InputFile, deferred_checks, reading, settle
from certsym_check.kinds import KINDS, LAYERED, SPEC_KINDS, replay_of

FORMAT, VERSION = "certsym-certificate", 1
CLAIMS = {
    "equivalent": "rho(theta1) = rho(theta2)",
    "not_equivalent": "rho(theta1) != rho(theta2)",
    "minimal_form": "theta_min is a minimal form of theta1 and rho(theta_min) = rho(theta1)",
    "affine": "rho(theta1) is the affine map x -> L x + C given",
    "not_affine": "rho(theta1) is not affine",
    "identifiable": "the fibre of theta1 in Omega(m,n,k) is exactly its H_n-orbit",
    "not_identifiable": "theta' realizes rho(theta1) and lies outside the H_n-orbit of theta1",
    "stabilizer": "Stab_H_n(theta) and Stab_H_n(A,b) are the products of symmetric groups and H_n' stated",
    "critical_point": "the restricted loss has exactly one critical point in the box, a critical point of F on M(k,k), "
                      "with F in the interval given",
    "distance_bound": "sup over the box of ||rho(theta1)(x) - rho(theta2)(x)||_inf lies in [lower, upper]",
    "hessian_inertia": "the Hessian of F at the certified critical point has no zero eigenvalue and the number of "
                       "negative eigenvalues given",
    "landscape_threshold": "the family's critical points of the restricted loss form one continuous branch for k in "
                           "the bracket; at its left end some compressed Hessian has a negative eigenvalue, at its "
                           "right end every one is positive definite",
    "wide_critical_point": "F on M(n,k) has exactly one critical point in the box of the fixed-point space of the "
                           "group generated, with F in the interval given (and, if stated, positive definite Hessian)",
    "added_neuron": "the certified critical point with one neuron added (a split row or a zero row) is not a local "
                    "minimum of F on M(k+1,k)",
    "deep_equivalent": "rho(theta1) = rho(theta2) for the deep networks given (and sigma of both when both end in a "
                       "ReLU)",
    "deep_not_equivalent": "rho(theta1) != rho(theta2) for the deep networks given (sigma of each that ends in a "
                           "ReLU)",
    "top1_agreement": "at every point of the box, rho(theta1) and rho(theta2) have the same set of largest outputs",
    "top1_disagreement": "at the witness in the box, rho(theta1) and rho(theta2) have unique largest outputs, and "
                         "they differ",
    "deep_top1_agreement": "at every point of the box, the deep networks f1 and f2 have the same set of largest "
                           "outputs",
    "deep_top1_disagreement": "at the witness in the box, the deep networks f1 and f2 have unique largest outputs, "
                              "and they differ",
    "deep_distance_bound": "sup over the box of ||f1(x) - f2(x)||_inf lies in [lower, upper] for the deep networks "
                           "given (f = rho(theta), or sigma(rho(theta)) for a network that ends in a ReLU)",
    "vnnlib_unsat": "no input in the property's input region makes its output part true for the networks given: "
                    "the property holds (unsat)",
    "vnnlib_sat": "the witness lies in the property's input region and makes its output part true for the networks "
                  "given (sat)",
}


_SHA256 = re.compile(r"[0-9a-f]{64}")


# the claims a monotone normalization of the outputs (a final Softmax or LogSoftmax) cannot change
TOP1_KINDS = ("top1_agreement", "top1_disagreement", "deep_top1_agreement", "deep_top1_disagreement")
SPEC_BYTES = 1 << 26  # a property file, decompressed
MODEL_SLACK = 1 << 20  # weights a referenced model file may define beyond one per byte of the file
# the kinds whose inputs may be referenced by SHA-256 instead of embedded
REFERENCING = ("equivalent", "not_equivalent", "distance_bound", "identifiable", "not_identifiable", "top1_agreement",
               "top1_disagreement", "deep_equivalent", "deep_not_equivalent")


def finite_tensor(t) -> bool:
    """No NaN or infinity in the tensor. Native float32 storage is first settled on its bytes
    (``float32_below_range_top``). Otherwise, for float16/float32, one float64 sum decides it: finite entries of
    at most 2^128 cannot overflow a float64 sum of fewer than 2^895 terms, and a NaN or infinity makes it
    non-finite (inf − inf is NaN)."""
    from certsym_check.readers.files import NARROW

    if t.code in NARROW:
        return float32_below_range_top(t.values) or math.isfinite(sum(t.values))
    return all(map(math.isfinite, t.values))


def same_file(record: dict, file: InputFile, where: str, wait: bool = True) -> None:
    """The given file's bytes hash to the SHA-256 the certificate records for it (``wait`` false: if the hash is
    already computed)."""
    digest = file.sha256(wait)
    if digest is not None and digest != record["sha256"]:
        raise Reject(f"{where}: the SHA-256 of the given file differs from the certificate's")


def model_net(F, record: dict, file: InputFile, where: str, rep: Report) -> Net:
    """θ read from the model file a certificate references by SHA-256 only (no embedded parameters). The file's
    SHA-256 is compared by the caller (``same_file``), which may let the replay run while it is computed. The
    model formats (``readers``) are imported here, for the certificates that reference their inputs."""
    from certsym_check.readers.files import NARROW, model_bytes, model_tensors

    shape = keys(record["shape"], {"m", "n", "k"}, f"{where}.shape")
    m, n, k = (index(shape[s], 10**9, f"{where}.shape.{s}") for s in "mnk")
    if m < 1 or k < 1:
        raise Reject(f"{where}: m and k must be positive")
    entries = n * (m + 1) + k * (n + 1)
    try:
        size = model_bytes(file, record["model"])
    except (Reject, CannotCheck) as exc:
        raise type(exc)(f"{where}: {exc}") from None
    if entries > size + MODEL_SLACK:  # memory O(file size): compressed zeros cannot make it gigabytes
        raise Reject(f"{where}: {entries:,} weights from a file of {size:,} bytes: beyond the checker's "
                     f"bound of one weight per byte of the file (+ {MODEL_SLACK:,})")
    try:
        (W1, b1, W2, b2), bound = model_tensors(file, record["model"], (m, n, k))
    except Reject as exc:
        raise type(exc)(f"{where}: {exc}") from None
    rep.bound.append(f"{where} {record['name']} (sha256 {record['sha256'][:16]}…, read from the file): {bound}")
    c = b2.exact()  # exact() rejects NaN and infinities
    if not all(finite_tensor(t) for t in (W1, b1, W2)):
        raise Reject(f"{where}: the model file holds a NaN or infinite weight")
    net = Net.__new__(Net)
    net.F, net.m, net.n, net.k = F, m, n, k
    narrow = W1.code in NARROW and b1.code in NARROW
    net.rows = FloatRows(W1, list(b1.flat()), narrow)
    net.v = FloatColumns(W2, W2.code in NARROW)
    net.c = c
    return net


def _record(r: object, i: int) -> dict:
    """An "inputs" entry: embedded parameters, or a model file referenced by SHA-256, shape and tensor names."""
    where = f"inputs[{i}]"
    if isinstance(r, dict) and "parameters" not in r and "widths" in r:
        from certsym_check.kinds.deep_files import check_record

        rec = check_record(r, where)
    elif isinstance(r, dict) and "parameters" not in r and "shape" in r:
        rec = keys(r, {"name", "sha256", "atoms", "model", "shape"}, where)
    else:
        rec = keys(r, {"name", "sha256", "atoms", "parameters"} | ({"model"} if isinstance(r, dict) and "model" in r
                                                                    else set()), where)
    if not isinstance(rec["name"], str) or not isinstance(rec["sha256"], str) or not _SHA256.fullmatch(rec["sha256"]):
        raise Reject(f"{where}: name must be a string and sha256 64 lowercase hex digits")
    return rec


def check_certificate(doc: object, files: list | None = None) -> Report:
    """Replay one certificate; ``files`` are the input files (``InputFile``, or their bytes) when they are to be
    bound. Any failure inside the replay is a rejection of this certificate, never an exception."""
    rep = Report()
    try:
        if not math.ldexp(1.0, -1074) * 2.0 > math.ldexp(1.0, -1074) > 0.0:  # FTZ/DAZ: exact float facts fail
            raise CannotCheck("this process flushes subnormal numbers to zero (torch.set_flush_denormal(True)?)")
        with metered() as meter:
            try:
                _replay(doc, None if files is None else [f if isinstance(f, InputFile) else InputFile(f)
                                                         for f in files], rep)
            finally:
                rep.work, rep.allowed = meter.used, meter.allowed
                forget_scalings()  # nothing of one replay stays held after it
        rep.valid = True
    except WrongInputs as exc:
        rep.reason, rep.cannot_check, rep.usage = str(exc), True, True
    except CannotCheck as exc:
        rep.reason, rep.cannot_check = str(exc), True
    except Reject as exc:
        rep.reason = str(exc)
    except RecursionError:
        rep.reason = "malformed certificate (nested too deeply)"
    except MemoryError:
        rep.reason = "the certificate needs more memory than the checker allows"
    except Exception as exc:  # noqa: BLE001 - whatever went wrong, this certificate is not accepted
        rep.reason = f"malformed certificate ({type(exc).__name__})"
    if not rep.valid:
        rep.bound.clear()
        rep.facts.clear()
    return rep


def _replay(doc: object, files: list[InputFile] | None, rep: Report) -> None:
    d = keys(doc, {"format", "version", "kind", "claim", "field", "inputs", "proof"}, "certificate")
    if d["format"] != FORMAT or type(d["version"]) is not int or d["version"] != VERSION:
        raise Reject(f"unsupported format/version {d['format']!r} {d['version']!r} (need {VERSION})")
    if not isinstance(d["kind"], str) or d["kind"] not in KINDS:
        raise Reject(f"unknown kind {str(d['kind'])[:60]!r}")
    rep.kind = d["kind"]
    if d["claim"] != CLAIMS[rep.kind]:
        raise Reject("the claim does not match the kind")
    F = make_field(d["field"])
    count = KINDS[rep.kind][0]
    inputs = seq(d["inputs"], None if count < 0 else count, "inputs")
    if count < 0 and not 1 <= len(inputs) <= -count:
        raise Reject(f"inputs: a {rep.kind} certificate has 1 to {-count} inputs")
    count = len(inputs)
    records = [_record(r, i) for i, r in enumerate(inputs)]
    if rep.kind in SPEC_KINDS and files is not None:
        if not files:
            raise WrongInputs("no input file given; the certificate's property file comes first, then its "
                              f"{count} network{'s' if count != 1 else ''} (give them with --inputs, in its order)")
        _bind_spec(d["proof"], files[0], rep)
        files = files[1:]
    if files is not None and len(files) != count:
        extra = "the property file and " if rep.kind in SPEC_KINDS else ""
        raise WrongInputs(f"{len(files)} input file{'s' if len(files) != 1 else ''} given; the certificate has "
                          f"{extra}{count} input{'s' if count != 1 else ''} (give them with --inputs, in its order)")
    referenced = ["parameters" not in r for r in records]
    if any(referenced):
        if rep.kind not in REFERENCING or not isinstance(F, QQ):
            raise Reject(f"inputs referenced by SHA-256 only are accepted in {', '.join(map(repr, REFERENCING))} "
                         "certificates over QQ")
        if files is None:
            raise CannotCheck("the certificate references its input files by SHA-256 without embedding them: give "
                              "them with --inputs")
        if any(r["atoms"] != [] for r in records):
            raise Reject("a referenced model file has no atoms")
    # the files are hashed on threads while they are read and the proof replayed; a referenced file's SHA-256 is
    # compared at the end, and first when anything fails, so that a file other than the certificate's is the
    # reason given (it may fail anything)
    # a large zip member's CRC-32 is checked on a thread too (``deferred_checks``), settled after the hashes
    for file in files or ():
        file.hash_in_background()
    with deferred_checks() as pending:
        try:
            _bound_replay(F, d, records, referenced, files, rep)
        except Exception:
            _same_files(records, referenced, files)  # a file that is not the certificate's: the reason, in its place
            settle(pending)  # then a damaged member
            raise
        _same_files(records, referenced, files)
        settle(pending)


def _bind_spec(proof: object, file: InputFile, rep: Report) -> None:
    """The property file given first: its SHA-256 is the certificate's and its text (gunzipped when it is gzip,
    read by the standard library) is the text the certificate holds, which the replay reads."""
    import zlib

    from certsym_check.inputs import gunzip_bounded
    from certsym_check.kinds.vnnlib import spec_record

    spec = spec_record(proof.get("spec") if isinstance(proof, dict) else None)
    if not _SHA256.fullmatch(spec["sha256"]):
        raise Reject("proof.spec.sha256 must be 64 lowercase hex digits")
    if file.sha256() != spec["sha256"]:
        raise Reject("the property file given: its SHA-256 differs from the certificate's")
    data = file.data
    if data[:2] == b"\x1f\x8b":
        try:
            data = gunzip_bounded(data, SPEC_BYTES)
        except (OSError, EOFError, zlib.error):
            raise Reject("the property file given is not a readable gzip file") from None
    if data is None or len(data) > SPEC_BYTES:
        raise Reject("beyond the checker's bounds: the property file decompresses to more than 64 MiB")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise Reject("the property file given is not UTF-8 text") from None
    if text != spec["text"]:
        raise Reject("the property file given: its text differs from the certificate's")
    rep.bound.append(f"property {spec['name'][:80]} (sha256 {spec['sha256'][:16]}…): its text is the certificate's, "
                     "read by the checker")


def _same_files(records: list, referenced: list, files: list[InputFile] | None, wait: bool = True) -> None:
    for i, rec in enumerate(records):
        if referenced[i]:
            same_file(rec, files[i], f"inputs[{i}]", wait)


def _bound_replay(F, d: dict, records: list, referenced: list, files: list[InputFile] | None, rep: Report) -> None:
    """The inputs read (embedded, or from the referenced files) and bound to the files given, then the replay."""
    count, verify = len(records), replay_of(rep.kind)
    for i, r in enumerate(records):
        model = r.get("model")
        if isinstance(model, dict) and "head" in model and rep.kind not in TOP1_KINDS:
            raise Reject(f"inputs[{i}]: a file ending in a {model['head']} is read as its logits for top-1 claims "
                         f"only, not for {rep.kind}")
    reader = Net
    if rep.kind in LAYERED:
        from certsym_check.kinds.deep import DeepNet as reader
    nets = []
    for i, r in enumerate(records):
        if referenced[i] and ("widths" in r) != (rep.kind in LAYERED):
            raise Reject(f"inputs[{i}]: a {rep.kind} certificate references a model file by its "
                         f"{'widths' if rep.kind in LAYERED else 'shape'}")
        with reading(f"inputs[{i}]"):
            if referenced[i] and rep.kind in LAYERED:
                nets.append(reader.referenced(F, r, files[i], f"inputs[{i}]", rep))
            else:
                nets.append(model_net(F, r, files[i], f"inputs[{i}]", rep) if referenced[i] else
                            reader(F, r["parameters"], f"inputs[{i}]"))
    _same_files(records, referenced, files, wait=False)  # a small file is hashed by now: refused before the replay
    readers = [Reader(F, r["atoms"], f"inputs[{i}]") for i, r in enumerate(records)]  # verifies atoms
    if files is not None:
        from certsym_check.binding import bind, bind_layered  # the files' formats, read when files are given

        for i, (rec, file, t) in enumerate(zip(records, files, nets, strict=True)):
            if referenced[i]:
                continue
            with reading(f"inputs[{i}]"):
                if rep.kind in LAYERED:
                    expected = [x for W, b in zip(t.W, t.b, strict=True) for x in (*(y for row in W for y in row), *b)]
                    bound = bind_layered(rec, file, t.widths, t.output_relu, expected, readers[i], f"inputs[{i}]")
                else:
                    expected = [x for r in t.rows for x in r[:-1]] + [r[-1] for r in t.rows]
                    expected += [v[j] for j in range(t.k) for v in t.v] + t.c
                    bound = bind(rec, file, (t.m, t.n, t.k), expected, readers[i], f"inputs[{i}]")
            rep.bound.insert(i, f"inputs[{i}] {rec['name']} (sha256 {rec['sha256'][:16]}…, equal to the embedded "
                                f"parameters): {bound}")
    elif count:
        rep.unbound = True
        rep.bound.append("inputs not bound to files (embedded parameters only): the names and SHA-256 in the "
                         "certificate were not compared with any file")
    verify(F, nets, d["proof"], rep)
