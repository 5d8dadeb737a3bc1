"""Small real runs of the study's ``figure2`` and ``adam`` kinds, and Figure 2's segmented training."""

from __future__ import annotations

import json

import numpy as np
import pytest

from qkov.core.runstore import is_complete
from qkov.study import synthetic_stage
from validation.synthetic import figure2 as f2
from validation.synthetic.adam_compare import AdamCompareConfig
from validation.synthetic.figure2 import Figure2Config

TINY = Figure2Config(param="FACO", equal_rates=(0.1, 0.1), faster_qk_rates=(2.0, 0.1), seeds=(1234, 1235), steps=40,
                     log_every=20, test_size=16, batch_size=4, segment=40, chunk=10)


def test_segments_and_a_checkpoint_resume_the_run_of_one_go(tmp_path, monkeypatch):
    whole = f2.train_figure2(TINY)
    cfg = TINY.replace(segment=20)
    ckpt = tmp_path / "ck.pt"
    calls = []
    real = f2.train_paper

    def dies_in_second_segment(*a, **kw):
        calls.append(kw.get("resume") is not None)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(*a, **kw)

    monkeypatch.setattr(f2, "train_paper", dies_in_second_segment)
    with pytest.raises(KeyboardInterrupt):
        f2.train_figure2(cfg, checkpoint=ckpt)
    assert ckpt.is_file()
    calls.clear()

    def counted(*a, **kw):
        calls.append(kw.get("resume") is not None)
        return real(*a, **kw)

    monkeypatch.setattr(f2, "train_paper", counted)
    resumed = f2.train_figure2(cfg, checkpoint=ckpt)
    assert calls == [True]                                # only the second segment, from the checkpoint
    assert not ckpt.exists()                              # removed once the run is whole
    assert resumed.steps == whole.steps == [0, 20, 40]
    np.testing.assert_array_equal(resumed.final["W_KQ"], whole.final["W_KQ"])
    for k in whole.split:
        np.testing.assert_array_equal(resumed.split[k], whole.split[k])
    # a checkpoint of another configuration is not used
    other = TINY.replace(seeds=(7,), segment=20)
    f2.train_figure2(other, checkpoint=ckpt)


def test_figure2_run_writes_a_complete_run_with_figures_and_evidence(tmp_path):
    synthetic_stage.execute("figure2", TINY.to_json_dict(), tmp_path / "run")
    run = tmp_path / "run"
    assert is_complete(run)
    assert {"figure2_dtap.png", "figure2_dtap.svg", "attention_split.png", "attention_split.svg"} <= {p.name for p in run.iterdir()}
    m = json.loads((run / "metrics.json").read_text())
    eq, fq = m["settings"]
    for s in (eq, fq):
        total = sum(s["final"][k]["mean"] for k in f2.SPLIT_PARTS)
        assert abs(total - 1) < 1e-5                        # the split is a partition of the attention
        assert s["final"]["distinct"]["min"] <= s["final"]["distinct"]["mean"] <= s["final"]["distinct"]["max"]
    (e,) = json.loads((run / "claims.json").read_text())["evidence"]
    # 40 SGD steps from 1e-6 I: the QK circuit has not left its start, so the verdict must refuse to decide
    assert e["claim"] == "sharpness-ratio" and e["verdict"] == "insufficient"


def test_adam_run_writes_a_complete_run_and_follows_the_law(tmp_path):
    # 300 Adam steps: at ratio 3 the QK gradients reach ~eps before the end (the eps floor, where 1-p stops
    # falling); the slope must be fitted before it
    cfg = AdamCompareConfig(params=("CACO",), ratios=(1.0, 3.0), steps_adam=300, steps_gd=50)
    synthetic_stage.execute("adam", cfg.to_json_dict(), tmp_path / "run")
    run = tmp_path / "run"
    assert is_complete(run) and (run / "gd_vs_adam.png").is_file()
    m = json.loads((run / "metrics.json").read_text())
    slopes = {p["ratio"]: p for p in m["pairs"]}
    assert slopes[3.0]["slope_adam"] > 2 * slopes[1.0]["slope_adam"]      # the ratio changes the exponent
    assert slopes[3.0]["loss_range"][1] > 2 * slopes[3.0]["final_loss"]     # the floor is left out
    (e,) = json.loads((run / "claims.json").read_text())["evidence"]
    assert (e["claim"], e["verdict"]) == ("adam-ratio", "supports")


def test_study_plans_the_new_kinds_and_rejects_unknown_ones(tmp_path):
    kinds = [k for k, _ in synthetic_stage.study_runs(True, None)]
    # synthetic-optimizer: Adam and momentum at K=4, M=8, and issue 31's breakdown case (optimizer_run.BREAKDOWN)
    assert kinds.count("figure2") == 4 and kinds.count("adam") == 1 and kinds.count("synthetic-optimizer") == 3
    with pytest.raises(ValueError, match="kind 'figure3'") as err:
        synthetic_stage.execute("figure3", {}, tmp_path / "x")
    assert str(err.value).endswith(" only")
    for kind in ("synthetic", *synthetic_stage.RUN_KINDS):      # the message lists every kind the stage runs
        assert f"'{kind}'" in str(err.value)
    assert not (tmp_path / "x").exists()
