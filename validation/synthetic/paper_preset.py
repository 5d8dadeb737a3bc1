r"""The synthetic task of the paper's Figure 2 (PAPER.md), as read from the official notebooks.

Vocabulary of 50 one-hot tokens. Tokens 0-9 are common (weight 1 each); class ``i`` in ``{0..3}``
owns the 10 distinct tokens :math:`[10(i+1), 10(i+2))` with weights :math:`0.1, 0.2, \dots, 1.0`;
the context distribution of class ``i`` is those 20 weights normalised. A sequence is 62 i.i.d.
context tokens of its class followed by a class-specific query token; the label is the next token.
In the official notebook the query tokens are ids ``5, 6, 7, 8`` (common-token ids) and the
labels ids ``1, 2, 3, 4`` of a 50-way output, which we keep: so the query alone identifies the class.
Attention is read at the query over all 63 inputs with scale :math:`1/\sqrt{50}`; "distinct
attention" is the attention mass on tokens with id ``>= 10``. Weights start at ``1e-6 * I``
(each factor, or the collapsed matrix); plain SGD.
"""

from __future__ import annotations

import numpy as np
import torch

from validation.attention import QKOVAttention
from validation.synthetic.data import Batch
from theory.parametrization import Parametrization

VOCAB = 50
N_COMMON = 10
N_CLASSES = 4
CONTEXT_LEN = 62
QUERY_IDS = (5, 6, 7, 8)
LABEL_IDS = (1, 2, 3, 4)
SCALE = 1.0 / VOCAB ** 0.5
INIT_SCALE = 1e-6


def class_distributions() -> np.ndarray:
    """Context-token distributions, shape ``(4, 50)``; row ``i`` sums to 1."""
    w = np.zeros((N_CLASSES, VOCAB))
    for i in range(N_CLASSES):
        w[i, :N_COMMON] = 1.0
        w[i, N_COMMON * (i + 1): N_COMMON * (i + 2)] = np.arange(1, 11) / 10
    return w / w.sum(1, keepdims=True)


class PaperData:
    """Sampler of the paper's sequences (seeded); batches are one-hot ``(B, 63, 50)``."""

    def __init__(self, seed: int, batch_size: int = 128, dtype: torch.dtype = torch.float32):
        self.gen = torch.Generator().manual_seed(seed)
        self.batch_size = batch_size
        self.dtype = dtype
        self.probs = torch.as_tensor(class_distributions())
        self.eye = torch.eye(VOCAB, dtype=dtype)

    def token_ids(self, n: int) -> tuple[torch.Tensor, torch.Tensor]:
        """``ids (n, 63)`` (context then query) and class indices ``(n,)`` in ``0..3``."""
        cls = torch.randint(0, N_CLASSES, (n,), generator=self.gen)
        ctx = torch.multinomial(self.probs[cls], CONTEXT_LEN, replacement=True, generator=self.gen)
        query = torch.as_tensor(QUERY_IDS)[cls][:, None]
        return torch.cat([ctx, query], 1), cls

    def batch(self, n: int | None = None) -> Batch:
        """A batch with labels as output ids ``1..4`` and ``relevant`` = ids ``>= 10``."""
        ids, cls = self.token_ids(n or self.batch_size)
        return Batch(x=self.eye[ids], y=torch.as_tensor(LABEL_IDS)[cls], mask=None, relevant=ids >= N_COMMON)


def paper_model(param: Parametrization, dtype: torch.dtype = torch.float32) -> QKOVAttention:
    """The paper's model: 50 -> 50 outputs, all factors (or collapsed matrices) at ``1e-6 * I``, scale ``1/sqrt(50)``."""
    model = QKOVAttention(VOCAB, VOCAB, param, rank_qk=VOCAB, rank_ov=VOCAB, scale=SCALE, dtype=dtype)
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(INIT_SCALE * torch.eye(VOCAB, dtype=dtype))
    return model
