r"""Theory's next-order asymptotic laws as numbers, and the per-time law table.

:func:`next_order_law` solves the implicit law of :mod:`theory.asymptotics_next` for each ``t``:
on the first integral's level curve :math:`u = u_{level}(G_{QK}(v), H_0)` find the ``v`` with
:math:`\log(\eta_{OV} t) = \text{log\_time\_next}(u, v)` (Brent's method on a bracket found on a
``v`` grid), then ``u`` and :math:`1 - p = (M+1)/(e^v + M + 1)`. :math:`G_{QK}` and :math:`H_0`
come from :func:`simulation.closed_forms.first_integral_evaluator` (quadrature for factorized QK).

:func:`law_table` puts the integrated solution (``rtol = 1e-10``), the leading laws of
:func:`theory.asymptotics.asymptotic_laws` (``u_of_t``, then ``v_of_u`` and ``residual_of_u`` at that
``u``: every law evaluated at ``t`` alone) and the next-order laws side by side. Arrays are ``(T,)``.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Callable

import numpy as np
from scipy.optimize import brentq

from simulation.closed_forms import first_integral_evaluator, law_functions
from simulation import generated
from theory.parametrization import Parametrization

NEXT_ORDER_EXPRESSIONS = generated.NEXT_ORDER_EXPRESSIONS

TABLE_KEYS = ("t", "u", "u_leading", "u_next", "v", "v_leading", "v_next",
              "residual", "residual_leading", "residual_next")
"""Keys of :func:`law_table`'s result, each an array ``(T,)``."""

_V_GRID_MAX = 60.0


@lru_cache(maxsize=None)
def next_order_functions(param: Parametrization) -> dict[str, Callable[..., np.ndarray]]:
    """The fields :data:`NEXT_ORDER_EXPRESSIONS` as numpy functions of ``(u, v, K, M, eta_qk, eta_ov, A_QK, H_0, G_QK)``
    (generated from :func:`theory.asymptotics_next.next_order_laws`)."""
    return dict(generated.NEXT_ORDER[Parametrization(param)])


class _Curve:
    """The level curve ``H(u, v) = H_0`` through a start, parametrized by ``v``."""

    def __init__(self, param, K_, M_, eq, eo, u0, v0):
        from simulation.reduced import initial_states

        self.param, self.pars = param, (float(K_), float(M_), float(eq), float(eo))
        self.ev = first_integral_evaluator(param)
        state0 = initial_states(param, u0, v0, K_)
        _, _, self.d, self.A = (float(np.ravel(x)[0]) for x in self.ev.constants(state0, *self.pars))
        g0, rg0 = self.ev.terms_uv(u0, v0, *self.pars, self.d, self.A)
        self.H0 = float(g0 - rg0)
        self.v0 = float(v0)
        self.fns = next_order_functions(param)

    def G(self, vv):
        return np.asarray(self.ev.terms_uv(0.0, vv, *self.pars, self.d, self.A)[0], dtype=float)

    def _call(self, name, uu, vv, g):
        with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
            return np.asarray(self.fns[name](uu, vv, *self.pars, self.A, self.H0, g), dtype=float)

    def u_of_v(self, vv, g=None):
        g = self.G(vv) if g is None else g
        return self._call("u_of_level", 0.0, vv, g)

    def log_time(self, vv, g=None):
        g = self.G(vv) if g is None else g
        uu = self.u_of_v(vv, g)
        return self._call("log_time_next", uu, vv, g) + np.log(self.pars[3])


def next_order_law(param: Parametrization, K_, M_, eta_qk_, eta_ov_, u0, v0, t) -> dict[str, np.ndarray]:
    r"""The next-order laws at times ``t (T,)`` for MODEL.md's balanced start ``(u0, v0)``.

    Returns ``{"u", "v", "residual"}``, each ``(T,)``; NaN where the asymptotic clock has no root
    on the curve (``t`` too small for the law, or ``v`` beyond :data:`_V_GRID_MAX`).
    """
    t = np.atleast_1d(np.asarray(t, dtype=float))
    c = _Curve(param, K_, M_, eta_qk_, eta_ov_, u0, v0)
    grid = np.linspace(max(c.v0, 1e-3), _V_GRID_MAX, 240)
    with np.errstate(invalid="ignore"):
        lt_grid = c.log_time(grid)
    vs = np.full(t.shape, np.nan)
    for i, tt in enumerate(t):
        f_grid = lt_grid - np.log(tt)
        ok = np.isfinite(f_grid[:-1]) & np.isfinite(f_grid[1:]) & (f_grid[:-1] < 0) & (f_grid[1:] >= 0)
        idx = np.flatnonzero(ok)
        if idx.size == 0:
            continue
        j = idx[-1]          # the last crossing: past it the clock increases for good
        vs[i] = brentq(lambda x, tt=tt: float(c.log_time(np.array(x))) - np.log(tt), grid[j], grid[j + 1], xtol=1e-13,
                       rtol=1e-14)
    uu = c.u_of_v(vs)
    M_f = float(M_)
    with np.errstate(over="ignore"):
        residual = (M_f + 1) / (np.exp(vs) + M_f + 1)
    return {"u": uu, "v": vs, "residual": residual}


def leading_law(param: Parametrization, K_, M_, eta_qk_, eta_ov_, t) -> dict[str, np.ndarray]:
    """The leading laws at ``t (T,)``: ``u_of_t``, and ``v_of_u``, ``residual_of_u`` at that ``u``."""
    t = np.atleast_1d(np.asarray(t, dtype=float))
    f = law_functions(param)
    uu = f["u_of_t"](t, 0.0, K_, M_, eta_qk_, eta_ov_)
    return {"u": uu, "v": f["v_of_u"](t, uu, K_, M_, eta_qk_, eta_ov_),
            "residual": f["residual_of_u"](t, uu, K_, M_, eta_qk_, eta_ov_)}


def law_table(param: Parametrization, K_: int, M_: int, eta_qk_: float, eta_ov_: float, u0: float, v0: float, t,
              *, rtol: float = 1e-10) -> dict[str, np.ndarray]:
    r"""Solution, leading law and next-order law per time: keys :data:`TABLE_KEYS`, arrays ``(T,)``.

    The solution is :func:`simulation.reduced.integrate` at ``rtol`` from MODEL.md's balanced start.
    """
    from simulation.reduced import integrate

    t = np.atleast_1d(np.asarray(t, dtype=float))
    sol = integrate(param, K_, M_, eta_qk_, eta_ov_, u0, v0, t, rtol=rtol)
    lead = leading_law(param, K_, M_, eta_qk_, eta_ov_, t)
    nxt = next_order_law(param, K_, M_, eta_qk_, eta_ov_, u0, v0, t)
    out = {"t": t}
    for obs in ("u", "v", "residual"):
        out[obs] = getattr(sol, obs)
        out[f"{obs}_leading"] = lead[obs]
        out[f"{obs}_next"] = nxt[obs]
    return out


def table_errors(table: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    r"""Relative errors :math:`|\text{law}/\text{solution} - 1|` of each law in a :func:`law_table`."""
    return {f"{obs}_{order}": np.abs(table[f"{obs}_{order}"] / table[obs] - 1.0)
            for obs in ("u", "v", "residual") for order in ("leading", "next")}


__all__ = ["next_order_law", "leading_law", "law_table", "table_errors", "next_order_functions", "TABLE_KEYS"]
