"""Study runs of kind ``adam``: GD against Adam(0, 0, eps) at matched loss, and the ``adam-ratio`` evidence.

:class:`validation.synthetic.adam_compare.AdamCompareConfig` trains each (param, ratio) from MODEL.md's
symmetric start under GD and under Adam and evaluates the derived sign-descent law from the same start;
the run writes ``metrics.json`` (per pair: the fitted slopes d log(1-p) / d log L of Adam, of the law at the
same losses and of GD), the figure ``gd_vs_adam`` and ``claims.json`` (:func:`evidence`).
"""

from __future__ import annotations

import pathlib
from typing import Any

from qkov.core.config import parse_config
from qkov.study import evidence_types as et
from qkov.study.claims import Evidence, write_evidence
from qkov.study.rules import evidence as judged
from qkov.study.rules import slope_pair_verdict
from qkov.core.runstore import RunWriter
from validation.synthetic.experiment import torch_threads
from validation.synthetic.adam_compare import AdamCompareConfig, residual_vs_loss_figure, slope_summary

KIND = "adam"
STAGE = "synthetic"
FIGURE = "gd_vs_adam"
def study_configs(quick: bool) -> list[AdamCompareConfig]:
    """Quick: CACO and FAFO at ratios 1 and 3, 300 Adam and 500 GD steps (seconds). Full: the docs' run."""
    if quick:
        return [AdamCompareConfig(ratios=(1.0, 3.0), steps_adam=300, steps_gd=500)]
    return [AdamCompareConfig(ratios=(1.0, 3.0, 10.0), steps_adam=600, steps_gd=1500)]


def slope_pair(s: dict[str, Any]) -> et.SlopePair:
    """The typed evidence of one pair's slope summary (:func:`slope_summary`)."""
    rng = s.get("loss_range")
    return et.SlopePair(s["param"], float(s["ratio"]), s.get("slope_adam"), s.get("slope_law"),
                        int(s.get("n_usable", 0) or 0), (float(rng[0]), float(rng[1])) if rng else None)


def pair_verdict(s: dict[str, Any]) -> str:
    """``supports`` / ``contradicts`` / ``insufficient`` of one pair's slope summary
    (:func:`qkov.study.rules.slope_pair_verdict`)."""
    return slope_pair_verdict(slope_pair(s))


def _fmt(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.2f}"


def evidence(cfg: AdamCompareConfig, slopes: list[dict[str, Any]]) -> list[Evidence]:
    """``adam-ratio`` (synthetic stage): per (param, ratio), Adam's slope d log(1-p)/d log L against the law's over
    the losses before the eps floor (:func:`qkov.study.rules.adam_slopes_rule`)."""
    parts = []
    for s in slopes:
        asym = s.get("asymptotic_exponent")
        rng = s.get("loss_range")
        parts.append(f"{s['param']} r={s['ratio']:g}: Adam {_fmt(s.get('slope_adam'))}, law {_fmt(s.get('slope_law'))}"
                     f" (L -> 0: {'n/a' if asym is None else f'{asym:g}'}), GD {_fmt(s.get('slope_gd'))}"
                     + (f", L {rng[0]:.2g}..{rng[1]:.2g}" if rng else ", no usable loss")
                     + ("" if pair_verdict(s) != "insufficient" else ", not judged"))
    scope = (f"Adam(0, 0, eps {cfg.eps:g}) vs GD, symmetric start, K={cfg.K}, M={cfg.M}, "
             f"ratios {', '.join(f'{r:g}' for r in cfg.ratios)}, {cfg.steps_adam} Adam steps")
    typed = et.AdamSlopes(tuple(slope_pair(s) for s in slopes), scope)
    numbers = f"slope d log(1-p)/d log L before the eps floor (eps {cfg.eps:g}): " + "; ".join(parts)
    return [judged("adam-ratio", STAGE, typed, numbers, FIGURE,
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
