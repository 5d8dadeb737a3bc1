r"""Training loops: full-batch gradient descent (the discrete gradient flow), SGD and AdamW.

All use separate QK and OV learning rates (:func:`validation.param_groups.model_param_groups`):
:math:`\eta_{QK}\,dt` and :math:`\eta_{OV}\,dt` per step, so step ``n`` of full-batch GD is the
Euler step of the flow :math:`\dot W = -\eta\,\nabla\mathcal L` and sits at ODE time
:math:`t = n\,dt`. The loss of a batch is the mean cross-entropy
:math:`\frac1B\sum_b \mathrm{CE}(z_b, y_b)` (for the population batch, MODEL.md's population loss).

Runs are reproducible bit for bit on CPU: data and initialisation come from seeded
:class:`torch.Generator` s and nothing else is random.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import torch
from torch.nn import functional as F
from tqdm.auto import tqdm

from validation.attention import QKOVAttention
from validation.param_groups import make_optimizer, model_param_groups
from validation.synthetic.data import Batch

from validation.synthetic.optimizers import TRAIN_OPTIMIZERS  # declared there (imports nothing); kept here too


@dataclass
class TrainLog:
    """Columns logged during training: ``step``, ``t`` (``step * dt``), ``batch_loss``, and every observable."""

    columns: dict[str, list[float]] = field(default_factory=dict)
    wall_s: float = 0.0

    def add(self, row: dict[str, float]) -> None:
        for k, v in row.items():
            self.columns.setdefault(k, []).append(float(v))

    def arrays(self) -> dict[str, np.ndarray]:
        """The log as float64 arrays of equal length."""
        return {k: np.asarray(v, dtype=np.float64) for k, v in self.columns.items()}


def make_circuit_optimizer(model: QKOVAttention, optimizer: str, *, eta_ov: float, ratio: float, dt: float,
                           weight_decay: float = 0.0, **kwargs) -> torch.optim.Optimizer:
    r"""``optimizer`` in ``gd | sgd | adamw`` with :math:`\eta_{OV} dt` on OV and :math:`\text{ratio}\,\eta_{OV} dt` on QK.

    ``gd``/``sgd`` are plain :class:`torch.optim.SGD` (no momentum); AdamW uses ``weight_decay``.
    """
    if optimizer not in TRAIN_OPTIMIZERS:
        raise ValueError(f"optimizer {optimizer!r}: must be one of {', '.join(TRAIN_OPTIMIZERS)}")
    groups = model_param_groups(model, lr_ov=eta_ov * dt, ratio=ratio)
    if optimizer == "adamw":
        return make_optimizer("adamw", groups, weight_decay=weight_decay, **kwargs)
    return make_optimizer("sgd", groups, weight_decay=weight_decay, **kwargs)


def batch_loss(model: QKOVAttention, batch: Batch) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Mean cross-entropy of a batch; returns ``(loss, logits (B, d_out), attention (B, L))``."""
    logits, attn = model(batch.x.to(next(model.parameters()).dtype), batch.mask)
    return F.cross_entropy(logits, batch.y), logits, attn


def train(model: QKOVAttention, next_batch: Callable[[int], Batch], optimizer: torch.optim.Optimizer,
          steps: int, *, observe: Callable[[QKOVAttention], dict[str, float]], log_every: int = 10,
          dt: float = 1.0, progress: bool | None = None, stop_loss: float | None = None) -> TrainLog:
    """Run ``steps`` optimizer steps, logging ``observe(model)`` at step 0, every ``log_every`` and at the end.

    ``next_batch(step)`` returns the batch of that step (the same object every step for full-batch
    GD). A progress bar is shown when ``progress`` is True (default: runs of 20,000+ steps).
    Training stops early once the logged ``loss`` falls to ``stop_loss``.
    """
    log = TrainLog()
    show = steps >= 20_000 if progress is None else progress
    start = time.perf_counter()
    last_batch_loss = float("nan")

    def record(step: int) -> dict[str, float]:
        row = {"step": step, "t": step * dt, "batch_loss": last_batch_loss}
        row.update(observe(model))
        log.add(row)
        return row

    row = record(0)
    with tqdm(total=steps, disable=not show, desc=f"train {model.param}", leave=False) as bar:
        for step in range(1, steps + 1):
            batch = next_batch(step)
            optimizer.zero_grad(set_to_none=True)
            loss, _, _ = batch_loss(model, batch)
            loss.backward()
            optimizer.step()
            last_batch_loss = float(loss.detach())
            bar.update(1)
            if step % log_every == 0 or step == steps:
                row = record(step)
                if stop_loss is not None and row.get("loss", np.inf) <= stop_loss:
                    break
    log.wall_s = time.perf_counter() - start
    return log
