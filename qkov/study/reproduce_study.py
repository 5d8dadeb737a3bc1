"""The whole study from Python: :func:`reproduce` (what ``qkov reproduce`` calls).

::

    from qkov.study import reproduce
    result = reproduce("quick", "qkov-results", workers=2)
    result.report, result.failed

Order of work: the options are validated (a bad one is a :class:`qkov.core.config.ConfigError`, nothing
written; a ``scheduler`` is parsed, then checked reachable: one line); ``out``'s lock is taken
(:func:`qkov.core.lock.results_lock`: a second study on a busy ``out`` is
refused at once, before any planning); the study is planned (:func:`qkov.study.engine.plan_study`, writes
nothing); symbolic-link run directories are refused (one line); the pending
runs execute on Dask (:func:`qkov.study.engine.run_study`; complete runs are reused, incomplete ones redone);
the report is built from the complete runs. Progress lines go to ``echo``.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Annotated, Any, Callable, Sequence

from pydantic import AfterValidator, Field

from qkov.core.config import (ConfigError, StrictConfig, check_study_arguments, field_error, parse_config,
                              resolve_data_dir)
from qkov.core.runstore import check_results_tree, incomplete_lines
from qkov.core.lock import results_lock
from qkov.study import engine
from qkov.study.context import RunContext, device_context
from qkov.study.stages import STAGE_NAMES

PRESETS: dict[str, bool] = {"quick": True, "full": False}
"""Study presets -> ``quick``: the subsampled study (minutes on two cores) or the paper-scale one."""


def _scheduler_address(text: str | None) -> str | None:
    """``text`` when it is a well-formed scheduler address (:func:`qkov.study.connect.parse_address`, the one
    parser every command uses), else ``ValueError`` with what is allowed."""
    from qkov.study.connect import ADDRESS_ALLOWED, SchedulerError, parse_address

    if text is None:
        return None
    try:
        parse_address(text)
    except SchedulerError:
        raise ValueError(ADDRESS_ALLOWED) from None
    return text


def _not_a_file(p: Path) -> Path:
    if p.exists() and not p.is_dir():
        raise ValueError("must be a directory (or not exist yet), not a file")
    return p


class ReproduceConfig(StrictConfig):
    """What a study runs and where.

    ``quick`` picks the subsampled study (minutes on two cores) over the paper-scale one;
    ``workers`` is the size of the local cluster (ignored with ``scheduler``);
    ``retries`` is how often a failed task (or one whose worker died) is resubmitted;
    ``stages``: the names of the stages to run (the others are listed as not selected).
    """

    quick: bool = True
    out: Annotated[Path, AfterValidator(_not_a_file)] = Path("qkov-results")
    scheduler: Annotated[str | None, AfterValidator(_scheduler_address)] = None
    workers: int = Field(default_factory=lambda: max(1, os.cpu_count() or 1), ge=1, le=512)
    retries: int = Field(2, ge=0, le=20)
    stages: tuple[str, ...] = STAGE_NAMES


@dataclasses.dataclass(frozen=True)
class ReproduceResult:
    """What :func:`reproduce` did: runs planned, executed, reused, redone and failed; the report.

    ``failed``: run name -> one-line reason; ``skipped``: one line per run a stage did not plan;
    ``report``: ``out/report.html``, or ``None`` with ``report_error`` saying why it was not written;
    ``summary_error``: why ``out/reproduce.json`` was not written, or ``None``.
    """

    out: Path
    stages: tuple[engine.StageStatus, ...]
    planned: tuple[str, ...]
    executed: tuple[str, ...]
    reused: tuple[str, ...]
    redone: tuple[str, ...]
    failed: dict[str, str]
    skipped: tuple[str, ...]
    report: Path | None
    report_error: str | None = None
    summary_error: str | None = None

    @property
    def ok(self) -> bool:
        """True iff no run failed and the report was written."""
        return not self.failed and self.report is not None


def report_failure(exc: OSError) -> str:
    """One line for an ``OSError`` met while writing the report: the file and the system's reason."""
    where = exc.filename or ""
    return f"{where}: {exc.strerror}" if where and exc.strerror else (str(exc).splitlines() or [type(exc).__name__])[0]


def _print(text: str, err: bool = False) -> None:
    import sys

    print(text, file=sys.stderr if err else sys.stdout, flush=True)


Echo = Callable[..., Any]
"""Where progress lines go: ``echo(text)`` for stdout, ``echo(text, err=True)`` for stderr (``click.echo``)."""


def config_for(preset: str, out: str | os.PathLike[str], **options: Any) -> ReproduceConfig:
    """The validated :class:`ReproduceConfig` of ``preset`` (a key of :data:`PRESETS`) and ``options``."""
    if preset not in PRESETS:
        raise field_error("preset", preset, f"must be one of {', '.join(PRESETS)}")
    values = {k: v for k, v in options.items() if v is not None}
    return parse_config(ReproduceConfig, quick=PRESETS[preset], out=Path(out), **values)


def _stage_names(stages: Any, only: Any) -> tuple[Any, Any]:
    """``stages`` given as names (``"derive,simulate"``, ``"all"`` or a sequence of str) selects those of the
    registry's stages, as ``only`` does; Stage objects, and anything else, pass unchanged to the argument check
    (:func:`qkov.core.config.check_study_arguments`, which refuses a bad one in one line). Unknown names are
    refused by :func:`reproduce`'s check (one line naming the allowed ones)."""
    names: tuple[str, ...] | None = None
    if isinstance(stages, str):
        names = tuple(n.strip() for n in stages.split(",") if n.strip())
    elif isinstance(stages, (list, tuple)) and stages and all(isinstance(s, str) for s in stages):
        names = tuple(stages)
    if names is None:
        return stages, only
    if only is not None:
        raise field_error("stages", ",".join(names), "give stage names once (stages= or only=)")
    return None, (None if names == ("all",) else names)


def reproduce(preset: str = "quick", out: str | os.PathLike[str] = "qkov-results", *,
              data_dir: str | os.PathLike[str] | None = None, scheduler: str | None = None,
              workers: int | str | None = None, retries: int | str = 2, only: Sequence[str] | None = None,
              stages: Sequence[engine.Stage] | str | Sequence[str] | None = None, progress: bool = False,
              echo: Echo = _print, device: str | None = None, bf16: bool = False,
              heartbeat_s: float | None = None) -> ReproduceResult:
    """Run every stage of the study into ``out``, resumably, and build ``out/report.html``.

    ``preset``: ``quick`` or ``full`` (:data:`PRESETS`); ``data_dir``: the real-data directory (else
    ``$QKOV_DATA_DIR``; none: the real stage is skipped); ``scheduler``: an existing Dask scheduler's
    address (else a local cluster of ``workers`` processes, default the CPU count; ``workers`` and ``retries`` may
    be given as the command line's text, checked like numbers); ``only``: stage names to
    run (default all); ``stages``: the :class:`~qkov.study.engine.Stage` objects of the study (default the
    registry's, :func:`qkov.study.stages.default_stages`), or stage names as for ``only`` (``"derive,simulate"``,
    as ``--stages`` takes them). Raises :class:`ConfigError` (one line, nothing
    written) on a bad option, a busy ``out`` (:class:`qkov.core.lock.ResultsLocked`, before planning), a
    symbolic-link run directory or an unreachable scheduler. ``KeyboardInterrupt`` propagates after one line
    saying how many runs are complete and kept. Failed runs and an unwritable report are *returned*
    (``result.failed``, ``result.report_error``), not raised.

    ``device`` (``auto | cpu | cuda[:N] | mps``; default ``auto``) and ``bf16`` are where the real stage trains
    (each run's manifest records them); an absent device, or bf16 off CUDA, is a :class:`ConfigError` before
    anything is written. They reach every run in its :class:`~qkov.study.context.RunContext` (pickled with
    the task to the workers, local or an external ``scheduler``'s; nothing goes through the environment). The
    synthetic, Figure 2 and optimizer runs train on the CPU in float64 by design (models of a few hundred
    parameters, where a GPU only adds launch overhead) and ignore it. ``heartbeat_s``: seconds between two
    heartbeat lines while planning or running without a bar (default :data:`qkov.study.engine.HEARTBEAT_S`).
    """
    given, only = _stage_names(stages, only)
    check_study_arguments(preset, out, stages=given, only=only, workers=workers, retries=retries,
                          data_dir=data_dir, device=device, bf16=bf16, progress=progress, presets=tuple(PRESETS))
    check_results_tree(out)  # OUT, OUT/runs or a run directory as a symbolic link: refused, one line
    study_stages: Sequence[engine.Stage] | None = given  # Stage objects or None: check_study_arguments refused the rest
    names = STAGE_NAMES if study_stages is None else tuple(s.name for s in study_stages)
    selected = tuple(only) if only is not None else names
    bad = [s for s in selected if s not in names]
    if bad or not selected:
        raise field_error("stages", ",".join(selected), f"must be 'all' or comma-separated values from "
                                                        f"{', '.join(names)}")
    cfg = config_for(preset, out, scheduler=scheduler, workers=workers, retries=retries, stages=selected)
    ctx = run_context(device, bf16, cfg.out)
    data = resolve_data_dir(data_dir)
    if cfg.scheduler:
        from qkov.study.connect import check_scheduler

        check_scheduler(cfg.scheduler)  # unreachable / not Dask / unresolvable: one line in seconds, before planning
    with results_lock(cfg.out, "qkov reproduce"):  # before planning: a busy --out is refused at once
        plan = engine.plan_study(cfg.out, cfg.quick, data, stages=study_stages, only=cfg.stages,  # writes nothing
                                 echo=echo, heartbeat_s=heartbeat_s)
        engine.check_run_dirs(plan)  # symbolic links as run directories: refused, one line
        return _run(cfg, plan, data, progress, echo, ctx, heartbeat_s)


def run_context(device: str | None, bf16: bool, out: Path) -> RunContext:
    """The study's :class:`RunContext` (``device`` ``None``: ``auto``; one torch thread per run, no per-run bars),
    the device checked present first (:class:`ConfigError`, one line)."""
    if device is None and not bf16:  # auto is always present: nothing to check (and torch not imported)
        return RunContext(device="auto", threads=1, progress=False, store=out)
    from validation.device import DeviceError

    try:
        return device_context(device, bf16, threads=1, progress=False, store=out)
    except DeviceError as exc:
        raise field_error("bf16" if bf16 and "bf16" in exc.why else "device", device or "auto", exc.why) from None


def _announce(cfg: ReproduceConfig, plan: engine.StudyPlan, data: Path | None, echo: Echo) -> None:
    for stage in plan.stages:
        echo(f"stage {stage.name}: not selected (--stages)" if stage.state == "not selected"
             else f"stage {stage.name}: {stage.n_runs} runs")
    if data is None and not plan.skipped and "real" in cfg.stages:
        echo("skipped real data: no data directory (give --data-dir or set $QKOV_DATA_DIR; see docs/data.md)")
    for line in plan.skipped:
        echo(f"skipped {line}")


def _run(cfg: ReproduceConfig, plan: engine.StudyPlan, data: Path | None, progress: bool,
         echo: Echo, ctx: RunContext, heartbeat_s: float | None) -> ReproduceResult:
    """The study itself, run while holding ``out``'s lock."""
    _announce(cfg, plan, data, echo)
    for line in incomplete_lines([r.run_dir for r in plan.runs]):  # issue 35: name each run redone, and why
        echo(line)
    todo = engine.pending(plan)
    n_workers = max(1, min(cfg.workers, len(todo)))  # no idle worker processes
    where = cfg.scheduler or f"local cluster, {n_workers} worker processes"
    if todo:
        echo(f"{len(plan.runs)} runs planned, {len(plan.runs) - len(todo)} already complete; "
             f"running {len(todo)} on {where} into {cfg.out}")
    else:
        echo(f"{len(plan.runs)} runs planned, all already complete in {cfg.out}; nothing to run")
    try:
        if todo:
            with engine.StudyCluster(cfg.scheduler, n_workers) as client:
                result = engine.run_study(plan, client, retries=cfg.retries, progress=progress, ctx=ctx, echo=echo,
                                          heartbeat_s=heartbeat_s)
        else:
            result = engine.run_study(plan, None, retries=cfg.retries, progress=False, ctx=ctx)
    except KeyboardInterrupt:
        done = sum(engine.is_complete(r.run_dir) for r in plan.runs)
        echo(f"interrupted: {done} of {len(plan.runs)} runs are complete and kept; "
             "rerun the same command to finish", err=True)
        raise
    echo(f"runs: {len(result.executed)} executed, {len(result.reused)} reused (already complete), "
         f"{len(result.redone)} incomplete redone, {len(result.failed)} failed")
    for name, err in result.failed.items():
        echo(f"failed {name}: {err}", err=True)
    if result.summary_error:
        echo(f"summary not written: {result.summary_error}", err=True)

    from qkov.report import build_report

    html: Path | None = None
    report_error = None
    try:
        html, _ = build_report(cfg.out)
    except OSError as exc:  # disk full, read-only or vanished --out: the runs on disk stay as they are
        report_error = report_failure(exc)
        echo(f"report: not written: {report_error}", err=True)
    else:
        echo(f"results: {cfg.out.resolve()}")
        echo(f"report: {html.resolve()}")
    return ReproduceResult(out=cfg.out, stages=tuple(plan.stages), planned=tuple(r.name for r in plan.runs),
                           executed=tuple(result.executed), reused=tuple(result.reused),
                           redone=tuple(result.redone), failed=dict(result.failed), skipped=tuple(plan.skipped),
                           report=html, report_error=report_error, summary_error=result.summary_error)


__all__ = ["reproduce", "ReproduceResult", "ReproduceConfig", "PRESETS", "config_for", "report_failure",
           "ConfigError"]
