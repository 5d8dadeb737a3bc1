r"""Theory's closed forms as numbers: first integrals along solutions and the asymptotic laws.

* :func:`first_integral_values` evaluates :math:`H(u, v)` of :func:`theory.first_integrals.first_integral`
  on reduced states, with the trajectory's constants :math:`\delta`, :math:`A_{QK}` computed from
  the state by :mod:`theory.rescaling` (they are conserved, so any time gives the same value).
  An unevaluated ``Integral`` in ``H`` (factorized QK) is done by adaptive quadrature
  (:func:`scipy.integrate.quad`, ``epsrel = 1e-12``).
* :func:`law_functions` evaluates :func:`theory.asymptotics.asymptotic_laws` (generated into
  :mod:`simulation.generated`; ``LambertW`` by :func:`scipy.special.lambertw`), and :func:`asymptotic_errors` measures each law's relative error
  against a solution as ``t`` grows.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Callable

import numpy as np
from scipy.integrate import quad

from simulation import generated
from theory.parametrization import Parametrization

LAW_NAMES = generated.LAW_NAMES
LAW_TARGETS = generated.LAW_TARGETS


@dataclass(frozen=True)
class FirstIntegralEvaluator:
    r"""Numeric :math:`H` of one parametrization: ``H(state (n, ...), K, M, eta_qk, eta_ov) -> (...)``.

    ``terms`` returns :math:`(G_{QK}(v), R\,G_{OV}(u))`, whose difference is ``H``; their size is the
    natural scale for judging how well ``H`` is conserved. ``terms_uv(u, v, K, M, eta_qk, eta_ov, delta, A)``
    is the same in effective coordinates; ``constants(state, ...)`` gives ``(u, v, delta, A_QK)``.
    """

    param: str
    terms: Callable[..., tuple[np.ndarray, np.ndarray]]
    terms_uv: Callable[..., tuple[np.ndarray, np.ndarray]]
    constants: Callable[..., tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]

    def __call__(self, state, K_, M_, eta_qk_, eta_ov_) -> np.ndarray:
        g_qk, r_g_ov = self.terms(state, K_, M_, eta_qk_, eta_ov_)
        return g_qk - r_g_ov


@lru_cache(maxsize=None)
def first_integral_evaluator(param: Parametrization) -> FirstIntegralEvaluator:
    """Theory's first integral of ``param`` (generated), with its constants taken from the state."""
    fi = generated.FIRST_INTEGRALS[Parametrization(param)]

    def constants(state, K_, M_, eta_qk_, eta_ov_):
        state = np.asarray(state, dtype=float)
        shape = state.shape[1:]
        pars = [np.broadcast_to(np.asarray(q, dtype=float), shape) for q in (K_, M_, eta_qk_, eta_ov_)]
        return tuple(np.broadcast_to(np.asarray(x, dtype=float), shape) for x in fi["constants"](*state, *pars))

    def terms_uv(uu, vv, K_, M_, eta_qk_, eta_ov_, d, A):
        full = np.broadcast_arrays(*(np.asarray(x, dtype=float) for x in (uu, vv, K_, M_, eta_qk_, eta_ov_, d, A)))
        shape = full[0].shape
        k_arr, m_arr, a_arr = full[2], full[3], full[7]
        g_qk = np.broadcast_to(np.asarray(fi["g_qk_closed"](*full), dtype=float), shape).copy()
        for coef, integrand in fi["g_qk_integrals"]:
            vals = np.empty(shape)
            for i in np.ndindex(shape):
                k_, m_, a_ = float(k_arr[i]), float(m_arr[i]), float(a_arr[i])
                vals[i] = quad(lambda x, f=integrand, k=k_, m=m_, a=a_: float(f(x, k, m, a)), 0.0, float(full[1][i]), epsabs=0.0,
                               epsrel=1e-12, limit=200)[0]
            g_qk += np.broadcast_to(np.asarray(coef(*full), dtype=float), shape) * vals
        rg = np.broadcast_to(np.asarray(fi["r_g_ov"](*full), dtype=float), shape)
        return g_qk, rg

    def terms(state, K_, M_, eta_qk_, eta_ov_):
        uu, vv, d, A = constants(state, K_, M_, eta_qk_, eta_ov_)
        return terms_uv(uu, vv, K_, M_, eta_qk_, eta_ov_, d, A)

    return FirstIntegralEvaluator(str(Parametrization(param)), terms, terms_uv, constants)


def level_curve(param: Parametrization, state0: np.ndarray, K_, M_, eta_qk_, eta_ov_, u_grid: np.ndarray) -> np.ndarray:
    r"""``v`` on the curve :math:`H(u, v) = H(u_0, v_0)` through ``state0 (n,)``, for each ``u`` in ``u_grid``.

    :math:`G_{QK}` increases in ``v``, so each ``v`` is the root of :math:`G_{QK}(v) = H_0 + R\,G_{OV}(u)`
    (Brent's method); NaN where the curve does not reach ``u``.
    """
    from scipy.optimize import brentq

    ev = first_integral_evaluator(param)
    u0, v0, d, A = (float(np.ravel(x)[0]) for x in ev.constants(np.asarray(state0, float)[:, None], K_, M_, eta_qk_, eta_ov_))
    g0, rg0 = ev.terms_uv(u0, v0, K_, M_, eta_qk_, eta_ov_, d, A)
    H0 = float(g0 - rg0)
    out = np.full(np.size(u_grid), np.nan)
    for i, uu in enumerate(np.ravel(u_grid)):
        target = H0 + float(ev.terms_uv(uu, 0.0, K_, M_, eta_qk_, eta_ov_, d, A)[1])
        f = lambda vv, uu=uu, target=target: float(ev.terms_uv(uu, vv, K_, M_, eta_qk_, eta_ov_, d, A)[0]) - target  # noqa: E731
        lo, hi = -50.0 if not Parametrization(param).qk.kind.rescales else 0.0, 60.0
        if f(lo) <= 0 <= f(hi):
            out[i] = brentq(f, lo, hi, xtol=1e-12)
    return out


def first_integral_values(param: Parametrization, state: np.ndarray, K_, M_, eta_qk_, eta_ov_) -> np.ndarray:
    r""":math:`H` on reduced states ``(n_state, ...)``; constant in time along every exact solution."""
    return first_integral_evaluator(param)(state, K_, M_, eta_qk_, eta_ov_)


def first_integral_drift(param: Parametrization, state: np.ndarray, K_, M_, eta_qk_, eta_ov_) -> np.ndarray:
    r"""Relative drift :math:`|H(t) - H(0)| / \max(|G_{QK}|, |R G_{OV}|, 1)` along states ``(n, T, ...)``."""
    g, rg = first_integral_evaluator(param).terms(state, K_, M_, eta_qk_, eta_ov_)
    H = g - rg
    scale = np.maximum(np.maximum(np.abs(g), np.abs(rg)), 1.0)
    return np.abs(H - H[:1]) / scale


@lru_cache(maxsize=None)
def law_functions(param: Parametrization) -> dict[str, Callable[..., np.ndarray]]:
    """Theory's asymptotic laws (generated) as numpy functions ``f(t, u, K, M, eta_qk, eta_ov)`` (real part)."""
    out = {}
    for name, fn in generated.LAWS[Parametrization(param)].items():
        def call(t_, u_, K_, M_, eq_, eo_, _fn=fn):
            with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
                args = [np.asarray(x, dtype=float) for x in (t_, u_, K_, M_, eq_, eo_)]
                val = np.asarray(_fn(*args), dtype=complex)
            return np.real(np.broadcast_to(val, np.broadcast(*args).shape)).copy()
        out[name] = call
    return out


def asymptotic_errors(param: Parametrization, times: np.ndarray, solution: dict[str, np.ndarray], K_, M_, eta_qk_,
                      eta_ov_) -> dict[str, np.ndarray]:
    r"""Relative error :math:`|\text{law}/\text{solution} - 1|` of each law at ``times``.

    ``solution`` holds ``u, v, residual`` at ``times`` (same shape, ``(T, ...)``); laws in ``u``
    are evaluated at the solution's own ``u`` (matched loss), laws in ``t`` at ``times``.
    """
    fns = law_functions(param)
    tt = np.asarray(times, dtype=float).reshape((-1,) + (1,) * (np.ndim(solution["u"]) - 1))
    out = {}
    for name, fn in fns.items():
        pred = fn(tt, solution["u"], K_, M_, eta_qk_, eta_ov_)
        target = solution[LAW_TARGETS[name]]
        out[name] = np.abs(pred / target - 1.0)
    return out


def law_table(param: Parametrization, K_: int, M_: int, eta_qk_: float, eta_ov_: float, u0: float, v0: float, t, *,
              rtol: float = 1e-10) -> dict[str, np.ndarray]:
    """Per time: solution, leading law and next-order law of ``u``, ``v``, ``1 - p`` (see
    :func:`simulation.next_order.law_table`; keys ``t, u, u_leading, u_next, v, v_leading, v_next,
    residual, residual_leading, residual_next``, arrays ``(T,)``)."""
    from simulation.next_order import law_table as _table

    return _table(param, K_, M_, eta_qk_, eta_ov_, u0, v0, t, rtol=rtol)


__all__ = ["law_table", "FirstIntegralEvaluator", "first_integral_evaluator", "first_integral_values", "first_integral_drift",
           "law_functions", "asymptotic_errors", "level_curve", "LAW_NAMES", "LAW_TARGETS"]
