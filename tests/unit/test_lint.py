"""The lint gate, run as tests: ruff (pyflakes F, bugbear B, McCabe complexity C90; the settings are
``[tool.ruff]`` in pyproject.toml) over the packages and benchmarks. The type gate (mypy on all four packages)
is tests/integration/test_types.py: a cold mypy run takes ~45 s of CPU, too much for the unit tier. Skipped
with one line when ruff is not installed (``pip install -e .[test]`` has it)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys

import pytest

from tests.paths import ROOT

RUFF_PATHS = ("theory", "simulation", "validation", "qkov", "benchmarks")


def _tool(name: str) -> None:
    if importlib.util.find_spec(name) is None:
        pytest.skip(f"{name} is not installed (pip install -e '.[test]')")


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True, timeout=900)


def test_ruff_finds_nothing():
    _tool("ruff")
    r = _run("ruff", "check", "--no-cache", "--output-format", "concise", *RUFF_PATHS)
    assert r.returncode == 0, r.stdout[-6000:] + r.stderr[-2000:]


def test_ruff_gate_can_fail(tmp_path):
    """The gate sees what it is meant to: an unused import (F401), a mutable default (B006), a complex function."""
    _tool("ruff")
    branches = "".join(f"    if x == {i}:\n        return {i}\n" for i in range(20))
    (tmp_path / "bad.py").write_text(f"import os\n\n\ndef f(a=[]):\n    return a\n\n\ndef g(x):\n{branches}")
    r = _run("ruff", "check", "--no-cache", "--output-format", "concise", "--config", str(ROOT / "pyproject.toml"),
             str(tmp_path / "bad.py"))
    assert r.returncode == 1 and all(code in r.stdout for code in ("F401", "B006", "C901")), r.stdout
