"""Real-data records read back as the runs :mod:`qkov.study.real_summary` computes on.

:func:`real_runs` gives each ``validate-real`` record in the shape of
:func:`qkov.study.real_summary.load_runs` (``{"dir", "config", "metrics", "arrays"}``), so the summary's own
statistics (groups, paired comparisons, Holm, the verdict rule, the 2 x 2 effects) run on records unchanged.
The only array rebuilt is ``labels`` (the test split's labels in sorted order, from the record's class counts),
which is all :func:`~qkov.study.real_summary.majority_share` reads, and the columnar training curve is read back as
rows (:func:`~qkov.records.extractors.checkpoint_rows`); per-item predictions are not kept, so the
exploratory item bootstrap is absent from what records regenerate.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable

import numpy as np

from qkov.records.extractors import checkpoint_rows
from qkov.records.store import Record

REAL_KIND = "validate-real"


def real_runs(records: Iterable[Record]) -> list[dict[str, Any]]:
    """The ``validate-real`` records among ``records`` as summary runs (module docstring), in record order."""
    out = []
    for rec in records:
        if rec.kind != REAL_KIND:
            continue
        arrays: dict[str, np.ndarray] = {}
        counts = rec.metrics.get("label_counts")
        if isinstance(counts, dict) and counts.get("labels"):
            arrays["labels"] = np.repeat(np.asarray(counts["labels"]), np.asarray(counts["counts"], dtype=int))
        metrics = dict(rec.metrics)
        if "checkpoints" in metrics:
            metrics["checkpoints"] = checkpoint_rows(metrics["checkpoints"])
        out.append({"dir": Path(rec.run), "config": dict(rec.config), "metrics": metrics, "arrays": arrays})
    return out


__all__ = ["REAL_KIND", "real_runs"]
