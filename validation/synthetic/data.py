r"""Training data for the synthetic validation: the exact population and sampled versions of it.

Every source yields :class:`Batch` objects of embedded inputs, so one trainer serves them all.

* :func:`population_batch` — the exact orthogonal population of MODEL.md: ``K`` sequences
  :math:`X_y = (d_y, c_1, \dots, c_M, q)`, one-hot in :math:`\mathbb R^{D}`, :math:`D = K + M + 1`.
* :class:`SampledData` — sampled departures from it (:class:`SampledDataConfig`): minibatches of
  random classes, a random subset of the common tokens per sequence (hence variable length,
  padded and masked), several distinct tokens per sequence drawn from a per-class pool,
  near-orthogonal random embeddings in a smaller dimension, and label noise.

Vocabulary of the sampled data (``n_pool = distinct_per_class``): distinct token ``j`` of class ``k``
has id ``k + K j`` (so ids ``0..K-1`` are the MODEL.md distinct tokens), commons are
``K n_pool .. K n_pool + M - 1`` and the query is the last id. :meth:`SampledData.canonical_ids`
gives the ``K + M + 1`` ids that play MODEL.md's roles, used to measure ``u, v, p``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

import numpy as np
import torch

from simulation.model_matrices import TokenLayout
from theory.spec import Ge, Gt, Le, NonNegativeFinite, Spec


@dataclass(frozen=True)
class Batch:
    """One batch of embedded sequences.

    ``x`` ``(B, L, d)`` inputs (query last), ``y`` ``(B,)`` int64 labels, ``mask`` ``(B, L)`` bool
    (True = real token) or None, ``relevant`` ``(B, L)`` bool: positions holding a distinct
    (class-informative) token, the attention mass DTAP measures.
    """

    x: torch.Tensor
    y: torch.Tensor
    mask: torch.Tensor | None
    relevant: torch.Tensor


def population_batch(K: int, M: int, dtype: torch.dtype = torch.float64) -> Batch:
    r"""The whole population of MODEL.md as one batch: ``x`` ``(K, M+2, K+M+1)`` one-hot, ``y = arange(K)``.

    The population loss :math:`\mathcal L = \frac1K\sum_y \mathrm{CE}(z_y, y)` is the mean
    cross-entropy over this batch.
    """
    lay = TokenLayout(K, M)
    x = torch.as_tensor(lay.one_hot_population(), dtype=dtype)
    relevant = torch.zeros(K, M + 2, dtype=torch.bool)
    relevant[:, 0] = True
    return Batch(x=x, y=torch.arange(K), mask=None, relevant=relevant)


@dataclass(frozen=True, kw_only=True)
class SampledDataConfig(Spec):
    """Departures from the exact population, each one switchable.

    ``batch_size`` sequences of uniformly random classes per step; each keeps every common token
    independently with probability ``common_keep`` (at least ``min_common`` kept); each holds
    ``distinct_per_seq`` distinct tokens drawn with replacement from its class's pool of
    ``distinct_per_class``; ``embed_dim`` (0 = one-hot) gives Gaussian embeddings with unit
    expected norm, near-orthogonal for large dimension; with probability ``label_noise`` the label
    is replaced by a uniformly random other class.
    """

    K: Annotated[int, Ge(2), Le(1000)] = 4
    M: Annotated[int, Ge(1), Le(1000)] = 8
    batch_size: Annotated[int, Ge(1), Le(100_000)] = 32
    common_keep: Annotated[float, Gt(0.0), Le(1.0)] = 0.7
    min_common: Annotated[int, Ge(0)] = 1
    distinct_per_class: Annotated[int, Ge(1), Le(100)] = 3
    distinct_per_seq: Annotated[int, Ge(1), Le(100)] = 2
    embed_dim: Annotated[int, Ge(0), Le(100_000)] = 0
    label_noise: NonNegativeFinite = 0.05


class SampledData:
    """Sampler of :class:`Batch` es from a :class:`SampledDataConfig`, driven by a seeded generator."""

    def __init__(self, cfg: SampledDataConfig, seed: int, dtype: torch.dtype = torch.float32):
        self.cfg = cfg
        self.dtype = dtype
        self.gen = torch.Generator().manual_seed(seed)
        K, M, n = cfg.K, cfg.M, cfg.distinct_per_class
        self.vocab = K * n + M + 1
        self.common_ids = torch.arange(K * n, K * n + M)
        self.query_id = self.vocab - 1
        if cfg.embed_dim:
            emb = torch.randn(self.vocab, cfg.embed_dim, generator=self.gen, dtype=torch.float64)
            self.embeddings = (emb / cfg.embed_dim ** 0.5).to(dtype)
        else:
            self.embeddings = torch.eye(self.vocab, dtype=dtype)

    @property
    def d_in(self) -> int:
        """Input dimension of the model (``embed_dim`` or the vocabulary size)."""
        return self.embeddings.shape[1]

    def canonical_ids(self) -> np.ndarray:
        """Token ids in MODEL.md's order ``(d_0..d_{K-1}, c_1..c_M, q)``, shape ``(K+M+1,)``."""
        K = self.cfg.K
        return np.concatenate([np.arange(K), self.common_ids.numpy(), [self.query_id]])

    def token_ids(self, n: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """Sample ``n`` sequences: ``ids (n, L)`` (padding id 0), ``mask``, ``relevant``, labels ``(n,)``.

        Layout per row: distinct tokens, kept commons, padding, query last.
        """
        c = self.cfg
        g = self.gen
        y = torch.randint(0, c.K, (n,), generator=g)
        pool = torch.randint(0, c.distinct_per_class, (n, c.distinct_per_seq), generator=g)
        distinct = y[:, None] + c.K * pool                                  # (n, s)
        keep = torch.rand(n, c.M, generator=g) < c.common_keep
        if c.min_common:
            need = keep.sum(1) < c.min_common
            if need.any():
                order = torch.rand(n, c.M, generator=g).argsort(1)[:, : min(c.min_common, c.M)]
                forced = torch.zeros_like(keep).scatter_(1, order, True)
                keep = torch.where(need[:, None], keep | forced, keep)
        # kept commons first (stable sort puts True before False when sorting ~keep)
        order = (~keep).to(torch.int8).argsort(dim=1, stable=True)
        commons = self.common_ids[order]
        common_mask = torch.gather(keep, 1, order)
        ids = torch.cat([distinct, commons, torch.full((n, 1), self.query_id)], 1)
        mask = torch.cat([torch.ones_like(distinct, dtype=torch.bool), common_mask,
                          torch.ones(n, 1, dtype=torch.bool)], 1)
        ids = torch.where(mask, ids, torch.zeros_like(ids))
        relevant = torch.zeros_like(mask)
        relevant[:, : c.distinct_per_seq] = True
        labels = y.clone()
        if c.label_noise > 0:
            flip = torch.rand(n, generator=g) < c.label_noise
            other = (y + torch.randint(1, c.K, (n,), generator=g)) % c.K
            labels = torch.where(flip, other, y)
        return ids, mask, relevant, labels

    def batch(self, n: int | None = None) -> Batch:
        """A batch of ``n`` (default ``batch_size``) embedded sequences."""
        ids, mask, relevant, labels = self.token_ids(n or self.cfg.batch_size)
        return Batch(x=self.embeddings[ids], y=labels, mask=mask, relevant=relevant)