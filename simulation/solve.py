r"""One entry point for every way qkov integrates the synthetic model, with a solver registry.

:func:`solve` returns a :class:`~simulation.reduced.Trajectory` (``t, u, v, p, residual, loss``, each
``(T,)``) whatever the method; :func:`solve_batch` the :class:`~simulation.reduced.Trajectories` of a grid.

Methods (:data:`SOLVERS`):

``"reduced"``
    The derived reduced flow (:mod:`simulation.generated`), adaptive DOP853 in log time, ``rtol`` 1e-10.
``"full-gd"``, ``"full-rk4"``
    Gradient descent (Euler, step ``dt``) or classical RK4 on the full matrices of MODEL.md from the
    balanced start (or ``init="random"`` with ``scale``, ``seed``); ``t`` must be multiples of ``dt``.
``"paper-rk4"``
    The paper's reduced equations (:mod:`theory.paper`) under the identification with MODEL.md
    (``m = 1`` relevant token, ``n = M + 1`` irrelevant, ``M_out = K`` outputs, ``b = 1``), classical RK4
    with step ``dt`` from ``u0, v0``; defined for ``CACO`` only, the one parametrization the paper's equations
    describe. Its QK equation is the CACO one slowed by ``(M+1)/(K+M+1)`` (see ``qkov derive``).

Example::

    >>> from simulation import solve
    >>> tr = solve("FAFO", K=10, M=19, eta_qk=10, eta_ov=1, u0=0.1, v0=0.1, t=[50, 500, 2500])
    >>> tr.p.shape
    (3,)

A new method is one function ``f(param, K, M, eta_qk, eta_ov, u0, v0, t, **options) -> Trajectory``
added with :func:`register_solver`.
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from simulation.reduced import DEFAULT_ATOL, DEFAULT_RTOL, Trajectories, Trajectory, integrate, integrate_many
from theory.parametrization import Parametrization

Solver = Callable[..., Trajectory]
SOLVERS: dict[str, Solver] = {}
"""method name -> solver function."""


def register_solver(name: str) -> Callable[[Solver], Solver]:
    """Decorator adding a solver to :data:`SOLVERS` under ``name``."""
    def deco(fn: Solver) -> Solver:
        SOLVERS[name] = fn
        return fn
    return deco


@register_solver("reduced")
def _reduced(param, K, M, eta_qk, eta_ov, u0, v0, t, *, rtol: float = DEFAULT_RTOL, atol: float = DEFAULT_ATOL):
    return integrate(param, K, M, eta_qk, eta_ov, u0, v0, t, rtol=rtol, atol=atol)


def _full(method: str):
    def solver(param, K, M, eta_qk, eta_ov, u0, v0, t, *, dt: float = 0.05, init: str = "balanced",
               scale: float = 0.05, seed: int = 0):
        from simulation.full_matrix import balanced_state, random_state, simulate_full

        state = (random_state(param, K, M, scale, seed) if init == "random"
                 else balanced_state(param, K, M, u0, v0))
        run = simulate_full(param, K, M, eta_qk, eta_ov, np.asarray(t, dtype=float), dt, state=state, method=method)
        return Trajectory(str(param), ("u", "v"), np.asarray(run.t, float), np.stack([run.u, run.v]),
                          np.asarray(run.u), np.asarray(run.v), np.asarray(run.p), 1 - np.asarray(run.p),
                          np.asarray(run.loss))
    solver.__name__ = f"_full_{method}"
    solver.__doc__ = f"Full-matrix {method} from MODEL.md's start."
    return solver


register_solver("full-gd")(_full("gd"))
register_solver("full-rk4")(_full("rk4"))


@register_solver("paper-rk4")
def _paper_rk4(param, K, M, eta_qk, eta_ov, u0, v0, t, *, dt: float = 0.05):
    from simulation import generated

    if Parametrization(param) != "CACO":
        raise ValueError(f"method 'paper-rk4': the paper's equations describe CACO only, not {param}")
    t = np.asarray(t, dtype=float)
    pars = (1.0, float(M + 1), 1.0, float(K), float(eta_ov), float(eta_qk))   # m, n, b, M_out, eta_OV, eta_QK
    names = ("mu_OV", "mu_QK")

    def f(y):
        return np.asarray(generated.paper_rhs(*y, *pars), dtype=float)

    steps = np.rint(t / dt).astype(np.int64)
    if np.any(np.abs(steps * dt - t) > 1e-9 * np.maximum(1.0, t)):
        raise ValueError(f"method 'paper-rk4': times must be multiples of dt = {dt:g}")
    y = np.array([float(u0), float(v0)])
    out = np.empty((2, t.size))
    n = 0
    for i, target in enumerate(steps):
        while n < target:
            k1 = f(y)
            k2 = f(y + 0.5 * dt * k1)
            k3 = f(y + 0.5 * dt * k2)
            k4 = f(y + dt * k3)
            y = y + dt / 6.0 * (k1 + 2 * k2 + 2 * k3 + k4)
            n += 1
        out[:, i] = y
    p = np.asarray(generated.paper_attention(*out, *pars), dtype=float) * np.ones(t.size)
    loss = np.asarray(generated.paper_loss(*out, *pars), dtype=float) * np.ones(t.size)
    return Trajectory("CACO", names, t, out, out[0], out[1], p, 1 - p, loss)


def solve(param: str, *, K: int, M: int, eta_qk: float, eta_ov: float, u0: float, v0: float,
          t: Sequence[float] | np.ndarray, method: str = "reduced", **options) -> Trajectory:
    r"""Integrate one parametrization of MODEL.md with ``method`` (see the module docstring).

    Args:
        param: ``"CACO" | "FACO" | "CAFO" | "FAFO"`` (or a :class:`theory.Parametrization`).
        K, M: classes (>= 2) and common tokens (>= 1).
        eta_qk, eta_ov: learning rates of the two circuits.
        u0, v0: effective start (> 0 for a factorized circuit: 0 is a fixed point of its flow).
        t: strictly increasing output times ``(T,)``.
        options: the method's own (``rtol``/``atol``; ``dt``, ``init``, ``scale``, ``seed``).

    Returns:
        :class:`~simulation.reduced.Trajectory` with ``t, u, v, p, residual = 1 - p, loss``, each ``(T,)``.
    """
    try:
        fn = SOLVERS[method]
    except KeyError:
        raise ValueError(f"method {method!r}: must be one of {', '.join(SOLVERS)}") from None
    return fn(Parametrization(param), K, M, eta_qk, eta_ov, u0, v0, t, **options)


def solve_batch(param: str, *, K, M, eta_qk, eta_ov, u0, v0, t: Sequence[float] | np.ndarray,
                rtol: float = DEFAULT_RTOL, atol: float = DEFAULT_ATOL) -> Trajectories:
    r"""The reduced flow for a grid: every parameter broadcasts to ``(B,)``; one vectorised integration.

    Returns :class:`~simulation.reduced.Trajectories` with observables ``(T, B)``.
    """
    return integrate_many(str(Parametrization(param)), K, M, eta_qk, eta_ov, u0, v0, t, rtol=rtol, atol=atol)


__all__ = ["solve", "solve_batch", "SOLVERS", "register_solver"]
