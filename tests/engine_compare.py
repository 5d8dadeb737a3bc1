"""What two executions of the same run must share: the run directory's name, its ``COMPLETE`` file list and its
metrics (numbers to a relative tolerance, everything else exactly), clocks left out."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

CLOCK = {"seconds", "elapsed_s", "wall_s", "cpu_s", "device"}
"""Entries that measure the clock (or name the worker's device), not the run's result; also ``*_seconds``,
``*_cpu_s`` (the broken-set predictor's cost) and ``*_per_second``."""


def flat(obj, path: str = "") -> dict[str, object]:
    """Every leaf of a JSON value by its path, clock entries left out."""
    if isinstance(obj, dict):
        return {k2: v2 for k, v in obj.items()
                if k not in CLOCK and not k.endswith(("_seconds", "_cpu_s", "_per_second"))
                for k2, v2 in flat(v, f"{path}/{k}").items()}
    if isinstance(obj, list):
        return {k2: v2 for i, v in enumerate(obj) for k2, v2 in flat(v, f"{path}/{i}").items()}
    return {path: obj}


def assert_same_runs(a_dirs, b_dirs, rel: float) -> None:
    """The runs ``a_dirs`` and ``b_dirs`` (in order) have the same names, ``COMPLETE`` file lists and metrics:
    floats within ``rel`` relative (1e-12 absolute), every other leaf equal."""
    a_dirs, b_dirs = [Path(d) for d in a_dirs], [Path(d) for d in b_dirs]
    assert [d.name for d in a_dirs] == [d.name for d in b_dirs]
    for a, b in zip(a_dirs, b_dirs):
        files = [sorted(json.loads((d / "COMPLETE").read_text())["files"]) for d in (a, b)]
        assert files[0] == files[1], a.name
        ma, mb = (flat(json.loads((d / "metrics.json").read_text())) for d in (a, b))
        assert ma.keys() == mb.keys(), a.name
        num = {k for k, v in ma.items() if isinstance(v, float)}
        assert {k: ma[k] for k in num} == pytest.approx({k: mb[k] for k in num}, rel=rel, abs=1e-12, nan_ok=True), a.name
        assert {k: v for k, v in ma.items() if k not in num} == {k: v for k, v in mb.items() if k not in num}, a.name
