"""End to end on the real data: each dataset trains and evaluates with --quick; summary, claims and CLI."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tests.cli_errors import assert_one_line_error
from qkov.core.runstore import is_complete
from qkov.cli.main import cli, run_cli
from qkov.study import real_stage as study
from qkov.study.real_summary import summarise

from .conftest import data_dir_for

CLASS_KEYS = {"accuracy", "macro_f1", "relevant_mass_mean", "attention_confidence", "acmc", "dtap",
              "comprehensiveness_aopc", "sufficiency_aopc", "token_f1", "iou_f1", "auprc"}


def quick_config(dataset: str, **over) -> dict:
    runs = [c for k, c in study.study_runs(True, data_dir_for(dataset)) if c["dataset"] == dataset]
    cfg = dict(runs[0])
    cfg.update(over)
    return cfg


@pytest.mark.parametrize("dataset, model", [("hatexplain", "small"), ("sva", "small"), ("sva", "paper")])
def test_quick_classification_run(dataset, model, tmp_path):
    over = dict(max_train=1500, epochs=3) if model == "small" else dict(max_train=600, epochs=1)
    cfg = quick_config(dataset, model=model, **over)
    if model == "paper":   # the paper's architecture and SGD settings, but a rate that moves in one epoch
        cfg.update(heads=4, d_head=64, d=64, optimizer="sgd", momentum=0.99, lr_ov=5e-3)
    study.execute(study.KIND, cfg, tmp_path / "run")
    assert is_complete(tmp_path / "run")
    m = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert CLASS_KEYS <= set(m)
    if model == "small":
        assert m["accuracy"] > 0.5   # majority class is 0.41 (HateXplain) and 0.67 (SVA) of test
    assert abs(np.sum(m["dtap"]) - 100) < 1e-6
    rec = json.loads((tmp_path / "run" / "eraser_results.jsonl").read_text().splitlines()[0])
    assert {"annotation_id", "classification", "thresholded_scores"} <= set(rec)
    # checkpoints along training: step 0 first, losses finite, the best one is a checkpoint after step 0
    cps = m["checkpoints"]
    assert cps[0]["step"] == 0 and len(cps) == 1 + cfg["epochs"] * cfg["checkpoints_per_epoch"]
    assert m["best_val"]["checkpoint"] >= 1 and m["best_val"]["val_loss"] == min(c["val_loss"] for c in cps[1:])
    # baselines: uniform attention puts mass |R|/n on the relevant words, exactly what untrained-like QK gives
    uni, step0 = m["baseline"]["uniform"], m["baseline"]["step0"]
    assert uni["relevant_mass_mean"] == pytest.approx(step0["relevant_mass_mean"], abs=0.01)
    assert m["gain_over_uniform"]["attention_confidence"] == pytest.approx(
        m["attention_confidence"] - uni["attention_confidence"])


def test_quick_squad_run(tmp_path):
    cfg = quick_config("squad", max_train=300, max_val=60, max_test=80, epochs=1)
    study.execute(study.KIND, cfg, tmp_path / "run")
    m = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert 0 <= m["exact_match"] <= m["f1"] <= 100 and 0 <= m["f1_shuffled_contexts"] <= 100
    for view in ("layer_average", "max_over_layers"):
        assert 0 <= m[view]["relevant_mass_mean"] <= 1
    # the maximum over layers is at least the layer average (per item, hence in the mean)
    assert m["max_over_layers"]["relevant_mass_mean"] >= m["layer_average"]["relevant_mass_mean"] - 1e-12
    assert {"uniform", "step0"} <= set(m["baseline"]) and "spearman_rollout_vs_grad_input" in m["faithfulness_check"]
    preds = json.loads((tmp_path / "run" / "predictions.json").read_text())
    assert len(preds) == 80


def test_study_contract(tmp_path):
    assert study.study_runs(True, None) == [] and study.skipped_runs(True, None) == [study.NO_DATA]
    lines = study.skipped_runs(True, tmp_path)
    assert len(lines) == 3 and any("dev-v1.1.json" in x for x in lines)
    d = data_dir_for("sva")
    runs = study.study_runs(True, d)
    by_ds = {c["dataset"] for _, c in runs if c["dataset"] == "sva"}
    assert by_ds == {"sva"}
    assert len([c for _, c in runs if c["dataset"] == "sva"]) == 9    # ratios 1, 10, 100 x 3 seeds
    full = [c for _, c in study.study_runs(False, d) if c["dataset"] == "sva"]
    assert len(full) == 30                                              # 6 ratios x 5 seeds
    assert {c["model"] for c in full} == {"paper"} and {c["optimizer"] for c in full} == {"sgd"}
    assert 100.0 in {c["ratio"] for c in full} and {c["momentum"] for c in full} == {0.99}


def test_summary_tables_pairs_and_claim(tmp_path):
    dirs = []
    for r in (1.0, 10.0):
        for s in (0, 1):
            cfg = quick_config("sva", ratio=r, seed=s, max_train=400, max_test=120, epochs=2, max_val=100)
            study.execute(study.KIND, cfg, tmp_path / f"r{r}-s{s}")
            dirs.append(tmp_path / f"r{r}-s{s}")
    res = summarise(dirs + [tmp_path / "not-a-run"], tmp_path / "summary")
    g = res["groups"]["sva/adamw/small/quick"]
    assert [row["ratio"] for row in g["rows"]] == [1.0, 10.0] and g["rows"][0]["n_seeds"] == 2
    p = g["paired"]["fixed_epoch"]["10"]["relevant_mass_mean"]
    m = {r: [json.loads((tmp_path / f"r{r}-s{s}" / "metrics.json").read_text())["relevant_mass_mean"]
             for s in (0, 1)] for r in (1.0, 10.0)}
    assert p["n"] == 2 and p["mean_diff"] == pytest.approx(np.mean(m[10.0]) - np.mean(m[1.0]))
    claims = json.loads((tmp_path / "summary" / "claims.json").read_text())["evidence"]
    assert [(e["claim"], e["stage"]) for e in claims] == [("real-data", "real")]
    assert claims[0]["verdict"] == res["claims"]["real-data"]["verdict"] in ("supports", "contradicts",
                                                                               "inconclusive", "insufficient")
    assert {"uniform", "step0"} == set(g["baseline"]) and g["best_val"]["rows"] and "levels" in g["matched_loss"]
    # every test of the one Holm table carries its adjusted p, never below the raw p
    assert res["tests"] and all(t["p_holm"] >= t["t_p"] - 1e-12 for t in res["tests"] if np.isfinite(t["t_p"]))
    assert (tmp_path / "summary" / "dtap_sva_adamw_small_quick_r10.png").is_file() and is_complete(tmp_path / "summary")


def test_cli_errors_are_one_line_exit_2(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("QKOV_DATA_DIR", raising=False)
    assert run_cli(cli, ["validate", "real", "--dataset", "sva", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "no data directory" in err
    assert_one_line_error(err, "data-dir")
    assert not (tmp_path / "runs").exists()
    assert run_cli(cli, ["validate", "real", "--dataset", "imdb", "--data-dir", str(tmp_path)]) == 2
    assert_one_line_error(capsys.readouterr().err, "dataset")
    assert run_cli(cli, ["validate", "real", "--dataset", "sva", "--ratios", "1,-2",
                         "--data-dir", str(tmp_path)]) == 2
    assert run_cli(cli, ["validate", "real", "--dataset", "sva", "--data-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and "wiki-dev.txt" in err[-1]


def _tiny(default_config):
    def tiny(*a, **k):
        k.update(max_train=300, max_val=60, max_test=100, epochs=2)
        return default_config(*a, **k)
    return tiny


def test_cli_quick_sweep_json(tmp_path, capsys, monkeypatch):
    d = data_dir_for("sva")
    args = ["validate", "real", "--dataset", "sva", "--quick", "--ratios", "1,5", "--seeds", "0,1",
            "--json", "--out", str(tmp_path), "--data-dir", str(d)]
    monkeypatch.setattr(study, "default_config", _tiny(study.default_config))
    assert run_cli(cli, args) == 0
    out = json.loads(capsys.readouterr().out)
    assert len(out["runs"]) == 4 and all(is_complete(r) for r in out["runs"])
    assert "real-data" in out["claims"] and is_complete(out["summary_dir"])
    g = out["groups"]["sva/adamw/small/quick"]
    assert {"uniform", "step0"} == set(g["baseline"]) and "matched_loss" in g and "best_val" in g
    assert out["tests"] and "p_holm" in out["tests"][0]
    # a second call reuses the complete runs
    mtimes = [Path(r, "COMPLETE").stat().st_mtime for r in out["runs"]]
    assert run_cli(cli, args) == 0
    assert mtimes == [Path(r, "COMPLETE").stat().st_mtime for r in out["runs"]]


def test_cli_param_and_layers_reach_the_runs(tmp_path, capsys, monkeypatch):
    d = data_dir_for("sva")
    monkeypatch.setattr(study, "default_config", _tiny(study.default_config))
    args = ["validate", "real", "--dataset", "sva", "--quick", "--ratios", "1", "--seeds", "0", "--param", "FAFO",
            "--layers", "2", "--json", "--out", str(tmp_path), "--data-dir", str(d)]
    assert run_cli(cli, args) == 0
    out = json.loads(capsys.readouterr().out)
    cfg = json.loads(Path(out["runs"][0], "config.json").read_text())
    assert (cfg["param"], cfg["layers"]) == ("FAFO", 2)
    assert run_cli(cli, args[:-4] + ["--param", "XX", "--data-dir", str(d)]) == 2
    assert_one_line_error(capsys.readouterr().err, "param")
