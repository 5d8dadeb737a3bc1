"""The Python in docs/api.md and every tutorial runs as written (blocks of one page share a namespace)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from tests.paths import ROOT
PAGES = [ROOT / "docs" / "api.md", *sorted((ROOT / "docs" / "tutorials").glob("*.md"))]


def python_blocks(text: str) -> list[str]:
    """The fenced ```python blocks of a Markdown page, dedented (tutorial lists indent them)."""
    import textwrap

    return [textwrap.dedent(m.group(2)) for m in re.finditer(r"(?m)^([ \t]*)```python\n(.*?)^\1```", text, re.S)]


def test_block_extraction_sees_indented_and_plain_blocks():
    text = "x\n```python\na = 1\n```\n1. step\n   ```python\n   b = 2\n   ```\n```bash\nno\n```\n"
    assert python_blocks(text) == ["a = 1\n", "b = 2\n"]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_page_code_runs(page, tmp_path, monkeypatch):
    blocks = python_blocks(page.read_text())
    if not blocks:
        pytest.skip(f"{page.name} has no Python blocks")
    if "QKOV_DATA_DIR" in "".join(blocks) and not os.environ.get("QKOV_DATA_DIR"):
        pytest.skip("needs $QKOV_DATA_DIR (the real data, see docs/data.md)")
    monkeypatch.chdir(tmp_path)
    namespace: dict = {"__name__": f"docs_{page.stem}"}
    for i, code in enumerate(blocks):
        exec(compile(code, f"{page.name}[block {i}]", "exec"), namespace)
