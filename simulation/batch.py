r"""A vectorised adaptive Runge-Kutta integrator: many independent trajectories, one step loop.

Every trajectory ``b`` solves its own ODE :math:`dy_b/d\tau = g(\tau_b, y_b)` with its **own** step
size :math:`h_b`, its own error control and its own accept/reject decision; the work of one step
(the 12 stages of Dormand & Prince's 8(5,3) pair, the same tableau as
:class:`scipy.integrate.DOP853`, read from scipy) is done for all trajectories still running in
one numpy call per stage. So accuracy per trajectory is what a scalar solver with the same
tolerances gives, and the cost is that of the slowest trajectory, not the sum.

Evaluation points are hit exactly: a step that would cross the next requested :math:`\tau` of its
trajectory is shortened to land on it (no interpolation error).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Callable

import numpy as np

SAFETY = 0.9
MIN_FACTOR = 0.2
MAX_FACTOR = 10.0
_EXPONENT = -1.0 / 8.0          # error estimator of order 7 -> h ~ err^(-1/8)


@lru_cache(maxsize=1)
def _tableau():
    """scipy's DOP853 tableau ``(n_stages, A, B, C, E3, E5)``, read on the first integration (importing
    scipy.integrate costs 0.3 s, which ``import simulation`` should not pay)."""
    from scipy.integrate._ivp import dop853_coefficients as dop

    n = dop.N_STAGES
    return n, dop.A[:n, :n], dop.B, dop.C[:n], dop.E3, dop.E5


@dataclass(frozen=True)
class BatchSolution:
    """Result of :func:`integrate_batch`.

    Attributes:
        tau: the evaluation grid, shape ``(T,)``.
        y: states at ``tau``, shape ``(n, T, B)``.
        steps: accepted steps per trajectory, ``(B,)``.
        rejected: rejected steps per trajectory, ``(B,)``.
        nfev: right-hand-side evaluations of the batch (each over the running trajectories).
        success: per trajectory, ``(B,)``: reached the last ``tau`` with finite states.
        method: what integrated them (``"dop853"``; ``"clock-free"`` for :mod:`simulation.clockfree`, whose
            ``steps`` are quadrature panels; ``"clock-free+dop853"`` for a batch split between the two).
        error: per trajectory ``(B,)``, the estimated largest relative error of any coordinate at any requested
            time, where the integrator estimates it (the clock-free path: :mod:`simulation.clockfree`), else None.
    """

    tau: np.ndarray
    y: np.ndarray
    steps: np.ndarray
    rejected: np.ndarray
    nfev: int
    success: np.ndarray
    method: str = "dop853"
    error: np.ndarray | None = None


def _error_norm(K: np.ndarray, h: np.ndarray, scale: np.ndarray) -> np.ndarray:
    r"""DOP853's error norm per trajectory: :math:`|h|\,\|e_5\|^2/\sqrt{n(\|e_5\|^2 + 0.01\|e_3\|^2)}`.

    ``K``: stages ``(13, n, B)``; ``h, scale``: ``(B,)`` and ``(n, B)``. Returns ``(B,)``.
    """
    _, _, _, _, _E3, _E5 = _tableau()
    flat = K.reshape(K.shape[0], -1)
    err5 = (_E5 @ flat).reshape(scale.shape) / scale
    err3 = (_E3 @ flat).reshape(scale.shape) / scale
    e5 = np.sum(err5 ** 2, axis=0)
    e3 = np.sum(err3 ** 2, axis=0)
    denom = e5 + 0.01 * e3
    n = K.shape[1]
    with np.errstate(invalid="ignore", divide="ignore"):
        out = np.abs(h) * e5 / np.sqrt(denom * n)
    return np.where(denom > 0, out, 0.0)


def _initial_step(fun, tau, y, f, idx, rtol, atol) -> np.ndarray:
    """Hairer's starting-step heuristic (as in scipy), per trajectory."""
    scale = atol + np.abs(y) * rtol
    d0 = np.sqrt(np.mean((y / scale) ** 2, axis=0))
    d1 = np.sqrt(np.mean((f / scale) ** 2, axis=0))
    h0 = np.where((d0 < 1e-5) | (d1 < 1e-5), 1e-6, 0.01 * d0 / np.maximum(d1, 1e-300))
    y1 = y + h0 * f
    f1 = fun(tau + h0, y1, idx)
    d2 = np.sqrt(np.mean(((f1 - f) / scale) ** 2, axis=0)) / h0
    big = np.maximum(d1, d2)
    h1 = np.where(big <= 1e-15, np.maximum(1e-6, h0 * 1e-3), (0.01 / np.maximum(big, 1e-300)) ** (1 / 8))
    return np.minimum(100 * h0, h1)


def integrate_batch(fun: Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray], y0: np.ndarray,
                    tau_eval: np.ndarray, *, tau0: float = 0.0, rtol: float = 1e-10, atol: float = 1e-12,
                    max_steps: int = 200_000) -> BatchSolution:
    r"""Integrate :math:`dy_b/d\tau = g(\tau_b, y_b)` for every column ``b`` of ``y0`` to each ``tau_eval``.

    Args:
        fun: ``fun(tau (B',), y (n, B'), idx (B',)) -> (n, B')``, the right-hand side of the
            trajectories ``idx`` (indices into the batch, so per-trajectory parameters can be picked).
        y0: initial states at ``tau0``, shape ``(n, B)``.
        tau_eval: strictly increasing evaluation points ``>= tau0``, shape ``(T,)``.
        rtol, atol: per-trajectory, per-component tolerances (scipy's meaning).
        max_steps: cap on step attempts of the batch loop.

    Returns:
        :class:`BatchSolution` with ``y`` of shape ``(n, T, B)``.
    """
    y0 = np.asarray(y0, dtype=float)
    if y0.ndim != 2:
        raise ValueError(f"y0 has shape {y0.shape}: expected (n_state, B)")
    tau_eval = np.asarray(tau_eval, dtype=float)
    if tau_eval.ndim != 1 or tau_eval.size == 0 or np.any(np.diff(tau_eval) <= 0) or tau_eval[0] < tau0:
        raise ValueError("tau_eval must be a non-empty, strictly increasing 1-D array >= tau0")
    n, B = y0.shape
    T = tau_eval.size
    out = np.full((n, T, B), np.nan)
    tau = np.full(B, float(tau0))
    y = y0.copy()
    nxt = np.zeros(B, dtype=np.int64)                    # index of the next evaluation point
    # Points at tau0 are recorded immediately.
    while True:
        hit = (nxt < T) & (tau_eval[np.minimum(nxt, T - 1)] <= tau)
        if not hit.any():
            break
        out[:, nxt[hit], np.flatnonzero(hit)] = y[:, hit]
        nxt[hit] += 1
    steps = np.zeros(B, dtype=np.int64)
    rejected = np.zeros(B, dtype=np.int64)
    success = np.ones(B, dtype=bool)
    idx_all = np.arange(B)
    nfev = 0
    active = nxt < T
    if not active.any():
        return BatchSolution(tau_eval, out, steps, rejected, nfev, success)
    f = np.zeros_like(y)
    ia = idx_all[active]
    f[:, ia] = fun(tau[ia], y[:, ia], ia)
    nfev += 1
    h = np.zeros(B)
    h[ia] = _initial_step(fun, tau[ia], y[:, ia], f[:, ia], ia, rtol, atol)
    nfev += 1
    was_rejected = np.zeros(B, dtype=bool)
    n_stages, _A, _B, _C, _, _ = _tableau()
    for _ in range(max_steps):
        ia = idx_all[active]
        if ia.size == 0:
            break
        ta, ya, fa = tau[ia], y[:, ia], f[:, ia]
        target = tau_eval[nxt[ia]]
        min_step = 10 * np.abs(np.nextafter(ta, np.inf) - ta)
        ha = np.maximum(h[ia], min_step)
        land = ta + ha >= target
        ha = np.where(land, target - ta, ha)
        Kst = np.empty((n_stages + 1, n, ia.size))
        Kflat = Kst.reshape(n_stages + 1, -1)             # a view: stage sums are (s,) @ (s, n*B') matmuls
        Kst[0] = fa
        for s in range(1, n_stages):
            dy = (_A[s, :s] @ Kflat[:s]).reshape(n, -1) * ha
            Kst[s] = fun(ta + _C[s] * ha, ya + dy, ia)
        y_new = ya + ha * (_B @ Kflat[:n_stages]).reshape(n, -1)
        f_new = fun(ta + ha, y_new, ia)
        Kst[n_stages] = f_new
        nfev += n_stages
        scale = atol + np.maximum(np.abs(ya), np.abs(y_new)) * rtol
        err = _error_norm(Kst, ha, scale)
        finite = np.all(np.isfinite(y_new), axis=0) & np.all(np.isfinite(f_new), axis=0) & np.isfinite(err)
        accept = (err < 1) & finite
        with np.errstate(divide="ignore"):
            grow = np.where(err == 0, MAX_FACTOR, np.minimum(MAX_FACTOR, SAFETY * err ** _EXPONENT))
            shrink = np.where(finite, np.maximum(MIN_FACTOR, SAFETY * err ** _EXPONENT), MIN_FACTOR)
        grow = np.where(was_rejected[ia], np.minimum(1.0, grow), grow)
        # A landing step may be shorter than the controller's step: keep the longer one for next time.
        h_next = np.where(land, np.maximum(ha * grow, h[ia]), ha * grow)
        h[ia] = np.where(accept, h_next, ha * shrink)
        was_rejected[ia] = ~accept
        acc = ia[accept]
        tau[acc] = np.where(land[accept], target[accept], ta[accept] + ha[accept])
        y[:, acc] = y_new[:, accept]
        f[:, acc] = f_new[:, accept]
        steps[acc] += 1
        rejected[ia[~accept]] += 1
        landed = acc[land[accept]]
        if landed.size:
            out[:, nxt[landed], landed] = y[:, landed]
            nxt[landed] += 1
        too_small = ia[(~accept) & (h[ia] < min_step)]
        if too_small.size:
            success[too_small] = False
            nxt[too_small] = T
        active = nxt < T
    else:  # pragma: no cover - only with absurd tolerances
        success[active] = False
    return BatchSolution(tau_eval, out, steps, rejected, nfev, success)


__all__ = ["BatchSolution", "integrate_batch"]
