r"""Initial states of :class:`~validation.attention.QKOVAttention` for the synthetic model.

* :func:`symmetric_model` — MODEL.md's symmetric start from effective values ``u0, v0``:
  collapsed circuits set to :math:`u_0 P E_d^\top` / :math:`W_{KQ}[d_k, q] = v_0`, factorized
  circuits to the balanced factors of those matrices (:func:`simulation.full_matrix.balanced_state`).
* :func:`random_model` — every parameter i.i.d. :math:`\mathcal N(0, \text{init\_std}^2)` from a seeded
  generator.
"""

from __future__ import annotations

import torch

from theory.parametrization import Parametrization

from simulation.full_matrix import balanced_state
from simulation.model_matrices import symmetric_ov
from validation.attention import QKOVAttention


def symmetric_model(param: Parametrization, K: int, M: int, u0: float, v0: float, *, rank_qk: int | None = None,
                    rank_ov: int | None = None, ov_basis: str = "svd",
                    dtype: torch.dtype = torch.float64) -> QKOVAttention:
    r"""Model on MODEL.md's symmetric set at effective ``(u0, v0)``; ``d_in = K+M+1``, ``d_out = K``.

    Factorized circuits use ranks ``rank_qk`` (default 1) and ``rank_ov`` (default ``K-1``) and need
    ``v0 > 0`` / ``u0 > 0`` (zero is a fixed point). ``ov_basis="class"`` takes the balanced split with
    the class-indexed inner basis (inner dimension ``K``, :math:`R = U`):
    :math:`W_O = \sqrt{u_0}\,P`, :math:`W_V = \sqrt{u_0}\,P E_d^\top` — the basis in which sign descent
    (Adam) keeps the symmetric set (:mod:`theory.adam`); gradient flow does not depend on the basis.
    """
    if ov_basis not in ("svd", "class"):
        raise ValueError(f"ov_basis {ov_basis!r}: must be svd or class")
    D = K + M + 1
    if ov_basis == "class":
        rank_ov = K
    model = QKOVAttention(D, K, param, rank_qk=rank_qk or 1, rank_ov=rank_ov or K - 1, dtype=dtype)
    # The matrices are simulation's (one definition of MODEL.md's start); their names are the module's.
    state = balanced_state(param, K, M, u0, v0, rank_qk=model.rank_qk, rank_ov=model.rank_ov)
    if ov_basis == "class" and Parametrization(param).ov.factorized:
        direction = symmetric_ov(K, M, 1.0)                     # P E_d^T, (K, D)
        state["W_O"] = u0 ** 0.5 * direction[:, :K]             # sqrt(u0) P
        state["W_V"] = u0 ** 0.5 * direction
    with torch.no_grad():
        for name, value in state.items():
            getattr(model, name).copy_(torch.as_tensor(value, dtype=dtype))
    return model


def random_model(param: Parametrization, d_in: int, d_out: int, init_std: float, seed: int, *,
                 rank_qk: int | None = None, rank_ov: int | None = None, scale: float = 1.0,
                 dtype: torch.dtype = torch.float64) -> QKOVAttention:
    """Model with i.i.d. Gaussian parameters of standard deviation ``init_std`` (seeded)."""
    gen = torch.Generator().manual_seed(seed)
    return QKOVAttention(d_in, d_out, param, rank_qk=rank_qk, rank_ov=rank_ov, scale=scale,
                         init_std=init_std, generator=gen, dtype=dtype)
