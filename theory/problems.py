r"""Symbolic side of the exact test problems (their numbers are generated into :mod:`simulation.generated`).

* :func:`frozen_qk_time_expr`: with :math:`\eta_{QK} = 0` the attention stays at its start ``p``, and the OV
  flow is a separable ODE; :math:`t(u) = \int_{u_0}^{u} dy/\dot u(y)` in closed form (elementary for
  collapsed OV, through ``Ei`` for factorized OV).
* :func:`qk_offset`: the constant ``c`` of :math:`G_{QK}(v) = e^v + (M+1)v - c` for collapsed QK, which makes
  :math:`e^v + (M+1)v = X` the equation of theory's Lambert-W solution of ``v(u)``.
"""

from __future__ import annotations

from functools import lru_cache

import sympy as sp

from theory.first_integrals import first_integral
from theory.parametrization import Parametrization
from theory.rescaling import effective_system
from theory.symbols import M, delta, u

Y = sp.Symbol("y", positive=True)
U_ = sp.Symbol("u", positive=True)
U0 = sp.Symbol("u_0", positive=True)


@lru_cache(maxsize=None)
def frozen_qk_time_expr(param: Parametrization) -> sp.Expr:
    r""":math:`t(u) = \int_{u_0}^{u} dy/\dot u(y)` at frozen attention ``p`` (balanced start, :math:`\delta = 0`)."""
    udot = effective_system(param)[0].subs(delta, 0).subs(u, Y)
    return sp.integrate(sp.expand(sp.simplify(1 / udot)), (Y, U0, U_))


@lru_cache(maxsize=None)
def qk_offset(param: Parametrization) -> sp.Expr:
    r"""``c`` with :math:`G_{QK}(v) = e^v + (M+1)v - c` (collapsed QK only)."""
    if Parametrization(param).qk.kind.rescales:
        raise ValueError(f"{param}: G_QK has the e^v + (M+1) v form only for collapsed QK")
    from theory.symbols import v as v_sym

    c = sp.simplify(sp.exp(v_sym) + (M + 1) * v_sym - first_integral(param).G_qk)
    if c.free_symbols:  # pragma: no cover - would mean the first integral changed
        raise RuntimeError(f"{param}: G_QK is not e^v + (M+1) v - const: {first_integral(param).G_qk}")
    return c


__all__ = ["frozen_qk_time_expr", "qk_offset", "U_", "U0", "Y"]
