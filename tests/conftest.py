"""Shared pytest set-up: hypothesis profiles sized for a 2-core CI machine, and the test tiers.

Each test gets the marker of its tier from its folder: ``tests/unit`` -> ``unit``, ``tests/property`` ->
``property``, ``tests/integration`` -> ``integration``, ``tests/e2e`` -> ``e2e`` (select with ``-m``).
Hypothesis profiles: ``ci`` (default) and ``thorough`` (300 examples), chosen by ``$QKOV_HYPOTHESIS_PROFILE``.
Every test runs with one torch thread (the ``_one_torch_thread`` fixture), and the previous setting comes back
after it: test modules set no global state when imported.
"""

import importlib.util
import os
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile("ci", max_examples=25, deadline=None, derandomize=True,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("thorough", max_examples=300, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("QKOV_HYPOTHESIS_PROFILE", "ci"))

TIERS = ("unit", "property", "integration", "e2e")
_TESTS = Path(__file__).resolve().parent


def pytest_collection_modifyitems(config, items):
    for item in items:
        try:
            tier = Path(str(item.fspath)).resolve().relative_to(_TESTS).parts[0]
        except ValueError:
            continue
        if tier in TIERS:
            item.add_marker(getattr(pytest.mark, tier))


@pytest.fixture(autouse=True)
def _one_torch_thread():
    """One intra-op torch thread during each test (2-core CI; results do not depend on thread scheduling).

    torch is imported here only when installed (the theory and simulation tests run without it); the thread
    count the process had before the test is restored after it, so nothing leaks from one test to the next.
    """
    torch = sys.modules.get("torch")
    if torch is None and importlib.util.find_spec("torch") is not None:
        import torch
    if torch is None:
        yield
        return
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)
