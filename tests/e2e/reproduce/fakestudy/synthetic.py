"""Fake synthetic-training stage: two ratios x two seeds; a DTAP heatmap each."""

from __future__ import annotations

from pathlib import Path

from .common import behaviour, ev, numbers, write_run


def study_runs(quick, data_dir):
    b = behaviour()
    runs = []
    for i, (ratio, seed) in enumerate((r, s) for r in (1.0, 10.0) for s in (1234, 1235)):
        cfg = {"ratio": ratio, "seed": seed, "behaviour": b}
        if i == 0 and b["kill"]:
            cfg["kill_me"] = True
        if i == 0 and b["fail"]:
            cfg["fail_me"] = True
        runs.append(("synthetic", cfg))
    return runs


def execute(kind: str, config: dict, run_dir: Path, ctx: object = None) -> None:
    x = numbers(config["seed"])
    write_run(kind, config, run_dir, metrics={"loss": abs(x[0]), "attention": {"distinct": 0.5 + x[1] / 10}},
              claims=[ev("sharpness-ratio", "synthetic", "supports", f"attention {0.5 + x[1] / 10:.3f}",
                         f"dtap_ratio{config['ratio']:g}"),
                      ev("fixed-lines", "synthetic", "supports" if config["ratio"] > 1 else "insufficient",
                         "spread 1e-12", f"dtap_ratio{config['ratio']:g}"),
                      ev("rescaling", "synthetic", "supports", "rho_OV = 2u to 1e-6", f"dtap_ratio{config['ratio']:g}"),
                      ev("adam-ratio", "synthetic", "supports", "slope 2.74 against the law's 2.75",
                         f"dtap_ratio{config['ratio']:g}")],
              figure=f"dtap_ratio{config['ratio']:g}")
