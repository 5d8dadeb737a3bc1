"""Reliability of `qkov reproduce`: a killed worker, a truncated result, a bad config,
the same seed twice, and an interrupted reproduce that resumes without redoing finished runs."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from qkov.core.runstore import is_complete
from qkov.study import engine
from qkov.cli.main import cli

from tests.e2e.reproduce.fakestudy import FAKE_STAGES, run_cli
from tests.e2e.reproduce.fakestudy.common import executions
from tests.cli_errors import assert_one_line_error

from tests.paths import ROOT, child_env


def test_killed_worker_task_reruns_and_results_complete(tmp_path, fake_stages, dask_client, monkeypatch):
    monkeypatch.setenv("QKOV_FAKE_KILL", "1")
    plan = engine.plan_study(tmp_path / "out", True, None, FAKE_STAGES)
    victim = next(r for r in plan.runs if r.config.get("kill_me"))
    result = engine.run_study(plan, dask_client, retries=2, progress=False)
    assert result.ok, result.failed
    assert (fake_stages / f"killed-{victim.name}").exists()          # the worker did die once
    assert executions(fake_stages, victim.name) == 2                  # ... and the task ran again
    assert all(is_complete(r.run_dir) for r in plan.runs)


def test_truncated_result_is_detected_and_redone(tmp_path, fake_stages, dask_client):
    out = tmp_path / "out"
    plan = engine.plan_study(out, True, None, FAKE_STAGES)
    engine.run_study(plan, dask_client, progress=False)
    victim = plan.runs[2]
    metrics = victim.run_dir / "metrics.json"
    good = metrics.read_bytes()
    metrics.write_bytes(good[: len(good) // 2])                       # truncated after the fact
    assert not is_complete(victim.run_dir)

    again = engine.run_study(engine.plan_study(out, True, None, FAKE_STAGES), dask_client, progress=False)
    assert again.redone == [victim.name] and again.executed == [victim.name]
    assert metrics.read_bytes() == good and is_complete(victim.run_dir)
    assert executions(fake_stages, victim.name) == 2
    assert all(executions(fake_stages, r.name) == 1 for r in plan.runs if r is not victim)


@pytest.mark.parametrize("args, field", [
    (["--workers", "0"], "workers"),
    (["--workers", "two"], "workers"),
    (["--retries", "-1"], "retries"),
    (["--scheduler", "not an address"], "scheduler"),
    (["--data-dir", "/nonexistent/qkov-data"], "data-dir"),
    (["--out", "{file}"], "out"),
    (["--stages", "derive,nope"], "stages"),
])
def test_bad_config_exits_2_with_one_line_and_writes_nothing(tmp_path, fake_stages, args, field, capsys):
    a_file = tmp_path / "a-file"
    a_file.write_text("keep me")
    out_args = [] if "--out" in args else ["--out", str(tmp_path / "out")]
    args = [x.replace("{file}", str(a_file)) for x in args]
    before = sorted(p.name for p in tmp_path.rglob("*"))
    assert run_cli(cli, ["reproduce", *out_args, *args]) == 2
    cap = capsys.readouterr()
    assert cap.out == ""
    assert_one_line_error(cap.err, field)
    assert sorted(p.name for p in tmp_path.rglob("*")) == before and a_file.read_text() == "keep me"


def test_same_seed_twice_gives_identical_numbers(tmp_path, fake_stages, dask_client):
    numbers = []
    for name in ("a", "b"):  # back to back on one cluster: the second study must really run, not reuse futures
        plan = engine.plan_study(tmp_path / name, True, tmp_path, FAKE_STAGES)
        result = engine.run_study(plan, dask_client, progress=False)
        assert result.ok and len(result.executed) == 14
        numbers.append({r.name: (r.run_dir / "metrics.json").read_bytes() for r in plan.runs})
    assert numbers[0] == numbers[1] and len(numbers[0]) == 14
    assert all(executions(fake_stages, name) == 2 for name in numbers[0])


_DRIVER = """
import sys
import signal
signal.signal(signal.SIGINT, signal.default_int_handler)  # a launcher without job control (nohup cmd &)
# leaves SIGINT ignored, and Python keeps it so: the test's SIGINT would then be lost
sys.path.insert(0, {root!r})
from tests.e2e.reproduce.fakestudy import STUDY
from qkov.cli.main import main
if __name__ == "__main__":
    main(["reproduce", "--out", {out!r}, "--workers", "2", "--no-progress"], obj=STUDY)
"""


def test_interrupted_reproduce_resumes_without_redoing_finished_runs(tmp_path, fake_stages, shared_cluster,
                                                                   monkeypatch, capsys):
    # Each run: first file, 3 s, then the rest and COMPLETE; slow enough that the interrupt, sent once 3
    # runs are complete, lands mid-study even on a loaded machine (at 1 s all 8 could finish first).
    monkeypatch.setenv("QKOV_FAKE_SLEEP", "3.0")
    out = tmp_path / "out"
    script = tmp_path / "driver.py"
    script.write_text(_DRIVER.format(root=str(ROOT), out=str(out)))
    proc = subprocess.Popen([sys.executable, str(script)], cwd=ROOT, env=child_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and proc.poll() is None:
            if len(list(out.glob("runs/*/COMPLETE"))) >= 3:
                break
            time.sleep(0.1)
        assert proc.poll() is None, f"reproduce ended before the interrupt: {proc.communicate()}"
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        with __import__("contextlib").suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)  # leftover worker processes of the killed run, if any
    assert proc.returncode != 0
    assert "interrupted:" in err and "rerun the same command" in err

    finished = {p.name: (p / "COMPLETE").stat().st_mtime_ns for p in (out / "runs").iterdir() if is_complete(p)}
    assert 3 <= len(finished) < 8
    assert run_cli(cli, ["reproduce", "--out", str(out), "--no-progress"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert f"runs: {8 - len(finished)} executed, {len(finished)} reused" in next(x for x in lines if x.startswith("runs:"))
    for name, mtime in finished.items():
        assert (out / "runs" / name / "COMPLETE").stat().st_mtime_ns == mtime
        assert executions(fake_stages, name) == 1
    assert all(is_complete(p) for p in (out / "runs").iterdir()) and len(list((out / "runs").iterdir())) == 8
