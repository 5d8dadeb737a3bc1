"""Validated configuration of ``qkov simulate`` (pydantic, via :mod:`qkov.core.config`)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from qkov.core.config import (PARAMETRIZATIONS, ConfigError, NonNegativeFinite, PositiveFinite, StrictConfig, TimeGrid,
                           parse_config)


class SimulateConfig(StrictConfig):
    r"""One ``qkov simulate`` call.

    ``params``: parametrizations to run; ``u0, v0``: effective start (MODEL.md's symmetric start for
    collapsed circuits, the balanced start for factorized ones; a factorized circuit at 0 is rejected,
    it is a fixed point of the flow); ``t``: strictly increasing output times. ``full``: the
    full-matrix gradient descent with step ``dt`` (``t`` must be multiples of ``dt``), from the
    balanced start or seeded Gaussian matrices of standard deviation ``scale`` (``init="random"``).
    """

    params: tuple[Literal["CACO", "FACO", "CAFO", "FAFO"], ...] = PARAMETRIZATIONS
    K: int = Field(10, ge=2, le=10_000)
    M: int = Field(19, ge=1, le=10_000)
    eta_qk: PositiveFinite = 10.0
    eta_ov: PositiveFinite = 1.0
    u0: NonNegativeFinite = 0.0
    v0: NonNegativeFinite = 0.0
    t: TimeGrid = (50.0, 500.0, 2500.0)
    full: bool = False
    dt: PositiveFinite = 0.05
    method: Literal["gd", "rk4"] = "gd"
    init: Literal["balanced", "random"] = "balanced"
    scale: PositiveFinite = 0.05
    seed: int = Field(0, ge=0, le=2**32 - 1)



def parse_simulate_config(**values) -> SimulateConfig:
    """Build and cross-check a :class:`SimulateConfig`; :class:`ConfigError` (one line naming the field) if bad."""
    cfg = parse_config(SimulateConfig, **values)

    def fail(field: str, value, why: str):
        raise ConfigError(f"config field '{field}' = {value!r}: {why}")

    if not cfg.params:
        fail("params", cfg.params, "must name at least one parametrization")
    if cfg.init == "random" and not cfg.full:
        fail("init", cfg.init, "'random' needs --full (the reduced flow starts on the symmetric set)")
    if not (cfg.full and cfg.init == "random"):
        for prm in cfg.params:
            if prm[0] == "F" and cfg.v0 == 0:
                fail("v0", cfg.v0, f"{prm} has a factorized QK circuit, and v0 = 0 is a fixed point of its flow "
                     "(it never moves); give v0 > 0")
            if prm[2] == "F" and cfg.u0 == 0:
                fail("u0", cfg.u0, f"{prm} has a factorized OV circuit, and u0 = 0 is a fixed point of its flow "
                     "(it never moves); give u0 > 0")
    if cfg.full:
        for x in cfg.t:
            n = round(x / cfg.dt)
            if abs(n * cfg.dt - x) > 1e-6 * max(1.0, x):
                fail("t", x, f"must be a multiple of dt = {cfg.dt:g} for the full-matrix run")
        if cfg.t[-1] / cfg.dt > 5_000_000:
            fail("t", cfg.t[-1], f"needs more than 5e6 steps of dt = {cfg.dt:g}; use a larger dt or a shorter time")
    return cfg
