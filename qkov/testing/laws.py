r"""Laws and their remainders as objects an assertion can check and name.

A :class:`Law` predicts one observable (``u``, ``v``, ``residual`` :math:`= 1 - p`, ``loss``) along a
trajectory; a :class:`Remainder` bounds its error there, per time, in the law's error measure
(absolute, or relative :math:`|\text{law}/\text{solution} - 1|`). The tolerance of a property is the law's
remainder, written once with its derivation, never a global epsilon.

Built in: theory's next-order laws with their stated remainders (:data:`NEXT_ORDER`,
:data:`NEXT_ORDER_REMAINDERS`), derived in :mod:`theory.asymptotics_next`: the clock is exact up to
:math:`h''/h \le (2[\mathrm{FO}] + 2a + 1)/u^2` (:math:`a` = :attr:`Case.attention_factor`: the factor
:math:`1/\rho_{OV}` gives :math:`2/u^2` for factorized OV, the attention factor :math:`e^{-\varepsilon u}` at
most :math:`2a/u^2`) plus the start's share :math:`t_0/t` of the clock (:func:`start_time`), so

.. math::
    |\delta u| \le 4\,(2[\mathrm{FO}] + 2a + 1)/u^2 + 2\,t_0/t,\qquad
    |\delta v| \le k_v\,|\delta u|/u,\qquad |\delta(1-p)|/(1-p) \le 1.5\,|\delta v|

(factor 4 for the unexpanded higher terms; :math:`k_v = 2` for collapsed OV, where :math:`v \sim 2\log u`,
else 1; :math:`e^{\delta v} - 1 \le 1.5\,\delta v` for :math:`\delta v \le 0.8`). And the leading law of
the residual at matched ``u`` (:data:`LEADING_RESIDUAL_OF_U`) with its envelope
:math:`\mathrm{expm1}((1 + a)\log(u)/u)` (collapsed OV; :data:`LEADING_RESIDUAL_ENVELOPE`).

A user-declared law is one line::

    wrong = Law("1.2 x next-order 1-p", "residual", lambda case, tr: 1.2 * next_order_law(case, tr.t)["residual"],
                error="relative")
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Literal

import numpy as np

from qkov.testing.cases import Case
from qkov.testing.helpers import law_of_u, next_order_law

if TYPE_CHECKING:
    from qkov.testing.helpers import CaseTrajectory

Observable = Literal["u", "v", "p", "residual", "loss"]
ErrorKind = Literal["absolute", "relative"]


@dataclass(frozen=True)
class Law:
    r"""A law of one observable: ``predict(case, trajectory) -> (T,)``, its value at the trajectory's times.

    ``error``: ``"absolute"`` (:math:`|\text{law} - \text{solution}|`) or ``"relative"``
    (:math:`|\text{law}/\text{solution} - 1|`), the measure its remainder bounds. A law stated at matched
    loss may read the trajectory's own ``u``; a law in ``t`` reads ``trajectory.t``.
    """

    name: str
    observable: Observable
    predict: Callable[[Case, "CaseTrajectory"], np.ndarray]
    error: ErrorKind = "absolute"

    def errors(self, tr: "CaseTrajectory") -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(predicted, solution, error)`` along ``tr``, each ``(T,)``."""
        pred = np.broadcast_to(np.asarray(self.predict(tr.case, tr), dtype=float), tr.t.shape)
        sol = np.asarray(getattr(tr, self.observable), dtype=float)
        err = np.abs(pred / sol - 1) if self.error == "relative" else np.abs(pred - sol)
        return pred, sol, err


@dataclass(frozen=True)
class Remainder:
    """A bound on a law's error along a trajectory: ``bound(case, trajectory) -> (T,)``; ``formula`` says it in
    words (it is printed with a failure)."""

    formula: str
    bound: Callable[[Case, "CaseTrajectory"], np.ndarray]

    def __call__(self, case: Case, tr: "CaseTrajectory") -> np.ndarray:
        return np.broadcast_to(np.asarray(self.bound(case, tr), dtype=float), tr.t.shape)


def start_time(case: Case) -> float:
    r"""A bound on the clock's start share :math:`t_0`: the time the flow spends below :math:`u = 3`, where
    :math:`dt/du \le (e^3 + K)(M+2)e^{|v_0|}/(\rho_{OV}(u)\,p)` and :math:`\int du/\rho \le 1 + \log(3/u_0)`."""
    return float((np.exp(3) + case.K) * (case.M + 2) * (1 + np.log(3 / case.u0)))


def next_order_u_remainder(case: Case, u: np.ndarray, t: np.ndarray) -> np.ndarray:
    r""":math:`|\delta u| \le 4\,(2[\mathrm{FO}] + 2a + 1)/u^2 + 2\,t_0/t` (module docstring), ``(T,)``."""
    return 4 * (2 * case.factorized_ov + 2 * case.attention_factor + 1) / u ** 2 + 2 * start_time(case) / t


def _dv(case: Case, tr: "CaseTrajectory") -> np.ndarray:
    return (1 if case.factorized_ov else 2) * next_order_u_remainder(case, tr.u, tr.t) / tr.u


NEXT_ORDER: dict[str, Law] = {
    "u": Law("next-order u(t)", "u", lambda c, tr: next_order_law(c, tr.t)["u"]),
    "v": Law("next-order v(t)", "v", lambda c, tr: next_order_law(c, tr.t)["v"]),
    "residual": Law("next-order 1-p(t)", "residual", lambda c, tr: next_order_law(c, tr.t)["residual"],
                    error="relative"),
}
"""Theory's next-order laws of ``u``, ``v`` (absolute error) and ``1 - p`` (relative), evaluated at ``t`` alone."""

NEXT_ORDER_REMAINDERS: dict[str, Remainder] = {
    "u": Remainder("|du| <= 4(2[FO] + 2a + 1)/u^2 + 2 t0/t",
                   lambda c, tr: next_order_u_remainder(c, tr.u, tr.t)),
    "v": Remainder("|dv| <= k_v |du|/u (k_v = 2 collapsed OV, else 1)", _dv),
    "residual": Remainder("|d(1-p)|/(1-p) <= 1.5 k_v |du|/u", lambda c, tr: 1.5 * _dv(c, tr)),
}
"""The next-order laws' remainders (module docstring), valid for :attr:`Case.attention_factor` ``<= 2`` and
``t >= 1e6`` (where the expansion parameter :math:`(1 + a)/u` is below 1/3)."""

LEADING_RESIDUAL_OF_U = Law("leading 1-p(u)", "residual",
                            lambda c, tr: law_of_u(c, "residual_of_u", tr.t, tr.u), error="relative")
"""The leading law of :math:`1 - p` at the trajectory's own ``u`` (matched loss)."""

LEADING_RESIDUAL_ENVELOPE = Remainder(
    "expm1((1 + a) log(u)/u)", lambda c, tr: np.expm1((1 + c.attention_factor) * np.log(tr.u) / tr.u))
r"""Envelope of :data:`LEADING_RESIDUAL_OF_U`, collapsed OV: the leading law drops the attention factor and the
:math:`(M+1)v` and log-log terms, at most :math:`(1 + a)\log(u)/u` in the exponent ``v``."""


__all__ = ["Law", "Remainder", "NEXT_ORDER", "NEXT_ORDER_REMAINDERS", "LEADING_RESIDUAL_OF_U",
           "LEADING_RESIDUAL_ENVELOPE", "start_time", "next_order_u_remainder"]
