r"""From the orbit gradient to the fixed lines and the loss on them (symbolic ``K``, ``M``).

Results (each machine-checked in :func:`line_checks`):

* the OV gradient at any symmetric point points along the fixed direction
  :math:`P E_d^\top` (orbit coordinates ``A, B`` only; common and query columns get zero
  gradient), and the QK gradient along the fixed direction
  :math:`w = \bigl(\tfrac{M+1}{N}\mathbf 1_d, -\tfrac{K}{N}\mathbf 1_c, -\tfrac{K}{N} e_q\bigr)` in
  the query's column, with :math:`N = K + M + 1` (the query behaves as one more common token);
* on the line through MODEL.md's start the state is :math:`(u, v)` with
  :math:`W_{OV} = u P E_d^\top`, :math:`W_{KQ}[:, q] = v\,\mathbf 1_d + (\text{shift along } w)`;
* the loss there is :math:`\Lambda(u, p) = \log\bigl(1 + (K-1)e^{-p u}\bigr)` with
  :math:`p = e^v/(e^v + M + 1)` and :math:`dp/dv = p(1-p)`.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import sympy as sp

from theory.checks import Check, exact_constant, identity_check, tag
from theory.orbit_gradient import ORBIT_SIZES, orbit_gradient, symmetric_loss, symmetric_scores
from theory.symbols import A_, B_, C_, E_, K, M, N, P, alpha, beta, gamma, u, v

LINE_POINT = {A_: (K - 1) * u / K, B_: -u / K, C_: 0, E_: 0, alpha: v, beta: 0, gamma: 0}
"""Orbit coordinates of MODEL.md's symmetric start, moved along the two fixed lines."""


def attention_on_distinct() -> sp.Expr:
    r"""Attention :math:`a_{d_y}` at a symmetric point, from the softmax over the sequence."""
    s = symmetric_scores()
    ex = {k: sp.exp(val) for k, val in s.items()}
    return ex["d"] / (ex["d"] + ex["c1"] + (M - 1) * ex["c"] + ex["q"])


@dataclass(frozen=True)
class LineGeometry:
    """Fixed directions of the two circuits in orbit coordinates, and their squared norms."""

    ov_direction: dict[str, sp.Expr]   # orbit name -> component, normalised to A - B = 1
    qk_direction: dict[str, sp.Expr]   # orbit name -> component, normalised to alpha - beta = 1
    ov_norm2: sp.Expr                  # ||P E_d^T||_F^2
    qk_norm2: sp.Expr                  # ||w||^2


@lru_cache(maxsize=1)
def line_geometry() -> LineGeometry:
    r"""The gradient's direction in each circuit, normalised so the observable moves by 1.

    The direction is computed from the orbit gradient itself; :func:`line_checks`
    confirms that it does not depend on the state (which is what makes the line fixed).
    """
    g = orbit_gradient()
    state = (A_, B_, C_, E_, alpha, beta, gamma)
    ov = {k: exact_constant(getattr(g, k) / (g.A - g.B), state) for k in ("A", "B", "C", "E")}
    # On the symmetric set, the query's score equals the commons' (gamma = beta): use that line.
    qk = {k: exact_constant((getattr(g, k) / (g.alpha - g.beta)).subs(gamma, beta), state)
          for k in ("alpha", "beta", "gamma")}
    ov_norm2 = sp.factor(sp.simplify(sum(ORBIT_SIZES[k] * ov[k] ** 2 for k in ov)))
    qk_norm2 = sp.factor(sp.simplify(sum(ORBIT_SIZES[k] * qk[k] ** 2 for k in qk)))
    return LineGeometry(ov, qk, ov_norm2, qk_norm2)


def margin_loss(u_expr: sp.Expr, p_expr: sp.Expr) -> sp.Expr:
    r""":math:`\Lambda(u, p) = \log(1 + (K-1) e^{-p u})`: cross-entropy of a margin :math:`p u`.

    The form follows from the logits on the line, :math:`z_{own} - z_{other} = p u`
    (derived in :func:`line_checks`), and log-sum-exp.
    """
    return sp.log(1 + (K - 1) * sp.exp(-p_expr * u_expr))


@lru_cache(maxsize=1)
def p_of_v() -> sp.Expr:
    """Attention on the distinct token on MODEL.md's line, as a function of ``v``."""
    return sp.simplify(attention_on_distinct().subs(LINE_POINT))


@lru_cache(maxsize=1)
def line_checks() -> tuple[Check, ...]:
    """Exact checks (symbolic K, M) of the symmetric-subspace and fixed-line statements."""
    g = orbit_gradient()
    L = symmetric_loss()
    geo = line_geometry()
    checks = [
        identity_check("ov-common-columns-frozen",
                       r"\partial\mathcal L/\partial W_{OV}[k,c_j] = 0 \text{ at every symmetric point}", g.C, 0),
        identity_check("ov-query-column-frozen",
                       r"\partial\mathcal L/\partial W_{OV}[k,q] = 0 \text{ at every symmetric point}", g.E, 0),
        identity_check("ov-column-sums-conserved",
                       r"\textstyle\sum_k \partial\mathcal L/\partial W_{OV}[k,d_y] = G_A + (K-1)G_B = 0", g.A + (K - 1) * g.B, 0),
        identity_check("qk-shift-invariance",
                       r"K G_\alpha + M G_\beta + G_\gamma = 0 \text{ (softmax shift)}", K * g.alpha + M * g.beta + g.gamma, 0),
        identity_check("query-tracks-commons",
                       r"G_\beta = G_\gamma \text{ when } \gamma = \beta", (g.beta - g.gamma).subs(gamma, beta), 0),
    ]
    for name, sym in (("A", A_), ("B", B_), ("C", C_), ("E", E_), ("alpha", alpha), ("beta", beta), ("gamma", gamma)):
        checks.append(identity_check(
            f"orbit-derivative-{name}",
            rf"\partial \mathcal L_{{sym}}/\partial {sp.latex(sym)} = |\mathrm{{orbit}}|\cdot G_{{{sp.latex(sym)}}}",
            sp.diff(L, sym), ORBIT_SIZES[name] * getattr(g, name)))
    # The directions do not depend on the state: at every symmetric point each orbit's gradient is its
    # (constant) component times the observable's gradient G_A - G_B (OV) or G_alpha - G_beta (QK, gamma = beta).
    for label, direction, ref, on_line, pair in (
            ("ov", geo.ov_direction, g.A - g.B, {}, r"G_A - G_B"),
            ("qk", geo.qk_direction, g.alpha - g.beta, {gamma: beta}, r"G_\alpha - G_\beta")):
        for comp, val in direction.items():
            checks += tag("line-direction", [identity_check(
                f"{label}-direction-fixed-{comp}",
                rf"G_{{{sp.latex(sp.Symbol(comp))}}} = {sp.latex(val)}\,({pair}) \text{{ at every symmetric point}}",
                getattr(g, comp).subs(on_line), val * ref.subs(on_line))])
    # Loss on the line in margin form, and dp/dv = p(1-p).
    L_line = L.subs(LINE_POINT)
    p = p_of_v()
    checks.append(identity_check("loss-on-line", r"\mathcal L(u, v) = \log(1 + (K-1)e^{-p u})",
                                 sp.exp(L_line), sp.exp(margin_loss(u, p))))
    checks.append(identity_check("attention-derivative", r"\frac{dp}{dv} = p(1-p)",
                                 sp.diff(p, v), p * (1 - p)))
    return tuple(checks)


def loss_on_line() -> sp.Expr:
    r"""The population loss on MODEL.md's line, :math:`\Lambda(u, p(v))`."""
    return margin_loss(u, p_of_v())


def loss_display() -> sp.Expr:
    """The loss with the attention kept as the symbol ``p`` (for reports)."""
    return margin_loss(u, P)


__all__ = ["LINE_POINT", "LineGeometry", "line_geometry", "line_checks", "loss_on_line", "loss_display",
           "margin_loss", "p_of_v", "attention_on_distinct", "N"]
