"""``--fused-adamw`` (issue 34): AdamW's fused kernel as an option, off by default, recorded in the run's config."""

from __future__ import annotations

import pytest
import torch

from qkov.cli.main import cli, run_cli
from qkov.study.real_command import RealSweep
from tests.cli_errors import assert_one_line_error
from validation.real.config import RealRunConfig, default_config
from validation.real.models import AttentionClassifier
from validation.real.training import build_optimizer


def _step(fused: bool) -> list[torch.Tensor]:
    cfg = default_config("sva", ratio=5.0, seed=0, quick=True, data_dir="/x", fused=fused, weight_decay=0.01)
    torch.manual_seed(0)
    model = AttentionClassifier(30, 2, d=8, max_len=12)
    opt = build_optimizer(model, cfg)
    assert bool(opt.defaults.get("fused")) is fused
    ids = torch.randint(1, 30, (6, 12))
    for _ in range(3):
        logits, _ = model(ids, torch.ones(6, 12, dtype=torch.bool), torch.zeros(6, dtype=torch.long))
        opt.zero_grad()
        torch.nn.functional.cross_entropy(logits, torch.tensor([0, 1] * 3)).backward()
        opt.step()
    return [p.detach().clone() for p in model.parameters()]


def test_fused_adamw_is_the_same_update_to_rounding():
    plain, fused = _step(False), _step(True)
    for a, b in zip(plain, fused):
        # the fused kernel evaluates the same update in another order: float32 rounding, not another method
        torch.testing.assert_close(b, a, rtol=1e-5, atol=1e-6)


def test_fused_is_in_the_config_only_when_on_and_only_for_adamw():
    base = dict(ratio=5.0, seed=0, quick=True, data_dir="/x")
    assert "fused" not in default_config("sva", **base).to_json_dict()        # earlier runs keep their keys
    assert default_config("sva", **base, fused=True).to_json_dict()["fused"] is True
    with pytest.raises(ValueError, match="fused"):
        RealRunConfig(dataset="sva", data_dir="/x", optimizer="sgd", fused=True)
    assert "fused" not in default_config("sva", **base, optimizer="sgd", fused=True).to_json_dict()  # AdamW runs only
    assert RealSweep(datasets=("sva",), fused=True).overrides()["fused"] is True
    assert "fused" not in RealSweep(datasets=("sva",)).overrides()


def test_stacked_with_fused_adamw_is_one_line_exit_2(tmp_path, capsys):
    args = ["validate", "real", "--dataset", "sva", "--quick", "--stacked", "--fused-adamw", "--device", "cpu",
            "--data-dir", str(tmp_path), "--out", str(tmp_path / "out")]
    assert run_cli(cli, args) == 2
    assert_one_line_error(capsys.readouterr().err, "stacked")
    assert not (tmp_path / "out").exists()
