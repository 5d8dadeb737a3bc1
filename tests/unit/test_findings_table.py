"""README's "What qkov finds" (qkov.docsgen.findings_table): short paragraphs, and a real-data cell with one short
line per configuration group whose verdict is the rules' verdict on the committed records."""

from __future__ import annotations

import re

import pytest

from qkov.docsgen import loader
from qkov.docsgen.findings_table import REAL_SETS, confirm_line, moves, real_cell
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
            expected.append((str(group), moves(g["config"]), judge_real([group_evidence(str(group), g)])[0].verdict))
    assert expected, "no real-data records committed"
    lines = real_cell(load).split("<br>")
    assert len(lines) == len(expected) + 1          # the groups, then the pre-registered decoupling test's state
    for line, (group, scope, verdict) in zip(lines, expected):
        assert line.startswith(f"{group} ({scope}): ") and line.endswith(f"-> {verdict}"), line
        assert len(line.split()) <= 45, line
    assert lines[-1] == confirm_line(load) and lines[-1].startswith("decoupling on hatexplain (pre-registered")


@pytest.mark.parametrize("config, text", [
    ({"dataset": "hatexplain"}, "the ratio moves W_Q, W_K only"),
    ({"dataset": "hatexplain", "recipe": "paper"},
     "the ratio moves W_Q, W_K and the word and positional embeddings; the official code's recipe, not the QK ratio alone"),
    ({"dataset": "hatexplain", "recipe": "paper", "rates": {"position": 1.0}},
     "the ratio moves W_Q, W_K and the word embedding; the official code's recipe, not the QK ratio alone"),
    ({"dataset": "sva", "recipe": "paper", "rates": {"position": 1.0}},
     "the ratio moves W_Q, W_K, the word embedding and the biases; the official code's recipe, not the QK ratio alone"),
    ({"dataset": "hatexplain", "rates": {"embedding": 30.0}},
     "the ratio moves W_Q, W_K only; the word and positional embeddings at 30x in both arms"),
    ({"dataset": "squad", "recipe": "paper"}, "the ratio moves W_Q, W_K only"),   # SQuAD's recipe moves QK alone
])
def test_the_scope_says_what_the_ratio_moves(config, text):
    assert moves(config) == text


def test_the_decoupling_state_is_interim_until_every_seed_then_the_rules_verdict():
    from qkov.records import Record
    from tests.unit.test_side_by_side import runs

    def load_with(rs):
        def load(name):
            return [Record(set=name, run=r["dir"].name, kind="validate-real", config=r["config"],
                           metrics=r["metrics"], provenance={}) for r in rs]
        return load

    from tests.unit.test_side_by_side import PLAN      # the test plan (the synthetic runs' design), 18 seeds

    def line(rs):
        return confirm_line(load_with(rs), PLAN)

    assert line(runs(0.13, -0.02, 0.03, seeds=tuple(range(100, 106)))).endswith("interim: 6 of 18 seeds, no verdict yet")
    assert line(runs(0.13, -0.02, 0.03, inter=0.25)).endswith(
        "18 of 18 seeds -> supports; interaction on the mass: positive")
    assert line(runs(0.0115, -0.02, 0.03)).endswith("18 of 18 seeds -> inconclusive; interaction on the mass: additive")
    assert line(runs(0.13, 0.10, 0.03)).endswith("-> contradicts; interaction on the mass: additive")


def test_real_cell_without_records_says_so():
    assert real_cell(lambda name: []) == "no completed real-data runs"
