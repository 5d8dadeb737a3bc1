"""The optimizers a ``qkov validate synthetic`` run may name, declared once; importing this module imports nothing
(the command line builds its ``--optimizer`` choices and refuses options that do not apply from it, before torch).
"""

from __future__ import annotations

TRAIN_OPTIMIZERS = ("gd", "sgd", "adamw")
"""The torch optimizers the synthetic runs train with (``SyntheticConfig.optimizer``); the reduced optimizer maps
they are compared with are :data:`simulation.optimizer_maps.OPTIMIZERS`."""

MAP_OPTIMIZERS = ("adam", "momentum")
"""Optimizers judged from the symmetric start against their exact reduced map at matched loss
(:func:`validation.synthetic.adam_compare.optimizer_matched_loss`, ``OptimizerMapConfig.optimizer``)."""

APPLIES: dict[str, tuple[str, ...]] = {
    "u0": MAP_OPTIMIZERS, "v0": MAP_OPTIMIZERS, "levels": MAP_OPTIMIZERS, "stop_loss": MAP_OPTIMIZERS,
    "betas": MAP_OPTIMIZERS, "eps": ("adam",), "weight_decay": ("adam", "momentum", "adamw"),
    "progress": TRAIN_OPTIMIZERS,
}
"""Option -> the optimizers it applies to; given with any other it is refused, not ignored (issue 44). ``betas``:
Adam's (B1, B2), momentum's coefficient B1; ``eps``: Adam's; ``weight_decay``: Adam's (AdamW with it), momentum's
and the torch AdamW's (``SyntheticConfig.weight_decay``); the symmetric start ``u0, v0``, the matched losses
``levels`` and ``stop_loss`` are the optimizer map's; progress bars are drawn by the torch runs only."""

__all__ = ["TRAIN_OPTIMIZERS", "MAP_OPTIMIZERS", "APPLIES"]
