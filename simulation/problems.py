r"""Exact test problems: reduced flows whose solutions or invariants are known in closed form.

Each is derived from theory's effective system (:func:`theory.rescaling.effective_system`) or first
integral (:func:`theory.first_integrals.first_integral`), never typed in, and evaluated in numpy, so
integrators and laws can be held against exact numbers (as torchdiffeq's ``problems.py``):

* :func:`frozen_qk_time` — with :math:`\eta_{QK} = 0` the attention is frozen at :math:`p_0 = p(v_0)` and
  :math:`\dot u = \eta_{OV}\rho_{OV}(u)\,p_0/(e^{p_0 u} + K - 1)` separates: ``t(u)`` exactly
  (collapsed OV: :math:`[e^{pu}]/(\eta p^2) + (K-1)[u]/(\eta p)`; factorized OV, balanced:
  :math:`[\mathrm{Ei}(pu)]/(2\eta p) + (K-1)[\log u]/(2\eta p)`, brackets from ``u0`` to ``u``).
* :func:`collapsed_qk_v_of_u` — collapsed QK: the first integral is :math:`e^v + (M+1)v = X(u)` with
  :math:`X = R\,G_{OV}(u) + H_0 + 1`, solved by Lambert W,
  :math:`v = X/(M+1) - W_0\bigl(e^{X/(M+1)}/(M+1)\bigr)`, evaluated without overflow as
  :math:`X/(M+1) - \omega\bigl(X/(M+1) - \log(M+1)\bigr)` (Wright :math:`\omega`, :math:`W_0(e^z) = \omega(z)`).
* :func:`first_integral_drift` (re-exported) — :math:`H(u, v)` is constant on every exact solution.

Shapes: ``u`` arrays of any shape; scalars for the parameters.
"""

from __future__ import annotations

import numpy as np
from scipy.special import wrightomega

from simulation import generated
from simulation.closed_forms import first_integral_drift, first_integral_evaluator
from theory.parametrization import Parametrization


def frozen_qk_time(param: Parametrization, u_, K_, M_, eta_ov_, u0, v0) -> np.ndarray:
    r"""Exact time at which the flow with :math:`\eta_{QK} = 0` from ``(u0, v0)`` reaches ``u_`` (any shape)."""
    p0 = generated.p_of_v(v0, M_)                                  # theory.symmetric_line.p_of_v
    fn = generated.FROZEN_QK_TIME[Parametrization(param)]
    return np.asarray(fn(np.asarray(u_, dtype=float), u0, p0, K_, eta_ov_), dtype=float)


def collapsed_qk_v_of_u(param: Parametrization, u_, K_, M_, eta_qk_, eta_ov_, u0, v0) -> np.ndarray:
    r"""Exact ``v`` on the trajectory from ``(u0, v0)`` when it reaches ``u_`` (collapsed QK; balanced OV start).

    Uses theory's Lambert-W solution (:func:`theory.first_integrals.v_of_u_collapsed_qk`) in Wright-omega form.
    """
    if Parametrization(param).qk.kind.rescales:
        raise ValueError(f"{param}: the Lambert-W form of v(u) needs a collapsed QK circuit")
    ev = first_integral_evaluator(param)
    g0, rg0 = ev.terms_uv(u0, v0, K_, M_, eta_qk_, eta_ov_, 0.0, 1.0)
    _, rg = ev.terms_uv(np.asarray(u_, dtype=float), 0.0, K_, M_, eta_qk_, eta_ov_, 0.0, 1.0)
    X = rg + float(g0 - rg0) + generated.QK_OFFSET[Parametrization(param)]
    z = X / (M_ + 1)
    return z - np.real(wrightomega(z - np.log(M_ + 1)))


__all__ = ["frozen_qk_time", "collapsed_qk_v_of_u", "first_integral_drift"]
