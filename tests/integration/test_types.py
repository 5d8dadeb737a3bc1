"""The type gate, run as a test: mypy (``[tool.mypy]`` in pyproject.toml) on all four packages, theory/,
simulation/, validation/ and qkov/. Skipped with one line when mypy is not installed (``pip install -e .[test]``
has it). Integration tier: a cold run (no ``.mypy_cache``) takes ~45 s of CPU."""

from __future__ import annotations

from tests.unit.test_lint import _run, _tool  # the gates' one runner: `python -m <tool>` at the root, or a skip

MYPY_PATHS = ("theory", "simulation", "validation", "qkov")


def test_mypy_finds_nothing():
    _tool("mypy")
    r = _run("mypy", "--no-error-summary", *MYPY_PATHS)
    assert r.returncode == 0, r.stdout[-6000:] + r.stderr[-2000:]
