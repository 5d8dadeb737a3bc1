"""Figures worth printing: the Figure 2 grid under the sharpness claims, each image embedded once."""

from __future__ import annotations

import re

from qkov.report import build_report

from tests.e2e.reproduce.report_fixture import add_figure2_runs, build_fake_results


def test_figure2_grid_sits_under_sharpness_and_no_image_is_embedded_twice(tmp_path):
    plan = build_fake_results(tmp_path / "out", tmp_path)
    add_figure2_runs(plan.out)
    html_path, _ = build_report(tmp_path / "out")
    page = html_path.read_text()
    sections = dict(re.findall(r'<section class="claim" id="claim-([a-z-]+)">(.*?)</section>', page, re.S))
    assert 'id="figure2_grid"' in sections["sharpness-ratio"]
    assert 'href="#figure2_grid"' in sections["sharpness-order"] and 'id="figure2_grid"' not in sections["sharpness-order"]
    uris = re.findall(r'src="(data:image/[^"]+)"', page)
    assert uris and len(uris) == len(set(uris)), "an image is embedded twice"
    assert "figure2_dtap" not in page.split('id="other-figures"')[1]     # the four files are the grid now
    assert len(page.encode()) < 3_000_000
