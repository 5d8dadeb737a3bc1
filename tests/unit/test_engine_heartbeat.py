"""The engine's heartbeat: a line at least every ``heartbeat_s`` seconds while a study plans or runs.

Short intervals (1 ms) and events, no clock: each test blocks its planning or its run until the heartbeat has
spoken, so it passes on any machine speed (the 60 s waits only guard against a hang)."""

from __future__ import annotations

import threading
from pathlib import Path

from qkov.core.runstore import RunWriter
from qkov.study import engine
from qkov.study.context import RunContext

NO_TORCH = RunContext(threads=None)
"""These runs use no torch: leave its threads alone (and do not import it)."""

HANG = 60.0
"""Seconds before a test that never hears a heartbeat gives up (a hang guard, not a timing assertion)."""


class Listener:
    """An ``echo`` that records lines and sets ``heard`` once ``n`` lines starting with ``prefix`` came."""

    def __init__(self, prefix: str, n: int = 2):
        self.prefix, self.n, self.lines, self.heard = prefix, n, [], threading.Event()

    def __call__(self, line: str, err: bool = False) -> None:
        self.lines.append(line)
        if sum(x.startswith(self.prefix) for x in self.lines) >= self.n:
            self.heard.set()


def test_heartbeat_speaks_while_the_body_runs_and_stops_after():
    echo = Listener("tick", n=3)
    with engine.Heartbeat(echo, lambda: "tick", every=0.001):
        assert echo.heard.wait(HANG)
    n = len(echo.lines)
    assert n >= 3 and set(echo.lines) == {"tick"}
    with engine.Heartbeat(echo, lambda: "tock", every=1e6):   # a quick body: no line
        pass
    with engine.Heartbeat(None, lambda: "never", every=0.001) as hb:   # no echo: no thread at all
        assert hb._thread is None
    assert echo.lines[n:] == []


def _slow_runs(gate: threading.Event):
    def study_runs(quick, data_dir):
        assert gate.wait(HANG), "no heartbeat while planning"
        return [("slow", {"x": 1})]
    return study_runs


def _execute_after(gate: threading.Event):
    def execute(kind, config, run_dir, ctx):
        assert gate.wait(HANG), "no heartbeat while running"
        with RunWriter(run_dir, kind=kind, config=config) as run:
            run.write_json("metrics.json", {"x": config["x"]})
    return execute


def test_planning_and_running_print_heartbeats(tmp_path: Path):
    planning, running = Listener("planning: stage slow ("), Listener("running: 0 of 1 runs finished (0 failed)")
    stage = engine.Stage("slow", _slow_runs(planning.heard), _execute_after(running.heard), kinds=("slow",))
    plan = engine.plan_study(tmp_path, True, None, stages=(stage,), echo=planning, heartbeat_s=0.001)
    assert [r.name.split("-")[0] for r in plan.runs] == ["slow"]
    result = engine.run_study(plan, engine.IN_PROCESS, progress=False, echo=running, heartbeat_s=0.001, summary=None,
                              ctx=NO_TORCH)
    assert result.executed == [plan.runs[0].name] and result.failed == {}
    assert all(line.startswith("running: ") for line in running.lines)


def test_no_heartbeat_without_echo(tmp_path: Path, monkeypatch):
    """Library callers that pass no ``echo`` get no lines and no thread (planning and running alike)."""
    def no_thread(*a, **k):
        raise AssertionError("a heartbeat thread was started without an echo")

    monkeypatch.setattr(engine.threading, "Thread", no_thread)
    stage = engine.Stage("quick", lambda q, d: [("quick", {"x": 2})], _execute_after(_set()), kinds=("quick",))
    plan = engine.plan_study(tmp_path, True, None, stages=(stage,), heartbeat_s=0.001)
    result = engine.run_study(plan, engine.IN_PROCESS, progress=False, heartbeat_s=0.001, summary=None,
                              ctx=NO_TORCH)
    assert len(result.executed) == 1


def _set() -> threading.Event:
    e = threading.Event()
    e.set()
    return e
