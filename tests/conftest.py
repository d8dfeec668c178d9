"""Test configuration: hypothesis profiles, neither of which races the clock.

Locally the property tests explore fresh examples on every run; under ``CERTSYM_HYPOTHESIS_PROFILE=ci`` they
replay a fixed sequence, so a verdict of the integration run depends only on the commit. Both profiles turn off
hypothesis's per-example deadline (200 ms by default) and its timed health check (``too_slow``, on the time taken
to generate examples): on a busy machine an example may take longer, and a test's verdict must not depend on the
machine's speed. What bounds a test's work is a count (examples, regions, units).
"""

import os

import pytest
from hypothesis import HealthCheck, settings

UNTIMED = {"deadline": None, "suppress_health_check": [HealthCheck.too_slow]}
settings.register_profile("local", **UNTIMED)
settings.register_profile("ci", derandomize=True, print_blob=True, **UNTIMED)
settings.load_profile(os.environ.get("CERTSYM_HYPOTHESIS_PROFILE", "local"))


# Every certificate the producer writes during the tests is replayed by the independent checker as it is written:
# a certificate the checker would refuse fails the test that made it, whatever that test asserts itself. One that
# references its model files by SHA-256 (no embedded parameters) is replayed up to the binding, which needs the
# files; the test that wrote it replays it with them.
_WRITERS = ("certsym.cli.equivalence", "certsym.cli.search", "certsym.cli.identifiability", "certsym.cli.reproduce",
            "certsym.cli.landscape_commands", "certsym.workflows.audit")


def _replayed_writer(write):
    from certsym_check import check_certificate

    def write_json_atomic(path, doc, *args, **kwargs):
        if isinstance(doc, dict) and doc.get("format") == "certsym-certificate":
            report = check_certificate(doc)
            referenced = any("parameters" not in entry for entry in doc.get("inputs", []))
            assert report.valid or (referenced and report.cannot_check), \
                f"a certificate written to {path} does not replay: {report.reason}"
        return write(path, doc, *args, **kwargs)

    return write_json_atomic


@pytest.fixture(autouse=True)
def _certificates_replay(monkeypatch):
    import importlib

    for name in _WRITERS:
        module = importlib.import_module(name)
        monkeypatch.setattr(module, "write_json_atomic", _replayed_writer(module.write_json_atomic))
