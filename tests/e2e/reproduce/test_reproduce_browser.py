"""The report in a real browser: headless Chromium renders the ledger, the figures and the equations."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from qkov.report import build_report

from browser import chromium_missing, open_driver
from report_fixture import build_fake_results

pytestmark = pytest.mark.browser


def test_report_renders_offline_in_chromium(tmp_path):
    missing = chromium_missing()
    if missing:
        pytest.skip(missing)
    build_fake_results(tmp_path / "out", tmp_path)
    html_path, _ = build_report(tmp_path / "out")
    driver = open_driver(tmp_path / "profile")
    try:
        driver.get(html_path.resolve().as_uri())
        ledger = driver.execute_script("""
            const t = document.getElementById('ledger');
            return t ? {rows: t.tBodies[0].rows.length, w: t.getBoundingClientRect().width,
                        head: [...t.tHead.rows[0].cells].map(c => c.textContent)} : null;""")
        assert ledger is not None and ledger["rows"] == 10 and ledger["w"] > 400
        assert ledger["head"] == ["paper's claim", "derived", "simulation", "synthetic training", "real data",
                                  "verdict"]
        images = driver.execute_script("""
            return [...document.images].map(i => ({ok: i.complete, w: i.naturalWidth, h: i.naturalHeight}));""")
        assert len(images) == 7 and all(i["ok"] and i["w"] > 0 and i["h"] > 0 for i in images), images
        maths = driver.execute_script("""
            return [...document.getElementsByTagName('math')].map(m => {
                const r = m.getBoundingClientRect(); return [r.width, r.height]; });""")
        assert len(maths) == 2 and all(w > 10 and h > 10 for w, h in maths), maths
        # a fraction renders taller than one line of text: the MathML is laid out as math, not as plain text
        assert max(h for _, h in maths) > 30
        height = driver.execute_script("return document.documentElement.scrollHeight")
        driver.set_window_size(1280, min(int(height), 10000))
        shot = tmp_path / "report.png"
        driver.save_screenshot(str(shot))
        assert shot.stat().st_size > 10_000
        keep = os.environ.get("QKOV_SCREENSHOT_DIR")
        if keep:
            shutil.copy(shot, Path(keep) / "report.png")
    finally:
        driver.quit()
