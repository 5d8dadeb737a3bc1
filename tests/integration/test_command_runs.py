"""``qkov simulate --save`` and ``qkov derive`` plan and execute their run through the study engine
(:func:`qkov.study.command_run.run_command`): the run directory is the one the engine plans, a complete run
of the same config is reused (nothing computed again), ``derive --no-cache`` rewrites it, and a stage's bad
input is still one ``ConfigError`` line with nothing complete left behind."""

import json

import pytest

from qkov.core.config import ConfigError
from qkov.core.runstore import config_key, is_complete, load_run
from qkov.core.simulate_config import parse_simulate_config

pytestmark = pytest.mark.integration


def _cfg(**kw):
    return parse_simulate_config(params=("CACO", "FAFO"), K=4, M=3, t=(1.0, 10.0), **kw)


def test_simulate_save_runs_through_the_engine_and_reuses_a_complete_run(tmp_path, monkeypatch):
    from qkov.study import simulate_command
    from qkov.study.simulate_command import run_config, simulate

    cfg = _cfg()
    here = simulate(cfg)
    saved = simulate(cfg, save_to=tmp_path)
    # the engine's directory for (kind, config); what is returned is read back from it, equal to the computation
    assert saved.run_dir == tmp_path / "runs" / f"simulate-{config_key('simulate', run_config(cfg, False))}"
    assert is_complete(saved.run_dir) and not saved.reused
    assert [r.as_json() for r in saved.runs] == [r.as_json() for r in here.runs]
    assert load_run(saved.run_dir).json["runs.json"]["runs"] == [r.as_json() for r in here.runs]

    calls = []
    real = simulate_command.run_simulation
    monkeypatch.setattr(simulate_command, "run_simulation", lambda c: calls.append(c) or real(c))
    again = simulate(cfg, save_to=tmp_path)
    assert again.reused and again.run_dir == saved.run_dir and calls == []  # nothing integrated again
    assert [r.as_json() for r in again.runs] == [r.as_json() for r in here.runs]
    other = simulate(_cfg(eta_qk=3.0), save_to=tmp_path)  # another config: another run, computed
    assert not other.reused and other.run_dir != saved.run_dir and len(calls) == 1


def test_simulate_plot_is_part_of_the_run_config(tmp_path):
    from qkov.study.simulate_command import run_config

    cfg = _cfg()
    assert "plots" not in run_config(cfg, False) and run_config(cfg, True)["plots"] is True
    assert config_key("simulate", run_config(cfg, False)) != config_key("simulate", run_config(cfg, True))


def test_unreachable_time_inside_the_engine_is_one_config_error_line_and_no_run(tmp_path, monkeypatch):
    from qkov.study import simulate_command

    def step_cap(cfg):
        raise RuntimeError("step cap reached")

    monkeypatch.setattr(simulate_command, "run_simulation", step_cap)
    with pytest.raises(ConfigError) as err:
        simulate_command.simulate(_cfg(), save_to=tmp_path)
    msg = str(err.value)
    assert msg.startswith("t: 10: not reached") and "\n" not in msg
    assert not any(is_complete(p) for p in (tmp_path / "runs").iterdir())


def test_derive_reuses_a_complete_run_and_no_cache_rewrites_it(tmp_path, monkeypatch):
    from qkov.study import derive_command
    from qkov.study.derive_command import DeriveConfig, derive

    cfg = DeriveConfig(params=("CACO",), formats=("md",))
    first = derive(cfg, tmp_path)
    assert not first.reused and is_complete(first.run_dir) and first.reports == (first.run_dir / "report.md",)
    assert first.run_dir.name == f"derive-{config_key('derive', cfg.to_json_dict())}"
    started = json.loads((first.run_dir / "manifest.json").read_text())["started"]

    calls = []
    real = derive_command.derivation_payload
    monkeypatch.setattr(derive_command, "derivation_payload", lambda c, u=True: calls.append(u) or real(c, u))
    again = derive(cfg, tmp_path)
    assert again.reused and again.run_dir == first.run_dir and calls == []
    assert again.payload == first.payload

    redone = derive(cfg, tmp_path, use_cache=False)
    assert not redone.reused and calls == [False] and is_complete(redone.run_dir)
    assert redone.run_dir == first.run_dir
    assert json.loads((redone.run_dir / "manifest.json").read_text())["started"] >= started


def test_simulate_save_in_process_and_on_dask_write_the_same_run(tmp_path):
    """The engine's executors are interchangeable for `simulate --save`: the same directory name, files and
    numbers (float64 integration, deterministic: equal to 1e-12 relative)."""
    from qkov.study import engine
    from qkov.study.simulate_command import simulate
    import numpy as np

    cfg = _cfg()
    here = simulate(cfg, save_to=tmp_path / "here", executor=engine.IN_PROCESS)
    with engine.StudyCluster(workers=1, processes=False) as client:   # Dask: 1 worker, threads of this process
        there = simulate(cfg, save_to=tmp_path / "dask", executor=client)
    assert here.run_dir.name == there.run_dir.name and not there.reused
    a, b = load_run(here.run_dir), load_run(there.run_dir)
    assert a.files == b.files and a.config == b.config and a.json["runs.json"] == b.json["runs.json"]
    arrays = a.arrays["trajectories.npz"]
    assert arrays.keys() == b.arrays["trajectories.npz"].keys()
    for k, v in arrays.items():
        np.testing.assert_allclose(b.arrays["trajectories.npz"][k], v, rtol=1e-12, atol=0)
    assert [r.as_json() for r in here.runs] == [r.as_json() for r in there.runs]
