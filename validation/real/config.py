"""The validated configuration of one real-data run and the defaults per dataset.

One run = one ``(dataset, ratio, seed, optimizer)``; everything else is fixed by the
dataset's defaults (and ``quick``), in particular the OV rate ``lr_ov`` and the rate of every
other parameter (embeddings, positions, head) ``lr_other = lr_ov``, identical for every ratio.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Literal

from theory.parametrization import ParamName
from theory.spec import Ge, Le, Lt, PositiveFinite, Spec

DATASETS = ("squad", "hatexplain", "sva")
OPTIMIZERS = ("adamw", "sgd")
RATIOS = (1.0, 2.0, 5.0, 10.0, 30.0)
SEEDS = (0, 1, 2)


@dataclass(frozen=True, kw_only=True)
class RealRunConfig(Spec):
    """One real-data training run (see ``docs/real-data.md`` for every choice)."""

    dataset: Literal["squad", "hatexplain", "sva"]
    ratio: PositiveFinite = 1.0
    seed: Annotated[int, Ge(0)] = 0
    optimizer: Literal["adamw", "sgd"] = "adamw"
    quick: bool = False
    data_dir: str
    param: ParamName = "CACO"
    d: Annotated[int, Ge(2), Le(1024)] = 64
    layers: Annotated[int, Ge(1), Le(6)] = 1
    epochs: Annotated[int, Ge(1), Le(1000)] = 10
    batch_size: Annotated[int, Ge(1), Le(4096)] = 32
    lr_ov: PositiveFinite = 1e-3
    lr_other: PositiveFinite | None = None
    momentum: Annotated[float, Ge(0.0), Lt(1.0)] = 0.9
    weight_decay: Annotated[float, Ge(0.0)] = 0.0
    max_train: Annotated[int, Ge(1)] | None = None
    max_test: Annotated[int, Ge(1)] | None = None
    max_len: Annotated[int, Ge(4), Le(4096)] = 256
    init_std: Annotated[float, Ge(0.0)] = 0.02

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
    return RealRunConfig(**values)