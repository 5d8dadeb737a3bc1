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
from theory.checks import Check
from theory.parametrization import PARAMETRIZATIONS
from theory.rescaling import qk_rescaling
from theory.symbols import A_qk, eta_ov, eta_qk, kappa, r, u, v

ORDER = PARAMETRIZATIONS
_U = sp.Symbol("u", positive=True)


def _residual_u(param: str) -> sp.Expr:
    return asymptotic_laws(param).residual_of_u_expanded.subs(eta_qk, r * eta_ov).subs(u, _U)


@dataclass(frozen=True)
class Ordering:
    """Asymptotic sharpness order at matched loss (sharpest first) and the evidence."""

    order: tuple[str, ...]
    pairwise: dict[tuple[str, str], sp.Expr]   # lim_{u->oo} residual_A / residual_B
    ratio_effect: dict[str, sp.Expr]           # d log(1-p) / d log r at matched u
    checks: tuple[Check, ...]
    slow_start: dict[str, sp.Expr]             # where rho < 1 (factorized circuits learn slower than collapsed)


@lru_cache(maxsize=1)
def sharpness_ordering() -> Ordering:
    r"""Rank the four parametrizations by :math:`1 - p` at matched ``u`` as :math:`u \to \infty`."""
    res = {p: _residual_u(p) for p in ORDER}
    pairwise: dict[tuple[str, str], sp.Expr] = {}
    checks = []
    for a, b in combinations(ORDER, 2):
        lim = sp.limit(res[a] / res[b], _U, sp.oo)
        pairwise[(a, b)] = lim
        ok = lim in (sp.Integer(0), sp.oo) or (lim.is_positive and lim.is_finite)
        checks.append(Check(f"order-{a}-vs-{b}", rf"\lim_{{u\to\infty}} (1-p)_{{{a}}}/(1-p)_{{{b}}} = {sp.latex(lim)}",
                            "sympy: limit(u -> oo)", bool(ok)))
    # Sharper = smaller residual: count for each parametrization how many it beats.
    wins = {p: 0 for p in ORDER}
    for (a, b), lim in pairwise.items():
        if lim == 0:
            wins[a] += 1
        elif lim == sp.oo:
            wins[b] += 1
        elif lim.is_finite and lim < 1:
            wins[a] += 1
        elif lim.is_finite and lim > 1:
            wins[b] += 1
    order = tuple(sorted(ORDER, key=lambda p: -wins[p]))
    ratio_effect = {}
    for p in ORDER:
        eff = sp.limit(sp.diff(sp.log(res[p]), r) * r, _U, sp.oo)
        ratio_effect[p] = sp.simplify(eff)
        checks.append(Check(f"ratio-sharpens-{p}", rf"\lim_{{u\to\infty}} \partial\log(1-p)/\partial\log r = {sp.latex(ratio_effect[p])} < 0",
                            "sympy: limit of r * d/dr log(1-p) at matched u", bool(ratio_effect[p] < 0)))
    rho_qk = qk_rescaling().in_effective
    slow = {"OV": sp.Lt(u, sp.Rational(1, 2)),
            "QK": sp.Lt(v, sp.sqrt(sp.Max(0, 1 - A_qk ** 2) / (4 * kappa)))}
    checks.append(Check("qk-slow-start", r"\rho_{QK}(v) < 1 \iff A^2 + 4\kappa v^2 < 1",
                        "sympy: solve rho_QK^2 = 1 for v", bool(sp.simplify((rho_qk ** 2 - 1).subs(
                            v, sp.sqrt((1 - A_qk ** 2) / (4 * kappa)))) == 0)))
    return Ordering(order, pairwise, ratio_effect, tuple(checks), slow)
