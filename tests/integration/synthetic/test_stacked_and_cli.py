"""Stacked (vmapped) training equals the per-model loop; the CLI and the study stage."""

import json

import pytest

from qkov.core.config import parse_config
import torch

from qkov.core.runstore import is_complete
from qkov.cli.main import cli, run_cli
from qkov.study import synthetic_stage as study
from validation.synthetic.experiment import SyntheticConfig
from validation.synthetic.stacked import train_loop, train_stacked
from tests.cli_errors import assert_one_line_error


@pytest.mark.parametrize("param", ["CACO", "FAFO"])
def test_stacked_equals_loop(param):
    a = train_stacked(param, 3, 2, [1.0, 4.0], [0, 1], 25, init_std=0.3)
    b = train_loop(param, 3, 2, [1.0, 4.0], [0, 1], 25, init_std=0.3)
    for n in a.params:
        assert torch.allclose(a.params[n], b.params[n], atol=1e-12, rtol=0)
    assert torch.allclose(a.losses, b.losses, atol=1e-12)
    assert not torch.allclose(a.params[n][0], a.params[n][2])   # ratios differ -> models differ


def test_cli_writes_a_complete_run(tmp_path, capsys):
    rc = run_cli(cli, ["validate", "synthetic", "--param", "CACO,FAFO", "--ratios", "1,5", "--steps", "60",
                       "--json", "--out", str(tmp_path)])
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    run_dir = out["run_dir"]
    assert is_complete(run_dir)
    assert {e["claim"]: e["verdict"] for e in out["claims"]}["fixed-lines"] == "supports"
    assert len(out["pairs"]) == 4


@pytest.mark.parametrize("args,field", [(["--ratios", "1,x"], "ratios"), (["--param", "XYZ"], "param"),
                                        (["--data", "sampled", "--init", "symmetric"], "init")])
def test_cli_bad_values_exit_2(tmp_path, capsys, args, field):
    assert run_cli(cli, ["validate", "synthetic", "--out", str(tmp_path), *args]) == 2
    assert_one_line_error(capsys.readouterr().err, field)
    assert not any(tmp_path.iterdir())


def test_study_runs_parse_and_one_executes(tmp_path):
    runs = study.study_runs(True, None)
    assert {k for k, _ in runs} == {"synthetic", "figure2", "adam", "synthetic-optimizer"}  # the others: their own tests
    runs = [(k, c) for k, c in runs if k == "synthetic"]
    cfgs = [parse_config(SyntheticConfig, **c) for _, c in runs]
    assert {c.data for c in cfgs} == {"population", "sampled", "paper"}
    small = cfgs[3].replace(steps=20, log_every=10, params=("CACO",), test_size=50)
    study.execute("synthetic", small.to_json_dict(), tmp_path / "run")
    assert is_complete(tmp_path / "run")
    assert json.loads((tmp_path / "run" / "claims.json").read_text())["evidence"]
