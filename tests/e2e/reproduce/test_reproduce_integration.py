"""The engine over the real study modules, whichever exist (real data skipped: no data directory)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from qkov.core.runstore import config_key, is_complete
from qkov.study import engine

from tests.paths import ROOT


def test_existing_stages_plan_valid_resumable_runs(tmp_path):
    plan = engine.plan_study(tmp_path / "out", True, None)
    assert not (tmp_path / "out").exists()
    states = {s.name: s for s in plan.stages}
    assert set(states) == {"derive", "simulate", "synthetic", "real"}
    for s in plan.stages:
        if s.state == "ready" and s.name != "real":
            assert s.n_runs >= 1, s
    if states["real"].state == "ready":
        assert states["real"].n_runs == 0 and states["real"].skipped  # no data directory: says why
    for run in plan.runs:
        # the config survives config.json: a rerun reads the same key, so complete runs are found again
        assert config_key(run.kind, json.loads(json.dumps(run.config))) == run.key
    assert len({r.name for r in plan.runs}) == len(plan.runs)
    full = engine.plan_study(tmp_path / "out", False, None)
    assert len(full.runs) >= len(plan.runs)


@pytest.mark.slow
def test_reproduce_quick_end_to_end_within_ten_minutes_and_resumes(tmp_path):
    """`qkov reproduce --quick` on this machine: done within its 10-minute budget (the subprocess is stopped
    at 600 s, which fails the test: no elapsed time is measured), report path last, a rerun redoes nothing."""
    env = {k: v for k, v in os.environ.items() if k != "QKOV_DATA_DIR"}
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "validation", "reproduce", "--quick", "--out", str(out), "--no-progress"]
    first = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert first.returncode == 0, first.stdout + first.stderr
    assert first.stdout.strip().splitlines()[-1] == f"report: {(out / 'report.html').resolve()}"
    runs = list((out / "runs").iterdir())
    assert runs and all(is_complete(r) for r in runs)
    second = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert second.returncode == 0
    assert f"runs: 0 executed, {len(runs)} reused" in second.stdout
