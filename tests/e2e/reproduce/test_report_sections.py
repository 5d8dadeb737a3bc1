"""report.html and report.md number the same sections the same way (the issue: HTML had 'Other figures' as 5,
so Markdown's 5 and 6 were HTML's 6 and 7)."""

from __future__ import annotations

import re

from qkov.report import build_report
from qkov.report.content import SECTIONS

from tests.e2e.reproduce.report_fixture import build_fake_results


def test_html_and_markdown_have_the_same_numbered_sections(tmp_path):
    plan = build_fake_results(tmp_path / "out", tmp_path)
    html_path, md_path = build_report(plan.out)
    html = re.findall(r"<h2 id=\"[a-z-]+\">(\d+\. [^<]+)</h2>", html_path.read_text())
    md = re.findall(r"(?m)^## (\d+\. .+)$", md_path.read_text())
    assert html == md == [f"{i}. {t}" for i, (_, t) in enumerate(SECTIONS, 1)]
