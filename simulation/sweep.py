r"""Batch sweeps: parametrizations x ratios x initial scales x K x M in one call, and matched-loss readouts.

:func:`sweep` builds the grid, integrates every trajectory of a parametrization in **one**
vectorised call of :func:`simulation.reduced.integrate_states` (four calls in all, one per state
dimension) and returns arrays shaped ``(P, R, S, nK, nM, T)``.

Matched loss: gradient flow decreases the loss monotonically, so each trajectory passes every
loss level :math:`\ell` once; :func:`residual_at_loss` reads the attention residual there by
interpolating :math:`\log(1-p)` against :math:`\log\mathcal L` on the trajectory's dense log-time grid.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
from numpy.typing import ArrayLike

from theory.parametrization import Parametrization
from simulation.reduced import DEFAULT_ATOL, DEFAULT_RTOL
from simulation.solve import solve_batch

PARAMS = Parametrization.all()


@dataclass(frozen=True)
class Sweep:
    r"""Observables of a grid of trajectories, each ``(P, R, S, nK, nM, T)``.

    Axes: ``params``, ``ratios`` (:math:`\eta_{QK}/\eta_{OV}` with :math:`\eta_{OV}` = ``eta_ov``),
    ``scales`` (balanced start :math:`u_0 = v_0 =` scale), ``Ks``, ``Ms``, ``t``.
    """

    params: tuple[str, ...]
    ratios: np.ndarray
    scales: np.ndarray
    Ks: np.ndarray
    Ms: np.ndarray
    t: np.ndarray
    eta_ov: float
    u: np.ndarray
    v: np.ndarray
    p: np.ndarray
    residual: np.ndarray
    loss: np.ndarray
    success: np.ndarray           # (P, R, S, nK, nM)

    @property
    def grid_shape(self) -> tuple[int, ...]:
        return self.u.shape[:-1]


def sweep(params: Sequence[Parametrization], ratios: ArrayLike, scales: ArrayLike, t_eval: ArrayLike, *,
          Ks: ArrayLike = (10,), Ms: ArrayLike = (19,), eta_ov: float = 1.0, rtol: float = DEFAULT_RTOL,
          atol: float = DEFAULT_ATOL) -> Sweep:
    """Integrate the whole grid (one vectorised solve per parametrization); arrays ``(P, R, S, nK, nM[, T])``."""
    r_, s_ = np.asarray(ratios, dtype=float), np.asarray(scales, dtype=float)
    k_, m_ = np.asarray(Ks, dtype=float), np.asarray(Ms, dtype=float)
    t_ = np.asarray(t_eval, dtype=float)
    R, S, KK, MM = np.meshgrid(r_, s_, k_, m_, indexing="ij")
    grid = R.shape
    fields: dict[str, list[np.ndarray]] = {k: [] for k in ("u", "v", "p", "residual", "loss", "success")}
    for prm in params:
        tr = solve_batch(prm, K=KK.ravel(), M=MM.ravel(), eta_qk=R.ravel() * eta_ov, eta_ov=eta_ov, u0=S.ravel(),
                         v0=S.ravel(), t=t_, rtol=rtol, atol=atol)
        for k in ("u", "v", "p", "residual", "loss"):
            fields[k].append(getattr(tr, k).T.reshape(grid + (t_.size,)))
        fields["success"].append(tr.success.reshape(grid))
    arr = {k: np.stack(v) for k, v in fields.items()}
    return Sweep(tuple(params), r_, s_, k_, m_, t_, eta_ov, arr["u"], arr["v"], arr["p"], arr["residual"],
                 arr["loss"], arr["success"])


def residual_at_loss(loss: np.ndarray, residual: np.ndarray, levels: ArrayLike) -> np.ndarray:
    r"""Attention residual :math:`1-p` where each trajectory's loss first reaches each level.

    ``loss, residual``: ``(..., T)`` on a dense grid; ``levels``: ``(L,)``. Returns ``(..., L)``,
    NaN where a trajectory does not reach the level in its time range (or starts below it).
    Interpolation is linear in :math:`(\log\mathcal L, \log(1-p))`.
    """
    lev = np.asarray(levels, dtype=float)
    L2 = np.log(loss.reshape(-1, loss.shape[-1]))
    R2 = np.log(residual.reshape(-1, residual.shape[-1]))
    out = np.full((L2.shape[0], lev.size), np.nan)
    logl = np.log(lev)
    for i in range(L2.shape[0]):
        x, y = L2[i][::-1], R2[i][::-1]                   # loss decreasing in t -> increasing reversed
        ok = np.isfinite(x) & np.isfinite(y)
        x, y = x[ok], y[ok]
        if x.size < 2:
            continue
        x = np.maximum.accumulate(x)                      # guard round-off plateaus at tiny losses
        inside = (logl >= x[0]) & (logl <= x[-1])
        out[i, inside] = np.exp(np.interp(logl[inside], x, y))
    return out.reshape(loss.shape[:-1] + (lev.size,))


def sharpest(residuals: np.ndarray, params: Sequence[str], axis: int = 0) -> np.ndarray:
    """Name of the parametrization with the smallest residual along ``axis`` (``""`` where all NaN)."""
    filled = np.where(np.isnan(residuals), np.inf, residuals)
    idx = np.argmin(filled, axis=axis)
    names = np.asarray(list(params), dtype=object)[idx]
    return np.where(np.all(np.isnan(residuals), axis=axis), "", names)


def dense_times(t_max: float = 1e12, n: int = 400, t_min: float = 1e-3) -> np.ndarray:
    """``0`` followed by ``n`` log-spaced times in ``[t_min, t_max]`` (the matched-loss grid)."""
    return np.concatenate([[0.0], np.logspace(np.log10(t_min), np.log10(t_max), n)])


__all__ = ["Sweep", "sweep", "residual_at_loss", "sharpest", "dense_times", "PARAMS"]
