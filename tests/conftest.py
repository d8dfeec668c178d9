"""Test configuration: hypothesis profiles, neither of which races the clock.

Locally the property tests explore fresh examples on every run; under ``CERTSYM_HYPOTHESIS_PROFILE=ci`` they
replay a fixed sequence, so a verdict of the integration run depends only on the commit. Both profiles turn off
hypothesis's per-example deadline (200 ms by default) and its timed health check (``too_slow``, on the time taken
to generate examples): on a busy machine an example may take longer, and a test's verdict must not depend on the
machine's speed. What bounds a test's work is a count (examples, regions, units).
"""

import os

from hypothesis import HealthCheck, settings

UNTIMED = {"deadline": None, "suppress_health_check": [HealthCheck.too_slow]}
settings.register_profile("local", **UNTIMED)
settings.register_profile("ci", derandomize=True, print_blob=True, **UNTIMED)
settings.load_profile(os.environ.get("CERTSYM_HYPOTHESIS_PROFILE", "local"))
