r"""Full-matrix torch training from the symmetric start with the optimizers of :mod:`simulation.optimizer_maps`.

The reference the reduced map is checked against (and that :mod:`simulation.transverse` linearises): a
:class:`validation`-free float64 torch implementation of MODEL.md's layer on the population, with
``torch.optim`` doing the steps (the optimizer's ``torch_name``), per-circuit learning rates
:math:`\eta_{OV}\,dt`, :math:`\eta_{QK}\,dt`. Each recorded step gives the orbit averages ``w`` of every
parameter, the distance from the symmetric set (:func:`simulation.optimizer_maps.symmetric_distance`) and the
measured observables of the effective matrices (:func:`simulation.model_matrices.observables`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simulation import generated_optim as gen
from simulation.full_matrix import effective
from simulation.model_matrices import observables as measure_observables
from simulation.optimizer_maps import (
    OptimizerSpec,
    embed,
    orbit_masks,
    symmetric_distance,
    symmetric_projection,
)
from theory.parametrization import Parametrization


@dataclass(frozen=True)
class TorchRun:
    r"""``step (T,)``, orbit averages ``w (T, n)``, ``distance (T,)``, measured ``u, v, p, loss, v_spread (T,)``;
    ``grad_asymmetry``: with ``on_set``, per step the largest relative change the orbit averaging made to the
    gradient, :math:`\|g - \Pi g\|_F / \|g\|_F` (rounding only, when the gradient is right), else None."""

    step: np.ndarray
    w: np.ndarray
    distance: np.ndarray
    u: np.ndarray
    v: np.ndarray
    p: np.ndarray
    loss: np.ndarray
    v_spread: np.ndarray
    grad_asymmetry: np.ndarray | None = None


def population_loss(param: str, mats: dict, K: int, M: int):
    """MODEL.md's population loss of torch parameters (differentiable)."""
    import torch

    wkq, wov = effective(mats, Parametrization(param))  # the registry's effective matrices (numpy or torch)
    q = K + M
    seq = torch.as_tensor(np.concatenate([np.arange(K)[:, None], np.tile(np.arange(K, K + M), (K, 1)),
                                          np.full((K, 1), q)], 1))
    a = torch.softmax(wkq[seq, q], dim=1)                       # (K, L)
    z = torch.einsum("yl,kyl->yk", a, wov[:, seq])              # (K, K)
    return torch.nn.functional.cross_entropy(z, torch.arange(K))


def torch_optimizer(param: str, params: dict, spec: OptimizerSpec, eta_qk: float, eta_ov: float, dt: float):
    """``torch.optim.<torch_name>`` with the OV parameters at ``eta_ov dt`` and the QK ones at ``eta_qk dt``."""
    import torch

    opt = spec.optimizer
    if opt.torch_name is None:
        raise ValueError(f"optimizer {spec.name!r} has no torch counterpart")
    circuits = dict(zip(gen.ORBIT_PARAMS[param], gen.ORBIT_CIRCUITS[param]))
    groups = [{"params": [params[n] for n in params if circuits[n] == c], "lr": (eta_ov if c == "OV" else eta_qk) * dt}
              for c in ("OV", "QK")]
    return getattr(torch.optim, opt.torch_name)(groups, **opt.torch_kwargs(spec))


def _symmetrize_grads(param: str, params: dict, K: int, M: int) -> float:
    r"""Replace every ``.grad`` by its orbit average (:func:`simulation.optimizer_maps.symmetric_projection`,
    frozen entries 0): on the symmetric set the true gradient is orbit-constant, so this removes only the rounding
    that breaks the symmetry; every entry of an orbit then gets the bit-identical gradient. Returns
    :math:`\|g - \Pi g\|_F / \|g\|_F`."""
    import torch

    grads = {k: p.grad.detach().numpy().copy() for k, p in params.items()}
    _, proj = symmetric_projection(param, grads, K, M)
    num = sum(float(((grads[k] - proj[k]) ** 2).sum()) for k in grads)
    den = sum(float((grads[k] ** 2).sum()) for k in grads)
    for k, p in params.items():
        p.grad = torch.as_tensor(proj[k], dtype=p.dtype)
    return (num / den) ** 0.5 if den > 0 else 0.0


def train_full(param: str, spec: OptimizerSpec, *, K: int, M: int, eta_qk: float, eta_ov: float, dt: float,
               steps: int, u0: float, v0: float, record_every: int = 1, on_set: bool = False,
               perturbation: float = 0.0, seed: int = 0) -> TorchRun:
    """Train the full matrices from the embedded symmetric start with torch's optimizer (float64).

    ``on_set``: average each gradient over its orbit before torch's step (:func:`_symmetrize_grads`), so the run
    stays on the symmetric set exactly (equal inputs to an element-wise step give equal outputs) for every step,
    whatever the BLAS rounds: torch's optimizer restricted to the set, the machine-independent reference for the
    reduced map. Without it, rounding breaks the symmetry and an unstable optimizer (Adam) leaves the set at a
    step that depends on the machine (:mod:`simulation.transverse`).
    ``perturbation``: add ``perturbation`` times the start's RMS entry times i.i.d. standard normal entries (numpy
    ``seed``) to every moving entry, so that a departure from the set is seeded by the seed, far above rounding.
    """
    import torch

    if on_set and perturbation:
        raise ValueError("on_set and perturbation exclude each other: a perturbed start is off the set")
    w0 = np.asarray(gen.ORBIT_INIT[param](u0, v0, K), dtype=np.float64)
    start = embed(param, w0, K, M)
    if perturbation:
        rng = np.random.default_rng(seed)
        masks = orbit_masks(param, K, M)
        scale = float(np.sqrt(sum(float((v ** 2).sum()) for v in start.values())
                              / sum(int(sum(m.sum() for m in masks[k].values())) for k in start)))
        for k, v in start.items():
            moving = np.any(np.stack(list(masks[k].values())), axis=0)
            v += np.where(moving, perturbation * scale * rng.standard_normal(v.shape), 0.0)
    params = {k: torch.nn.Parameter(torch.as_tensor(v)) for k, v in start.items()}
    opt = torch_optimizer(param, params, spec, eta_qk, eta_ov, dt)
    rows = []

    def snap(n):
        mats = {k: p.detach().numpy().copy() for k, p in params.items()}
        w, _ = symmetric_projection(param, mats, K, M)
        wkq, wov = effective(mats, Parametrization(param))  # the registry's effective matrices (numpy or torch)
        o = measure_observables(wkq, wov, K, M)
        rows.append((n, w, symmetric_distance(param, mats, K, M), o.u, o.v, o.p, o.loss, o.v_spread))

    snap(0)
    asym = []
    for n in range(1, steps + 1):
        opt.zero_grad()
        population_loss(param, params, K, M).backward()
        if on_set:
            asym.append(_symmetrize_grads(param, params, K, M))
        opt.step()
        if n % record_every == 0 or n == steps:
            snap(n)
    cols = list(zip(*rows))
    return TorchRun(np.array(cols[0]), np.array(cols[1]), *(np.array(c) for c in cols[2:]),
                    grad_asymmetry=np.array(asym) if on_set else None)


__all__ = ["TorchRun", "population_loss", "torch_optimizer", "train_full"]
