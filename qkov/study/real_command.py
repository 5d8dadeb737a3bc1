"""The body of ``qkov validate real`` as one library call: :func:`validate_real` plans an eta_QK/eta_OV sweep
on real data sets, runs it through the study engine (:mod:`qkov.study.engine`: in this process by default,
on Dask when asked) and summarises it.

::

    from qkov.study.real_command import RealSweep, validate_real
    res = validate_real(RealSweep(datasets=("sva",), quick=True), "qkov-results", data_dir="data")
    res.summary["claims"]["real-data"], res.summary_dir

Order of work: everything is checked before anything is written (a ``scheduler`` reachable, the device, the data
directory, the sweep's configurations, every record of every dataset: one :class:`~qkov.core.config.ConfigError`,
``SchedulerError`` or ``DataError`` line); ``out``'s lock is taken (one writer per results directory); the runs
(``OUT/runs/validate-real-<key>/``) are planned by :func:`qkov.study.engine.plan_study`, complete ones
reused, and the others executed with the command's :class:`~qkov.study.context.RunContext`; then the
summary run ``OUT/runs/real-sweep-summary-<key>/`` is written.
"""

from __future__ import annotations

import dataclasses
import functools
import os
from pathlib import Path
from typing import Any, Callable, Mapping

from qkov.core.config import ConfigError, field_error, parse_config, resolve_data_dir
from qkov.study import engine
from qkov.study.context import RunContext
from theory.parametrization import BASELINE

SWEEP_SUMMARY_KIND = "real-sweep-summary"
"""Kind of the summary run a ``qkov validate real`` sweep writes (``OUT/runs/real-sweep-summary-<key>/``)."""


@dataclasses.dataclass(frozen=True)
class RealSweep:
    """One ``qkov validate real`` sweep: datasets x optimizers x ratios x seeds, the rest fixed.

    ``ratios``/``seeds``/``optimizers`` ``None``: each dataset's defaults (:mod:`validation.real.config`);
    ``model`` ``None``: small with ``quick``, else paper; ``param``/``layers``: the attention layer's circuits
    and depth; ``recipe``: which parameters move with the ratio; ``stacked``: the runs of one configuration
    train together (one task, :func:`qkov.study.real_stage.execute_group`); ``device``/``bf16``: where and at
    which precision the runs train; ``rates``: rate factors (times the OV rate) per named parameter group other
    than ``qk`` (whose factor is the ratio), on top of the recipe (:func:`validation.real.config.group_rates`).
    """

    datasets: tuple[str, ...]
    ratios: tuple[float, ...] | None = None
    seeds: tuple[int, ...] | None = None
    optimizers: tuple[str, ...] | None = None
    model: str | None = None
    param: str = BASELINE
    layers: int = 1
    quick: bool = False
    recipe: str = "ratio-only"
    stacked: bool = False
    device: str = "auto"
    bf16: bool = False
    rates: Mapping[str, float] | None = None
    preset: str = "sized"
    """``sized`` (qkov's CPU-sized defaults) or ``official`` (the official code's settings,
    :mod:`validation.real.official`; recorded in each run's config, so it is part of the group key)."""
    fused: bool = False
    """AdamW's fused kernel (``RealRunConfig.fused``; recorded in each run's config: not bitwise the default)."""

    def overrides(self) -> dict[str, Any]:
        """The settings that replace dataset defaults in every run (only those not at their default)."""
        extra: dict[str, Any] = {k: v for k, v in (("param", self.param), ("layers", self.layers))
                                 if (k, v) not in (("param", BASELINE), ("layers", 1))}
        if self.model is not None:
            extra["model"] = self.model
        if self.recipe != "ratio-only":
            extra["recipe"] = self.recipe
        if self.rates:
            extra["rates"] = dict(self.rates)
        if self.preset != "sized":
            extra["preset"] = self.preset
        if self.fused:
            extra["fused"] = True
        return extra


@dataclasses.dataclass(frozen=True)
class RealSweepResult:
    """What :func:`validate_real` wrote: every run directory (sweep order), the summary run and its content
    (``summary["groups"]``, ``["tests"]``, ``["claims"]``); the run names executed now and reused."""

    run_dirs: tuple[Path, ...]
    summary_dir: Path
    summary: dict[str, Any]
    executed: tuple[str, ...]
    reused: tuple[str, ...]


def _planned(runs: list[tuple[str, dict]], quick: bool, data_dir: Path | None) -> list[tuple[str, dict]]:
    return runs


def sweep_stage(configs: list[dict], stacked: bool) -> engine.Stage:
    """The sweep as a study stage: its runs are ``configs`` (kind ``validate-real``); ``stacked``: runs that
    differ only in ratio, seed and recipe execute together (:func:`qkov.study.real_stage.group_key`)."""
    from qkov.study import real_stage

    runs = [(real_stage.KIND, c) for c in configs]
    return engine.Stage("real", functools.partial(_planned, runs), real_stage.execute, kinds=(real_stage.KIND,),
                        group_key=real_stage.group_key if stacked else None,
                        execute_group=real_stage.execute_group if stacked else None)


def _context(sweep: RealSweep, progress: bool, out: Path) -> RunContext:
    from qkov.study.context import device_context

    try:
        return device_context(sweep.device, sweep.bf16, threads=1, progress=progress, store=out)
    except ValueError as exc:  # DeviceError: one line naming the device
        raise ConfigError(str(exc)) from None


def plan_configs(sweep: RealSweep, data: Path) -> list[dict]:
    """The validated JSON configs of every run of ``sweep`` (datasets outermost); every dataset file is loaded
    and checked here, so a bad record is one ``DataError`` line before any work."""
    from qkov.study import real_stage
    from validation.real import datasets as dataset_registry
    from validation.real.config import RealRunConfig
    from validation.real.run import load_dataset

    extra = sweep.overrides()
    if sweep.stacked and sweep.fused:
        raise field_error("stacked", "true", "not with --fused-adamw (the stacked trainer has its own AdamW update)")
    if sweep.stacked and sweep.preset != "sized":
        raise field_error("stacked", "true", "only with --preset sized (the official presets train one run at a time)")
    if sweep.model == "minilm":
        from validation.real.pretrained import PretrainedUnavailable, minilm_dir

        try:
            minilm_dir()      # the extra is there: else one line, before any work
        except PretrainedUnavailable as exc:
            raise ConfigError(str(exc)) from None
    try:
        planned = real_stage.sweep_configs(sweep.datasets, sweep.ratios, sweep.seeds, sweep.optimizers, sweep.quick,
                                           data, **extra)
    except ValueError as exc:     # e.g. a model that does not fit a dataset (minilm is HateXplain's)
        raise ConfigError(str(exc)) from None
    if sweep.fused and not any(c.fused for c in planned):  # default_config drops it from the SGD runs
        raise field_error("fused-adamw", "true", "AdamW's fused kernel: only for a sweep with AdamW runs (these "
                                                 "train with " + ", ".join(sorted({c.optimizer for c in planned}))
                          + ")")
    configs = [parse_config(RealRunConfig, **c.to_json_dict()) for c in planned]
    for ds in sweep.datasets:  # validate every file before training anything
        load_dataset(ds, str(data))
    if sweep.stacked and (sweep.bf16 or any(c.model == "minilm" or dataset_registry.get(c.dataset).task == "generation"
                                            for c in configs)):
        raise field_error("stacked", "true", "only for the paper and small classifiers (HateXplain, SVA), without --bf16")
    return [c.to_json_dict() for c in configs]


def validate_real(sweep: RealSweep, out: str | os.PathLike[str], *, data_dir: str | os.PathLike[str] | None = None,
                  progress: bool = True, executor: Any = None, scheduler: str | None = None,
                  workers: int | None = None, retries: int = 0,
                  echo: Callable[[str], Any] | None = None) -> RealSweepResult:
    """Train every run of ``sweep`` into ``out`` (complete runs reused) and write its summary run.

    ``data_dir``: the real-data directory (else ``$QKOV_DATA_DIR``; none is a :class:`ConfigError`).
    Executes in this process unless ``executor`` (``engine.IN_PROCESS`` or a ``distributed.Client``),
    ``scheduler`` (a Dask scheduler's address) or ``workers`` (a local Dask cluster of that many processes)
    says otherwise; ``retries``: resubmissions of a failed run. ``progress``: a bar over runs and, in this
    process, each run's training bars. A run that still fails raises :class:`qkov.study.engine.RunsFailed`
    (one line per run in ``.failed``) after the others finished; complete runs are kept.
    """
    from qkov.core.lock import results_lock
    from qkov.study.real_summary import summarise

    out = Path(out)
    if executor is None and scheduler:
        from qkov.study.connect import check_scheduler

        check_scheduler(scheduler)  # malformed / unreachable / not Dask: one line, before any data is loaded
    ctx = _context(sweep, progress, out)
    data = resolve_data_dir(data_dir)
    if data is None:
        raise field_error("data-dir", "(not given)",
                          "a real-data directory: --data-dir DIR or $QKOV_DATA_DIR (no data directory; see docs/data.md)")
    configs = plan_configs(sweep, data)
    stage = sweep_stage(configs, sweep.stacked)
    with results_lock(out, "qkov validate real"):  # one writer per results directory
        plan = engine.plan_study(out, sweep.quick, data, stages=(stage,))
        engine.check_run_dirs(plan)
        todo = engine.pending(plan)
        with engine.open_executor(executor, scheduler, workers, n_pending=len(todo)) as client:
            in_process = isinstance(client, engine.InProcess)
            result = engine.run_study(plan, client, retries=retries, progress=progress,
                                      ctx=ctx.replace(progress=progress and in_process), summary=None,
                                      desc="stacked runs" if sweep.stacked else "real-data runs", echo=echo)
        if result.failed:
            raise engine.RunsFailed(result.failed, len(plan.runs))
        run_dirs = tuple(r.run_dir for r in plan.runs)
        summary_cfg = {"datasets": list(sweep.datasets), "ratios": list(sweep.ratios or []),
                       "seeds": list(sweep.seeds or []), "optimizers": list(sweep.optimizers or []),
                       "quick": sweep.quick, **sweep.overrides(), "data_dir": str(data),
                       "runs": [d.name for d in run_dirs]}
        from qkov.core.runstore import run_dir_for

        summary_dir = run_dir_for(out, SWEEP_SUMMARY_KIND, summary_cfg)
        summary = summarise(run_dirs, summary_dir, kind=SWEEP_SUMMARY_KIND, config=summary_cfg)
    return RealSweepResult(run_dirs, summary_dir, summary, tuple(result.executed), tuple(result.reused))


__all__ = ["RealSweep", "RealSweepResult", "validate_real", "plan_configs", "sweep_stage", "SWEEP_SUMMARY_KIND"]
