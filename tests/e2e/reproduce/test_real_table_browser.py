"""The real-data section in a real browser: it opens on the paper-vs-qkov table (one row per dataset x metric,
the paper's SQuAD number beside qkov's), then one verdict line per dataset naming the comparison, n, the
interval and the MDE; with markup in the summary's group names and configs, no element gains a handler."""

from __future__ import annotations

import pytest

from qkov.core.runstore import RunWriter
from qkov.report import build_report
from qkov.report.real_table import COLUMNS, REAL_SUMMARY
from qkov.study.claims import write_evidence
from qkov.study.rules import real_data_evidence

from tests.e2e.reproduce.report_fixture import build_fake_results
from tests.e2e.reproduce.test_reproduce_browser import HANDLERS_JS
from tests.unit.report.test_real_vs_paper import PAYLOAD, two_datasets

pytestmark = [pytest.mark.e2e, pytest.mark.browser]

SECTION_JS = """
const h = document.getElementById('real-data');
const first = h.nextElementSibling;
const t = document.getElementById('real-vs-paper');
return {first: first.className + ' ' + (first.firstElementChild ? first.firstElementChild.id : ''),
        head: [...t.tHead.rows[0].cells].map(c => c.textContent),
        rows: [...t.tBodies[0].rows].map(r => [...r.cells].map(c => c.textContent)),
        verdicts: [...document.querySelectorAll('#real-verdicts > li')].map(li => li.textContent),
        width: t.getBoundingClientRect().width};"""


@pytest.mark.parametrize("poisoned", [False, True], ids=["clean", "injected"])
def test_real_data_section_opens_on_the_paper_vs_qkov_table(chromium, tmp_path, poisoned):
    plan = build_fake_results(tmp_path / "out", tmp_path)
    groups = two_datasets()
    if poisoned:
        groups = {k + PAYLOAD: dict(g, config=dict(g["config"], model=PAYLOAD)) for k, g in groups.items()}
    with RunWriter(plan.out / "runs" / REAL_SUMMARY, kind=REAL_SUMMARY, config={"runs": []}) as w:
        w.write_json("tables.json", groups)
        write_evidence(w, real_data_evidence(groups))
    html_path, _ = build_report(plan.out)
    chromium.get(html_path.resolve().as_uri())
    got = chromium.execute_script(SECTION_JS)
    assert got["first"] == "scroll real-vs-paper", got["first"]          # the section opens on the table
    assert got["head"] == list(COLUMNS) and got["width"] > 400
    assert len(got["rows"]) == 7                                           # SQuAD 3 metrics, HateXplain 4
    ac = next(r for r in got["rows"] if r[1].startswith("AC"))
    assert ac[0].startswith("squad") and ac[2].startswith("about 12% -> 43% (ratio 1 -> 20)")
    assert ac[3].startswith("10% ± 0% -> 40% ± 0%")
    assert len(got["verdicts"]) == 2
    assert [v.split()[:2] for v in got["verdicts"]] == [["contradicts", "squad"], ["supports", "hatexplain"]]
    for line in got["verdicts"]:
        assert "vs 1 at best validation" in line and "n=3" in line and "MDE" in line and "95% t" in line, line
    found = chromium.execute_script(HANDLERS_JS)
    assert found == {"bad": [], "scripts": 0, "svgs": 0, "iframes": 0}, found
