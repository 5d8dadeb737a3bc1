"""Record metrics of the Adam-off-the-symmetric-set runs (issue 41): ``synthetic-optimizer`` and ``adam-phase``.

Their ``metrics.json`` nest lists of objects (per parametrization, per pair, per start), which
:func:`qkov.records.extractors.compact` would drop; these extractors flatten what the generated tables read into
dicts of short lists (every list at most a few hundred numbers): per ratio and matched loss the ensemble's
de-sharpening count ``k`` of ``n``, its Wilson interval, the 1-p median and quantiles, the predicted probability,
and the sets the members end on.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from qkov.core.runstore import load_run


def _stats_table(stats: list[dict[str, Any]]) -> dict[str, Any]:
    """``RatioStats.as_json`` rows -> ``{"ratios", "levels", key: [[per level] per ratio]}``."""
    ratios = sorted({float(s["ratio"]) for s in stats})
    levels = list(dict.fromkeys(float(s["level"]) for s in stats))
    at = {(float(s["ratio"]), float(s["level"])): s for s in stats}
    keys = ("reached", "one_minus_p_median", "one_minus_p_q10", "one_minus_p_q90", "distance_median",
            "desharpen_k", "desharpen_n", "p_desharpen_lo", "p_desharpen_hi")
    return {"ratios": ratios, "levels": levels,
            **{k: [[at.get((r, lv), {}).get(k) for lv in levels] for r in ratios] for k in keys}}


def phase_metrics(run_dir: Path) -> dict[str, Any]:
    """An ``adam-phase`` run: its config, steps and CPU times, and per start ``"u0=<u0>"`` the statistics table
    (:func:`_stats_table`), ``predicted`` ``{ratio: [p per level]}``, the members' end ``sets`` and the
    predictor's CPU time."""
    m = dict(load_run(run_dir).metrics)
    out: dict[str, Any] = {k: m[k] for k in ("config", "steps", "ensemble_cpu_s", "confidence", "resolution")
                           if k in m}
    out["starts"] = {f"u0={float(s['u0']):g}": {**_stats_table(s["stats"]), "u0": float(s["u0"]),
                                                "predicted": s.get("predicted", {}), "sets": s.get("sets", {}),
                                                "predictor_cpu_s": s.get("predictor_cpu_s")}
                     for s in m.get("starts", [])}
    return out


_PAIR_KEYS = ("measured", "measured_q10", "measured_q90", "reduced", "flow", "distance", "desharpen_k",
              "desharpen_n", "p_desharpen", "p_desharpen_lo", "p_desharpen_hi", "predicted_p_desharpen",
              "ensemble_sets", "predicted_departure_step", "ftle_per_step")


def optimizer_metrics(run_dir: Path) -> dict[str, Any]:
    """A ``synthetic-optimizer`` run: per parametrization (``params[name]``) its levels, optimizer, the ensemble's
    settings and CPU time, the predictor's CPU time, and per ratio ``"r=<ratio>"`` the per-level lists of
    :data:`_PAIR_KEYS`; plus the claims evidence (verdict, number, scope)."""
    from qkov.records.extractors import _evidence

    run = load_run(run_dir)
    params: dict[str, Any] = {}
    for r in run.metrics.get("runs", []):
        if not r.get("pairs"):
            continue
        e = r.get("ensemble") or {}
        pr = r.get("predictor") or {}
        params[r["pairs"][0]["param"]] = {
            "levels": r.get("levels"), "optimizer": r.get("optimizer"), "K": r.get("K"), "M": r.get("M"),
            "u0": r.get("u0"), "v0": r.get("v0"), "dt": r.get("dt"),
            "ensemble": {k: e[k] for k in ("size", "amplitude", "seed", "confidence", "resolution", "steps",
                                           "cpu_s", "wall_s", "reference_ratio") if k in e},
            "predictor_cpu_s": pr.get("cpu_s"),
            "pairs": {f"r={float(p['ratio']):g}": {k: p[k] for k in _PAIR_KEYS if k in p} for p in r["pairs"]}}
    out: dict[str, Any] = {"params": params}
    ev = _evidence(run)
    if ev:
        out["evidence"] = [{k: v for k, v in x.items() if k != "numbers"} for x in ev]
    return out


__all__ = ["optimizer_metrics", "phase_metrics"]
