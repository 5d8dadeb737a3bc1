"""Fixtures of the real-data tests: the data directory from $QKOV_DATA_DIR (skip without it)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from qkov.study.real_stage import missing_data


def data_dir_for(dataset: str) -> Path:
    """The data directory holding ``dataset``, or skip the test saying why."""
    raw = os.environ.get("QKOV_DATA_DIR")
    if not raw:
        pytest.skip("QKOV_DATA_DIR is not set (CI sets it to ../shared/data)")
    d = Path(raw)
    why = missing_data(dataset, d) if d.is_dir() else f"{d} is not a directory"
    if why:
        pytest.skip(f"QKOV_DATA_DIR lacks {dataset}: {why}")
    return d
