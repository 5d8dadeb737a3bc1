"""One name, one class: no two public classes of theory, simulation, validation and qkov share a name
(issue 29: two ``Circuit``, two ``Trajectory``, two ``SyntheticResult``, two ``Derivation``, two ``OptimizerRun``
made a reader, a ``grep`` and the docs point at the wrong one).

Static (AST) scan of every module's top-level classes whose name does not start with ``_``.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.paths import ROOT

pytestmark = pytest.mark.unit

PACKAGES = ("theory", "simulation", "validation", "qkov")

PENDING: dict[str, str] = {}
"""Collisions left to the owners of both files when this test was written; each entry says where and who.
Remove an entry when its rename lands (the test then holds the name to one class)."""


def public_classes(root: Path = ROOT) -> dict[str, list[str]]:
    """Class name -> the modules (``pkg/mod.py:line``) defining a top-level public class of that name."""
    where: dict[str, list[str]] = {}
    for pkg in PACKAGES:
        for f in sorted((root / pkg).rglob("*.py")):
            tree = ast.parse(f.read_text(encoding="utf-8"), filename=str(f))
            for node in tree.body:
                if isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
                    where.setdefault(node.name, []).append(f"{f.relative_to(root)}:{node.lineno}")
    return where


def collisions(root: Path = ROOT) -> dict[str, list[str]]:
    """The public class names defined in more than one place."""
    return {name: places for name, places in public_classes(root).items() if len(places) > 1}


def test_no_two_public_classes_share_a_name():
    new = {name: places for name, places in collisions().items() if name not in PENDING}
    assert not new, f"public classes sharing a name (rename the less public one): {new}"


def test_the_scan_finds_a_collision(tmp_path):
    """The scan is not vacuous: two modules defining ``class Spam`` are one collision, ``_Private`` is none."""
    for pkg in PACKAGES:
        (tmp_path / pkg).mkdir()
    (tmp_path / "theory" / "a.py").write_text("class Spam:\n    pass\n\nclass _Private:\n    pass\n")
    (tmp_path / "qkov" / "b.py").write_text("def f():\n    class Spam:\n        pass\n\nclass Spam:\n    pass\n"
                                            "\nclass _Private:\n    pass\n")
    assert collisions(tmp_path) == {"Spam": ["theory/a.py:1", "qkov/b.py:5"]}
