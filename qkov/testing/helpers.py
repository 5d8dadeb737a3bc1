r"""The library calls a property needs: trajectories, laws, level curves, matched-loss residuals, runs.

Each is a thin wrapper over :mod:`simulation` that takes a :class:`~qkov.testing.cases.Case` and keeps it with
the result, so that an assertion can name every input; nothing is re-derived here.

* :func:`trajectory` / :func:`trajectories` — the reduced flow (:func:`simulation.solve`,
  :func:`simulation.solve_batch`, DOP853 in log time at ``rtol = 1e-10``), observables ``(T,)``;
* :func:`next_order_law`, :func:`leading_law` — theory's laws at times ``(T,)``
  (:mod:`simulation.next_order`); :func:`level_curve_v` — ``v`` on the first integral's level curve
  (:func:`simulation.closed_forms.level_curve`); :func:`first_integral_drift`;
* :func:`loss_levels`, :func:`matched_residuals` — :math:`1 - p` where each run's loss first reaches
  each level (:func:`simulation.sweep.residual_at_loss`);
* :func:`full_run` — the full matrices (:func:`simulation.full_matrix.simulate_full`) from the symmetric
  or a random start; :func:`train_full` — torch's optimizer on the full matrices
  (:func:`simulation.optimizer_torch.train_full`) for :func:`~qkov.testing.assert_matches_reduced_map`.

Calls are cached (small LRU caches keyed on the case and the times), so several properties drawing the
same example integrate once.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from qkov.testing.cases import Case, RandomStart

if TYPE_CHECKING:
    from simulation.full_matrix import FullTrajectory
    from simulation.optimizer_maps import OptimizerSpec, OrbitRun
    from simulation.optimizer_torch import TorchRun
    from simulation.reduced import Trajectory

RTOL = 1e-10
"""Relative tolerance of :func:`trajectory` (simulation's default)."""


@dataclass(frozen=True)
class CaseTrajectory:
    r"""A reduced trajectory with its case: ``t, u, v, p, residual, loss`` each ``(T,)``, ``state (n, T)``."""

    case: Case
    solution: "Trajectory"
    rtol: float = RTOL

    @property
    def t(self) -> np.ndarray:
        return self.solution.t

    @property
    def u(self) -> np.ndarray:
        return self.solution.u

    @property
    def v(self) -> np.ndarray:
        return self.solution.v

    @property
    def p(self) -> np.ndarray:
        return self.solution.p

    @property
    def residual(self) -> np.ndarray:
        """:math:`1 - p`, computed without cancellation."""
        return self.solution.residual

    @property
    def loss(self) -> np.ndarray:
        return self.solution.loss

    @property
    def state(self) -> np.ndarray:
        return self.solution.state

    @property
    def steps(self) -> int:
        """Accepted integrator steps."""
        return int(self.solution.stats.get("steps", 0))


def _times(t: Any) -> tuple[float, ...]:
    return tuple(float(x) for x in np.atleast_1d(np.asarray(t, dtype=float)))


def trajectory(case: Case, t: Sequence[float] | np.ndarray | float, *, rtol: float = RTOL) -> CaseTrajectory:
    r"""The reduced flow of ``case`` from its symmetric start, observed at the times ``t (T,)`` (``t >= 0``,
    increasing): :func:`simulation.solve` (reduced system, DOP853 in :math:`\tau = \log(1 + t)`).

    Raises :class:`simulation.IntegrationError` when the integration does not reach the last time.
    """
    return _trajectory(case, _times(t), float(rtol))


@lru_cache(maxsize=64)
def _trajectory(case: Case, t: tuple[float, ...], rtol: float) -> CaseTrajectory:
    from simulation import solve

    sol = solve(case.parametrization, K=case.K, M=case.M, eta_qk=case.eta_qk, eta_ov=case.eta_ov, u0=case.u0, v0=case.v0,
                t=np.array(t), rtol=rtol)
    return CaseTrajectory(case, sol, rtol)


def trajectories(cases: Sequence[Case], t: Sequence[float] | np.ndarray, *, rtol: float = RTOL) -> list[CaseTrajectory]:
    """Several cases of one parametrization in one vectorised integration (:func:`simulation.solve_batch`);
    raises ``ValueError`` for mixed parametrizations and ``RuntimeError`` for a failed integration."""
    from simulation import solve_batch

    params = {c.param for c in cases}
    if len(params) != 1:
        raise ValueError(f"trajectories: one parametrization at a time, got {sorted(params)}")
    col = lambda name: np.array([getattr(c, name) for c in cases], dtype=float)  # noqa: E731
    batch = solve_batch(cases[0].parametrization, K=col("K"), M=col("M"), eta_qk=col("eta_qk"), eta_ov=col("eta_ov"),
                        u0=col("u0"), v0=col("v0"), t=np.asarray(t, dtype=float), rtol=rtol)
    out = []
    for b, c in enumerate(cases):
        if not batch.success[b]:
            raise RuntimeError(f"{c}: the integration failed before t = {float(np.max(t)):g}")
        out.append(CaseTrajectory(c, batch.column(b), rtol))
    return out


def next_order_law(case: Case, t: Sequence[float] | np.ndarray | float) -> dict[str, np.ndarray]:
    r"""Theory's next-order laws (:mod:`theory.asymptotics_next`) at ``t (T,)``: ``{"u", "v", "residual"}``,
    each ``(T,)``, NaN where the asymptotic clock has no root (``t`` too small for the law)."""
    return _next_order(case, _times(t))


@lru_cache(maxsize=64)
def _next_order(case: Case, t: tuple[float, ...]) -> dict[str, np.ndarray]:
    from simulation.next_order import next_order_law as law

    return law(case.parametrization, case.K, case.M, case.eta_qk, case.eta_ov, case.u0, case.v0, np.array(t))


def leading_law(case: Case, t: Sequence[float] | np.ndarray | float) -> dict[str, np.ndarray]:
    r"""Theory's leading laws (:mod:`theory.asymptotics`) at ``t (T,)``: ``u_of_t``, then ``v_of_u`` and
    ``residual_of_u`` at that ``u``; ``{"u", "v", "residual"}``, each ``(T,)``."""
    from simulation.next_order import leading_law as law

    return law(case.parametrization, case.K, case.M, case.eta_qk, case.eta_ov, np.array(_times(t)))


def law_of_u(case: Case, name: str, t: np.ndarray, u: np.ndarray) -> np.ndarray:
    r"""One leading law of :data:`simulation.closed_forms.LAW_NAMES` evaluated at times ``t`` and margins ``u``
    (laws in ``u`` are stated at matched ``u``, i.e. matched loss), ``(T,)``."""
    from simulation.closed_forms import law_functions

    return law_functions(case.param)[name](t, u, case.K, case.M, case.eta_qk, case.eta_ov)


def level_curve_v(case: Case, u: Sequence[float] | np.ndarray | float) -> np.ndarray:
    r"""``v`` on the first integral's level curve :math:`H(u, v) = H(u_0, v_0)` through the case's start, at
    each ``u (U,)`` (:func:`simulation.closed_forms.level_curve`): the trajectory's path with no clock."""
    from simulation.closed_forms import level_curve
    from simulation.reduced import initial_states

    state0 = initial_states(case.parametrization, case.u0, case.v0, case.K)[:, 0]
    return level_curve(case.parametrization, state0, case.K, case.M, case.eta_qk, case.eta_ov,
                       np.atleast_1d(np.asarray(u, dtype=float)))


def first_integral_drift(tr: CaseTrajectory) -> np.ndarray:
    r"""Relative drift :math:`|H(t) - H(0)|/\max(|G_{QK}|, |R\,G_{OV}|, 1)` along the trajectory, ``(T,)``
    (:func:`simulation.closed_forms.first_integral_drift`; ``H`` is taken at the trajectory's first time)."""
    from simulation.closed_forms import first_integral_drift as drift

    c = tr.case
    return np.ravel(drift(c.parametrization, tr.state, c.K, c.M, c.eta_qk, c.eta_ov))


def loss_levels(runs: Sequence[CaseTrajectory], n: int = 5, *, below_start: float = 1e-3) -> np.ndarray:
    r"""``n`` log-spaced loss levels every run reaches: from ``below_start`` times the smallest starting loss
    (capped at 1) down to twice the largest final loss, ``(n,)``; empty when that range is empty."""
    first = min(float(np.nanmin(r.loss[:1])) for r in runs)
    last = max(float(r.loss[-1]) for r in runs)
    hi, lo = min(first, 1.0) * below_start, max(last, 1e-300) * 2
    return np.geomspace(hi, lo, n) if hi > lo else np.empty(0)


def matched_residuals(runs: Sequence[CaseTrajectory], levels: Sequence[float] | np.ndarray) -> np.ndarray:
    r""":math:`1 - p` of each run where its loss first reaches each level, ``(len(runs), L)``; NaN where a run
    does not reach a level in its time range (:func:`simulation.sweep.residual_at_loss`, interpolated
    linearly in :math:`(\log\mathcal L, \log(1-p))`, so the runs need dense times)."""
    from simulation.sweep import residual_at_loss

    loss = np.stack([r.loss for r in runs])
    res = np.stack([r.residual for r in runs])
    return residual_at_loss(loss, res, np.atleast_1d(np.asarray(levels, dtype=float)))


@dataclass(frozen=True)
class FullRun:
    """A full-matrix run of a case: ``start`` None (the case's symmetric start) or a :class:`RandomStart`;
    ``run`` the :class:`simulation.full_matrix.FullTrajectory` (``asym_qk, asym_ov (T,)``: distance from the
    symmetric set)."""

    case: Case
    start: RandomStart | None
    dt: float
    method: str
    run: "FullTrajectory"

    @property
    def start_text(self) -> str:
        return self.case.start if self.start is None else str(self.start)


def full_run(case: Case, t: Sequence[float] | np.ndarray, dt: float, *, start: RandomStart | None = None,
             method: str = "gd") -> FullRun:
    r"""Gradient descent (``"gd"``) or RK4 (``"rk4"``) on the full matrices at step ``dt`` from the case's
    symmetric start (``start=None``) or a random one; observed at ``t`` (multiples of ``dt``)."""
    from simulation.full_matrix import balanced_state, random_state, simulate_full

    state = (balanced_state(case.parametrization, case.K, case.M, case.u0, case.v0) if start is None
             else random_state(case.parametrization, case.K, case.M, start.scale, start.seed))
    run = simulate_full(case.parametrization, case.K, case.M, case.eta_qk, case.eta_ov, np.asarray(t, dtype=float), dt,
                        state=state, method=method)  # type: ignore[arg-type]
    return FullRun(case, start, float(dt), method, run)


@dataclass(frozen=True)
class OptimizerRun:
    """Torch's optimizer ``spec`` on the full matrices from the case's symmetric start: ``steps`` steps of
    size ``dt`` (rates :math:`\\eta\\,dt`); ``torch`` the :class:`simulation.optimizer_torch.TorchRun`
    (``step, u, v, p, loss, distance (T,)``)."""

    case: Case
    spec: "OptimizerSpec"
    dt: float
    steps: int
    torch: "TorchRun"

    def reduced_map(self) -> "OrbitRun":
        """The exact reduced map of the same optimizer (:func:`simulation.optimizer_maps.run_orbit_map`)."""
        from simulation.optimizer_maps import run_orbit_map

        c = self.case
        return run_orbit_map(c.param, self.spec, K=c.K, M=c.M, eta_qk=c.eta_qk, eta_ov=c.eta_ov, dt=self.dt,
                             steps=self.steps, u0=c.u0, v0=c.v0, record=self.torch.step)


def train_full(case: Case, spec: "OptimizerSpec", *, dt: float, steps: int, on_set: bool = False) -> OptimizerRun:
    """``steps`` steps of torch's optimizer ``spec`` on the full matrices (float64), every step recorded.
    ``on_set``: each gradient averaged over its orbit first, so the run stays on the symmetric set at every step on
    every machine (:func:`simulation.optimizer_torch.train_full`); without it Adam leaves the set from rounding at a
    machine-dependent step."""
    from simulation.optimizer_torch import train_full as train

    c = case
    run = train(c.param, spec, K=c.K, M=c.M, eta_qk=c.eta_qk, eta_ov=c.eta_ov, dt=dt, steps=steps, u0=c.u0, v0=c.v0,
                on_set=on_set)
    return OptimizerRun(case, spec, float(dt), int(steps), run)


__all__ = ["CaseTrajectory", "FullRun", "OptimizerRun", "RTOL", "first_integral_drift", "full_run", "law_of_u",
           "leading_law", "level_curve_v", "loss_levels", "matched_residuals", "next_order_law", "train_full",
           "trajectories", "trajectory"]
