r"""Full-matrix synthetic models trained for a grid of configurations at once (``torch.func``): phase diagrams.

The torch counterpart of :func:`simulation.optimizer_batch.run_orbit_maps`, with the same conventions: ``C``
configurations of one parametrization and one optimizer of :data:`simulation.optimizer_maps.OPTIMIZERS`, each with
its own rates ``eta_qk, eta_ov, dt``, hyper-parameters ``beta1, beta2, eps, weight_decay`` and symmetric start
``u0, v0`` (scalars or arrays broadcasting to ``(C,)``; ``K, M`` are common, they fix the shapes). The model is the
full-matrix :class:`~validation.attention.QKOVAttention` on MODEL.md's population from the symmetric start
(:func:`~validation.synthetic.models.symmetric_model`, factorized OV in the class basis, as
:func:`~validation.synthetic.adam_compare.train_symmetric`). Each step

.. math::
    g^{(c)} = \nabla \mathcal L(W^{(c)}) \quad (\texttt{vmap(grad\_and\_value(}\mathcal L\circ
    \texttt{functional\_call))}), \qquad W^{(c)} \leftarrow \mathrm{step}(W^{(c)}, g^{(c)};\ \eta^{(c)}_{QK|OV}dt,
    \beta^{(c)}_1, \beta^{(c)}_2, \varepsilon^{(c)}, \lambda^{(c)}),

with the registry's element-wise step on parameters stacked ``(C, rows, cols)`` and hyper-parameters ``(C, 1, 1)``.
:func:`train_grid_loop` trains the same configurations one after another with the torch optimizer the registry names
(``torch_name``, ``torch_kwargs``); the two agree to rounding where round-off is not amplified
(tests/integration/synthetic/test_grid_training.py: 1e-10, measured 1e-14 on the observables), and
``benchmarks/bench_grid_training.py`` times them.

Caveat, Adam from the exact symmetric start (``noise = 0``): the gradient entries that vanish by symmetry are
round-off (~1e-17 to 1e-10), which Adam divides by ``|g| + eps`` and turns into steps up to the full rate, so those
directions follow whichever code rounds the gradient: grid and loop then differ by up to ~1e-5 on ``u, v, loss``
after 40 steps (12 configurations, K = 5, M = 4; GD and momentum agree to 1e-16 there). Neither is more right;
a small ``noise`` makes the start generic.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from types import SimpleNamespace

import numpy as np
import torch
from torch.func import functional_call, grad_and_value, vmap
from torch.nn import functional as F

from simulation.model_matrices import TokenLayout
from simulation.optimizer_batch import HYPER_DEFAULTS
from theory.parametrization import Parametrization
from validation.attention import QKOVAttention
from validation.synthetic.data import population_batch
from validation.synthetic.models import symmetric_model
from validation.synthetic.stacked import effective_forward

GRID_OBSERVABLES = ("u", "v", "p", "residual", "loss", "distance")
"""What :func:`grid_observables` measures at each recorded step (the reduced maps' observables)."""

_CONFIG = ("eta_qk", "eta_ov", "dt", "u0", "v0", "noise", *HYPER_DEFAULTS)


@dataclass(frozen=True)
class GridRuns:
    r"""``C`` full-matrix runs on common step numbers: ``step (T,)``, ``t (T, C)`` (:math:`n\,dt`), observables
    ``u, v, p, residual, loss, distance`` each ``(T, C)`` (:func:`grid_observables`), the final factors ``params``
    ``{name: (C, rows, cols)}``, the configurations ``config`` as arrays ``(C,)`` and the training wall time."""

    param: str
    optimizer: str
    step: np.ndarray
    t: np.ndarray
    u: np.ndarray
    v: np.ndarray
    p: np.ndarray
    residual: np.ndarray
    loss: np.ndarray
    distance: np.ndarray
    params: dict[str, np.ndarray]
    config: dict[str, np.ndarray]
    wall_s: float

    @property
    def size(self) -> int:
        return self.t.shape[1]


def grid_observables(wkq: torch.Tensor, wov: torch.Tensor, K: int, M: int) -> dict[str, torch.Tensor]:
    r"""MODEL.md's observables of ``C`` models from their effective matrices ``wkq (C, D, D)``, ``wov (C, K, D)``.

    On the population (:func:`effective_forward`): ``p`` the mean attention on the distinct token, ``residual``
    :math:`\frac1K\sum_y \sum_{j \ne d_y} a^{(y)}_j` (summed, not ``1 - p``: resolved far below 1e-16, as
    :func:`~validation.synthetic.adam_compare.measured_state`), ``loss`` the population loss;
    :math:`v = \text{mean}_{y,j}(W_{KQ}[d_y, q] - W_{KQ}[c_j, q])`,
    :math:`u = \text{mean}_{c \ne y}(W_{OV}[y, d_y] - W_{OV}[c, d_y])` (:func:`simulation.model_matrices.observables`);
    ``distance`` the relative distance of what the model reads, :math:`X = (W_{OV}, W_{KQ}[:, q])`, from the
    symmetric set: :math:`\|X - \Pi X\|_F / \|X\|_F` with :math:`\Pi` the average over each orbit (``W_OV``'s
    diagonal and off-diagonal distinct entries, its common-token and query columns; the scores of the distinct
    tokens, of the commons and of the query). Each ``(C,)``.
    """
    lay = TokenLayout(K, M)
    pop = population_batch(K, M, wkq.dtype)
    logits, att = effective_forward(wkq, wov, pop)                      # (C, K, K), (C, K, M + 2)
    C = wkq.shape[0]
    loss = F.cross_entropy(logits.reshape(C * K, K), pop.y.repeat(C), reduction="none").view(C, K).mean(1)
    col = wkq[:, :, lay.query]                                           # (C, D)
    v = (col[:, lay.distinct][:, :, None] - col[:, lay.common][:, None, :]).mean((1, 2))
    dist = wov[:, :, lay.distinct]                                       # (C, K, K): [c, y] = W_OV[c, d_y]
    off = ~torch.eye(K, dtype=torch.bool)
    u = (torch.diagonal(dist, dim1=1, dim2=2)[:, None, :] - dist)[:, off].mean(1)
    return {"u": u, "v": v, "p": att[:, :, 0].mean(1), "residual": att[:, :, 1:].sum(2).mean(1), "loss": loss,
            "distance": _symmetric_distance(col, wov, lay)}


def _symmetric_distance(col: torch.Tensor, wov: torch.Tensor, lay: TokenLayout) -> torch.Tensor:
    """``(C,)``: the relative distance of ``(W_OV, W_KQ[:, q])`` from its orbit averages (:func:`grid_observables`)."""
    K = lay.K
    eye = torch.eye(K, dtype=torch.bool)
    dist = wov[:, :, lay.distinct]
    parts = [dist[:, eye], dist[:, ~eye], wov[:, :, lay.common].reshape(wov.shape[0], -1), wov[:, :, lay.query],
             col[:, lay.distinct], col[:, lay.common], col[:, [lay.query]]]
    num = sum(((x - x.mean(1, keepdim=True)) ** 2).sum(1) for x in parts)
    den = (wov ** 2).sum((1, 2)) + (col ** 2).sum(1)
    return torch.sqrt(num / torch.clamp(den, min=torch.finfo(den.dtype).tiny))


def _configs(K, M, eta_qk, eta_ov, dt, u0, v0, noise, hyper: dict) -> dict[str, np.ndarray]:
    if not (np.ndim(K) == 0 and np.ndim(M) == 0):
        raise ValueError(f"K={K!r}, M={M!r}: one value each (they fix the model's shapes)")
    unknown = set(hyper) - set(HYPER_DEFAULTS)
    if unknown:
        raise ValueError(f"unknown hyper-parameter(s) {', '.join(sorted(unknown))}: allowed {', '.join(HYPER_DEFAULTS)}")
    given = [eta_qk, eta_ov, dt, u0, v0, noise, *(hyper.get(k, v) for k, v in HYPER_DEFAULTS.items())]
    arrays = np.broadcast_arrays(*(np.atleast_1d(np.asarray(x, dtype=np.float64)) for x in given))
    return {k: a.ravel().copy() for k, a in zip(_CONFIG, arrays)}


def _start(param: Parametrization, K: int, M: int, cfg: dict[str, np.ndarray], c: int, seed: int,
           seeds=None) -> QKOVAttention:
    """Configuration ``c``'s start: the symmetric model at ``(u0, v0)`` plus ``noise`` times i.i.d. standard normal
    entries on every factor (generator seeded ``seeds[c]`` when given, else ``seed + c``; none when ``noise`` is
    0)."""
    model = symmetric_model(param, K, M, float(cfg["u0"][c]), float(cfg["v0"][c]), ov_basis="class")
    if cfg["noise"][c] > 0:
        gen = torch.Generator().manual_seed(int(seeds[c]) if seeds is not None else seed + c)
        with torch.no_grad():
            for w in model.parameters():
                w.add_(float(cfg["noise"][c]) * torch.randn(w.shape, generator=gen, dtype=w.dtype))
    return model


def _record_steps(steps: int, record) -> np.ndarray:
    if steps < 0:
        raise ValueError(f"steps {steps}: must be >= 0")
    want = np.arange(steps + 1) if record is None else np.unique(np.asarray(record, dtype=int))
    return want[(want >= 0) & (want <= steps)]


def _runs(param, optimizer, want, obs: list[dict[str, torch.Tensor]], params, cfg, wall) -> GridRuns:
    cols = {k: np.stack([o[k].detach().numpy() for o in obs]) if obs else np.zeros((0, cfg["dt"].size))
            for k in GRID_OBSERVABLES}
    return GridRuns(str(param), optimizer, want, want[:, None] * cfg["dt"][None, :], **cols, params=params,
                    config=cfg, wall_s=wall)


def train_grid(param: str, optimizer: str = "adam", *, K: int, M: int, eta_qk, eta_ov, dt, steps: int, u0, v0,
               noise=0.0, seed: int = 0, seeds=None, record=None, stop_loss: float | None = None,
               **hyper) -> GridRuns:
    r"""Train the full-matrix model for every configuration at once (``torch.func.vmap``), float64.

    Args:
        param: a registered parametrization; optimizer: a name of :data:`~simulation.optimizer_maps.OPTIMIZERS`.
        K, M: the population (common); eta_qk, eta_ov, dt, u0, v0, noise (the start: symmetric at ``u0, v0``,
            plus ``noise`` times standard normal entries, generator seeded ``seed + c`` for configuration ``c``)
            and the optimizer's hyper-parameters
            (``beta1, beta2, eps, weight_decay``, defaults :data:`simulation.optimizer_batch.HYPER_DEFAULTS`):
            scalars or arrays broadcasting to ``(C,)``.
        seeds: optional per-configuration generator seeds ``(C,)`` (instead of ``seed + c``: an ensemble member
            keeps its perturbation across ratios).
        steps: common number of steps (>= 0); record: step numbers to record (default all, 0 included);
        stop_loss: stop after the first recorded step at which every configuration's loss is below it (the
            records end there).

    Returns:
        :class:`GridRuns` with observables ``(T, C)`` and the final factors ``(C, rows, cols)``.
    """
    from simulation.optimizer_maps import OPTIMIZERS

    param = Parametrization(param)
    if optimizer not in OPTIMIZERS:
        raise ValueError(f"optimizer {optimizer!r}: must be one of {', '.join(OPTIMIZERS)}")
    cfg = _configs(K, M, eta_qk, eta_ov, dt, u0, v0, noise, hyper)
    want = _record_steps(steps, record)
    C = cfg["dt"].size
    opt = OPTIMIZERS[optimizer]
    if seeds is not None:                    # the seeds broadcast with the configuration arrays
        seeds, *cols = np.broadcast_arrays(np.atleast_1d(np.asarray(seeds, dtype=np.int64)), *cfg.values())
        cfg = {k: a.copy() for k, a in zip(cfg, cols)}
        C = cfg["dt"].size
    models = [_start(param, K, M, cfg, c, seed, seeds) for c in range(C)]
    base = models[0]
    qk, ov = param.qk.factors, param.ov.factors
    params = {n: torch.stack([getattr(m, n).detach() for m in models]) for n in (*qk, *ov)}
    col = lambda k: torch.as_tensor(cfg[k]).view(C, 1, 1)  # noqa: E731  (C, 1, 1) broadcasts over (C, r, c)
    lr = {n: col("eta_qk") * col("dt") if n in qk else col("eta_ov") * col("dt") for n in params}
    h = SimpleNamespace(**{k: col(k) for k in HYPER_DEFAULTS})
    state = {n: {b: torch.zeros_like(w) for b in opt.buffers} for n, w in params.items()}
    pop = population_batch(K, M)

    def loss_fn(p: dict[str, torch.Tensor]) -> torch.Tensor:
        logits, _ = functional_call(base, p, (pop.x,))
        return F.cross_entropy(logits, pop.y)

    grads_of = vmap(grad_and_value(loss_fn))
    keep = set(want.tolist())
    obs: list[dict[str, torch.Tensor]] = []

    def observe() -> None:
        obs.append(grid_observables(param.qk.effective([params[n] for n in qk]),
                                    param.ov.effective([params[n] for n in ov]), K, M))

    start = time.perf_counter()
    with torch.no_grad():
        if 0 in keep:
            observe()
        for n in range(1, steps + 1):
            g, _ = grads_of(params)
            for name in params:
                params[name], state[name] = opt.step(params[name], g[name], state[name], lr[name], h, n)
            if n in keep:
                observe()
                if stop_loss is not None and bool((obs[-1]["loss"] < stop_loss).all()):
                    want = want[:len(obs)]
                    break
    wall = time.perf_counter() - start
    return _runs(param, optimizer, want, obs, {n: w.numpy() for n, w in params.items()}, cfg, wall)


def train_grid_loop(param: str, optimizer: str = "adam", *, K: int, M: int, eta_qk, eta_ov, dt, steps: int, u0,
                    v0, noise=0.0, seed: int = 0, record=None, **hyper) -> GridRuns:
    """The configurations of :func:`train_grid` trained one after another, each with the torch optimizer the
    registry names (``torch.optim.<torch_name>(**torch_kwargs)``; rates ``eta_qk dt`` on QK, ``eta_ov dt`` on OV),
    observed with the same :func:`grid_observables`: the per-configuration loop that :func:`train_grid` replaces."""
    from simulation.optimizer_maps import OPTIMIZERS, OptimizerSpec

    param = Parametrization(param)
    if optimizer not in OPTIMIZERS or OPTIMIZERS[optimizer].torch_name is None:
        names = [k for k, o in OPTIMIZERS.items() if o.torch_name]
        raise ValueError(f"optimizer {optimizer!r}: the loop needs a torch counterpart, one of {', '.join(names)}")
    cfg = _configs(K, M, eta_qk, eta_ov, dt, u0, v0, noise, hyper)
    want = _record_steps(steps, record)
    keep = set(want.tolist())
    C = cfg["dt"].size
    entry = OPTIMIZERS[optimizer]
    pop = population_batch(K, M)
    per: list[list[dict[str, torch.Tensor]]] = []
    finals: list[dict[str, torch.Tensor]] = []
    start = time.perf_counter()
    for c in range(C):
        model = _start(param, K, M, cfg, c, seed)
        spec = OptimizerSpec(optimizer, *(float(cfg[k][c]) for k in HYPER_DEFAULTS))
        groups = [{"params": list(model.qk_parameters()), "lr": float(cfg["eta_qk"][c] * cfg["dt"][c])},
                  {"params": list(model.ov_parameters()), "lr": float(cfg["eta_ov"][c] * cfg["dt"][c])}]
        opt = getattr(torch.optim, str(entry.torch_name))(groups, **entry.torch_kwargs(spec))
        rows: list[dict[str, torch.Tensor]] = []

        def observe(model: QKOVAttention = model, rows: list = rows) -> None:
            with torch.no_grad():
                rows.append(grid_observables(model.effective_qk()[None], model.effective_ov()[None], K, M))

        if 0 in keep:
            observe()
        for n in range(1, steps + 1):
            opt.zero_grad(set_to_none=True)
            logits, _ = model(pop.x)
            F.cross_entropy(logits, pop.y).backward()
            opt.step()
            if n in keep:
                observe()
        per.append(rows)
        finals.append({k: w.detach() for k, w in model.named_parameters()})
    wall = time.perf_counter() - start
    obs = [{k: torch.cat([per[c][i][k] for c in range(C)]) for k in GRID_OBSERVABLES} for i in range(len(want))]
    params = {k: torch.stack([f[k] for f in finals]).numpy() for k in finals[0]}
    return _runs(param, optimizer, want, obs, params, cfg, wall)


__all__ = ["GRID_OBSERVABLES", "GridRuns", "grid_observables", "train_grid", "train_grid_loop"]

