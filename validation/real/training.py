r"""Training with per-circuit learning rates: the only intervention is :math:`\eta_{QK}/\eta_{OV}`.

The QK parameters (``W_KQ`` or ``W_K, W_Q`` of every attention layer) train at
``ratio * lr_ov``, the OV parameters at ``lr_ov``, everything else (embeddings, positions,
heads) at ``lr_other`` (default ``lr_ov``) for every ratio (``recipe="ratio-only"``, the default).
``recipe="paper"`` is the official code's recipe: the dataset's ``paper_recipe`` kinds (HateXplain the
embeddings, SVA the embeddings and biases) also train at ``ratio * lr_ov`` (:func:`apply_recipe`). The schedule
(``constant``, or ``cosine``: linear warm-up over the first ``warmup`` share of the steps, then
cosine decay to 0) multiplies every group's rate by the same factor, so the ratio is kept; the
gradient is clipped to global norm :data:`CLIP_NORM` (a global rescaling keeps the ratio between
the circuits' steps). ``on_checkpoint`` is called at step 0 and ``checkpoints_per_epoch`` times
per epoch; what it returns is kept in :attr:`TrainHistory.checkpoints`.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Callable

import torch
import torch.nn.functional as F
from torch import nn
from tqdm.auto import tqdm

from validation.param_groups import make_optimizer, model_param_groups

from validation.device import autocast

from .batching import ClassTensors, to_device
from .config import RealRunConfig

CLIP_NORM = 5.0


@dataclass
class TrainHistory:
    """Mean training loss per epoch, wall time and throughput."""

    epoch_loss: list[float] = field(default_factory=list)
    seconds: float = 0.0
    examples: int = 0
    checkpoints: list[dict] = field(default_factory=list)
    checkpoint_seconds: float = 0.0
    stacked: int = 1
    """How many runs were trained together in this process (:mod:`validation.real.stacked`)."""

    @property
    def examples_per_second(self) -> float:
        return self.examples / self.seconds if self.seconds > 0 else float("nan")


def recipe_parameters(model: nn.Module, kinds: tuple[str, ...], exclude: set[int]) -> list[nn.Parameter]:
    """The parameters of ``model`` of the recipe ``kinds`` not in ``exclude`` (ids): ``"embedding"`` = the
    weights of every :class:`torch.nn.Embedding` (words, distances/positions, token types), ``"bias"`` =
    every parameter named ``*bias`` (for the paper classifier: the LayerNorm's and the head's; its
    attention has no Q/K/V biases)."""
    out: list[nn.Parameter] = []
    seen = set(exclude)
    if "embedding" in kinds:
        for m in model.modules():
            if isinstance(m, nn.Embedding) and id(m.weight) not in seen:
                out.append(m.weight)
                seen.add(id(m.weight))
    if "bias" in kinds:
        for name, p in model.named_parameters():
            if name.rsplit(".", 1)[-1].endswith("bias") and id(p) not in seen:
                out.append(p)
                seen.add(id(p))
    return out


def apply_recipe(groups: list[dict], model: nn.Module, cfg: RealRunConfig) -> list[dict]:
    """``cfg.recipe == "paper"``: the dataset's :attr:`~validation.real.datasets.Dataset.paper_recipe`
    parameters leave the ``"other"`` group for a group ``"other-at-qk-rate"`` at ``ratio * lr_ov`` (the
    official code's recipe); ``"ratio-only"``: ``groups`` unchanged (only W_Q, W_K move with the ratio)."""
    if cfg.recipe != "paper":
        return groups
    from .datasets import get

    circuits = {id(p) for g in groups if g.get("circuit") in ("qk", "ov") for p in g["params"]}
    moved = recipe_parameters(model, get(cfg.dataset).paper_recipe, circuits)
    if not moved:
        return groups
    ids = {id(p) for p in moved}
    out = []
    for g in groups:
        if g.get("circuit") == "other":
            kept = [p for p in g["params"] if id(p) not in ids]
            if kept:
                out.append({**g, "params": kept})
        else:
            out.append(g)
    opts = {k: v for k, v in groups[0].items() if k not in ("params", "lr", "circuit")}
    return out + [{"params": moved, "lr": cfg.ratio * cfg.lr_ov, "circuit": "other-at-qk-rate", **opts}]


def build_optimizer(model: nn.Module, cfg: RealRunConfig) -> torch.optim.Optimizer:
    """AdamW or SGD(+momentum) over the qk / ov / other parameter groups of ``model`` (and, with
    ``recipe="paper"``, the group of :func:`apply_recipe`)."""
    if hasattr(model, "param_groups"):   # a model that declares its own circuits (pretrained MiniLM)
        groups = model.param_groups(lr_ov=cfg.lr_ov, ratio=cfg.ratio, lr_other=cfg.lr_other or cfg.lr_ov)
    else:
        groups = model_param_groups(model, lr_ov=cfg.lr_ov, ratio=cfg.ratio, lr_other=cfg.lr_other or cfg.lr_ov)
    groups = apply_recipe(groups, model, cfg)
    if cfg.optimizer == "sgd":
        return make_optimizer("sgd", groups, momentum=cfg.momentum, weight_decay=cfg.weight_decay)
    return make_optimizer("adamw", groups, weight_decay=cfg.weight_decay)


def lr_factor(step: int, total: int, schedule: str, warmup: float) -> float:
    """The rate multiplier at optimizer step ``step`` of ``total`` (1 for ``constant``)."""
    if schedule == "constant":
        return 1.0
    w = int(round(warmup * total))
    if step < w:
        return (step + 1) / w
    return 0.5 * (1.0 + math.cos(math.pi * (step - w) / max(total - w, 1)))


def classification_loss(model: nn.Module, b: ClassTensors) -> torch.Tensor:
    """Cross-entropy of the class logits read at ``[CLS]``."""
    logits, _ = model(b.ids, b.valid, b.query_index)
    return F.cross_entropy(logits, b.labels)


def train(model: nn.Module, data, cfg: RealRunConfig,
          loss_fn: Callable[[nn.Module, object], torch.Tensor], *, progress: bool = True,
          desc: str = "train", on_checkpoint: Callable[[int, float], dict] | None = None,
          device: torch.device | None = None, bf16: bool = False) -> TrainHistory:
    """Minibatch training for ``cfg.epochs`` epochs, shuffled by a generator seeded with ``cfg.seed``.

    ``device``: the model is moved there before the optimizer is built and every batch is moved
    there as it is taken (``data`` stays where it is; the shuffling generator is a CPU one, so the
    batch order is the same on every device). ``bf16``: the loss is computed under CUDA bf16
    autocast (:func:`validation.device.autocast`); the parameters and the optimizer stay float32.
    """
    if device is not None:
        model.to(device)
    opt = build_optimizer(model, cfg)
    gen = torch.Generator().manual_seed(cfg.seed)
    hist = TrainHistory()
    n = len(data)
    per_epoch = (n + cfg.batch_size - 1) // cfg.batch_size
    total = cfg.epochs * per_epoch
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: lr_factor(s, total, cfg.schedule, cfg.warmup))
    marks = {round(per_epoch * (k + 1) / cfg.checkpoints_per_epoch) for k in range(cfg.checkpoints_per_epoch)}

    def checkpoint(step: int) -> None:
        if on_checkpoint is not None:
            t = time.perf_counter()
            hist.checkpoints.append(on_checkpoint(step, step / per_epoch))
            hist.checkpoint_seconds += time.perf_counter() - t
            model.train()

    t0 = time.perf_counter()
    checkpoint(0)
    model.train()
    bar = tqdm(total=total, desc=desc, disable=not progress, leave=False, mininterval=1.0)
    step = 0
    for _ in range(cfg.epochs):
        perm = torch.randperm(n, generator=gen)
        total_loss, count = 0.0, 0
        for j, i in enumerate(range(0, n, cfg.batch_size), 1):
            idx = perm[i:i + cfg.batch_size]
            with autocast(device or torch.device("cpu"), bf16):
                loss = loss_fn(model, to_device(data.take(idx), device))
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), CLIP_NORM)
            opt.step()
            sched.step()
            step += 1
            total_loss += float(loss.detach()) * len(idx)
            count += len(idx)
            bar.update(1)
            if j in marks:
                checkpoint(step)
        hist.epoch_loss.append(total_loss / max(count, 1))
    bar.close()
    hist.seconds = time.perf_counter() - t0 - hist.checkpoint_seconds
    hist.examples = n * cfg.epochs
    model.eval()
    return hist
