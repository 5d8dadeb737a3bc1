"""Shared pytest set-up: hypothesis profiles sized for a 2-core CI machine."""

import os

from hypothesis import HealthCheck, settings

settings.register_profile("ci", max_examples=25, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("thorough", max_examples=300, deadline=None)
settings.load_profile(os.environ.get("QKOV_HYPOTHESIS_PROFILE", "ci"))
