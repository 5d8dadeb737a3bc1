r"""The validation library's Python API: train, get typed results back (no files written).

    >>> import validation
    >>> res = validation.train_synthetic(params=("FAFO",), ratios=(1.0, 10.0), steps=400)
    >>> res.run("FAFO", 10.0).log["p"][-1]          # attention on the distinct token at the end
    >>> real = validation.train_real("hatexplain", data_dir="/data", ratio=30, quick=True)
    >>> real.metrics["accuracy"]

Both take the fields of their spec (:class:`~validation.synthetic.experiment.SyntheticConfig`,
:class:`~validation.real.config.RealRunConfig`) as keywords, or a spec itself. The ``qkov`` app writes
these results into run directories; here they stay in memory.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np


@dataclass(frozen=True)
class SyntheticResult:
    """Every trained (parametrization, ratio) of one synthetic spec.

    ``runs``: :class:`~validation.synthetic.experiment.PairRun` (``log`` arrays over training: ``t, u, v, p,
    loss, ...``; held-out ``mass, p_true, correct``), parametrizations outer, ratios inner.
    """

    config: Any
    runs: tuple

    def run(self, param: str, ratio: float):
        """The run of ``(param, ratio)``; ``KeyError`` if the spec had none."""
        for r in self.runs:
            if r.param == param and np.isclose(r.ratio, ratio):
                return r
        raise KeyError((param, ratio))


def train_synthetic(spec=None, /, *, progress: bool | None = False, **fields) -> SyntheticResult:
    """Train every ``(param, ratio)`` of a :class:`~validation.synthetic.experiment.SyntheticConfig`.

    ``spec``: a config, or ``None`` to build one from ``fields`` (any of its fields; the rest default:
    full-batch GD on MODEL.md's population from the symmetric start, K = 4, M = 8, 4000 steps of dt = 0.05).
    With a ``spec``, ``fields`` replace its values.

    Fields (defaults):
        params (all four: CACO, FACO, CAFO, FAFO), ratios ((1.0, 3.0, 10.0)): the grid trained;
        data ("population" | "sampled" | "paper"), optimizer ("gd" | "sgd" | "adamw"),
        init ("symmetric" | "random"), K (4), M (8): the task and how it is trained;
        u0 (0.5), v0 (0.5), init_std (0.05): the start; eta_ov (1.0), dt (0.05), steps (4000),
        log_every (20), seed (0), weight_decay (0.0), test_size (2000),
        sampled (a SampledDataConfig, for data="sampled"), float64 (True).
    """
    from validation.synthetic.experiment import SyntheticConfig, run_grid

    cfg = spec if spec is not None else SyntheticConfig(**fields)
    if spec is not None and fields:
        cfg = cfg.replace(**fields)
    return SyntheticResult(cfg, tuple(run_grid(cfg, progress=progress)))


@dataclass(frozen=True)
class RealResult:
    """One real-data run: its config, scalar ``metrics``, per-instance ``arrays`` and, for classification,
    ERASER-format ``eraser`` records; ``extras`` holds e.g. SQuAD predictions."""

    config: Any
    metrics: dict[str, Any]
    arrays: dict[str, np.ndarray]
    eraser: list | None = None
    extras: dict[str, Any] = field(default_factory=dict)


def train_real(dataset: str | None = None, /, *, spec=None, progress: bool = False, device: str = "auto",
               bf16: bool = False, **fields) -> RealResult:
    """Train and evaluate one real-data model (:func:`validation.real.run.train_and_evaluate`).

    ``fields`` override :func:`validation.real.config.default_config` for ``dataset`` (``data_dir``,
    ``ratio``, ``seed``, ``optimizer``, ``quick`` ...); or pass a ready ``spec``, whose values
    ``fields`` (any :class:`~validation.real.config.RealRunConfig` field, e.g. ``ratio``) replace. ``device``:
    ``auto | cpu | cuda[:N] | mps`` (:mod:`validation.device`; ``DeviceError`` if absent), ``bf16``:
    CUDA bf16 autocast; both are in ``metrics["device"]``.
    """
    from validation.real.config import default_config
    from validation.real.run import train_and_evaluate

    if spec is None:
        if dataset is None:
            raise ValueError("train_real: give a dataset (squad, hatexplain, sva) or a spec")
        base: dict[str, Any] = {"ratio": 1.0, "seed": 0, "optimizer": "adamw", "quick": False}
        base.update(fields)
        data_dir = base.pop("data_dir", None)
        if data_dir is None:
            raise ValueError("train_real: give data_dir (the directory docs/data.md describes)")
        spec = default_config(dataset, data_dir=str(data_dir), **base)
    elif fields:
        import dataclasses

        known = {f.name for f in dataclasses.fields(spec)}
        unknown = sorted(set(fields) - known)
        if unknown:
            raise TypeError(f"train_real: {', '.join(unknown)}: not fields of {type(spec).__name__}")
        spec = spec.replace(**fields)
    out = train_and_evaluate(spec, progress=progress, device=device, bf16=bf16)
    return RealResult(spec, out["metrics"], out["arrays"], out.get("eraser"), out.get("extras", {}))


__all__ = ["train_synthetic", "SyntheticResult", "train_real", "RealResult"]
