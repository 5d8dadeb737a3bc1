"""Formulas in report text: sympy's ``**`` as superscripts, the checks' LaTeX as readable HTML, always escaped."""

from __future__ import annotations

import re

import pytest

from qkov.report.mathml import html_text, latex_html, plain_powers

pytestmark = pytest.mark.unit


def test_powers_become_superscripts_and_the_rest_is_marked():
    assert plain_powers("sqrt(delta**2 + 4*u**2)") == "sqrt(delta² + 4·u²)"
    assert plain_powers("r**2/2, u**(-1), M**10") == "r²/2, u⁻¹, M¹⁰"
    assert plain_powers("x**(1/2)") == "x^(1/2)"          # no superscript for '/': written, not raw **


def test_short_subscripts_are_sub_tags_code_names_stay_and_markup_is_escaped():
    got = html_text("s_O, eta_QK, W_{-1}, (1-p)_CACO, level_curve_crossover, u_of_t <b>&")
    assert got == ("s<sub>O</sub>, eta<sub>QK</sub>, W<sub>-1</sub>, (1-p)<sub>CACO</sub>, level_curve_crossover, "
                   "u_of_t &lt;b&gt;&amp;")


@pytest.mark.parametrize("text, html", [
    ("asymptotically (u -> oo), as 1/r", "asymptotically (u → ∞), as 1/r"),
    ("eps->oo; M -> oo; boo, zoo, too, oo.", "eps→∞; M → ∞; boo, zoo, too, ∞."),
    ("dW/dt = -eta (W1 W1^T G + G W2^T W2) with W1^T W1 - W2 W2^T conserved",
     "dW/dt = -eta (W₁ W₁ᵀ G + G W₂ᵀ W₂) with W₁ᵀ W₁ - W₂ W₂ᵀ conserved"),
    ("A1 B, FACO, W10, 2^T, (AB)^T", "A₁ B, FACO, W10, 2^T, (AB)ᵀ"),
    ("the OV line direction P E_d^T", "the OV line direction P E<sub>d</sub>ᵀ"),
])
def test_infinity_arrows_and_matrix_products_read_as_math(text, html):
    assert html_text(text) == html


@pytest.mark.parametrize("latex, html", [
    (r"\frac{d}{dt}\,C_{QK} = 0", "d/dt C<sub>QK</sub> = 0"),
    (r"\rho_{OV} = s_O^2 + s_V^2 = \sqrt{\delta^2 + 4u^2}",
     "ρ<sub>OV</sub> = s<sub>O</sub><sup>2</sup> + s<sub>V</sub><sup>2</sup> = √(δ<sup>2</sup> + 4u<sup>2</sup>)"),
    (r"\lim_{u\to\infty} \partial\log(1-p)/\partial\log r = -1 < 0", "lim<sub>u→∞</sub> ∂log(1-p)/∂log r = -1 &lt; 0"),
    (r"\dot W = -\eta\,(W_1W_1^\top G)", "W\u0307 = -η (W<sub>1</sub>W<sub>1</sub>ᵀ G)"),
    (r"\mathrm{orbit} \text{ at every point}", "orbit at every point"),
    (r"<img src=x onerror=alert(1)>", "&lt;img src=x onerror=alert(1)&gt;"),
])
def test_latex_statements_read_as_text(latex, html):
    got = latex_html(latex)
    assert got == html
    assert "\\" not in got and "_" not in re.sub(r"<[^>]+>", "", got)

