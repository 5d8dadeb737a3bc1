"""The registry of the paper's numbers is transcription, checked against its source: each entry's cited section
is a heading of the spec file it names, each number it gives appears there, and no entry invents a number. The
source lines are a committed excerpt of the spec files (``spec_excerpt.md``), kept equal to them where they are
present, so these checks never skip."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from theory.claims import CLAIMS
from theory.paper_numbers import CLAIM_STATEMENTS, REAL_NUMBERS, claim_text, dataset_text

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[3]
SPEC_DIRS = (ROOT.parent / "shared" / "spec", ROOT.parent.parent / "shared" / "spec")
EXCERPT = Path(__file__).with_name("spec_excerpt.md")
"""The spec lines the registry cites (every heading, every line with a percentage), committed beside this test so
that the transcription checks run in any checkout; :func:`test_the_committed_excerpt_is_the_spec_s` keeps it
equal to the spec files where they are present."""


def spec_dir() -> Path | None:
    """``$QKOV_SPEC_DIR``, else ``shared/spec`` beside the checkout (or one level up), else ``None``."""
    env = os.environ.get("QKOV_SPEC_DIR")
    for d in ((Path(env),) if env else SPEC_DIRS):
        if (d / "PAPER.md").is_file() and (d / "MODEL.md").is_file():
            return d
    return None


def excerpt(d: Path) -> str:
    """The excerpt of the spec files in ``d``: per file its headings and every line holding a percentage."""
    out = []
    for name in ("MODEL.md", "PAPER.md"):
        out.append(f"=== spec/{name}")
        out += [line for line in (d / name).read_text().splitlines() if line.startswith("#") or "%" in line]
    return "\n".join(out) + "\n"


def _spec(name: str) -> str:
    """The committed excerpt's part for ``spec/<name>``."""
    parts = re.split(r"^=== spec/(\S+)\n", EXCERPT.read_text(), flags=re.M)
    return dict(zip(parts[1::2], parts[2::2]))[name]


def test_the_committed_excerpt_is_the_spec_s():
    """The excerpt is what the spec files hold now (regenerate: ``python -c "from tests.unit.theory.test_paper_numbers
    import *; EXCERPT.write_text(excerpt(spec_dir()))"``); without the spec files this one test skips, naming how to
    point it at them, and the transcription tests below still run against the committed excerpt."""
    d = spec_dir()
    if d is None:
        pytest.skip("spec/PAPER.md and spec/MODEL.md not found (set QKOV_SPEC_DIR=<dir holding them>, or put "
                    f"shared/spec beside the checkout: {', '.join(map(str, SPEC_DIRS))}); the transcription tests ran "
                    f"against the committed {EXCERPT.name}")
    assert EXCERPT.read_text() == excerpt(d), f"{EXCERPT.name} is stale: regenerate it from {d}"


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
