r"""Exact reduced gradient flow of the four parametrizations on the symmetric set.

Each circuit is described by its reduced coordinates :math:`x_i`, the squared Frobenius
norm :math:`n_i` of the matrix direction each coordinate scales (its multiplicity), and
the effective observable it produces (``u`` for OV, ``v`` for QK). Because the full
gradient lies in the symmetric set (:mod:`theory.symmetric_line`), gradient flow on the
full matrices restricted to that set is

.. math::
    \dot x_i = -\frac{\eta}{n_i}\,\frac{\partial \mathcal L}{\partial x_i},\qquad
    \mathcal L = \Lambda\bigl(u(x), p(v(x))\bigr) = \log\bigl(1 + (K-1)e^{-p u}\bigr).

* collapsed OV: :math:`W_{OV} = u\,P E_d^\top` — coordinate ``u``, :math:`n = K-1`;
* factorized OV (balanced SVD split): :math:`W_O = s_O U R^\top`, :math:`W_V = s_V R V^\top`,
  :math:`u = s_O s_V`, :math:`n_{s_O} = n_{s_V} = K-1`;
* collapsed QK: the query column moves along :math:`w`, coordinate ``v``, :math:`n = \|w\|^2 = K(M+1)/N`;
* factorized QK: :math:`W_Q = a\,e\,e_q^\top`, :math:`W_K = e\,(b\mathbf 1_d + c\mathbf 1_c + c\,e_q)^\top`,
  :math:`v = a(b-c)`, :math:`n = (1, K, M+1)` (the query's key stays equal to the commons').

The derivation decides the dimension: CACO 2, CAFO 3, FACO 4, FAFO 5.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import sympy as sp

from theory.symbols import K, M, N, P, a_, b_, c_, eta_ov, eta_qk, s_O, s_V, u, v
from theory.symmetric_line import line_geometry, margin_loss, p_of_v
from theory.parametrization import Parametrization


@dataclass(frozen=True)
class Circuit:
    """Reduced coordinates of one circuit, their multiplicities and the effective observable."""

    name: str                        # "OV" or "QK"
    factorized: bool
    coords: tuple[sp.Symbol, ...]
    multiplicity: tuple[sp.Expr, ...]
    effective: sp.Expr               # u (OV) or v (QK) as a function of coords
    rate: sp.Symbol                  # eta_OV or eta_QK
    matrix_form: str                 # LaTeX of the matrices on the symmetric set


def ov_circuit(factorized: bool) -> Circuit:
    """The OV circuit's reduced coordinates (see module docstring)."""
    n = line_geometry().ov_norm2
    if factorized:
        return Circuit("OV", True, (s_O, s_V), (n, n), s_O * s_V, eta_ov,
                       r"W_O = s_O\,U R^\top,\; W_V = s_V\,R V^\top,\; U V^\top = P E_d^\top")
    return Circuit("OV", False, (u,), (n,), u, eta_ov, r"W_{OV} = u\,P E_d^\top")


def qk_circuit(factorized: bool) -> Circuit:
    """The QK circuit's reduced coordinates (see module docstring)."""
    if factorized:
        return Circuit("QK", True, (a_, b_, c_), (sp.Integer(1), K, M + 1), a_ * (b_ - c_), eta_qk,
                       r"W_Q = a\,e\,e_q^\top,\; W_K = e\,(b\,\mathbf 1_d + c\,\mathbf 1_c + c\,e_q)^\top")
    return Circuit("QK", False, (v,), (line_geometry().qk_norm2,), v, eta_qk,
                   r"W_{KQ}[:,q] = W_{KQ}(0)[:,q] + (v - v_0)\,w")


@dataclass(frozen=True)
class ReducedSystem:
    r"""The reduced ODE of one parametrization.

    ``rhs`` is :math:`\dot x` in the state with the attention as the symbol ``p``
    (``rhs_display``) and with :math:`p = p(v(x))` substituted (``rhs``, what is integrated).
    """

    param: str
    ov: Circuit
    qk: Circuit
    state: tuple[sp.Symbol, ...]
    rhs_display: tuple[sp.Expr, ...]
    rhs: tuple[sp.Expr, ...]
    u_expr: sp.Expr
    v_expr: sp.Expr
    p_expr: sp.Expr
    loss_expr: sp.Expr

    @property
    def dimension(self) -> int:
        return len(self.state)


def _rhs_with_symbol_p(circuit: Circuit, ov: Circuit, qk: Circuit) -> list[sp.Expr]:
    r"""Chain rule through :math:`p`: :math:`\partial_x\mathcal L = \Lambda_u\,\partial_x u + \Lambda_p\, p(1-p)\,\partial_x v`."""
    Lam = margin_loss(u, P)
    lam_u, lam_p = sp.diff(Lam, u), sp.diff(Lam, P)
    out = []
    for x, n in zip(circuit.coords, circuit.multiplicity):
        dL = (lam_u.subs(u, ov.effective) * sp.diff(ov.effective, x)
              + (lam_p * P * (1 - P)).subs(u, ov.effective) * sp.diff(qk.effective, x))
        out.append(sp.simplify(-circuit.rate / n * dL))
    return out


@lru_cache(maxsize=None)
def reduced_system(param: str) -> ReducedSystem:
    """Derive the reduced ODE of ``param`` (``"CACO"``, ``"FACO"``, ``"CAFO"`` or ``"FAFO"``)."""
    param = Parametrization(param)  # ValueError naming the four for anything else
    qk = qk_circuit(Parametrization(param).qk.factorized)
    ov = ov_circuit(Parametrization(param).ov.factorized)
    state = ov.coords + qk.coords
    rhs_display = tuple(_rhs_with_symbol_p(ov, ov, qk) + _rhs_with_symbol_p(qk, ov, qk))
    p_expr = p_of_v().subs(v, qk.effective)
    rhs = tuple(e.subs(P, p_expr) for e in rhs_display)
    loss = margin_loss(ov.effective, p_expr)
    return ReducedSystem(param, ov, qk, state, rhs_display, rhs, ov.effective, qk.effective, p_expr, loss)


def balanced_initial_state(param: str) -> dict[sp.Symbol, sp.Expr]:
    r"""MODEL.md's start by effective values :math:`u_0, v_0`, in reduced coordinates.

    Factorized OV: :math:`s_O = s_V = \sqrt{u_0}`; factorized QK: :math:`a = K^{1/4}\sqrt{v_0}`,
    :math:`b = K^{-1/4}\sqrt{v_0}`, :math:`c = 0` (so :math:`a^2 = K b^2`, :math:`ab = v_0`).
    """
    from theory.symbols import u0, v0

    out: dict[sp.Symbol, sp.Expr] = {}
    if Parametrization(param).ov.factorized:
        out[s_O] = sp.sqrt(u0)
        out[s_V] = sp.sqrt(u0)
    else:
        out[u] = u0
    if Parametrization(param).qk.factorized:
        out[a_] = K ** sp.Rational(1, 4) * sp.sqrt(v0)
        out[b_] = K ** sp.Rational(-1, 4) * sp.sqrt(v0)
        out[c_] = sp.Integer(0)
    else:
        out[v] = v0
    return out


__all__ = ["Circuit", "ReducedSystem", "reduced_system", "ov_circuit", "qk_circuit", "balanced_initial_state", "N"]
