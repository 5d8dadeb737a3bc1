"""The validated configuration of one real-data run and the defaults per dataset.

One run = one ``(dataset, ratio, seed, optimizer)``; everything else is fixed by the
dataset's defaults (and ``quick``), in particular the OV rate ``lr_ov`` and the rate of every
other parameter (embeddings, positions, head) ``lr_other = lr_ov``, identical for every ratio.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from theory.config import Parametrization, PositiveFinite, StrictConfig, parse_config

DATASETS = ("squad", "hatexplain", "sva")
OPTIMIZERS = ("adamw", "sgd")
RATIOS = (1.0, 2.0, 5.0, 10.0, 30.0)
SEEDS = (0, 1, 2)


class RealRunConfig(StrictConfig):
    """One real-data training run (see ``docs/real-data.md`` for every choice)."""

    dataset: Literal["squad", "hatexplain", "sva"]
    ratio: PositiveFinite = 1.0
    seed: int = Field(0, ge=0)
    optimizer: Literal["adamw", "sgd"] = "adamw"
    quick: bool = False
    data_dir: str
    param: Parametrization = "CACO"
    d: int = Field(64, ge=2, le=1024)
    layers: int = Field(1, ge=1, le=6)
    epochs: int = Field(10, ge=1, le=1000)
    batch_size: int = Field(32, ge=1, le=4096)
    lr_ov: PositiveFinite = 1e-3
    lr_other: PositiveFinite | None = None
    momentum: float = Field(0.9, ge=0.0, lt=1.0)
    weight_decay: float = Field(0.0, ge=0.0)
    max_train: int | None = Field(None, ge=1)
    max_test: int | None = Field(None, ge=1)
    max_len: int = Field(256, ge=4, le=4096)
    init_std: float = Field(0.02, ge=0.0)

    @property
    def eta_qk(self) -> float:
        """The QK learning rate ``ratio * lr_ov``."""
        return self.ratio * self.lr_ov


# (full, quick) overrides per dataset; the optimizer sets lr_ov (AdamW 3e-3, SGD+momentum 0.05).
_DEFAULTS: dict[str, dict[bool, dict]] = {
    "hatexplain": {False: dict(d=64, epochs=8, batch_size=32, max_len=192),
                   True: dict(d=32, epochs=5, batch_size=32, max_len=192, max_train=4000, max_test=500)},
    "sva": {False: dict(d=64, epochs=15, batch_size=32, max_len=64),
            True: dict(d=32, epochs=8, batch_size=32, max_len=64, max_train=3000, max_test=500)},
    "squad": {False: dict(d=64, epochs=8, batch_size=32, max_len=256),
              True: dict(d=32, epochs=3, batch_size=32, max_len=160, max_train=2000, max_test=400)},
}
_LR = {"adamw": 3e-3, "sgd": 0.05}


def default_config(dataset: str, *, ratio: float, seed: int, optimizer: str, quick: bool, data_dir: str,
                   **overrides) -> RealRunConfig:
    """The run configuration of the study for one (dataset, ratio, seed, optimizer)."""
    values = dict(dataset=dataset, ratio=ratio, seed=seed, optimizer=optimizer, quick=quick,
                  data_dir=str(data_dir), lr_ov=_LR.get(optimizer, 1e-3))
    values.update(_DEFAULTS.get(dataset, {}).get(bool(quick), {}))
    values.update(overrides)
    return parse_config(RealRunConfig, **values)
