"""The type gate, run as a test: mypy (``[tool.mypy]`` in pyproject.toml) on all four packages, theory/,
simulation/, validation/ and qkov/. Skipped with one line when mypy is not installed (``pip install -e .[test]``
has it). Integration tier: a cold run (no ``.mypy_cache``) takes ~45 s of CPU."""

from __future__ import annotations

import importlib.util
import subprocess
import sys

import pytest

from tests.paths import ROOT

MYPY_PATHS = ("theory", "simulation", "validation", "qkov")


def _tool(name: str) -> None:
    if importlib.util.find_spec(name) is None:
        pytest.skip(f"{name} is not installed (pip install -e '.[test]')")


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True, timeout=900)


def test_mypy_finds_nothing():
    _tool("mypy")
    r = _run("mypy", "--no-error-summary", *MYPY_PATHS)
    assert r.returncode == 0, r.stdout[-6000:] + r.stderr[-2000:]
