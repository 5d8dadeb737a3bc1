r"""Ordering of attention sharpness across the parametrizations at matched loss.

At matched loss the margin is matched (:math:`\mathcal L \simeq (K-1)e^{-u}`), so parametrizations
are compared through the residual :math:`1 - p` as a function of ``u`` (:mod:`theory.asymptotics`).
Pairwise limits of residual ratios as :math:`u \to \infty` give the asymptotic order; the sign of
:math:`\partial_r (1-p)` gives the effect of :math:`r = \eta_{QK}/\eta_{OV}`; the rescaling factors
at small states give the effect of the initialisation scale (factorized circuits start slow:
:math:`\rho_{OV} = 2u < 1` for :math:`u < 1/2`, :math:`\rho_{QK} < 1` while
:math:`A^2 + 4\kappa v^2 < 1`, and :math:`A \propto v_0` at the balanced start).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from itertools import combinations

import sympy as sp

from theory.asymptotics import asymptotic_laws
from theory.checks import SYMBOLIC, Check, is_zero, tag
from theory.parametrization import Parametrization
from theory.rescaling import qk_rescaling
from theory.symbols import A_qk, eta_ov, eta_qk, kappa, r, u, v

ORDER = Parametrization.all()
_U = sp.Symbol("u", positive=True)


def _residual_u(param: Parametrization | str) -> sp.Expr:
    return asymptotic_laws(param).residual_of_u_expanded.subs(eta_qk, r * eta_ov).subs(u, _U)


@dataclass(frozen=True)
class Ordering:
    """Asymptotic sharpness order at matched loss (sharpest first) and the evidence."""

    order: tuple[str, ...]
    pairwise: dict[tuple[str, str], sp.Expr]   # lim_{u->oo} residual_A / residual_B
    ratio_effect: dict[str, sp.Expr]           # d log(1-p) / d log r at matched u
    checks: tuple[Check, ...]
    slow_start: dict[str, sp.Expr]             # where rho < 1 (factorized circuits learn slower than collapsed)


def rank_by_pairwise_limits(pairwise: dict[tuple[str, str], sp.Expr], names: tuple[str, ...]) -> tuple[str, ...]:
    r"""Sharpest first: ``a`` beats ``b`` when :math:`\lim (1-p)_a/(1-p)_b < 1` (0 counts, ``oo`` loses)."""
    wins = {p: 0 for p in names}
    for (a, b), lim in pairwise.items():
        if lim == 0 or (lim.is_finite and lim < 1):
            wins[a] += 1
        elif lim == sp.oo or (lim.is_finite and lim > 1):
            wins[b] += 1
    return tuple(sorted(names, key=lambda p: -wins[p]))


def order_check(a: str, b: str, lim_ab: sp.Expr, lim_ba: sp.Expr, order: tuple[str, ...]) -> Check:
    r"""``order-a-vs-b``: the two limits :math:`\lim (1-p)_a/(1-p)_b` and :math:`\lim (1-p)_b/(1-p)_a`
    (each computed by ``sympy.limit``) agree (product 1, or one 0 and the other ``oo``), they are not a
    tie, and the stated order puts the parametrization with the smaller residual first.
    """
    consistent = ((lim_ab == 0 and lim_ba == sp.oo) or (lim_ab == sp.oo and lim_ba == 0)
                  or (bool(lim_ab.is_finite) and bool(lim_ab.is_positive) and is_zero(lim_ab * lim_ba - 1)))
    a_sharper = lim_ab == 0 or (bool(lim_ab.is_finite) and bool(lim_ab < 1))
    b_sharper = lim_ab == sp.oo or (bool(lim_ab.is_finite) and bool(lim_ab > 1))
    placed_first = a if order.index(a) < order.index(b) else b
    ok = consistent and (a_sharper or b_sharper) and placed_first == (a if a_sharper else b)
    first, second = (a, b) if placed_first == a else (b, a)
    return Check(f"order-{a}-vs-{b}",
                 rf"(1-p)_{{{first}}} < (1-p)_{{{second}}} \text{{ as }} u\to\infty:\ "
                 rf"\lim (1-p)_{{{a}}}/(1-p)_{{{b}}} = {sp.latex(lim_ab)},\ \lim (1-p)_{{{b}}}/(1-p)_{{{a}}} = {sp.latex(lim_ba)}",
                 SYMBOLIC, bool(ok), "sympy.limit(u -> oo) of both ratios; the order must agree with them")


def slow_start_check(threshold: sp.Expr) -> Check:
    r"""``qk-slow-start``: :math:`\rho_{QK}(v) < 1` exactly for :math:`0 \le v <` ``threshold``.

    Established without using ``threshold``: :math:`\rho_{QK}^2` is increasing in :math:`v > 0`
    (its derivative is positive for positive symbols), and ``sympy.solve`` finds the positive root of
    :math:`\rho_{QK}^2 = 1`; the check passes when that root equals ``threshold``.
    """
    vp = sp.Symbol("v", positive=True)
    Ap = sp.Symbol("A_QK", positive=True)
    rho2 = (qk_rescaling().in_effective ** 2).subs({v: vp, A_qk: Ap})
    increasing = bool(sp.simplify(sp.diff(rho2, vp)).is_positive)
    roots = [x for x in sp.solve(sp.Eq(rho2, 1), vp)]
    thr = threshold.subs(A_qk, Ap).replace(lambda e: isinstance(e, sp.Max), lambda e: [x for x in e.args if x != 0][0])
    # Both sides are non-negative square roots where a root exists (A < 1): compare their squares.
    ok = increasing and len(roots) == 1 and is_zero(sp.expand(roots[0] ** 2 - thr ** 2))
    return Check("qk-slow-start", r"\rho_{QK}(v) < 1 \iff 0 \le v < " + sp.latex(threshold), SYMBOLIC, ok,
                 "d/dv rho_QK^2 > 0 for v > 0, and sympy.solve(rho_QK^2 = 1) gives the threshold")


def ratio_check(param: Parametrization, effect: sp.Expr) -> Check:
    r"""``ratio-sharpens-param``: the limit of :math:`r\,\partial_r\log(1-p)` at matched ``u`` is negative."""
    return Check(f"ratio-sharpens-{param}",
                 rf"\lim_{{u\to\infty}} \partial\log(1-p)/\partial\log r = {sp.latex(effect)} < 0",
                 SYMBOLIC, bool(effect.is_negative), "sympy.limit(u -> oo) of r d/dr log(1-p) at matched u")


@lru_cache(maxsize=1)
def sharpness_ordering() -> Ordering:
    r"""Rank the four parametrizations by :math:`1 - p` at matched ``u`` as :math:`u \to \infty`."""
    res = {p: _residual_u(p) for p in ORDER}
    pairwise: dict[tuple[str, str], sp.Expr] = {}
    reverse: dict[tuple[str, str], sp.Expr] = {}
    for a, b in combinations(ORDER, 2):
        pairwise[(a, b)] = sp.limit(res[a] / res[b], _U, sp.oo)
        reverse[(a, b)] = sp.limit(res[b] / res[a], _U, sp.oo)
    order = rank_by_pairwise_limits(pairwise, ORDER)
    checks = tag("order-limit", [order_check(a, b, pairwise[(a, b)], reverse[(a, b)], order) for a, b in pairwise])
    ratio_effect: dict[str, sp.Expr] = {}
    for p in ORDER:
        ratio_effect[p] = sp.simplify(sp.limit(sp.diff(sp.log(res[p]), r) * r, _U, sp.oo))
        checks += tag("ratio-limit", [ratio_check(p, ratio_effect[p])])
    threshold = sp.sqrt(sp.Max(0, 1 - A_qk ** 2) / (4 * kappa))
    slow = {"OV": sp.Lt(u, sp.Rational(1, 2)), "QK": sp.Lt(v, threshold)}
    checks.append(slow_start_check(threshold))
    return Ordering(order, pairwise, ratio_effect, tuple(checks), slow)
