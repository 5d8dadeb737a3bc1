r"""The small-batch path of the reduced flows: one plain :func:`scipy.integrate.solve_ivp` (DOP853) per trajectory.

The vectorised integrator of :mod:`simulation.batch` pays a fixed numpy cost per step for the whole batch (gathers,
masks, 13 stage sums); below a few trajectories that cost exceeds what it saves, and one scipy call per
trajectory with the generated right-hand side (a tuple of numpy scalars, no broadcasting or stacking) is
faster. :data:`SMALL_BATCH` is the measured crossover (``benchmarks/bench_integrators.py``, docs/performance.md):
:func:`simulation.reduced.integrate_states` sends batches of at most that many trajectories here.

Same log-time system as the batch path, :math:`dy/d\tau = e^\tau f(y)` with :math:`\tau = \log(1 + t)`, same
``rtol``/``atol`` meaning (scipy's), same DOP853 pair; the two differ in where they land (the batch path
shortens a step to hit each requested time, scipy interpolates with DOP853's 7th-order dense output) and so
agree to the integration tolerance, not bit for bit (tests/unit/simulation/test_scalar_path.py states the bound).
"""

from __future__ import annotations

from typing import Callable

import numpy as np

SMALL_BATCH = 4
"""Largest batch integrated trajectory by trajectory. Measured on the 2-core machine (FAFO, t up to 1e12,
rtol 1e-10): scipy per trajectory 0.03 s / 0.14 s / 0.27 s at 1 / 4 / 8 trajectories, the batch integrator
0.15 s / 0.22 s / 0.21 s: the crossover lies between 4 and 8."""


def integrate_columns(rhs: Callable[..., tuple], y0: np.ndarray, params: np.ndarray, tau_eval: np.ndarray, *,
                      rtol: float, atol: float, max_steps: int):
    r"""Integrate each column of ``y0`` with its own parameters, one ``solve_ivp`` call each.

    Args:
        rhs: the generated right-hand side ``rhs(*y, *params) -> tuple`` of the autonomous flow :math:`f`.
        y0: initial states ``(n, B)``; params: per-trajectory parameters ``(P, B)``.
        tau_eval: strictly increasing log times ``>= 0``, ``(T,)``; the integration starts at ``tau = 0``.
        max_steps: step cap per trajectory (past it the trajectory fails, as in the batch path).

    Returns:
        :class:`simulation.batch.BatchSolution`; ``rejected`` is -1 (scipy does not report it), ``steps``
        counts accepted steps, ``nfev`` sums the scipy evaluations.
    """
    from scipy.integrate import DOP853

    from simulation.batch import BatchSolution

    n, B = y0.shape
    T = tau_eval.size
    out = np.full((n, T, B), np.nan)
    steps = np.zeros(B, dtype=np.int64)
    success = np.zeros(B, dtype=bool)
    nfev = 0
    exp = np.exp
    asarray = np.asarray
    for b in range(B):
        pars = tuple(float(x) for x in params[:, b])

        def fun(s, y, pars=pars):
            return exp(s) * asarray(rhs(*y, *pars), dtype=float)

        k = 0
        while k < T and tau_eval[k] <= 0.0:
            out[:, k, b] = y0[:, b]
            k += 1
        if k == T:
            success[b] = True
            continue
        solver = DOP853(fun, 0.0, y0[:, b].astype(float), float(tau_eval[-1]), rtol=rtol, atol=atol)
        ok = True
        while k < T:
            if steps[b] >= max_steps:
                ok = False
                break
            solver.step()
            if solver.status == "failed":             # non-finite states fail too: their error norm is NaN
                ok = False
                break
            steps[b] += 1
            hi = k
            while hi < T and tau_eval[hi] <= solver.t:
                hi += 1
            if hi > k:
                if hi == T and tau_eval[-1] == solver.t:
                    if hi - 1 > k:
                        out[:, k:hi - 1, b] = solver.dense_output()(tau_eval[k:hi - 1])
                    out[:, hi - 1, b] = solver.y
                else:
                    out[:, k:hi, b] = solver.dense_output()(tau_eval[k:hi])
                k = hi
        success[b] = ok and bool(np.all(np.isfinite(out[:, :, b])))
        nfev += solver.nfev
    return BatchSolution(tau_eval, out, steps, np.full(B, -1, dtype=np.int64), nfev, success)


__all__ = ["SMALL_BATCH", "integrate_columns"]
