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

__all__ = ["train_synthetic", "train_real", "SyntheticResult", "RealResult"]


SUBMODULES = ("api", "attention", "attention_layouts", "hf_trainer", "layout_probe", "metrics", "param_groups",
              "real", "sharpness_log", "synthetic", "user_attention", "user_models")
"""Submodules reachable as attributes after a plain ``import validation`` (imported on first use)."""


def _submodule(name: str):  # explicit imports, so the layering check sees every one
    if name == "api":
        import validation.api as m
    elif name == "attention":
        import validation.attention as m
    elif name == "attention_layouts":
        import validation.attention_layouts as m
    elif name == "hf_trainer":
        import validation.hf_trainer as m
    elif name == "layout_probe":
        import validation.layout_probe as m
    elif name == "metrics":
        import validation.metrics as m
    elif name == "param_groups":
        import validation.param_groups as m
    elif name == "real":
        import validation.real as m
    elif name == "sharpness_log":
        import validation.sharpness_log as m
    elif name == "synthetic":
        import validation.synthetic as m
    elif name == "user_attention":
        import validation.user_attention as m
    else:
        import validation.user_models as m
    return m


def __getattr__(name: str):
    if name in __all__:
        from validation import api

        return getattr(api, name)
    if name in SUBMODULES:
        return _submodule(name)
    raise AttributeError(f"module 'validation' has no attribute {name!r}")
