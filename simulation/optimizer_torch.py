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
    symmetric_distance,
    symmetric_projection,
)
from theory.parametrization import Parametrization


@dataclass(frozen=True)
class TorchRun:
    """``step (T,)``, orbit averages ``w (T, n)``, ``distance (T,)``, measured ``u, v, p, loss, v_spread (T,)``."""

    step: np.ndarray
    w: np.ndarray
    distance: np.ndarray
    u: np.ndarray
    v: np.ndarray
    p: np.ndarray
    loss: np.ndarray
    v_spread: np.ndarray


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


def train_full(param: str, spec: OptimizerSpec, *, K: int, M: int, eta_qk: float, eta_ov: float, dt: float,
               steps: int, u0: float, v0: float, record_every: int = 1) -> TorchRun:
    """Train the full matrices from the embedded symmetric start with torch's optimizer (float64)."""
    import torch

    w0 = np.asarray(gen.ORBIT_INIT[param](u0, v0, K), dtype=np.float64)
    params = {k: torch.nn.Parameter(torch.as_tensor(v)) for k, v in embed(param, w0, K, M).items()}
    opt = torch_optimizer(param, params, spec, eta_qk, eta_ov, dt)
    rows = []

    def snap(n):
        mats = {k: p.detach().numpy().copy() for k, p in params.items()}
        w, _ = symmetric_projection(param, mats, K, M)
        wkq, wov = effective(mats, Parametrization(param))  # the registry's effective matrices (numpy or torch)
        o = measure_observables(wkq, wov, K, M)
        rows.append((n, w, symmetric_distance(param, mats, K, M), o.u, o.v, o.p, o.loss, o.v_spread))

    snap(0)
    for n in range(1, steps + 1):
        opt.zero_grad()
        population_loss(param, params, K, M).backward()
        opt.step()
        if n % record_every == 0 or n == steps:
            snap(n)
    cols = list(zip(*rows))
    return TorchRun(np.array(cols[0]), np.array(cols[1]), *(np.array(c) for c in cols[2:]))


__all__ = ["TorchRun", "population_loss", "torch_optimizer", "train_full"]
