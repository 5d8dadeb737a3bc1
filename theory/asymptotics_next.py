r"""Next-order asymptotics: the residual exactly on the first integral, ``u(t)`` by Laplace's method.

Balanced start (:math:`\delta = 0`, :math:`A = A(v_0, K)`); :math:`\varepsilon = 1 - p = (M+1)/(e^v + M + 1)`.

1. **Residual and v as functions of u, exactly.** The first integral
   :math:`G_{QK}(v) - R\,G_{OV}(u) = H_0` (:mod:`theory.first_integrals`) is a level curve; with
   :math:`G_{OV}(u) = u^2/2` (collapsed OV) or :math:`u/2` (factorized OV) it is solved for ``u``
   explicitly, ``u = u_of_level(v, H0)``, so the curve is parametrized by ``v`` and
   :math:`1 - p = (M+1)/(e^v + M + 1)` along it has **no** asymptotic error.
2. **The clock, one order beyond the leading law.** Along the curve
   :math:`dt/du = (e^{p u} + K - 1)/(\eta_{OV}\,\rho_{OV}(u)\,p)`. Write
   :math:`e^{pu}/(\rho_{OV} p) = e^u h(u)` with
   :math:`\log h = -\varepsilon u - \log\rho_{OV}(u) - \log p` (a slowly varying function: ``v`` moves
   with ``u`` by the first integral's slope :math:`dv/du`). Laplace's method,
   :math:`\frac{d}{du}\bigl[e^u(h - h')\bigr] = e^u (h - h'')`, gives

   .. math:: \log(\eta_{OV} t) = u + \log h(u) + \log\bigl(1 - (\log h)'(u)\bigr) + O(u^{-2}) + O(u\,e^{-u}),

   the :math:`O(u^{-2})` being :math:`h''/h` (checked: :math:`u^2 h''/h` has a finite limit for the
   :math:`\rho_{OV}` factor), the :math:`O(u\,e^{-u})` the ``K - 1`` term and the start.
   The leading law keeps only :math:`u - \log\hat\rho_{OV}(u)`; it misses the attention factor
   :math:`e^{-\varepsilon u}`, which for factorized OV tends to the constant
   :math:`e^{-2(M+1)/R}` (collapsed QK) and is never negligible at finite ``t``.
3. The law is **implicit**: given ``t`` one solves the equation of step 2 for ``v`` on the curve of
   step 1 (one monotone root), then ``u = u_of_level(v)`` and the residual of step 1.
   Remainder: :math:`\delta u = O(\log^{-2} t)`, hence :math:`\delta v = v'(u)\,\delta u = O(\log^{-3} t)`
   and a relative residual error :math:`O(\log^{-3} t)` (the leading laws' errors are
   :math:`O(\log\log t/\log t)` or :math:`O(1/\log t)`).

Every expression that simulation needs in numeric form is a field named in :data:`NEXT_ORDER_EXPRESSIONS`.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import sympy as sp

from theory.parametrization import Parametrization

from theory.checks import Check, identity_check, limit_check
from theory.first_integrals import first_integral
from theory.symbols import M, delta, u, v

H0 = sp.Symbol("H_0", real=True)
r"""The first integral's value :math:`H_0 = G_{QK}(v_0) - R\,G_{OV}(u_0)` on the trajectory."""
G_level = sp.Symbol("G_QK", real=True)
r"""The value :math:`G_{QK}(v)` (a symbol: for factorized QK it is an integral done numerically)."""

NEXT_ORDER_EXPRESSIONS = ("residual_of_v", "u_of_level", "log_h", "dlog_h", "log_time_next")
"""Fields of :class:`NextOrderLaws` that simulation evaluates numerically (args: u, v, K, M, eta_qk, eta_ov, A_QK, H_0, G_QK)."""

REMAINDERS = {"u": "O(log(t)^-2)", "v": "O(log(t)^-3)", "residual": "relative O(log(t)^-3)"}
"""Stated remainder of the next-order law of each observable (balanced start, fixed K, M, rates)."""

_up = sp.Symbol("u", positive=True)


@dataclass(frozen=True)
class NextOrderLaws:
    r"""Next-order laws of one parametrization (see the module docstring).

    ``residual_of_v`` :math:`= (M+1)/(e^v + M + 1)`; ``u_of_level`` is ``u`` on the level curve as a
    function of ``G_QK`` (the symbol :data:`G_level`) and :data:`H0`; ``log_h``, ``dlog_h`` are
    :math:`\log h` and its derivative along the curve (in ``u, v``, with ``A_QK`` for factorized QK);
    ``log_time_next`` is the right side of :math:`\log(\eta_{OV} t) = \dots` in step 2 (without
    :math:`\log\eta_{OV}`).
    """

    param: str
    residual_of_v: sp.Expr
    u_of_level: sp.Expr
    log_h: sp.Expr
    dlog_h: sp.Expr
    log_time_next: sp.Expr


@lru_cache(maxsize=None)
def next_order_laws(param: Parametrization) -> NextOrderLaws:
    """Derive the next-order laws of ``param`` from its rescaling factor and first integral."""
    fi = first_integral(param)
    rho_ov = Parametrization(param).ov.rescaling_factor().subs(delta, 0).subs(u, _up).subs(_up, u)
    rho_ov = sp.simplify(sp.powdenest(rho_ov.subs(u, _up), force=True)).subs(_up, u)
    p = sp.exp(v) / (sp.exp(v) + M + 1)
    eps = (M + 1) / (sp.exp(v) + M + 1)
    g_ov = sp.simplify(fi.G_ov.subs(delta, 0).subs(u, _up))
    Y = sp.Symbol("Y", positive=True)
    roots = [s for s in sp.solve(sp.Eq(g_ov, Y), _up) if s.subs(Y, 2).is_positive]
    if len(roots) != 1:  # pragma: no cover - would mean G_OV changed
        raise RuntimeError(f"{param}: G_OV = Y has positive roots {roots}")
    u_level = roots[0].subs(Y, (G_level - H0) / fi.coefficient)
    log_h = -eps * u - sp.log(rho_ov) - sp.log(p)
    slope = fi.slope.subs(delta, 0).subs(u, _up).subs(_up, u)   # u > 0: |u| = u
    dlog_h = sp.diff(log_h, u) + sp.diff(log_h, v) * slope
    log_time = u + log_h + sp.log(1 - dlog_h)
    return NextOrderLaws(param, eps, u_level, log_h, dlog_h, log_time)


def next_order_checks(param: Parametrization) -> list[Check]:
    r"""What the next-order law rests on, each a symbolic identity or a ``sympy.limit``.

    * the Laplace step, for a generic function :math:`h`:
      :math:`\frac{d}{du}[e^u(h - h')] = e^u(h - h'')`, so the law's clock differs from the exact
      one by the factor :math:`1 - h''/h`;
    * its order: :math:`u^2\,(1/\rho_{OV})''\,\rho_{OV}` tends to a finite limit (0 collapsed, 2 factorized);
    * the level curve is the first integral: :math:`G_{OV}(u_{level}) = (G_{QK} - H_0)/R` exactly;
    * the law beats the leading one: for factorized OV and collapsed QK the attention factor
      :math:`\varepsilon u` the leading law drops tends to :math:`2(M+1)/R \neq 0` on the leading curve.
    """
    laws = next_order_laws(param)
    fi = first_integral(param)
    hf = sp.Function("h")(u)
    laplace = sp.diff(sp.exp(u) * (hf - sp.diff(hf, u)), u)
    rho = Parametrization(param).ov.rescaling_factor().subs(delta, 0).subs(u, _up)
    inv = 1 / rho
    lim = 2 if Parametrization(param).ov.kind.rescales else 0
    checks = [
        identity_check(f"{param}-next-laplace-step", r"\frac{d}{du}\bigl[e^u(h - h')\bigr] = e^u (h - h'')",
                       laplace, sp.exp(u) * (hf - sp.diff(hf, u, 2))),
        limit_check(f"{param}-next-laplace-remainder-order", rf"u^2\,(1/\rho_{{OV}})''\rho_{{OV}} \to {lim}",
                    _up ** 2 * sp.diff(inv, _up, 2) / inv, _up, sp.oo, lim),
        identity_check(f"{param}-next-level-curve", r"R\,G_{OV}(u_{level}(v)) = G_{QK}(v) - H_0",
                       fi.coefficient * fi.G_ov.subs(delta, 0).subs(u, _up).subs(_up, laws.u_of_level),
                       G_level - H0),
    ]
    if not Parametrization(param).qk.kind.rescales and Parametrization(param).ov.kind.rescales:   # CAFO
        # Leading curve e^v = R u / 2: eps * u -> 2 (M+1)/R, the constant the leading clock drops.
        R = fi.coefficient
        eps_u = (laws.residual_of_v * u).subs(sp.exp(v), R * _up / 2).subs(u, _up)
        checks.append(limit_check(f"{param}-next-attention-factor-nonvanishing", r"\varepsilon u \to 2(M+1)/R \ne 0",
                                  eps_u, _up, sp.oo, 2 * (M + 1) / R))
    return checks


__all__ = ["NextOrderLaws", "next_order_laws", "next_order_checks", "NEXT_ORDER_EXPRESSIONS", "REMAINDERS", "H0",
           "G_level"]
