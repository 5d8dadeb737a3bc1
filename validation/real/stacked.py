r"""Many real-data runs in one process: ``K`` classifiers (seeds x ratios of one configuration) trained together.

The ``K`` models' parameters are stacked along a new leading axis, ``P_n (K, ...)``; one step evaluates
all ``K`` losses and gradients with :func:`torch.func.vmap` over :func:`torch.func.functional_call` of
one template module, each model on its **own** minibatch (its seed's batch order; batches right-padded
to the longest of the ``K``, which masked attention ignores), then applies each model's own optimizer
update, vectorised over ``K``:

- per-model gradient clipping to global norm :data:`~validation.real.training.CLIP_NORM`,
  :math:`g_k \leftarrow g_k \min(1, c / (\lVert g_k\rVert + 10^{-6}))` (``clip_grad_norm_``'s rule);
- AdamW (torch's update, ``betas = (0.9, 0.999)``, ``eps = 1e-8``, decoupled weight decay):
  :math:`m \leftarrow \beta_1 m + (1-\beta_1) g,\ v \leftarrow \beta_2 v + (1-\beta_2) g^2,\
  p \leftarrow p(1 - \eta\lambda) - \frac{\eta}{1-\beta_1^t}\, m / (\sqrt{v}/\sqrt{1-\beta_2^t} + \epsilon)`;
- SGD with momentum :math:`\mu`: :math:`b \leftarrow \mu b + g` (``b = g`` at the first step), :math:`p \leftarrow p - \eta b`;

with :math:`\eta = \eta_{k,n}\cdot s(t)`: the rate of parameter ``n`` in model ``k`` from that run's own
:func:`~validation.real.training.build_optimizer` groups (so the ratio and the recipe are per model) times
the shared schedule factor. The result equals ``K`` separate :func:`~validation.real.training.train` calls
to float tolerance (``tests/integration/real/test_stacked.py``). Checkpoints call each model's own
callback with its weights copied back into its module, so tracking, best-validation and evaluation are
the per-run code, and each run is still written to its own directory.
"""

from __future__ import annotations

import math
import time
from typing import Callable, Sequence

import torch
from torch import nn
from torch.func import functional_call, grad_and_value, vmap

from simulation.optimizer_defaults import ADAM_BETAS, ADAM_EPS

from .batching import ClassTensors
from .config import RealRunConfig
from .training import CLIP_NORM, TrainHistory, build_optimizer, lr_factor

SHARED = ("optimizer", "epochs", "batch_size", "schedule", "warmup", "checkpoints_per_epoch", "momentum",
          "weight_decay", "model", "dataset")
"""Fields every stacked run must share (the schedule, the step count and the update rule)."""


def check_stackable(cfgs: Sequence[RealRunConfig], models: Sequence[nn.Module], datas: Sequence[ClassTensors]) -> None:
    """``ValueError`` unless the runs share :data:`SHARED`, the data size and every parameter's shape."""
    for f in SHARED:
        vals = {getattr(c, f) for c in cfgs}
        if len(vals) > 1:
            raise ValueError(f"stacked runs must share {f}: got {sorted(map(str, vals))}")
    for c in cfgs:   # the stacked update clips at CLIP_NORM, freezes nothing and warms up by share: refuse the rest
        odd = [f for f, ok in (("clip", c.clip), ("clip_norm", c.clip_norm in (None, CLIP_NORM)), ("frozen", not c.frozen),
                               ("warmup_steps", c.warmup_steps is None)) if not ok]
        if odd:
            raise ValueError(f"stacked runs: {odd[0]}: {getattr(c, odd[0])!r}: not offered (train these runs one at a time)")
    if len({len(d) for d in datas}) > 1:
        raise ValueError("stacked runs must have the same number of training items")
    shapes = [[(n, tuple(p.shape)) for n, p in m.named_parameters()] for m in models]
    if any(s != shapes[0] for s in shapes):
        raise ValueError("stacked runs must have models of the same architecture (parameter names and shapes)")
    if any(len(list(m.buffers())) for m in models):
        raise ValueError("stacked training does not handle module buffers")


def _pad_stack(batches: list[ClassTensors]) -> tuple[torch.Tensor, ...]:
    """``(ids, valid, query_index, labels)`` of ``K`` batches stacked ``(K, B, L)``, right-padded to the longest."""
    L = max(b.ids.shape[1] for b in batches)

    def pad(t: torch.Tensor, value) -> torch.Tensor:
        return torch.nn.functional.pad(t, (0, L - t.shape[1]), value=value)

    return (torch.stack([pad(b.ids, 0) for b in batches]), torch.stack([pad(b.valid, False) for b in batches]),
            torch.stack([b.query_index for b in batches]), torch.stack([b.labels for b in batches]))


def train_stacked(  # noqa: C901 - known complexity debt (docs/architecture.md)
        models: Sequence[nn.Module], datas: Sequence[ClassTensors], cfgs: Sequence[RealRunConfig],
                  loss_fn: Callable[[Callable, ClassTensors], torch.Tensor], *,
                  on_checkpoint: Sequence[Callable[[int, float], dict] | None] | None = None,
                  device: torch.device | None = None) -> list[TrainHistory]:
    """Train ``models[k]`` on ``datas[k]`` with ``cfgs[k]`` for every ``k`` at once (module docstring).

    ``loss_fn(forward, batch)``: the per-run loss, ``forward(ids, valid, query_index)`` standing in for the
    model (e.g. :func:`~validation.real.training.classification_loss`). On return every model holds its
    trained weights (on ``device``) and ``histories[k].checkpoints`` what ``on_checkpoint[k]`` returned.
    ``seconds`` of each history is the wall time of the whole stack (``stacked`` = ``K``).
    """
    K = len(models)
    check_stackable(cfgs, models, datas)
    cfg0 = cfgs[0]
    if device is not None:
        for m in models:
            m.to(device)
    template = models[0]
    names = [n for n, _ in template.named_parameters()]
    # per-model, per-parameter base rates from each run's own optimizer groups (ratio, recipe)
    lrs = {n: torch.zeros(K, dtype=torch.float64) for n in names}
    for k, (m, c) in enumerate(zip(models, cfgs)):
        by_id = {id(p): g["lr"] for g in build_optimizer(m, c).param_groups for p in g["params"]}
        for name, prm in m.named_parameters():
            lrs[name][k] = by_id[id(prm)]
    params = {n: torch.stack([dict(m.named_parameters())[n].detach() for m in models]).clone() for n in names}
    dev = params[names[0]].device
    state1 = {n: torch.zeros_like(p) for n, p in params.items()}
    state2 = {n: torch.zeros_like(p) for n, p in params.items()}

    def one_loss(p, ids, valid, qi, labels):
        b = ClassTensors(ids=ids, valid=valid, words=valid, query_index=qi, relevant=valid, annotated=labels,
                         labels=labels)
        return loss_fn(lambda *a: functional_call(template, p, a), b)

    step_fn = vmap(grad_and_value(one_loss))
    gens = [torch.Generator().manual_seed(c.seed) for c in cfgs]
    hists = [TrainHistory() for _ in range(K)]
    n = len(datas[0])
    per_epoch = (n + cfg0.batch_size - 1) // cfg0.batch_size
    total = cfg0.epochs * per_epoch
    marks = {round(per_epoch * (j + 1) / cfg0.checkpoints_per_epoch) for j in range(cfg0.checkpoints_per_epoch)}
    callbacks = list(on_checkpoint) if on_checkpoint is not None else [None] * K

    def write_back() -> None:
        with torch.no_grad():
            for k, m in enumerate(models):
                for nm, p in m.named_parameters():
                    p.copy_(params[nm][k])

    def checkpoint(step: int) -> None:
        if not any(callbacks):
            return
        write_back()
        for k, cb in enumerate(callbacks):
            if cb is not None:
                t = time.perf_counter()
                hists[k].checkpoints.append(cb(step, step / per_epoch))
                hists[k].checkpoint_seconds += time.perf_counter() - t

    def bshape(v: torch.Tensor, p: torch.Tensor) -> torch.Tensor:
        return v.to(p.dtype).to(dev).reshape((K,) + (1,) * (p.dim() - 1))

    t0 = time.perf_counter()
    checkpoint(0)
    for m in models:
        m.train()
    step = 0
    for _ in range(cfg0.epochs):
        perms = [torch.randperm(n, generator=g) for g in gens]
        sums = torch.zeros(K, dtype=torch.float64)
        for j, i in enumerate(range(0, n, cfg0.batch_size), 1):
            idx = [perm[i:i + cfg0.batch_size] for perm in perms]
            ids, valid, qi, labels = (t.to(dev) for t in _pad_stack([d.take(ix) for d, ix in zip(datas, idx)]))
            grads, loss = step_fn(params, ids, valid, qi, labels)
            norm = torch.sqrt(sum((g.reshape(K, -1).double() ** 2).sum(1) for g in grads.values()))
            coef = torch.clamp(CLIP_NORM / (norm + 1e-6), max=1.0)
            factor = lr_factor(step, total, cfg0.schedule, cfg0.warmup)
            t = step + 1
            with torch.no_grad():
                for nm in names:
                    p, g = params[nm], grads[nm] * bshape(coef, grads[nm])
                    lr = bshape(lrs[nm] * factor, p)
                    if cfg0.weight_decay:
                        if cfg0.optimizer == "adamw":
                            p.mul_(1 - lr * cfg0.weight_decay)
                        else:
                            g = g + cfg0.weight_decay * p
                    if cfg0.optimizer == "adamw":
                        b1, b2 = ADAM_BETAS
                        state1[nm].lerp_(g, 1 - b1)
                        state2[nm].mul_(b2).addcmul_(g, g, value=1 - b2)
                        denom = (state2[nm].sqrt() / math.sqrt(1 - b2 ** t)).add_(ADAM_EPS)
                        p.sub_(lr / (1 - b1 ** t) * state1[nm] / denom)
                    else:
                        buf = state1[nm]
                        if step == 0:
                            buf.copy_(g)
                        else:
                            buf.mul_(cfg0.momentum).add_(g)
                        p.sub_(lr * buf)
            step += 1
            sums += loss.detach().double().cpu() * torch.tensor([len(ix) for ix in idx], dtype=torch.float64)
            if j in marks:
                checkpoint(step)
                for m in models:
                    m.train()
        for k in range(K):
            hists[k].epoch_loss.append(float(sums[k]) / n)
    write_back()
    wall = time.perf_counter() - t0
    for h in hists:
        h.seconds = wall - sum(x.checkpoint_seconds for x in hists)
        h.examples = n * cfg0.epochs
        h.stacked = K
    for m in models:
        m.eval()
    return hists


__all__ = ["train_stacked", "check_stackable", "SHARED"]
