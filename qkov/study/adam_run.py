"""Study runs of kind ``adam``: GD against Adam(0, 0, eps) at matched loss, and the ``adam-ratio`` evidence.

:class:`validation.synthetic.adam_compare.AdamCompareConfig` trains each (param, ratio) from MODEL.md's
symmetric start under GD and under Adam and evaluates the derived sign-descent law from the same start;
the run writes ``metrics.json`` (per pair: the fitted slopes d log(1-p) / d log L of Adam, of the law at the
same losses and of GD), the figure ``gd_vs_adam`` and ``claims.json`` (:func:`evidence`).
"""

from __future__ import annotations

import pathlib
from typing import Any

import numpy as np

from qkov.core.config import parse_config
from qkov.study.claims import Evidence, judge_fraction, write_evidence
from qkov.core.runstore import RunWriter
from validation.synthetic.experiment import torch_threads
from validation.synthetic.adam_compare import AdamCompareConfig, residual_vs_loss_figure, slope_summary

KIND = "adam"
STAGE = "synthetic"
FIGURE = "gd_vs_adam"
SLOPE_TOL = 0.05
"""Relative tolerance of Adam's slope against the law's over the same losses. Inside the sign regime
(|g| >= 100 eps at every usable point) Adam(0, 0) moves each entry by eta g/(|g|+eps), within 1% of sign
descent's +-eta, and sign descent moves every entry at a constant rate, so its Euler steps are exact: the slope
can differ from the law's by about 1%, and 5% leaves room for the estimate of |g| on factorized QK circuits,
not for another exponent (a ratio of 3 against 1 changes the slope 4-8x)."""
MIN_POINTS = 3
MIN_DECADES = 0.3
"""Fewer usable points, or a usable loss range narrower than this (in decades), cannot fix a slope."""


def study_configs(quick: bool) -> list[AdamCompareConfig]:
    """Quick: CACO and FAFO at ratios 1 and 3, 300 Adam and 500 GD steps (seconds). Full: the docs' run."""
    if quick:
        return [AdamCompareConfig(ratios=(1.0, 3.0), steps_adam=300, steps_gd=500)]
    return [AdamCompareConfig(ratios=(1.0, 3.0, 10.0), steps_adam=600, steps_gd=1500)]


def pair_verdict(s: dict[str, Any]) -> str:
    """``supports`` / ``contradicts`` / ``insufficient`` of one pair's slope summary (:func:`slope_summary`)."""
    a, law, rng = s.get("slope_adam"), s.get("slope_law"), s.get("loss_range")
    if (a is None or law is None or not rng or s.get("n_usable", 0) < MIN_POINTS
            or np.log10(rng[0] / rng[1]) < MIN_DECADES or law == 0):
        return "insufficient"
    return "supports" if abs(a / law - 1) <= SLOPE_TOL else "contradicts"


def _fmt(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.2f}"


def evidence(cfg: AdamCompareConfig, slopes: list[dict[str, Any]]) -> list[Evidence]:
    """``adam-ratio`` (synthetic stage): per (param, ratio), Adam's slope d log(1-p)/d log L against the law's over
    the losses before the eps floor; :func:`judge_fraction` over the pairs that could be judged."""
    verdicts = [pair_verdict(s) for s in slopes]
    judged = [v for v in verdicts if v != "insufficient"]
    hits = sum(v == "supports" for v in judged)
    parts = []
    for s, v in zip(slopes, verdicts):
        asym = s.get("asymptotic_exponent")
        rng = s.get("loss_range")
        parts.append(f"{s['param']} r={s['ratio']:g}: Adam {_fmt(s.get('slope_adam'))}, law {_fmt(s.get('slope_law'))}"
                     f" (L -> 0: {'n/a' if asym is None else f'{asym:g}'}), GD {_fmt(s.get('slope_gd'))}"
                     + (f", L {rng[0]:.2g}..{rng[1]:.2g}" if rng else ", no usable loss")
                     + ("" if v != "insufficient" else ", not judged"))
    verdict = judge_fraction(hits, len(judged))
    numbers = (f"slope d log(1-p)/d log L before the eps floor (eps {cfg.eps:g}): {hits}/{len(judged)} pairs within "
               f"{SLOPE_TOL:.0%} of the derived sign-descent law; " + "; ".join(parts))
    return [Evidence("adam-ratio", STAGE, verdict, numbers, FIGURE,
                     "Under Adam the slope of log(1-p) against log L at matched loss should follow the derived "
                     "sign-descent law, whose exponent grows with the ratio (r for CACO, r^2/2 for FAFO as L -> 0), "
                     "while under GD the ratio only divides 1-p. Only logged states whose smallest QK-entry gradient "
                     "is >= 100 eps count (before the eps floor); the law's slope is fitted at the same losses.")]


def execute(config: dict, run_dir: pathlib.Path) -> dict[str, Any]:
    """Train one ``adam`` run and write it into ``run_dir``."""
    cfg = parse_config(AdamCompareConfig, **config)
    with torch_threads(1):
        data = cfg.data()
    slopes = [slope_summary(data["runs"][(p, r)], p, r, eps=cfg.eps, K=cfg.K, M=cfg.M)
              for p in cfg.params for r in cfg.ratios]
    arrays = {f"{p}_r{r:g}_{opt}_{k}": v for (p, r), run in data["runs"].items() for opt in ("gd", "adam")
              for k, v in run[opt].cols.items()}
    arrays |= {f"{p}_r{r:g}_law_{k}": v for (p, r), run in data["runs"].items() for k, v in run["law"].items()}
    with RunWriter(run_dir, kind=KIND, config=config, seed=cfg.seed) as run:
        run.write_json("metrics.json", {"config": cfg.to_json_dict(), "pairs": slopes,
                                        "verdicts": [pair_verdict(s) for s in slopes]})
        run.write_arrays("trajectories.npz", **arrays)
        run.write_figure(FIGURE, residual_vs_loss_figure(data))
        ev = write_evidence(run, evidence(cfg, slopes))
    return {"slopes": slopes, "evidence": ev}
