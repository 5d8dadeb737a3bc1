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

* tied QK (:func:`_tied`): :math:`W_K = W_Q = e\,(b\mathbf 1_d + c\mathbf 1_c + a e_q)^\top`, :math:`n = (1, K, M)`;
  the query's score :math:`a^2` leaves the commons' :math:`ac`, so the attention has two gaps (off MODEL.md's line).

* scaled (:func:`_scaled`): the factorized coordinates with :math:`W = c\,W_1W_2`, effective observable times :math:`c`.

The derivation decides the dimension: CACO 2, CAFO 3, FACO 4, FAFO 5, TACO 4, TAFO 5 (SACO 4, CASO 3, ...). A circuit kind's
reduced coordinates are one entry of :data:`REDUCED_CIRCUITS`.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import sympy as sp

from theory.symbols import K, M, N, P, a_, alpha, b_, beta, c_, eta_ov, eta_qk, gamma, s_O, s_V, u, v
from theory.symmetric_line import attention_on_distinct, line_geometry, margin_loss, p_of_v
from theory.parametrization import Parametrization


@dataclass(frozen=True)
class ReducedCircuit:
    r"""Reduced coordinates of one circuit, their multiplicities and the effective observable.

    ``orbits`` (QK only): the query column's orbit values :math:`(\alpha, \beta, \gamma)` =
    :math:`W_{KQ}[d_k, q], W_{KQ}[c_j, q], W_{KQ}[q, q]` as functions of the coordinates, from which the
    attention is computed (:func:`theory.symmetric_line.attention_on_distinct`). ``start``: MODEL.md's
    start in these coordinates (symbols ``u_0``, ``v_0``, ``K``). ``conserved``: ``(name, expression)`` of the
    quantities its factors' flow conserves, in the coordinates (checked by :func:`theory.rescaling.conservation_checks`).
    """

    name: str                        # "OV" or "QK"
    kind: str                        # a theory.parametrization.KINDS name: "collapsed", "factorized", "tied"
    coords: tuple[sp.Symbol, ...]
    multiplicity: tuple[sp.Expr, ...]
    effective: sp.Expr               # u (OV) or v (QK) as a function of coords
    rate: sp.Symbol                  # eta_OV or eta_QK
    matrix_form: str                 # LaTeX of the matrices on the symmetric set
    start: tuple[sp.Expr, ...] = ()
    orbits: tuple[sp.Expr, ...] = ()
    conserved: tuple[tuple[str, sp.Expr], ...] = ()

    @property
    def factorized(self) -> bool:
        return self.kind == "factorized"

    @property
    def on_line(self) -> bool:
        r"""True when the query's score equals the commons' (:math:`\gamma = \beta`): MODEL.md's line, :math:`p = p(v)`."""
        return self.name == "OV" or sp.simplify(self.orbits[2] - self.orbits[1]) == 0


def _collapsed(circuit: str) -> ReducedCircuit:
    from theory.symbols import u0, v0

    if circuit == "OV":
        return ReducedCircuit("OV", "collapsed", (u,), (line_geometry().ov_norm2,), u, eta_ov, r"W_{OV} = u\,P E_d^\top",
                       (u0,))
    return ReducedCircuit("QK", "collapsed", (v,), (line_geometry().qk_norm2,), v, eta_qk,
                   r"W_{KQ}[:,q] = W_{KQ}(0)[:,q] + (v - v_0)\,w", (v0,), (v, sp.Integer(0), sp.Integer(0)))


def _factorized(circuit: str) -> ReducedCircuit:
    r"""Balanced start: :math:`s_O = s_V = \sqrt{u_0}`; :math:`a = K^{1/4}\sqrt{v_0}`, :math:`b = K^{-1/4}\sqrt{v_0}`, :math:`c = 0`."""
    from theory.symbols import u0, v0

    if circuit == "OV":
        n = line_geometry().ov_norm2
        return ReducedCircuit("OV", "factorized", (s_O, s_V), (n, n), s_O * s_V, eta_ov,
                       r"W_O = s_O\,U R^\top,\; W_V = s_V\,R V^\top,\; U V^\top = P E_d^\top",
                       (sp.sqrt(u0), sp.sqrt(u0)), conserved=(("delta", s_O ** 2 - s_V ** 2),))
    return ReducedCircuit("QK", "factorized", (a_, b_, c_), (sp.Integer(1), K, M + 1), a_ * (b_ - c_), eta_qk,
                   r"W_Q = a\,e\,e_q^\top,\; W_K = e\,(b\,\mathbf 1_d + c\,\mathbf 1_c + c\,e_q)^\top",
                   (K ** sp.Rational(1, 4) * sp.sqrt(v0), K ** sp.Rational(-1, 4) * sp.sqrt(v0), sp.Integer(0)),
                   (a_ * b_, a_ * c_, a_ * c_),
                   (("C_QK", a_ ** 2 - K * b_ ** 2 - (M + 1) * c_ ** 2), ("S", K * b_ + (M + 1) * c_)))


def _tied(circuit: str) -> ReducedCircuit:
    r"""Tied QK, :math:`W_K = W_Q = e\,(b\mathbf 1_d + c\mathbf 1_c + a e_q)^\top` (rank one, one direction ``e``).

    The gradient :math:`W (G + G^\top)` keeps this form (``G`` lives in the query column, constant on each
    orbit), and its directions :math:`e e_q^\top, e\mathbf 1_d^\top, e\mathbf 1_c^\top` are orthogonal with
    squared norms :math:`1, K, M`. Scores :math:`\alpha = ab`, :math:`\beta = ac`, :math:`\gamma = a^2`:
    the query's own score is not the commons' (:attr:`ReducedCircuit.on_line` is False), so the attention depends
    on two gaps, :math:`v = a(b-c)` and :math:`a(a-c)`. Start :math:`a = c = \sqrt{v_0}`, :math:`b = 2\sqrt{v_0}`
    (:class:`theory.parametrization.Tied`).
    """
    from theory.symbols import v0

    if circuit != "QK":
        raise ValueError("a tied circuit is QK only")
    return ReducedCircuit("QK", "tied", (a_, b_, c_), (sp.Integer(1), K, M), a_ * (b_ - c_), eta_qk,
                   r"W_K = W_Q = e\,(b\,\mathbf 1_d + c\,\mathbf 1_c + a\,e_q)^\top",
                   (sp.sqrt(v0), 2 * sp.sqrt(v0), sp.sqrt(v0)), (a_ * b_, a_ * c_, a_ ** 2))


def _scaled(circuit: str) -> ReducedCircuit:
    r"""Scaled factorization :math:`W = c\,W_1 W_2` (:class:`theory.parametrization.Scaled`, :math:`c` its ``scale``):
    the factorized coordinates and multiplicities (the factors are the same matrices), effective observable and
    orbits :math:`c` times the factorized ones, start :math:`1/\sqrt c` times it (so the effective start is the same)."""
    from theory.parametrization import Scaled

    c = sp.Integer(Scaled.scale)
    f = _factorized(circuit)
    form = (rf"W_{{OV}} = {c}\,W_O W_V,\; " if circuit == "OV" else rf"W_{{KQ}} = {c}\,W_K^\top W_Q,\; ") + f.matrix_form
    return ReducedCircuit(circuit, "scaled", f.coords, f.multiplicity, c * f.effective, f.rate, form,
                   tuple(x / sp.sqrt(c) for x in f.start), tuple(c * o for o in f.orbits), f.conserved)


REDUCED_CIRCUITS = {"collapsed": _collapsed, "factorized": _factorized, "tied": _tied, "scaled": _scaled}
"""Kind name (:data:`theory.parametrization.KINDS`) -> ``builder(circuit) -> ReducedCircuit``: a kind's symbolic side."""


def circuits(param: Parametrization | str) -> tuple[ReducedCircuit, ReducedCircuit]:
    """``(ov, qk)`` reduced circuits of a registered parametrization, from the kinds' registry."""
    p = Parametrization(param)
    return REDUCED_CIRCUITS[p.ov.kind.name]("OV"), REDUCED_CIRCUITS[p.qk.kind.name]("QK")


@dataclass(frozen=True)
class ReducedSystem:
    r"""The reduced ODE of one parametrization.

    ``rhs`` is :math:`\dot x` in the state with the attention as the symbol ``p``
    (``rhs_display``) and with :math:`p = p(v(x))` substituted (``rhs``, what is integrated).
    """

    param: str
    ov: ReducedCircuit
    qk: ReducedCircuit
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


def _rhs_with_symbol_p(circuit: ReducedCircuit, ov: ReducedCircuit, qk: ReducedCircuit) -> list[sp.Expr]:
    r"""Chain rule through :math:`p`: :math:`\partial_x\mathcal L = \Lambda_u\,\partial_x u + \Lambda_p\, p(1-p)\,\partial_x v`."""
    Lam = margin_loss(u, P)
    lam_u, lam_p = sp.diff(Lam, u), sp.diff(Lam, P)
    out = []
    for x, n in zip(circuit.coords, circuit.multiplicity, strict=True):
        dL = (lam_u.subs(u, ov.effective) * sp.diff(ov.effective, x)
              + (lam_p * P * (1 - P)).subs(u, ov.effective) * sp.diff(qk.effective, x))
        out.append(sp.simplify(-circuit.rate / n * dL))
    return out


def _substitute_p(expr: sp.Expr, p_expr: sp.Expr) -> sp.Expr:
    r"""``expr`` (in the symbol ``p``) with :math:`p` replaced by ``p_expr`` and the factor :math:`1 - p` by its own
    simplified form (on MODEL.md's line :math:`(M+1)/(e^v + M + 1)`), not by ``1 - p_expr``: evaluated in floating
    point, :math:`1 - p` cancels once :math:`p \to 1` (relative error :math:`\epsilon/(1-p)`, all of it where
    :math:`1 - p < 10^{-16}`), which froze the QK rate at late times and large ``v``."""
    q = sp.Dummy("q")
    expr = expr.subs({P - 1: -q, 1 - P: q})
    return expr.subs(P, p_expr).subs(q, sp.simplify(1 - p_expr))


def _attention(qk: ReducedCircuit) -> sp.Expr:
    """Attention on the distinct token as a function of the QK coordinates."""
    if qk.on_line:
        return p_of_v().subs(v, qk.effective)
    alpha_, beta_, gamma_ = qk.orbits
    return attention_on_distinct().subs({alpha: alpha_, beta: beta_, gamma: gamma_})


@lru_cache(maxsize=None)
def reduced_system(param: Parametrization | str) -> ReducedSystem:
    r"""Derive the reduced ODE of a registered ``param`` (``"CACO"``, ..., ``"FAFO"``, ``"TACO"``, ...).

    On MODEL.md's line (:attr:`ReducedCircuit.on_line`) by the chain rule through the symbol ``p``; otherwise
    (tied QK) :math:`\dot x_i = -(\eta/n_i)\,\partial_{x_i}\Lambda(u, p(x))` directly.
    """
    param = Parametrization(param)  # ValueError naming the registered ones for anything else
    ov, qk = circuits(param)
    state = ov.coords + qk.coords
    p_expr = _attention(qk)
    loss = margin_loss(ov.effective, p_expr)
    if qk.on_line:
        rhs_display = tuple(_rhs_with_symbol_p(ov, ov, qk) + _rhs_with_symbol_p(qk, ov, qk))
        rhs = tuple(_substitute_p(e, p_expr) for e in rhs_display)
    else:
        rhs = tuple(sp.simplify(-c.rate / n * sp.diff(loss, x))
                    for c in (ov, qk) for x, n in zip(c.coords, c.multiplicity, strict=True))
        rhs_display = rhs
    return ReducedSystem(param, ov, qk, state, rhs_display, rhs, ov.effective, qk.effective, p_expr, loss)


def balanced_initial_state(param: Parametrization | str) -> dict[sp.Symbol, sp.Expr]:
    r"""MODEL.md's start by effective values :math:`u_0, v_0`, in reduced coordinates (each circuit's ``start``).

    Factorized OV: :math:`s_O = s_V = \sqrt{u_0}`; factorized QK: :math:`a = K^{1/4}\sqrt{v_0}`,
    :math:`b = K^{-1/4}\sqrt{v_0}`, :math:`c = 0` (so :math:`a^2 = K b^2`, :math:`ab = v_0`).
    """
    ov, qk = circuits(param)
    return dict(zip(ov.coords + qk.coords, ov.start + qk.start, strict=True))


def flow_checks(param: Parametrization | str) -> list:
    r"""``{param}-flow-{x}``, one per reduced coordinate: the displayed flow of ``x`` (chain rule through the
    symbol ``p``, :func:`reduced_system`) equals :math:`-(\eta/n_x)\,\partial_x \mathcal L(u(x), p(v(x)))`
    differentiated directly in the coordinates (``simplify(lhs - rhs) == 0``, symbolic K, M). The multiplicities
    :math:`n_x` rest on the orbit-derivative checks of :mod:`theory.symmetric_line`."""
    from theory.checks import identity_check

    s = reduced_system(param)
    loss = margin_loss(s.u_expr, s.p_expr)
    out = []
    for circuit in (s.ov, s.qk):
        for x, n in zip(circuit.coords, circuit.multiplicity, strict=True):
            lhs = rf"\dot {sp.latex(x)} = -\frac{{{sp.latex(circuit.rate)}}}{{{sp.latex(n)}}}\,\partial_{{{sp.latex(x)}}}"
            out.append(identity_check(f"{s.param}-flow-{x.name}", lhs + r"\mathcal L\bigl(u(x), p(v(x))\bigr)",
                                      s.rhs[s.state.index(x)], -circuit.rate / n * sp.diff(loss, x)))
    return out


__all__ = ["ReducedCircuit", "ReducedSystem", "reduced_system", "circuits", "flow_checks",
           "balanced_initial_state", "REDUCED_CIRCUITS", "N"]
