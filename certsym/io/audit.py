"""Auditing many networks: group them by the function they realize, and certify each class.

Each file is read alone and reduced to the SHA-256 of its canonical form (kink invariants); files with the
same hash realize the same function (over Q always; over number fields when their radicals agree). Then
every member is certified against its class representative with a full equivalence certificate. Jobs run
in local processes, or on a Dask cluster. Cost: one canonical form per file, one decision per member.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from certsym.errors import InputError


@dataclass(frozen=True)
class Job:
    keys: object  # a certsym.io.models.Selection
    max_digits: int


def canon_job(path: str, job: Job) -> tuple[str, str, str]:
    """(path, canonical hash, error message or "")."""
    from certsym.canonical import canonical_form
    from certsym.io.params import load_networks

    try:
        (net,), _ = load_networks([path], max_digits=job.max_digits, keys=job.keys)
    except InputError as exc:
        return path, "", str(exc)
    return path, canonical_form(net).hash, ""


def cert_job(rep: str, member: str, out: str, job: Job) -> tuple[str, bool]:
    """Certify member against rep; write the certificate atomically; (member, equivalent?)."""
    from certsym.certificate import InputRecord, equivalence_certificate
    from certsym.equivalence import decide
    from certsym.io.params import load_inputs, write_json_atomic

    loaded, _ = load_inputs([rep, member], max_digits=job.max_digits, keys=job.keys)
    verdict = decide(loaded[0].network, loaded[1].network)
    records = tuple(InputRecord(item.name, item.sha256, item.atoms, item.model) for item in loaded)
    write_json_atomic(out, equivalence_certificate(verdict, records))
    return member, verdict.equivalent


def _run(fn: Callable, args: list[tuple], workers: int, dask: str | None, tick: Callable[[], None]) -> list:
    if dask:
        try:
            from dask.distributed import Client, as_completed
        except ImportError:
            raise InputError("--dask needs dask.distributed (pip install 'dask[distributed]')") from None
        with Client(dask) as client:
            futures = [client.submit(fn, *a, pure=False) for a in args]
            out = []
            for future in as_completed(futures):
                out.append(future.result())
                tick()
            return out
    if workers <= 1:
        out = []
        for a in args:
            out.append(fn(*a))
            tick()
        return out
    with ProcessPoolExecutor(max_workers=workers) as pool:
        futures = [pool.submit(fn, *a) for a in args]
        out = []
        for f in futures:
            out.append(f.result())
            tick()
        return out


def audit(paths: Sequence[str], job: Job, workers: int = 1, dask: str | None = None,
          cert_dir: str | None = None, tick: Callable[[], None] = lambda: None):
    """Classes of files by realized function ({hash: [paths]}), unreadable files ({path: reason}) and,
    with ``cert_dir``, the certified members ({path: certificate file})."""
    results = _run(canon_job, [(p, job) for p in paths], workers, dask, tick)
    classes: dict[str, list[str]] = {}
    errors = {}
    for path, digest, error in sorted(results):
        if error:
            errors[path] = error
        else:
            classes.setdefault(digest, []).append(path)
    certified = {}
    if cert_dir:
        Path(cert_dir).mkdir(parents=True, exist_ok=True)
        args = []
        for number, members in enumerate(classes.values()):
            for index, member in enumerate(members[1:], start=1):
                name = f"class{number:04d}_member{index:04d}_{Path(member).stem}.json"
                args.append((members[0], member, os.path.join(cert_dir, name), job))
                certified[member] = os.path.join(cert_dir, name)
        outcome = _run(cert_job, args, workers, dask, tick)
        for member, equivalent in outcome:
            if not equivalent:  # pragma: no cover - equal hashes imply equal functions
                raise AssertionError(f"{member}: same canonical hash but not equivalent")
    return classes, errors, certified
