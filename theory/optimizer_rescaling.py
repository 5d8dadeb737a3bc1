r"""How factorizing a circuit rescales its learning rate under sign descent (Adam's limit) and momentum.

Gradient flow (:mod:`theory.rescaling`): a factorized scalar :math:`w = xy` moves at
:math:`\dot w = -\eta\,(x^2 + y^2)\,\partial_w\mathcal L`, a factor :math:`\rho_{GD} = x^2 + y^2 =
\sqrt{(x^2-y^2)^2 + 4w^2}` on the collapsed rate, :math:`x^2 - y^2` conserved; balanced, :math:`2|w|`.

**Sign descent** (Adam with :math:`\beta_1 = \beta_2 = 0` as :math:`\varepsilon \to 0`; the limit
:mod:`theory.adam` solves): every entry moves at :math:`\mp\eta`, so
:math:`\dot x = -\eta\,\mathrm{sign}(y\,\partial_w\mathcal L)`, :math:`\dot y = -\eta\,\mathrm{sign}(x\,\partial_w\mathcal L)`
and, for :math:`x, y > 0`,

.. math::
    \dot w = -\eta\,(x + y)\,\mathrm{sign}(\partial_w\mathcal L),\qquad
    \rho_{\rm sign} = x + y = \sqrt{(x - y)^2 + 4w},\qquad \tfrac{d}{dt}(x - y) = 0,

against the collapsed :math:`\dot w = -\eta\,\mathrm{sign}(\partial_w\mathcal L)`: factorization still rescales the
rate by the state, but by :math:`2\sqrt{w}` from a balanced start instead of :math:`2w`, and the conserved
difference is of the factors, not of their squares. For matrices :math:`W = W_1W_2` the same product rule gives
:math:`\dot W = -\eta\,(\mathrm{sign}(G W_2^\top)\,W_2 + W_1\,\mathrm{sign}(W_1^\top G))`, which is no scalar factor on
:math:`\mathrm{sign}(G)`: on MODEL.md's symmetric set the factors' entries of different magnitude move at the same
speed, so the set's orbits separate (the exact reduced maps of :mod:`theory.optimizer_orbits` carry 7-10 orbit
values, not the 2-4 coordinates of gradient flow) and no single :math:`\rho` exists for the effective observable.

**Heavy-ball momentum** :math:`\beta` at step size :math:`\eta\,dt`: as :math:`dt \to 0` it is gradient flow at rate
:math:`\eta/(1-\beta)` on each factor, so factorization rescales exactly as under gradient flow
(:math:`\rho_{GD}`) and momentum only rescales time. At finite steps the reduced momentum map
(:mod:`simulation.optimizer_maps`) is the exact statement.

:func:`sign_rescaling_checks` derives the scalar statements with sympy from the factor dynamics (nothing typed
as the answer); ``tests/unit/theory/test_optimizer_rescaling.py`` checks them and the matrix form against one
step of torch's Adam(0, 0) on random matrices.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import sympy as sp

from theory.checks import Check, identity_check


@dataclass(frozen=True)
class SignRescaling:
    r"""Sign descent's factor on a factorized scalar :math:`w = xy` (``x, y > 0``): in the factors, in
    :math:`w` and the conserved difference :math:`\delta_s = x - y`, at a balanced start (:math:`\delta_s = 0`)."""

    in_state: sp.Expr
    in_effective: sp.Expr
    balanced: sp.Expr
    conserved: sp.Expr
    wdot: sp.Expr
    collapsed_wdot: sp.Expr


X, Y, W, ETA, DELTA_S = sp.symbols("x y w eta delta_s", positive=True)
SIGN = sp.Symbol("s", nonzero=True)
"""sign(dL/dw) in {-1, +1}: a symbol with ``s**2 = 1`` (substituted where it matters)."""


def _sign_step(coefficient: sp.Expr) -> sp.Expr:
    """The sign-descent velocity of an entry whose gradient is ``coefficient * dL/dw``: ``-eta sign(...)``."""
    return -ETA * sp.sign(coefficient) * SIGN


@lru_cache(maxsize=None)
def sign_rescaling() -> SignRescaling:
    r"""Derive :math:`\rho_{\rm sign}` from :math:`\dot w = \dot x\,y + x\,\dot y` (module docstring)."""
    xdot = _sign_step(Y)            # dL/dx = y dL/dw
    ydot = _sign_step(X)            # dL/dy = x dL/dw
    wdot = sp.expand(xdot * Y + X * ydot)
    collapsed = _sign_step(sp.Integer(1))
    rho_state = sp.simplify(wdot / collapsed)
    conserved = X - Y
    # eliminate the factors: x - y = delta_s, x y = w (the positive root)
    sols = sp.solve([X - Y - DELTA_S, X * Y - W], [X, Y], dict=True)
    eff = None
    for sol in sols:
        cand = sp.simplify(rho_state.subs(sol))
        if cand.subs({DELTA_S: 0, W: 1}).is_positive:
            eff = sp.sqrt(sp.factor(sp.expand(cand ** 2)))
    if eff is None:  # pragma: no cover - a wrong derivation, not an input
        raise RuntimeError(f"rho_sign: no positive root among {sols}")
    return SignRescaling(rho_state, eff, sp.simplify(eff.subs(DELTA_S, 0)), conserved, wdot, collapsed)


def sign_rescaling_checks() -> list[Check]:
    r"""Sign descent's rescaling, derived: the factor, its effective form, its balanced value against gradient
    flow's, and the conserved difference (symbolic)."""
    r = sign_rescaling()
    xdot, ydot = _sign_step(Y), _sign_step(X)
    from theory.rescaling import ov_rescaling
    from theory.symbols import u

    gd_balanced = ov_rescaling().balanced.subs(u, W)    # gradient flow's rho at a balanced start (2u), derived there
    return [
        identity_check("sign-rescaling-factor", r"\dot w = -\eta\,(x + y)\,\mathrm{sign}(\partial_w L)",
                       r.wdot, (X + Y) * r.collapsed_wdot),
        identity_check("sign-rescaling-effective", r"\rho_{\rm sign} = x + y = \sqrt{(x-y)^2 + 4w}",
                       r.in_effective.subs({DELTA_S: X - Y, W: X * Y}) ** 2, r.in_state ** 2),
        identity_check("sign-rescaling-balanced", r"\rho_{\rm sign}/\rho_{GD} = 1/\sqrt{w}\ \text{(balanced)}",
                       r.balanced / gd_balanced, 1 / sp.sqrt(W)),
        identity_check("sign-rescaling-conserved", r"\tfrac{d}{dt}(x - y) = 0\ \text{(sign descent)}",
                       xdot - ydot, 0),
    ]


__all__ = ["SignRescaling", "sign_rescaling", "sign_rescaling_checks"]
