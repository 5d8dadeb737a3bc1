r"""Element-wise optimizers on the symmetric set: the parameter orbits, their sizes and per-entry gradients.

The population loss is invariant under :math:`G = S_K \times S_M` (classes relabelled together with
their distinct tokens, commons permuted), acting on every full matrix by permuting token indices and,
for a factorized OV circuit in MODEL.md's *class-indexed* inner basis (inner dimension ``K``), the inner
index with the classes (rank-one QK factors have a trivial inner index). A point fixed by ``G`` has one
value per **orbit of parameter entries**; the orbits that can be nonzero from MODEL.md's start are

==========  ===============================================  =====================
parameter   orbit (one value each)                            entries
==========  ===============================================  =====================
``W_OV``    ``A=[y,d_y]``, ``B=[k,d_y]``, ``C=[k,c_j]``,      ``K, K(K-1), KM, K``
            ``E=[k,q]``
``W_O``     ``Od=[k,k]``, ``Oo=[k,l]``                        ``K, K(K-1)``
``W_V``     ``Vd=[k,d_k]``, ``Vo=[k,d_l]``, ``Vc=[k,c_j]``,   ``K, K(K-1), KM, K``
            ``Vq=[k,q]``
``W_KQ``    ``alpha=[d_k,q]``, ``beta=[c_j,q]``,              ``K, M, 1``
            ``gamma=[q,q]``
``W_K``     ``Kd=[e,d_k]``, ``Kc=[e,c_j]``, ``Kq=[e,q]``      ``K, M, 1``
``W_Q``     ``Qq=[e,q]``                                      ``1``
==========  ===============================================  =====================

Every other entry (``W_KQ`` off the query column, ``W_Q`` off the query column) has zero gradient at
every point (the scores read the query's column only), starts at 0 and stays 0 under any element-wise
optimizer (also under decoupled weight decay).

**Why an element-wise optimizer reduces exactly.** The gradient is ``G``-equivariant, so at a fixed point
it is fixed too: one value per orbit. An optimizer whose state update and step act entry by entry with the
same hyper-parameters on every entry of a parameter (SGD with heavy-ball or Nesterov momentum, Adam/AdamW
with bias correction and decoupled weight decay, sign descent) maps a ``G``-fixed (weights, state) to a
``G``-fixed one; so with state started at zero the whole training map restricts to one scalar per orbit
(weights) plus one per orbit per state buffer. The per-entry gradient of orbit ``o`` is

.. math::
    g_o = \frac{1}{|o|}\,\frac{\partial \mathcal L_{sym}}{\partial w_o},

where :math:`\mathcal L_{sym}(w)` is the loss of the point with orbit values ``w``
(:math:`\partial\mathcal L_{sym}/\partial w_o = \sum_{e\in o} g_e = |o|\,g_o`). Unlike gradient flow, such an
optimizer does *not* keep MODEL.md's line (the step of orbit ``A`` is not :math:`(K-1)/K` times the pattern),
so the reduced state is the orbit values, not ``(u, v)``: the off-line part moves, and only
:math:`u = A - B`, :math:`v = \alpha - \beta` (and :math:`\gamma - \beta`) reach the loss.

Invariance is not stability: whether a small off-set perturbation grows is the question of
:mod:`simulation.transverse`.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Callable

import sympy as sp

from theory.checks import Check, identity_check
from theory.orbit_gradient import ORBIT_SIZES, orbit_gradient, sequence_loss
from theory.parametrization import BASELINE, Parametrization
from theory.symbols import A_, B_, C_, E_, K, M, alpha, beta, gamma, u0, v0


@dataclass(frozen=True)
class Orbit:
    """One orbit of entries of one parameter: ``name`` (a Python identifier), ``param`` (``W_OV`` ...), ``size``."""

    name: str
    param: str
    size: sp.Expr
    circuit: str   # "OV" or "QK"

    @property
    def symbol(self) -> sp.Symbol:
        return sp.Symbol(self.name, real=True)


@dataclass(frozen=True)
class CircuitOrbits:
    """One circuit kind's optimizer orbits (:meth:`theory.parametrization.CircuitKind.optimizer_orbits`): the
    ``orbits`` in the order of the reduced state, ``values(symbols)``: the effective matrix's orbit values (``A, B,
    C, E`` for OV, ``alpha, beta, gamma`` for QK) in the orbit symbols ``{name: symbol}``, and ``start``:
    MODEL.md's start ``{orbit name: value in u0, v0, K}`` (orbits not named start at 0)."""

    orbits: tuple[Orbit, ...]
    values: Callable[[dict[str, sp.Symbol]], dict[sp.Symbol, sp.Expr]]
    start: dict[str, sp.Expr]


def collapsed_orbits(circuit: str) -> CircuitOrbits:
    r"""Collapsed: the orbits are the effective matrix's own (:data:`theory.orbit_gradient.ORBIT_SIZES`); start
    :math:`A = (K-1)u_0/K`, :math:`B = -u_0/K`, :math:`\alpha = v_0`."""
    if circuit == "OV":
        return CircuitOrbits(tuple(Orbit(n, "W_OV", ORBIT_SIZES[n], "OV") for n in ("A", "B", "C", "E")),
                             lambda s: {A_: s["A"], B_: s["B"], C_: s["C"], E_: s["E"]},
                             {"A": (K - 1) * u0 / K, "B": -u0 / K})
    return CircuitOrbits(tuple(Orbit(n, "W_KQ", ORBIT_SIZES[n], "QK") for n in ("alpha", "beta", "gamma")),
                         lambda s: {alpha: s["alpha"], beta: s["beta"], gamma: s["gamma"]}, {"alpha": v0})


def factorized_orbits(circuit: str) -> CircuitOrbits:
    r"""Factorized, class-indexed OV factors: :math:`W_O = O_d I + O_o(J - I)`, :math:`W_V` block-constant,
    :math:`A = O_d V_d + (K-1) O_o V_o`, :math:`B = O_d V_o + O_o V_d + (K-2) O_o V_o`,
    :math:`C = (O_d + (K-1) O_o) V_c`, :math:`E = (O_d + (K-1) O_o) V_q`; start :math:`W_O = \sqrt{u_0}P`,
    :math:`W_V = \sqrt{u_0}PE_d^\top`. Rank-one QK: :math:`W_{KQ}[x, q] = W_K[:, x]^\top W_Q[:, q]`,
    :math:`\alpha = K_d Q_q`, :math:`\beta = K_c Q_q`, :math:`\gamma = K_q Q_q`; start :math:`K_d = K^{-1/4}\sqrt{v_0}`,
    :math:`Q_q = K^{1/4}\sqrt{v_0}`."""
    if circuit == "OV":
        def ov_values(s):
            row_sum = s["Od"] + (K - 1) * s["Oo"]
            return {A_: s["Od"] * s["Vd"] + (K - 1) * s["Oo"] * s["Vo"],
                    B_: s["Od"] * s["Vo"] + s["Oo"] * s["Vd"] + (K - 2) * s["Oo"] * s["Vo"],
                    C_: row_sum * s["Vc"], E_: row_sum * s["Vq"]}
        r0 = sp.sqrt(u0)
        return CircuitOrbits((Orbit("Od", "W_O", K, "OV"), Orbit("Oo", "W_O", K * (K - 1), "OV"),
                              Orbit("Vd", "W_V", K, "OV"), Orbit("Vo", "W_V", K * (K - 1), "OV"),
                              Orbit("Vc", "W_V", K * M, "OV"), Orbit("Vq", "W_V", K, "OV")), ov_values,
                             {"Od": r0 * (K - 1) / K, "Oo": -r0 / K, "Vd": r0 * (K - 1) / K, "Vo": -r0 / K})
    return CircuitOrbits((Orbit("Kd", "W_K", K, "QK"), Orbit("Kc", "W_K", M, "QK"), Orbit("Kq", "W_K", sp.Integer(1), "QK"),
                          Orbit("Qq", "W_Q", sp.Integer(1), "QK")),
                         lambda s: {alpha: s["Kd"] * s["Qq"], beta: s["Kc"] * s["Qq"], gamma: s["Kq"] * s["Qq"]},
                         {"Kd": K ** sp.Rational(-1, 4) * sp.sqrt(v0), "Qq": K ** sp.Rational(1, 4) * sp.sqrt(v0)})


def _circuit_orbits(param: str) -> tuple[CircuitOrbits, CircuitOrbits]:
    """``(OV, QK)`` of ``param``'s kinds; ``ValueError`` where a kind declares none."""
    p = Parametrization(param)
    out = []
    for c in (p.ov, p.qk):
        co = c.kind.optimizer_orbits(c.name)
        if co is None:
            raise ValueError(f"{param}: the {c.kind.name} kind has no optimizer orbits ({c.name})")
        out.append(co)
    return out[0], out[1]


def orbits(param: str) -> tuple[Orbit, ...]:
    """The moving orbits of ``param``'s parameters, OV first, in the order of the reduced state (each circuit's
    from its kind: :meth:`theory.parametrization.CircuitKind.optimizer_orbits`)."""
    ov, qk = _circuit_orbits(param)
    return ov.orbits + qk.orbits


def collapsed_orbit_values(param: str) -> dict[sp.Symbol, sp.Expr]:
    r"""Orbit values ``A, B, C, E, alpha, beta, gamma`` of the effective matrices, in ``param``'s orbit symbols
    (each kind's :attr:`CircuitOrbits.values`)."""
    s = {o.name: o.symbol for o in orbits(param)}
    ov, qk = _circuit_orbits(param)
    return {**ov.values(s), **qk.values(s)}


def _symmetric_loss_collapsed() -> sp.Expr:
    scores = {"d": alpha, "c1": beta, "c": beta, "q": gamma}
    ov = {}
    for row in ("own", "mark", "other"):
        ov[(row, "d")] = A_ if row == "own" else B_
        for col in ("c1", "c"):
            ov[(row, col)] = C_
        ov[(row, "q")] = E_
    return sequence_loss(scores, ov)


@cache
def symmetric_loss(param: str) -> sp.Expr:
    r""":math:`\mathcal L_{sym}(w)`: the population loss at the symmetric point with orbit values ``w``."""
    return _symmetric_loss_collapsed().subs(collapsed_orbit_values(param))


@cache
def entry_gradients(param: str) -> tuple[sp.Expr, ...]:
    r"""Per-entry gradient :math:`g_o = \partial_{w_o}\mathcal L_{sym}/|o|` of every orbit (order of :func:`orbits`)."""
    L = symmetric_loss(param)
    return tuple(sp.diff(L, o.symbol) / o.size for o in orbits(param))


def observables(param: str) -> tuple[sp.Expr, ...]:
    r"""``(u, v, p, 1 - p, loss)`` of a symmetric point: :math:`u = A - B`, :math:`v = \alpha - \beta`,
    :math:`p = e^{\alpha}/(e^{\alpha} + M e^{\beta} + e^{\gamma})`, and the residual written with
    :math:`e^{\beta-\alpha}, e^{\gamma-\alpha}` (no cancellation)."""
    c = collapsed_orbit_values(param)
    a, b, g = c[alpha], c[beta], c[gamma]
    rest = M * sp.exp(b - a) + sp.exp(g - a)
    return (c[A_] - c[B_], a - b, 1 / (1 + rest), rest / (1 + rest), symmetric_loss(param))


def initial_values(param: str) -> tuple[sp.Expr, ...]:
    r"""MODEL.md's start with effective ``u0, v0`` in orbit values (each kind's :attr:`CircuitOrbits.start`;
    every other orbit 0)."""
    ov, qk = _circuit_orbits(param)
    vals = {**ov.start, **qk.start}
    return tuple(vals.get(o.name, sp.Integer(0)) for o in orbits(param))


def log_residual_on_line() -> sp.Expr:
    r""":math:`\log(1-p) = \log(M+1) - \operatorname{logaddexp}(v, \log(M+1))` on MODEL.md's line (no underflow)."""
    from sympy.codegen.numpy_nodes import logaddexp

    from theory.symbols import v
    return sp.log(M + 1) - logaddexp(v, sp.log(M + 1))


@cache
def line_checks() -> tuple[Check, ...]:
    """``exp(log_residual_on_line) = 1 - p(v)`` (:func:`theory.symmetric_line.p_of_v`)."""
    from theory.symmetric_line import p_of_v
    lr = log_residual_on_line()
    explicit = lr.replace(lambda e: e.func.__name__ == "logaddexp",
                          lambda e: sp.log(sp.exp(e.args[0]) + sp.exp(e.args[1])))
    return (identity_check("log-residual-on-line", r"\log(1-p) = \log(M+1) - \log(e^v + M + 1)",
                           sp.exp(explicit), 1 - p_of_v()),)


@cache
def orbit_checks(param: str) -> tuple[Check, ...]:
    """Exact checks: sizes partition each parameter; collapsed entry gradients equal :mod:`theory.orbit_gradient`'s;
    the start has ``u = u0``, ``v = v0``."""
    from theory.symbols import M as M_
    checks: list[Check] = []
    D = K + M_ + 1
    full = {"W_OV": K * D, "W_O": K * K, "W_V": K * D, "W_KQ": D, "W_K": D, "W_Q": sp.Integer(1)}
    for name in sorted({o.param for o in orbits(param)}):
        checks.append(identity_check(f"{param}-orbits-partition-{name}",
                                     rf"\sum_o |o| = \#\text{{entries of }} {name}"
                                     + (r"\text{ (query column)}" if name in ("W_KQ", "W_Q") else ""),
                                     sum(o.size for o in orbits(param) if o.param == name), full[name]))
    if Parametrization(param) == BASELINE:
        g = orbit_gradient()
        got = dict(zip((o.name for o in orbits(param)), entry_gradients(param)))
        for n in ("A", "B", "C", "E", "alpha", "beta", "gamma"):
            checks.append(identity_check(f"CACO-entry-gradient-{n}", rf"\partial_{{{n}}}\mathcal L_{{sym}}/|{n}| = G_{{{n}}}",
                                         sp.exp(0) * got[n], getattr(g, n)))
    start = dict(zip((o.symbol for o in orbits(param)), initial_values(param)))
    u_, v_ = observables(param)[:2]
    checks.append(identity_check(f"{param}-orbit-start", r"(u, v) = (u_0, v_0) \text{ at the start}",
                                 sp.Matrix([u_.subs(start), v_.subs(start)]), sp.Matrix([u0, v0])))
    return tuple(checks)


__all__ = [
    "CircuitOrbits", "collapsed_orbits", "factorized_orbits",
    "Orbit",
    "collapsed_orbit_values",
    "entry_gradients",
    "initial_values", "line_checks", "log_residual_on_line",
    "observables",
    "orbit_checks",
    "orbits",
    "symmetric_loss",
]
