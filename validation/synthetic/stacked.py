r"""Training many small models at once: parameters stacked along a leading model axis, gradients by ``vmap``.

For one parametrization, ``n`` models (ratios x seeds) share the population batch; their
parameters are stacked into tensors of shape ``(n, ...)`` and full-batch gradient descent runs as

.. math::
    W^{(i)} \leftarrow W^{(i)} - \eta^{(i)}_{c}\,dt\;\nabla_{W^{(i)}}\mathcal L(W^{(i)}),
    \qquad c \in \{QK, OV\},\ i = 1..n,

with the gradients of all models from one ``torch.func.vmap(torch.func.grad(loss))`` call.
:func:`train_loop` does the same models one at a time with :class:`torch.optim.SGD`; the two agree
to rounding (tested), and ``benchmarks/bench_stacked_training.py`` times one against the other.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import torch
from torch.func import functional_call, grad, vmap
from torch.nn import functional as F

from validation.synthetic.data import population_batch
from validation.synthetic.models import random_model
from validation.synthetic.trainer import make_circuit_optimizer
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
