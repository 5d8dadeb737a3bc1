"""docs/tutorials/trainer.md: its python blocks run as written, in order, and print what the page says."""

import re

import pytest

from tests.docs_pages import python_blocks, run_page
from tests.paths import DOCS

TUTORIAL = DOCS / "tutorials" / "trainer.md"


def test_trainer_tutorial_runs(capsys, tmp_path, monkeypatch):
    pytest.importorskip("transformers", reason="transformers not installed (pip install qkov[hf])")
    pytest.importorskip("accelerate", reason="accelerate not installed (pip install qkov[hf])")
    assert len(python_blocks(TUTORIAL.read_text())) == 7
    monkeypatch.chdir(tmp_path)  # whatever the page writes stays out of the checkout
    namespace = run_page(TUTORIAL)
    out = capsys.readouterr().out
    assert "qk 0.03, ov 0.003, other 0.003" in out
    assert "[0, 5, 10, 15, 20]" in out and "(5, 2, 4)" in out
    assert re.search(r"normalised entropy \d\.\d\d -> \d\.\d\d", out)
    assert "set() set()" in out and "same logits: True" in out
    assert "ratio 10.0, W_Q/W_K at 0.03" in out
    assert re.search(r"learning_rate 0\.003, qk 0\.03, effective Q/V (9\.9\d|10\.0\d)", out)
    assert "[10, 20]" in out
    from pathlib import Path

    assert (Path(namespace["out"]) / "sharpness.png").stat().st_size > 1000
