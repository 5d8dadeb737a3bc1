"""The stage registry of ``qkov reproduce``: the one place each stage and the run kinds it plans are declared.

Stages are listed in data-flow order (the report lists them in this order). Each entry names the module
(a loader of it, so nothing heavy is imported until used) holding the stage's functions (``study_runs``, ``execute``, optionally ``skipped_runs``: see
:class:`qkov.study.engine.Stage`) and the run kinds that stage may plan; the engine refuses a planned run of
an undeclared kind. Modules are imported only by :func:`default_stages`, so :data:`STAGE_NAMES` costs no
import of torch or sympy. A study with other stages (a test, a user's own study) passes its own ``Stage``
objects as ``stages=`` to :func:`qkov.study.reproduce` or :func:`qkov.study.engine.plan_study`.
"""

from __future__ import annotations

from types import ModuleType
from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:
    from qkov.study.engine import Stage


def _derive() -> ModuleType:
    from qkov.study import derive_stage
    return derive_stage


def _simulate() -> ModuleType:
    from qkov.study import simulate_stage
    return simulate_stage


def _synthetic() -> ModuleType:
    from qkov.study import synthetic_stage
    return synthetic_stage


def _real() -> ModuleType:
    from qkov.study import real_stage
    return real_stage


REGISTRY: dict[str, tuple[Callable[[], ModuleType], tuple[str, ...]]] = {
    "derive": (_derive, ("derive",)),
    "simulate": (_simulate, ("simulate-reduction", "simulate-asymptotics", "simulate-sharpness", "simulate-paper",
                             "simulate")),
    "synthetic": (_synthetic, ("synthetic", "figure2", "adam", "synthetic-optimizer", "adam-phase")),
    "real": (_real, ("validate-real",)),
}
"""stage name -> (loader of the module with its functions, the run kinds it plans or executes: ``derive``,
``simulate``, ``synthetic`` and ``synthetic-optimizer`` are also the runs of ``qkov derive``, ``qkov simulate
--save`` and ``qkov validate synthetic``, planned one at a time by :func:`qkov.study.command_run.run_command`)."""

STAGE_NAMES: tuple[str, ...] = tuple(REGISTRY)
"""The stage names, in data-flow order."""

RUN_KINDS: dict[str, str] = {kind: name for name, (_, kinds) in REGISTRY.items() for kind in kinds}
"""run kind -> the stage that plans it (each kind belongs to exactly one stage)."""


def default_stages() -> tuple["Stage", ...]:
    """The study's stages as :class:`~qkov.study.engine.Stage` objects (imports the stage modules)."""
    from qkov.study.engine import Stage

    return tuple(Stage.from_module(name, load(), kinds=kinds) for name, (load, kinds) in REGISTRY.items())


__all__ = ["REGISTRY", "STAGE_NAMES", "RUN_KINDS", "default_stages"]
