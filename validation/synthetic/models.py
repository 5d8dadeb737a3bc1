r"""Initial states of :class:`~validation.attention.QKOVAttention` for the synthetic model.

* :func:`symmetric_model` — MODEL.md's symmetric start from effective values ``u0, v0``:
  collapsed circuits set to :math:`u_0 P E_d^\top` / :math:`W_{KQ}[d_k, q] = v_0`, factorized
  circuits to the balanced factors of those matrices (:mod:`simulation.model_matrices`).
* :func:`random_model` — every parameter i.i.d. :math:`\mathcal N(0, \text{init\_std}^2)` from a seeded
  generator.
"""

from __future__ import annotations

import torch

from simulation.model_matrices import (balanced_ov_factors, balanced_qk_factors, symmetric_ov,
                                       symmetric_qk)
from validation.attention import QKOVAttention


def symmetric_model(param: str, K: int, M: int, u0: float, v0: float, *, rank_qk: int | None = None,
                    rank_ov: int | None = None, dtype: torch.dtype = torch.float64) -> QKOVAttention:
    """Model on MODEL.md's symmetric set at effective ``(u0, v0)``; ``d_in = K+M+1``, ``d_out = K``.

    Factorized circuits use ranks ``rank_qk`` (default 1) and ``rank_ov`` (default ``K-1``) and need
    ``v0 > 0`` / ``u0 > 0`` (zero is a fixed point).
    """
    D = K + M + 1
    model = QKOVAttention(D, K, param, rank_qk=rank_qk or 1, rank_ov=rank_ov or K - 1, dtype=dtype)
    t = lambda a: torch.as_tensor(a, dtype=dtype)  # noqa: E731
    with torch.no_grad():
        if model.qk_factorized:
            WK, WQ = balanced_qk_factors(K, M, v0, rank=model.rank_qk)
            model.W_K.copy_(t(WK))
            model.W_Q.copy_(t(WQ))
        else:
            model.W_KQ.copy_(t(symmetric_qk(K, M, v0)))
        if model.ov_factorized:
            WO, WV = balanced_ov_factors(K, M, u0, rank=model.rank_ov)
            model.W_O.copy_(t(WO))
            model.W_V.copy_(t(WV))
        else:
            model.W_OV.copy_(t(symmetric_ov(K, M, u0)))
    return model


def random_model(param: str, d_in: int, d_out: int, init_std: float, seed: int, *,
                 rank_qk: int | None = None, rank_ov: int | None = None, scale: float = 1.0,
                 dtype: torch.dtype = torch.float64) -> QKOVAttention:
    """Model with i.i.d. Gaussian parameters of standard deviation ``init_std`` (seeded)."""
    gen = torch.Generator().manual_seed(seed)
    return QKOVAttention(d_in, d_out, param, rank_qk=rank_qk, rank_ov=rank_ov, scale=scale,
                         init_std=init_std, generator=gen, dtype=dtype)
