"""``qkov validate real`` runs through the study engine: in process and on a Dask cluster it writes the same runs.

A tiny SVA sweep (2 runs, 300 training sentences, 2 epochs) is planned and executed twice, once with the
in-process executor and once on a ``LocalCluster`` (1 worker, threads of this process), into two results
directories; the run directories must have the same names, the same ``COMPLETE`` file lists and the same
metrics (each run is seeded and trains with one torch thread on the CPU in both, so the numbers agree to
1e-9 relative; the manifests' clocks and the timing entries differ and are not compared).
"""

from __future__ import annotations

from pathlib import Path

from qkov.study import engine, real_stage
from qkov.study.real_command import RealSweep, validate_real

from tests.engine_compare import assert_same_runs

from .conftest import data_dir_for

def _tiny(default_config):
    def tiny(*a, **k):
        k.update(max_train=300, max_val=60, max_test=100, epochs=2)
        return default_config(*a, **k)
    return tiny


def test_in_process_and_dask_write_the_same_runs(tmp_path, monkeypatch):
    data = data_dir_for("sva")
    monkeypatch.setattr(real_stage, "default_config", _tiny(real_stage.default_config))
    sweep = RealSweep(datasets=("sva",), ratios=(1.0, 5.0), seeds=(0,), quick=True, device="cpu")
    here = validate_real(sweep, tmp_path / "here", data_dir=data, progress=False, executor=engine.IN_PROCESS)
    with engine.StudyCluster(workers=1, processes=False) as client:   # Dask: 1 worker, threads of this process
        there = validate_real(sweep, tmp_path / "dask", data_dir=data, progress=False, executor=client)
    assert len(here.run_dirs) == 2 and len(here.executed) == 2 and len(there.executed) == 2
    assert_same_runs(here.run_dirs, there.run_dirs, rel=1e-9)
    assert here.summary_dir.name == there.summary_dir.name
    assert here.summary["claims"] == there.summary["claims"]
    again = validate_real(sweep, tmp_path / "here", data_dir=data, progress=False)   # complete runs are reused
    assert again.executed == () and len(again.reused) == 2


def test_stacked_runs_execute_as_one_task(tmp_path, monkeypatch):
    """--stacked: the runs of one configuration are one engine task (Stage.execute_group), each in its own directory."""
    data = data_dir_for("sva")
    monkeypatch.setattr(real_stage, "default_config", _tiny(real_stage.default_config))
    calls = []
    real_group = real_stage.execute_group

    def spy(kind, configs, run_dirs, ctx):
        calls.append(len(configs))
        real_group(kind, configs, run_dirs, ctx)

    monkeypatch.setattr(real_stage, "execute_group", spy)
    sweep = RealSweep(datasets=("sva",), ratios=(1.0, 5.0), seeds=(0,), quick=True, device="cpu", stacked=True)
    res = validate_real(sweep, tmp_path / "out", data_dir=data, progress=False)
    assert calls == [2] and len(res.executed) == 2
    assert all((Path(d) / "COMPLETE").is_file() for d in res.run_dirs)
