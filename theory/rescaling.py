r"""Implicit learning-rate rescaling of a factorized circuit, and the conserved quantities that fix it.

General form (any state, exact; :func:`matrix_identity_checks`): for :math:`W = W_1 W_2` trained by
gradient flow on the factors at rate :math:`\eta`,

.. math::
    \dot W = -\eta\,\bigl(W_1 W_1^\top\,\nabla_W\mathcal L + \nabla_W\mathcal L\; W_2^\top W_2\bigr),
    \qquad \tfrac{d}{dt}\bigl(W_1^\top W_1 - W_2 W_2^\top\bigr) = 0,

so the collapsed flow is preconditioned by the state. With :math:`W_1^\top W_1 = W_2 W_2^\top`
(balanced start) :math:`W_1 W_1^\top = (W W^\top)^{1/2}` and
:math:`W_2^\top W_2 = (W^\top W)^{1/2}`. On the symmetric set it is a scalar factor on the
collapsed flow of the effective observable:

.. math::
    \dot u = \eta_{OV}\,\rho_{OV}(u)\,F_u(u, v),\qquad \dot v = \eta_{QK}\,\rho_{QK}(v)\,F_v(u, v),

with :math:`\rho_{OV} = \sqrt{\delta^2 + 4u^2}` (:math:`\delta = s_O^2 - s_V^2`) and
:math:`\rho_{QK} = \sqrt{A^2 + 4\kappa v^2}` (:math:`A = C_{QK} + S^2/(K+M+1)`,
:math:`\kappa = K(M+1)/(K+M+1)`), derived below, and :math:`\rho = 1` for collapsed circuits.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import sympy as sp

from theory.checks import SYMBOLIC, Check, identity_check, is_zero
from theory.reduced import reduced_system
from theory.symbols import A_qk, C_bal, K, M, N, S_shift, a_, b_, c_, delta, kappa, s_O, s_V, u, v
from theory.parametrization import BASELINE, Parametrization, name_of


# -- conserved quantities -----------------------------------------------------------------
def conserved_quantities(param: Parametrization) -> dict[str, sp.Expr]:
    r"""Conserved quantities of the reduced flow, as expressions in the reduced state.

    * factorized OV: :math:`W_O^\top W_O - W_V W_V^\top = (s_O^2 - s_V^2)\,R R^\top` gives
      :math:`\delta = s_O^2 - s_V^2`;
    * factorized QK: :math:`W_Q W_Q^\top - W_K W_K^\top = (a^2 - K b^2 - (M+1)c^2)\,e e^\top`
      gives :math:`C_{QK}`, and the sum of all keys :math:`W_K\mathbf 1 = (K b + (M+1) c)\,e`
      (the QK gradient's column sums vanish by softmax shift invariance) gives :math:`S`.

    The reduced forms are the squared norms of each factor's coordinates, weighted by
    multiplicities; :func:`conservation_checks` verifies :math:`\dot C = \nabla C\cdot\dot x = 0`.
    """
    sysm = reduced_system(param)
    # Each kind's entry of theory.reduced.REDUCED_CIRCUITS declares its own (factorized: W_O holds s_O, W_V s_V, each
    # direction of squared norm K-1, common factor dropped; QK weighted by the multiplicities 1, K, M+1).
    return dict(sysm.ov.conserved + sysm.qk.conserved)


def conservation_checks(param: Parametrization) -> list[Check]:
    """``d/dt C = 0`` along the reduced flow, for each conserved quantity (symbolic K, M)."""
    sysm = reduced_system(param)
    checks = []
    for name, expr in conserved_quantities(param).items():
        rate = sum(sp.diff(expr, x) * f for x, f in zip(sysm.state, sysm.rhs_display, strict=False))
        checks.append(identity_check(f"{param}-conserved-{name}", rf"\frac{{d}}{{dt}}\,{sp.latex(sp.Symbol(name))} = 0",
                                     rate, 0))
    return checks


# -- rescaling factors ----------------------------------------------------------------------
@dataclass(frozen=True)
class Rescaling:
    r"""The factor :math:`\rho` of one circuit: in the reduced state, and in the effective observable."""

    circuit: str                 # "OV" or "QK"
    in_state: sp.Expr            # rho as a function of the factor coordinates
    in_effective: sp.Expr        # rho as a function of u (OV) or v (QK) and the conserved constants
    balanced: sp.Expr            # in_effective at the balanced start's constants
    constants: dict[str, sp.Expr]  # symbol name -> expression of the constant in the state


def _collapsed_rate(circuit: str) -> sp.Expr:
    """Collapsed rhs of the observable per unit learning rate, with ``p`` a symbol."""
    base = reduced_system(BASELINE)
    return base.rhs_display[0 if circuit == "OV" else 1]


@lru_cache(maxsize=None)
def ov_rescaling() -> Rescaling:
    r""":math:`\rho_{OV}` from :math:`\dot u = \dot s_O s_V + s_O \dot s_V` over the collapsed :math:`\dot u`."""
    f = reduced_system(name_of("collapsed", "factorized"))
    udot = f.rhs_display[0] * s_V + s_O * f.rhs_display[1]
    rho_state = sp.simplify(udot / _collapsed_rate("OV").subs(u, s_O * s_V))
    # Eliminate the factors: x = s_O^2, y = s_V^2 with x - y = delta, x y = u^2 (positive root).
    x, y = sp.symbols("x y", positive=True)
    sols = sp.solve([x - y - delta, x * y - u ** 2], [x, y], dict=True)
    rho_eff = None
    for sol in sols:
        cand = sp.simplify(rho_state.subs({s_O: sp.sqrt(x), s_V: sp.sqrt(y)}).subs(sol))
        if cand.subs({delta: 0, u: 1}).is_positive:
            rho_eff = sp.sqrt(sp.factor(sp.expand(cand ** 2)))
    assert rho_eff is not None
    return Rescaling("OV", rho_state, rho_eff, sp.simplify(rho_eff.subs(delta, 0).subs(u, sp.Symbol("u", positive=True))).subs(sp.Symbol("u", positive=True), u),
                     {"delta": s_O ** 2 - s_V ** 2})


@lru_cache(maxsize=None)
def qk_rescaling() -> Rescaling:
    r""":math:`\rho_{QK}` from :math:`\dot v = \tfrac{d}{dt}[a(b-c)]` over the collapsed :math:`\dot v`.

    Elimination: with :math:`d = b - c` and :math:`S = Kb + (M+1)c`, solve for ``b, c``; then
    :math:`a^2 = C_{QK} + Kb^2 + (M+1)c^2 = A + \kappa d^2`, and :math:`v^2 = a^2 d^2` fixes :math:`d^2`.
    """
    f = reduced_system(name_of("factorized", "collapsed"))
    vdot = sum(sp.diff(f.v_expr, x) * fx for x, fx in zip(f.state, f.rhs_display, strict=False))
    rho_state = sp.simplify(vdot / _collapsed_rate("QK").subs(v, f.v_expr))
    d, D2, a2 = sp.symbols("d D2 a2", positive=True)
    bc = sp.solve([b_ - c_ - d, K * b_ + (M + 1) * c_ - S_shift], [b_, c_], dict=True)[0]
    a2_of_d = sp.expand(C_bal + K * bc[b_] ** 2 + (M + 1) * bc[c_] ** 2)
    kap = sp.simplify(a2_of_d.coeff(d, 2))
    offset = sp.simplify(a2_of_d.subs(d, 0))
    assert is_zero(a2_of_d - (offset + kap * d ** 2)) and is_zero(kap - kappa)
    rho_ad = sp.simplify(rho_state.subs(b_, c_ + d))          # in terms of a and d
    rho_ad = sp.expand(rho_ad).subs(a_ ** 2, a2)
    d2_sol = [s for s in sp.solve(v ** 2 - (A_qk + kappa * D2) * D2, D2)
              if s.subs({A_qk: 1, K: 2, M: 1, v: 1}).is_positive]
    rho_eff = sp.simplify(rho_ad.subs(a2, A_qk + kappa * D2).subs(d, sp.sqrt(D2)).subs(D2, d2_sol[0]))
    # Compact form sqrt(A^2 + 4 kappa v^2) of the derived factor, verified equal (squares, both > 0).
    compact = sp.sqrt(A_qk ** 2 + 4 * kappa * v ** 2)
    if not is_zero(sp.expand(sp.simplify(rho_eff ** 2)) - sp.expand(compact ** 2)):  # pragma: no cover
        raise RuntimeError(f"rho_QK did not reduce to the compact form: {rho_eff}")
    rho_eff = compact
    from theory.symbols import v0
    balanced_A = sp.simplify(offset.subs({C_bal: 0, S_shift: K * K ** sp.Rational(-1, 4) * sp.sqrt(v0)}))
    return Rescaling("QK", rho_state, rho_eff, rho_eff.subs(A_qk, balanced_A),
                     {"A_QK": (a_ ** 2 - K * b_ ** 2 - (M + 1) * c_ ** 2) + (K * b_ + (M + 1) * c_) ** 2 / N})


def rescaling_checks() -> list[Check]:
    r"""The effective forms reproduce the reduced flow exactly: :math:`\rho(\text{obs}(x)) = \rho(x)`."""
    ov, qk = ov_rescaling(), qk_rescaling()
    checks = [
        identity_check("rho-OV-effective", r"\rho_{OV} = s_O^2 + s_V^2 = \sqrt{\delta^2 + 4u^2}",
                       ov.in_effective.subs({delta: ov.constants["delta"], u: s_O * s_V}) ** 2, ov.in_state ** 2),
        identity_check("rho-QK-effective", r"\rho_{QK} = a^2 + \kappa (b-c)^2 = \sqrt{A^2 + 4\kappa v^2}",
                       qk.in_effective.subs({A_qk: qk.constants["A_QK"], v: a_ * (b_ - c_)}) ** 2, qk.in_state ** 2),
    ]
    return checks


def matrix_identity_checks(shape: tuple[int, int, int] = (2, 2, 3)) -> list[Check]:
    r"""The general preconditioned form and balancedness law, on generic symbolic matrices.

    :math:`W_1 \in \mathbb R^{m\times k}`, :math:`W_2 \in \mathbb R^{k\times n}`, a generic
    gradient :math:`G \in \mathbb R^{m\times n}`; flow :math:`\dot W_1 = -\eta G W_2^\top`,
    :math:`\dot W_2 = -\eta W_1^\top G`.
    """
    m, k, n = shape
    eta = sp.Symbol("eta", positive=True)
    W1 = sp.Matrix(m, k, lambda i, j: sp.Symbol(f"x_{i}{j}", real=True))
    W2 = sp.Matrix(k, n, lambda i, j: sp.Symbol(f"y_{i}{j}", real=True))
    G = sp.Matrix(m, n, lambda i, j: sp.Symbol(f"g_{i}{j}", real=True))
    d1, d2 = -eta * G * W2.T, -eta * W1.T * G
    Wdot = d1 * W2 + W1 * d2
    return [
        identity_check("preconditioned-flow", r"\dot W = -\eta\,(W_1W_1^\top G + G\,W_2^\top W_2)",
                       Wdot, -eta * (W1 * W1.T * G + G * W2.T * W2)),
        identity_check("balancedness-law", r"\tfrac{d}{dt}(W_1^\top W_1 - W_2W_2^\top) = 0",
                       d1.T * W1 + W1.T * d1 - d2 * W2.T - W2 * d2.T, sp.zeros(k, k)),
    ]


def rescaling_factor(circuit: str, factorized: bool) -> sp.Expr:
    """:math:`\\rho` of a circuit in its effective observable (1 when collapsed)."""
    if not factorized:
        return sp.Integer(1)
    return ov_rescaling().in_effective if circuit == "OV" else qk_rescaling().in_effective


@lru_cache(maxsize=None)
def effective_system(param: Parametrization) -> tuple[sp.Expr, sp.Expr]:
    r"""The exact 2-D system :math:`(\dot u, \dot v)` with the rescaling factors and ``p`` as a symbol."""
    base = reduced_system(BASELINE)
    rho_ov = Parametrization(param).ov.rescaling_factor()
    rho_qk = Parametrization(param).qk.rescaling_factor()
    return rho_ov * base.rhs_display[0], rho_qk * base.rhs_display[1]


def effective_system_checks(param: Parametrization) -> list[Check]:
    r"""The 2-D system equals the reduced flow pushed to :math:`(u, v)`, on every reduced state."""
    from theory.symbols import P

    sysm = reduced_system(param)
    udot, vdot = effective_system(param)
    subs = {}
    if sysm.ov.factorized:
        subs[delta] = ov_rescaling().constants["delta"]
    if sysm.qk.factorized:
        subs[A_qk] = qk_rescaling().constants["A_QK"]
    checks = []
    for name, obs, target in (("u", sysm.u_expr, udot), ("v", sysm.v_expr, vdot)):
        pushed = sum(sp.diff(obs, x) * fx for x, fx in zip(sysm.state, sysm.rhs_display, strict=False))
        target = target.subs(subs).subs({u: sysm.u_expr, v: sysm.v_expr})
        # Exact: pushed/target simplifies to 1; where sympy leaves square roots, its square simplifies to 1
        # and the continuous, nowhere-zero ratio is +1 at a sample state, hence on the whole domain.
        ratio = sp.simplify(pushed / target)
        sample = {P: sp.Rational(1, 2), K: 3, M: 2, u: 1, v: 1, s_O: sp.Rational(13, 10), s_V: sp.Rational(7, 10),
                  a_: sp.Rational(11, 10), b_: sp.Rational(3, 5), c_: sp.Rational(1, 5)}
        ok = is_zero(ratio - 1) or (is_zero(sp.expand(ratio ** 2) - 1) and bool(sp.N(ratio.subs(sample)) > 0))
        checks.append(Check(f"{param}-effective-{name}", rf"\frac{{d}}{{dt}}{name}(x) = \eta\,\rho\,F_{name}",
                            SYMBOLIC, ok, "simplify(pushed/target) == 1, or its square == 1 and a positive sample"))
    return checks
