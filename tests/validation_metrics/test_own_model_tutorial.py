"""The tutorial's code blocks run as written."""

import re
from pathlib import Path

import torch

TUTORIAL = Path(__file__).resolve().parents[2] / "docs" / "tutorials" / "own-model.md"


def test_tutorial_code_runs(capsys):
    torch.set_num_threads(1)
    blocks = re.findall(r"```python\n(.*?)```", TUTORIAL.read_text(), flags=re.S)
    assert len(blocks) == 2
    namespace: dict = {}
    for block in blocks:
        exec(compile(block, str(TUTORIAL), "exec"), namespace)
    out = capsys.readouterr().out
    assert "('qk', 8, 0.0015" in out and "('ov', 8, 5e-05)" in out
