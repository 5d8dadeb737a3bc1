"""The Python of a documentation page, run as written: its fenced blocks in order, sharing one namespace.

``tests/integration/test_docs_code.py`` runs every page of README.md and docs/ (``pages()``); a page listed in
:data:`OWN_TESTS` is run (once) by its own test instead, which also checks what the page says it prints.

Markers, an HTML comment on the line(s) just before a block (only blank lines between):

- ``<!-- not-run: REASON -->``: an illustrative block, not run (the test counts them and needs the reason);
- ``<!-- docs-test: OLD => NEW -->``: the test runs the block with the text ``OLD`` replaced by ``NEW`` (to keep
  an expensive call cheap, e.g. fewer stages); ``OLD`` must occur in the block.
"""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass
from pathlib import Path

from tests.paths import DOCS, ROOT

OWN_TESTS: dict[str, Path] = {
    "own-model.md": ROOT / "tests" / "integration" / "test_own_model_tutorial.py",
    "trainer.md": ROOT / "tests" / "integration" / "test_trainer_tutorial.py",
    "distributed.md": ROOT / "tests" / "integration" / "test_distributed_tutorial.py",
}
"""Tutorial page -> the test that runs it and checks its printed output."""

_FENCE = re.compile(r"(?m)^([ \t]*)```(?:python|py)\n(.*?)^\1```", re.S)
_ONE = re.compile(r"<!--\s*(not-run|docs-test):\s*((?:(?!-->).)*?)\s*-->", re.S)
_MARKERS = re.compile(rf"(?:{_ONE.pattern}\s*)+\Z", re.S)


@dataclass(frozen=True)
class Block:
    """One fenced Python block: its code (dedented), why it is not run (or ``""``), the test's substitutions."""

    code: str
    not_run: str = ""
    substitutions: tuple[tuple[str, str], ...] = ()

    def runnable(self) -> str:
        """The code the test runs: every substitution applied (each must match)."""
        code = self.code
        for old, new in self.substitutions:
            if old not in code:
                raise AssertionError(f"docs-test substitution {old!r} not in the block:\n{code}")
            code = code.replace(old, new)
        return code


def blocks(text: str) -> list[Block]:
    """Every fenced ```python / ```py block of a Markdown page with its markers."""
    out = []
    for m in _FENCE.finditer(text):
        before = text[:m.start()].rstrip()
        marks = _MARKERS.search(before)
        not_run, subs = "", []
        for kind, arg in _ONE.findall(marks.group(0)) if marks else ():
            if kind == "not-run":
                not_run = arg or "(no reason given)"
            else:
                old, _, new = arg.partition(" => ")
                subs.append((old, new))
        out.append(Block(textwrap.dedent(m.group(2)), not_run, tuple(subs)))
    return out


def python_blocks(text: str) -> list[str]:
    """The runnable fenced Python blocks of a Markdown page, dedented (tutorial lists indent them), with the
    test's substitutions applied; blocks marked ``not-run`` are left out."""
    return [b.runnable() for b in blocks(text) if not b.not_run]


def pages() -> list[Path]:
    """README.md and every Markdown page under docs/."""
    return [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]


def run_page(page: Path, namespace: dict | None = None) -> dict:
    """Execute ``page``'s runnable Python blocks in order in one namespace (returned)."""
    namespace = {"__name__": f"docs_{page.stem}"} if namespace is None else namespace
    for i, code in enumerate(python_blocks(page.read_text())):
        exec(compile(code, f"{page.name}[block {i}]", "exec"), namespace)
    return namespace
