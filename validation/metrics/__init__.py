"""Interpretability and accuracy metrics for qkov's validation layer.

One module per job:

- :mod:`.attention_mass`: attention mass on the relevant tokens of each instance;
- :mod:`.dtap`: DTAP heatmaps, attention confidence (AC) and ACMC;
- :mod:`.eraser`: ERASER faithfulness (comprehensiveness, sufficiency, AOPC);
- :mod:`.plausibility`: agreement with human rationales (token F1, IOU-F1, AUPRC);
- :mod:`.squad_eval`: the official SQuAD exact match and F1;
- :mod:`.eraser_export`: results in ERASER's JSONL format;
- :mod:`.sharpness`: label-free sharpness of attention rows (entropy, normalised entropy,
  max weight, mass span), per layer and head.

Every scalar metric states in :data:`LOWER_IS_BETTER` whether lower values are better.
"""

from __future__ import annotations

LOWER_IS_BETTER: dict[str, bool] = {
    # attention concentration
    "relevant_mass": False,
    "attention_confidence": False,
    "acmc": False,
    # label-free sharpness (lower entropy / span = sharper attention)
    "attention_entropy": True,
    "normalized_entropy": True,
    "max_weight": False,
    "mass_span": True,
    # ERASER faithfulness
    "comprehensiveness": False,
    "sufficiency": True,
    "comprehensiveness_aopc": False,
    "sufficiency_aopc": True,
    # plausibility
    "token_f1": False,
    "iou_f1": False,
    "auprc": False,
    "auprc_trapezoid": False,
    "comprehensiveness_hard": False,
    "sufficiency_hard": True,
    # SQuAD
    "exact_match": False,
    "f1": False,
}
"""Metric name -> ``True`` when a lower value is better (the direction of every qkov metric)."""

__all__ = ["LOWER_IS_BETTER"]
