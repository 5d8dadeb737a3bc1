"""The derivation report: every equation cites a check that proves its claim; checks counted by exactness
(symbolic / scoped / numeric) in the report, the CLI's line and docs/theory.md."""

from __future__ import annotations

import re

import pytest

from tests.paths import DOCS

pytestmark = pytest.mark.integration

MULTI_EQUATION_CHECKS = ("-sign-trajectory-solves-flow",)
"""Checks that establish several displayed equations at once (u(t) and v(t) of one exact trajectory)."""


@pytest.fixture(scope="module")
def payload():
    from theory.derivation_cache import cached_derivation_json

    return cached_derivation_json(("CACO", "FACO", "CAFO", "FAFO"))[0]


def test_every_equation_cites_a_passed_check_whose_claims_include_the_equations_claim(payload):
    from qkov.report.derivation import all_checks
    from theory.claims import CLAIMS

    idx = {c["name"]: c for c in all_checks(payload)}
    wrong = [(d["title"], d["check"], d.get("claim")) for d in payload["displays"]
             if d.get("claim") not in CLAIMS or d["check"] not in idx or not idx[d["check"]]["passed"]
             or d["claim"] not in idx[d["check"]]["claims"]]
    assert wrong == []


def test_one_check_proves_one_equation_unless_it_is_a_multi_equation_check(payload):
    """The issue's cases: FACO's flows of a, b, c all cited FACO-effective-v; every residual cited
    order-CACO-vs-FACO (a comparison of two residuals, not either formula)."""
    cited: dict[str, list[str]] = {}
    for d in payload["displays"]:
        cited.setdefault(d["check"], []).append(d["title"])
    shared = {c: t for c, t in cited.items() if len(t) > 1 and not c.endswith(MULTI_EQUATION_CHECKS)
              and not c.startswith("rho-")}            # rho-*-effective: the same formula shown per parametrization
    assert shared == {}
    for d in payload["displays"]:
        m = re.fullmatch(r"(\w{4}): reduced flow of (\w+)", d["title"])
        if m:
            assert d["check"] == f"{m[1]}-flow-{m[2]}", d
        if d["title"].endswith("attention residual at matched loss"):
            assert d["check"] == d["title"][:4] + "-residual-leading", d


def test_counts_are_labelled_as_exact_as_they_are(payload):
    from qkov.report.derivation import render_html, render_markdown
    from theory.checks import exactness_text

    s = payload["summary"]
    text = exactness_text(s)
    m, kinds = s["methods"], s["scoped_kinds"]
    assert m["scoped"] == sum(kinds.values()) > 0 and m["symbolic"] + m["scoped"] + m["numeric"] == s["checks"]
    assert text == (f"{s['passed']} of {s['checks']} checks passed: {m['symbolic']} symbolic, {m['scoped']} scoped "
                    f"({kinds['at one point']} at one point, {kinds['at one size']} at one size), {m['numeric']} numeric")
    for page in (render_html(payload), render_markdown(payload)):
        assert text in page
        assert not re.search(r"(\d+) of \1 symbolic|every check is symbolic|the rest exactly", page)


def test_docs_theory_states_the_derived_counts(payload):
    """docs/theory.md's counts are the derivation's (the issue: it said 207, all symbolic, for 211 with 6 scoped)."""
    from theory.checks import exactness_text

    page = (DOCS / "theory.md").read_text()
    assert exactness_text(payload["summary"]) in page
    stated = {int(n) for n in re.findall(r"(\d+) checks", page)}
    assert stated == {payload["summary"]["checks"]}, stated
    assert "every check is `symbolic`" not in page and "every check is symbolic" not in page


def test_qkov_derive_prints_the_counts_by_exactness(payload, tmp_path, capsys):
    from qkov.cli.main import cli
    from qkov.cli.support import run_cli
    from theory.checks import exactness_text

    assert run_cli(cli, ["derive", "--out", str(tmp_path / "results"), "--format", "md"]) == 0
    out = capsys.readouterr().out
    assert f"checks: {exactness_text(payload['summary'])}\n" in out and "scoped (" in out


def test_latex_report_stays_ascii(payload):
    """The ledger's prose now carries M² and ·: the .tex writes them as math, so pdflatex needs no Unicode."""
    from qkov.report.derivation import render_tex

    tex = render_tex(payload)
    assert tex.isascii() and "$^{2}$" in tex
