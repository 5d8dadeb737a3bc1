"""Hypothesis profiles of the property tier (``pytest -m property``), chosen by ``QKOV_HYPOTHESIS_PROFILE``.

* ``ci`` (default): few examples per property, sized so the whole tier runs in under 2 minutes on an
  idle 2-core machine (each example integrates the reduced flow to ``t = 1e12``);
* ``thorough``: 300 examples per property (``QKOV_HYPOTHESIS_PROFILE=thorough pytest -m property``).

The profiles are registered as ``property-ci``/``property-thorough`` and applied only to this directory's
tests (:data:`PROPERTY_SETTINGS`), so the rest of the suite keeps the root conftest's profile.
Every test here is marked ``property``.
"""

import os

import pytest
from hypothesis import HealthCheck, settings

PROFILE = os.environ.get("QKOV_HYPOTHESIS_PROFILE", "ci")
settings.register_profile("property-ci", max_examples=6, deadline=None, derandomize=True,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
settings.register_profile("property-thorough", max_examples=300, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
PROPERTY_SETTINGS = settings.get_profile("property-thorough" if PROFILE == "thorough" else "property-ci")


def pytest_collection_modifyitems(config, items):
    here = os.path.dirname(__file__)
    for item in items:
        if str(item.fspath).startswith(here):
            item.add_marker(pytest.mark.property)
