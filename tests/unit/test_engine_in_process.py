"""The engine's in-process executor: retries, failures reported per run, groups executed as one task."""

from __future__ import annotations

from pathlib import Path

import pytest

from qkov.core.runstore import RunWriter, is_complete
from qkov.study import engine
from qkov.study.context import RunContext

NO_TORCH = RunContext(threads=None)
"""These runs use no torch: leave its threads alone (and do not import it)."""


def _write(kind: str, config: dict, run_dir: Path) -> None:
    with RunWriter(run_dir, kind=kind, config=config) as run:
        run.write_json("metrics.json", {"x": config["x"]})


def _plan(tmp_path: Path, execute, n: int = 2, **stage) -> engine.StudyPlan:
    runs = [("toy", {"x": i, "g": i % 2 if stage else 0}) for i in range(n)]
    return engine.plan_study(tmp_path, True, None, stages=(engine.Stage("toy", lambda q, d: runs, execute,
                                                                        kinds=("toy",), **stage),))


def test_a_transient_failure_is_retried_and_a_lasting_one_reported(tmp_path):
    tries: dict[int, int] = {}

    def execute(kind, config, run_dir, ctx):
        tries[config["x"]] = tries.get(config["x"], 0) + 1
        if config["x"] == 1 or tries[config["x"]] == 1:   # run 0 fails once, run 1 always
            raise RuntimeError(f"boom {config['x']}")
        _write(kind, config, run_dir)

    plan = _plan(tmp_path, execute)
    res = engine.run_study(plan, engine.IN_PROCESS, retries=1, progress=False, ctx=NO_TORCH, summary=None)
    first, second = plan.runs
    assert res.executed == [first.name] and is_complete(first.run_dir)
    assert res.failed == {second.name: "RuntimeError: boom 1"} and not second.run_dir.exists()
    assert tries == {0: 2, 1: 2}
    err = engine.RunsFailed(res.failed, len(plan.runs))
    assert str(err).startswith("1 of 2 runs failed") and "boom 1" in str(err) and "\n" not in str(err)
    again = engine.run_study(plan, engine.IN_PROCESS, progress=False, ctx=NO_TORCH, summary=None)
    assert again.reused == [first.name]                   # complete runs are kept, the failed one is redone


def test_runs_with_one_group_key_execute_together(tmp_path):
    calls = []

    def execute_group(kind, configs, run_dirs, ctx):
        calls.append(sorted(c["x"] for c in configs))
        for c, d in zip(configs, run_dirs):
            _write(kind, c, d)

    def execute(kind, config, run_dir, ctx):  # pragma: no cover - grouped runs never come here
        raise AssertionError("a grouped run was executed alone")

    plan = _plan(tmp_path, execute, n=4, group_key=lambda kind, c: str(c["g"]), execute_group=execute_group)
    res = engine.run_study(plan, engine.IN_PROCESS, progress=False, ctx=NO_TORCH, summary=None)
    assert calls == [[0, 2], [1, 3]] and len(res.executed) == 4 and res.failed == {}
    assert all(is_complete(r.run_dir) for r in plan.runs)


def test_the_context_reaches_every_run(tmp_path):
    seen = []

    def execute(kind, config, run_dir, ctx):
        seen.append(ctx)
        _write(kind, config, run_dir)

    ctx = RunContext(device="cuda:1", precision="bf16", threads=None, progress=None, store=tmp_path)
    engine.run_study(_plan(tmp_path, execute), engine.IN_PROCESS, progress=False, ctx=ctx, summary=None)
    assert seen == [ctx, ctx]


def test_no_executor_with_work_pending_is_refused(tmp_path):
    with pytest.raises(ValueError, match="no executor"):
        engine.run_study(_plan(tmp_path, lambda *a: None), None, progress=False, ctx=NO_TORCH)
