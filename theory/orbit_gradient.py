r"""The population loss and its gradient at symmetric points, for symbolic ``K`` and ``M``.

The loss of MODEL.md is invariant under the group :math:`S_K \times S_M` that relabels
classes together with their distinct tokens and permutes the common tokens. A point
fixed by the group (a *symmetric* point) has one value per orbit of matrix entries:

* OV: :math:`A = W_{OV}[y, d_y]`, :math:`B = W_{OV}[k, d_y]` (:math:`k \ne y`),
  :math:`C = W_{OV}[k, c_j]`, :math:`E = W_{OV}[k, q]`;
* QK (only the query's column enters the loss): :math:`\alpha = W_{KQ}[d_k, q]`,
  :math:`\beta = W_{KQ}[c_j, q]`, :math:`\gamma = W_{KQ}[q, q]`.

The gradient of the *full* loss with respect to one entry is computed exactly, for
symbolic ``K`` and ``M``, by perturbing that single entry by :math:`\varepsilon`: the
perturbed sequence loss is written with one "marked" class row and one "marked" common
token, the others kept at their orbit values with symbolic multiplicities
(:math:`K-2` unmarked other classes, :math:`M-1` unmarked commons). The derivative at
:math:`\varepsilon = 0` is the entry's gradient.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import sympy as sp

from theory.symbols import A_, B_, C_, E_, K, M, alpha, beta, gamma

eps = sp.Symbol("varepsilon", real=True)

_COLS = ("d", "c1", "c", "q")
_ROWS = ("own", "mark", "other")


def sequence_loss(scores: dict[str, sp.Expr], ov: dict[tuple[str, str], sp.Expr]) -> sp.Expr:
    r"""Cross-entropy of one sequence :math:`(d_y, c_1, \dots, c_M, q)` with symbolic ``K``, ``M``.

    ``scores`` maps ``d`` (the distinct token), ``c1`` (one marked common token),
    ``c`` (each of the other :math:`M-1` commons) and ``q`` to attention logits.
    ``ov[(row, col)]`` is the OV entry of output row ``own`` (the true class),
    ``mark`` (one other class) or ``other`` (each of the :math:`K-2` remaining classes)
    at the input token ``col``.

    .. math::
        a_j = e^{s_j}/Z,\quad z_k = \sum_j a_j W_{OV}[k, x_j],\quad
        \ell = -z_{own} + \log\bigl(e^{z_{own}} + e^{z_{mark}} + (K-2)e^{z_{other}}\bigr).
    """
    ex = {k: sp.exp(scores[k]) for k in _COLS}
    Z = ex["d"] + ex["c1"] + (M - 1) * ex["c"] + ex["q"]
    att = {k: ex[k] / Z for k in _COLS}
    weight = {"d": 1, "c1": 1, "c": M - 1, "q": 1}
    z = {row: sum(weight[c] * att[c] * ov[(row, c)] for c in _COLS) for row in _ROWS}
    return -z["own"] + sp.log(sp.exp(z["own"]) + sp.exp(z["mark"]) + (K - 2) * sp.exp(z["other"]))


def symmetric_scores() -> dict[str, sp.Expr]:
    """Attention logits of any sequence at a symmetric point."""
    return {"d": alpha, "c1": beta, "c": beta, "q": gamma}


def symmetric_ov() -> dict[tuple[str, str], sp.Expr]:
    """OV entries of any sequence at a symmetric point."""
    ov = {}
    for row in _ROWS:
        ov[(row, "d")] = A_ if row == "own" else B_
        ov[(row, "c1")] = C_
        ov[(row, "c")] = C_
        ov[(row, "q")] = E_
    return ov


def _d_eps(score_key: str | None = None, ov_key: tuple[str, str] | None = None) -> sp.Expr:
    s, o = symmetric_scores(), symmetric_ov()
    if score_key is not None:
        s[score_key] = s[score_key] + eps
    if ov_key is not None:
        o[ov_key] = o[ov_key] + eps
    return sp.diff(sequence_loss(s, o), eps).subs(eps, 0)


@dataclass(frozen=True)
class OrbitGradient:
    r"""Gradient of the population loss :math:`\mathcal L = \frac1K\sum_y \ell_y` at a symmetric point.

    Each field is :math:`\partial\mathcal L/\partial W[i,j]` for one entry of the orbit it names,
    as a sympy expression in ``A, B, C, E, alpha, beta, gamma, K, M``.
    """

    A: sp.Expr      # W_OV[y, d_y]
    B: sp.Expr      # W_OV[k, d_y], k != y
    C: sp.Expr      # W_OV[k, c_j]
    E: sp.Expr      # W_OV[k, q]
    alpha: sp.Expr  # W_KQ[d_k, q]
    beta: sp.Expr   # W_KQ[c_j, q]
    gamma: sp.Expr  # W_KQ[q, q]


@lru_cache(maxsize=1)
def orbit_gradient() -> OrbitGradient:
    r"""Per-entry gradients at a symmetric point, by single-entry perturbation.

    Which sequences an entry enters: :math:`W_{OV}[y,d_y]`, :math:`W_{OV}[k,d_y]` and
    :math:`W_{KQ}[d_y,q]` only sequence :math:`y`; :math:`W_{OV}[k,c_j]` and :math:`W_{OV}[k,q]`
    every sequence (as the true-class row in one, an other-class row in :math:`K-1`);
    :math:`W_{KQ}[c_j,q]` and :math:`W_{KQ}[q,q]` every sequence.
    """
    return OrbitGradient(
        A=_d_eps(ov_key=("own", "d")) / K,
        B=_d_eps(ov_key=("mark", "d")) / K,
        C=(_d_eps(ov_key=("own", "c1")) + (K - 1) * _d_eps(ov_key=("mark", "c1"))) / K,
        E=(_d_eps(ov_key=("own", "q")) + (K - 1) * _d_eps(ov_key=("mark", "q"))) / K,
        alpha=_d_eps(score_key="d") / K,
        beta=_d_eps(score_key="c1"),
        gamma=_d_eps(score_key="q"),
    )


@lru_cache(maxsize=1)
def symmetric_loss() -> sp.Expr:
    """Population loss at a symmetric point (every sequence has the same loss)."""
    return sequence_loss(symmetric_scores(), symmetric_ov())


ORBIT_SIZES: dict[str, sp.Expr] = {
    "A": K, "B": K * (K - 1), "C": K * M, "E": K, "alpha": K, "beta": M, "gamma": sp.Integer(1),
}
"""Number of matrix entries in each orbit (the multiplicity of each orbit coordinate)."""
