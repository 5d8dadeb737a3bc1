"""One run of a command (``qkov derive``, ``qkov simulate --save``, ``qkov validate synthetic``) through the
study engine.

:func:`run_command` is the whole path of such a command's run: ``out``'s lock is taken (one writer per
results directory, before any work), the run ``(kind, config)`` is planned by
:func:`qkov.study.engine.plan_study` as a run of the registry's stage that declares ``kind``
(:data:`qkov.study.stages.REGISTRY`), a complete run of the same config is reused, and an incomplete or
missing one is executed by that stage's ``execute(kind, config, run_dir, ctx)`` with the command's
:class:`~qkov.study.context.RunContext`: in this process by default, on Dask when ``executor``,
``scheduler`` or ``workers`` say so (:func:`qkov.study.engine.open_executor`). The run lives at
``out/runs/<kind>-<key>/``, the same directory ``qkov reproduce`` would plan for it.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from pathlib import Path
from typing import Any

from qkov.study import engine
from qkov.study.context import RunContext


@dataclasses.dataclass(frozen=True)
class CommandRun:
    """What :func:`run_command` did: the run directory, and whether a complete run there was reused."""

    run_dir: Path
    reused: bool


def _planned(runs: list[tuple[str, dict]], quick: bool, data_dir: Path | None) -> list[tuple[str, dict]]:
    return runs


def command_stage(kind: str, config: dict[str, Any], execute: engine.Execute | None = None) -> engine.Stage:
    """The one run ``(kind, config)`` of a command as a study stage: planned as given, executed by the stage of
    :data:`qkov.study.stages.REGISTRY` that declares ``kind`` (its module's ``execute``, the same code as the
    study's runs) unless ``execute`` is given (a module-level function or a ``functools.partial`` of one,
    so that Dask can pickle it). An undeclared ``kind`` is a ``ValueError``."""
    from qkov.study.stages import REGISTRY, RUN_KINDS

    if kind not in RUN_KINDS:
        raise ValueError(f"run kind {kind!r}: not declared in qkov.study.stages.REGISTRY")
    name = RUN_KINDS[kind]
    load, _ = REGISTRY[name]
    return engine.Stage(name, functools.partial(_planned, [(kind, config)]),
                        execute if execute is not None else load().execute, kinds=(kind,))


_OS_ERROR = re.compile(r"^OSError: \[Errno (\d+)\] (.*?)(?:: '(.*)')?$")
"""An ``OSError`` as :func:`qkov.study.engine.failure_reason` and the engine's resource faults word it."""


def _raise_failed(failed: dict[str, str], total: int) -> None:
    """The command's one run failed: on bad input (a ``ConfigError`` raised by the stage, e.g. a time the
    integrator cannot reach) that one-line ``ConfigError``; on a full or read-only results filesystem (an
    engine resource fault) that ``OSError`` again, so the command line states the fix; otherwise
    :class:`~qkov.study.engine.RunsFailed`."""
    from qkov.core.config import ConfigError

    prefix = "ConfigError: "
    if len(failed) == 1:
        (reason,) = failed.values()
        if reason.startswith(prefix):
            raise ConfigError(reason[len(prefix):])
        m = _OS_ERROR.match(reason)
        if m and int(m.group(1)) in engine.RESOURCE_ERRNOS:
            raise OSError(int(m.group(1)), m.group(2), *((m.group(3),) if m.group(3) else ()))
    raise engine.RunsFailed(failed, total)


def run_command(kind: str, config: dict[str, Any], out: Path, command: str, *, execute: engine.Execute | None = None,
                progress: bool | None = False, executor: Any = None, scheduler: str | None = None,
                workers: int | None = None, redo: bool = False) -> CommandRun:
    """Plan the run ``(kind, config)`` into ``out`` and execute it through the study engine holding ``out``'s
    lock (taken before any work, named ``command`` for a second writer); a complete run is reused unless
    ``redo`` (then it is removed, through :func:`qkov.core.runstore.remove_run`, and executed again).

    ``progress``: the run's own bars (in this process only). A run directory that is a symbolic link is an
    :class:`~theory.errors.InputError` before any work; a failed run raises
    :class:`~qkov.study.engine.RunsFailed` (its incomplete directory removed), or the stage's one-line
    ``ConfigError``. Returns the run directory and whether it was reused.
    """
    from qkov.core.lock import results_lock
    from qkov.core.runstore import is_complete, remove_run

    out = Path(out)
    if executor is None and scheduler:
        from qkov.study.connect import check_scheduler

        check_scheduler(scheduler)  # malformed / unreachable / not Dask: one line, before the lock and planning
    with results_lock(out, command):  # one writer per results directory, before any work
        plan = engine.plan_study(out, True, None, stages=(command_stage(kind, config, execute),))
        engine.check_run_dirs(plan)
        (run,) = plan.runs
        if redo and is_complete(run.run_dir):
            remove_run(run.run_dir)
        with engine.open_executor(executor, scheduler, workers, n_pending=len(engine.pending(plan))) as client:
            ctx = RunContext(progress=progress if isinstance(client, engine.InProcess) else False, store=out)
            result = engine.run_study(plan, client, retries=0, progress=False, ctx=ctx, summary=None)
    if result.failed:
        _raise_failed(result.failed, len(plan.runs))
    return CommandRun(run.run_dir, bool(result.reused))


__all__ = ["run_command", "command_stage", "CommandRun"]
