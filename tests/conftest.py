"""Test configuration: a derandomized hypothesis profile for continuous integration.

Locally the property tests explore fresh examples on every run; under ``CERTSYM_HYPOTHESIS_PROFILE=ci`` they
replay a fixed sequence, so a verdict of the integration run depends only on the commit.
"""

import os

from hypothesis import settings

settings.register_profile("ci", derandomize=True, print_blob=True)
settings.load_profile(os.environ.get("CERTSYM_HYPOTHESIS_PROFILE", "default"))
