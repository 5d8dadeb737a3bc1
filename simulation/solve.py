r"""One entry point for every way qkov integrates the synthetic model: a system x an integrator.

:func:`solve` returns a :class:`~simulation.reduced.Trajectory` (``t, u, v, p, residual, loss``, each
``(T,)``, plus ``success``, ``message`` and ``stats``) whatever the system and integrator. **A batch is a broadcast
axis of the problem**: give any of ``K, M, eta_qk, eta_ov, u0, v0`` as an array and the same call integrates the grid
(every parameter broadcast to ``(B,)``, one vectorised integration of the reduced flow) and returns
:class:`~simulation.reduced.Trajectories` with observables ``(T, B)`` and ``success`` per trajectory.
:func:`solve_batch` is that call with ``check=False`` (kept for the figure helpers).

``system`` (:data:`simulation.systems.SYSTEMS`): ``"reduced"`` (the derived flow), ``"full"`` (the full
matrices), ``"paper"`` (the paper's equations with its own ``m, n, b, M_out`` and its ``tau`` clock).
``integrator`` (:data:`simulation.integrators.INTEGRATORS`): ``"clock-free"`` (from the first integral, no time
stepping; default for ``reduced`` flows with a first integral, CACO, CAFO, FACO, FAFO), ``"dop853"`` (adaptive, log
time; default for the other ``reduced`` flows), ``"rk4"`` (default otherwise), ``"euler"``/``"gd"`` (the discrete optimizer: full-batch
gradient descent), ``"scipy-DOP853"``, ``"LSODA"``, ``"Radau"``. Fixed-step integrators need ``t`` to be
multiples of ``dt`` (one rule, :func:`simulation.integrators.steps_for_times`).

The older ``method`` names are pairs of the two (:data:`METHODS`): ``"reduced"`` = reduced x its default integrator
(clock-free or dop853, as above),
``"full-gd"`` = full x gd, ``"full-rk4"`` = full x rk4, ``"paper-rk4"`` = paper x rk4.
The optimizer maps are methods too (:data:`SOLVERS`): ``"map-<name>"`` for every optimizer of
:data:`simulation.optimizer_maps.OPTIMIZERS` (``map-gd``, ``map-momentum``, ``map-nesterov``, ``map-adam``,
``map-adamw``, ``map-sign``), the exact reduced map on the symmetric set's orbit values at ``t`` (multiples of
``dt``), options ``dt`` and ``beta1, beta2, eps, weight_decay``; its ``stats["optimizer"]`` holds the
hyper-parameters used. The full matrices start balanced at ``(u0, v0)`` or (``init="random"``) Gaussian at
``scale``, ``seed``; their spreads and distances from the symmetric set are the trajectory's ``extras``.

Example::

    >>> from simulation import solve
    >>> tr = solve("FAFO", K=10, M=19, eta_qk=10, eta_ov=1, u0=0.1, v0=0.1, t=[50, 500, 2500])
    >>> tr.p.shape, tr.success
    ((3,), True)
    >>> paper = solve("CACO", K=20, M=9, eta_qk=0.1, eta_ov=1, u0=0, v0=0, t=[1000, 5000], system="paper",
    ...               integrator="rk4", m=5, n=50, b=50, clock="tau", dt=10)   # the paper's setting, ratio 0.1

A failed integration does not raise unless ``check=True`` (the default, for the older call form): the
trajectory's ``success`` is False and ``message`` says why; with ``check=True`` it raises
:class:`IntegrationError` (a ``RuntimeError``) carrying that trajectory.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence, overload

import numpy as np

from simulation.integrators import INTEGRATORS, Integration
from simulation.optimizer_defaults import ADAM_BETAS, ADAM_EPS
from simulation.reduced import DEFAULT_ATOL, DEFAULT_RTOL, OBSERVABLES, Trajectories, Trajectory, integrate_many
from simulation.systems import SYSTEMS, system_options
from theory.parametrization import Parametrization

METHODS: dict[str, tuple[str, str | None]] = {"reduced": ("reduced", None), "full-gd": ("full", "gd"),
                                       "full-rk4": ("full", "rk4"), "paper-rk4": ("paper", "rk4")}
"""The older method names as (system, integrator) pairs; ``None``: the system's default integrator."""

Solver = Callable[..., Trajectory]
SOLVERS: dict[str, Solver] = {}
"""method name -> solver function ``(param, K, M, eta_qk, eta_ov, u0, v0, t, **options) -> Trajectory``."""


class IntegrationError(RuntimeError):
    """An integration that did not reach its last time; ``trajectory`` holds what was reached (NaN after): a
    :class:`~simulation.reduced.Trajectory`, or for a batch the :class:`~simulation.reduced.Trajectories`."""

    def __init__(self, trajectory: Trajectory | Trajectories, message: str | None = None):
        super().__init__(f"{trajectory.param}: {message if message is not None else getattr(trajectory, 'message', '')}")
        self.trajectory = trajectory


def register_solver(name: str) -> Callable[[Solver], Solver]:
    """Decorator adding a solver to :data:`SOLVERS` under ``name``."""
    def deco(fn: Solver) -> Solver:
        SOLVERS[name] = fn
        return fn
    return deco


def _default_integrator(system: str, param: Parametrization) -> str:
    """``clock-free`` for a reduced flow with a first integral (:mod:`simulation.clockfree`), ``dop853`` for
    the other reduced flows, ``rk4`` otherwise."""
    if system != "reduced":
        return "rk4"
    from simulation.clockfree import clock_free_capable

    return "clock-free" if clock_free_capable(param) else "dop853"


@overload
def solve(param: Parametrization | str, *, K: int, M: int, eta_qk: float, eta_ov: float, u0: float, v0: float,
          t: Sequence[float] | np.ndarray, method: str | None = None, system: str | None = None,
          integrator: str | None = None, check: bool = True, **options: Any) -> Trajectory: ...


@overload
def solve(param: Parametrization | str, *, K: Any, M: Any, eta_qk: Any, eta_ov: Any,
          u0: Any, v0: Any, t: Sequence[float] | np.ndarray, method: str | None = None, system: str | None = None,
          integrator: str | None = None, check: bool = True, **options: Any) -> Trajectories: ...


def solve(param, *, K, M, eta_qk, eta_ov, u0, v0, t, method=None, system=None, integrator=None, check=True,
          **options):
    r"""Integrate one parametrization of MODEL.md: ``system`` x ``integrator`` (or the older ``method``); a batch
    when any of ``K, M, eta_qk, eta_ov, u0, v0`` is an array.

    Args:
        param: a registered parametrization (:class:`theory.Parametrization` or its name).
        K, M: classes (>= 2) and common tokens (>= 1).
        eta_qk, eta_ov: learning rates of the two circuits.
        u0, v0: effective start (> 0 for a factorized or tied circuit: 0 is a fixed point of its flow).
        t: strictly increasing output times ``(T,)`` (the paper's ``tau`` with ``clock="tau"``).
        method: ``"reduced" | "full-gd" | "full-rk4" | "paper-rk4"`` (:data:`METHODS`), or ``"map-<optimizer>"``
            (:data:`SOLVERS`); or
        system, integrator: see the module docstring.
        check: raise :class:`IntegrationError` when the integration fails (else return it with ``success`` False;
            a batch raises when any trajectory failed).
        options: the system's (``init``, ``scale``, ``seed``, ``rank_qk``; ``m, n, b, M_out, clock``) and the
            integrator's (``dt``; ``rtol``, ``atol``). A batch takes ``rtol`` and ``atol`` only.

    Returns:
        :class:`~simulation.reduced.Trajectory`, observables ``(T,)``, with ``success``, ``message``, ``stats``; for
        a batch :class:`~simulation.reduced.Trajectories`, observables ``(T, B)``, ``success`` ``(B,)``.

    Raises:
        ValueError: an unknown method, system or integrator; a batch with another system or integrator than the
            reduced flow's default, or with options other than ``rtol``/``atol``.
    """
    if method is not None and (system is not None or integrator is not None):
        raise ValueError("give either method or system/integrator, not both")
    if any(np.ndim(x) > 0 for x in (K, M, eta_qk, eta_ov, u0, v0)):
        return _solve_grid(Parametrization(param), K, M, eta_qk, eta_ov, u0, v0, t, method, system, integrator,
                           check, options)
    if method is not None and method not in METHODS:
        if method in SOLVERS:
            return SOLVERS[method](Parametrization(param), K, M, eta_qk, eta_ov, u0, v0, t, **options)
        raise ValueError(f"method {method!r}: must be one of {', '.join(METHODS)}")
    sys_name, int_name = METHODS[method] if method is not None else (system or "reduced", integrator)
    int_name = int_name or _default_integrator(sys_name, Parametrization(param))
    if sys_name not in SYSTEMS:
        raise ValueError(f"system {sys_name!r}: must be one of {', '.join(SYSTEMS)}")
    if int_name not in INTEGRATORS:
        raise ValueError(f"integrator {int_name!r}: must be one of {', '.join(INTEGRATORS)}")
    own = system_options(sys_name)
    sys_opts = {k: v for k, v in options.items() if k in own}
    int_opts = {k: v for k, v in options.items() if k not in own}
    built = SYSTEMS[sys_name](Parametrization(param), K, M, eta_qk, eta_ov, u0, v0, **sys_opts)
    t_arr = np.atleast_1d(np.asarray(t, dtype=float))
    try:
        res: Integration = INTEGRATORS[int_name](built, t_arr, **int_opts)
    except TypeError as e:
        raise ValueError(f"integrator {int_name!r}: {e}") from None
    obs = built.observe(res.y)
    tr = Trajectory(str(built.param), built.state_names if sys_name != "full" else ("u", "v"), t_arr,
                    res.y if sys_name != "full" else np.stack([obs["u"], obs["v"]]), obs["u"], obs["v"], obs["p"],
                    obs["residual"], obs["loss"], success=bool(res.success), message=res.message,
                    stats={"system": sys_name, "integrator": int_name, **res.stats},
                    extras={k: v for k, v in obs.items() if k not in OBSERVABLES})
    if check and not tr.success:
        raise IntegrationError(tr)
    return tr


for _method in METHODS:
    def _solver(param, K, M, eta_qk, eta_ov, u0, v0, t, _m=_method, **options):
        return solve(param, K=K, M=M, eta_qk=eta_qk, eta_ov=eta_ov, u0=u0, v0=v0, t=t, method=_m, **options)
    _solver.__name__ = f"_solve_{_method.replace('-', '_')}"
    _solver.__doc__ = f"solve(..., method={_method!r}): system x integrator {METHODS[_method]}."
    SOLVERS[_method] = _solver


def _orbit_map_solver(name: str) -> Solver:
    """The solver of method ``map-<name>``: optimizer ``name``'s exact reduced map on the orbit values
    (:func:`simulation.optimizer_maps.simulate_optimizer`) as a :class:`~simulation.reduced.Trajectory`."""
    def solver(param, K, M, eta_qk, eta_ov, u0, v0, t, *, dt: float, beta1: float = ADAM_BETAS[0],
               beta2: float = ADAM_BETAS[1], eps: float = ADAM_EPS, weight_decay: float = 0.0) -> Trajectory:
        from simulation.optimizer_maps import simulate_optimizer

        run = simulate_optimizer(str(param), K=K, M=M, eta_qk=eta_qk, eta_ov=eta_ov, u0=u0, v0=v0, t=t, dt=dt,
                                 optimizer=name, beta1=beta1, beta2=beta2, eps=eps, weight_decay=weight_decay)
        return Trajectory(run.param, run.orbit_names, run.t, run.w.T, run.u, run.v, run.p, run.residual, run.loss,
                          stats={"system": "orbits", "integrator": f"map-{name}", "optimizer": run.optimizer,
                                 "steps": int(run.step[-1])})
    solver.__name__ = f"_solve_map_{name}"
    solver.__doc__ = (f"solve(..., method='map-{name}', dt=..., [beta1, beta2, eps, weight_decay]): the reduced "
                      f"{name} map at the output times t (multiples of dt); state: the orbit values (n_orbits, T).")
    return solver


def _register_orbit_maps() -> None:
    from simulation.optimizer_maps import OPTIMIZERS

    for name in OPTIMIZERS:                               # one method per registered optimizer: map-gd, map-adam, ...
        SOLVERS[f"map-{name}"] = _orbit_map_solver(name)


_register_orbit_maps()


def _solve_grid(param: Parametrization, K, M, eta_qk, eta_ov, u0, v0, t, method, system, integrator, check: bool,
                options: dict[str, Any]) -> Trajectories:
    """The batch form of :func:`solve`: the reduced flow for a grid, one vectorised integration
    (:func:`simulation.reduced.integrate_many`: clock-free where the parametrization has a first integral, else
    batch DOP853)."""
    default = _default_integrator("reduced", param)
    asked = METHODS[method] if method in METHODS else (method, None) if method is not None else (system, integrator)
    if asked[0] not in (None, "reduced") or asked[1] not in (None, default):
        got = f"method={method!r}" if method is not None else f"system={system!r}, integrator={integrator!r}"
        raise ValueError(f"a batch (K, M, rates or starts given as arrays) is integrated by the reduced flow's default "
                         f"integrator ({default}) only; got {got}")
    extra = sorted(set(options) - {"rtol", "atol"})
    if extra:
        raise ValueError(f"a batch takes the options rtol and atol only; got {', '.join(extra)}")
    tr = integrate_many(param, K, M, eta_qk, eta_ov, u0, v0, t, rtol=float(options.get("rtol", DEFAULT_RTOL)),
                        atol=float(options.get("atol", DEFAULT_ATOL)))
    if check and not np.all(tr.success):
        bad = np.flatnonzero(~np.asarray(tr.success))
        raise IntegrationError(tr, f"{len(bad)} of {tr.batch_size} trajectories failed before the last time "
                                   f"(first: {bad[:5].tolist()})")
    return tr


def solve_batch(param: Parametrization, *, K, M, eta_qk, eta_ov, u0, v0, t: Sequence[float] | np.ndarray,
                rtol: float = DEFAULT_RTOL, atol: float = DEFAULT_ATOL) -> Trajectories:
    r"""``solve(...)`` of a grid with ``check=False``: every parameter broadcasts to ``(B,)`` (scalars too: a grid of
    one); one vectorised integration. Returns :class:`~simulation.reduced.Trajectories`, observables ``(T, B)``
    (``success`` per trajectory)."""
    return _solve_grid(Parametrization(param), np.atleast_1d(K), M, eta_qk, eta_ov, u0, v0, t, None, None, None,
                       False, {"rtol": rtol, "atol": atol})


__all__ = ["solve", "solve_batch", "SOLVERS", "METHODS", "register_solver", "IntegrationError"]
