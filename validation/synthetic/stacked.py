r"""Training many small models at once.

Two trainers:

* :func:`train_models` — what ``qkov validate synthetic`` and the study's synthetic stage train with
  (:func:`validation.synthetic.experiment.run_grid`): every (parametrization, ratio) of one config at once, on the
  batches they share. All models' factors live in one flat vector :math:`\theta`; each step forms every model's
  effective matrices, runs :func:`effective_forward` for all of them, differentiates
  :math:`\sum_i \mathcal L_i` once (the models are independent, so each gets its own gradient) and applies the
  optimizer's element-wise step (:data:`simulation.optimizer_maps.OPTIMIZERS`) with per-element rates:

  .. math::
      W^{(i)} \leftarrow W^{(i)} - \eta^{(i)}_{c}\,dt\;\nabla_{W^{(i)}}\mathcal L_i(W^{(i)}),
      \qquad c \in \{QK, OV\},\ i = 1..n \quad\text{(GD/SGD; AdamW likewise)}.

  Parametrizations of different factor shapes share the stack (only the effective matrices enter the layer).
* :func:`train_stacked` — ``n`` models (ratios x seeds) of one parametrization with gradients from one
  ``torch.func.vmap(torch.func.grad(loss))`` call; :func:`train_loop` does the same models one at a time with
  :class:`torch.optim.SGD`. ``benchmarks/bench_stacked_training.py`` times the trainers against the loop.

Both agree with the per-model loop to rounding (tests/integration/synthetic/test_stacked_and_cli.py,
test_stacked_grid.py).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Callable, Sequence

import torch
from torch.func import functional_call, grad, vmap
from torch.nn import functional as F
from tqdm.auto import tqdm

from validation.attention import QKOVAttention
from validation.synthetic.data import Batch, population_batch
from validation.synthetic.models import random_model
from validation.synthetic.trainer import TrainLog, make_circuit_optimizer
from theory.parametrization import Parametrization


@dataclass(frozen=True)
class StackedResult:
    """Final parameters ``{name: (n, ...)}``, final population losses ``(n,)`` and the wall time."""

    params: dict[str, torch.Tensor]
    losses: torch.Tensor
    wall_s: float


def _initial_models(param: Parametrization, K: int, M: int, seeds: list[int], init_std: float, dtype: torch.dtype):
    D = K + M + 1
    return [random_model(param, D, K, init_std, s, rank_qk=D, rank_ov=D, dtype=dtype) for s in seeds]


def train_stacked(param: Parametrization, K: int, M: int, ratios: list[float], seeds: list[int], steps: int, *,
                  eta_ov: float = 1.0, dt: float = 0.05, init_std: float = 0.1,
                  dtype: torch.dtype = torch.float64) -> StackedResult:
    """Full-batch GD of ``len(ratios) * len(seeds)`` models (model ``i = r * len(seeds) + s``) in one stack."""
    batch = population_batch(K, M, dtype)
    models = _initial_models(param, K, M, seeds, init_std, dtype) * len(ratios)
    base = models[0]
    names = [n for n, _ in base.named_parameters()]
    params = {n: torch.stack([dict(m.named_parameters())[n].detach().clone() for m in models]) for n in names}
    qk_names = {n for n, p in base.named_parameters() if any(p is q for q in base.qk_parameters())}
    ratio_per_model = torch.tensor([r for r in ratios for _ in seeds], dtype=dtype)
    lrs = {n: (ratio_per_model * eta_ov * dt if n in qk_names else torch.full_like(ratio_per_model, eta_ov * dt))
           for n in names}

    def loss_fn(p: dict[str, torch.Tensor]) -> torch.Tensor:
        logits, _ = functional_call(base, p, (batch.x,))
        return F.cross_entropy(logits, batch.y)

    grads_of = vmap(grad(loss_fn))
    start = time.perf_counter()
    with torch.no_grad():
        for _ in range(steps):
            g = grads_of(params)
            params = {n: params[n] - lrs[n].view(-1, *([1] * (params[n].dim() - 1))) * g[n] for n in names}
        losses = vmap(loss_fn)(params)
    return StackedResult(params=params, losses=losses, wall_s=time.perf_counter() - start)


def train_loop(param: Parametrization, K: int, M: int, ratios: list[float], seeds: list[int], steps: int, *,
               eta_ov: float = 1.0, dt: float = 0.05, init_std: float = 0.1,
               dtype: torch.dtype = torch.float64) -> StackedResult:
    """The same models as :func:`train_stacked`, trained one after another with :class:`torch.optim.SGD`."""
    batch = population_batch(K, M, dtype)
    finals: list[dict[str, torch.Tensor]] = []
    losses = []
    start = time.perf_counter()
    for ratio in ratios:
        for model in _initial_models(param, K, M, seeds, init_std, dtype):
            opt = make_circuit_optimizer(model, "gd", eta_ov=eta_ov, ratio=ratio, dt=dt)
            for _ in range(steps):
                opt.zero_grad(set_to_none=True)
                logits, _ = model(batch.x)
                F.cross_entropy(logits, batch.y).backward()
                opt.step()
            with torch.no_grad():
                logits, _ = model(batch.x)
                losses.append(F.cross_entropy(logits, batch.y))
            finals.append({n: p.detach().clone() for n, p in model.named_parameters()})
    wall = time.perf_counter() - start
    params = {n: torch.stack([f[n] for f in finals]) for n in finals[0]}
    return StackedResult(params=params, losses=torch.stack(losses), wall_s=wall)


# -- many models of one grid, one optimizer step for all ------------------------------------------------------------

STACK_OPTIMIZERS = {"gd": "gd", "sgd": "gd", "adamw": "adamw"}
"""The synthetic trainer's optimizers (:data:`validation.synthetic.trainer.TRAIN_OPTIMIZERS`) -> the element-wise
step of :data:`simulation.optimizer_maps.OPTIMIZERS` that is the same update as the torch optimizer
:func:`~validation.synthetic.trainer.make_circuit_optimizer` builds (SGD without momentum; AdamW at torch's
defaults, :mod:`simulation.optimizer_defaults`)."""


def stack_key(model: QKOVAttention) -> tuple:
    """What models must share to train in one stack: input and output sizes and dtype (the forward's shapes)."""
    p = next(model.parameters())
    return model.d_in, model.d_out, p.dtype, p.device


@dataclass
class _Group:
    """Models of one parametrization and factor shapes; factor ``f`` of them is the ``(n, rows, cols)`` view of
    block ``first + f`` of the flat parameter vector."""

    param: Parametrization
    members: list[int]                    # indices into the models list
    first: int = 0                        # index of the group's first block
    names: list[str] = field(default_factory=list)
    shapes: list[tuple[int, ...]] = field(default_factory=list)
    n_qk: int = 0
    scale: torch.Tensor | None = None     # (n, 1, 1) score multipliers; None when all are 1


def _layout(models: Sequence[QKOVAttention], ratios: Sequence[float], eta_ov: float, dt: float
            ) -> tuple[list[_Group], list[int], torch.Tensor, torch.Tensor]:
    """Groups, the block sizes, the flat parameter vector ``theta`` (every model's factors) and its per-element
    rates ``lr``."""
    by: dict[tuple, _Group] = {}
    for i, m in enumerate(models):
        shapes = tuple((n, tuple(p.shape)) for n, p in m.named_parameters())
        by.setdefault((m.param, shapes), _Group(m.parametrization, [])).members.append(i)
    pieces: list[torch.Tensor] = []
    rates: list[torch.Tensor] = []
    sizes: list[int] = []
    lr_ov = eta_ov * dt
    for g in by.values():
        qk = set(g.param.qk.factors)
        g.n_qk, g.first = len(qk), len(sizes)
        for name in (*g.param.qk.factors, *g.param.ov.factors):
            vals = torch.stack([getattr(models[i], name).detach() for i in g.members])
            pieces.append(vals.reshape(-1))
            per = [ratios[i] * lr_ov if name in qk else lr_ov for i in g.members]   # as circuit_param_groups
            rates.append(torch.tensor(per, dtype=vals.dtype).repeat_interleave(vals[0].numel()))
            g.names.append(name)
            g.shapes.append(tuple(vals.shape))
            sizes.append(vals.numel())
        scales = [models[i].scale for i in g.members]
        g.scale = None if all(c == 1 for c in scales) else torch.tensor(scales, dtype=vals.dtype).view(-1, 1, 1)
    return list(by.values()), sizes, torch.cat(pieces), torch.cat(rates)


def _effective(groups: list[_Group], sizes: list[int], theta: torch.Tensor
               ) -> tuple[torch.Tensor, torch.Tensor, list[int]]:
    """Effective ``W_KQ`` (scale included) ``(N, D, D)``, ``W_OV`` ``(N, K, D)`` of every model and the model
    index of each row."""
    blocks = theta.split(sizes)
    wkq, wov, order = [], [], []
    for g in groups:
        mats = [blocks[g.first + f].view(shape) for f, shape in enumerate(g.shapes)]
        qk = g.param.qk.effective(mats[: g.n_qk])
        wkq.append(qk if g.scale is None else qk * g.scale)
        wov.append(g.param.ov.effective(mats[g.n_qk:]))
        order += g.members
    return torch.cat(wkq), torch.cat(wov), order


def effective_forward(wkq: torch.Tensor, wov: torch.Tensor, batch: Batch) -> tuple[torch.Tensor, torch.Tensor]:
    r"""The layer of :class:`~validation.attention.QKOVAttention` for ``N`` models from their effective matrices.

    :math:`s_{nbj} = x_{bj}^\top W^{(n)}_{KQ} x_{bq}` (masked positions :math:`-\infty`),
    :math:`a = \operatorname{softmax}_j s`, :math:`z_{nb} = W^{(n)}_{OV} \sum_j a_{nbj} x_{bj}`: the kinds'
    ``scores``/``apply`` are these products, factored; here :math:`W_{KQ} x_q` is formed first, so a score costs
    :math:`O(D)` per position. ``wkq`` ``(N, D, D)`` (the score scale included), ``wov`` ``(N, K, D)``; ``batch.x``
    ``(B, L, D)`` is shared by all models. Returns logits ``(N, B, K)`` and attention ``(N, B, L)``.
    """
    x = batch.x.to(wkq.dtype)
    s = torch.einsum("bld,nbd->nbl", x, torch.einsum("nde,be->nbd", wkq, x[:, -1]))
    if batch.mask is not None:
        s = s.masked_fill(~batch.mask, float("-inf"))
    a = torch.softmax(s, dim=-1)
    return torch.einsum("nbl,bld->nbd", a, x) @ wov.mT, a


def model_effective(model: QKOVAttention) -> tuple[torch.Tensor, torch.Tensor]:
    """One model's effective ``W_KQ`` (scale included) ``(1, D, D)`` and ``W_OV`` ``(1, K, D)`` for
    :func:`effective_forward`."""
    return (model.effective_qk() * model.scale)[None], model.effective_ov()[None]


def stacked_losses(wkq: torch.Tensor, wov: torch.Tensor, batch: Batch) -> torch.Tensor:
    """Mean cross-entropy of the batch for each of ``N`` models, ``(N,)`` (:func:`effective_forward`)."""
    logits, _ = effective_forward(wkq, wov, batch)
    n, B = logits.shape[:2]
    ce = F.cross_entropy(logits.reshape(n * B, -1), batch.y.repeat(n), reduction="none")
    return ce.view(n, B).mean(1)


def train_models(models: Sequence[QKOVAttention], ratios: Sequence[float], next_batch: Callable[[int], Batch],
                 optimizer: str, steps: int, *, observe: Sequence[Callable[[QKOVAttention], dict[str, float]]],
                 eta_ov: float, dt: float, weight_decay: float = 0.0, log_every: int = 10,
                 progress: bool | None = None) -> list[TrainLog]:
    r"""Train ``models[i]`` at :math:`\eta_{QK}/\eta_{OV}` = ``ratios[i]`` on one common batch stream, all at once.

    What :func:`~validation.synthetic.trainer.train` does for each model with
    :func:`~validation.synthetic.trainer.make_circuit_optimizer`'s optimizer (rates :math:`\eta_{OV} dt` on OV,
    ``ratio`` times that on QK), in one stack: every model's factors live in one flat vector :math:`\theta`
    (models of one parametrization side by side, ``(n, rows, cols)`` views), the loss
    :math:`\sum_i \mathcal L_i(\theta_i)` of :func:`stacked_losses` is differentiated once (the models are
    independent, so its gradient is every model's own), and the optimizer's element-wise step
    (:data:`STACK_OPTIMIZERS`) updates :math:`\theta` with per-element rates. Equal to the per-model loop to
    rounding (the products are grouped differently; tests/integration/synthetic/test_stacked_grid.py).

    Every model must have the same :func:`stack_key` and its batches must be ``next_batch(step)``'s (the caller's
    contract: runs whose data differ cannot share a stack). Logs like ``train``: step 0, every ``log_every`` and
    the last step, ``observe[i](models[i])`` with the model's parameters written back first; ``batch_loss`` is the
    model's loss on the step's batch. The models end holding their trained parameters. Each log's ``wall_s`` is
    the stack's wall time divided by the number of models (its share).
    """
    if optimizer not in STACK_OPTIMIZERS:
        raise ValueError(f"optimizer {optimizer!r}: must be one of {', '.join(STACK_OPTIMIZERS)}")
    if not (len(models) == len(ratios) == len(observe)) or not models:
        raise ValueError(f"{len(models)} models, {len(ratios)} ratios, {len(observe)} observers: need as many, >= 1")
    if len({stack_key(m) for m in models}) != 1:
        raise ValueError("models of one stack need the same d_in, d_out, dtype and device")
    from simulation.optimizer_defaults import ADAM_BETAS, ADAM_EPS
    from simulation.optimizer_maps import OPTIMIZERS

    step_fn = OPTIMIZERS[STACK_OPTIMIZERS[optimizer]].step
    hyper = SimpleNamespace(beta1=ADAM_BETAS[0], beta2=ADAM_BETAS[1], eps=ADAM_EPS, weight_decay=weight_decay)
    groups, sizes, theta, lr = _layout(models, ratios, eta_ov, dt)
    state = {b: torch.zeros_like(theta) for b in OPTIMIZERS[STACK_OPTIMIZERS[optimizer]].buffers}
    logs = [TrainLog() for _ in models]
    last = torch.full((len(models),), float("nan"), dtype=torch.float64)

    def record(step: int) -> None:
        blocks = theta.detach().split(sizes)
        with torch.no_grad():
            for g in groups:
                for f, (name, shape) in enumerate(zip(g.names, g.shapes)):
                    vals = blocks[g.first + f].view(shape)
                    for k, i in enumerate(g.members):
                        getattr(models[i], name).copy_(vals[k])
        for i, (m, log) in enumerate(zip(models, logs)):
            log.add({"step": step, "t": step * dt, "batch_loss": float(last[i]), **observe[i](m)})

    show = steps >= 20_000 if progress is None else progress
    start = time.perf_counter()
    record(0)
    with tqdm(total=steps, disable=not show, desc=f"train {len(models)} stacked", leave=False) as bar:
        for step in range(1, steps + 1):
            batch = next_batch(step)
            theta.requires_grad_(True)
            wkq, wov, order = _effective(groups, sizes, theta)
            losses = stacked_losses(wkq, wov, batch)
            (g,) = torch.autograd.grad(losses.sum(), theta)
            with torch.no_grad():
                theta, state = step_fn(theta.detach(), g, state, lr, hyper, step)
                last[order] = losses.detach().to(last.dtype)
            bar.update(1)
            if step % log_every == 0 or step == steps:
                record(step)
    wall = time.perf_counter() - start
    for log in logs:
        log.wall_s = wall / len(models)
    return logs
