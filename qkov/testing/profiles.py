"""Hypothesis profiles of qkov's property tests: ``ci`` and ``thorough``, chosen by an option or environment variable.

* ``ci`` (default): 6 examples per property, derandomized (every run draws the same examples, so a failure
  replays), no deadline, no shrinking (each example integrates a flow; shrinking a failure would run hundreds
  more, and the failure message already names every input);
* ``thorough``: 300 examples per property, random, shrunk.

Selection: ``pytest --qkov-hypothesis-profile=thorough`` (the pytest plugin :mod:`qkov.testing.pytest_plugin`)
or ``QKOV_HYPOTHESIS_PROFILE=thorough``; the option wins (``qkov-thorough`` is the same). Hypothesis knows them as
``qkov-ci`` and ``qkov-thorough`` (:data:`HYPOTHESIS_NAMES`; ``pytest --hypothesis-profile=qkov-ci`` works): the
plugin loads in every pytest run of an environment with qkov installed, so it never registers or replaces a
profile named ``ci`` or ``thorough``, which a project (or Hypothesis itself, in CI) may define (issue 44).
:func:`property_settings` is the chosen profile as a ``hypothesis.settings`` decorator, independent of the global
profile (what the project's ``tests/property`` use).

Importable without Hypothesis (the plugin imports it in every pytest run); the functions that build settings
need it.
"""

from __future__ import annotations

import os
from typing import Any

ENV = "QKOV_HYPOTHESIS_PROFILE"
"""The environment variable naming the profile."""

PROFILES: dict[str, dict[str, Any]] = {
    "ci": {"max_examples": 6, "deadline": None, "derandomize": True, "shrink": False},
    "thorough": {"max_examples": 300, "deadline": None, "derandomize": False, "shrink": True},
}
"""Profile name -> its settings (``shrink`` False drops Hypothesis's shrink phase)."""

DEFAULT = "ci"

HYPOTHESIS_NAMES: dict[str, str] = {name: f"qkov-{name}" for name in PROFILES}
"""qkov's profile name -> the name it is registered under with Hypothesis (prefixed: a project's ``ci`` stays its)."""


def _short(name: str) -> str:
    """``qkov-ci`` -> ``ci``: either spelling names qkov's profile."""
    return name.removeprefix("qkov-") if name.removeprefix("qkov-") in PROFILES else name

_chosen: str | None = None


def choose(name: str | None) -> None:
    """Record the profile chosen on the command line (``None``: fall back to :data:`ENV`, then ``ci``)."""
    global _chosen
    if name is not None and _short(name) not in PROFILES:
        raise ValueError(f"hypothesis profile: {name!r}: must be one of {', '.join(PROFILES)}")
    _chosen = None if name is None else _short(name)


def selected() -> str:
    """The chosen profile's name: the command line's, else ``$QKOV_HYPOTHESIS_PROFILE``, else ``ci``."""
    name = _chosen or os.environ.get(ENV) or DEFAULT
    if _short(name) not in PROFILES:
        raise ValueError(f"{ENV}: {name!r}: must be one of {', '.join(PROFILES)}")
    return _short(name)


def _kwargs(name: str) -> dict[str, Any]:
    from hypothesis import HealthCheck, Phase

    kw = dict(PROFILES[name])
    shrink = kw.pop("shrink")
    kw["suppress_health_check"] = [HealthCheck.too_slow, HealthCheck.filter_too_much]
    if not shrink:
        kw["phases"] = [p for p in Phase if p not in (Phase.shrink, Phase.explain)]
    return kw


def register() -> bool:
    """Register qkov's profiles with Hypothesis as ``qkov-ci`` and ``qkov-thorough`` (:data:`HYPOTHESIS_NAMES`,
    never a name a project may use); False (and nothing done) when Hypothesis is absent."""
    try:
        from hypothesis import settings
    except ImportError:
        return False
    for name in PROFILES:
        settings.register_profile(HYPOTHESIS_NAMES[name], **_kwargs(name))
    return True


def property_settings(name: str | None = None) -> Any:
    """The profile ``name`` (default :func:`selected`) as a ``hypothesis.settings`` object, usable as a decorator."""
    from hypothesis import settings

    return settings(**_kwargs(_short(name) if name else selected()))


__all__ = ["ENV", "PROFILES", "DEFAULT", "HYPOTHESIS_NAMES", "choose", "selected", "register", "property_settings"]
