"""The report: ledger join and verdict rule, metric tables, MathML, self-contained HTML, Markdown twin."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, strategies as st

from qkov.core.runstore import atomic_write_json
from qkov.cli.main import cli, run_cli
from qkov.report import build_report
from qkov.report.collect import collect_runs
from qkov.report.ledger import CLAIMS, build_ledger, combine_verdicts, overall_verdict
from qkov.report.mathml import math_block, sanitise_mathml
from qkov.report.tables import flatten_metrics, metric_tables

from report_fixture import build_fake_results
from tests.cli_errors import assert_one_line_error

STAGE_VERDICTS = st.sampled_from(["supports", "contradicts", "mixed", "n/a", ""])


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    """A complete fake study with real data, reported once for the module."""
    import os

    base = tmp_path_factory.mktemp("study")
    os.environ.pop("QKOV_FAKE_SLEEP", None)
    plan = build_fake_results(base / "out", base)
    html_path, md_path = build_report(base / "out")
    return plan, html_path, md_path


def test_combine_verdicts_hand_cases():
    assert combine_verdicts([]) == ""
    assert combine_verdicts(["n/a", "n/a"]) == "n/a"
    assert combine_verdicts(["supports", "n/a", "supports"]) == "supports"
    assert combine_verdicts(["contradicts"]) == "contradicts"
    assert combine_verdicts(["supports", "contradicts"]) == "mixed"


def test_overall_verdict_rule_hand_cases():
    assert overall_verdict("derived", ["supports", "", "n/a"]) == "supported"
    assert overall_verdict("refined", ["supports", "supports", ""]) == "supported as refined"
    assert overall_verdict("derived", ["supports", "contradicts", ""]) == "mixed"
    assert overall_verdict("derived", ["mixed", "", ""]) == "mixed"
    assert overall_verdict("refuted", ["contradicts", "", ""]) == "refuted"
    assert overall_verdict("refuted", ["supports", "", ""]) == "mixed"
    assert overall_verdict("", ["contradicts", "", ""]) == "contradicted"
    assert overall_verdict("derived", ["", "n/a", ""]) == "derived only"
    assert overall_verdict("refined", []) == "refined only"
    assert overall_verdict("", []) == "untested"


@given(st.sampled_from(["derived", "refined", "refuted", ""]), st.lists(STAGE_VERDICTS, min_size=3, max_size=3),
       st.randoms())
def test_overall_verdict_ignores_order_and_untested_stages(status, verdicts, rnd):
    shuffled = list(verdicts)
    rnd.shuffle(shuffled)
    v = overall_verdict(status, verdicts)
    assert v == overall_verdict(status, shuffled) == overall_verdict(status, verdicts + ["n/a", ""])
    if "supports" in verdicts and "contradicts" in verdicts:
        assert v == "mixed"


def test_metric_table_mean_and_sample_std_by_hand(study, tmp_path):
    plan, _, _ = study
    results = collect_runs(plan.out)
    (table,) = metric_tables(results.stage("real"))
    assert table.label_fields == ["ratio"] and [r[0] for r in table.rows] == [["1.0"], ["30.0"]]
    # accuracy = 0.9 + x0/100 with x0 the first normal draw of seeds 1, 2, 3
    import numpy as np

    acc = [0.9 + np.random.default_rng(s).normal(size=4)[0] / 100 for s in (1, 2, 3)]
    cell = table.rows[0][1]["accuracy"]
    assert cell.n == 3 and cell.mean == pytest.approx(np.mean(acc)) and cell.std == pytest.approx(np.std(acc, ddof=1))
    assert flatten_metrics({"metrics": {"a": 1, "b": {"c": 2.5, "l": [1]}}, "x": {"m": {"mean": 1, "std": 0.5}}}) == {
        "a": 1.0, "b.c": 2.5, "x.m": (1.0, 0.5)}


def test_ledger_joins_theory_and_stage_claims(study):
    plan, _, _ = study
    rows = {r.id: r for r in build_ledger(collect_runs(plan.out))}
    assert list(rows)[: len(CLAIMS)] == list(CLAIMS)
    g = rows["growth-rates"]
    assert (g.status, g.stages["simulate"].verdict, g.stages["synthetic"].verdict, g.stages["real"].verdict,
            g.verdict) == ("derived", "supports", "supports", "", "supported")
    assert rows["paper-equations"].verdict == "refuted"
    assert rows["real-data"].stages["real"].verdict == "supports"
    assert rows["fixed-lines"].verdict == "untested"          # not in the fake derivation, no stage tested it
    assert rows["rescaling"].verdict == "refined only"


def test_html_is_self_contained_with_ledger_equations_figures(study):
    plan, html_path, _ = study
    text = html_path.read_text()
    assert '<table id="ledger">' in text and text.count('<tr id="claim-') == len(CLAIMS)
    assert text.count('<math xmlns="http://www.w3.org/1998/Math/MathML" display="block">') == 2
    assert text.count('<img src="data:image/png;base64,') == 3 + 4      # simulation curves + DTAP heatmaps
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", text)  # nothing fetched from a network
    assert "<script" not in text
    for section in ("Claims ledger", "Derivation", "Theory versus training", "DTAP heatmaps", "Real data",
                    "Run provenance"):
        assert section in text
    assert all(r.name in text for r in plan.runs)               # provenance lists every run


def test_markdown_twin_links_figures_relative(study):
    plan, _, md_path = study
    md = md_path.read_text()
    links = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", md)
    assert len(links) == 7 and all((md_path.parent / link).is_file() for link in links)
    assert "| paper's claim | derived | simulation | synthetic training | real data | verdict |" in md
    assert "$$\n\\frac{e^{u}}{e^{u} + 19}\n$$" in md
    assert re.search(r"\| 1\.0 \| 3 \| 0\.9\d+ ± 0\.0\d+", md)  # real-data mean ± std


def test_incomplete_run_is_listed_not_reported(tmp_path):
    out = tmp_path / "out"
    half = out / "runs" / "synthetic-000000000000"
    half.mkdir(parents=True)
    atomic_write_json(half / "metrics.json", {"loss": 1.0})     # no COMPLETE
    html, md = build_report(out)
    assert "incomplete (not shown): synthetic-000000000000" in md.read_text()
    assert "untested" in html.read_text()


def test_mathml_is_sanitised_and_wrapped():
    assert sanitise_mathml('<mi onclick="x()">a</mi><script>alert(1)</script>') == "<mi>a</mi>"
    assert sanitise_mathml("<mi>&ExponentialE;</mi>") == "<mi>\u2147</mi>"
    block = math_block("<mrow><mi>u</mi></mrow>", "u")
    assert block.startswith('<math xmlns="http://www.w3.org/1998/Math/MathML" display="block">')
    assert '<annotation encoding="application/x-tex">u</annotation>' in block
    assert math_block("", r"\dot u") == '<pre class="latex"><code>\\dot u</code></pre>'


def test_report_command(tmp_path, study, capsys):
    plan, _, _ = study
    assert run_cli(cli, ["report", "--out", str(plan.out)]) == 0
    assert capsys.readouterr().out.strip().splitlines()[-1] == f"report: {(plan.out / 'report.html').resolve()}"
    assert run_cli(cli, ["report", "--out", str(tmp_path / "none")]) == 2
    assert_one_line_error(capsys.readouterr().err, "out")
    assert not (tmp_path / "none").exists()
