r"""Leading-order laws of ``u(t)``, ``v(t)`` and the attention residual ``1 - p`` as ``t -> infinity``.

Derivation (balanced start, :math:`\delta = 0`; the QK offset :math:`A` drops out at leading order):

1. As :math:`v \to \infty`, :math:`p \to 1` and :math:`\dot u \simeq \eta_{OV}\rho_{OV}(u) e^{-u}`, so
   :math:`\eta_{OV} t \simeq \int^u e^y/\rho_{OV}(y)\,dy \sim e^u/\hat\rho_{OV}(u)`, where
   :math:`\hat\rho` is the leading term of :math:`\rho` (``1`` collapsed, ``2u`` factorized).
2. The first integral gives :math:`G_{QK}(v) = R\,G_{OV}(u) + H_0` with
   :math:`G_{QK}(v) \sim e^v/\hat\rho_{QK}(v)` and :math:`G_{OV}(u) \sim u^2/2` (collapsed OV)
   or :math:`u/2` (factorized OV).
3. :math:`e^x/(c\,x^k) = X` inverts to :math:`x = \log(cX)` (:math:`k = 0`) or
   :math:`x = -W_{-1}(-1/(cX)) = \log(cX) + \log\log(cX) + o(1)` (:math:`k = 1`).
4. :math:`1 - p = (M+1)/(e^v + M + 1) \sim (M+1)e^{-v}`.

Each "~" step is a limit verified by ``sympy.limit`` (:func:`asymptotic_checks`).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import sympy as sp

from theory.checks import Check, limit_check
from theory.first_integrals import first_integral
from theory.symbols import A_qk, K, M, delta, eta_ov, eta_qk, r, t, u, v
from theory.parametrization import Parametrization

LAW_NAMES = ("u_of_t", "u_of_t_expanded", "v_of_u", "residual_of_u", "v_of_t_expanded", "residual_of_t_expanded")
"""Fields of :class:`AsymptoticLaws` that are numeric laws ``f(t, u, K, M, eta_QK, eta_OV)`` (simulation evaluates each)."""
LAW_TARGETS = {"u_of_t": "u", "u_of_t_expanded": "u", "v_of_u": "v", "residual_of_u": "residual",
               "v_of_t_expanded": "v", "residual_of_t_expanded": "residual"}
"""Which observable of the solution each law in :data:`LAW_NAMES` predicts."""

_x = sp.Symbol("x", positive=True)
_up = sp.Symbol("u", positive=True)
_vp = sp.Symbol("v", positive=True)




@dataclass(frozen=True)
class Leading:
    r"""Leading behaviour :math:`c\,x^k` of a positive function as :math:`x \to \infty`."""

    c: sp.Expr
    k: int

    def expr(self, x: sp.Expr) -> sp.Expr:
        return self.c * x ** self.k


def leading_term(expr: sp.Expr, x: sp.Symbol, powers: tuple[int, ...] = (2, 1, 0)) -> Leading:
    """The largest power ``k`` with a finite nonzero ``lim expr / x**k`` (tried in ``powers`` order)."""
    for k in powers:
        c = sp.limit(expr / x ** k, x, sp.oo)
        if c.is_finite and c != 0:
            return Leading(sp.simplify(c), k)
    raise ValueError(f"no leading power among {powers} for {expr}")


def invert_exp_over_power(lead: Leading, X: sp.Expr, expanded: bool) -> sp.Expr:
    r"""Solve :math:`e^x/(c x^k) = X` for large ``x`` (``k`` in {0, 1})."""
    if lead.k == 0:
        return sp.log(lead.c * X)
    if lead.k == 1:
        if expanded:
            return sp.log(lead.c * X) + sp.log(sp.log(lead.c * X))
        return -sp.LambertW(-1 / (lead.c * X), -1)
    raise ValueError("only k = 0 or 1 arise here")


@dataclass(frozen=True)
class AsymptoticLaws:
    r"""Leading-order laws of one parametrization (balanced start, :math:`\delta = 0`).

    ``*_of_t`` are functions of ``t``; ``v_of_u``/``residual_of_u`` are the matched-loss forms
    (loss :math:`\simeq (K-1)e^{-u}`, so matching the loss matches ``u``). ``expanded`` variants
    replace :math:`W_{-1}` by its two-term logarithmic expansion.
    """

    param: str
    rho_ov_lead: Leading
    rho_qk_lead: Leading
    G_ov_lead: Leading
    u_of_t: sp.Expr
    u_of_t_expanded: sp.Expr
    v_of_u: sp.Expr
    v_of_u_expanded: sp.Expr
    residual_of_u: sp.Expr
    residual_of_u_expanded: sp.Expr
    v_of_t_expanded: sp.Expr
    residual_of_t_expanded: sp.Expr


@lru_cache(maxsize=None)
def asymptotic_laws(param: Parametrization) -> AsymptoticLaws:
    """Derive the laws of ``param`` from its rescaling factors and first integral."""
    rho_ov = Parametrization(param).ov.rescaling_factor().subs({delta: 0, u: _up})
    rho_qk = Parametrization(param).qk.rescaling_factor().subs(v, _vp)
    ro = leading_term(rho_ov, _up, (1, 0))
    rq = leading_term(rho_qk, _vp, (1, 0))
    fi = first_integral(param)
    g_ov = leading_term(fi.G_ov.subs(delta, 0).subs(u, _up), _up, (2, 1))
    Xt = eta_ov * t
    u_t = invert_exp_over_power(ro, Xt, expanded=False)
    u_t_exp = invert_exp_over_power(ro, Xt, expanded=True)
    R = fi.coefficient
    X_v = R * g_ov.expr(u)
    v_u = invert_exp_over_power(rq, X_v, expanded=False)
    v_u_exp = invert_exp_over_power(rq, X_v, expanded=True)
    # 1 - p ~ (M+1) e^{-v}, with e^{-v} = 1/(c_q v^k X) from e^v = c_q v^k X.
    residual_u = (M + 1) / (rq.expr(v_u) * X_v)
    v_t_exp = v_u_exp.subs(u, u_t_exp)
    residual_t_exp = ((M + 1) / (rq.expr(v_u_exp) * X_v)).subs(u, u_t_exp)
    residual_u_exp = (M + 1) / (rq.expr(v_u_exp) * X_v)
    return AsymptoticLaws(param, ro, rq, g_ov, u_t, u_t_exp, v_u, v_u_exp, residual_u, residual_u_exp,
                          v_t_exp, residual_t_exp)


def _with_ratio(expr: sp.Expr) -> sp.Expr:
    return expr.subs(eta_qk, r * eta_ov)


def asymptotic_checks(param: Parametrization) -> list[Check]:
    """Limits that justify each step, and the paper's growth claims tested against the laws."""
    laws = asymptotic_laws(param)
    rho_ov = Parametrization(param).ov.rescaling_factor().subs({delta: 0, u: _up})
    rho_qk = Parametrization(param).qk.rescaling_factor().subs(v, _vp)
    fi = first_integral(param)
    integrand_qk = (sp.exp(_vp) + M + 1) / rho_qk
    T_lead = sp.exp(_up) / laws.rho_ov_lead.expr(_up)
    G_lead = sp.exp(_vp) / laws.rho_qk_lead.expr(_vp)
    checks = [
        limit_check(f"{param}-time-integral-leading",
                    r"\frac{d}{du}\Bigl[\frac{e^u}{\hat\rho_{OV}(u)}\Bigr] \Big/ \frac{e^u + K - 1}{\rho_{OV}(u)} \to 1",
                    sp.diff(T_lead, _up) / ((sp.exp(_up) + K - 1) / rho_ov), _up, sp.oo, 1),
        limit_check(f"{param}-first-integral-leading",
                    r"\frac{d}{dv}\Bigl[\frac{e^v}{\hat\rho_{QK}(v)}\Bigr] \Big/ \frac{e^v + M + 1}{\rho_{QK}(v)} \to 1",
                    sp.diff(G_lead, _vp) / integrand_qk, _vp, sp.oo, 1),
        limit_check(f"{param}-G_OV-leading", r"G_{OV}(u)/\hat G_{OV}(u) \to 1",
                    fi.G_ov.subs(delta, 0).subs(u, _up) / laws.G_ov_lead.expr(_up), _up, sp.oo, 1),
    ]
    lt = sp.log(t)
    u_exp = _with_ratio(laws.u_of_t_expanded)
    v_exp = _with_ratio(laws.v_of_t_expanded)
    checks += [
        limit_check(f"{param}-u-is-Theta-log-t", r"u(t)/\log t \to 1", u_exp / lt, t, sp.oo, 1),
        limit_check(f"{param}-v-is-o-log2-t", r"v(t)/\log^2 t \to 0 \text{ (the paper's bound holds, loosely)}",
                    v_exp / lt ** 2, t, sp.oo, 0),
        limit_check(f"{param}-v-tight-rate", rf"v(t)/\log\log t \to {2 if not Parametrization(param).ov.kind.rescales else 1}",
                    v_exp / sp.log(lt), t, sp.oo, 2 if not Parametrization(param).ov.kind.rescales else 1),
    ]
    checks.append(residual_check(param))
    if not Parametrization(param).qk.kind.rescales:
        checks.append(ratio_shift_check(param))
    return checks


def residual_check(param: Parametrization) -> Check:
    r"""``{param}-residual-leading``: on the line :math:`1-p = (M+1)/(e^v + M + 1)`, so
    :math:`(1-p)/((M+1)e^{-v}) \to 1` as :math:`v \to \infty`; with :math:`e^{\hat v(u)} = \hat\rho_{QK}\,R\,\hat G_{OV}(u)`
    (the inversion behind ``v_of_u``, checked by ``{param}-first-integral-leading``) this is the displayed law
    ``residual_of_u`` :math:`= (M+1)/(\hat\rho_{QK} R \hat G_{OV})`."""
    from theory.symmetric_line import p_of_v

    return limit_check(f"{param}-residual-leading",
                       r"\frac{1-p}{(M+1)e^{-v}} \to 1\ (v\to\infty),\ e^{\hat v(u)} = \hat\rho_{QK}\,R\,\hat G_{OV}(u)",
                       ((1 - p_of_v()) / ((M + 1) * sp.exp(-v))).subs(v, _vp), _vp, sp.oo, 1)


RATIO_SHIFT = {"collapsed": sp.Integer(0), "factorized": -2 * K * (M + 1) / (r ** 2 * (K - 1) * (K + M + 1))}
r"""Stated :math:`\lim_{u\to\infty}\partial_r[u\,(1-p)]` on the leading curve (collapsed QK), by the OV circuit's kind."""


def ratio_shift_check(param: Parametrization) -> Check:
    r"""``{param}-u-leading-independent-of-ratio`` (collapsed QK only), from a law that contains the ratio.

    The ratio reaches the clock only through the attention factor :math:`e^{-(1-p)u}` of
    :mod:`theory.asymptotics_next`: at fixed ``t``, :math:`\partial_r u \simeq \partial_r[u(1-p)]`.
    With the leading residual at matched ``u`` (which contains ``r``) the limit is finite (the value in
    :data:`RATIO_SHIFT`), so the ratio shifts ``u(t)`` by :math:`O(1)` and :math:`u(t)/\log t \to 1` for every
    ``r``. (For factorized QK this limit, through :math:`W_{-1}`, is beyond ``sympy.limit`` in the derive
    budget; no check is claimed.)
    """
    res = _with_ratio(asymptotic_laws(param).residual_of_u).subs(u, _up)
    return limit_check(f"{param}-u-leading-independent-of-ratio",
                       rf"\lim_{{u\to\infty}} \partial_r\bigl[u(1-p)\bigr] = {sp.latex(RATIO_SHIFT[Parametrization(param).ov.kind.name])} "
                       r"\text{ (finite: } r \text{ shifts } u(t) \text{ by } O(1))",
                       sp.diff(_up * res, r), _up, sp.oo, RATIO_SHIFT[Parametrization(param).ov.kind.name])


__all__ = ["LAW_NAMES", "LAW_TARGETS", "AsymptoticLaws", "asymptotic_laws", "asymptotic_checks", "leading_term", "A_qk"]
