r"""Small attention models for the real tasks, built on :class:`validation.attention.QKOVAttention`.

Classifier (HateXplain, SVA): a sequence of word embeddings plus a learned embedding of the
distance to the query, a ``[CLS]`` token appended last as the query, optional lower
self-attention layers, the QKOV layer read at ``[CLS]``, and a linear head:

.. math::
    x_j = E[w_j] + P[L-1-j], \quad (z, a) = \mathrm{QKOV}(x, q=\texttt{[CLS]}), \quad
    \text{logits} = W_h z + b_h .

``a`` (shape ``(B, L)``) is the attention of the query over the words and is what the
interpretability metrics measure.

The SQuAD model is the decoder of :mod:`validation.real.squad_decoder`.
"""

from __future__ import annotations

import math
from typing import Iterator

import torch
from torch import nn

from validation.attention import QKOVAttention
from theory.parametrization import BASELINE


class SelfAttentionBlock(nn.Module):
    r"""One lower layer: single-head self-attention at every position, collapsed circuits, residual.

    :math:`X \leftarrow X + \mathrm{softmax}(X W_{KQ} X^\top/\sqrt d + \text{mask})\, X W_{OV}^\top`,
    shapes ``x (B, L, d)``, ``valid (B, L)``.
    """

    def __init__(self, d: int, init_std: float):
        super().__init__()
        self.W_KQ = nn.Parameter(torch.randn(d, d) * init_std)
        self.W_OV = nn.Parameter(torch.randn(d, d) * init_std)
        self.scale = 1.0 / math.sqrt(d)

    def forward(self, x: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
        s = torch.einsum("bqd,de,bke->bqk", x, self.W_KQ, x) * self.scale
        s = s.masked_fill(~valid[:, None, :], float("-inf"))
        return x + torch.softmax(s, dim=-1) @ x @ self.W_OV.T

    def qk_parameters(self) -> list[nn.Parameter]:
        return [self.W_KQ]

    def ov_parameters(self) -> list[nn.Parameter]:
        return [self.W_OV]


class _Circuits(nn.Module):
    """Mixin: QK / OV parameters of the read-out layer and of every lower layer."""

    attn: QKOVAttention
    lower: nn.ModuleList

    def _lower_blocks(self) -> Iterator[SelfAttentionBlock]:
        for blk in self.lower:
            if not isinstance(blk, SelfAttentionBlock):
                raise TypeError(f"lower layer {type(blk).__name__}: expected a SelfAttentionBlock")
            yield blk

    def qk_parameters(self) -> Iterator[nn.Parameter]:
        yield from self.attn.qk_parameters()
        for blk in self._lower_blocks():
            yield from blk.qk_parameters()

    def ov_parameters(self) -> Iterator[nn.Parameter]:
        yield from self.attn.ov_parameters()
        for blk in self._lower_blocks():
            yield from blk.ov_parameters()


class AttentionClassifier(_Circuits):
    """Embedding + distance embedding + (lower layers) + QKOV read at the query + linear head.

    ``forward(ids (B, L), valid (B, L) bool, query_index (B,))`` returns
    ``(logits (B, C), attention (B, L))``.
    """

    def __init__(self, vocab_size: int, n_classes: int, *, d: int = 64, param: str = BASELINE, max_len: int = 256,
                 layers: int = 1, init_std: float = 0.02):
        super().__init__()
        self.max_len = max_len
        self.emb = nn.Embedding(vocab_size, d, padding_idx=0)
        self.dist = nn.Embedding(max_len + 1, d)
        nn.init.normal_(self.emb.weight, 0.0, 1.0 / math.sqrt(d))
        nn.init.normal_(self.dist.weight, 0.0, 1.0 / math.sqrt(d))
        self.lower = nn.ModuleList(SelfAttentionBlock(d, init_std) for _ in range(layers - 1))
        self.attn = QKOVAttention(d, d, param, scale=1.0 / math.sqrt(d), init_std=init_std)
        self.head = nn.Linear(d, n_classes)

    def embed(self, ids: torch.Tensor, query_index: torch.Tensor) -> torch.Tensor:
        """Word embedding plus the embedding of the distance to the query, ``(B, L, d)``."""
        pos = torch.arange(ids.shape[1], device=ids.device)[None, :]
        dist = (query_index[:, None] - pos).clamp(0, self.max_len)
        return self.emb(ids) + self.dist(dist)

    def forward(self, ids: torch.Tensor, valid: torch.Tensor,
                query_index: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        x = self.embed(ids, query_index)
        for blk in self.lower:
            x = blk(x, valid)
        z, a = self.attn(x, valid, query_index)
        return self.head(z), a


class MultiHeadClassifier(nn.Module):
    r"""The paper's HateXplain/SVA model: one attention layer with ``heads`` heads of ``d_head``, read
    at the last token (``[CLS]``), then a linear classifier.

    .. math::
        x_j = E[w_j] + P[L-1-j],\quad a^h = \mathrm{softmax}_j\big((W_Q^h x_q)^\top W_K^h x_j/\sqrt{d_h}\big),
        \quad z = x_q + W_O\,[\textstyle\sum_j a^h_j W_V^h x_j]_{h},\quad
        \text{logits} = W\,\mathrm{LN}(z) + b .

    QK circuit: ``W_Q, W_K (H, d_head, d)``; OV circuit: ``W_V (H, d_head, d)``, ``W_O (d, H d_head)``.
    ``forward(ids (B,L), valid (B,L), query_index (B,))`` returns ``(logits (B,C), attention (B,L))``
    where the attention is the **mean over heads** (what every metric uses); the per-head rows are
    in ``self.last_head_attention (B,H,L)`` after a call.

    ``d_mlp > 0`` (the official HateXplain block, ``--preset official``) adds an MLP on the read-out,
    :math:`z \leftarrow z + W_2\,\mathrm{GELU}(W_1 z + b_1) + b_2` (``W_1: (d_mlp, d)``), before the LayerNorm;
    it is the module ``mlp`` (the ``mlp`` rate group), created after every other parameter so that the
    initialisation of the rest does not change.

    ``qkv_bias`` (the official notebooks' projections, ``--preset official``) adds biases to the projections,
    :math:`W_Q^h x_q + b_Q^h`, :math:`W_K^h x_j + b_K^h`, :math:`W_V^h x_j + b_V^h` (each ``(H, d_head)``) and
    :math:`W_O[\cdot] + b_O` (``(d,)``), zero at the start (no random draw: the rest's initialisation is unchanged);
    their names end in ``bias``, so they are the ``bias`` rate group. The uniform-attention baseline still zeroes
    only ``W_Q, W_K``: the score :math:`(b_Q)^\top b_K` left is the same for every position, so attention is uniform.
    """

    def __init__(self, vocab_size: int, n_classes: int, *, d: int = 64, heads: int = 4, d_head: int = 64,
                 max_len: int = 256, init_std: float = 0.02, d_mlp: int = 0, qkv_bias: bool = False):
        super().__init__()
        self.max_len = max_len
        self.emb = nn.Embedding(vocab_size, d, padding_idx=0)
        self.dist = nn.Embedding(max_len + 1, d)
        nn.init.normal_(self.emb.weight, 0.0, 1.0 / math.sqrt(d))
        nn.init.normal_(self.dist.weight, 0.0, 1.0 / math.sqrt(d))
        self.W_Q = nn.Parameter(torch.randn(heads, d_head, d) * init_std)
        self.W_K = nn.Parameter(torch.randn(heads, d_head, d) * init_std)
        self.W_V = nn.Parameter(torch.randn(heads, d_head, d) * init_std)
        self.W_O = nn.Parameter(torch.randn(d, heads * d_head) * init_std)
        self.scale = 1.0 / math.sqrt(d_head)
        self.ln = nn.LayerNorm(d)
        self.head = nn.Linear(d, n_classes)
        self.last_head_attention: torch.Tensor | None = None
        self.mlp = nn.Sequential(nn.Linear(d, d_mlp), nn.GELU(), nn.Linear(d_mlp, d)) if d_mlp > 0 else None
        self.q_bias: nn.Parameter | None = None
        self.k_bias: nn.Parameter | None = None
        self.v_bias: nn.Parameter | None = None
        self.o_bias: nn.Parameter | None = None
        if qkv_bias:
            self.q_bias, self.k_bias, self.v_bias = (nn.Parameter(torch.zeros(heads, d_head)) for _ in range(3))
            self.o_bias = nn.Parameter(torch.zeros(d))

    def qk_parameters(self) -> Iterator[nn.Parameter]:
        yield from (self.W_Q, self.W_K)

    def ov_parameters(self) -> Iterator[nn.Parameter]:
        yield from (self.W_V, self.W_O)

    def forward(self, ids: torch.Tensor, valid: torch.Tensor,
                query_index: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        pos = torch.arange(ids.shape[1], device=ids.device)[None, :]
        x = self.emb(ids) + self.dist((query_index[:, None] - pos).clamp(0, self.max_len))
        xq = x[torch.arange(x.shape[0]), query_index]                        # (B, d)
        q = torch.einsum("hed,bd->bhe", self.W_Q, xq)
        k = torch.einsum("hed,bld->bhle", self.W_K, x)
        if self.q_bias is not None and self.k_bias is not None:
            q, k = q + self.q_bias, k + self.k_bias[:, None, :]
        s = torch.einsum("bhe,bhle->bhl", q, k) * self.scale
        a = torch.softmax(s.masked_fill(~valid[:, None, :], float("-inf")), dim=-1)   # (B, H, L)
        v = torch.einsum("hed,bld->bhle", self.W_V, x)
        if self.v_bias is not None:
            v = v + self.v_bias[:, None, :]
        o = torch.einsum("bhl,bhle->bhe", a, v).reshape(x.shape[0], -1)
        z = xq + o @ self.W_O.T
        if self.o_bias is not None:
            z = z + self.o_bias
        if self.mlp is not None:
            z = z + self.mlp(z)
        self.last_head_attention = a.detach()
        return self.head(self.ln(z)), a.mean(1)
