"""The default hyper-parameters of the element-wise optimizers, declared once.

torch's defaults (``torch.optim.Adam``/``AdamW``: ``betas = (0.9, 0.999)``, ``eps = 1e-8``), which the
reduced optimizer maps (:mod:`simulation.optimizer_maps`), the torch runs that check them
(:mod:`validation.synthetic`) and the command-line options (``qkov simulate``, ``qkov validate synthetic``)
all default to. Plain numbers: importing this module imports nothing.
"""

from __future__ import annotations

ADAM_BETAS: tuple[float, float] = (0.9, 0.999)
"""Adam's ``(beta1, beta2)``: the decay of the first and second moment averages; ``beta1`` is also the
default coefficient of heavy-ball and Nesterov momentum."""
ADAM_EPS: float = 1e-8
"""Adam's ``eps``, added to the square root of the second moment in the update's denominator."""

__all__ = ["ADAM_BETAS", "ADAM_EPS"]
