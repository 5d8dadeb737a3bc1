"""The Python of a documentation page, run as written: its fenced blocks in order, sharing one namespace.

``tests/integration/test_docs_code.py`` runs every page; a page listed in :data:`OWN_TESTS` is run (once) by
its own test instead, which also checks what the page says it prints.
"""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

from tests.paths import ROOT

OWN_TESTS: dict[str, Path] = {
    "own-model.md": ROOT / "tests" / "integration" / "test_own_model_tutorial.py",
    "trainer.md": ROOT / "tests" / "integration" / "test_trainer_tutorial.py",
    "distributed.md": ROOT / "tests" / "integration" / "test_distributed_tutorial.py",
}
"""Tutorial page -> the test that runs it and checks its printed output."""


def python_blocks(text: str) -> list[str]:
    """The fenced ```python blocks of a Markdown page, dedented (tutorial lists indent them)."""
    return [textwrap.dedent(m.group(2)) for m in re.finditer(r"(?m)^([ \t]*)```python\n(.*?)^\1```", text, re.S)]


def run_page(page: Path, namespace: dict | None = None) -> dict:
    """Execute ``page``'s Python blocks in order in one namespace (returned)."""
    namespace = {"__name__": f"docs_{page.stem}"} if namespace is None else namespace
    for i, code in enumerate(python_blocks(page.read_text())):
        exec(compile(code, f"{page.name}[block {i}]", "exec"), namespace)
    return namespace
