"""qkov's validation library: torch models of the four parametrizations, trained on synthetic and real data.

    >>> import validation
    >>> res = validation.train_synthetic(params=("FAFO",), ratios=(1.0, 10.0), steps=400)

* :func:`train_synthetic`, :func:`train_real` — train, get typed results (:mod:`validation.api`);
* :mod:`validation.attention` — the QK/OV attention layer (collapsed or factorized circuits);
* :mod:`validation.metrics` — attention mass, DTAP, AC/ACMC, ERASER faithfulness and plausibility;
* :mod:`validation.user_models` — the QK/OV learning-rate ratio for your own model
  (:mod:`validation.hf_trainer` for ``transformers.Trainer``, :mod:`validation.sharpness_log`
  to log label-free attention sharpness while training).
"""

from __future__ import annotations

import types

__all__ = ["train_synthetic", "train_real", "SyntheticResult", "RealResult"]


SUBMODULES = ("api", "attention", "attention_layouts", "hf_trainer", "layout_probe", "metrics", "param_groups",
              "real", "sharpness_log", "synthetic", "user_attention", "user_models")
"""Submodules reachable as attributes after a plain ``import validation`` (imported on first use)."""


def _submodule(name: str) -> types.ModuleType:  # explicit imports, so the layering check sees every one
    if name == "api":
        import validation.api
        return validation.api
    if name == "attention":
        import validation.attention
        return validation.attention
    if name == "attention_layouts":
        import validation.attention_layouts
        return validation.attention_layouts
    if name == "hf_trainer":
        import validation.hf_trainer
        return validation.hf_trainer
    if name == "layout_probe":
        import validation.layout_probe
        return validation.layout_probe
    if name == "metrics":
        import validation.metrics
        return validation.metrics
    if name == "param_groups":
        import validation.param_groups
        return validation.param_groups
    if name == "real":
        import validation.real
        return validation.real
    if name == "sharpness_log":
        import validation.sharpness_log
        return validation.sharpness_log
    if name == "synthetic":
        import validation.synthetic
        return validation.synthetic
    if name == "user_attention":
        import validation.user_attention
        return validation.user_attention
    import validation.user_models
    return validation.user_models


def __getattr__(name: str):
    if name in __all__:
        from validation import api

        return getattr(api, name)
    if name in SUBMODULES:
        return _submodule(name)
    raise AttributeError(f"module 'validation' has no attribute {name!r}")
