"""Formulas read as formulas in a real browser: the derivation report and a study report, rendered by headless
Chromium, show no raw ``**``, no LaTeX macros (``\\frac``, ``\\mathrm``) and no ``_`` in their math text."""

from __future__ import annotations

import re

import pytest

from tests.e2e.reproduce.report_fixture import build_fake_results

pytestmark = pytest.mark.browser

TEXT_JS = """
const pick = sel => [...document.querySelectorAll(sel)].map(e => e.innerText || e.textContent);
const shown = m => { const c = m.cloneNode(true); c.querySelectorAll('annotation').forEach(a => a.remove());
                     return c.textContent; };   // the LaTeX annotation is source, not shown
return {body: document.body.innerText, math: [...document.querySelectorAll('math')].map(shown), statements: pick('.statement'),
        ledger: pick('table.ledger td'), titles: pick('.eq > div:first-child')};"""
LATEX = re.compile(r"\\[A-Za-z]+")


def _text(chromium, path):
    chromium.get(path.resolve().as_uri())
    return chromium.execute_script(TEXT_JS)


def test_derivation_report_math_is_rendered_not_raw(chromium, tmp_path):
    from qkov.report.derivation import render_html
    from theory.derivation_cache import cached_derivation_json

    payload = cached_derivation_json(("CACO", "FACO", "CAFO", "FAFO"))[0]
    page = tmp_path / "report.html"
    page.write_text(render_html(payload))
    got = _text(chromium, page)
    assert len(got["math"]) == len(payload["displays"]) and len(got["statements"]) > 200
    assert "**" not in got["body"] and not LATEX.search(got["body"]), LATEX.findall(got["body"])[:5]
    for kind in ("math", "statements", "titles"):
        assert [t for t in got[kind] if "_" in t] == [], kind
    # the ledger's prose keeps code names (level_curve_crossover) but no math written with underscores
    assert not [t for t in got["ledger"] if re.search(r"\b(eta|rho|s|W)_[A-Za-z]{1,2}\b", t)]


@pytest.mark.parametrize("study", ["fake", "derived"])
def test_study_report_page_has_no_raw_powers_or_latex(chromium, tmp_path, study):
    """``derived``: a results directory holding the real derive run, whose ledger statements (the sharpness-order
    crossover ratio, rho_OV) are sympy expressions: they read with superscripts, not ``M**2``."""
    from qkov.core.runstore import run_dir_for
    from qkov.report import build_report
    from qkov.study.derive_command import DeriveConfig, write_derivation

    out = tmp_path / "out"
    if study == "fake":
        build_fake_results(out, tmp_path)
    else:
        cfg = DeriveConfig()
        write_derivation(run_dir_for(out, "derive", cfg.to_json_dict()), cfg)
    html_path, _ = build_report(out)
    got = _text(chromium, html_path)
    assert "**" not in got["body"] and not LATEX.search(got["body"])
    assert [t for t in got["math"] if "_" in t or "**" in t] == []
    if study == "derived":
        titles = chromium.execute_script("return [...document.querySelectorAll('.eq h4')].map(h => h.innerText);")
        assert titles and [t for t in titles if "_" in t] == []     # 'reduced flow of s_O' reads s with subscript O
        from theory.checks import exactness_text
        from theory.derivation_cache import cached_derivation_json

        summary = cached_derivation_json(("CACO", "FACO", "CAFO", "FAFO"))[0]["summary"]
        assert exactness_text(summary) in got["body"] and "scoped (" in got["body"]   # never 'N of N symbolic'
        assert "M²" in got["body"] and "(1-p)CACO" in got["body"].replace(" ", "")
