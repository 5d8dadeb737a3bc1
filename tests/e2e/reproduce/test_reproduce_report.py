"""The report: ledger join and verdict rule, metric tables, MathML, self-contained HTML, Markdown twin."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, strategies as st

from qkov.core.runstore import atomic_write_json
from qkov.cli.main import cli, run_cli
from qkov.report import build_report
from qkov.report.collect import collect_runs
from qkov.report.ledger import build_ledger
from qkov.study.claims import CLAIMS
from qkov.report.mathml import math_block, sanitise_mathml
from qkov.report.tables import flatten_metrics, metric_tables

from tests.e2e.reproduce.report_fixture import build_fake_results
from tests.cli_errors import assert_one_line_error


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    """A complete fake study with real data, reported once for the module."""
    import os

    base = tmp_path_factory.mktemp("study")
    os.environ.pop("QKOV_FAKE_SLEEP", None)
    plan = build_fake_results(base / "out", base)
    html_path, md_path = build_report(base / "out")
    return plan, html_path, md_path


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


def test_ledger_joins_theory_and_stage_evidence(study):
    plan, _, _ = study
    rows = {r.id: r for r in build_ledger(collect_runs(plan.out))}
    assert list(rows) == list(CLAIMS)
    g = rows["growth-rates"]
    assert (g.status, g.stages["derive"].verdict, g.stages["simulate"].verdict, g.stages["real"].verdict,
            g.verdict) == ("derived", "supports", "supports", "", "supports")
    assert len(g.stages["simulate"].evidence) == 3 and g.stages["simulate"].line.endswith("(+2 more runs)")
    assert rows["paper-equations"].verdict == "contradicts"     # derivation refutes, simulation contradicts
    assert rows["real-data"].stages["real"].verdict == "supports"
    # one synthetic run is insufficient, three support: insufficient does not count
    assert [e.verdict for _, e in rows["fixed-lines"].stages["synthetic"].evidence].count("insufficient") == 2
    assert rows["fixed-lines"].verdict == "supports"
    assert rows["sharpness-order"].headline is not None        # every claim of the fake study has a figure
    tested = [r for r in rows.values() if any(st.verdict for st in r.stages.values())]
    assert [r.id for r in tested if not r.figures] == []             # every claim the fake study tests has a figure
    assert rows["optimizer-stability"].verdict == "untested"      # no fake evidence: untested, not a verdict


def test_html_is_self_contained_with_claims_equations_figures(study):
    plan, html_path, _ = study
    text = html_path.read_text()
    assert '<table id="claims-table">' in text and text.count('<tr id="row-') == len(CLAIMS)
    assert text.count('<section class="claim" id="claim-') == len(CLAIMS)
    assert text.count('<math xmlns="http://www.w3.org/1998/Math/MathML" display="block">') == 2
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", text)  # nothing fetched from a network
    assert "<script" not in text
    for section in ("Claims", "The evidence, claim by claim", "Derivation", "Real data", "Run provenance"):
        assert section in text
    assert all(r.name in text for r in plan.runs)               # provenance lists every run


def test_markdown_twin_links_figures_relative(study):
    plan, _, md_path = study
    md = md_path.read_text()
    links = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", md)
    assert links and all((md_path.parent / link).is_file() for link in links)
    assert "| claim | paper | qkov | verdict | scope | --full expected to change it |" in md
    assert "| claim | outcome | derivation | simulation | synthetic training | real data |" in md
    assert "```math\n\\frac{e^{u}}{e^{u} + 19}\n```" in md
    assert re.search(r"\| 1\.0 \| 3 \| 0\.9\d+ ± 0\.0\d+", md)  # real-data mean ± std


def test_incomplete_run_is_listed_not_reported(tmp_path):
    out = tmp_path / "out"
    half = out / "runs" / "synthetic-000000000000"
    half.mkdir(parents=True)
    atomic_write_json(half / "metrics.json", {"loss": 1.0})     # no COMPLETE
    html, md = build_report(out)
    assert "incomplete \\(not shown\\): synthetic-000000000000" in md.read_text()
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
