"""The report's first screen in headless Chromium: the claims table is the first thing on the page, each row sets
the paper's number beside qkov's (real data in the paper's units), a split verdict names its parametrizations,
the preset label is true of the rates, and no cell is cut or clipped."""

from __future__ import annotations

import pytest

from qkov.core.runstore import RunWriter
from qkov.report import build_report
from qkov.report.content import CLAIM_LINE_COLUMNS
from qkov.report.real_table import REAL_SUMMARY
from qkov.study import figure2_run
from qkov.study.claims import CLAIMS, write_evidence
from qkov.study.rules import real_data_evidence

from tests.e2e.reproduce.report_fixture import build_fake_results
from tests.unit.report.test_real_vs_paper import two_datasets
from tests.unit.test_figure2_adam_evidence import fig2_summary

pytestmark = [pytest.mark.e2e, pytest.mark.browser]

FIRST_SCREEN_JS = """
const t = document.getElementById('claims-table');
const cells = [...t.querySelectorAll('td, th')];
return {top: t.getBoundingClientRect().top, height: window.innerHeight,
        head: [...t.tHead.rows[0].cells].map(c => c.textContent),
        rows: Object.fromEntries([...t.tBodies[0].rows].map(r => [r.id, [...r.cells].map(c => c.innerText)])),
        clipped: cells.filter(c => c.scrollWidth > c.clientWidth + 1).map(c => c.innerText.slice(0, 80)),
        before: [...document.body.children].slice(0, 4).map(e => e.tagName + '#' + e.id)};"""

# the quick study's Figure 2: 10x the paper's rates; CACO's distinct attention falls, the others' rises
FIG2 = {"CACO": (0.404, 0.044), "FACO": (0.348, 0.991), "FAFO": (0.348, 0.848), "CAFO": (0.360, 0.482)}


def _figure2_runs(out):
    for param, (eq, fq) in FIG2.items():
        s = fig2_summary(eq, fq)
        s["param"] = param
        for st in s["settings"]:
            st["lr_qk"], st["lr_ov"] = st["lr_qk"] * 10, st["lr_ov"] * 10
        with RunWriter(out / "runs" / f"figure2-first{param.lower()}", kind="figure2", config={"param": param}) as w:
            w.write_json("metrics.json", s)
            write_evidence(w, figure2_run.evidence(s))


def _real_summary(out):
    groups = two_datasets()
    sq = groups["squad/adamw/small/quick"]
    sq["config"] = dict(sq["config"], layers=2, glove=True)       # SQuAD --quick without the glove extra
    sq["embedding_init"] = ["random (GloVe vectors unavailable)"]
    with RunWriter(out / "runs" / REAL_SUMMARY, kind=REAL_SUMMARY, config={"runs": []}) as w:
        w.write_json("tables.json", groups)
        write_evidence(w, real_data_evidence(groups))


def test_the_first_screen_sets_the_papers_numbers_beside_qkovs(chromium, tmp_path):
    plan = build_fake_results(tmp_path / "out", tmp_path)
    _figure2_runs(plan.out)
    _real_summary(plan.out)
    html_path, _ = build_report(plan.out)
    chromium.set_window_size(1280, 900)
    chromium.get(html_path.resolve().as_uri())
    got = chromium.execute_script(FIRST_SCREEN_JS)
    assert got["top"] < 0.5 * got["height"], got["before"]          # the table opens the page, no scrolling
    assert got["head"] == list(CLAIM_LINE_COLUMNS) and got["head"][1:3] == ["paper", "qkov"]
    assert len(got["rows"]) == len(CLAIMS)
    claim, paper, qkov, verdict, scope, _ = got["rows"]["row-sharpness-ratio"]
    assert "QK 0.2, OV 0.01" in paper                                 # the paper's rates ...
    assert "CACO distinct attention 0.404 -> 0.044" in qkov and "FACO distinct attention 0.348 -> 0.991" in qkov
    assert verdict.startswith("contradicted")
    assert "contradicted for CACO (synthetic training)" in verdict   # ... and the split named by parametrization
    holds = verdict[verdict.index("holds for"):]
    assert all(p in holds for p in ("FACO", "FAFO", "CAFO")) and "CACO" not in holds
    assert "paper preset at 10x the paper's rates" in scope and "(QK 2, OV 0.1)" in scope
    _, paper, qkov, verdict, scope, _ = got["rows"]["row-real-data"]
    assert "AC about 12% -> 43% (ratio 1 -> 20)" in paper
    assert "AC 10% ± 0% -> 40% ± 0% (ratio 1 -> 20; n = 3 and 3 seeds; paper about 12% -> 43%)" in qkov
    assert "insufficient for squad/adamw/small/quick" in verdict     # below the paper's level: not against it
    assert "holds for hatexplain/adamw/small/quick" in verdict
    for cells in got["rows"].values():
        assert not any(c.rstrip().endswith(("...", "…")) for c in cells), cells
    assert got["clipped"] == []                                       # every cell wraps; nothing hidden
