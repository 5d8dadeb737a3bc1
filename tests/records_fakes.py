"""Fake real-data and study runs in the run store's layout, for the record and generated-docs tests.

A fake ``validate-real`` run has what :mod:`qkov.study.real_summary` reads: config (dataset, ratio, seed),
metrics at the fixed epoch and best validation, both baselines, a checkpoint curve with test metrics, a DTAP
heatmap, resolved rates, and the test labels and predictions in ``instances.npz``; its numbers are drawn from
``seed`` and ``ratio`` so that groups, paired comparisons and verdicts have something to compute.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from qkov.core.runstore import RunWriter, run_dir_for

DATASET = "hatexplain"


def _view(rng: np.random.Generator, mass: float, acc: float) -> dict[str, Any]:
    return {"accuracy": acc, "macro_f1": acc - 0.02, "relevant_mass_mean": mass,
            "attention_confidence": mass * 0.9, "acmc": mass * 0.4, "token_f1": 0.4, "auprc": 0.6,
            "comprehensiveness_aopc": 0.3, "sufficiency_aopc": 0.1, "n_test": 60,
            "dtap_edges": [0.0, 0.5, 1.0], "dtap": rng.random((2, 2)).round(3).tolist()}


def fake_real_run(out: Path, ratio: float, seed: int, *, embedding: float = 1.0, n_items: int = 60,
                  dataset: str = DATASET) -> Path:
    """Write one complete fake ``validate-real`` run under ``out/runs/`` and return its directory."""
    rng = np.random.default_rng([int(ratio * 10), seed, int(embedding)])
    config = {"dataset": dataset, "ratio": float(ratio), "seed": seed, "optimizer": "adamw", "model": "paper",
              "quick": False, "data_dir": "/data", "epochs": 3}
    if embedding != 1.0:
        config["rates"] = {"embedding": embedding}
    gain = 0.05 * np.log(ratio) + (0.1 if embedding != 1.0 and ratio > 1 else 0.0)
    mass = 0.40 + gain + 0.01 * rng.standard_normal()
    acc = 0.62 + 0.01 * rng.standard_normal()
    losses = [1.1, 0.9, 0.7, 0.6 + 0.01 * seed]
    checkpoints = [{"step": 10 * i, "epoch": i, "train_loss": loss, "val_loss": loss + 0.1,
                    "test": {**_view(rng, mass - 0.02 * (3 - i), acc - 0.03 * (3 - i)), "n_test": 60}}
                   for i, loss in enumerate(losses)]
    uniform = _view(rng, 0.36, acc - 0.05)
    metrics = {**_view(rng, mass, acc), "dataset": dataset, "ratio": ratio, "seed": seed,
               "best_val": {**_view(rng, mass + 0.005, acc + 0.004), "checkpoint": 3, "epoch": 3,
                            "val_loss": 0.7, "step": 30, "train_loss": losses[3]},
               "baseline": {"uniform": uniform, "step0": _view(rng, 0.36, 0.33)},
               "gain_over_uniform": {"relevant_mass_mean": mass - 0.36},
               "rates": {"qk": float(ratio), "ov": 1.0, "embedding": embedding},
               "checkpoints": checkpoints, "train_loss": losses * 100,   # 400 numbers: over the record's limit
               "split": "fake"}
    labels = rng.integers(0, 3, n_items)
    pred = np.where(rng.random(n_items) < acc, labels, (labels + 1) % 3)
    run_dir = run_dir_for(out, "validate-real", config)
    with RunWriter(run_dir, kind="validate-real", config=config, seed=seed) as w:
        w.write_json("metrics.json", metrics)
        w.write_arrays("instances.npz", labels=labels, pred=pred, best_val_pred=pred)
    return run_dir


def fake_study_run(out: Path, kind: str = "figure2", value: float = 0.5) -> Path:
    """One complete fake study run of ``kind`` with a metrics file and one claims.json evidence entry."""
    config = {"param": "FACO", "steps": 100, "value": value}
    run_dir = run_dir_for(out, kind, config)
    with RunWriter(run_dir, kind=kind, config=config, seed=1) as w:
        w.write_json("metrics.json", {"distinct_attention": {"1": 0.35, "10": value}, "steps": 100,
                                      "trace": list(range(1000))})
        w.write_json("claims.json", {"evidence": [{"claim": "sharpness-ratio", "stage": "synthetic",
                                                   "verdict": "supports", "numbers": "0.35 -> 0.99", "number": "0.99",
                                                   "scope": "SGD", "text": "long"}]})
    return run_dir
