"""Validated configuration of ``qkov simulate`` (pydantic, via :mod:`qkov.core.config`)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AfterValidator, Field

from qkov.core.config import (PARAMETRIZATIONS, ConfigError, StrictConfig, TimeGrid, field_error,
                              parse_config)
from simulation.optimizer_defaults import ADAM_BETAS, ADAM_EPS
from theory.parametrization import BASELINE, ParamName, Parametrization

ETA_BOUNDS = (1e-4, 1e4)
"""Learning rates qkov simulates, and (below) their ratio: measured, every parametrization reaches t = 1e15
within ~6000 log-time steps inside these bounds at K, M <= 1e4; eta_QK = 1e4 with eta_OV = 1e-4 (ratio 1e8)
does not finish in minutes (the QK circuit outruns the OV one by eight decades: a stiff start)."""
RATIO_BOUNDS = (1e-6, 1e6)
T_MAX = 1e15
MAX_FULL_STEPS = 5_000_000

def _rate(x: float) -> float:
    if not (ETA_BOUNDS[0] <= x <= ETA_BOUNDS[1]):  # False for nan too
        raise ValueError(f"must be a finite number in [{ETA_BOUNDS[0]:g}, {ETA_BOUNDS[1]:g}]")
    return x


Rate = Annotated[float, AfterValidator(_rate)]


class SimulateConfig(StrictConfig):
    r"""One ``qkov simulate`` call.

    ``params``: parametrizations to run; ``u0, v0``: effective start (MODEL.md's symmetric start for
    collapsed circuits, the balanced start for factorized ones; a factorized circuit at 0 is rejected,
    it is a fixed point of the flow); ``t``: strictly increasing output times (``<= 1e15``).
    ``method``: a solver of :data:`simulation.SOLVERS`: ``reduced`` (the derived flow), ``full-gd`` /
    ``full-rk4`` (the full matrices, step ``dt``, ``t`` multiples of ``dt``, from the balanced start or
    seeded Gaussian matrices of standard deviation ``scale`` with ``init="random"``), ``paper-rk4``
    (the paper's equations, CACO only).
    """

    params: tuple[ParamName, ...] = PARAMETRIZATIONS
    K: int = Field(10, ge=2, le=10_000)
    M: int = Field(19, ge=1, le=10_000)
    eta_qk: Rate = 10.0
    eta_ov: Rate = 1.0
    u0: Annotated[float, Field(ge=0.0, le=100.0)] = 0.1
    v0: Annotated[float, Field(ge=0.0, le=100.0)] = 0.1
    t: TimeGrid = (50.0, 500.0, 2500.0)
    method: Literal["reduced", "full-gd", "full-rk4", "paper-rk4"] = "reduced"
    dt: Annotated[float, Field(gt=0.0, le=1e3)] = 0.05
    init: Literal["balanced", "random"] = "balanced"
    scale: Annotated[float, Field(gt=0.0, le=10.0)] = 0.05
    seed: int = Field(0, ge=0, le=2**32 - 1)
    # -- optimizer (issue 23): the exact reduced map of an element-wise optimizer instead of the flow --------
    optimizer: Literal["flow", "gd", "momentum", "nesterov", "adam", "adamw", "sign"] = "flow"
    beta1: Annotated[float, Field(ge=0.0, lt=1.0)] = ADAM_BETAS[0]
    beta2: Annotated[float, Field(ge=0.0, lt=1.0)] = ADAM_BETAS[1]
    eps: Annotated[float, Field(gt=0.0, le=1e3)] = ADAM_EPS
    weight_decay: Annotated[float, Field(ge=0.0, le=1e3)] = 0.0
    lr: Annotated[float, Field(gt=0.0, le=1e3)] | None = None

    @property
    def full(self) -> bool:
        """True for the full-matrix methods."""
        return self.method.startswith("full")


def _check_start(cfg: SimulateConfig) -> None:
    """A circuit whose kind has 0 as a fixed point (factorized, tied, ...) started at 0: refused, naming u0 or v0."""
    fail = _fail
    for prm in cfg.params:
        for circuit, field, value in ((Parametrization(prm).qk, "v0", cfg.v0), (Parametrization(prm).ov, "u0", cfg.u0)):
            if circuit.zero_is_fixed_point and value == 0:
                fail(field, value, f"must be > 0 for {prm}: its {circuit.kind.description} {circuit.name} circuit at "
                     f"{field} = 0 is a fixed point of the flow (it never moves)")


def _check_steps(cfg: SimulateConfig) -> None:
    """The stepped methods: times on distinct multiples of dt, a bounded number of steps, bounded matrices."""
    fail = _fail
    # The solvers' one rule (simulation.integrators.steps_for_times), asked here so that a time they would
    # reject is one line before any work.
    from simulation.integrators import StepTimeError, steps_for_times

    how = f"--method {cfg.method}" + ("" if cfg.optimizer == "flow" else f" --optimizer {cfg.optimizer}")
    try:
        steps_for_times(cfg.t, cfg.dt)
    except StepTimeError as exc:
        fail("t", exc.time, f"{exc.why} (for {how})")
    if cfg.t[-1] / cfg.dt > MAX_FULL_STEPS:
        fail("t", cfg.t[-1], f"needs more than {MAX_FULL_STEPS:.0e} steps of dt = {cfg.dt:g}; use a larger dt "
             "or a shorter time")
    if cfg.full and (cfg.K + cfg.M + 1) > 2000:
        fail("K", cfg.K, "K + M + 1 must be <= 2000 for the full-matrix methods (memory)")


def _fail(field: str, value, why: str):
    raise field_error(field, value, why)


def parse_simulate_config(**values) -> SimulateConfig:
    """Build and cross-check a :class:`SimulateConfig`; :class:`ConfigError` (one line naming the field) if bad."""
    cfg = parse_config(SimulateConfig, **values)
    fail = _fail
    if not cfg.params:
        fail("param", cfg.params, "must name at least one parametrization")
    ratio = cfg.eta_qk / cfg.eta_ov
    if not (RATIO_BOUNDS[0] <= ratio <= RATIO_BOUNDS[1]):
        fail("eta-qk", cfg.eta_qk, f"eta_QK/eta_OV = {ratio:g} must be in [{RATIO_BOUNDS[0]:g}, {RATIO_BOUNDS[1]:g}]")
    if cfg.t[-1] > T_MAX:
        fail("t", cfg.t[-1], f"must be <= {T_MAX:g} (log-time integration in float64)")
    if cfg.init == "random" and not cfg.full:
        fail("init", cfg.init, "'random' needs --method full-gd or full-rk4 (the reduced flow starts on the "
             "symmetric set)")
    if cfg.method == "paper-rk4" and any(p != BASELINE for p in cfg.params):
        fail("param", ",".join(cfg.params), f"--method paper-rk4 needs {BASELINE} (the paper's equations describe {BASELINE} only)")
    if not (cfg.full and cfg.init == "random"):
        _check_start(cfg)
    if cfg.optimizer != "flow":
        if cfg.method != "reduced":
            fail("optimizer", cfg.optimizer, "runs the reduced map of that optimizer: use --method reduced")
        from simulation.optimizer_maps import map_params  # orbits declared by the kinds and maps generated

        if any(p not in map_params() for p in cfg.params):
            fail("param", ",".join(cfg.params), f"--optimizer {cfg.optimizer} has reduced maps for "
                 f"{', '.join(map_params())} only")
        if cfg.lr is not None:  # the OV step; QK's is lr * eta_QK/eta_OV; step n sits at t = n lr/eta_OV
            cfg = cfg.model_copy(update={"dt": cfg.lr / cfg.eta_ov})
    elif cfg.lr is not None:
        fail("lr", cfg.lr, "sets the step of --optimizer (gradient flow has none): give --optimizer too")
    if cfg.method != "reduced" or cfg.optimizer != "flow":
        _check_steps(cfg)
    return cfg


__all__ = ["SimulateConfig", "parse_simulate_config", "ConfigError", "ETA_BOUNDS", "RATIO_BOUNDS", "T_MAX",
           "PARAMETRIZATIONS"]
