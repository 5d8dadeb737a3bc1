"""Study runs of kind ``synthetic-optimizer``: Adam at its default betas and momentum against their exact
reduced maps (issue 23), and the ``adam-ratio-default`` and ``optimizer-stability`` evidence.

Each run is one :class:`validation.synthetic.optimizer_map_run.OptimizerMapConfig` (one optimizer over
parametrizations and ratios, trained from MODEL.md's symmetric start). It writes ``metrics.json`` (per
parametrization: measured 1-p, set distance, reduced map and gradient flow at matched losses; the transverse
prediction), ``trajectories.npz`` (the curves), the figure ``optimizer_map`` and ``claims.json``. ``qkov validate
synthetic --optimizer adam|momentum`` writes the same run through :func:`write_run`.
"""

from __future__ import annotations

import pathlib
from typing import Any

from qkov.core.config import parse_config
from qkov.core.runstore import RunWriter
from qkov.study.claims import Evidence, judge_fraction, write_evidence
from validation.synthetic.experiment import torch_threads
from validation.synthetic.optimizer_map_run import (OptimizerMapConfig, curve_arrays, optimizer_map_figure,
                                                    without_curves)

KIND = "synthetic-optimizer"
STAGE = "synthetic"
FIGURE = "optimizer_map"


BREAKDOWN = OptimizerMapConfig(optimizer="adam", betas=(0.9, 0.999), params=("CACO",), ratios=(1.0, 4.0), K=4, M=3,
                               u0=0.1, v0=0.1, dt=1e-3, steps=20000, levels=(1e-1, 3e-2, 1e-2))
"""Issue 31's case, where Adam de-sharpens: CACO, K = 4, M = 3, u0 = v0 = 0.1, lr 1e-3 on OV, ratios 1 and 4, to
L = 1e-2 (ratio 4: 1 - p 5.5e-3 at L = 1e-1, 1.6e-1 at 1e-2; ratio 1: 8.5e-2 -> 2.9e-2)."""


def study_configs(quick: bool) -> list[OptimizerMapConfig]:
    """Adam(0.9, 0.999, 1e-8) and momentum 0.9 on CACO and FAFO at ratios 1 and 4 (quick: 1000 steps of
    dt 0.01, about 25 s on one core; full: ratios 1, 4, 8 and 1500 steps, the docs' table): K = 4, M = 8,
    u0 = v0 = 0.5, where Adam sharpens; plus :data:`BREAKDOWN`, where it de-sharpens (both quick and full)."""
    ratios, steps = ((1.0, 4.0), 1000) if quick else ((1.0, 4.0, 8.0), 1500)
    return [OptimizerMapConfig(optimizer="adam", betas=(0.9, 0.999), ratios=ratios, steps=steps),
            OptimizerMapConfig(optimizer="momentum", betas=(0.9, 0.999), ratios=ratios, steps=steps),
            BREAKDOWN]


def write_run(cfg: OptimizerMapConfig, runs: list[dict[str, Any]], run: RunWriter) -> list[Evidence]:
    """Metrics, curves, the figure and the evidence of one trained :class:`OptimizerMapConfig` into ``run``."""
    data = without_curves(runs)
    run.write_json("metrics.json", {"config": cfg.to_json_dict(), "runs": data})
    arrays = curve_arrays(runs)
    if arrays:
        run.write_arrays("trajectories.npz", **arrays)
        run.write_figure(FIGURE, optimizer_map_figure(runs, cfg.label()))
    return write_evidence(run, [default_betas_verdict(data), stability_verdict(data)])


def execute(config: dict, run_dir: pathlib.Path) -> dict[str, Any]:
    """Train one ``synthetic-optimizer`` run and write it into ``run_dir``."""
    cfg = parse_config(OptimizerMapConfig, **config)
    with torch_threads(1):
        runs = cfg.data(curves=True)
    with RunWriter(run_dir, kind=KIND, config=config, seed=cfg.seed) as run:
        ev = write_run(cfg, runs, run)
    return {"runs": without_curves(runs), "evidence": ev}



APPLY_DISTANCE = 1e-2
"""The reduced map applies at a matched loss while the measured distance from the symmetric set is below this
(relative Frobenius): there the off-set part is too small to move 1-p by more than ~1e-3 relative (measured)."""
REDUCED_TOL = 0.05
"""|measured/reduced - 1| allowed where the reduced map applies: the two agree to ~1e-6 on the set (same numbers);
5% leaves room for the ~1e-3 off-set part, not for another optimizer (Adam vs GD differ by 2-10x in 1-p)."""
SHARPEN_MARGIN = 2.0
"""Adam's measured sharpening factor 1-p(r_lo)/1-p(r_hi) must exceed gradient flow's by this factor for a hit."""


def optimizer_label(runs: list[dict]) -> str:
    """``name (beta1 0.9, beta2 0.999, eps 1e-08)`` of the runs' recorded optimizer (``?`` without runs)."""
    if not runs:
        return "?"
    spec = dict(runs[0]["optimizer"])
    name = spec.pop("name", "?")
    return f"{name} (" + ", ".join(f"{k} {v:g}" if isinstance(v, (int, float)) else f"{k} {v}"
                                   for k, v in spec.items()) + ")"


def default_betas_comparisons(runs: list[dict]) -> list[dict]:
    """Per (param, matched level): the comparisons of :func:`default_betas_verdict` from
    :func:`validation.synthetic.adam_compare.optimizer_matched_loss` results (``runs``)."""
    out = []
    for run in runs:
        pairs = sorted(run["pairs"], key=lambda p: p["ratio"])
        if len(pairs) < 2:
            continue
        lo, hi = pairs[0], pairs[-1]
        for i, level in enumerate(run["levels"]):
            vals = [lo["measured"][i], hi["measured"][i], lo["flow"][i], hi["flow"][i]]
            row = {"param": lo["param"], "level": level, "ratios": [lo["ratio"], hi["ratio"]], "judged": False}
            if any(v is None or not v > 0 for v in vals):
                out.append(row)
                continue
            applies = [p["distance"][i] is not None and p["distance"][i] <= APPLY_DISTANCE for p in (lo, hi)]
            reduced_ok = all(abs(p["measured"][i] / p["reduced"][i] - 1) <= REDUCED_TOL
                             for p, a in zip((lo, hi), applies) if a and p["reduced"][i])
            s_opt, s_flow = vals[0] / vals[1], vals[2] / vals[3]
            row.update(judged=True, applies=applies, reduced_ok=reduced_ok, sharpening=s_opt, sharpening_flow=s_flow,
                       hit=bool(reduced_ok and s_opt >= SHARPEN_MARGIN * s_flow))
            out.append(row)
    return out


def default_betas_verdict(runs: list[dict]) -> Evidence:
    """``adam-ratio-default``: a hit where the reduced map (where it applies) matches the measured 1-p within
    :data:`REDUCED_TOL` and the measured sharpening from the lowest to the highest ratio is >= :data:`SHARPEN_MARGIN`
    times gradient flow's at the same loss; :func:`judge_fraction` over the judged levels (none: insufficient)."""
    rows = default_betas_comparisons(runs)
    judged = [r for r in rows if r["judged"]]
    hits = sum(r["hit"] for r in judged)
    parts = [f"{r['param']} L={r['level']:.2g}: x{r['sharpening']:.3g} vs flow x{r['sharpening_flow']:.3g}"
             f"{'' if r['reduced_ok'] else ' (reduced map missed)'}"
             f"{'' if all(r['applies']) else ' (off the set)'}" for r in judged]
    opt = optimizer_label(runs)
    return Evidence("adam-ratio-default", STAGE, judge_fraction(hits, len(judged)),
                    f"{opt}: {hits}/{len(judged)} matched losses where the measured 1-p sharpens by >= "
                    f"{SHARPEN_MARGIN:g}x gradient flow's from r={rows[0]['ratios'][0] if rows else '?'} to "
                    f"r={rows[0]['ratios'][1] if rows else '?'} with the reduced map within {REDUCED_TOL:.0%}; "
                    + "; ".join(parts), FIGURE)


def stability_verdict(runs: list[dict]) -> Evidence:
    """``optimizer-stability``: per run, the transverse prediction (leaves the set or not, before training) against
    the measured departure (distance > 1e-6 within the run); a hit when they agree."""
    rows = [(p["param"], p["ratio"], p["predicted_departure_step"] is not None, p["measured_departure_step"] is not None,
             p["ftle_per_step"]) for run in runs for p in run["pairs"]]
    hits = sum(a == b for _, _, a, b, _ in rows)
    parts = [f"{pm} r={r:g}: predicted {'leaves' if a else 'stays'}, measured {'leaves' if b else 'stays'}, "
             f"FTLE {f:.3g}/step" for pm, r, a, b, f in rows]
    return Evidence("optimizer-stability", STAGE, judge_fraction(hits, len(rows)),
                    f"{optimizer_label(runs)}: {hits}/{len(rows)} runs where the prediction matches the run; "
                    + "; ".join(parts), FIGURE)
