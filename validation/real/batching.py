"""Turning examples into padded tensors (right padding, ``[PAD] = 0``)."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from .examples import ClassExample, SquadExample
from .vocab import Vocab

QUESTION_MAX = 40


@dataclass
class ClassTensors:
    """Classification inputs: words then ``[CLS]`` (the query) at ``query_index``.

    ``ids, valid, relevant: (N, L)``; ``valid`` is True at words *and* ``[CLS]``, ``words``
    only at words; ``relevant`` is the annotation mask (all False without one);
    ``annotated (N,)`` says whether the instance has an annotation; ``labels (N,)``.
    """

    ids: torch.Tensor
    valid: torch.Tensor
    words: torch.Tensor
    query_index: torch.Tensor
    relevant: torch.Tensor
    annotated: torch.Tensor
    labels: torch.Tensor

    def __len__(self) -> int:
        return self.ids.shape[0]

    def take(self, idx: torch.Tensor) -> "ClassTensors":
        """Rows ``idx``, trimmed to their longest sequence."""
        L = int(self.query_index[idx].max()) + 1
        return ClassTensors(self.ids[idx, :L], self.valid[idx, :L], self.words[idx, :L], self.query_index[idx],
                            self.relevant[idx, :L], self.annotated[idx], self.labels[idx])


def encode_classification(examples: list[ClassExample], vocab: Vocab, max_len: int) -> ClassTensors:
    """Encode words (the first ``max_len - 1``) followed by ``[CLS]``."""
    n = len(examples)
    lens = [min(len(ex.tokens), max_len - 1) for ex in examples]
    L = max(lens) + 1
    ids = torch.zeros(n, L, dtype=torch.long)
    rel = torch.zeros(n, L, dtype=torch.bool)
    for i, (ex, k) in enumerate(zip(examples, lens)):
        ids[i, :k] = torch.tensor(vocab.encode(ex.tokens[:k]), dtype=torch.long)
        ids[i, k] = vocab.cls
        if ex.relevant is not None:
            rel[i, :k] = torch.tensor(ex.relevant[:k], dtype=torch.bool)
    q = torch.tensor(lens, dtype=torch.long)
    pos = torch.arange(L)[None, :]
    return ClassTensors(ids=ids, valid=pos <= q[:, None], words=pos < q[:, None], query_index=q, relevant=rel,
                        annotated=torch.tensor([ex.relevant is not None and any(ex.relevant[:k])
                                                for ex, k in zip(examples, lens)]),
                        labels=torch.tensor([ex.label for ex in examples], dtype=torch.long))


@dataclass
class SpanTensors:
    """SQuAD inputs. ``ctx, ctx_valid, answer, sentence: (N, n)``; ``question, q_valid: (N, m)``;
    ``start, end (N,)`` the first gold span inside the window (-1 if none fits)."""

    ctx: torch.Tensor
    ctx_valid: torch.Tensor
    question: torch.Tensor
    q_valid: torch.Tensor
    start: torch.Tensor
    end: torch.Tensor
    answer: torch.Tensor
    sentence: torch.Tensor

    def __len__(self) -> int:
        return self.ctx.shape[0]

    def take(self, idx: torch.Tensor) -> "SpanTensors":
        """Rows ``idx``, trimmed to their longest context and question."""
        n = int(self.ctx_valid[idx].sum(1).max())
        m = int(self.q_valid[idx].sum(1).max())
        return SpanTensors(self.ctx[idx, :n], self.ctx_valid[idx, :n], self.question[idx, :m], self.q_valid[idx, :m],
                           self.start[idx], self.end[idx], self.answer[idx, :n], self.sentence[idx, :n])


def encode_squad(examples: list[SquadExample], vocab: Vocab, max_len: int) -> SpanTensors:
    """Encode the first ``max_len`` context words and the first 40 question words.

    ``answer`` marks the union of the gold answer spans inside the window (the relevant
    tokens), ``sentence`` the sentence of the first answer (the variant).
    """
    N = len(examples)
    n = min(max_len, max(len(ex.context) for ex in examples))
    m = min(QUESTION_MAX, max(len(ex.question) for ex in examples))
    ctx = torch.zeros(N, n, dtype=torch.long)
    qs = torch.zeros(N, m, dtype=torch.long)
    ans = torch.zeros(N, n, dtype=torch.bool)
    sent = torch.zeros(N, n, dtype=torch.bool)
    start = torch.full((N,), -1, dtype=torch.long)
    end = torch.full((N,), -1, dtype=torch.long)
    for i, ex in enumerate(examples):
        c = ex.context[:n]
        ctx[i, :len(c)] = torch.tensor(vocab.encode(c), dtype=torch.long)
        q = ex.question[:m]
        if q:
            qs[i, :len(q)] = torch.tensor(vocab.encode(q), dtype=torch.long)
        for a, b in ex.spans:
            if b < n:
                ans[i, a:b + 1] = True
                if start[i] < 0:
                    start[i], end[i] = a, b
        a, b = ex.sentence
        sent[i, a:min(b, n - 1) + 1] = True
    ctx_valid = ctx != 0
    # a word mapped to [PAD] cannot happen (id 0 is reserved); mark the true lengths
    for i, ex in enumerate(examples):
        ctx_valid[i, :min(len(ex.context), n)] = True
    q_valid = torch.zeros(N, m, dtype=torch.bool)
    for i, ex in enumerate(examples):
        q_valid[i, :min(len(ex.question), m)] = True
    return SpanTensors(ctx, ctx_valid, qs, q_valid, start, end, ans, sent)
