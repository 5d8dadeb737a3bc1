"""README's "What qkov finds" (qkov.docsgen.findings_table): short paragraphs, and a real-data cell with one short
line per configuration group whose verdict is the rules' verdict on the committed records."""

from __future__ import annotations

import re

import pytest

from qkov.docsgen import loader
from qkov.docsgen.findings_table import REAL_SETS, real_cell
from qkov.records import real_runs
from qkov.study.real_inference import judge_real
from qkov.study.real_summary import group_evidence, summarise_groups
from tests.paths import ROOT

pytestmark = pytest.mark.unit


def _section(text: str, title: str) -> str:
    start = text.index(f"## {title}")
    nxt = text.find("\n## ", start + 3)
    return text[start:nxt if nxt >= 0 else None]


def test_readme_findings_section_has_no_paragraph_over_150_words():
    """Issue 42: the section is a table plus short prose; a table row is not a paragraph, prose is."""
    sec = _section((ROOT / "README.md").read_text(), "What qkov finds")
    paragraphs = [p for p in re.split(r"\n\s*\n", sec)
                  if p.strip() and not p.lstrip().startswith(("|", "<!--", "#"))]
    assert paragraphs, "no prose found: the section's shape changed"
    longest = max(paragraphs, key=lambda p: len(p.split()))
    assert len(longest.split()) <= 150, longest[:200]


def test_real_cell_is_one_line_per_group_with_the_rules_verdict():
    load = loader(ROOT)
    expected = []
    for name in REAL_SETS:
        for group, g in summarise_groups(real_runs(load(name))).items():
            expected.append((str(group), judge_real([group_evidence(str(group), g)])[0].verdict))
    assert expected, "no real-data records committed"
    lines = real_cell(load).split("<br>")
    assert len(lines) == len(expected)
    for line, (group, verdict) in zip(lines, expected):
        assert line.startswith(f"{group}: ") and line.endswith(f"-> {verdict}"), line
        assert len(line.split()) <= 40, line


def test_real_cell_without_records_says_so():
    assert real_cell(lambda name: []) == "no completed real-data runs"
