"""``qkov validate synthetic`` runs through the study engine: in process and on a Dask cluster (1 worker, threads
of this process) it writes the same run. The training is seeded, float64 and single-threaded in both (the
engine's RunContext sets one torch thread for the run), so the metrics agree to 1e-9 relative."""

from __future__ import annotations

from qkov.study import engine
from qkov.study.synthetic_command import build_config, validate_optimizer_map, validate_synthetic
from tests.engine_compare import assert_same_runs


def test_in_process_and_dask_write_the_same_run(tmp_path):
    cfg = build_config(("CACO", "FAFO"), (1.0, 5.0), "population", "gd", 60, None, None, 0, 3, 2)
    here = validate_synthetic(cfg, tmp_path / "here", progress=False, executor=engine.IN_PROCESS)
    with engine.StudyCluster(workers=1, processes=False) as client:   # Dask: 1 worker, threads of this process
        there = validate_synthetic(cfg, tmp_path / "dask", progress=False, executor=client)
        opt_there, _ = validate_optimizer_map(("CACO",), (1.0, 4.0), "population", "adam", 100, None, None, 0, 3, 2,
                                              tmp_path / "dask", (0.9, 0.999), 1e-8, 0.0, executor=client)
    assert here.run_dir.parent == tmp_path / "here" / "runs"
    assert_same_runs([here.run_dir], [there.run_dir], rel=1e-9)
    assert [e.to_json() for e in here.evidence] == [e.to_json() for e in there.evidence]
    opt_here, _ = validate_optimizer_map(("CACO",), (1.0, 4.0), "population", "adam", 100, None, None, 0, 3, 2,
                                         tmp_path / "here", (0.9, 0.999), 1e-8, 0.0)
    assert_same_runs([opt_here], [opt_there], rel=1e-9)


def test_cli_workers_option_runs_on_a_local_dask_cluster(tmp_path, capsys):
    """``qkov validate synthetic --workers 1``: the run executes in a Dask worker process (engine.StudyCluster) and
    is the same directory, files and metrics as the in-process one."""
    import json

    from qkov.cli.main import cli, run_cli

    args = ["validate", "synthetic", "--param", "CACO", "--ratios", "1,5", "--steps", "40", "--K", "3", "--M", "2",
            "--json"]
    assert run_cli(cli, args + ["--out", str(tmp_path / "here")]) == 0
    here = json.loads(capsys.readouterr().out)["run_dir"]
    assert run_cli(cli, args + ["--out", str(tmp_path / "dask"), "--workers", "1"]) == 0
    there = json.loads(capsys.readouterr().out)["run_dir"]
    assert_same_runs([here], [there], rel=1e-9)
