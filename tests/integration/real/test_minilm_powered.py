"""``--preset powered`` (issue 32, MiniLM with power): the full HateXplain splits, a usual fine-tuning rate with
warm-up and decay, ratios 1, 3, 10, the derived 11 seeds, recorded in each run's config; bad values refused
with one line and exit 2 before any work."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from qkov.study.real_stage import sweep_configs
from qkov.study.real_summary import group_runs
from validation.real import powered
from validation.real.config import claim_ratio, default_config, group_rates
from validation.real.official import PRESET_REGISTRY


def cfg(ratio: float = 10.0, **kw):
    return default_config("hatexplain", ratio=ratio, seed=0, quick=False, data_dir="/nonexistent", preset="powered",
                          **kw)


def test_powered_preset_is_the_full_split_at_a_usual_fine_tuning_rate():
    c = cfg()
    # the full splits: nothing subsampled
    assert (c.max_train, c.max_val, c.max_test) == (None, None, None)
    # MiniLM, AdamW at a usual BERT fine-tuning rate (2e-5 .. 5e-5) for OV and every other group
    assert (c.model, c.optimizer) == ("minilm", "adamw") and 2e-5 <= c.lr_ov <= 5e-5
    assert c.lr_other is None and c.recipe == "ratio-only" and not c.rates
    rates = group_rates(c)
    assert rates.pop("qk") == 10.0 and set(rates.values()) == {1.0}
    assert c.eta_qk == pytest.approx(10 * c.lr_ov) and c.eta_qk <= 5e-4      # not the quick runs' 3e-3
    # linear warm-up over 10 % of the steps, then decay (cosine to 0), several epochs and checkpoints
    assert (c.schedule, c.warmup) == ("cosine", 0.1) and c.epochs >= 2 and c.checkpoints_per_epoch >= 2
    assert c.weight_decay == 0.01 and not c.quick
    # every post whole: the longest HateXplain test post is 91 word pieces with [CLS] and [SEP]
    assert c.max_len >= 91
    # recorded in the run's config (its key), so powered runs never share a group with sized ones
    assert c.to_json_dict()["preset"] == "powered"


def test_warm_up_then_decay_over_the_powered_run():
    from validation.real.training import lr_factor

    c = cfg()
    total = c.epochs * -(-15383 // c.batch_size)      # 3 epochs of 481 steps over the 15,383 training posts
    w = round(c.warmup * total)
    assert lr_factor(0, total, c.schedule, c.warmup) == pytest.approx(1 / w)
    assert lr_factor(w - 1, total, c.schedule, c.warmup) == pytest.approx(1.0)
    assert lr_factor(total - 1, total, c.schedule, c.warmup) < 1e-4               # decayed to ~0


def test_powered_sweep_is_ratios_1_3_10_times_the_derived_seeds(tmp_path):
    runs = sweep_configs(("hatexplain",), None, None, None, False, tmp_path, preset="powered")
    assert sorted({r.ratio for r in runs}) == [1.0, 3.0, 10.0] == list(powered.POWERED_RATIOS)
    assert sorted({r.seed for r in runs}) == list(range(11)) and len(runs) == 33
    assert {r.preset for r in runs} == {"powered"} and {r.model for r in runs} == {"minilm"}
    # the pre-declared comparison is 10 vs 1 (a ratio of the sweep), not HateXplain's paper ratio 30
    assert claim_ratio("hatexplain", "powered") == 10.0 and claim_ratio("hatexplain") == 30.0
    # --ratios / --seeds still replace the preset's
    assert len(sweep_configs(("hatexplain",), (1.0, 10.0), (0,), None, False, tmp_path, preset="powered")) == 2


def test_one_registry_entry_per_preset():
    assert list(PRESET_REGISTRY) == ["sized", "official", "powered"]
    entry = PRESET_REGISTRY["powered"]
    assert entry.settings("hatexplain") == powered.POWERED_SETTINGS and entry.seeds() == tuple(range(11))
    assert PRESET_REGISTRY["sized"].settings("hatexplain") == {}


def test_powered_and_sized_runs_are_two_groups(tmp_path):
    def run(preset):
        kw = {"preset": "powered"} if preset == "powered" else {"model": "minilm"}
        c = default_config("hatexplain", ratio=10.0, seed=0, quick=False, data_dir=str(tmp_path), **kw)
        return {"dir": tmp_path / preset, "config": c.to_json_dict(),
                "metrics": {"accuracy": 0.6, "relevant_mass_mean": 0.4}, "arrays": {}}

    grouped, conflicts = group_runs([run("sized"), run("powered")])
    assert len(grouped) == 2 and not any(conflicts.values())
    assert any(name.endswith("/preset=powered") for name in grouped)


@pytest.mark.parametrize("args, line", [
    (["--dataset", "hatexplain", "--quick", "--preset", "powered"],
     "preset: powered: the powered settings are the full-size minilm model with adamw (got model minilm, "
     "optimizer adamw, --quick)"),
    (["--dataset", "hatexplain", "--model", "paper", "--preset", "powered"], "(got model paper, optimizer adamw)"),
    (["--dataset", "hatexplain", "--optimizer", "sgd", "--preset", "powered"], "(got model minilm, optimizer sgd)"),
    (["--dataset", "sva", "--preset", "powered"], "preset: powered: no powered settings for sva (offered: hatexplain"),
    (["--dataset", "hatexplain", "--preset", "powerd"], "preset: powerd: must be one of sized, official, powered")])
def test_cli_bad_powered_values_exit_2_nothing_written(tmp_path, capsys, args, line):
    from qkov.cli.main import cli, run_cli

    out = tmp_path / "o"
    rc = run_cli(cli, ["validate", "real", "--data-dir", str(tmp_path), "--out", str(out), *args])
    err = capsys.readouterr().err
    assert rc == 2 and line in err and err.count("\n") == 1 and not out.exists()


DATA = os.environ.get("QKOV_DATA_DIR")


@pytest.mark.skipif(not DATA or not (Path(DATA) / "hatexplain").is_dir(), reason="needs HateXplain in $QKOV_DATA_DIR")
def test_powered_runs_read_every_post_of_the_splits():
    from validation.real.run import _split_items

    c = default_config("hatexplain", ratio=1.0, seed=0, quick=False, data_dir=str(DATA), preset="powered")
    splits, train, val, test = _split_items(c)
    assert (len(train), len(val), len(test)) == (15383, 1922, 1924)
    assert sum(1 for ex in test if ex.relevant is not None and any(ex.relevant)) == 1142   # all annotated posts


def test_a_powered_summary_reads_ratio_10_against_1(tmp_path):
    """The verdict's primary comparison of a powered group is the preset's claim ratio 10 (HateXplain's paper ratio
    30 is not in the sweep: reading it would leave the verdict with no comparison)."""
    import numpy as np

    from qkov.study.real_summary import judge, summarise_groups

    def run(ratio, seed, mass, acc):
        c = default_config("hatexplain", ratio=ratio, seed=seed, quick=False, data_dir=str(tmp_path), preset="powered")
        cps = [{"step": i, "epoch": i / 4, "train_loss": x, "val_loss": x,
                "test": {"relevant_mass_mean": mass * i / 4, "accuracy": acc * i / 4}}
               for i, x in enumerate([1.0, 0.7, 0.5, 0.4, 0.45])]
        best = {"accuracy": acc, "relevant_mass_mean": mass, "checkpoint": 3, "epoch": 0.75, "val_loss": 0.4}
        uni = {"relevant_mass_mean": 0.3, "accuracy": 0.5}
        m = {"accuracy": acc, "relevant_mass_mean": mass, "checkpoints": cps, "best_val": best,
             "baseline": {"uniform": uni, "step0": uni}}
        return {"dir": tmp_path / f"r{ratio:g}s{seed}", "config": c.to_json_dict(), "metrics": m,
                "arrays": {"labels": np.array([0, 1, 1, 0, 1])}}

    runs = [run(r, s, 0.40 + 0.01 * s + (0.12 + 0.03 * s if r == 10.0 else 0.0), 0.62 + 0.005 * s)
            for r in (1.0, 3.0, 10.0) for s in range(3)]
    groups = summarise_groups(runs)
    (g,) = groups.values()
    assert g["claim_ratio"] == 10.0
    claim = judge(groups)
    assert "ratio 10 vs 1 at best_val" in claim["evidence"] and "n=3" in claim["evidence"], claim["evidence"]


def test_powered_optimizer_groups_on_the_pretrained_model():
    """On the real all-MiniLM-L6-v2 (the pretrained extra): W_Q, W_K of the 6 layers at 10 x 3e-5, every other
    parameter at 3e-5, weight decay 0.01 everywhere; the first step's rate is the warm-up's 1/144 of it."""
    pre = pytest.importorskip("validation.real.pretrained")
    try:
        model_dir = pre.minilm_dir()
    except pre.PretrainedUnavailable as exc:   # pragma: no cover - depends on the environment
        pytest.skip(f"the pretrained extra is not installed: {exc}")
    import torch

    from validation.real.examples import ClassExample
    from validation.real.training import build_optimizer, lr_factor
    from transformers import BertTokenizerFast

    posts = [ClassExample("a", ("you", "are", "stupid"), 0, (0, 0, 1))]
    table = pre.encode_pieces(posts, BertTokenizerFast.from_pretrained(str(model_dir)), 8)
    torch.manual_seed(0)
    model = pre.MiniLMClassifier(3, table, model_dir)
    c = cfg(10.0)
    opt = build_optimizer(model, c)
    lrs = {g["circuit"]: g["lr"] for g in opt.param_groups}
    assert lrs.pop("qk") == pytest.approx(3e-4) and all(v == pytest.approx(3e-5) for v in lrs.values())
    assert set(lrs) == {"ov", "embedding", "bias", "mlp", "other"}
    assert {g["weight_decay"] for g in opt.param_groups} == {0.01}
    qk = {id(p) for g in opt.param_groups if g["circuit"] == "qk" for p in g["params"]}
    assert qk == {id(p) for p in model.qk_parameters()} and len(qk) == 24     # W_Q, W_K and biases, 6 layers
    assert sum(len(g["params"]) for g in opt.param_groups) == len(list(model.parameters()))
    total = c.epochs * -(-15383 // c.batch_size)
    assert lr_factor(0, total, c.schedule, c.warmup) * lrs["ov"] == pytest.approx(3e-5 / 144)
