"""Study runs of kind ``synthetic-optimizer``: Adam at its default betas and momentum against their exact
reduced maps (issue 23), and the ``adam-ratio-default``, ``optimizer-stability`` and ``desharpen-predictor``
evidence.

Each run is one :class:`validation.synthetic.optimizer_map_run.OptimizerMapConfig` (one optimizer over
parametrizations and ratios, trained from MODEL.md's symmetric start; where the transverse analysis says runs leave
the symmetric set, a seeded ensemble per ratio, issue 41). It writes ``metrics.json`` (per parametrization:
measured 1-p, set distance, reduced map and gradient flow at matched losses; the transverse prediction; from an
ensemble P(de-sharpen) with its Wilson interval and the sign-pattern prediction), ``trajectories.npz`` (the
curves), the figure ``optimizer_map`` and ``claims.json``. ``qkov validate
synthetic --optimizer adam|momentum`` writes the same run through :func:`write_run`.
"""

from __future__ import annotations

import pathlib
from typing import Any

from qkov.core.config import parse_config
from qkov.core.runstore import RunWriter
from qkov.study import evidence_types as et
from qkov.study.claims import Evidence, write_evidence
from qkov.study.rules import evidence as judged
from simulation.optimizer_defaults import ADAM_BETAS
from theory.parametrization import BASELINE
from validation.synthetic.experiment import torch_threads
from validation.synthetic.optimizer_map_run import (OptimizerMapConfig, curve_arrays, optimizer_map_figure,
                                                    without_curves)

KIND = "synthetic-optimizer"
STAGE = "synthetic"
FIGURE = "optimizer_map"


BREAKDOWN = OptimizerMapConfig(optimizer="adam", betas=ADAM_BETAS, params=(BASELINE,), ratios=(1.0, 4.0), K=4, M=3,
                               u0=0.1, v0=0.1, dt=1e-3, steps=20000, levels=(1e-1, 3e-2, 1e-2))
"""Issue 31's case, where Adam de-sharpens in a fraction of seeded starts (issue 41): CACO, K = 4, M = 3,
u0 = v0 = 0.1, lr 1e-3 on OV, ratios 1 and 4, to L = 1e-2; one run from the exact symmetric start sharpens or
de-sharpens depending on the BLAS code path, so the run trains the seeded ensemble."""


def study_configs(quick: bool) -> list[OptimizerMapConfig]:
    """Adam(0.9, 0.999, 1e-8) and momentum 0.9 on CACO and FAFO at ratios 1 and 4 (quick: 1000 steps of
    dt 0.01, about 25 s on one core; full: ratios 1, 4, 8 and 1500 steps, the docs' table): K = 4, M = 8,
    u0 = v0 = 0.5, where Adam sharpens; plus :data:`BREAKDOWN`, where some starts de-sharpen (both quick and full).
    Adam's runs leave the symmetric set: each trains its seeded ensemble (64 starts per ratio)."""
    ratios, steps = ((1.0, 4.0), 1000) if quick else ((1.0, 4.0, 8.0), 1500)
    return [OptimizerMapConfig(optimizer="adam", betas=ADAM_BETAS, ratios=ratios, steps=steps),
            OptimizerMapConfig(optimizer="momentum", betas=ADAM_BETAS, ratios=ratios, steps=steps),
            BREAKDOWN]


def write_run(cfg: OptimizerMapConfig, runs: list[dict[str, Any]], run: RunWriter) -> list[Evidence]:
    """Metrics, curves, the figure and the evidence of one trained :class:`OptimizerMapConfig` into ``run``."""
    data = without_curves(runs)
    run.write_json("metrics.json", {"config": cfg.to_json_dict(), "runs": data})
    arrays = curve_arrays(runs)
    if arrays:
        run.write_arrays("trajectories.npz", **arrays)
        run.write_figure(FIGURE, optimizer_map_figure(runs, cfg.label()))
    scope = f"{cfg.label()}, symmetric start u0={cfg.u0:g}, v0={cfg.v0:g}, K={cfg.K}, M={cfg.M}, lr {cfg.dt:g}, " \
            f"up to {cfg.steps} steps"
    if any(r.get("ensemble") for r in data):
        e = next(r["ensemble"] for r in data if r.get("ensemble"))
        scope += f", {e['size']} seeded starts per ratio ({e['amplitude']:g} relative)"
    lv = sorted({float(x) for r in data for x in r["levels"]})
    if lv:
        scope += f", L {lv[-1]:.2g} to {lv[0]:.2g}"
    cal = calibration_verdict(data, scope)
    return write_evidence(run, [default_betas_verdict(data, scope), stability_verdict(data, scope)]
                          + ([cal] if cal is not None else []))


def execute(config: dict, run_dir: pathlib.Path) -> dict[str, Any]:
    """Train one ``synthetic-optimizer`` run and write it into ``run_dir``."""
    cfg = parse_config(OptimizerMapConfig, **config)
    with torch_threads(1):
        runs = cfg.data(curves=True)
    with RunWriter(run_dir, kind=KIND, config=config, seed=cfg.seed) as run:
        ev = write_run(cfg, runs, run)
    return {"runs": without_curves(runs), "evidence": ev}



def optimizer_label(runs: list[dict]) -> str:
    """``name (beta1 0.9, beta2 0.999, eps 1e-08)`` of the runs' recorded optimizer (``?`` without runs)."""
    if not runs:
        return "?"
    spec = dict(runs[0]["optimizer"])
    name = spec.pop("name", "?")
    return f"{name} (" + ", ".join(f"{k} {v:g}" if isinstance(v, (int, float)) else f"{k} {v}"
                                   for k, v in spec.items()) + ")"


def _at(xs: Any, i: int) -> float | None:
    """``xs[i]`` as a float, None when missing or not a number."""
    if not xs or i >= len(xs) or xs[i] is None:
        return None
    try:
        return float(xs[i])
    except (TypeError, ValueError):
        return None


def pair_points(pair: dict, levels: list) -> tuple[et.OptimizerPoint, ...]:
    """The typed points of one (param, ratio) result of
    :func:`validation.synthetic.adam_compare.optimizer_matched_loss` at its matched ``levels``: measured (an
    ensemble's median where there is one), reduced, flow, distance; from an ensemble the de-sharpening count and its
    Wilson interval, and the predicted probability (lists per level)."""

    def count(key: str, i: int) -> int | None:
        xs = pair.get(key)
        v = _at(xs, i) if isinstance(xs, list) else None
        return None if v is None else int(v)

    def num(key: str, i: int) -> float | None:
        xs = pair.get(key)
        return _at(xs, i) if isinstance(xs, list) else None

    return tuple(et.OptimizerPoint(float(pair["ratio"]), float(lv), num("measured", i), num("reduced", i),
                                   num("flow", i), num("distance", i), count("desharpen_k", i),
                                   count("desharpen_n", i), num("p_desharpen_lo", i), num("p_desharpen_hi", i),
                                   num("predicted_p_desharpen", i))
                 for i, lv in enumerate(levels))


def _leaves(run: dict) -> bool:
    return any(p.get("predicted_departure_step") is not None for p in run["pairs"])


def default_betas_evidence(runs: list[dict], scope: str = "") -> et.AdamDefault:
    """Typed ``adam-ratio-default`` evidence: every ratio at every matched loss of every parametrization."""
    opt = optimizer_label(runs)
    return et.AdamDefault(tuple(et.AdamDefaultRun(run["pairs"][0]["param"] if run["pairs"] else "?", opt,
                                                tuple(pt for p in run["pairs"] for pt in pair_points(p, run["levels"])),
                                                leaves=_leaves(run))
                                for run in runs), opt, scope or opt)


def stability_evidence(runs: list[dict], scope: str = "") -> et.Stability:
    """Typed ``optimizer-stability`` evidence: per (param, ratio) the transverse call and the 1-p points."""
    opt = optimizer_label(runs)
    return et.Stability(tuple(et.StabilityPair(p["param"], float(p["ratio"]),
                                               None if "predicted_departure_step" not in p
                                               else p["predicted_departure_step"] is not None,
                                               pair_points(p, run["levels"]))
                              for run in runs for p in run["pairs"]), opt, scope or opt)


def calibration_evidence(runs: list[dict], scope: str = "") -> et.Calibration:
    """Typed ``desharpen-predictor`` evidence: every (param, ratio, level) with an ensemble count."""
    opt = optimizer_label(runs)
    pts = []
    for run in runs:
        for p in run["pairs"]:
            for pt in pair_points(p, run["levels"]):
                if pt.desharpen_n:
                    pts.append(et.CalibrationPoint(p["param"], pt.ratio, pt.level, pt.predicted_p,
                                                   int(pt.desharpen_k or 0), int(pt.desharpen_n), pt.p_lo, pt.p_hi))
    return et.Calibration(tuple(pts), opt, scope or opt)


def _ensemble_text(run: dict) -> str:
    e = run.get("ensemble")
    return (f"; ensemble of {e['size']} seeded starts per ratio (perturbation {e['amplitude']:g} relative, seeds "
            f"{e['seed']}..{e['seed'] + e['size'] - 1}, {e['confidence']:.0%} Wilson intervals)") if e else ""


def _pair_text(run: dict, p: dict) -> str:
    parts = []
    for i, lv in enumerate(run["levels"]):
        m = _at(p.get("measured"), i)
        if m is None:
            continue
        d = _at(p.get("distance"), i)
        txt = f"L={lv:.2g} {m:.3g}" + (f" (d {d:.2g})" if d is not None else "")
        k, n = _at(p.get("desharpen_k"), i), _at(p.get("desharpen_n"), i)
        if n:
            lo, hi = _at(p.get("p_desharpen_lo"), i), _at(p.get("p_desharpen_hi"), i)
            txt += f" P(de-sharpen) {int(k or 0)}/{int(n)} [{lo:.2f}, {hi:.2f}]"
            pr = _at(p.get("predicted_p_desharpen"), i)
            if pr is not None:
                txt += f" predicted {pr:.2f}"
        parts.append(txt)
    what = "median 1-p" if run.get("ensemble") else "1-p"
    return f"{p['param']} r={p['ratio']:g}: {what} " + (", ".join(parts) or "no level reached")


def default_betas_verdict(runs: list[dict], scope: str = "") -> Evidence:
    """``adam-ratio-default`` (:func:`qkov.study.rules.adam_default_rule`): every ratio at every matched loss."""
    ev = default_betas_evidence(runs, scope)
    parts = [_pair_text(run, p) for run in runs for p in sorted(run["pairs"], key=lambda q: q["ratio"])]
    ens = "".join(dict.fromkeys(_ensemble_text(run) for run in runs))
    return judged("adam-ratio-default", STAGE, ev, f"{ev.optimizer}: " + "; ".join(parts) + ens, FIGURE,
                  "Every ratio above the lowest at every matched loss: where runs leave the symmetric set, the seeded "
                  "ensemble's probability that raising the ratio de-sharpens (Wilson interval against desharpen-rare); "
                  "where they stay, the deterministic run; and the median sharpening beyond gradient flow's.")


def stability_verdict(runs: list[dict], scope: str = "") -> Evidence:
    """``optimizer-stability`` judged on attention (:func:`qkov.study.rules.stability_rule`)."""
    ev = stability_evidence(runs, scope)
    parts = [f"{p['param']} r={p['ratio']:g}: predicted "
             f"{'leaves' if p.get('predicted_departure_step') is not None else 'stays'}, FTLE "
             f"{p.get('ftle_per_step', float('nan')):.3g}/step" for run in runs for p in run["pairs"]]
    return judged("optimizer-stability", STAGE, ev, f"{ev.optimizer}: " + "; ".join(parts), FIGURE,
                  "The transverse analysis' call (before training) against whether the measured 1-p (an ensemble's "
                  "median where runs leave the set) departs from the reduced map by more than "
                  "optimizer-map-tolerance.")


def calibration_verdict(runs: list[dict], scope: str = "") -> Evidence | None:
    """``desharpen-predictor`` (:func:`qkov.study.rules.calibration_rule`); None when no run has an ensemble."""
    ev = calibration_evidence(runs, scope)
    if not ev.points:
        return None
    cost = [r["predictor"]["cpu_s"] / r["ensemble"]["cpu_s"] for r in runs
            if r.get("predictor") and r.get("ensemble") and r["ensemble"].get("cpu_s")]
    parts = [f"{p.param} r={p.ratio:g} L={p.level:.2g}: predicted "
             + (f"{p.predicted:.2f}" if p.predicted is not None else "none") + f", ensemble {p.k}/{p.n}"
             for p in ev.points]
    return judged("desharpen-predictor", STAGE, ev, f"{ev.optimizer}: " + "; ".join(parts)
                  + (f"; predictor cost {max(cost):.2g}x the ensemble's CPU time" if cost else ""), FIGURE,
                  "The sign-pattern predictor's probability (before training) against the seeded ensemble's "
                  "frequency of de-sharpening, per ratio and matched loss.")
