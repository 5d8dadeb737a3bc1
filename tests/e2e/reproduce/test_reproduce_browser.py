"""The report in a real browser: headless Chromium renders one section per claim with its figures, the
equations as MathML, and, with every results file poisoned (injection fixtures), no event-handler attribute."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from qkov.report import build_report
from qkov.study.claims import CLAIMS

from tests.e2e.reproduce.injection import inject
from tests.e2e.reproduce.report_fixture import add_figure2_runs, build_fake_results

pytestmark = pytest.mark.browser

SECTIONS_JS = """
return [...document.querySelectorAll('section.claim')].map(s => ({
    id: s.id, refs: s.querySelectorAll('p.figref a').length,
    grid: s.querySelector('figure#figure2_grid img') ? s.querySelector('figure#figure2_grid img').naturalWidth : 0,
    images: [...s.querySelectorAll('img')].map(i => ({ok: i.complete, w: i.naturalWidth, h: i.naturalHeight}))}));"""
IMAGES_JS = "return [...document.querySelectorAll('img')].map(i => i.src);"
HANDLERS_JS = """
const bad = [];
for (const el of document.querySelectorAll('*'))
    for (const a of el.attributes)
        if (a.name.toLowerCase().startsWith('on')) bad.push(el.tagName + ' ' + a.name);
return {bad: bad, scripts: document.scripts.length,
        svgs: document.getElementsByTagName('svg').length, iframes: document.getElementsByTagName('iframe').length};"""


@pytest.mark.parametrize("poisoned", [False, True], ids=["clean", "injected"])
def test_report_has_a_section_with_figures_per_claim_and_no_handlers(chromium, tmp_path, poisoned):
    plan = build_fake_results(tmp_path / "out", tmp_path)
    add_figure2_runs(plan.out)
    if poisoned:
        inject(tmp_path / "out")
    html_path, _ = build_report(tmp_path / "out")
    chromium.get(html_path.resolve().as_uri())
    sections = chromium.execute_script(SECTIONS_JS)
    assert [s["id"] for s in sections] == [f"claim-{c}" for c in CLAIMS]
    from qkov.report.collect import collect_runs
    from qkov.report.ledger import build_ledger

    untested = {f"claim-{r.id}" for r in build_ledger(collect_runs(plan.out))
                if not any(st.verdict for st in r.stages.values())}   # no evidence, so no figure to show
    for s in sections:   # each section shows its figures, or links to one shown above (each image embedded once)
        if s["id"] in untested:
            continue
        assert (s["images"] or s["refs"]) and all(i["ok"] and i["w"] > 0 and i["h"] > 0 for i in s["images"]), s
    srcs = chromium.execute_script(IMAGES_JS)
    assert len(srcs) == len(set(srcs)), "an image is embedded twice"
    grid = {s["id"]: s["grid"] for s in sections}
    # the grid sits under sharpness-ratio only; poisoned figure2 configs (parametrization names with markup) give
    # no panels, so no grid is drawn from them
    assert not any(v for k, v in grid.items() if k != "claim-sharpness-ratio")
    assert grid["claim-sharpness-ratio"] > 300 if not poisoned else grid["claim-sharpness-ratio"] == 0
    found = chromium.execute_script(HANDLERS_JS)
    assert found == {"bad": [], "scripts": 0, "svgs": 0, "iframes": 0}, found
    table = chromium.execute_script("""
        const t = document.getElementById('claims-table');
        return {rows: t.tBodies[0].rows.length, w: t.getBoundingClientRect().width,
                head: [...t.tHead.rows[0].cells].map(c => c.textContent)};""")
    assert table["rows"] == len(CLAIMS) and table["w"] > 400
    from qkov.report.content import CLAIM_LINE_COLUMNS

    assert table["head"] == list(CLAIM_LINE_COLUMNS)
    maths = chromium.execute_script("""
        return [...document.getElementsByTagName('math')].map(m => {
            const r = m.getBoundingClientRect(); return [r.width, r.height]; });""")
    assert len(maths) == 2 and all(w > 10 and h > 10 for w, h in maths), maths
    assert max(h for _, h in maths) > 30   # a fraction renders taller than a line: laid out as math, not text
    height = chromium.execute_script("return document.documentElement.scrollHeight")
    chromium.set_window_size(1280, min(int(height), 10000))
    shot = tmp_path / "report.png"
    chromium.save_screenshot(str(shot))
    assert shot.stat().st_size > 10_000
    keep = os.environ.get("QKOV_SCREENSHOT_DIR")
    if keep:
        shutil.copy(shot, Path(keep) / f"report-{'injected' if poisoned else 'clean'}.png")
