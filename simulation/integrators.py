r"""The integrators of :func:`simulation.solve`: one registry, one fixed-step loop, one ``dt`` rule.

Every integrator takes a :class:`~simulation.systems.System` (a flat state ``y (n,)`` or a batch
``(n, B)``, :math:`\dot y = f(y)`) and strictly increasing output times ``t (T,)`` and returns an
:class:`Integration`: states ``(n, T)`` (or ``(n, T, B)``), a ``success`` flag, a message and the cost
(right-hand-side evaluations, accepted and rejected steps). Nothing raises on a failed integration:
``success`` is False, ``message`` says why and the states after the failure are NaN.

:data:`INTEGRATORS`:

``"rk4"``, ``"euler"`` (alias ``"gd"``: full-batch gradient descent is the Euler scheme of the flow)
    fixed step ``dt``; ``t`` must be multiples of ``dt`` (:func:`steps_for_times`, the one rule).
``"dop853"``
    the vectorised adaptive DOP853 of :mod:`simulation.batch` in log time :math:`\tau = \log(1+t)`
    (:math:`dy/d\tau = e^\tau f`), ``rtol`` 1e-10: the default for the reduced flows without a first integral
    (tied and scaled kinds).
``"clock-free"``
    :mod:`simulation.clockfree`: the state at each time from the first integral and a quadrature of
    :math:`t`, no time stepping (accuracy ~1e-12, fixed); the default for the reduced flows with a first integral
    (CACO, CAFO, FACO, FAFO), ``dop853`` for anything else.
``"scipy-DOP853"``, ``"LSODA"``, ``"Radau"``
    :func:`scipy.integrate.solve_ivp` on the same log-time system (LSODA and Radau get the Jacobian when
    the system has one).

A new integrator is one function ``f(system, t, **options) -> Integration`` added with :func:`register_integrator`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

DT_TOLERANCE = 1e-9
r"""Relative tolerance of the ``dt``-multiple rule: :math:`|n\,dt - t| \le 10^{-9}\max(1, t)`. ``t/dt`` of a time
written in decimal is off an integer by float rounding only (~1e-16 relative); 1e-9 rejects any time that is
genuinely between two steps (a step is at least 1e-9 of the time for fewer than 1e9 steps)."""


@dataclass(frozen=True)
class Integration:
    """States at the output times and what it cost.

    Attributes:
        y: states ``(n, T)`` (``(n, T, B)`` for a batch); NaN after a failure.
        success: reached the last time with finite states (per trajectory ``(B,)`` for a batch).
        message: ``""`` or why not.
        nfev: right-hand-side evaluations; ``steps``, ``rejected``: accepted and rejected steps (None where the
            integrator does not report them: scipy's).
    """

    y: np.ndarray
    success: Any
    message: str
    nfev: int
    steps: Any = None
    rejected: Any = None
    path: str | None = None
    """What actually ran where an integrator hands some starts to another (``clock-free``: ``"clock-free"``,
    ``"dop853"`` or ``"clock-free+dop853"``); reported as the ``integrator`` of :attr:`stats`."""
    error: Any = None
    """Estimated largest relative error of any coordinate at any output time (per trajectory ``(B,)`` for a batch),
    where the integrator estimates it; reported as the ``error`` of :attr:`stats`."""

    @property
    def stats(self) -> dict[str, Any]:
        """``nfev``, (where known) ``steps``, ``rejected`` as plain numbers (lists for a batch), and ``integrator``
        where :attr:`path` is set."""
        out: dict[str, Any] = {"nfev": int(self.nfev)}
        if self.path is not None:
            out["integrator"] = self.path
        if self.error is not None:
            out["error"] = np.asarray(self.error, dtype=float).tolist()
        for key in ("steps", "rejected"):
            if getattr(self, key) is not None:
                out[key] = np.asarray(getattr(self, key)).tolist()
        return out


Integrator = Callable[..., Integration]
INTEGRATORS: dict[str, Integrator] = {}
"""integrator name -> function ``(system, t, **options) -> Integration``."""


def register_integrator(*names: str) -> Callable[[Integrator], Integrator]:
    """Decorator adding an integrator to :data:`INTEGRATORS` under each of ``names``."""
    def deco(fn: Integrator) -> Integrator:
        for name in names:
            INTEGRATORS[name] = fn
        return fn
    return deco


class StepTimeError(ValueError):
    """A time the stepped solvers cannot stop at: ``time`` (the first bad one) and ``why`` (what is allowed)."""

    def __init__(self, time: float, why: str):
        super().__init__(f"time {time:g} {why}")
        self.time, self.why = time, why


def steps_for_times(t_eval, dt: float) -> np.ndarray:
    """Step counts ``round(t / dt)`` ``(T,)``; a time that is not a multiple of ``dt`` (:data:`DT_TOLERANCE`), or
    that falls on the step of the time before it, is a :class:`StepTimeError` naming it."""
    t_eval = np.atleast_1d(np.asarray(t_eval, dtype=float))
    if not dt > 0:
        raise ValueError(f"dt = {dt:g}: must be > 0")
    n = np.rint(t_eval / dt).astype(np.int64)
    bad = np.abs(n * dt - t_eval) > DT_TOLERANCE * np.maximum(1.0, t_eval)
    if np.any(bad):
        raise StepTimeError(float(t_eval[bad][0]), f"is not a multiple of dt = {dt:g}")
    if np.any(n < 0):
        raise StepTimeError(float(t_eval[n < 0][0]), "is negative: times must be non-negative multiples of dt")
    same = np.flatnonzero(np.diff(n) <= 0)
    if same.size:
        raise StepTimeError(float(t_eval[same[0] + 1]), f"falls on the same step of dt = {dt:g} as the time "
                            "before it: times must be strictly increasing multiples of dt")
    return n


def euler_step(f: Callable[[np.ndarray], np.ndarray], y: np.ndarray, h: float) -> np.ndarray:
    r"""One explicit Euler step :math:`y + h f(y)` (gradient descent when :math:`f = -\eta\nabla\mathcal L`)."""
    return y + h * f(y)


def rk4_step(f: Callable[[np.ndarray], np.ndarray], y: np.ndarray, h: float) -> np.ndarray:
    """One classical Runge-Kutta step (any array shape)."""
    k1 = f(y)
    k2 = f(y + 0.5 * h * k1)
    k3 = f(y + 0.5 * h * k2)
    k4 = f(y + h * k3)
    return y + h / 6.0 * (k1 + 2 * k2 + 2 * k3 + k4)


STAGES = {euler_step: 1, rk4_step: 4}


def fixed_step(step: Callable, f: Callable[[np.ndarray], np.ndarray], y0: np.ndarray, t_eval, dt: float,
               t0: float = 0.0) -> Integration:
    r"""March ``step`` with step ``dt`` from ``y0`` at ``t0`` and record at ``t_eval`` (multiples of ``dt`` past ``t0``).

    Shapes: ``y0`` any; returns ``y`` with the time axis inserted after the first, ``(n, T, ...)``.
    A non-finite state stops the march: ``success`` False, NaN from there on.
    """
    n_at = steps_for_times(np.asarray(t_eval, dtype=float) - t0, dt)
    y = np.array(y0, dtype=float, copy=True)
    out = np.full((y.shape[0], n_at.size) + y.shape[1:], np.nan)
    done = 0
    for i, target in enumerate(n_at):
        while done < target:
            y = step(f, y, dt)
            done += 1
            if not np.all(np.isfinite(y)):
                return Integration(out, False, f"non-finite state at t = {t0 + done * dt:g}", done * STAGES.get(step, 1),
                                   done, 0)
        out[:, i] = y
    return Integration(out, True, "", done * STAGES.get(step, 1), done, 0)


@register_integrator("rk4")
def _rk4(system, t, *, dt: float = 0.05) -> Integration:
    return fixed_step(rk4_step, system.rhs, system.y0, t, dt)


@register_integrator("euler", "gd")
def _euler(system, t, *, dt: float = 0.05) -> Integration:
    return fixed_step(euler_step, system.rhs, system.y0, t, dt)


def _log_time(t) -> np.ndarray:
    t = np.atleast_1d(np.asarray(t, dtype=float))
    if t.ndim != 1 or t.size == 0 or np.any(~np.isfinite(t)) or np.any(t < 0) or np.any(np.diff(t) <= 0):
        raise ValueError("t must be finite, >= 0 and strictly increasing")
    return np.log1p(t)


@register_integrator("dop853")
def _dop853_batch(system, t, *, rtol: float = 1e-10, atol: float = 1e-12, max_steps: int = 20_000) -> Integration:
    from simulation.batch import integrate_batch

    y0 = np.asarray(system.y0, dtype=float)
    single = y0.ndim == 1
    Y0 = y0[:, None] if single else y0
    if single and system.generated_rhs is not None:
        # One trajectory of a generated flow: one plain scipy DOP853 call is faster (simulation.scalar).
        from simulation.scalar import integrate_columns

        params = np.asarray(system.rhs_params, dtype=float)[:, None]
        sol = integrate_columns(system.generated_rhs, Y0, params, _log_time(t), rtol=rtol, atol=atol,
                                max_steps=max_steps)
        msg = "" if sol.success[0] else f"step size underflow or step cap ({max_steps}) before t = {float(np.max(t)):g}"
        return Integration(sol.y[:, :, 0], bool(sol.success[0]), msg, sol.nfev, int(sol.steps[0]), None)

    def g(tau, y, idx):
        return np.exp(tau) * system.rhs_batch(y, idx)

    sol = integrate_batch(g, Y0, _log_time(t), rtol=rtol, atol=atol, max_steps=max_steps)
    ok = bool(np.all(sol.success))
    msg = "" if ok else f"step size underflow or step cap ({max_steps}) before t = {float(np.max(t)):g}"
    if single:
        return Integration(sol.y[:, :, 0], bool(sol.success[0]), msg, sol.nfev, int(sol.steps[0]), int(sol.rejected[0]))
    return Integration(sol.y, sol.success, msg, sol.nfev, sol.steps, sol.rejected)


@register_integrator("clock-free")
def _clock_free(system, t, *, rtol: float = 1e-10, atol: float = 1e-12, max_steps: int = 20_000) -> Integration:
    """A reduced flow with a first integral, walked along its level curve (:mod:`simulation.clockfree`; the default of
    :func:`simulation.solve` for those), through the same router as :func:`simulation.reduced.integrate_states`
    (:func:`simulation.reduced.clock_free_states`: starts the walk does not cover, or that fail on it, go to DOP853;
    ``stats["integrator"]`` says what ran). Any other system, or a ``rtol`` below
    :data:`simulation.reduced.CLOCK_FREE_MIN_RTOL`, goes to ``dop853``."""
    from simulation.clockfree import clock_free_capable
    from simulation.reduced import CLOCK_FREE_MIN_RTOL, clock_free_states

    if system.name != "reduced" or rtol < CLOCK_FREE_MIN_RTOL or not clock_free_capable(system.param):
        return _dop853_batch(system, t, rtol=rtol, atol=atol, max_steps=max_steps)
    _log_time(t)                                           # the same check of t as every integrator here
    y0 = np.asarray(system.y0, dtype=float)
    single = y0.ndim == 1
    Y0 = y0[:, None] if single else y0
    pars = np.repeat(np.asarray(system.rhs_params, dtype=float)[:, None], Y0.shape[1], axis=1)
    sol = clock_free_states(system.param, Y0, pars, np.atleast_1d(np.asarray(t, dtype=float)), rtol=rtol, atol=atol,
                            max_steps=max_steps)
    ok = bool(np.all(sol.success))
    msg = "" if ok else f"step size underflow or step cap ({max_steps}) before t = {float(np.max(t)):g}"
    if single:
        return Integration(sol.y[:, :, 0], bool(sol.success[0]), msg, sol.nfev, int(sol.steps[0]),
                           int(sol.rejected[0]) if sol.rejected[0] >= 0 else None, path=sol.method,
                           error=None if sol.error is None else float(sol.error[0]))
    return Integration(sol.y, sol.success, msg, sol.nfev, sol.steps, sol.rejected, path=sol.method, error=sol.error)


def _scipy(method: str):
    def integrator(system, t, *, rtol: float = 1e-10, atol: float = 1e-12) -> Integration:
        from scipy.integrate import solve_ivp

        tau = _log_time(t)
        extra = {}
        if method in ("Radau", "BDF", "LSODA") and system.jacobian is not None:
            extra["jac"] = lambda s, y: np.exp(s) * system.jacobian(y)
        sol = solve_ivp(lambda s, y: np.exp(s) * system.rhs(y), (0.0, float(tau[-1])), np.asarray(system.y0, float),
                        method=method, t_eval=tau, rtol=rtol, atol=atol, **extra)
        y = np.full((len(system.y0), tau.size), np.nan)
        y[:, : sol.y.shape[1]] = sol.y
        return Integration(y, bool(sol.success), "" if sol.success else str(sol.message), int(sol.nfev))
    integrator.__name__ = f"_scipy_{method}"
    return integrator


for _m, _name in (("DOP853", "scipy-DOP853"), ("LSODA", "LSODA"), ("Radau", "Radau")):
    register_integrator(_name)(_scipy(_m))


__all__ = ["Integration", "INTEGRATORS", "register_integrator", "steps_for_times", "euler_step", "rk4_step",
           "fixed_step", "DT_TOLERANCE"]
