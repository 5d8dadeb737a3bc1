r"""The paper's own simulation (PAPER.md settings), side by side with the derived flow.

*Paper:* :func:`theory.paper.paper_system` with :math:`(m, n, b, M) = (5, 50, 50, 20)`,
:math:`\eta_{OV} = 1`, :math:`\eta_{QK}/\eta_{OV} \in \{0.01, 0.1, 1, 10, 100\}`, from
:math:`\mu = 0`. We integrate it two ways: the paper's scheme (classical RK4 in
:math:`\tau = t\,\min(\eta)` with step 10, :func:`paper_rk4`) over a horizon, and our adaptive
log-time integrator (:func:`paper_adaptive`; :func:`reproduce` reaches the same DOP853 through
:func:`simulation.solve`, ``system="paper"``), which also shows whether step 10 was accurate.

*Ours:* the derived CACO flow under the identification of :mod:`theory.paper`: one relevant token
among :math:`n/m = 10` equally weighted ones means :math:`M + 1 = n/m`, so ``M = 9``, ``K = 20``
outputs; the score scale :math:`1/b` divides the QK rate by :math:`b^2` and leaves the OV rate
alone (:func:`theory.paper.score_scale_rates`), so ours runs with :math:`\eta_{QK}/b^2`, :math:`\eta_{OV}`.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Callable

import numpy as np

from simulation.batch import integrate_batch
from simulation.integrators import fixed_step, rk4_step
from simulation.reduced import tau_of_t
from simulation.sweep import residual_at_loss
from theory.parametrization import BASELINE, Parametrization


@lru_cache(maxsize=1)
def paper_functions() -> tuple[Callable, Callable, Callable, dict]:
    """``rhs(y, m, n, b, M_out, eta_ov, eta_qk)``, ``attention(y, ...)``, ``loss(y, ...)`` and the settings."""
    from simulation import generated

    return (generated.paper_rhs, generated.paper_attention, generated.paper_loss,
            dict(generated.PAPER_SIMULATION_SETTINGS))


def _params(settings: dict, ratios: np.ndarray) -> tuple:
    eo = settings["eta_OV"]
    return (settings["m"], settings["n"], settings["b"], settings["M_out"], eo, ratios * eo)


@dataclass(frozen=True)
class PaperRun:
    """Attention, loss (``(T, R)``) of the paper's system and of ours on the time grid ``t`` ``(T,)``."""

    ratios: np.ndarray
    t: np.ndarray
    paper_attention: np.ndarray
    paper_loss: np.ndarray
    ours_attention: np.ndarray
    ours_loss: np.ndarray
    ours_K: int
    ours_M: int


def paper_adaptive(ratios, t_eval: np.ndarray, settings: dict | None = None, rtol: float = 1e-10) -> tuple[np.ndarray, np.ndarray]:
    """The paper's system by the adaptive log-time integrator: attention and loss ``(T, R)``."""
    rhs, att, loss, default = paper_functions()
    settings = settings or default
    ratios = np.asarray(ratios, dtype=float)
    pars = _params(settings, ratios)

    def g(tau, y, idx):
        sub = [np.asarray(p)[idx] if np.ndim(p) else p for p in pars]
        return np.exp(tau) * np.stack([np.broadcast_to(x, tau.shape) for x in rhs(*y, *sub)])

    sol = integrate_batch(g, np.zeros((2, ratios.size)), tau_of_t(t_eval), rtol=rtol, atol=1e-12)
    y = sol.y
    return att(*y, *pars) * np.ones_like(y[0]), loss(*y, *pars) * np.ones_like(y[0])


def paper_rk4(ratios, horizon_tau: float, settings: dict | None = None, record_every: int = 100) -> tuple:
    r"""The paper's scheme: RK4 in :math:`\tau = t\min(\eta)` with its step, all ratios at once (batched state ``(2, R)``).

    One ratio alone is ``solve("CACO", system="paper", integrator="rk4", clock="tau", ...)``.

    Returns ``t (T,)`` per ratio as ``(T, R)``, attention and loss ``(T, R)``.
    """
    rhs, att, loss, default = paper_functions()
    settings = settings or default
    ratios = np.asarray(ratios, dtype=float)
    pars = _params(settings, ratios)
    scale = np.minimum(pars[4], pars[5])            # tau = t * min(eta)
    h = settings["rk4_step"]

    def f(y):                                        # dy/dtau = f(y) / min(eta)
        return np.stack(rhs(*y, *pars)) / scale

    n = int(round(horizon_tau / h))
    steps = np.unique(np.r_[np.arange(record_every, n + 1, record_every), n])
    run = fixed_step(rk4_step, f, np.zeros((2, ratios.size)), steps * h, h)
    Y = np.concatenate([np.zeros((2, 1, ratios.size)), run.y], axis=1)   # (2, T, R), tau = 0 first
    t = np.r_[0.0, steps * h][:, None] / scale[None, :]
    return t, att(*Y, *pars) * np.ones_like(Y[0]), loss(*Y, *pars) * np.ones_like(Y[0])


def reproduce(t_eval: np.ndarray, settings: dict | None = None) -> PaperRun:
    """Paper's system and ours on the same times, for the paper's ratios, through the one entry point:
    :func:`simulation.solve` once per ratio for the paper's equations (``system="paper"``, DOP853 in log time at
    rtol 1e-10, atol 1e-12, as :func:`paper_adaptive`) and :func:`simulation.solve_batch` for the derived flow (the
    ratios a broadcast axis). Attention and loss ``(T, R)`` each."""
    from simulation.solve import solve, solve_batch

    _, _, _, default = paper_functions()
    settings = settings or default
    ratios = np.asarray(settings["ratios"], dtype=float)
    t = np.asarray(t_eval, dtype=float)
    m, n, b, M_out, eo = (settings[k] for k in ("m", "n", "b", "M_out", "eta_OV"))
    paper = [solve(Parametrization(BASELINE), K=int(M_out), M=int(round(n)) - 1, eta_qk=r * eo, eta_ov=eo, u0=0.0,
                   v0=0.0, t=t, system="paper", integrator="dop853", m=m, n=n, b=b, M_out=M_out, rtol=1e-10,
                   atol=1e-12) for r in ratios]
    K, M = int(M_out), int(round(n / m)) - 1
    ours = solve_batch(Parametrization(BASELINE), K=K, M=M, eta_qk=ratios * eo / b ** 2, eta_ov=eo, u0=0.0, v0=0.0,
                       t=t)
    return PaperRun(ratios, t, np.stack([tr.p for tr in paper], axis=1), np.stack([tr.loss for tr in paper], axis=1),
                    ours.p, ours.loss, K, M)


def attention_at_levels(run: PaperRun, levels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Attention of paper and ours where the loss first reaches each level: ``(R, L)`` each."""
    paper = 1 - residual_at_loss(run.paper_loss.T, 1 - run.paper_attention.T, levels)
    ours = 1 - residual_at_loss(run.ours_loss.T, 1 - run.ours_attention.T, levels)
    return paper, ours


__all__ = ["PaperRun", "paper_functions", "paper_adaptive", "paper_rk4", "reproduce", "attention_at_levels"]
