"""docs/reliability.md names, for each promise, a test of this suite that exists -- and every test is named."""

from __future__ import annotations

import ast
import re
from pathlib import Path

HERE = Path(__file__).resolve().parent
DOC = HERE.parent.parent / "docs" / "reliability.md"


def _tests() -> set[str]:
    names = set()
    for f in HERE.glob("test_*.py"):
        if f.name == Path(__file__).name:
            continue
        tree = ast.parse(f.read_text())
        names |= {f"{f.name}::{n.name}" for n in tree.body if isinstance(n, ast.FunctionDef) and n.name.startswith("test_")}
    return names


def test_reliability_doc_names_every_fault_test_and_only_existing_ones():
    """Promise: the promise table of docs/reliability.md points at tests that exist in tests/faults, and
    every fault test is listed there (a renamed or new test cannot drift out of the document)."""
    cited = set(re.findall(r"(test_\w+\.py::test_\w+)", DOC.read_text()))
    tests = _tests()
    assert cited - tests == set(), f"docs/reliability.md cites missing tests: {sorted(cited - tests)}"
    assert tests - cited == set(), f"tests not listed in docs/reliability.md: {sorted(tests - cited)}"
