r"""Integration of the reduced gradient flows that :mod:`theory` derives, in log time.

The right-hand sides are :func:`simulation.numeric.numeric_system`'s, generated from theory (never a copy).
Trajectories run over :math:`t \in [0, 10^{12}]`, where ``u`` grows like :math:`\log t`, so we
integrate in :math:`\tau = \log(1 + t)`:

.. math::
    \frac{dy}{d\tau} = (1 + t)\,f(y) = e^{\tau} f(y),

in which the flow is smooth and non-stiff on the whole range (the Jacobian of
:math:`e^\tau f` stays :math:`O(1)` because :math:`\partial f/\partial y = O(1/t)` late), with the
vectorised DOP853 of :mod:`simulation.batch` at ``rtol = 1e-10`` by default.

Shapes: a batch of ``B`` trajectories has states ``(n_state, T, B)`` and observables ``(T, B)``;
:func:`integrate` is the single-trajectory form with arrays ``(T,)`` (what
:mod:`validation.synthetic` calls).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
from numpy.typing import ArrayLike

from simulation.batch import BatchSolution, integrate_batch
from simulation.numeric import numeric_system
from simulation.clockfree import clock_free_capable
from simulation.scalar import SMALL_BATCH, integrate_columns
from theory.parametrization import Parametrization

DEFAULT_RTOL = 1e-10
DEFAULT_ATOL = 1e-12
MAX_STEPS = 20_000
"""Step cap of one batch integration: legitimate flows need at most a few thousand steps to t = 1e15 (measured
in benchmarks/ and qkov.cli.options' bounds); past the cap a trajectory is reported as not reaching its time."""
OBSERVABLES = ("u", "v", "p", "residual", "loss")
CLOCK_FREE = True
"""Integrate parametrizations with a first integral (:func:`simulation.clockfree.clock_free_capable`:
CACO, CAFO, FACO, FAFO) clock-free, from their first integral, instead of stepping them in time; tests switch it off to exercise
the DOP853 paths on those systems."""
CLOCK_FREE_MIN_RTOL = 1e-12
"""The clock-free path's accuracy is fixed (~1e-12 relative, tests/property/test_clockfree_property.py); a caller
asking DOP853 for a tighter ``rtol`` than this gets DOP853."""
CLOCK_FREE_MAX_TIMES = 6
CLOCK_FREE_SMALL_BATCH = 16
"""The clock-free path pays one or two 30-node (20 when measured) quadratures per requested time and trajectory; DOP853 lands on a time
for one shortened step. So the clock-free path is used for at most :data:`CLOCK_FREE_MAX_TIMES` times, or for any
number of times in batches of at most :data:`CLOCK_FREE_SMALL_BATCH` (where the batch loop's own overhead
dominates). Measured (CACO, 1,000 trajectories, times log-spaced to 1e12, CPU-s, under load): at 4 / 8 / 16 times
0.054 / 0.062 / 0.087 against DOP853's 0.062 / 0.052 / 0.048; 10 trajectories at 200 times 0.026 against 0.074."""
CHUNK = 2048
"""Largest batch the vectorised loop integrates at once; larger ones run chunk by chunk. Each right-hand-side
temporary is ``8 B`` bytes; past a few thousand trajectories they leave the CPU caches. Measured (FAFO, 10,000
trajectories to t = 1e12, rtol 3e-10): one batch 3.8-4.6 CPU-s, chunks of 2,000 0.78, of 1,000 1.0, of 500 1.5."""


def tau_of_t(t: np.ndarray) -> np.ndarray:
    r""":math:`\tau = \log(1 + t)`."""
    return np.log1p(np.asarray(t, dtype=float))


def _check_times(t_eval: ArrayLike) -> np.ndarray:
    t_eval = np.atleast_1d(np.asarray(t_eval, dtype=float))
    if t_eval.ndim != 1 or t_eval.size == 0 or np.any(~np.isfinite(t_eval)) or np.any(t_eval < 0) \
            or np.any(np.diff(t_eval) <= 0):
        raise ValueError("t_eval must be finite, >= 0 and strictly increasing")
    return t_eval


@dataclass(frozen=True)
class Trajectories:
    r"""``B`` reduced trajectories of one parametrization on a common time grid.

    Attributes:
        param: the parametrization.
        t: times, ``(T,)``.
        state: reduced states, ``(n_state, T, B)`` (coordinates ``state_names``).
        u, v, p, residual, loss: MODEL.md's observables, each ``(T, B)``
            (``residual`` :math:`= 1 - p`, computed without cancellation).
        K, M, eta_qk, eta_ov: per-trajectory parameters, ``(B,)``.
        steps: accepted steps (clock-free: quadrature panels) per trajectory; ``success``: reached the last time
            finitely; ``integrator``: ``"dop853"``, ``"clock-free"`` or both joined by ``+``.
    """

    param: str
    state_names: tuple[str, ...]
    t: np.ndarray
    state: np.ndarray
    u: np.ndarray
    v: np.ndarray
    p: np.ndarray
    residual: np.ndarray
    loss: np.ndarray
    K: np.ndarray
    M: np.ndarray
    eta_qk: np.ndarray
    eta_ov: np.ndarray
    steps: np.ndarray = field(repr=False)
    success: np.ndarray = field(repr=False)
    integrator: str = "dop853"

    @property
    def batch_size(self) -> int:
        return self.state.shape[2]

    def column(self, b: int) -> "Trajectory":
        """Trajectory ``b`` alone."""
        return Trajectory(self.param, self.state_names, self.t, self.state[:, :, b], self.u[:, b], self.v[:, b],
                          self.p[:, b], self.residual[:, b], self.loss[:, b], bool(self.success[b]),
                          "" if self.success[b] else "the integration failed before the last time",
                          {"system": "reduced", "integrator": self.integrator, "steps": int(self.steps[b])})


@dataclass(frozen=True)
class Trajectory:
    """One trajectory: ``t (T,)``, ``state (n_state, T)``, observables ``(T,)``.

    ``success``: reached the last time with finite states (else NaN from the failure on, ``message`` says why);
    ``stats``: system, integrator and cost (``nfev``, ``steps``, ``rejected``); an optimizer map's also its
    ``optimizer`` (:meth:`simulation.optimizer_maps.OptimizerSpec.as_json`).
    ``extras``: the system's further observables ``(T,)`` each (``system="full"``: ``u_spread, v_spread,
    p_spread`` and the distances from the symmetric set ``asym_ov, asym_qk``); empty for the others.
    """

    param: str
    state_names: tuple[str, ...]
    t: np.ndarray
    state: np.ndarray
    u: np.ndarray
    v: np.ndarray
    p: np.ndarray
    residual: np.ndarray
    loss: np.ndarray
    success: bool = True
    message: str = ""
    stats: dict = field(default_factory=dict, compare=False)
    extras: dict = field(default_factory=dict, compare=False)

    def as_json(self) -> dict:
        """MODEL.md's observables as plain lists (the CLI's ``--json`` record); an optimizer map's record also
        names its optimizer and carries ``residual`` (the record ``qkov simulate --optimizer --json`` prints)."""
        spec = self.stats.get("optimizer")
        head = {"param": self.param} | ({"optimizer": spec} if spec is not None else {})
        tail = {"residual": self.residual.tolist()} if spec is not None else {}
        return head | {"t": self.t.tolist(), "u": self.u.tolist(), "v": self.v.tolist(), "p": self.p.tolist()} \
            | tail | {"loss": self.loss.tolist()}


def integrate_states(param: Parametrization, y0: np.ndarray, K, M, eta_qk, eta_ov, t_eval: ArrayLike, *,
                     rtol: float = DEFAULT_RTOL, atol: float = DEFAULT_ATOL) -> tuple[np.ndarray, BatchSolution]:
    r"""Integrate ``B`` reduced states of ``param`` from ``t = 0``.

    Args:
        y0: initial reduced states ``(n_state, B)`` (or ``(n_state,)`` for one).
        K, M, eta_qk, eta_ov: scalars or arrays ``(B,)``.
        t_eval: strictly increasing times ``>= 0``, ``(T,)``.

    Returns:
        states ``(n_state, T, B)`` and the solver's :class:`~simulation.batch.BatchSolution`.

    Parametrizations with a first integral (:func:`simulation.clockfree.clock_free_capable`: CACO, CAFO, FACO,
    FAFO) are integrated clock-free from their first integral (:mod:`simulation.clockfree`; fixed accuracy ~1e-12,
    so only for ``rtol >=`` :data:`CLOCK_FREE_MIN_RTOL`, and for few times or small batches:
    :data:`CLOCK_FREE_MAX_TIMES`; starts it does not apply to go to DOP853). The others:
    batches of at most :data:`simulation.scalar.SMALL_BATCH` trajectories run one scipy DOP853 call each
    (:mod:`simulation.scalar`, faster there); larger ones the vectorised DOP853 of :mod:`simulation.batch`, in
    chunks of at most :data:`CHUNK` trajectories (each trajectory's steps are its own, so chunking changes nothing).
    """
    ns = numeric_system(param)
    y0 = np.asarray(y0, dtype=float)
    if y0.ndim == 1:
        y0 = y0[:, None]
    if y0.shape[0] != ns.dimension:
        raise ValueError(f"{param}: y0 has {y0.shape[0]} rows, the reduced state has {ns.dimension} "
                         f"({', '.join(ns.state_names)})")
    B = y0.shape[1]
    params = [np.broadcast_to(np.asarray(x, dtype=float), (B,)).copy() for x in (K, M, eta_qk, eta_ov)]
    t_eval = _check_times(t_eval)
    if CLOCK_FREE and rtol >= CLOCK_FREE_MIN_RTOL and clock_free_capable(param) \
            and (t_eval.size <= CLOCK_FREE_MAX_TIMES or B <= CLOCK_FREE_SMALL_BATCH):
        sol = clock_free_states(param, y0, np.stack(params), t_eval, rtol=rtol, atol=atol)
        return sol.y, sol
    sol = _dop853_states(param, y0, params, t_eval, rtol=rtol, atol=atol)
    return sol.y, sol


def clock_free_states(param: Parametrization, y0: np.ndarray, pars: np.ndarray, t_eval: np.ndarray, *, rtol: float,
                      atol: float, max_steps: int = MAX_STEPS) -> BatchSolution:
    """The one router of the clock-free path: :func:`simulation.clockfree.integrate_clock_free` for the starts it
    applies to (:func:`simulation.clockfree.applies`), integrates finitely and to its contract (error estimate at
    most ``max(rtol, simulation.clockfree.TOLERANCE)``), DOP853 (:func:`_dop853_states`) for the others.
    ``y0 (n, B)``, ``pars (4, B)``; ``BatchSolution.method`` says which ran (``clock-free``, ``dop853`` or
    ``clock-free+dop853``) and ``error`` holds the clock-free estimate per trajectory (NaN where DOP853 ran). Used by
    :func:`integrate_states` and the ``clock-free`` integrator of :func:`simulation.solve`."""
    from simulation.clockfree import CHUNK as CHUNK_CLOCK_FREE
    from simulation.clockfree import TOLERANCE, integrate_clock_free, level_curves

    n, B = y0.shape
    curves = level_curves(param, y0, pars)
    ok = curves.applies & np.all(np.isfinite(pars), axis=0) & np.all(np.isfinite(y0), axis=0)
    parts: list[tuple[np.ndarray, BatchSolution]] = []
    if ok.any():
        cols = np.flatnonzero(ok)
        whole = cols.size == B and B <= CHUNK_CLOCK_FREE       # the curves built above serve the whole batch
        cf = integrate_clock_free(param, y0[:, cols], pars[:, cols], t_eval, curves=curves if whole else None)
        met = cf.success & (cf.error <= max(rtol, TOLERANCE))
        if cols.size == B and met.all():
            return cf
        parts.append((cols, cf))
        ok[cols[~met]] = False                          # these go to the batch path instead
    if not ok.all():
        rest = np.flatnonzero(~ok)
        parts.append((rest, _dop853_states(param, y0[:, rest], list(pars[:, rest]), t_eval, rtol=rtol, atol=atol,
                                           max_steps=max_steps)))
    y = np.empty((n, t_eval.size, B))
    steps, rejected, success = np.empty(B, dtype=np.int64), np.empty(B, dtype=np.int64), np.empty(B, dtype=bool)
    error = np.full(B, np.nan)
    for cols, part in parts:                             # the DOP853 part last: it overwrites the failed ones
        y[:, :, cols], steps[cols], rejected[cols], success[cols] = part.y, part.steps, part.rejected, part.success
        error[cols] = part.error if part.error is not None else np.nan
    method = "+".join(dict.fromkeys(part.method for _, part in parts))
    return BatchSolution(tau_of_t(t_eval), y, steps, rejected, sum(part.nfev for _, part in parts), success, method,
                         error)


def _dop853_states(param: Parametrization, y0: np.ndarray, params: list, t_eval: np.ndarray, *, rtol: float,
                   atol: float, max_steps: int = MAX_STEPS) -> BatchSolution:
    """DOP853 in log time: one scipy call per trajectory for small batches, else the vectorised loop in chunks."""
    ns = numeric_system(param)
    B = y0.shape[1]
    if B <= SMALL_BATCH and ns.generated_rhs is not None:
        # Few trajectories: one plain scipy DOP853 call each beats the batch loop's per-step overhead.
        return integrate_columns(ns.generated_rhs, y0, np.stack(params), tau_of_t(t_eval), rtol=rtol, atol=atol,
                                 max_steps=max_steps)

    if B > CHUNK:
        pK, pM, pq, po = params
        parts = [_dop853_states(param, y0[:, i:i + CHUNK], [pK[i:i + CHUNK], pM[i:i + CHUNK], pq[i:i + CHUNK],
                                po[i:i + CHUNK]], t_eval, rtol=rtol, atol=atol) for i in range(0, B, CHUNK)]
        return BatchSolution(parts[0].tau, np.concatenate([s.y for s in parts], axis=2),
                             np.concatenate([s.steps for s in parts]), np.concatenate([s.rejected for s in parts]),
                             sum(s.nfev for s in parts), np.concatenate([s.success for s in parts]))
    bound: list = [None, ()]                  # parameters of the running trajectories, gathered once per step

    def g(tau, y, idx):
        if bound[0] is not idx:               # the batch loop passes the same idx array to all stages of a step
            bound[0], bound[1] = idx, tuple(q[idx] for q in params)
        return np.exp(tau) * ns.rhs(y, *bound[1])

    return integrate_batch(g, y0, tau_of_t(t_eval), rtol=rtol, atol=atol, max_steps=max_steps)


def initial_states(param: Parametrization, u0, v0, K) -> np.ndarray:
    """MODEL.md's symmetric/balanced start by effective values, ``(n_state, B)`` (theory's map)."""
    u0, v0, K = np.broadcast_arrays(*(np.atleast_1d(np.asarray(x, dtype=float)) for x in (u0, v0, K)))
    return numeric_system(param).initial_state(u0, v0, K)


def integrate_many(param: Parametrization, K, M, eta_qk, eta_ov, u0, v0, t_eval: ArrayLike, *,
                   rtol: float = DEFAULT_RTOL, atol: float = DEFAULT_ATOL) -> Trajectories:
    """``B`` trajectories of ``param`` from balanced starts; every argument broadcasts to ``(B,)``."""
    arrays = np.broadcast_arrays(*(np.atleast_1d(np.asarray(x, dtype=float)) for x in (K, M, eta_qk, eta_ov, u0, v0)))
    K_, M_, eq, eo, u0_, v0_ = (a.ravel() for a in arrays)
    y0 = numeric_system(param).initial_state(u0_, v0_, K_)
    states, sol = integrate_states(param, y0, K_, M_, eq, eo, t_eval, rtol=rtol, atol=atol)
    return trajectories_from_states(param, np.asarray(t_eval, dtype=float), states, K_, M_, eq, eo, sol)


def trajectories_from_states(param: Parametrization, t: np.ndarray, states: np.ndarray, K, M, eta_qk, eta_ov,
                             sol: BatchSolution | None = None) -> Trajectories:
    """Wrap states ``(n, T, B)`` with their observables."""
    ns = numeric_system(param)
    B = states.shape[2]
    obs = ns.observables(states, np.asarray(K, dtype=float), np.asarray(M, dtype=float))
    steps = sol.steps if sol is not None else np.zeros(B, dtype=np.int64)
    success = sol.success if sol is not None else np.ones(B, dtype=bool)
    as_b = lambda x: np.broadcast_to(np.asarray(x, dtype=float), (B,)).copy()  # noqa: E731
    return Trajectories(param, ns.state_names, np.atleast_1d(t), states, obs["u"], obs["v"], obs["p"],
                        obs["residual"], obs["loss"], as_b(K), as_b(M), as_b(eta_qk), as_b(eta_ov), steps, success,
                        sol.method if sol is not None else "dop853")


def integrate(param: Parametrization, K: int, M: int, eta_qk: float, eta_ov: float, u0: float, v0: float,
              t_eval: Sequence[float] | np.ndarray, *, rtol: float = DEFAULT_RTOL,
              atol: float = DEFAULT_ATOL) -> Trajectory:
    r"""One reduced trajectory of ``param`` from MODEL.md's start at effective ``(u0, v0)``.

    Raises ``ValueError`` for a factorized circuit started at 0 (a fixed point of the flow).
    Returns a :class:`Trajectory` with fields ``t, u, v, p, residual, loss`` of shape ``(T,)``.
    """
    trajs = integrate_many(param, K, M, eta_qk, eta_ov, u0, v0, t_eval, rtol=rtol, atol=atol)
    if not trajs.success[0]:
        raise RuntimeError(f"{param}: the integration failed before t = {float(np.max(t_eval)):g}")
    return trajs.column(0)


def reference_states(param: Parametrization, y0: np.ndarray, K, M, eta_qk, eta_ov, t_eval: np.ndarray, *,
                     rtol: float = 1e-13, atol: float | np.ndarray = 1e-15, method: str = "DOP853") -> np.ndarray:
    r"""The same flow with one :func:`scipy.integrate.solve_ivp` call (for tests and benchmarks).

    Integrates :math:`dy/d\tau = e^\tau f(y)` (:mod:`simulation.integrators`); returns states ``(n_state, T)``.
    Raises ``RuntimeError`` when scipy fails (a reference that did not reach its time is no reference).
    """
    from simulation.integrators import INTEGRATORS
    from simulation.systems import reduced

    system = reduced(param, K, M, eta_qk, eta_ov, 0.0, 0.0, y0=y0)
    run = INTEGRATORS["scipy-DOP853" if method == "DOP853" else method](system, _check_times(t_eval), rtol=rtol,
                                                                         atol=atol)
    if not run.success:
        raise RuntimeError(f"{param}: solve_ivp failed: {run.message}")
    return run.y


__all__ = ["Trajectory", "Trajectories", "integrate", "integrate_many", "integrate_states", "initial_states",
           "trajectories_from_states", "reference_states", "tau_of_t", "OBSERVABLES",
           "DEFAULT_RTOL", "DEFAULT_ATOL"]
