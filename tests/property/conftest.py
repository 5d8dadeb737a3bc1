"""The property tier (``pytest -m property``) runs under qkov.testing's Hypothesis profiles.

Each test module decorates its properties with :func:`qkov.testing.profiles.property_settings` (taken at the module's
import, after the command line is read): ``ci`` (default: 6 examples per
property, derandomized, sized so the whole tier runs in under 2 minutes on an idle 2-core machine; each example
integrates the reduced flow to ``t = 1e12``) or ``thorough`` (300 examples), chosen by
``--qkov-hypothesis-profile`` (the plugin :mod:`qkov.testing.pytest_plugin`) or ``QKOV_HYPOTHESIS_PROFILE``. It
decorates this directory's tests only, so the rest of the suite keeps the root conftest's profile.
Every test here is marked ``property``.
"""

import os

import pytest


def pytest_collection_modifyitems(config, items):
    here = os.path.dirname(__file__)
    for item in items:
        if str(item.fspath).startswith(here):
            item.add_marker(pytest.mark.property)
