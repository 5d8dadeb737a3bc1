r"""Theory against training: deviations from the ODE, drift of conserved quantities, rescaling, matched loss.

* :func:`max_relative_deviation` — :math:`\max_t |x(t) - \hat x(t)| / \max(|\hat x(t)|, \text{floor})`.
* :func:`ode_deviations` — that deviation for ``u``, ``v``, ``1 - p`` and the loss between a training
  log and a :class:`simulation.reduced.Trajectory` on the same clock ``t = step * dt``.
* :func:`closed_form_residuals` — how far the logged state is from the symmetric-line closed forms
  :math:`\mathcal L = \log(1 + (K-1)e^{-pu})`, :math:`p = e^v/(e^v + M + 1)`.
* :func:`conserved_drift` — :math:`\max_t |C(t) - C(0)|` of each logged conserved quantity.
* :func:`measured_rescaling` / :func:`predicted_rescaling` — the factorized circuit's speed in
  collapsed coordinates divided by the collapsed circuit's speed at the same state.
* :func:`values_at_loss` — an observable at the first time the loss falls to given levels
  (the matched-loss comparison of attention sharpness).
"""

from __future__ import annotations

from functools import lru_cache

from typing import Any

import numpy as np

from validation.synthetic.data import population_batch
from validation.synthetic.models import symmetric_model
from validation.synthetic.observables import measure
from validation.synthetic.trainer import batch_loss, make_circuit_optimizer
from theory.parametrization import BASELINE, Parametrization


def max_relative_deviation(measured: np.ndarray, reference: np.ndarray, floor: float = 1e-12) -> float:
    r""":math:`\max_i |m_i - r_i| / \max(|r_i|, \text{floor})` over equal-length arrays."""
    m = np.asarray(measured, dtype=np.float64)
    r = np.asarray(reference, dtype=np.float64)
    if m.shape != r.shape:
        raise ValueError(f"measured has shape {m.shape}, reference {r.shape}")
    return float(np.max(np.abs(m - r) / np.maximum(np.abs(r), floor)))


def ode_deviations(log: dict[str, np.ndarray], traj: Any, floor: float = 1e-9) -> dict[str, float]:
    """Max relative deviation of ``u``, ``v``, ``1 - p`` and loss between ``log`` and ``traj``.

    ``traj`` has arrays ``t, u, v, p, loss`` sampled at ``log["t"]``. Entries where the reference
    is below ``floor`` in magnitude use ``floor`` as denominator (``u = 0`` or ``v = 0`` starts).
    """
    if not np.allclose(np.asarray(traj.t), log["t"], rtol=1e-12, atol=1e-12):
        raise ValueError("trajectory and log are not on the same time grid")
    return {
        "u": max_relative_deviation(log["u"], traj.u, floor),
        "v": max_relative_deviation(log["v"], traj.v, floor),
        "one_minus_p": max_relative_deviation(1 - log["p"], 1 - np.asarray(traj.p), floor),
        "loss": max_relative_deviation(log["loss"], traj.loss, floor),
    }


@lru_cache(maxsize=1)
def _theory_closed_forms() -> tuple:
    """theory's loss on the symmetric line, as a function of ``(u, p, K)``, and ``p(v, M)`` (generated)."""
    from simulation import generated

    return generated.margin_loss, generated.p_of_v


def closed_form_residuals(log: dict[str, np.ndarray], K: int, M: int) -> dict[str, float]:
    r"""Max absolute residuals of theory's :math:`\mathcal L = \log(1+(K-1)e^{-pu})` and :math:`p = e^v/(e^v+M+1)`."""
    u, v, p = log["u"], log["v"], log["p"]
    loss_of, p_of = _theory_closed_forms()
    loss_cf = loss_of(u, p, K)
    p_cf = p_of(v, M)
    return {"loss": float(np.max(np.abs(loss_cf - log["loss"]))),
            "p": float(np.max(np.abs(p_cf - p)))}


def conserved_drift(log: dict[str, np.ndarray], names: tuple[str, ...] = ("balance_qk", "balance_ov")
                    ) -> dict[str, float]:
    r""":math:`\max_t |C(t) - C(0)|` for each logged conserved quantity present in ``log``."""
    return {n: float(np.max(np.abs(log[n] - log[n][0]))) for n in names if n in log}


@lru_cache(maxsize=1)
def _theory_rescaling() -> tuple:
    """theory's rho_QK and rho_OV (in the reduced state), at MODEL.md's balanced start (generated)."""
    from simulation import generated

    return generated.rho_qk_balanced, generated.rho_ov_balanced


def predicted_rescaling(param: Parametrization, K: int, M: int, u: float, v: float) -> tuple[float, float]:
    r"""Implicit learning-rate factors ``(QK, OV)`` of a balanced factorized circuit on the symmetric line.

    Written in collapsed coordinates, the factorized flow is the collapsed flow with
    :math:`\eta \to \rho\,\eta`; :math:`\rho_{QK}`, :math:`\rho_{OV}` are theory's
    (:func:`theory.rescaling.qk_rescaling`, :func:`theory.rescaling.ov_rescaling`) evaluated at
    MODEL.md's balanced start with effective values ``(u, v)`` (there :math:`\rho_{OV} = 2u`).
    A collapsed circuit has factor 1. ``ValueError`` for a parametrization theory derives no closed-form factor for
    (:attr:`theory.parametrization.Parametrization.line_theory`).
    """
    p = Parametrization(param)
    if not p.line_theory:
        raise ValueError(f"{p}: theory derives no closed-form rescaling factor for its kinds")
    rho_qk, rho_ov = _theory_rescaling()
    fqk = rho_qk(u, v, K, M) if p.qk.kind.rescales else 1.0
    fov = rho_ov(u, v, K, M) if p.ov.kind.rescales else 1.0
    return float(fqk), float(fov)


def _one_step_rates(param: Parametrization, K: int, M: int, u: float, v: float, h: float) -> tuple[float, float]:
    model = symmetric_model(param, K, M, u, v)
    before = measure(model, K, M)
    opt = make_circuit_optimizer(model, "gd", eta_ov=1.0, ratio=1.0, dt=h)
    opt.zero_grad(set_to_none=True)
    batch_loss(model, population_batch(K, M))[0].backward()
    opt.step()
    after = measure(model, K, M)
    return (after["v"] - before["v"]) / h, (after["u"] - before["u"]) / h


def measured_rescaling(param: Parametrization, K: int, M: int, u: float, v: float, h: float = 1e-7) -> tuple[float, float]:
    r"""``(QK, OV)`` factors measured by one tiny GD step of ``param`` and of CACO from the same state.

    :math:`\dot v_{param} / \dot v_{CACO}` and :math:`\dot u_{param} / \dot u_{CACO}`, each rate a
    forward difference with step ``h`` (error :math:`O(h)`). Needs ``u, v > 0``.
    """
    vq, uo = _one_step_rates(param, K, M, u, v, h)
    vq0, uo0 = _one_step_rates(Parametrization(BASELINE), K, M, u, v, h)
    return float(vq / vq0), float(uo / uo0)


def values_at_loss(log: dict[str, np.ndarray], levels: np.ndarray, key: str = "p") -> np.ndarray:
    """``log[key]`` at the first logged time the loss is ``<= level``, linearly interpolated in log-loss.

    Levels never reached give NaN.
    """
    loss = np.asarray(log["loss"])
    y = np.asarray(log[key])
    out = np.full(len(levels), np.nan)
    for i, lev in enumerate(levels):
        hit = np.nonzero(loss <= lev)[0]
        if hit.size == 0:
            continue
        j = hit[0]
        if j == 0:
            out[i] = y[0]
            continue
        l0, l1 = np.log(loss[j - 1]), np.log(loss[j])
        w = 0.0 if l0 == l1 else (l0 - np.log(lev)) / (l0 - l1)
        out[i] = y[j - 1] + w * (y[j] - y[j - 1])
    return out
