"""``qkov reproduce``: the whole study (derive -> simulate -> validate synthetic -> validate real)
as independent runs on Dask, resumable, ending in one report.

Everything is validated before anything is written: a bad option is a
:class:`qkov.core.config.ConfigError` (one line, exit status 2, no files), and so is a ``--scheduler``
that does not answer as a Dask scheduler within 10 s (:mod:`qkov.study.connect`). ``--out`` has one owner
at a time (:func:`qkov.core.lock.results_lock`): a second writer exits 2 at once naming the holder. Runs
already complete under ``--out`` are reused, half-written ones are redone (see :mod:`qkov.study.engine`).
A run that fails (disk full, read-only or vanished ``--out``, a worker out of memory) is listed with a
one-line reason; the report is still built from the complete runs, or one line says why it could not be
written. The last line printed is ``report: <path of report.html>``.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import click

from qkov.cli.options import out_option
from qkov.cli.support import CONTEXT_SETTINGS
from pydantic import AfterValidator, Field
from typing import Annotated

from qkov.core.config import ConfigError, StrictConfig, as_choice_list, parse_config, resolve_data_dir
from qkov.core.lock import results_lock
from qkov.study import engine


def report_failure(exc: OSError) -> str:
    """One line for an ``OSError`` met while writing the report: the file and the system's reason."""
    where = exc.filename or ""
    return f"{where}: {exc.strerror}" if where and exc.strerror else (str(exc).splitlines() or [type(exc).__name__])[0]


def _scheduler_address(text: str | None) -> str | None:
    if text is None:
        return None
    if not re.fullmatch(r"((tcp|tls|ws|wss|ucx|inproc)://)?[A-Za-z0-9_.\-\[\]:]+:\d{1,5}", text):
        raise ValueError("must be a Dask scheduler address such as tcp://host:8786")
    return text


def _not_a_file(p: Path) -> Path:
    if p.exists() and not p.is_dir():
        raise ValueError("must be a directory (or not exist yet), not a file")
    return p


class ReproduceConfig(StrictConfig):
    """What ``qkov reproduce`` runs and where.

    ``quick`` picks the subsampled study (minutes on two cores) over the paper-scale one;
    ``workers`` is the size of the local cluster (ignored with ``scheduler``);
    ``retries`` is how often a failed task (or one whose worker died) is resubmitted.
    """

    quick: bool = True
    out: Annotated[Path, AfterValidator(_not_a_file)] = Path("qkov-results")
    scheduler: Annotated[str | None, AfterValidator(_scheduler_address)] = None
    workers: int = Field(default_factory=lambda: max(1, os.cpu_count() or 1), ge=1, le=512)
    retries: int = Field(2, ge=0, le=20)
    stages: tuple[str, ...] = engine.STAGE_NAMES


@click.command(context_settings=CONTEXT_SETTINGS)
@click.option("--quick/--full", default=True, help="Quick subsampled study (default, minutes) or the paper-scale one.")
@out_option()
@click.option("--data-dir", type=str, default=None, help="Real-data directory (else $QKOV_DATA_DIR).")
@click.option("--scheduler", type=str, default=None,
              help="Address of an existing Dask scheduler (tcp://host:8786); default: a local cluster.")
@click.option("--workers", type=str, default=None, help="Worker processes of the local cluster [default: CPU count].")
@click.option("--retries", type=str, default="2", show_default=True, help="Resubmissions of a failed or lost run.")
@click.option("--stages", type=str, default="all", show_default=True,
              help="Comma-separated stages to run: derive, simulate, synthetic, real (or all).")
@click.option("--progress/--no-progress", default=True, help="Show a progress bar over runs.")
def reproduce(quick: bool, out: Path, data_dir: str | None, scheduler: str | None, workers: str | None,
              retries: str, stages: str, progress: bool) -> None:
    """Run every stage of the study that exists, resumably, and build the report."""
    values = dict(quick=quick, out=Path(out), scheduler=scheduler, retries=retries,
                  stages=as_choice_list("stages", stages, engine.STAGE_NAMES))
    if workers is not None:
        values["workers"] = workers
    cfg = parse_config(ReproduceConfig, **values)
    data = resolve_data_dir(data_dir)
    plan = engine.plan_study(cfg.out, cfg.quick, data, only=cfg.stages)  # writes nothing; may raise ConfigError
    engine.check_run_dirs(plan)          # symbolic links as run directories: refused, one line
    if cfg.scheduler:
        from qkov.study.connect import check_scheduler

        check_scheduler(cfg.scheduler)   # unreachable / not Dask / unresolvable: one line within seconds
    with results_lock(cfg.out, "qkov reproduce"):
        _reproduce(cfg, plan, data, progress)


def _reproduce(cfg: ReproduceConfig, plan: "engine.StudyPlan", data: Path | None, progress: bool) -> None:
    """The study itself, run while holding ``--out``'s lock."""

    for stage in plan.stages:
        if stage.state == "not selected":
            click.echo(f"stage {stage.name}: not selected (--stages)")
        else:
            click.echo(f"stage {stage.name}: {stage.n_runs} runs")
    if data is None and not plan.skipped and "real" in cfg.stages:
        click.echo("skipped real data: no data directory (give --data-dir or set $QKOV_DATA_DIR; see docs/data.md)")
    for line in plan.skipped:
        click.echo(f"skipped {line}")

    todo = engine.pending(plan)
    n_workers = max(1, min(cfg.workers, len(todo)))  # no idle worker processes
    where = cfg.scheduler or f"local cluster, {n_workers} worker processes"
    if todo:
        click.echo(f"{len(plan.runs)} runs planned, {len(plan.runs) - len(todo)} already complete; "
                   f"running {len(todo)} on {where} into {cfg.out}")
    else:
        click.echo(f"{len(plan.runs)} runs planned, all already complete in {cfg.out}; nothing to run")
    try:
        if todo:
            with engine.StudyCluster(cfg.scheduler, n_workers) as client:
                result = engine.run_study(plan, client, retries=cfg.retries, progress=progress)
        else:
            result = engine.run_study(plan, None, retries=cfg.retries, progress=False)
    except KeyboardInterrupt:
        done = sum(engine.is_complete(r.run_dir) for r in plan.runs)
        click.echo(f"interrupted: {done} of {len(plan.runs)} runs are complete and kept; "
                   "rerun the same command to finish", err=True)
        raise
    click.echo(f"runs: {len(result.executed)} executed, {len(result.reused)} reused (already complete), "
               f"{len(result.redone)} incomplete redone, {len(result.failed)} failed")
    for name, err in result.failed.items():
        click.echo(f"failed {name}: {err}", err=True)
    if result.summary_error:
        click.echo(f"summary not written: {result.summary_error}", err=True)

    from qkov.report import build_report

    try:
        html_path, _ = build_report(cfg.out)
    except OSError as exc:  # disk full, read-only or vanished --out: the runs on disk stay as they are
        click.echo(f"report: not written: {report_failure(exc)}", err=True)
        failed = f"{len(result.failed)} runs failed and " if result.failed else ""
        raise click.ClickException(f"{failed}the report could not be written; fix the cause and rerun the same "
                                   "command, complete runs are kept") from None
    click.echo(f"results: {cfg.out.resolve()}")
    click.echo(f"report: {html_path.resolve()}")
    if not result.ok:
        raise click.ClickException(f"{len(result.failed)} runs failed (listed above); rerun the same command "
                                   "to retry them, finished runs are kept")


__all__ = ["ReproduceConfig", "reproduce", "ConfigError"]
