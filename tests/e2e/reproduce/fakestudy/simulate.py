"""Fake simulation stage: three ratios, one figure each."""

from __future__ import annotations

from pathlib import Path

from .common import behaviour, ev, numbers, write_run


def study_runs(quick, data_dir):
    return [("simulate", {"ratio": r, "seed": 0, "behaviour": behaviour()}) for r in (0.1, 1.0, 10.0)]


def execute(kind: str, config: dict, run_dir: Path, ctx: object = None) -> None:
    x = numbers(int(config["ratio"] * 10))
    write_run(kind, config, run_dir, metrics={"final_loss": abs(x[0]), "alpha": 1 / (1 + abs(x[1]))},
              claims=[ev("growth-rates", "simulate", "supports", f"slope {x[2]:.3f}", "asymptotic_errors",
                         "u/log t and v/log^2 t at t = 1e12"),
                      ev("paper-equations", "simulate", "contradicts", "off by a factor b", "asymptotic_errors"),
                      *(ev(c, "simulate", "supports", f"{c}: check {x[3]:.2f}", "asymptotic_errors")
                        for c in ("symmetric-subspace", "reduced-odes", "first-integrals", "sharpness-order"))],
              figure="asymptotic_errors")
