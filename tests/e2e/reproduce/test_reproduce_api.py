"""The study from Python (`from qkov.study import reproduce`) on the fake stages, and the lock taken before planning."""

from __future__ import annotations

import subprocess
import sys

import pytest

from qkov.cli.main import cli
from qkov.core.lock import ResultsLocked
from qkov.study import engine
from tests.paths import ROOT

from tests.e2e.reproduce.fakestudy import FAKE_STAGES, run_cli
from tests.e2e.reproduce.fakestudy.common import executions

_HOLDER = """
import sys, time
sys.path.insert(0, {root!r})
from qkov.core.lock import results_lock
with results_lock({out!r}, "qkov test-holder"):
    print("held", flush=True)
    time.sleep(120)
"""


def test_reproduce_runs_a_study_from_python_and_returns_what_it_did(tmp_path, fake_stages, shared_cluster):
    from qkov.study import reproduce

    out, lines = tmp_path / "out", []
    result = reproduce("quick", out, stages=FAKE_STAGES, workers=2, echo=lambda text, err=False: lines.append(text))
    assert result.ok and result.report == out / "report.html" and result.report.is_file()
    assert len(result.planned) == 8 and sorted(result.executed) == sorted(result.planned)
    assert result.reused == () and result.failed == {}
    assert result.skipped == ("real-sva (6 runs): no data directory",)
    assert [s.name for s in result.stages] == ["derive", "simulate", "synthetic", "real"]
    assert all(executions(fake_stages, name) == 1 for name in result.planned)
    assert lines[-1] == f"report: {result.report.resolve()}"

    again = reproduce("quick", out, stages=FAKE_STAGES, only=["derive"], echo=lambda *a, **k: None)
    assert again.ok and len(again.planned) == 1 and again.reused == again.planned and again.executed == ()
    assert [s.state for s in again.stages] == ["ready", "not selected", "not selected", "not selected"]


@pytest.mark.parametrize("kwargs, field", [({"preset": "medium"}, "preset"), ({"only": ["nope"]}, "stages"),
                                           ({"workers": 0}, "workers"), ({"device": "tpu"}, "device"),
                                           ({"device": "cuda:99"}, "device"),
                                           ({"device": "cpu", "bf16": True}, "bf16")],
                         ids=["preset", "stages", "workers", "device-unknown", "device-absent", "bf16-on-cpu"])
def test_reproduce_rejects_bad_options_before_any_work(tmp_path, fake_stages, kwargs, field):
    from qkov.core.config import ConfigError
    from qkov.study import reproduce

    kwargs = {"preset": "quick", **kwargs}
    with pytest.raises(ConfigError, match=f"^{field}: "):
        reproduce(kwargs.pop("preset"), tmp_path / "out", stages=FAKE_STAGES, **kwargs)
    assert not (tmp_path / "out").exists()


def test_device_reaches_the_runs_in_their_context_not_the_environment(tmp_path, fake_stages, monkeypatch):
    """The device and bf16 travel in the RunContext that every run receives (qkov.study.context); reproduce
    leaves os.environ as it found it."""
    import os

    from qkov.study import reproduce, reproduce_study

    seen = {}

    def fake_run(cfg, plan, data, progress, echo, ctx, heartbeat_s):
        seen.update(device=ctx.device, precision=ctx.precision, store=ctx.store)
        return "ran"

    monkeypatch.setattr(reproduce_study, "_run", fake_run)
    monkeypatch.delenv("QKOV_DEVICE", raising=False)
    before = dict(os.environ)
    assert reproduce("quick", tmp_path / "out", stages=FAKE_STAGES, device="CPU") == "ran"
    assert seen == {"device": "cpu", "precision": "float32", "store": tmp_path / "out"}
    assert dict(os.environ) == before
    seen.clear()
    reproduce("quick", tmp_path / "out", stages=FAKE_STAGES)       # not asked: auto
    assert seen["device"] == "auto"


def test_cli_device_absent_is_one_line_exit_2_with_nothing_written(tmp_path, fake_stages, capsys):
    rc = run_cli(cli, ["reproduce", "--device", "cuda:99", "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert rc == 2 and err.startswith("qkov: error: device: cuda:99: ") and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "out").exists()


def test_run_kind_not_declared_by_its_stage_is_refused(tmp_path, fake_stages):
    from qkov.core.config import ConfigError

    derive = FAKE_STAGES[0]
    narrow = engine.Stage(derive.name, derive.study_runs, derive.execute, kinds=("something-else",))
    with pytest.raises(ConfigError, match="planned run kind 'derive': stage 'derive' declares only something-else"):
        engine.plan_study(tmp_path / "out", True, None, (narrow,))


def test_the_registry_declares_each_run_kind_once():
    from qkov.study.stages import REGISTRY, RUN_KINDS, STAGE_NAMES

    kinds = [k for _, ks in REGISTRY.values() for k in ks]
    assert len(kinds) == len(set(kinds)) == len(RUN_KINDS) and STAGE_NAMES == tuple(REGISTRY)


def test_busy_out_is_refused_before_planning(tmp_path, fake_stages, monkeypatch, capsys):
    """Issue 25: the lock is taken before the study is planned (planning the real study takes seconds), so a
    second study on a busy --out is refused before any planning: the plan function is never called."""
    from qkov.study import reproduce

    out = tmp_path / "out"
    holder = subprocess.Popen([sys.executable, "-c", _HOLDER.format(root=str(ROOT), out=str(out))],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        planned = []
        monkeypatch.setattr(engine, "plan_study", lambda *a, **k: planned.append(a) or pytest.fail("planned"))
        with pytest.raises(ResultsLocked, match="qkov test-holder"):
            reproduce("quick", out, stages=FAKE_STAGES, echo=lambda *a, **k: None)
        assert run_cli(cli, ["reproduce", "--out", str(out), "--no-progress"]) == 2
        err = [x for x in capsys.readouterr().err.splitlines() if x.strip()]
        assert len(err) == 1 and err[0].startswith("qkov: error: ") and "qkov test-holder" in err[0], err
        assert planned == []
    finally:
        holder.kill()
        holder.wait()
