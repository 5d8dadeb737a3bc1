"""The registry of the paper's numbers is transcription, checked against its source: each entry's cited section
is a heading of the spec file it names, each number it gives appears there, and no entry invents a number."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from theory.claims import CLAIMS
from theory.paper_numbers import CLAIM_STATEMENTS, REAL_NUMBERS, claim_text, dataset_text

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[3]
SPEC_DIRS = (ROOT.parent / "shared" / "spec", ROOT.parent.parent / "shared" / "spec")


def _spec(name: str) -> str:
    for d in SPEC_DIRS:
        if (d / name).is_file():
            return (d / name).read_text()
    pytest.skip(f"spec/{name} not found beside the checkout ({', '.join(map(str, SPEC_DIRS))})")


def _cited(source: str) -> tuple[str, str]:
    """``("PAPER.md", "DTAP heatmaps and attention confidence")`` of ``"spec/PAPER.md, 'DTAP ...' (headline)"``."""
    m = re.match(r"spec/(\w+\.md), '([^']+)'", source)
    assert m, source
    return m.group(1), m.group(2)


@pytest.mark.parametrize("source", sorted({p.source for p in REAL_NUMBERS}
                                          | {s.source for s in CLAIM_STATEMENTS.values()}))
def test_each_cited_section_is_a_heading_of_its_spec_file(source):
    name, section = _cited(source)
    headings = [h.strip() for h in re.findall(r"^#+ (.+)$", _spec(name), flags=re.M)]
    assert any(h.startswith(section.split(" (")[0]) for h in headings), (section, headings)


def test_each_given_number_appears_in_its_source_and_none_is_invented():
    given = [p for p in REAL_NUMBERS if p.value is not None]
    assert [(p.dataset, p.metric) for p in given] == [("squad", "attention_confidence")]   # PAPER.md's only one
    text = _spec("PAPER.md")
    for p in given:
        for v in (p.base, p.value):
            assert f"{v * 100:.0f}%" in text, v
    assert all(p.base is None for p in REAL_NUMBERS if p.value is None)


def test_the_first_screen_and_the_dataset_registry_read_the_registry():
    from validation.real.datasets import DATASETS

    assert CLAIMS["real-data"].paper_number == claim_text("real-data")
    assert "AC about 12% -> 43% (ratio 1 -> 20)" in claim_text("real-data")
    for c in CLAIMS.values():
        assert c.paper_number == claim_text(c.id)
    for name, d in DATASETS.items():
        assert d.paper_result == dataset_text(name)
    assert dataset_text("sva") == "numbers not in PAPER.md (QK multiplier 100)"
