r"""Log label-free attention sharpness during training (plain loops; Trainer via :mod:`validation.hf_trainer`).

:class:`SharpnessLogger` reads the attention of a fixed probe batch
(:func:`validation.user_attention.read_attention`, model briefly in eval mode so dropout does
not blur it, grad off) and records, per layer and head, the means of
:mod:`validation.metrics.sharpness` (entropy, normalised entropy, max weight, mass span);
when relevant-token labels are given, also the attention mass on them and AC
(:func:`validation.user_attention.attention_metrics`). ::

    log = SharpnessLogger({"input_ids": ids, "attention_mask": mask}, every=10)
    for step in range(n):
        ...; opt.step()
        log(model, step + 1)
    log.arrays()["normalized_entropy"]        # (n_records, n_layers, H)
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np
import torch
from torch import nn

from validation.metrics.sharpness import DEFAULT_MASS, sharpness_summary
from validation.user_attention import attention_metrics, read_attention

MEASURES = ("entropy", "normalized_entropy", "max_weight", "mass_span")


class SharpnessLogger:
    """Records sharpness on ``inputs`` every ``every`` steps; ``history`` holds one dict per record.

    ``inputs``: the probe batch (a mapping of keyword arguments, as for the model); ``valid``:
    ``(B, L_k)`` key mask (default: ``inputs["attention_mask"]`` when present); ``relevant``
    ``(B, L_k)`` boolean labels and ``query`` (int or ``(B,)``) enable the relevant-token
    metrics; ``stack`` as for :func:`~validation.user_attention.read_attention`.
    Each record: ``step``, each measure ``(n_layers, H)`` and, with labels, ``relevant_mass``
    ``(n_layers, H)`` (mean over the batch) and ``attention_confidence`` ``(n_layers, H)``.
    """

    def __init__(self, inputs: Any, *, every: int = 1, mass: float = DEFAULT_MASS, valid: Any = None,
                 relevant: Any = None, query: Any = 0, stack: str | None = None):
        if every < 1:
            raise ValueError(f"every: {every!r}: must be >= 1")
        self.inputs, self.every, self.mass, self.stack = inputs, int(every), mass, stack
        if valid is None and isinstance(inputs, Mapping) and "attention_mask" in inputs:
            valid = inputs["attention_mask"].bool()
        self.valid, self.relevant, self.query = valid, relevant, query
        self.history: list[dict[str, Any]] = []

    def due(self, step: int) -> bool:
        return step % self.every == 0

    def record(self, model: nn.Module, step: int) -> dict[str, Any]:
        """Measure now (whatever ``step``); the model's train/eval mode is restored."""
        was_training = model.training
        model.eval()
        try:
            with torch.no_grad():
                attn = read_attention(model, self.inputs, stack=self.stack)
        finally:
            model.train(was_training)
        rec: dict[str, Any] = {"step": int(step)}
        queries = None  # self-attention: a padded position is no query either (its row is not averaged)
        if self.valid is not None and getattr(self.valid, "dim", lambda: 0)() == 2 and attn.shape[-2] == attn.shape[-1]:
            queries = self.valid
        summary = sharpness_summary(attn, self.valid, mass=self.mass, queries=queries)
        rec.update({k: v for k, v in summary.items() if k in MEASURES})
        if self.relevant is not None:
            m = attention_metrics(attn, self.relevant, query=self.query, valid=self.valid)
            rec["relevant_mass"] = m["mass"].mean(axis=-1)
            rec["attention_confidence"] = m["attention_confidence"]
        self.history.append(rec)
        return rec

    def __call__(self, model: nn.Module, step: int) -> dict[str, Any] | None:
        """:meth:`record` when ``step`` is a multiple of ``every``; else ``None``."""
        return self.record(model, step) if self.due(step) else None

    @staticmethod
    def scalars(rec: Mapping[str, Any]) -> dict[str, float]:
        """``{"sharpness/<measure>": mean over layers and heads}`` of one record (for a logger)."""
        return {f"sharpness/{k}": float(np.nanmean(v)) for k, v in rec.items() if k != "step"}

    def arrays(self) -> dict[str, np.ndarray]:
        """The history stacked: ``step`` ``(n,)`` and each measure ``(n, n_layers, H)``."""
        if not self.history:
            return {}
        return {k: np.stack([np.asarray(r[k]) for r in self.history]) for k in self.history[0]}
