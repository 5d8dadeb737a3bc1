"""qkov's validation library: torch models of the four parametrizations, trained on synthetic and real data.

    >>> import validation
    >>> res = validation.train_synthetic(params=("FAFO",), ratios=(1.0, 10.0), steps=400)

* :func:`train_synthetic`, :func:`train_real` — train, get typed results (:mod:`validation.api`);
* :mod:`validation.attention` — the QK/OV attention layer (collapsed or factorized circuits);
* :mod:`validation.metrics` — attention mass, DTAP, AC/ACMC, ERASER faithfulness and plausibility;
* :mod:`validation.user_models` — the QK/OV learning-rate ratio for your own model.
"""

from __future__ import annotations

__all__ = ["train_synthetic", "train_real", "SyntheticResult", "RealResult"]


def __getattr__(name: str):
    if name in __all__:
        from validation import api

        return getattr(api, name)
    raise AttributeError(name)
