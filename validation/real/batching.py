"""Turning examples into padded tensors (right padding, ``[PAD] = 0``)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TypeVar

import torch

from .examples import ClassExample
from .vocab import Vocab

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


B = TypeVar("B")


def to_device(batch: B, device: torch.device | str | None) -> B:
    """A copy of a tensor dataclass (``ClassTensors``, ``DecoderTensors``, ...) with every tensor field on
    ``device`` (non-tensor fields kept); ``batch`` itself when ``device`` is ``None`` or already there."""
    if device is None:
        return batch
    changes = {f.name: v.to(device) for f in dataclasses.fields(batch)  # type: ignore[arg-type]
               if isinstance(v := getattr(batch, f.name), torch.Tensor) and v.device != torch.device(device)}
    return dataclasses.replace(batch, **changes) if changes else batch  # type: ignore[type-var]


def model_device(model: torch.nn.Module) -> torch.device:
    """The device of ``model``'s first parameter (CPU for a model without parameters)."""
    return next((p.device for p in model.parameters()), torch.device("cpu"))
