r"""The full matrices of the orthogonal model (MODEL.md): token layout, initial states, observables.

Token indices (one-hot embeddings :math:`e_1..e_D`, :math:`D = K + M + 1`):
distinct tokens :math:`d_k = k` for :math:`k = 0..K-1`, common tokens :math:`c_j = K + j`
for :math:`j = 0..M-1`, the query :math:`q = K + M`. The sequence of class :math:`y` is
:math:`(d_y, c_1, \dots, c_M, q)`, length :math:`L = M + 2`.

Everything here is float64 numpy and works on *effective* (collapsed) matrices
:math:`W_{KQ} \in \mathbb R^{D\times D}`, :math:`W_{OV} \in \mathbb R^{K\times D}`, so that the
four parametrizations are compared on the same quantities.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import log_softmax, softmax

from theory.parametrization import KINDS


@dataclass(frozen=True)
class TokenLayout:
    """Index layout of the vocabulary for ``K`` classes and ``M`` common tokens."""

    K: int
    M: int

    @property
    def D(self) -> int:
        return self.K + self.M + 1

    @property
    def distinct(self) -> np.ndarray:
        return np.arange(self.K)

    @property
    def common(self) -> np.ndarray:
        return np.arange(self.K, self.K + self.M)

    @property
    def query(self) -> int:
        return self.K + self.M

    def sequences(self) -> np.ndarray:
        """Token ids of the ``K`` sequences, shape ``(K, L)``: row ``y`` is ``(d_y, c_1..c_M, q)``."""
        rows = [np.concatenate([[y], self.common, [self.query]]) for y in range(self.K)]
        return np.asarray(rows, dtype=np.int64)

    def one_hot_population(self) -> np.ndarray:
        """The population as one-hot inputs, shape ``(K, L, D)``; labels are ``arange(K)``."""
        return np.eye(self.D)[self.sequences()]


def symmetric_ov(K: int, M: int, u: float) -> np.ndarray:
    r"""Collapsed OV on the symmetric line: :math:`W_{OV} = u\,P E_d^\top`, shape ``(K, D)`` (the kind's start)."""
    return KINDS["C"].start("OV", K, M, u)[0]


def symmetric_qk(K: int, M: int, v: float) -> np.ndarray:
    r"""Collapsed QK of MODEL.md's symmetric start: :math:`W_{KQ}[d_k, q] = v`, else 0; ``(D, D)``."""
    return KINDS["C"].start("QK", K, M, v)[0]


def balanced_ov_factors(K: int, M: int, u: float, rank: int | None = None,
                        rotation: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    r"""Balanced factors of :math:`u P E_d^\top`: :math:`W_O = U S^{1/2} R^\top`, :math:`W_V = R S^{1/2} V^\top`.

    ``rank`` (default ``K - 1``, the rank of :math:`P`) is the inner dimension :math:`r_{OV} \ge K-1`;
    ``rotation`` is any ``(rank, rank)`` orthogonal matrix applied to the inner space (default the identity).
    Returns ``W_O (K, rank)``, ``W_V (rank, D)`` with :math:`W_O^\top W_O = W_V W_V^\top`
    (:meth:`theory.parametrization.Factorized.start`).
    """
    W_O, W_V = KINDS["F"].start("OV", K, M, u, rank)
    if rotation is not None:
        W_O, W_V = W_O @ rotation.T, rotation @ W_V
    return W_O, W_V


def balanced_qk_factors(K: int, M: int, v: float, rank: int = 1,
                        direction: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    r"""Balanced factors of MODEL.md's QK start: :math:`W_Q q = a e`, :math:`W_K d_k = b e`.

    :math:`a^2 = K b^2` and :math:`ab = v`, so :math:`b = \sqrt{v}\,K^{-1/4}`, :math:`a = \sqrt{v}\,K^{1/4}`;
    ``W_K`` is zero on common tokens and on the query. ``direction`` is the unit vector
    :math:`e \in \mathbb R^{r}` (default the first unit vector). Returns ``W_K, W_Q`` of shape ``(rank, D)``
    (:meth:`theory.parametrization.Factorized.start`).
    """
    W_K, W_Q = KINDS["F"].start("QK", K, M, v, rank)
    if direction is not None:
        e = np.asarray(direction, dtype=float)[:, None]
        W_K, W_Q = e * W_K[0], e * W_Q[0]
    return W_K, W_Q


def population_forward(W_KQ: np.ndarray, W_OV: np.ndarray, K: int, M: int) -> tuple[np.ndarray, np.ndarray, float]:
    r"""Attention, logits and population loss of effective matrices.

    :math:`s^{(y)}_j = W_{KQ}[x_j, q]`, :math:`a^{(y)} = \operatorname{softmax}(s^{(y)})`,
    :math:`z_y = \sum_j a^{(y)}_j W_{OV}[:, x_j]`, :math:`\mathcal L = \frac1K\sum_y \mathrm{CE}(z_y, y)`.

    Returns ``attention (K, L)``, ``logits (K, K)``, ``loss``.
    """
    seq = TokenLayout(K, M).sequences()
    q = K + M
    s = W_KQ[seq, q]                       # (K, L)
    a = softmax(s, axis=1)
    z = np.einsum("yl,kyl->yk", a, W_OV[:, seq])
    loss = -np.mean(log_softmax(z, axis=1)[np.arange(K), np.arange(K)])
    return a, z, float(loss)


@dataclass(frozen=True)
class Observables:
    """MODEL.md's observables of one state, averaged over classes/tokens, with their spread."""

    u: float
    v: float
    p: float
    loss: float
    u_spread: float
    v_spread: float
    p_spread: float


def observables(W_KQ: np.ndarray, W_OV: np.ndarray, K: int, M: int) -> Observables:
    r"""``u``, ``v``, ``p``, loss of effective matrices (MODEL.md), with spreads (std).

    :math:`p_y = a^{(y)}_{d_y}`; :math:`v_{y,j} = W_{KQ}[d_y, q] - W_{KQ}[c_j, q]`;
    :math:`u_{y,c} = W_{OV}[y, d_y] - W_{OV}[c, d_y]` for :math:`c \ne y`.
    """
    lay = TokenLayout(K, M)
    a, _, loss = population_forward(W_KQ, W_OV, K, M)
    p = a[:, 0]
    col = W_KQ[:, lay.query]
    v = col[lay.distinct][:, None] - col[lay.common][None, :]
    dist = W_OV[:, lay.distinct]                          # (K, K): [c, y] = W_OV[c, d_y]
    u = (np.diag(dist)[None, :] - dist)[~np.eye(K, dtype=bool)]
    return Observables(u=float(u.mean()), v=float(v.mean()), p=float(p.mean()), loss=loss,
                       u_spread=float(u.std()), v_spread=float(v.std()), p_spread=float(p.std()))
