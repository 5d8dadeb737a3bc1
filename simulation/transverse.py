r"""Transverse stability of the symmetric set under an element-wise optimizer: finite-time Lyapunov exponents.

The symmetric set ``S`` (one value per orbit, frozen entries 0; :mod:`theory.optimizer_orbits`) is invariant
under the full training map :math:`F(w, \text{state})` of every optimizer of :data:`simulation.optimizer_maps.OPTIMIZERS`.
Whether training *stays* near it is a question of the linearisation off it. Along the reduced trajectory
:math:`x_n` (the orbit map, embedded in the full matrices) we propagate a perturbation :math:`\delta_0` of the
weights and the optimizer buffers, orthogonal to ``S``,

.. math::
    \delta_{n} = \Pi_\perp\, DF(x_{n-1})\,\delta_{n-1},\qquad
    \Lambda_n = \sum_{k\le n}\log\frac{\|\delta_k\|}{\|\delta_{k-1}\|},

with :math:`DF` by forward-mode autodiff through torch's gradient and the optimizer step
(:func:`torch.func.jvp`; :math:`\Pi_\perp` removes the orbit averages, which by equivariance only removes rounding).
After a few steps :math:`\delta_n` aligns with the fastest-growing off-set direction, so :math:`\Lambda_n` is the
log of the largest transverse growth factor and :math:`\Lambda_n/n` the finite-time Lyapunov exponent per step.

Prediction. A float64 run starts on ``S`` with rounding-level departures (:data:`ROUNDING`, ~1e-16 relative); it
has left ``S`` at level ``tol`` once :math:`\Lambda_n > \log(\text{tol}/\text{ROUNDING})`
(:func:`predicted_departure_step`), as long as the linearisation holds (below saturation).

Adam's linearisation at entries whose gradient and second moment vanish on ``S`` (e.g. the common-token columns
of ``W_OV``, whose row-dependent part is a class bias) has gain :math:`\ell/\varepsilon` per step: there
:math:`\hat m/(\sqrt{\hat s} + \varepsilon) \approx \hat m/\varepsilon`. (The tangent of :math:`\sqrt s` at
:math:`s = 0` is taken as 0, its true value: :math:`\delta s = 2(1-\beta_2)g\,\delta g = 0` at :math:`g = 0`.)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simulation import generated_optim as gen
from simulation.optimizer_maps import OptimizerSpec, embed, iterate_orbit_map, orbit_masks

ROUNDING = 1e-16
"""Relative size of the departure rounding gives a float64 run on the symmetric set."""


@dataclass(frozen=True)
class Transverse:
    """``step (T,)``, per-step log growth ``log_growth (T,)`` and its cumulative sum ``cumulative (T,)``; ``ftle`` =
    ``cumulative[-1] / T`` (per step); ``first_positive``: first step with ``cumulative > 0`` (None: never)."""

    param: str
    optimizer: dict
    ratio: float
    step: np.ndarray
    log_growth: np.ndarray
    cumulative: np.ndarray

    @property
    def ftle(self) -> float:
        return float(self.cumulative[-1] / self.step[-1]) if self.step.size else float("nan")

    @property
    def first_positive(self) -> int | None:
        pos = np.flatnonzero(self.cumulative > 0)
        return int(self.step[pos[0]]) if pos.size else None

    def as_json(self) -> dict:
        return {"param": self.param, "optimizer": self.optimizer, "ratio": self.ratio, "ftle_per_step": self.ftle,
                "first_positive_step": self.first_positive, "max_cumulative_log_growth": float(self.cumulative.max()),
                "steps": int(self.step[-1])}


def _off_set(param, x: dict, K, M):
    """``x - embed(orbit means of x)`` per parameter (torch tensors): the component orthogonal to the set."""
    import torch

    masks = orbit_masks(param, K, M)
    out = {}
    for name, t in x.items():
        proj = torch.zeros_like(t)
        for m in masks[name].values():
            mt = torch.as_tensor(m)
            proj = torch.where(mt, t[mt].mean(), proj)
        out[name] = t - proj
    return out


def _norm(*dicts) -> float:
    return float(sum(float((t ** 2).sum()) for d in dicts for t in d.values())) ** 0.5


def transverse_growth(param: str, spec: OptimizerSpec, *, K: int, M: int, eta_qk: float, eta_ov: float, dt: float,
                      steps: int, u0: float, v0: float, seed: int = 0) -> Transverse:
    """Propagate a random off-set perturbation of weights and buffers along the reduced trajectory (module doc)."""
    import torch
    from torch.func import grad, jvp

    from simulation.optimizer_torch import population_loss

    opt = spec.optimizer
    circuits = dict(zip(gen.ORBIT_PARAMS[param], gen.ORBIT_CIRCUITS[param]))
    lr = {n: (eta_ov if c == "OV" else eta_qk) * dt for n, c in circuits.items()}
    rng = np.random.default_rng(seed)

    def to_t(d):
        return {k: torch.as_tensor(v, dtype=torch.float64) for k, v in d.items()}

    def full_state(w, st):
        return to_t(embed(param, w, K, M)), {b: to_t(embed(param, st[b], K, M)) for b in opt.buffers}

    def step_fn(n):
        def f(params, bufs):
            g = grad(lambda p: population_loss(param, p, K, M))(params)
            new_p, new_b = {}, {b: {} for b in opt.buffers}
            for k in params:
                w2, st2 = opt.step(params[k], g[k], {b: bufs[b][k] for b in opt.buffers}, lr[k], spec, n)
                new_p[k] = w2
                for b in opt.buffers:
                    new_b[b][k] = st2[b]
            return new_p, new_b
        return f

    traj = iterate_orbit_map(param, spec, K=K, M=M, eta_qk=eta_qk, eta_ov=eta_ov, dt=dt, steps=steps, u0=u0, v0=v0)
    _, w, st = next(traj)
    p0, b0 = full_state(w, st)
    tp = _off_set(param, {k: torch.as_tensor(rng.normal(size=v.shape)) for k, v in p0.items()}, K, M)
    tb = {b: _off_set(param, {k: torch.as_tensor(rng.normal(size=v.shape)) for k, v in p0.items()}, K, M)
          for b in opt.buffers}
    nrm = _norm(tp, *tb.values())
    tp = {k: v / nrm for k, v in tp.items()}
    tb = {b: {k: v / nrm for k, v in d.items()} for b, d in tb.items()}
    logs = []
    for n, w, st in traj:
        _, (tp, tb) = jvp(step_fn(n), (p0, b0), (tp, tb))  # type: ignore[misc]  # torch's stub: 2 outputs without has_aux
        tp = _off_set(param, tp, K, M)
        tb = {b: _off_set(param, d, K, M) for b, d in tb.items()}
        nrm = _norm(tp, *tb.values())
        logs.append(np.log(nrm) if nrm > 0 else -np.inf)
        tp = {k: v / nrm for k, v in tp.items()}
        tb = {b: {k: v / nrm for k, v in d.items()} for b, d in tb.items()}
        p0, b0 = full_state(w, st)
    lg = np.array(logs)
    return Transverse(param, spec.as_json(), eta_qk / eta_ov, np.arange(1, lg.size + 1), lg, np.cumsum(lg))


def predicted_departure_step(tr: Transverse, tol: float = 1e-6) -> int | None:
    r"""First step at which rounding (:data:`ROUNDING`) has grown past ``tol``: :math:`\Lambda_n > \log(\text{tol}/
    \text{ROUNDING})`; None if it does not within the steps analysed."""
    hit = np.flatnonzero(tr.cumulative > np.log(tol / ROUNDING))
    return int(tr.step[hit[0]]) if hit.size else None


__all__ = ["ROUNDING", "Transverse", "transverse_growth", "predicted_departure_step"]
