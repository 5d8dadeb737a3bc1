"""Displayed equations: each produced by sympy (LaTeX and presentation MathML), never typed.

Every display names the check that established it and the claim (:data:`theory.claims.CLAIMS`) it belongs
to, so a report can print the equation and, right after it, how it was verified; the check's own ``claims``
include the display's claim (``tests/unit/theory/test_display_citations.py``).
"""

from __future__ import annotations

from typing import Any

import sympy as sp
from sympy.printing.mathml import mathml

from theory.symbols import P, t, u
from theory.parametrization import Parametrization


def _display(title: str, lhs: sp.Expr, rhs: sp.Expr, section: str, check: str, claim: str) -> dict[str, Any]:
    eq = sp.Eq(lhs, rhs, evaluate=False)
    ml = mathml(eq, printer="presentation")
    return {"title": title, "section": section, "latex": sp.latex(eq),
            "mathml": f'<math xmlns="http://www.w3.org/1998/Math/MathML" display="block">{ml}</math>',
            "check": check, "claim": claim}


def _dt(x: sp.Symbol) -> sp.Expr:
    """``d x/dt`` of the state symbol itself (a function named ``s_O`` would print as the text ``s_o`` in MathML)."""
    return sp.Derivative(x, t, evaluate=False)


def displays(derivations: dict, glob) -> list[dict[str, Any]]:
    """All displayed equations of the report, in reading order."""
    from theory.symmetric_line import line_geometry, loss_display, p_of_v

    geo = line_geometry()
    out = [
        _display("Attention on the distinct token on the symmetric line", P, p_of_v(), "symmetric-subspace",
                 "attention-derivative", "symmetric-subspace"),
        _display("Population loss on the symmetric line", sp.Symbol("L"), loss_display(), "symmetric-subspace",
                 "loss-on-line", "symmetric-subspace"),
        _display("Squared norm n_OV of the OV line direction P E_d^T", sp.Symbol("n_OV"), geo.ov_norm2,
                 "symmetric-subspace", "ov-direction-fixed-A", "fixed-lines"),
        _display("Squared norm n_QK of the QK line direction w", sp.Symbol("n_QK"), geo.qk_norm2,
                 "symmetric-subspace", "qk-direction-fixed-alpha", "fixed-lines"),
    ]
    for p, d in derivations.items():
        for x, f in zip(d.system.state, d.system.rhs_display, strict=False):   # each coordinate its own check
            out.append(_display(f"{p}: reduced flow of {x.name}", _dt(x), f, f"reduced-{p}", f"{p}-flow-{x.name}",
                                "reduced-odes"))
        for name, expr in d.conserved.items():
            out.append(_display(f"{p}: conserved {name}", sp.Symbol(name), expr, f"reduced-{p}", f"{p}-conserved-{name}",
                                "reduced-odes"))
        if d.first_integral is None or d.asymptotics is None or d.adam is None:
            continue  # no closed-form line results for its kinds (Parametrization.line_theory)
        if Parametrization(p).ov.kind.rescales:
            out.append(_display(f"{p}: OV rescaling", sp.Symbol("rho_OV"), d.rho_ov, f"reduced-{p}", "rho-OV-effective",
                                "rescaling"))
        if Parametrization(p).qk.kind.rescales:
            out.append(_display(f"{p}: QK rescaling", sp.Symbol("rho_QK"), d.rho_qk, f"reduced-{p}", "rho-QK-effective",
                                "rescaling"))
        out.append(_display(f"{p}: first integral", sp.Symbol("H"), d.first_integral.H, f"reduced-{p}",
                            f"{p}-first-integral", "first-integrals"))
        out.append(_display(f"{p}: trajectory slope", sp.Derivative(sp.Function("v")(u), u), d.first_integral.slope,
                            f"reduced-{p}", f"{p}-slope-loss-independent", "first-integrals"))
        laws = d.asymptotics
        out.append(_display(f"{p}: u(t) as t grows", sp.Function("u")(t), laws.u_of_t, f"asymptotics-{p}",
                            f"{p}-time-integral-leading", "growth-rates"))
        out.append(_display(f"{p}: v(u) as u grows", sp.Function("v")(u), laws.v_of_u, f"asymptotics-{p}",
                            f"{p}-first-integral-leading", "growth-rates"))
        out.append(_display(f"{p}: attention residual at matched loss", 1 - P, laws.residual_of_u, f"asymptotics-{p}",
                            f"{p}-residual-leading", "growth-rates"))
        sign = d.adam
        out.append(_display(f"{p}: u(t) under sign descent (Adam, beta1 = beta2 = 0, eps -> 0)", sp.Function("u")(t),
                            sign.u_of_t, f"asymptotics-{p}", f"{p}-sign-trajectory-solves-flow", "adam-ratio"))
        out.append(_display(f"{p}: v(t) under sign descent", sp.Function("v")(t), sign.v_of_t, f"asymptotics-{p}",
                            f"{p}-sign-trajectory-solves-flow", "adam-ratio"))
        out.append(_display(f"{p}: leading v(u) under sign descent (eta_QK = r eta_OV)", sp.Function("v")(u),
                            sign.v_of_u_leading, f"asymptotics-{p}", f"{p}-sign-v-of-u-leading", "adam-ratio"))
    return out
