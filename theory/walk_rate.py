r"""The rate of the clock-free ``w`` walk of a factorized QK circuit (:mod:`simulation.clockfree`, ``_WCurve``).

With :math:`d = b - c`, :math:`A = A_{QK}` and the conserved :math:`S = Kb + (M+1)c`, factorized QK's coordinates
lie on :math:`a = \sqrt A\cosh(w/2)`, :math:`d = \sqrt{A/\kappa}\sinh(w/2)`, so
:math:`v = ad = \alpha\sinh w`, :math:`\alpha = A/(2\sqrt\kappa)`, :math:`\kappa = K(M+1)/(K+M+1)`
(:func:`theory.rescaling.qk_rescaling`). The reduced flow (:func:`theory.reduced.reduced_system`) moves
:math:`\dot v = \dot a\,d + a(\dot b - \dot c)`, a common factor times :math:`d^2 + a^2/\kappa = (A/\kappa)\cosh w`;
divided by :math:`dv/dw = \alpha\cosh w` the :math:`\cosh w` cancels, and

.. math::
    \frac{dw}{dt} = \frac{\dot v}{\alpha\cosh w} = -\frac{2\,\eta_{QK}}{\sqrt\kappa}\,
    \frac{\partial\mathcal L}{\partial v}(u, v),

a function of ``u`` and ``v`` alone: the walk needs neither the QK coordinates nor the full right-hand side.
:func:`walk_rate` derives it from the reduced flow (never typed), and :func:`walk_rate_checks` states that ``w``,
``A`` and the OV factors beyond ``u`` drop out.
"""

from __future__ import annotations

from functools import lru_cache

import sympy as sp

from theory.checks import Check, identity_check
from theory.parametrization import Parametrization
from theory.reduced import _substitute_p, reduced_system
from theory.symbols import A_qk, K, M, P, eta_qk, kappa, u
from theory.symmetric_line import p_of_v

w_ = sp.Symbol("w", real=True)
"""The walk coordinate: :math:`v = \\alpha\\sinh w`."""


@lru_cache(maxsize=None)
def _rate_in_w(param: Parametrization | str) -> tuple[sp.Expr, sp.Expr]:
    r"""``(dw/dt with p a symbol, before simplification, dw/dt simplified)`` for a factorized-QK ``param``, in
    ``u``, ``w``, ``A_QK`` and the symbol ``p``."""
    s = reduced_system(param)
    if s.qk.kind != "factorized":
        raise ValueError(f"{param}: the w walk is for factorized QK, not {s.qk.kind}")
    n = len(s.ov.coords)
    a, b, c = s.qk.coords
    vdot = sum(sp.diff(s.qk.effective, x) * f for x, f in zip(s.qk.coords, s.rhs_display[n:], strict=True))
    if len(s.ov.coords) == 2:                        # factorized OV: u = s_O s_V, only u enters the loss
        s_o, s_v = s.ov.coords
        vdot = vdot.subs(s_v, u / s_o)
    else:
        vdot = vdot.subs(s.ov.coords[0], u)
    half = w_ / 2
    on_curve = {a: sp.sqrt(A_qk) * sp.cosh(half), b: c + sp.sqrt(A_qk / kappa) * sp.sinh(half)}
    alpha_ = A_qk / (2 * sp.sqrt(kappa))
    raw = vdot.subs(on_curve) / (alpha_ * sp.cosh(w_))
    # factored, so that 1 - p stays a factor for _substitute_p (expanded, it cancels in float64 as p -> 1)
    simple = sp.factor(sp.simplify(sp.expand_trig(sp.simplify(raw.rewrite(sp.exp)))))
    return raw, simple


ALLOWED = frozenset({u, P, K, M, eta_qk})
"""The symbols :math:`dw/dt` may depend on: ``u``, ``p`` (of ``v``), ``K``, ``M`` and :math:`\eta_{QK}`."""


def _depends_only_on_allowed(param: Parametrization | str, simple: sp.Expr) -> None:
    """``RuntimeError`` naming the symbols of ``simple`` outside :data:`ALLOWED` (``w``, ``A``, an OV factor)."""
    extra = simple.free_symbols - ALLOWED
    if extra:
        raise RuntimeError(f"{param}: dw/dt depends on {sorted(map(str, extra))}: {simple}")


@lru_cache(maxsize=None)
def walk_rate(param: Parametrization | str) -> sp.Expr:
    r""":math:`dw/dt` of the ``w`` walk as a function of ``u``, ``v``, ``K``, ``M`` and the rates (``p`` replaced by
    :math:`p(v)`, its :math:`1 - p` by :math:`(M+1)/(e^v + M + 1)`, as in the generated right-hand side)."""
    _, simple = _rate_in_w(param)
    _depends_only_on_allowed(param, simple)
    return _substitute_p(simple, p_of_v())


def walk_rate_checks(param: Parametrization | str) -> list[Check]:
    r"""``{param}-walk-rate``: :math:`\dot v/(\alpha\cosh w)` on the curve minus the simplified rate is 0 (symbolic
    ``u, w, A, K, M``, the rates and ``p``), and the simplified rate has no ``w``, ``A`` or OV factor other than ``u``."""
    raw, simple = _rate_in_w(param)
    _depends_only_on_allowed(param, simple)
    return [identity_check(f"{param}-walk-rate", r"\dot v/(\alpha\cosh w) = -2\eta_{QK}\,\partial_v\mathcal L/\sqrt\kappa",
                           raw, simple)]
