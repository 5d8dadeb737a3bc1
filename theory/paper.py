r"""The paper's reduced equations (PAPER.md) and how they map onto the derived CACO system.

This module holds a *claim*, not a derivation: :func:`paper_system` is the paper's system as
PAPER.md states it, in its notation (:math:`\mu_{OV}, \mu_{QK}`, ``m`` relevant and ``n``
irrelevant tokens, ``M`` outputs, a scale ``b``). :func:`paper_mapping_checks` then establishes,
by exact sympy checks against :func:`theory.reduced.reduced_system`:

* with :math:`m = 1, n = M + 1, M_{out} = K, b = 1, \mu_{OV} = u, \mu_{QK} = v`, the attention,
  the loss and :math:`\dot\mu_{OV}` coincide with the derived CACO system;
* :math:`\dot\mu_{QK}` differs by the factor :math:`(K+M+1)/(M+1)`: the paper's equation is the
  flow of the distinct token's logit alone (common-token logits frozen), which the derived flow
  approaches as :math:`M \to \infty` at fixed ``K``;
* a score scale :math:`1/b` gives :math:`1/b^2` on the QK equation (as in the paper) but leaves the
  OV equation unscaled, so the paper's :math:`1/b` on :math:`\dot\mu_{OV}` does not follow from it.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import sympy as sp

from theory.checks import Check, identity_check, limit_check
from theory.reduced import reduced_system
from theory.parametrization import BASELINE
from theory.symbols import K, M, N, P, eta_ov, eta_qk, u, v
from theory.symmetric_line import line_geometry, margin_loss, p_of_v

m_rel, n_irr, b_scale, M_out = sp.symbols("m n b M_out", positive=True)
mu_ov, mu_qk = sp.symbols("mu_OV mu_QK", real=True)


@dataclass(frozen=True)
class PaperSystem:
    """The paper's reduced system as sympy expressions (PAPER.md), state ``(mu_OV, mu_QK)``."""

    attention: sp.Expr
    loss: sp.Expr
    rhs: tuple[sp.Expr, sp.Expr]
    state: tuple[sp.Symbol, sp.Symbol] = (mu_ov, mu_qk)
    parameters: tuple[sp.Symbol, ...] = (m_rel, n_irr, b_scale, M_out, eta_ov, eta_qk)


PAPER_SIMULATION_SETTINGS = {"m": 5, "n": 50, "b": 50, "M_out": 20, "eta_OV": 1.0,
                             "ratios": (0.01, 0.1, 1.0, 10.0, 100.0), "rk4_step": 10.0, "loss_target": 1e-4,
                             "horizon_start": 2e5, "horizon_max": 5e7, "loss_levels": 50}
"""The paper's own simulation settings (PAPER.md): RK4 in tau = t*min(eta), step 10, from mu = 0."""


@lru_cache(maxsize=1)
def paper_system() -> PaperSystem:
    """The paper's equations exactly as PAPER.md states them (a transcription of the claim)."""
    alpha = m_rel * sp.exp(mu_qk) / (m_rel * sp.exp(mu_qk) + n_irr)
    loss = sp.log(1 + (M_out - 1) * sp.exp(-alpha * mu_ov))
    denom = sp.exp(alpha * mu_ov) + M_out - 1
    d_ov = eta_ov * alpha / (b_scale * denom)
    d_qk = eta_qk * (M_out - 1) * alpha * (1 - alpha) * mu_ov / (M_out * b_scale ** 2 * denom)
    return PaperSystem(alpha, loss, (d_ov, d_qk))


PAPER_TO_MODEL = {m_rel: 1, n_irr: M + 1, M_out: K, b_scale: 1, mu_ov: u, mu_qk: v}
"""The identification under which the paper's system is compared with the derived CACO system."""


def frozen_commons_qk_rate() -> sp.Expr:
    r"""Derived :math:`\dot\alpha` when only the distinct-token logits move (commons frozen).

    :math:`\dot\alpha = -\frac{\eta_{QK}}{K}\,\partial\mathcal L/\partial\alpha` with
    :math:`\mathcal L = \Lambda(u, p(\alpha - \beta))`, at :math:`\beta = 0`.
    """
    L = margin_loss(u, p_of_v())
    return sp.simplify(-eta_qk / K * sp.diff(L, v))


def score_scale_rates() -> tuple[sp.Expr, sp.Expr]:
    r"""CACO rates of the *score* gap and margin when scores are :math:`x^\top W x_q / b`."""
    bs = b_scale
    v_w = sp.Symbol("v_W", real=True)       # weight gap; score gap is v_W / b
    L = margin_loss(u, p_of_v().subs(v, v_w / bs))
    n_ov, n_qk = line_geometry().ov_norm2, line_geometry().qk_norm2
    u_rate = -eta_ov / n_ov * sp.diff(L, u)
    score_rate = (-eta_qk / n_qk * sp.diff(L, v_w)) / bs       # d(v_W/b)/dt
    return sp.simplify(u_rate.subs(v_w, v * bs)), sp.simplify(score_rate.subs(v_w, v * bs))


@lru_cache(maxsize=1)
def paper_mapping_checks() -> tuple[Check, ...]:
    """Exact comparisons of the paper's system with the derived one (see the module docstring)."""
    ps = paper_system()
    ours = reduced_system(BASELINE)
    mapped = {k: val for k, val in PAPER_TO_MODEL.items()}
    p_att = ps.attention.subs(mapped)
    d_ov = ps.rhs[0].subs(mapped)
    d_qk = ps.rhs[1].subs(mapped)
    u_rate_b, v_rate_b = score_scale_rates()
    checks = [
        identity_check("paper-attention", r"\alpha|_{m=1,n=M+1} = p", p_att, p_of_v()),
        identity_check("paper-loss", r"\text{Loss}_{paper} = \log(1 + (K-1)e^{-p u})", ps.loss.subs(mapped),
                       margin_loss(u, p_of_v())),
        identity_check("paper-ov-equation", r"\dot\mu_{OV} = \dot u \text{ (CACO)}", d_ov, ours.rhs[0]),
        identity_check("paper-qk-factor", r"\dot v_{\rm derived} / \dot\mu_{QK,\rm paper} = (K+M+1)/(M+1)",
                       ours.rhs[1] / d_qk, N / (M + 1)),
        identity_check("paper-qk-is-frozen-commons", r"\dot\mu_{QK} = \dot\alpha \text{ with common logits frozen}",
                       d_qk, frozen_commons_qk_rate()),
        limit_check("paper-qk-large-M", r"\lim_{M\to\infty} \dot v_{\rm derived}/\dot\mu_{QK} = 1",
                    N / (M + 1), M, sp.oo, 1),
        identity_check("score-scale-qk", r"\text{score scale } 1/b:\ \dot v = \dot v|_{b=1} / b^2",
                       v_rate_b, (ours.rhs[1] / b_scale ** 2).subs(v, v)),
        identity_check("score-scale-ov-unscaled", r"\text{score scale } 1/b:\ \dot u = \dot u|_{b=1} \text{ (no } 1/b)",
                       u_rate_b, ours.rhs[0]),
    ]
    return tuple(checks)


__all__ = ["PaperSystem", "paper_system", "paper_mapping_checks", "PAPER_TO_MODEL", "PAPER_SIMULATION_SETTINGS",
           "m_rel", "n_irr", "b_scale", "M_out", "mu_ov", "mu_qk", "P"]
