"""The stages of ``qkov reproduce``, in data-flow order (the report lists them in this order)."""

from __future__ import annotations

from qkov.study import derive_stage, real_stage, simulate_stage, synthetic_stage
from qkov.study.engine import STAGE_NAMES, Stage

STAGES: tuple[Stage, ...] = (
    Stage.from_module("derive", derive_stage),
    Stage.from_module("simulate", simulate_stage),
    Stage.from_module("synthetic", synthetic_stage),
    Stage.from_module("real", real_stage),
)
assert tuple(s.name for s in STAGES) == STAGE_NAMES

__all__ = ["STAGES"]
