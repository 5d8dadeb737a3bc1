"""qkov's pytest plugin: registers the Hypothesis profiles ``qkov-ci`` and ``qkov-thorough`` and selects one.

Installed as the ``pytest11`` entry point ``qkov.testing.pytest_plugin`` (``pip install "qkov[test]"``), so it
loads in every pytest run of that environment; ``-p qkov.testing.pytest_plugin`` loads it from a checkout
without the entry point, ``-p no:qkov.testing.pytest_plugin`` turns it off.

* registers qkov's profiles under prefixed names only (:data:`qkov.testing.profiles.HYPOTHESIS_NAMES`): a
  profile named ``ci`` or ``thorough`` that the project (or Hypothesis, in CI) defines is never registered
  over or loaded (issue 44: a project's ``ci`` of 50 examples ran qkov's 6);
* adds ``--qkov-hypothesis-profile={ci,thorough}``; with it, or with ``$QKOV_HYPOTHESIS_PROFILE`` set, qkov's
  profile is loaded as Hypothesis's global profile (without either, Hypothesis's own choice is left alone)
  and is what :func:`qkov.testing.profiles.property_settings` returns;
* without Hypothesis it does nothing, except refuse the option with one line naming the extra.

It imports no numpy, simulation or torch: it costs nothing in a run that does not use :mod:`qkov.testing`.
"""

from __future__ import annotations

import os
from typing import Any

import pytest

from qkov.testing import profiles

HAVE_HYPOTHESIS = profiles.register()


def pytest_addoption(parser: Any) -> None:
    group = parser.getgroup("qkov", "qkov property tests")
    group.addoption("--qkov-hypothesis-profile", action="store", default=None,
                    choices=(*profiles.PROFILES, *profiles.HYPOTHESIS_NAMES.values()),
                    help=f"Hypothesis profile of qkov.testing (default ${profiles.ENV}, else ci): "
                         "ci = 6 derandomized examples, thorough = 300 (registered as qkov-ci, qkov-thorough)")


def pytest_configure(config: Any) -> None:
    name = config.getoption("qkov_hypothesis_profile", default=None)
    if not HAVE_HYPOTHESIS:
        if name is not None:
            raise pytest.UsageError('--qkov-hypothesis-profile needs Hypothesis: pip install "qkov[test]"')
        return
    try:
        profiles.choose(name)
        chosen = profiles.selected() if (name or os.environ.get(profiles.ENV)) else None
    except ValueError as e:
        raise pytest.UsageError(str(e)) from None
    if chosen is not None:
        from hypothesis import settings

        settings.load_profile(profiles.HYPOTHESIS_NAMES[chosen])


def pytest_unconfigure(config: Any) -> None:
    profiles.choose(None)
