"""The Python in docs/api.md and every tutorial runs as written (blocks of one page share a namespace)."""

from __future__ import annotations

import os

import pytest

from tests.docs_pages import OWN_TESTS, python_blocks, run_page
from tests.paths import ROOT

PAGES = [p for p in (ROOT / "docs" / "api.md", *sorted((ROOT / "docs" / "tutorials").glob("*.md")))
         if p.name not in OWN_TESTS]
"""Pages run here; those in OWN_TESTS are run once, by their own tests."""


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
    run_page(page)


def test_pages_left_to_their_own_tests_have_them():
    """A page taken out of PAGES is run by the test OWN_TESTS names (a renamed test cannot drop it)."""
    assert [name for name, test in OWN_TESTS.items() if not (test.is_file() and name in test.read_text())] == []
