"""Nothing from a results file reaches the report as markup; files COMPLETE does not list are not read or named.

The fake study is poisoned by :mod:`injection` (every field the report reads carries HTML and Markdown
payloads, re-sealed so the runs stay complete) and one run gets unlisted files.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

import pytest

from qkov.report import build_report
from qkov.study.claims import CLAIMS
from qkov.report.render_html import CLASS_OF

from tests.e2e.reproduce.injection import EXTRA_FILES, inject
from tests.e2e.reproduce.report_fixture import build_fake_results

ALLOWED_CLASSES = set(CLASS_OF.values()) | {"v", "v-none", "v-unknown", "ev", "meta", "headline", "stages", "wide",
                                            "scroll", "metrics", "num", "eq", "latex", "claim", "where", "evidence",
                                            "statements", "stagecell", "thumb", "figref", "against"}


class Elements(HTMLParser):
    """Every start tag with its attributes."""

    def __init__(self):
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    handle_startendtag = handle_starttag


@pytest.fixture(scope="module")
def poisoned(tmp_path_factory):
    base = tmp_path_factory.mktemp("poisoned")
    build_fake_results(base / "out", base)
    names = inject(base / "out")
    html_path, md_path = build_report(base / "out")
    return names, html_path.read_text(), md_path.read_text()


def test_html_has_no_injected_element_attribute_or_class(poisoned):
    _, text, _ = poisoned
    p = Elements()
    p.feed(text)
    assert p.tags
    handlers = [(t, a) for t, a in p.tags if any(k.lower().startswith("on") for k in a)]
    assert not handlers, handlers[:3]
    assert not [t for t, _ in p.tags if t in ("script", "svg", "iframe", "object", "embed", "a") and t != "a"]
    assert all(a.get("src", "").startswith("data:image/") for t, a in p.tags if t == "img")
    assert all(a.get("href", "").startswith("#") for t, a in p.tags if t == "a")
    classes = {c for _, a in p.tags for c in (a.get("class") or "").split()}
    assert classes <= ALLOWED_CLASSES, classes - ALLOWED_CLASSES
    assert "&lt;script&gt;alert(3)&lt;/script&gt;" in text      # shown as text, not dropped silently


def test_markdown_has_no_raw_markup_or_injected_links(poisoned):
    _, _, md = poisoned
    md = re.sub(r"```math\n[^`]*\n```", "", md)                # fenced code is literal text in every renderer
    assert md.count("```") == 0
    assert not re.search(r"<\s*(script|img|svg|iframe|a)\b", md, re.I)
    assert not re.search(r"\]\((javascript:|https?:)", md)
    tags = set(re.findall(r"<\s*/?\s*([a-zA-Z]+)", md))
    assert tags <= {"details", "summary"}, tags
    assert "&lt;script&gt;" in md


def test_unlisted_files_are_ignored_and_never_named(poisoned):
    """Issue 25: files COMPLETE does not list are never read or shown, and the run stays complete."""
    names, html, md = poisoned
    assert names["extra"] in html and "incomplete (not shown)" not in html   # the run itself is still shown
    assert not any(f in page for f in EXTRA_FILES for page in (html, md))    # its extra files never named
    assert "dropped" not in md and "dropped" not in html                     # nor anything read from them


def test_rejected_evidence_does_not_count(poisoned):
    _, html, _ = poisoned
    # the injected verdict/claim/stage entries were rejected; the valid ones still give each claim its verdict
    assert html.count('<section class="claim" id="claim-') == len(CLAIMS)
    assert 'class="v v-unknown"' not in html.split('id="claims-table"')[1].split("</table>")[0]
