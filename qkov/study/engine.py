"""The reproduce engine: the whole study as one flat set of independent runs on Dask.

Each stage is a :class:`Stage` (the registry is :mod:`qkov.study.stages`; see ``docs/architecture.md``):
``study_runs(quick, data_dir) -> [(kind, config)]`` and ``execute(kind, config, run_dir)``.
The engine

1. *plans*: asks each stage for its runs and keys every run by
   :func:`qkov.core.runstore.config_key`, laying it out as ``<out>/runs/<kind>-<key>/``;
2. *resumes*: a run that :func:`qkov.core.runstore.is_complete` accepts is skipped; a run
   directory that exists but is not complete (half-written, truncated) is removed and redone;
3. *executes*: submits the remaining runs to a Dask ``distributed.Client`` (a
   ``LocalCluster`` of single-threaded worker processes by default, or an existing
   scheduler), with ``retries`` so that a task whose worker dies or that fails
   transiently is run again, and shows a progress bar over runs as they finish.

Runs have no data dependencies on each other (each run recomputes what it needs), so
an interrupted study loses only the runs that were in flight: everything finished is
on disk, complete, and skipped by the next call.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import datetime as _dt
import json
import os
import shutil
import sys
import time
import uuid
from pathlib import Path
from typing import Any, Callable, Sequence

from qkov.core.config import ConfigError
from qkov.core.runstore import atomic_write_json, config_key, is_complete, run_clock
from theory.errors import InputError

@dataclasses.dataclass(frozen=True)
class Stage:
    """One stage of the study: a name and its two functions (module-level, so Dask can pickle them).

    ``study_runs(quick, data_dir) -> [(kind, config)]``: independent runs, configs plain JSON data;
    ``execute(kind, config, run_dir)``: performs one run, ending with ``COMPLETE``;
    ``skipped_runs(quick, data_dir) -> [str]`` (optional): one line per run not planned, with the reason;
    ``kinds``: the run kinds it may plan (``None``: any; the registry declares them).
    """

    name: str
    study_runs: Callable[[bool, "Path | None"], list]
    execute: Callable[[str, dict, Path], None]
    skipped_runs: Callable[[bool, "Path | None"], list] | None = None
    kinds: tuple[str, ...] | None = None

    @classmethod
    def from_module(cls, name: str, module: Any, kinds: Sequence[str] | None = None) -> "Stage":
        """The stage whose functions are ``module.study_runs``, ``module.execute`` (and ``skipped_runs``)."""
        return cls(name, module.study_runs, module.execute, getattr(module, "skipped_runs", None),
                   None if kinds is None else tuple(kinds))

    @property
    def where(self) -> str:
        """Where the stage's code lives (for messages): ``module.function``."""
        return f"{self.study_runs.__module__}.{self.study_runs.__qualname__}"


RUNS_DIR = "runs"
SUMMARY_FILE = "reproduce.json"


@dataclasses.dataclass(frozen=True)
class StageStatus:
    """What the planner found for one stage: ``state`` is ``ready`` or ``not selected``; ``module``: where its code is."""

    name: str
    module: str
    state: str
    n_runs: int = 0
    skipped: tuple[str, ...] = ()


@dataclasses.dataclass(frozen=True)
class PlannedRun:
    """One run of the study: its stage, the stage's ``execute``, kind, JSON config, key and directory."""

    stage: str
    execute: Callable[[str, dict, Path], None]
    kind: str
    config: dict[str, Any]
    key: str
    run_dir: Path

    @property
    def name(self) -> str:
        """The run directory's name, ``<kind>-<key>``."""
        return self.run_dir.name


@dataclasses.dataclass
class StudyPlan:
    """Every stage's status and every planned run (deduplicated by directory)."""

    out: Path
    stages: list[StageStatus]
    runs: list[PlannedRun]

    @property
    def skipped(self) -> list[str]:
        """One line per run a stage did not plan, with the reason."""
        return [line for s in self.stages for line in s.skipped]


@dataclasses.dataclass
class StudyResult:
    """Outcome of :func:`run_study`: run names done now, already complete, redone, failed."""

    plan: StudyPlan
    executed: list[str]
    reused: list[str]
    redone: list[str]
    failed: dict[str, str]
    started: str
    ended: str
    summary_error: str | None = None
    """Why ``reproduce.json`` could not be written (disk full, read-only or vanished ``--out``), or None."""

    @property
    def ok(self) -> bool:
        """True iff no run failed."""
        return not self.failed


def _check_run(where: str, item: Any) -> tuple[str, dict[str, Any]]:
    if not (isinstance(item, (tuple, list)) and len(item) == 2 and isinstance(item[0], str)
            and isinstance(item[1], dict)):
        raise ConfigError(f"{where} returned {item!r:.80}: expected (kind: str, config: dict)")
    kind, config = item
    if not kind or "/" in kind or kind.startswith("."):
        raise ConfigError(f"{where} kind {kind!r}: must be a plain non-empty name")
    try:
        json.dumps(config, allow_nan=True)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{where} config of kind {kind!r}: not plain JSON data ({exc})") from None
    return kind, config


def plan_study(out: Path, quick: bool, data_dir: Path | None,
               stages: Sequence[Stage] | None = None,
               only: Sequence[str] | None = None) -> StudyPlan:
    """Collect the runs of every stage; writes nothing.

    Each run lives at ``out/runs/<kind>-<config_key(kind, config)>``; two stages
    proposing the same (kind, config) share one run. ``stages`` defaults to the registry's
    (:func:`qkov.study.stages.default_stages`); ``only`` restricts the plan to the named stages (the others
    are listed as ``not selected``). A run of a kind its stage does not declare is a :class:`ConfigError`.
    """
    if stages is None:
        from qkov.study.stages import default_stages

        stages = default_stages()
    statuses: list[StageStatus] = []
    runs: dict[str, PlannedRun] = {}
    for stage in stages:
        if only is not None and stage.name not in only:
            statuses.append(StageStatus(stage.name, stage.where, "not selected"))
            continue
        items = [_check_run(stage.where, it) for it in stage.study_runs(quick, data_dir)]
        undeclared = sorted({kind for kind, _ in items} - set(stage.kinds if stage.kinds is not None else
                                                               (kind for kind, _ in items)))
        if undeclared:
            raise ConfigError(f"{stage.where} planned run kind {undeclared[0]!r}: stage {stage.name!r} declares "
                              f"only {', '.join(stage.kinds or ())} (qkov.study.stages.REGISTRY)")
        skipped = tuple(str(s) for s in stage.skipped_runs(quick, data_dir)) if stage.skipped_runs else ()
        for kind, config in items:
            key = config_key(kind, config)
            run_dir = out / RUNS_DIR / f"{kind}-{key}"
            runs.setdefault(run_dir.name, PlannedRun(stage.name, stage.execute, kind, config, key, run_dir))
        statuses.append(StageStatus(stage.name, stage.where, "ready", len(items), skipped))
    return StudyPlan(out=out, stages=statuses, runs=list(runs.values()))


def execute_run(execute: Callable[[str, dict, Path], None], kind: str, config: dict[str, Any], run_dir: str) -> str:
    """Worker side of one run: call the stage's ``execute``.

    A run already complete is not run again (a retry after its worker died having finished it). A
    directory left by an earlier attempt that died halfway is cleared first; the run must end complete
    (``COMPLETE`` written last by ``RunWriter``), else this raises. The results directory must exist: it
    is never made again here, so a removed ``--out`` fails the run instead of half-recreating it. A full or
    read-only results filesystem is returned as a :class:`ResourceFault` (not raised: no retries).
    Returns the run directory's name.
    """
    path = Path(run_dir)
    if not path.parent.is_dir():  # never recreate a results directory that was removed mid-study
        raise FileNotFoundError(f"results directory {path.parent} vanished (or is not mounted on this worker)")
    if path.is_symlink():
        raise FileExistsError(f"{path} is a symbolic link; run directories must be real directories")
    if is_complete(path):
        # Done by an earlier attempt whose worker died before its result reached the client: Dask
        # recomputes such a lost result; the run on disk is the result, so it is not run again.
        return path.name
    if path.exists():
        shutil.rmtree(path)
    try:
        with run_clock():  # the manifest's 'started' is the run's start, not its writer's
            execute(kind, config, path)
    except Exception as exc:
        # A run that failed (disk full, read-only, out of memory, a bug) leaves no partial files behind:
        # they would hold disk space the report needs, and it is redone from scratch anyway.
        if not is_complete(path):
            shutil.rmtree(path, ignore_errors=True)
        if isinstance(exc, OSError) and exc.errno in RESOURCE_ERRNOS:
            # Not worth a retry: the filesystem stays full / read-only until someone fixes it.
            return ResourceFault(f"{type(exc).__name__}: {exc}".splitlines()[0])
        raise
    if not is_complete(path):
        raise RuntimeError(f"run {path.name}: {execute.__module__}.{execute.__qualname__} returned "
                           "but the run is not complete")
    return path.name


RESOURCE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS})
"""Errors of the results filesystem (full, over quota, read-only) that a retry cannot cure."""


class ResourceFault(str):
    """What :func:`execute_run` returns (instead of raising, so Dask does not retry) for a resource fault."""


def failure_reason(exc: BaseException) -> str:
    """One line saying why a run failed (a killed worker, out of memory, disk full, read-only, ...)."""
    name = type(exc).__name__
    if name == "KilledWorker":
        return ("KilledWorker: the worker process running it died every time it was tried "
                "(killed, e.g. out of memory: see the worker logs)")
    if isinstance(exc, MemoryError):
        return f"MemoryError: out of memory in the worker{': ' + str(exc) if str(exc) else ''}".splitlines()[0]
    text = str(exc).strip()
    return f"{name}: {text.splitlines()[0]}" if text else name


def check_run_dirs(plan: "StudyPlan") -> None:
    """Refuse (one line, before any work) a planned run directory that is a symbolic link.

    A link could point anywhere: removing an incomplete run through it would delete files outside
    ``--out``, and a complete one would make the report read results from elsewhere.
    """
    for run in plan.runs:
        if run.run_dir.is_symlink():
            raise InputError(f"out: {run.run_dir}: a symbolic link (to {os.readlink(run.run_dir)}); run "
                             "directories must be real directories inside --out: remove the link, or replace "
                             "it by a copy of its target")


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def _summary(result: StudyResult, cluster: str) -> dict[str, Any]:
    plan = result.plan
    status = {r.name: ("failed" if r.name in result.failed else
                       "reused" if r.name in result.reused else "executed") for r in plan.runs}
    return {
        "started": result.started,
        "ended": result.ended,
        "cluster": cluster,
        "stages": [dataclasses.asdict(s) | {"skipped": list(s.skipped)} for s in plan.stages],
        "runs": [{"name": r.name, "stage": r.stage, "kind": r.kind, "key": r.key, "status": status[r.name],
                  "error": result.failed.get(r.name)} for r in plan.runs],
        "redone": result.redone,
        "skipped": plan.skipped,
    }


def _address(client: Any) -> str:
    try:
        return str(client.scheduler.address)
    except AttributeError:
        return ""


def _progress(total: int, desc: str):
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, unit="run", file=sys.stderr, dynamic_ncols=True)


def pending(plan: StudyPlan) -> list[PlannedRun]:
    """The planned runs that are not complete yet (to execute or redo)."""
    return [r for r in plan.runs if not is_complete(r.run_dir)]


def _sort_runs(plan: StudyPlan) -> tuple[list[str], list[str], list[PlannedRun], dict[str, str]]:
    """Reused (complete), redone (incomplete directory removed), to run, failed (could not be removed)."""
    reused, redone, todo = [], [], []
    failed: dict[str, str] = {}
    for run in plan.runs:
        if is_complete(run.run_dir):
            reused.append(run.name)
            continue
        if run.run_dir.exists():
            try:
                shutil.rmtree(run.run_dir)
            except OSError as exc:  # read-only --out: the run is reported, the others go on
                failed[run.name] = f"cannot remove its incomplete directory: {failure_reason(exc)}"
                continue
            redone.append(run.name)
        todo.append(run)
    return reused, redone, todo, failed


def _collect(fut: Any, run: PlannedRun, executed: list[str], failed: dict[str, str]) -> None:
    """Record the outcome of one finished future in ``executed`` or ``failed``."""
    try:
        outcome = fut.result()
        if isinstance(outcome, ResourceFault):
            failed[run.name] = str(outcome)
        else:
            executed.append(run.name)
    except Exception as exc:  # noqa: BLE001 - a failed run is reported, the study goes on
        if is_complete(run.run_dir):
            # Finished on disk before its worker died (Dask then blames every task that worker
            # held: KilledWorker); the run directory is the result, and it is whole.
            executed.append(run.name)
        else:
            failed[run.name] = failure_reason(exc)


def run_study(plan: StudyPlan, client: Any | None, retries: int = 2, progress: bool = True) -> StudyResult:
    """Run every incomplete run of ``plan`` on a Dask ``client``; keep finished work.

    Complete runs are reused; incomplete directories are removed and redone. Tasks
    are submitted with ``retries`` (a task whose worker dies is rescheduled by the
    scheduler as well). A run that still fails is recorded in ``failed`` (name ->
    one-line error) and the others continue. ``client`` may be ``None`` when nothing is pending. On ``KeyboardInterrupt`` pending tasks
    are cancelled and the interrupt propagates; completed runs stay on disk.
    The summary ``<out>/reproduce.json`` is written at the end.
    """
    from distributed import as_completed

    started = _now()
    check_run_dirs(plan)
    try:
        (plan.out / RUNS_DIR).mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"out: {plan.out}: cannot write there ({exc.strerror or exc})") from None
    reused, redone, todo, failed = _sort_runs(plan)
    if todo and client is None:
        raise ValueError("run_study: runs to execute but no Dask client")
    futures = {}
    for run in todo:
        # A fresh key per submission: two studies (other --out) with the same run must not share a result.
        fut = client.submit(execute_run, run.execute, run.kind, run.config, str(run.run_dir),
                            key=f"qkov-{run.name}-{uuid.uuid4().hex[:8]}", pure=False, retries=retries)
        futures[fut] = run
    executed: list[str] = []
    bar = _progress(len(todo), f"runs ({len(reused)} reused)") if progress else None
    try:
        for fut in (as_completed(list(futures)) if futures else ()):
            _collect(fut, futures[fut], executed, failed)
            if bar is not None:
                bar.update(1)
                bar.set_postfix(failed=len(failed), refresh=False)
    except BaseException:
        if futures:
            client.cancel(list(futures))
        raise
    finally:
        if bar is not None:
            bar.close()
    result = StudyResult(plan, executed, reused, redone, failed, started, _now())
    if not (plan.out / RUNS_DIR).is_dir():
        result.summary_error = f"{plan.out / RUNS_DIR} vanished during the study"
    else:
        try:
            atomic_write_json(plan.out / SUMMARY_FILE, _summary(result, _address(client)))
        except OSError as exc:  # disk full, read-only: the runs' own state on disk is what counts
            result.summary_error = f"{plan.out / SUMMARY_FILE}: {exc.strerror or exc}"
    return result


LOCAL_CLUSTER_CONFIG = {"distributed.scheduler.http.routes": [], "distributed.worker.http.routes": [],
                        "distributed.scheduler.worker-saturation": 1.0}
"""Dask settings of the local cluster: no HTTP routes (no dashboard, no Prometheus, no JSON API); a worker
holds only the task it runs (saturation 1.0, not 1.1 = two tasks per one-thread worker), so a worker that
dies -- killed, out of memory -- takes no queued neighbour run down with it (each death counts against
every task the worker held, and a task counted too often fails with ``KilledWorker``)."""


class StudyCluster:
    """A Dask client: a new ``LocalCluster`` of ``workers`` single-threaded processes, or ``scheduler``.

    Use as a context manager; a cluster it started is closed on exit. ``scheduler`` is checked first
    (:func:`qkov.study.connect.connect_client`: 10 s per step, one-line :class:`~qkov.study.connect.SchedulerError`).
    The local cluster listens on 127.0.0.1 only and serves no dashboard: Dask always opens an HTTP port,
    here an ephemeral loopback one with no routes, so nothing warns "Port 8787 is already in use".
    """

    def __init__(self, scheduler: str | None = None, workers: int = 1):
        self.scheduler = scheduler
        self.workers = workers
        self.cluster = None
        self.client = None
        self._stack = contextlib.ExitStack()

    def __enter__(self):
        from distributed import Client, LocalCluster

        if self.scheduler:
            from qkov.study.connect import connect_client

            self.client = connect_client(self.scheduler)
        else:
            import dask

            self._stack.enter_context(dask.config.set(LOCAL_CLUSTER_CONFIG))
            try:
                self.cluster = LocalCluster(n_workers=self.workers, threads_per_worker=1, processes=True,
                                            host="127.0.0.1", dashboard_address=None, silence_logs=50,
                                            scheduler_kwargs={"dashboard": False,
                                                              "dashboard_address": "127.0.0.1:0"})
                self.client = Client(self.cluster)
            except BaseException:
                self._stack.close()
                raise
        return self.client

    def __exit__(self, *exc_info) -> bool:
        t0 = time.monotonic()
        try:
            if self.client is not None:
                self.client.close()
            if self.cluster is not None:
                self.cluster.close(timeout=max(5.0, 20.0 - (time.monotonic() - t0)))
        finally:
            self._stack.close()
        return False
