r"""Single-layer self-attention with QK and OV circuits of any registered kind (collapsed, factorized, tied).

The layer of MODEL.md, read at the last position (the query) over all positions:

.. math::
    s_j = x_j^\top W_{KQ}\, x_q \cdot \text{scale}, \qquad a = \operatorname{softmax}(s), \qquad
    z = W_{OV} \sum_j a_j x_j,

with each effective matrix its kind's product of factors (:data:`theory.parametrization.KINDS`: e.g.
:math:`W_{KQ} = W_K^\top W_Q` factorized); the scores and the read-out are the kinds' own
(:meth:`~theory.parametrization.CircuitKind.scores`, :meth:`~theory.parametrization.CircuitKind.apply`: low-rank
kinds never form the ``D x D`` product). The parametrization names follow MODEL.md: attention first,
output-value second (``"FACO"`` = factorized attention, collapsed output-value).
"""

from __future__ import annotations

from typing import Iterator

import torch
from torch import nn
from theory.parametrization import BASELINE, Parametrization


class QKOVAttention(nn.Module):
    r"""One attention head read at the last position, each circuit of its parametrization's kind.

    The matrices are the kinds' factors (:mod:`theory.parametrization`: ``W_KQ`` or ``W_K, W_Q`` or the
    tied ``W_Q``; ``W_OV`` or ``W_O, W_V``), the effective matrices the kinds' products.

    Args:
        d_in: input dimension :math:`D` (the vocabulary size for one-hot inputs).
        d_out: output dimension (``K`` classes).
        param: a registered parametrization (``"CACO" | "FACO" | "CAFO" | "FAFO" | "TACO" | ...``).
        rank_qk, rank_ov: inner dimensions of the factorized circuits (default ``d_in``).
        scale: multiplier on the scores (e.g. ``1/sqrt(d)``); 1 for MODEL.md.
        init_std: standard deviation of the Gaussian initialisation (0 gives zeros;
            a factorized circuit at exactly zero never moves).

    Shapes: ``x`` is ``(B, L, d_in)``, ``mask`` (optional, True = keep) ``(B, L)``,
    the query is ``x[:, -1]`` unless ``query_index`` ``(B,)`` says otherwise.
    ``forward`` returns ``(logits (B, d_out), attention (B, L))``.
    """

    def __init__(self, d_in: int, d_out: int, param: Parametrization | str = BASELINE, *, rank_qk: int | None = None,
                 rank_ov: int | None = None, scale: float = 1.0, init_std: float = 0.0,
                 generator: torch.Generator | None = None, dtype: torch.dtype = torch.float32):
        super().__init__()
        self.parametrization = Parametrization(param)
        self.param = str(self.parametrization)
        # Whether each circuit is the kind F (for callers written for MODEL.md's four; the layer itself asks its kinds).
        self.qk_factorized, self.ov_factorized = self.parametrization.qk.factorized, self.parametrization.ov.factorized
        self.d_in, self.d_out = d_in, d_out
        self.rank_qk = rank_qk or d_in
        self.rank_ov = rank_ov or d_in
        self.scale = scale
        for circuit, rank in ((self.parametrization.qk, self.rank_qk), (self.parametrization.ov, self.rank_ov)):
            for name, shape in zip(circuit.factors, circuit.kind.factor_shapes(circuit.name, d_in, d_out, rank), strict=True):
                w = torch.zeros(*shape, dtype=dtype)
                if init_std > 0:
                    w.normal_(0.0, init_std, generator=generator)
                setattr(self, name, nn.Parameter(w))

    # -- effective (collapsed) matrices -------------------------------------------------
    def effective_qk(self) -> torch.Tensor:
        r""":math:`W_{KQ}` (``d_in x d_in``): the QK kind's product (:math:`W_K^\top W_Q`, :math:`W_Q^\top W_Q`, ...)."""
        return self.parametrization.qk.effective(list(self.qk_parameters()))

    def effective_ov(self) -> torch.Tensor:
        r""":math:`W_{OV}` (``d_out x d_in``), :math:`W_O W_V` when factorized."""
        return self.parametrization.ov.effective(list(self.ov_parameters()))

    def factor(self, name: str) -> torch.Tensor:
        """The factor parameter ``name`` (e.g. ``"W_K"``, shape per its kind's ``factor_shapes``)."""
        w = getattr(self, name)
        if not isinstance(w, torch.Tensor):
            raise AttributeError(f"{type(self).__name__} has no factor {name!r} (parametrization {self.param})")
        return w

    def qk_parameters(self) -> Iterator[nn.Parameter]:
        """The parameters of the QK circuit."""
        return iter([getattr(self, k) for k in self.parametrization.qk.factors])

    def ov_parameters(self) -> Iterator[nn.Parameter]:
        """The parameters of the OV circuit."""
        return iter([getattr(self, k) for k in self.parametrization.ov.factors])

    # -- forward ------------------------------------------------------------------------
    def scores(self, x: torch.Tensor, query_index: torch.Tensor | None = None) -> torch.Tensor:
        r"""Attention logits :math:`s_j = x_j^\top W_{KQ} x_q \cdot \text{scale}`, shape ``(B, L)``."""
        xq = x[:, -1] if query_index is None else x[torch.arange(x.shape[0]), query_index]
        return self.parametrization.qk.scores(list(self.qk_parameters()), x, xq) * self.scale

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None,
                query_index: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        s = self.scores(x, query_index)
        if mask is not None:
            s = s.masked_fill(~mask, float("-inf"))
        a = torch.softmax(s, dim=-1)
        pooled = torch.einsum("bl,bld->bd", a, x)      # (B, d_in)
        return self.parametrization.ov.apply(list(self.ov_parameters()), pooled), a
