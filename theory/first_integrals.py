r"""Trajectory relations: ``v`` as a function of ``u`` along the flow, by separation of variables.

From the exact 2-D system (:mod:`theory.rescaling`), :math:`dv/du = \dot v/\dot u` separates:

.. math::
    \frac{dv}{du} = R\,\frac{u\,\rho_{QK}(v)}{\rho_{OV}(u)\,(e^v + M + 1)},\qquad
    R = \frac{\eta_{QK}}{\eta_{OV}}\,\frac{(K-1)(K+M+1)}{K},

so :math:`H(u, v) = \int_0^v \frac{e^x + M + 1}{\rho_{QK}(x)}dx - R\int_0^u \frac{y}{\rho_{OV}(y)}dy`
is constant along every trajectory. The loss enters only through :math:`\Lambda_u` and
:math:`\Lambda_p`, which cancel in the ratio: the relation holds for every margin loss
:math:`\varphi(p u)` (checked with an undefined function :math:`\varphi`); what depends on the loss
is only the clock, i.e. how fast a trajectory runs along its curve.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import sympy as sp

from theory.checks import Check, identity_check
from theory.reduced import reduced_system
from theory.rescaling import effective_system
from theory.symbols import K, M, N, P, eta_ov, eta_qk, r, u, v
from theory.symmetric_line import p_of_v
from theory.parametrization import BASELINE, Parametrization

x_, y_ = sp.symbols("x y", positive=True)


@dataclass(frozen=True)
class FirstIntegral:
    r"""A first integral :math:`H(u, v) = G_{QK}(v) - R\,G_{OV}(u)` of one parametrization."""

    param: str
    slope: sp.Expr            # dv/du as a function of (u, v)
    coefficient: sp.Expr      # R
    G_qk: sp.Expr             # int_0^v (e^x + M + 1)/rho_QK(x) dx  (may hold an unevaluated Integral)
    G_ov: sp.Expr             # int_0^u y/rho_OV(y) dy
    H: sp.Expr                # G_qk - R G_ov


def _definite(integrand: sp.Expr, var: sp.Symbol, upper: sp.Symbol) -> sp.Expr:
    r""":math:`\int_0^{upper}` integrand: in closed form when ``sympy.integrate`` finds an elementary
    antiderivative quickly (no square roots of the variable), else kept as an exact ``Integral``
    (its derivative in ``upper`` is the integrand, which is all the first-integral check needs).
    """
    sqrt_of_var = any(isinstance(e, sp.Pow) and e.exp.is_Rational and e.exp.q == 2 and e.base.has(var)
                      for e in sp.preorder_traversal(integrand))
    if sqrt_of_var and any(isinstance(e, sp.exp) for e in sp.preorder_traversal(integrand)):
        return sp.Integral(integrand, (var, 0, upper))
    anti = sp.integrate(integrand, var)
    if anti.has(sp.Integral):
        return sp.Integral(integrand, (var, 0, upper))
    return sp.simplify(anti.subs(var, upper) - anti.subs(var, 0))


@lru_cache(maxsize=None)
def first_integral(param: Parametrization) -> FirstIntegral:
    """Separate :math:`dv/du` and integrate both sides (exactly where sympy can, else as an Integral)."""

    rho_ov = Parametrization(param).ov.rescaling_factor()
    rho_qk = Parametrization(param).qk.rescaling_factor()
    # The 2-D system is (eta_OV rho_OV F_u, eta_QK rho_QK F_v): keep the factors as symbols while
    # simplifying, so that the separation is exact and visible.
    Ro, Rq = sp.symbols("rho_OV rho_QK", positive=True)
    base = reduced_system(BASELINE)
    slope_sym = sp.simplify((Rq * base.rhs_display[1] / (Ro * base.rhs_display[0])).subs(P, p_of_v()))
    # Proposed separation dv/du = R * [u / rho_OV(u)] / [(e^v + M + 1) / rho_QK(v)]; R must be constant.
    coeff = sp.simplify(slope_sym * ((sp.exp(v) + M + 1) / Rq) / (u / Ro))
    if coeff.free_symbols & {u, v, Ro, Rq}:  # pragma: no cover - would mean the derivation changed
        raise RuntimeError(f"{param}: dv/du does not separate as proposed (R = {coeff})")
    slope = slope_sym.subs({Ro: rho_ov, Rq: rho_qk})
    f_u = u / rho_ov
    integrand_v = (sp.exp(v) + M + 1) / rho_qk
    G_qk = _definite(integrand_v.subs(v, x_), x_, v)
    G_ov = _definite(f_u.subs(u, y_), y_, u)
    H = G_qk - coeff * G_ov
    return FirstIntegral(param, slope, coeff, G_qk, G_ov, H)


def first_integral_checks(param: Parametrization) -> list[Check]:
    r""":math:`\dot H = H_u\dot u + H_v\dot v = 0` along the exact 2-D flow, and loss independence."""
    fi = first_integral(param)
    udot, vdot = effective_system(param)
    pv = p_of_v()
    Hdot = (sp.diff(fi.H, u) * udot + sp.diff(fi.H, v) * vdot).subs(P, pv)
    checks = [identity_check(f"{param}-first-integral", r"\dot H = H_u \dot u + H_v \dot v = 0", sp.simplify(Hdot), 0)]
    checks.append(identity_check(f"{param}-slope-loss-independent",
                                 r"\frac{dv}{du} \text{ is the same for every margin loss } \varphi(p u)",
                                 generic_loss_slope(param), fi.slope))
    coefficient_R = eta_qk / eta_ov * (K - 1) * N / K
    checks.append(identity_check(f"{param}-coefficient", r"R = \frac{\eta_{QK}}{\eta_{OV}}\frac{(K-1)(K+M+1)}{K}",
                                 fi.coefficient, coefficient_R))
    return checks


def generic_loss_slope(param: Parametrization) -> sp.Expr:
    r""":math:`dv/du` when the cross-entropy is replaced by an arbitrary margin loss :math:`\varphi(p u)`."""

    phi = sp.Function("varphi")
    Lam = phi(P * u)
    base = reduced_system(BASELINE)
    n_ov, n_qk = base.ov.multiplicity[0], base.qk.multiplicity[0]
    F_u = -sp.diff(Lam, u) / n_ov
    F_v = -sp.diff(Lam, P) * P * (1 - P) / n_qk
    rho_ov = Parametrization(param).ov.rescaling_factor()
    rho_qk = Parametrization(param).qk.rescaling_factor()
    return sp.simplify(((eta_qk * rho_qk * F_v) / (eta_ov * rho_ov * F_u)).subs(P, p_of_v()))


def v_of_u_collapsed_qk(param: Parametrization) -> sp.Expr:
    r"""Closed form of :math:`v(u)` when QK is collapsed: :math:`e^v + (M+1)v = X` solved by Lambert W.

    :math:`X = R\,G_{OV}(u) + H_0`; :math:`v = X/(M+1) - W_0\!\bigl(e^{X/(M+1)}/(M+1)\bigr)`.
    Returned as a function of the symbol ``X``.
    """
    if Parametrization(param).qk.kind.rescales:
        raise ValueError("v(u) in closed form needs a collapsed QK circuit")
    X = sp.Symbol("X", positive=True)
    sols = sp.solve(sp.exp(v) + (M + 1) * v - X, v)
    return sols[0]


__all__ = ["FirstIntegral", "first_integral", "first_integral_checks", "generic_loss_slope", "v_of_u_collapsed_qk", "r"]
