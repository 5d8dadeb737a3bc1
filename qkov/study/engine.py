"""The study engine: every command's runs as one flat set of independent runs, in this process or on Dask.

Each stage is a :class:`Stage` (the registry is :mod:`qkov.study.stages`; see ``docs/architecture.md``):
``study_runs(quick, data_dir) -> [(kind, config)]`` and ``execute(kind, config, run_dir, ctx)``, where ``ctx``
is the command's :class:`~qkov.study.context.RunContext` (device, precision, threads, progress, results
store): the one hand-off between the engine and a stage (nothing travels through ``os.environ``).
Every command that runs work goes through it: ``qkov reproduce`` (:mod:`qkov.study.reproduce_study`),
``qkov validate real`` (:mod:`qkov.study.real_command`) and ``qkov validate synthetic``
(:mod:`qkov.study.synthetic_command`). The engine

1. *plans*: asks each stage for its runs and keys every run by
   :func:`qkov.core.runstore.config_key`, laying it out as ``<out>/runs/<kind>-<key>/``;
2. *resumes*: a run that :func:`qkov.core.runstore.is_complete` accepts is skipped; a run
   directory that exists but is not complete (half-written, truncated) is removed and redone;
3. *executes*: submits the remaining runs to an executor: :data:`IN_PROCESS` (one after the other in
   this process) or a Dask ``distributed.Client`` (:class:`StudyCluster`: a ``LocalCluster`` of
   single-threaded worker processes, or an existing scheduler), with ``retries`` so that a task whose
   worker dies or that fails transiently is run again, and shows a progress bar over runs as they finish
   (and, without a bar, a heartbeat line at least every :data:`HEARTBEAT_S` seconds, planning included).

Runs have no data dependencies on each other (each run recomputes what it needs), so
an interrupted study loses only the runs that were in flight: everything finished is
on disk, complete, and skipped by the next call.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import datetime as _dt
import functools
import json
import os
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any, Callable, Literal, Sequence

from qkov.core.config import ConfigError
from qkov.core.runstore import atomic_write_json, config_key, is_complete, remove_run, run_clock
from qkov.study.context import RunContext
from theory.errors import InputError

Execute = Callable[[str, dict, Path, RunContext], None]
"""A stage's ``execute(kind, config, run_dir, ctx)``: performs one run into ``run_dir``, ``COMPLETE`` last."""
ExecuteGroup = Callable[[str, list, list, RunContext], None]
"""A stage's ``execute_group(kind, configs, run_dirs, ctx)``: performs several runs together (one task)."""

@dataclasses.dataclass(frozen=True)
class Stage:
    """One stage of the study: a name and its two functions (module-level, so Dask can pickle them).

    ``study_runs(quick, data_dir) -> [(kind, config)]``: independent runs, configs plain JSON data;
    ``execute(kind, config, run_dir, ctx)``: performs one run, ending with ``COMPLETE``; ``ctx`` is the
    command's :class:`~qkov.study.context.RunContext` (device, precision, threads, progress, store);
    ``skipped_runs(quick, data_dir) -> [str]`` (optional): one line per run not planned, with the reason;
    ``kinds``: the run kinds it may plan (``None``: any; the registry declares them);
    ``group_key(kind, config) -> str | None`` and ``execute_group(kind, configs, run_dirs, ctx)`` (optional,
    together): pending runs of the stage with the same key execute as one task (e.g. trained together,
    ``qkov validate real --stacked``); each run still gets its own directory.
    """

    name: str
    study_runs: Callable[[bool, "Path | None"], list]
    execute: Execute
    skipped_runs: Callable[[bool, "Path | None"], list] | None = None
    kinds: tuple[str, ...] | None = None
    group_key: Callable[[str, dict], "str | None"] | None = None
    execute_group: ExecuteGroup | None = None

    @classmethod
    def from_module(cls, name: str, module: Any, kinds: Sequence[str] | None = None) -> "Stage":
        """The stage whose functions are ``module.study_runs``, ``module.execute`` (and ``skipped_runs``)."""
        return cls(name, module.study_runs, module.execute, getattr(module, "skipped_runs", None),
                   None if kinds is None else tuple(kinds))

    @property
    def where(self) -> str:
        """Where the stage's code lives (for messages): ``module.function``."""
        fn = getattr(self.study_runs, "func", self.study_runs)  # a functools.partial names its function
        return f"{fn.__module__}.{getattr(fn, '__qualname__', type(fn).__name__)}"


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
    """One run of the study: its stage, the stage's ``execute``, kind, JSON config, key and directory;
    ``group``: runs of one stage sharing a group execute together through ``execute_group`` (else None)."""

    stage: str
    execute: Execute
    kind: str
    config: dict[str, Any]
    key: str
    run_dir: Path
    group: str | None = None
    execute_group: ExecuteGroup | None = None

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


def _planning_line(stage: str, t0: float) -> str:
    return f"planning: stage {stage} ({time.monotonic() - t0:.0f} s)"


def plan_study(out: Path, quick: bool, data_dir: Path | None,
               stages: Sequence[Stage] | None = None,
               only: Sequence[str] | None = None, echo: Callable[[str], Any] | None = None,
               heartbeat_s: float | None = None) -> StudyPlan:
    """Collect the runs of every stage; writes nothing.

    Each run lives at ``out/runs/<kind>-<config_key(kind, config)>``; two stages
    proposing the same (kind, config) share one run. ``stages`` defaults to the registry's
    (:func:`qkov.study.stages.default_stages`); ``only`` restricts the plan to the named stages (the others
    are listed as ``not selected``). A run of a kind its stage does not declare is a :class:`ConfigError`.
    With ``echo``, a stage that plans for long (the real stage validates every data file) is announced by a
    heartbeat line ``planning: stage <name> (<s> s)`` every ``heartbeat_s`` seconds (:data:`HEARTBEAT_S`).
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
        t0 = time.monotonic()
        with Heartbeat(echo, functools.partial(_planning_line, stage.name, t0), heartbeat_s):
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
            group = stage.group_key(kind, config) if stage.group_key and stage.execute_group else None
            runs.setdefault(run_dir.name, PlannedRun(stage.name, stage.execute, kind, config, key, run_dir,
                                                     group, stage.execute_group if group is not None else None))
        statuses.append(StageStatus(stage.name, stage.where, "ready", len(items), skipped))
    return StudyPlan(out=out, stages=statuses, runs=list(runs.values()))


def _prepare(path: Path) -> bool:
    """Worker side, before a run: True when it is already complete (nothing to do); else clear what an
    earlier attempt left. Refuses a vanished results directory and a symbolic link."""
    if not path.parent.is_dir():  # never recreate a results directory that was removed mid-study
        raise FileNotFoundError(f"results directory {path.parent} vanished (or is not mounted on this worker)")
    if path.is_symlink():
        raise FileExistsError(f"{path} is a symbolic link; run directories must be real directories")
    if is_complete(path):
        # Done by an earlier attempt whose worker died before its result reached the client: Dask
        # recomputes such a lost result; the run on disk is the result, so it is not run again.
        return True
    if path.exists():
        remove_run(path)  # only a directory the store made (its marker), reached without a link
    return False


def _guarded(call: Callable[[], None], paths: Sequence[Path]) -> "ResourceFault | None":
    """Run ``call``; on an exception remove the incomplete ``paths`` and raise, or return a
    :class:`ResourceFault` for a full / read-only results filesystem (not worth a retry)."""
    try:
        with run_clock():  # the manifest's 'started' is the run's start, not its writer's
            call()
    except Exception as exc:
        # A run that failed (disk full, read-only, out of memory, a bug) leaves no partial files behind:
        # they would hold disk space the report needs, and it is redone from scratch anyway.
        for path in paths:
            if not is_complete(path):
                with contextlib.suppress(OSError, InputError):  # an unmarked directory is left for the user
                    remove_run(path)
        if isinstance(exc, OSError) and exc.errno in RESOURCE_ERRNOS:
            # Not worth a retry: the filesystem stays full / read-only until someone fixes it.
            return ResourceFault(f"{type(exc).__name__}: {exc}".splitlines()[0])
        raise
    return None


def execute_run(execute: Execute, kind: str, config: dict[str, Any], run_dir: str,
                ctx: RunContext | None = None) -> str:
    """Worker side of one run: call the stage's ``execute(kind, config, run_dir, ctx)`` inside
    ``ctx.thread_scope()`` (torch threads set for the run, restored after).

    A run already complete is not run again (a retry after its worker died having finished it). A
    directory left by an earlier attempt that died halfway is cleared first; the run must end complete
    (``COMPLETE`` written last by ``RunWriter``), else this raises. The results directory must exist: it
    is never made again here, so a removed ``--out`` fails the run instead of half-recreating it. A full or
    read-only results filesystem is returned as a :class:`ResourceFault` (not raised: no retries).
    Returns the run directory's name.
    """
    ctx = ctx if ctx is not None else RunContext()
    path = Path(run_dir)
    if _prepare(path):
        return path.name

    def call() -> None:
        with ctx.thread_scope():
            execute(kind, config, path, ctx)

    fault = _guarded(call, [path])
    if fault is not None:
        return fault
    if not is_complete(path):
        raise RuntimeError(f"run {path.name}: {execute.__module__}.{execute.__qualname__} returned "
                           "but the run is not complete")
    return path.name


def execute_group_run(execute_group: ExecuteGroup, kind: str, configs: list[dict[str, Any]], run_dirs: list[str],
                      ctx: RunContext | None = None) -> "list[str] | ResourceFault":
    """Worker side of a group of runs executed together (``Stage.execute_group``): the runs not complete yet
    are cleared and executed in one call; each must end complete. Returns the run directories' names."""
    ctx = ctx if ctx is not None else RunContext()
    paths = [Path(d) for d in run_dirs]
    todo = [i for i, p in enumerate(paths) if not _prepare(p)]
    if todo:
        def call() -> None:
            with ctx.thread_scope():
                execute_group(kind, [configs[i] for i in todo], [paths[i] for i in todo], ctx)

        fault = _guarded(call, [paths[i] for i in todo])
        if fault is not None:
            return fault
    incomplete = [p.name for p in paths if not is_complete(p)]
    if incomplete:
        raise RuntimeError(f"runs {', '.join(incomplete)}: {execute_group.__module__}.{execute_group.__qualname__} "
                           "returned but they are not complete")
    return [p.name for p in paths]


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
    """Refuse (one line, before any work) a planned run directory that is a symbolic link or a file.

    A link could point anywhere: removing an incomplete run through it would delete files outside
    ``--out``, and a complete one would make the report read results from elsewhere.
    """
    for run in plan.runs:
        if run.run_dir.is_symlink():
            raise InputError(f"out: {run.run_dir}: a symbolic link (to {os.readlink(run.run_dir)}); run "
                             "directories must be real directories inside --out: remove the link, or replace "
                             "it by a copy of its target")
        if run.run_dir.exists() and not run.run_dir.is_dir():
            raise InputError(f"out: {run.run_dir}: not a directory (a run directory must be a directory): remove it")


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
    if isinstance(client, InProcess):
        return "in process"
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
                remove_run(run.run_dir)  # only a directory the store made (its marker), never through a link
            except (OSError, InputError) as exc:  # read-only --out, or not the store's: reported, the others go on
                failed[run.name] = f"cannot remove its incomplete directory: {failure_reason(exc)}"
                continue
            redone.append(run.name)
        todo.append(run)
    return reused, redone, todo, failed


HEARTBEAT_S = 10.0
"""Seconds between two heartbeat lines while a study plans or runs (a progress bar is redrawn instead)."""


class Heartbeat:
    """A line every ``every`` seconds while the body runs: ``beat()`` is called from a daemon thread and
    whatever it returns (a line, or ``None`` for nothing) goes to ``echo``. No ``echo`` or ``every`` <= 0:
    nothing happens. The first line comes ``every`` seconds after the start (a quick body prints none)."""

    def __init__(self, echo: Callable[[str], Any] | None, beat: Callable[[], "str | None"],
                 every: float | None = None):
        self.echo, self.beat = echo, beat
        self.every = HEARTBEAT_S if every is None else every
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _loop(self) -> None:
        while not self._stop.wait(self.every):
            line = self.beat()
            if line and self.echo is not None and not self._stop.is_set():
                self.echo(line)

    def __enter__(self) -> "Heartbeat":
        if self.echo is not None and self.every > 0:
            self._thread = threading.Thread(target=self._loop, name="qkov-heartbeat", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc_info) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()


class _Done:
    """A finished in-process task, shaped like a Dask future (``result()``, ``key``)."""

    def __init__(self, key: str, value: Any = None, error: BaseException | None = None):
        self.key, self._value, self._error = key, value, error

    def result(self) -> Any:
        if self._error is not None:
            raise self._error
        return self._value


class InProcess:
    """The in-process executor: each submitted task runs at once, here, with up to ``retries`` more tries on
    an ``Exception`` (an interrupt propagates). Shaped like the part of ``distributed.Client`` that
    :func:`run_study` uses (``submit``, ``cancel``), so the engine has one path for both.
    Tasks run lazily: :func:`run_study` submits them one at a time, as the previous one finished."""

    def submit(self, fn: Callable[..., Any], *args: Any, key: str = "", pure: bool = False,
               retries: int = 0) -> _Done:
        for attempt in range(retries + 1):
            try:
                return _Done(key, fn(*args))
            except Exception as exc:  # noqa: BLE001 - returned like a Dask future's error
                if attempt == retries:
                    return _Done(key, error=exc)
        raise AssertionError("unreachable")

    def cancel(self, futures: Any) -> None:
        """Nothing to cancel: no task runs in the background."""

    def __repr__(self) -> str:
        return "in process"


IN_PROCESS = InProcess()
"""Run every task one after the other in this process (the default of ``qkov validate``)."""


@dataclasses.dataclass(frozen=True)
class _Task:
    """What one submission executes: one run, or a group of runs of one stage executed together."""

    runs: tuple[PlannedRun, ...]

    @property
    def name(self) -> str:
        return self.runs[0].name if len(self.runs) == 1 else f"{self.runs[0].name}+{len(self.runs) - 1}"

    def args(self, ctx: RunContext) -> tuple:
        first = self.runs[0]
        if first.group is None:
            return execute_run, first.execute, first.kind, first.config, str(first.run_dir), ctx
        return (execute_group_run, first.execute_group, first.kind, [r.config for r in self.runs],
                [str(r.run_dir) for r in self.runs], ctx)


def _tasks(todo: list[PlannedRun]) -> list[_Task]:
    """The runs to execute as tasks: one per run, runs sharing ``(stage, kind, group)`` together (first-seen order)."""
    groups: dict[tuple, list[PlannedRun]] = {}
    for run in todo:
        key = (run.name,) if run.group is None else (run.stage, run.kind, run.group)
        groups.setdefault(key, []).append(run)
    return [_Task(tuple(runs)) for runs in groups.values()]


def _collect(fut: Any, task: _Task, executed: list[str], failed: dict[str, str]) -> None:
    """Record the outcome of one finished future (one task: one run or a group) in ``executed`` or ``failed``."""
    try:
        outcome = fut.result()
        if isinstance(outcome, ResourceFault):
            failed.update({run.name: str(outcome) for run in task.runs})
        else:
            executed.extend(run.name for run in task.runs)
    except Exception as exc:  # noqa: BLE001 - a failed run is reported, the study goes on
        for run in task.runs:
            if is_complete(run.run_dir):
                # Finished on disk before its worker died (Dask then blames every task that worker
                # held: KilledWorker); the run directory is the result, and it is whole.
                executed.append(run.name)
            else:
                failed[run.name] = failure_reason(exc)


def _completed(client: Any, futures: dict) -> Any:
    """The futures as they finish: Dask's ``as_completed``, or submission order in process."""
    if not futures:
        return ()
    if isinstance(client, InProcess):
        return list(futures)
    from distributed import as_completed

    return as_completed(list(futures))


def _execute_tasks(client: Any, tasks: list[_Task], ctx: RunContext, retries: int, executed: list[str],
                   failed: dict[str, str], bar: Any) -> None:
    """Submit ``tasks`` to ``client`` and record each outcome as it finishes (interrupt: cancel the rest)."""
    def done(fut: Any, task: _Task) -> None:
        _collect(fut, task, executed, failed)
        if bar is not None:
            bar.update(len(task.runs))
            bar.set_postfix(failed=len(failed), refresh=False)

    if isinstance(client, InProcess):
        for task in tasks:  # one at a time, so an interrupt stops at once
            done(client.submit(*task.args(ctx), key=f"qkov-{task.name}", retries=retries), task)
        return
    futures: dict[Any, _Task] = {}
    try:
        for task in tasks:
            # A fresh key per submission: two studies (other --out) with the same run must not share a result.
            fut = client.submit(*task.args(ctx), key=f"qkov-{task.name}-{uuid.uuid4().hex[:8]}", pure=False,
                                retries=retries)
            futures[fut] = task
        for fut in _completed(client, futures):
            done(fut, futures[fut])
    except BaseException:
        if futures:
            client.cancel(list(futures))
        raise


def run_study(plan: StudyPlan, client: Any | None, retries: int = 2, progress: bool = True,
              ctx: RunContext | None = None, summary: str | None = SUMMARY_FILE, desc: str = "runs",
              echo: Callable[[str], Any] | None = None, heartbeat_s: float | None = None) -> StudyResult:
    """Run every incomplete run of ``plan`` on an executor; keep finished work.

    ``client``: a Dask ``distributed.Client`` (:class:`StudyCluster`), or :data:`IN_PROCESS` (one run after
    the other here); ``None`` only when nothing is pending. Every run is called with ``ctx`` (default
    :class:`~qkov.study.context.RunContext`: CPU, float32, one thread, no progress bars), pickled to the
    worker with the task. Complete runs are reused; incomplete directories are removed and redone. Tasks
    are submitted with ``retries`` (a task whose worker dies is rescheduled by the scheduler as well). A run
    that still fails is recorded in ``failed`` (name -> one-line error) and the others continue. On
    ``KeyboardInterrupt`` pending tasks are cancelled and the interrupt propagates; completed runs stay on
    disk. The summary ``<out>/<summary>`` (default ``reproduce.json``; ``None``: none) is written at the end.
    With ``progress`` a bar (``desc``) counts runs as they finish and is redrawn every ``heartbeat_s``
    seconds; without it, ``echo`` gets a line ``running: <done> of <n> runs finished ...`` that often.
    """
    ctx = ctx if ctx is not None else RunContext(store=plan.out)
    started = _now()
    t0 = time.monotonic()
    check_run_dirs(plan)
    try:
        (plan.out / RUNS_DIR).mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"out: {plan.out}: cannot write there ({exc.strerror or exc})") from None
    reused, redone, todo, failed = _sort_runs(plan)
    if todo and client is None:
        raise ValueError("run_study: runs to execute but no executor (a Dask client or engine.IN_PROCESS)")
    executed: list[str] = []
    bar = _progress(len(todo), f"{desc} ({len(reused)} reused)") if progress else None

    own_bars = isinstance(client, InProcess) and ctx.progress is not False  # runs here draw their own bars

    def beat() -> str | None:
        if bar is not None:
            if not own_bars:  # (redrawing over a run's bar from this thread would garble both)
                bar.refresh()  # the bar's elapsed time moves even while no run finishes
            return None
        return (f"running: {len(executed) + len(failed)} of {len(todo)} runs finished "
                f"({len(failed)} failed), {time.monotonic() - t0:.0f} s")

    try:
        with Heartbeat(echo if bar is None else (lambda _line: None), beat, heartbeat_s):
            _execute_tasks(client, _tasks(todo), ctx, retries, executed, failed, bar)
    finally:
        if bar is not None:
            bar.close()
    result = StudyResult(plan, executed, reused, redone, failed, started, _now())
    if summary is not None:
        _write_summary(result, summary, client)
    return result


def _write_summary(result: StudyResult, summary: str, client: Any) -> None:
    plan = result.plan
    if not (plan.out / RUNS_DIR).is_dir():
        result.summary_error = f"{plan.out / RUNS_DIR} vanished during the study"
    else:
        try:
            atomic_write_json(plan.out / summary, _summary(result, _address(client)))
        except OSError as exc:  # disk full, read-only: the runs' own state on disk is what counts
            result.summary_error = f"{plan.out / summary}: {exc.strerror or exc}"


LOCAL_CLUSTER_CONFIG = {"distributed.scheduler.http.routes": [], "distributed.worker.http.routes": [],
                        "distributed.scheduler.worker-saturation": 1.0}
"""Dask settings of the local cluster: no HTTP routes (no dashboard, no Prometheus, no JSON API); a worker
holds only the task it runs (saturation 1.0, not 1.1 = two tasks per one-thread worker), so a worker that
dies -- killed, out of memory -- takes no queued neighbour run down with it (each death counts against
every task the worker held, and a task counted too often fails with ``KilledWorker``)."""


class StudyCluster:
    """A Dask client: a new ``LocalCluster`` of ``workers`` single-threaded processes (``processes=False``:
    threads of this process, for tests and small runs), or ``scheduler``.

    Use as a context manager; a cluster it started is closed on exit. ``scheduler`` is checked first
    (:func:`qkov.study.connect.connect_client`: 10 s per step, one-line :class:`~qkov.study.connect.SchedulerError`).
    The local cluster listens on 127.0.0.1 only and serves no dashboard: Dask always opens an HTTP port,
    here an ephemeral loopback one with no routes, so nothing warns "Port 8787 is already in use".
    """

    def __init__(self, scheduler: str | None = None, workers: int = 1, processes: bool = True):
        self.scheduler = scheduler
        self.workers = workers
        self.processes = processes
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
                # Threads (processes=False) talk over inproc://, which takes no host; processes listen on loopback.
                where = {"host": "127.0.0.1"} if self.processes else {}
                self.cluster = LocalCluster(n_workers=self.workers, threads_per_worker=1, processes=self.processes,
                                            dashboard_address=None, silence_logs=50, **where,
                                            scheduler_kwargs={"dashboard": False,
                                                              "dashboard_address": "127.0.0.1:0"})
                self.client = Client(self.cluster)
            except BaseException:
                self._stack.close()
                raise
        return self.client

    def __exit__(self, *exc_info) -> Literal[False]:
        t0 = time.monotonic()
        try:
            if self.client is not None:
                self.client.close()
            if self.cluster is not None:
                self.cluster.close(timeout=max(5.0, 20.0 - (time.monotonic() - t0)))
        finally:
            self._stack.close()
        return False


@contextlib.contextmanager
def open_executor(executor: Any = None, scheduler: str | None = None, workers: int | None = None,
                  processes: bool = True, n_pending: int | None = None):
    """The executor of a command, open for the block: ``executor`` as given (:data:`IN_PROCESS`, or a
    ``distributed.Client`` the caller owns); else, with ``scheduler`` or ``workers``, a Dask
    :class:`StudyCluster` (``workers`` local single-threaded processes, no more than ``n_pending``; or the
    ``scheduler``, checked reachable first: :class:`~qkov.study.connect.SchedulerError`); else :data:`IN_PROCESS`.
    """
    if executor is not None:
        yield executor
    elif n_pending == 0:  # nothing to run: no cluster to start
        yield IN_PROCESS
    elif scheduler or workers:
        if scheduler:
            from qkov.study.connect import check_scheduler

            check_scheduler(scheduler)
        n = max(1, min(workers or 1, n_pending if n_pending else workers or 1))
        with StudyCluster(scheduler, n, processes=processes) as client:
            yield client
    else:
        yield IN_PROCESS


class RunsFailed(RuntimeError):
    """Runs of a command that did not complete: ``failed`` maps run name -> one-line reason."""

    def __init__(self, failed: dict[str, str], total: int):
        self.failed = dict(failed)
        first = next(iter(self.failed.items()))
        super().__init__(f"{len(self.failed)} of {total} runs failed (rerun the same command to retry them, "
                         f"complete runs are kept); {first[0]}: {first[1]}")
