"""Every Python block of README.md and docs/ runs as written (blocks of one page share a namespace), unless it
is marked ``<!-- not-run: reason -->`` (counted below); tutorials with their own tests are run there."""

from __future__ import annotations

import os

import pytest

from tests.docs_pages import OWN_TESTS, blocks, pages, python_blocks, run_page
from tests.paths import ROOT

pytestmark = pytest.mark.integration

PAGES = [p for p in pages() if p.name not in OWN_TESTS and python_blocks(p.read_text())]
"""Pages with runnable Python, run here; those in OWN_TESTS are run once, by their own tests."""

NOT_RUN = {"api.md": 1, "own-model.md": 2, "trainer.md": 1}
"""Illustrative blocks per page (``not-run``): a new one must be added here on purpose."""


def test_block_extraction_sees_indented_plain_py_and_marked_blocks():
    text = ("x\n```python\na = 1\n```\n1. step\n   ```python\n   b = 2\n   ```\n```bash\nno\n```\n"
            "<!-- not-run: a fragment -->\n```py\nc = 3\n```\n<!-- docs-test: 400 => 4 -->\n\n```py\nd = 400\n```\n")
    assert python_blocks(text) == ["a = 1\n", "b = 2\n", "d = 4\n"]
    assert [b.not_run for b in blocks(text)] == ["", "", "a fragment", ""]


def test_not_run_blocks_are_few_counted_and_give_a_reason():
    found = {p.name: sum(1 for b in blocks(p.read_text()) if b.not_run) for p in pages()}
    assert {k: v for k, v in found.items() if v} == NOT_RUN
    assert all(b.not_run != "(no reason given)" for p in pages() for b in blocks(p.read_text()))


def test_every_page_with_python_is_run_somewhere():
    names = {p.name for p in PAGES} | set(OWN_TESTS)
    assert {"README.md", "api.md", "simulation.md"} <= names


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_page_code_runs(page, tmp_path, monkeypatch):
    code = "".join(python_blocks(page.read_text()))
    if "QKOV_DATA_DIR" in code and not os.environ.get("QKOV_DATA_DIR"):
        pytest.skip("needs $QKOV_DATA_DIR (the real data, see docs/data.md)")
    if "hypothesis" in code:
        pytest.importorskip("hypothesis", reason="the property-test tutorial needs hypothesis (pip install qkov[test])")
    monkeypatch.chdir(tmp_path)   # whatever the page writes stays out of the checkout
    run_page(page)


def test_pages_left_to_their_own_tests_have_them():
    """A page taken out of PAGES is run by the test OWN_TESTS names (a renamed test cannot drop it)."""
    assert [name for name, test in OWN_TESTS.items() if not (test.is_file() and name in test.read_text())] == []
