"""Counts the docs state are the code's: the quick study's planned runs in docs/reproduce.md."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from tests.paths import DOCS

pytestmark = pytest.mark.integration


def test_reproduce_md_states_the_quick_plan(tmp_path):
    """The issue: docs/reproduce.md said 39 runs while the quick study planned 41."""
    from qkov.study import engine
    from validation.real.datasets import DATASETS

    text = (DOCS / "reproduce.md").read_text()
    m = re.search(r"<!-- quick-plan[^>]*-->\s*`qkov reproduce --quick` plans (\d+) runs with the three datasets "
                  r"\(derive (\d+), simulate (\d+), synthetic (\d+), real (\d+)\),\s*(\d+) without real data", text)
    assert m, "the quick-plan sentence is missing from docs/reproduce.md"
    total, derive, simulate, synthetic, real, without = map(int, m.groups())
    bare = engine.plan_study(tmp_path / "out", True, None)
    assert {s.name: s.n_runs for s in bare.stages} == {"derive": derive, "simulate": simulate,
                                                       "synthetic": synthetic, "real": 0}
    assert len(bare.runs) == without == derive + simulate + synthetic and total == without + real
    data = os.environ.get("QKOV_DATA_DIR")
    if not data or not all((Path(data) / ds).is_dir() for ds in DATASETS):
        pytest.skip("the real stage's count needs $QKOV_DATA_DIR with every dataset (docs/data.md)")
    full = engine.plan_study(tmp_path / "out", True, Path(data))
    assert len(full.runs) == total and {s.name: s.n_runs for s in full.stages}["real"] == real
