"""The engine on fake stages: planning, resuming, failures, the `qkov reproduce` command end to end."""

from __future__ import annotations

import json

import pytest

from qkov.core.config import ConfigError
from qkov.core.runstore import config_key, is_complete
from qkov.study import engine
from qkov.cli.main import cli

from tests.e2e.reproduce.fakestudy import FAKE_STAGES, badruns, run_cli
from tests.e2e.reproduce.fakestudy.common import executions


def test_plan_keys_runs_and_writes_nothing(tmp_path, fake_stages):
    out = tmp_path / "out"
    plan = engine.plan_study(out, True, None, FAKE_STAGES)
    assert not out.exists()
    assert [(s.name, s.state, s.n_runs) for s in plan.stages] == [
        ("derive", "ready", 1), ("simulate", "ready", 3), ("synthetic", "ready", 4), ("real", "ready", 0)]
    assert plan.skipped == ["real-sva (6 runs): no data directory"]
    for run in plan.runs:
        assert run.run_dir == out / "runs" / f"{run.kind}-{config_key(run.kind, run.config)}"
    assert len({r.name for r in plan.runs}) == 8
    with_data = engine.plan_study(out, True, tmp_path, FAKE_STAGES)
    assert sum(r.stage == "real" for r in with_data.runs) == 6 and not with_data.skipped


def test_plan_rejects_malformed_study_runs(tmp_path):
    with pytest.raises(ConfigError, match="fakestudy.badruns.study_runs .*expected \\(kind: str, config: dict\\)"):
        engine.plan_study(tmp_path / "out", True, None, (engine.Stage.from_module("bad", badruns),))
    assert not (tmp_path / "out").exists()


def _lines(capsys):
    cap = capsys.readouterr()
    return cap.out.strip().splitlines(), cap.err


def test_reproduce_runs_everything_then_skips_complete_runs(tmp_path, fake_stages, shared_cluster, capsys):
    out = tmp_path / "out"
    assert run_cli(cli, ["reproduce", "--quick", "--out", str(out), "--no-progress"]) == 0
    lines, _ = _lines(capsys)
    assert lines[-1] == f"report: {(out / 'report.html').resolve()}"
    assert "skipped real-sva (6 runs): no data directory" in lines
    assert "runs: 8 executed, 0 reused (already complete), 0 incomplete redone, 0 failed" in lines
    runs = sorted((out / "runs").iterdir())
    assert len(runs) == 8 and all(is_complete(r) for r in runs)
    assert (out / "report.md").is_file()
    summary = json.loads((out / "reproduce.json").read_text())
    assert {r["status"] for r in summary["runs"]} == {"executed"}

    assert run_cli(cli, ["reproduce", "--out", str(out), "--no-progress"]) == 0
    lines, _ = _lines(capsys)
    assert "runs: 0 executed, 8 reused (already complete), 0 incomplete redone, 0 failed" in lines
    assert all(executions(fake_stages, r.name) == 1 for r in runs)


def test_reproduce_with_data_dir_runs_real_stage(tmp_path, fake_stages, shared_cluster, capsys):
    out = tmp_path / "out"
    assert run_cli(cli, ["reproduce", "--out", str(out), "--data-dir", str(tmp_path), "--no-progress"]) == 0
    lines, _ = _lines(capsys)
    assert not any(line.startswith("skipped") for line in lines)
    assert len(list((out / "runs").glob("real-sva-*"))) == 6
    md = (out / "report.md").read_text()
    assert "### real-sva" in md and "±" in md


def test_failed_run_is_reported_and_the_rest_complete(tmp_path, fake_stages, shared_cluster, monkeypatch, capsys):
    monkeypatch.setenv("QKOV_FAKE_FAIL", "1")
    out = tmp_path / "out"
    assert run_cli(cli, ["reproduce", "--out", str(out), "--no-progress", "--retries", "1"]) == 1
    lines, err = _lines(capsys)
    assert lines[-1].startswith("report: ")
    assert "1 failed" in next(x for x in lines if x.startswith("runs:"))
    assert "RuntimeError: fake stage failure requested by QKOV_FAKE_FAIL" in err
    failed = [r for r in json.loads((out / "reproduce.json").read_text())["runs"] if r["status"] == "failed"]
    assert len(failed) == 1
    assert executions(fake_stages, failed[0]["name"]) == 2  # first try + one retry
    assert sum(is_complete(p) for p in (out / "runs").iterdir()) == 7


def test_stages_option_runs_only_the_selected_stages(tmp_path, fake_stages, shared_cluster, capsys):
    out = tmp_path / "out"
    assert run_cli(cli, ["reproduce", "--out", str(out), "--stages", "derive,simulate", "--no-progress"]) == 0
    lines, _ = _lines(capsys)
    assert "stage synthetic: not selected (--stages)" in lines and "stage real: not selected (--stages)" in lines
    assert not any(x.startswith("skipped") for x in lines)
    assert sorted(p.name.split("-")[0] for p in (out / "runs").iterdir()) == ["derive"] + ["simulate"] * 3


def test_scheduler_option_connects_to_an_existing_cluster(tmp_path, fake_stages, dask_client, capsys):
    address = dask_client.scheduler.address
    out = tmp_path / "out"
    args = ["reproduce", "--out", str(out), "--stages", "simulate", "--scheduler", address, "--no-progress"]
    assert run_cli(cli, args) == 0
    lines, _ = _lines(capsys)
    assert any(x.endswith(f"running 3 on {address} into {out}") for x in lines)
    summary = json.loads((out / "reproduce.json").read_text())
    assert summary["cluster"] == address and len(summary["runs"]) == 3
