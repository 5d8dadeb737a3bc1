r"""Turn trained pairs into the run's metrics and figures (the claims' evidence is the app's: qkov.study).

Per (param, ratio) the summary holds the final observables, the ODE deviations with their tolerance
(full-batch GD on the population from a symmetric start), the closed-form residuals, the drift of the
conserved balance matrices, the relative spread (distance from the symmetric set), the attention
``p`` at matched loss levels, and the DTAP heatmap (SYNTH_EDGES) of held-out instances.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import NullFormatter

from simulation.plots import OKABE_ITO
from theory.claims import THRESHOLDS
from theory.parametrization import Parametrization
from validation.metrics.dtap import SYNTH_EDGES, acmc, attention_confidence, dtap_histogram, plot_dtap
from validation.synthetic.compare import (closed_form_residuals, conserved_drift, measured_rescaling,
                                          ode_deviations, predicted_rescaling, values_at_loss)
from validation.synthetic.experiment import PairRun, SyntheticConfig, torch_threads
from validation.synthetic.reference import ode_tolerance, reference_trajectory

LOSS_LEVELS = np.array([0.5, 0.3, 0.2, 0.1, 0.05])
"""Loss levels at which attention is compared across ratios and parametrizations."""
SYMMETRIC_SPREAD = THRESHOLDS["on-set-spread"].bound
"""A state counts as on the symmetric set once the relative spreads of u and v are below this (theory.claims)."""


def _f(x: Any) -> Any:
    if isinstance(x, (float, np.floating)):
        return None if not math.isfinite(float(x)) else float(x)
    return x


def pair_summary(cfg: SyntheticConfig, run: PairRun) -> tuple[dict[str, Any], Any]:
    """Metrics of one pair and its ODE reference trajectory (or None)."""
    L = run.log
    out: dict[str, Any] = {"param": run.param, "ratio": run.ratio, "wall_s": run.wall_s,
                           "final": {k: _f(v[-1]) for k, v in L.items() if k not in ("step",)},
                           "start": {k: _f(v[0]) for k, v in L.items() if k not in ("step",)},
                           "left_start": left_start(L)}
    if "test_loss" in L and "test_mass" in L:  # held-out curve, for comparisons at matched test loss
        out["test_curve"] = {"loss": [_f(x) for x in np.asarray(L["test_loss"], float)],
                             "mass": [_f(x) for x in np.asarray(L["test_mass"], float)]}
    traj = None
    if cfg.compares_to_ode:
        traj = reference_trajectory(Parametrization(run.param), cfg.K, cfg.M, run.ratio * cfg.eta_ov, cfg.eta_ov,
                                    cfg.u0, cfg.v0, L["t"])
        if traj is None:
            out["ode"] = {"available": False}
        else:
            dev = ode_deviations(L, traj)
            tol = ode_tolerance(cfg.dt, cfg.eta_ov, run.ratio)
            out["ode"] = {"available": True, "max_relative_deviation": dev, "tolerance": tol,
                          "within_tolerance": all(dev[k] <= tol for k in ("u", "v", "one_minus_p"))}
    if "u" in L:
        out["closed_form_residuals"] = closed_form_residuals(L, cfg.K, cfg.M)
        out["conserved_drift"] = conserved_drift(L)
        rel_u = L["u_spread"] / np.maximum(np.abs(L["u"]), 1e-12)
        rel_v = L["v_spread"] / np.maximum(np.abs(L["v"]), 1e-12)
        on = np.nonzero((rel_u < SYMMETRIC_SPREAD) & (rel_v < SYMMETRIC_SPREAD))[0]
        out["spread"] = {"max_abs_u": float(L["u_spread"].max()), "max_abs_v": float(L["v_spread"].max()),
                         "final_rel_u": float(rel_u[-1]), "final_rel_v": float(rel_v[-1]),
                         "t_reach_symmetric": float(L["t"][on[0]]) if on.size else None}
        out["p_at_loss"] = {f"{lev:g}": _f(x) for lev, x in zip(LOSS_LEVELS, values_at_loss(L, LOSS_LEVELS, "p"), strict=False)}
    hist = dtap_histogram(run.mass, run.p_true, SYNTH_EDGES)
    out["dtap"] = {"edges": list(SYNTH_EDGES), "hist_percent": hist.round(3).tolist(),
                   "mean_mass": float(run.mass.mean()), "mean_p_true": float(run.p_true.mean()),
                   "accuracy": float(run.correct.mean()), "ac_0.8": attention_confidence(run.mass, 0.8),
                   "acmc_0.8_0.8": acmc(run.mass, run.p_true, 0.8, 0.8)}
    return out, traj


def rescaling_check(cfg: SyntheticConfig, runs: list[PairRun], n_states: int = 3) -> dict[str, Any]:
    """Measured vs predicted implicit learning-rate factors at states along the factorized runs."""
    rows: list[dict[str, Any]] = []
    for run in runs:
        param = Parametrization(run.param)
        if not param.line_theory or not (param.qk.kind.rescales or param.ov.kind.rescales) or "u" not in run.log:
            continue
        idx = np.linspace(0, len(run.log["t"]) - 1, n_states).astype(int)
        for i in idx:
            u, v = float(run.log["u"][i]), float(run.log["v"][i])
            if u <= 0 or v <= 0:
                continue
            mq, mo = measured_rescaling(param, cfg.K, cfg.M, u, v)
            pq, po = predicted_rescaling(param, cfg.K, cfg.M, u, v)
            rows.append({"param": run.param, "u": u, "v": v, "measured_qk": mq, "predicted_qk": pq,
                         "measured_ov": mo, "predicted_ov": po,
                         "rel_err": max(abs(mq / pq - 1), abs(mo / po - 1))})
    return {"states": rows, "max_rel_err": max((r["rel_err"] for r in rows), default=None)}


LEFT_START_FRACTION = THRESHOLDS["left-start-fraction"].bound
"""A run has left its start once its (test) loss fell by at least this fraction of its first logged value."""


def left_start(log: dict[str, np.ndarray]) -> bool:
    """True iff the loss (``loss``, or ``test_loss`` on sampled/paper data) fell by >= LEFT_START_FRACTION."""
    loss = np.asarray(log["loss"] if "loss" in log else log["test_loss"], dtype=float)
    return bool(loss.size >= 2 and np.isfinite(loss[-1]) and loss[-1] <= (1 - LEFT_START_FRACTION) * loss[0])


def theory_applies(cfg: SyntheticConfig) -> bool:
    """Whether theory's reduced gradient flow is a prediction for the run: full-batch GD on the exact population
    from the symmetric start (MODEL.md's setting). For random starts, Adam(W) or SGD on samples it is not."""
    return bool(cfg.compares_to_ode)


def theory_curves(cfg: SyntheticConfig, run: PairRun) -> Any:
    """Theory's reduced flow on the run's clock from the run's own first logged (u, v) (None without u, v).

    For the discrete gradient flow from the symmetric start this is MODEL.md's reference; for other
    optimizers and starts it is the gradient flow the run would follow if it were one (a reference only,
    drawn as such by :func:`theory_vs_training_figure`).
    """
    L = run.log
    if "u" not in L or "t" not in L:
        return None
    u0, v0 = (cfg.u0, cfg.v0) if cfg.compares_to_ode else (float(L["u"][0]), float(L["v"][0]))
    try:
        return reference_trajectory(Parametrization(run.param), cfg.K, cfg.M, run.ratio * cfg.eta_ov, cfg.eta_ov, u0, v0,
                                    L["t"])
    except (ValueError, RuntimeError):
        return None


# -- figures --------------------------------------------------------------------------------
RATIO_COLORS = OKABE_ITO
"""Okabe-Ito colours (colour-blind safe) for the ratios, in order."""


def theory_vs_training_figure(cfg: SyntheticConfig, runs: list[PairRun], trajs: list[Any]) -> Figure:
    """Per parametrization and observable (u, v, 1 - p): training (solid) and theory (dashed, same colour) against t,
    and beneath, the relative deviation ``|train / theory - 1|`` on a log axis (where the eye cannot separate the
    curves, this panel can). One colour per ratio. Theory is drawn as a prediction only where it applies
    (:func:`theory_applies`: GD on the population from the symmetric start); elsewhere the gradient flow from the
    run's first state is drawn thin and grey-dotted, labelled "reference (not a prediction)"."""
    applies = theory_applies(cfg)
    params = list(dict.fromkeys(r.param for r in runs))
    fig = Figure(figsize=(12, 3.9 * len(params)))
    outer = fig.add_gridspec(len(params), 3, hspace=0.32, wspace=0.28)
    colors = {r: RATIO_COLORS[i % len(RATIO_COLORS)] for i, r in enumerate(cfg.ratios)}
    axes = {}
    for row, prm in enumerate(params):
        for col in range(3):
            inner = outer[row, col].subgridspec(2, 1, height_ratios=[2.2, 1], hspace=0.06)
            top = fig.add_subplot(inner[0])
            axes[(prm, col)] = (top, fig.add_subplot(inner[1], sharex=top))
    for run, traj in zip(runs, trajs, strict=False):
        L = run.log
        t = np.asarray(L["t"], dtype=float)
        m = t > 0
        for col, (name, y, yt) in enumerate((("u", L["u"], None if traj is None else traj.u),
                                             ("v", L["v"], None if traj is None else traj.v),
                                             ("1 - p", 1 - L["p"], None if traj is None else 1 - np.asarray(traj.p)))):
            top, bottom = axes[(run.param, col)]
            c = colors[run.ratio]
            top.plot(t[m], np.asarray(y)[m], color=c, lw=2.2, alpha=0.6, label=f"training, ratio {run.ratio:g}")
            if yt is not None:
                yt = np.asarray(yt, dtype=float)
                if applies:
                    top.plot(t[m], yt[m], color=c, ls="--", lw=1.1, label=f"theory, ratio {run.ratio:g}")
                else:
                    top.plot(t[m], yt[m], color=c, ls=":", lw=0.8, alpha=0.7,
                             label=f"reference: gradient flow (not a prediction), ratio {run.ratio:g}")
                with np.errstate(divide="ignore", invalid="ignore"):
                    rel = np.abs(np.asarray(y, dtype=float) / yt - 1)
                ok = m & np.isfinite(rel) & (rel > 0)
                bottom.plot(t[ok], rel[ok], color=c, lw=1.2)
            top.set_title(f"{run.param}: {name}", fontsize=9)
            top.set_xscale("log")
            top.tick_params(which="both", labelbottom=False)
            yv = np.asarray(y, dtype=float)[m]
            if name == "1 - p" and yv.size and np.nanmin(yv) > 0 and np.nanmax(yv) / np.nanmin(yv) > 10:
                top.set_yscale("log")                    # log only where the residual spans decades
            bottom.set_yscale("log")
            bottom.yaxis.set_minor_formatter(NullFormatter())   # minor labels overlap when under a decade
            bottom.set_xlabel("t = step * dt")
            if col == 0:
                bottom.set_ylabel("|train/theory - 1|", fontsize=8)
    first = axes[(params[0], 0)][0]
    first.legend(fontsize=7, ncol=2)
    fig.suptitle(f"{cfg.optimizer} on {cfg.data} data, {cfg.init} start: training (solid) vs theory (dashed); "
                 "relative deviation beneath" if applies else
                 f"{cfg.optimizer} on {cfg.data} data, {cfg.init} start: training (solid); no theory applies here, "
                 "dotted: gradient flow from the run's first state as a reference only", fontsize=10)
    fig.subplots_adjust(left=0.07, right=0.98, top=1 - 0.25 / len(params), bottom=0.04)
    return fig


def attention_vs_loss_figure(cfg: SyntheticConfig, runs: list[PairRun]) -> Figure:
    """Per param: attention p (or held-out distinct attention) against loss, one line per ratio."""
    params = list(dict.fromkeys(r.param for r in runs))
    fig = Figure(figsize=(3.2 * len(params), 3.0))
    axes = fig.subplots(1, len(params), squeeze=False)[0]
    for run in runs:
        ax = axes[params.index(run.param)]
        L = run.log
        loss, att = (L["loss"], L["p"]) if "p" in L else (L["test_loss"], L["test_mass"])
        moved = left_start(L)
        ax.plot(loss, att, color=RATIO_COLORS[list(cfg.ratios).index(run.ratio) % len(RATIO_COLORS)],
                label=f"eta_QK/eta_OV = {run.ratio:g}" + ("" if moved else " (did not train)"))
        if not moved:
            ax.text(0.5, 0.6 - 0.15 * list(cfg.ratios).index(run.ratio),
                    f"ratio {run.ratio:g}: did not train (loss fell < {LEFT_START_FRACTION:.0%})",
                    transform=ax.transAxes, ha="center", va="center", fontsize=8, color="0.35")
        lo, hi = np.nanmin(loss), np.nanmax(loss)
        if lo > 0 and hi / lo > 10:                      # log axis only where the losses span decades
            ax.set_xscale("log")
        if not ax.xaxis_inverted():
            ax.invert_xaxis()
        ax.set_title(run.param)
        ax.set_xlabel("loss")
        ax.set_ylabel("attention on distinct tokens")
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    return fig


def dtap_grid_figure(cfg: SyntheticConfig, runs: list[PairRun], summaries: list[dict[str, Any]]) -> Figure:
    """DTAP heatmaps (SYNTH_EDGES), rows = params, columns = ratios."""
    params = list(dict.fromkeys(r.param for r in runs))
    ratios = list(cfg.ratios)
    fig = Figure(figsize=(4.2 * len(ratios), 3.4 * len(params)))
    axes = fig.subplots(len(params), len(ratios), squeeze=False)
    for run, s in zip(runs, summaries, strict=False):
        ax = axes[params.index(run.param), ratios.index(run.ratio)]
        plot_dtap(np.asarray(s["dtap"]["hist_percent"]), SYNTH_EDGES, ax=ax,
                  title=f"{run.param}, eta_QK/eta_OV = {run.ratio:g}")
    fig.tight_layout()
    return fig


def write_run(cfg: SyntheticConfig, runs: list[PairRun], run: Any) -> dict[str, Any]:
    """Write ``metrics.json``, ``trajectories.npz``, ``dtap.npz`` and figures into ``run`` (a RunWriter)."""
    summaries, trajs = [], []
    for r in runs:
        s, t = pair_summary(cfg, r)
        summaries.append(s)
        trajs.append(t)
    with torch_threads(1):      # one-step GD probes of tiny models: extra threads only spin (torch_threads)
        rescale = (rescaling_check(cfg, runs) if cfg.data == "population" and cfg.init == "symmetric"
                   and cfg.optimizer == "gd" else None)
    ode = [s["ode"] for s in summaries if "ode" in s]
    metrics = {"config": cfg.to_json_dict(), "pairs": summaries, "rescaling": rescale,
               "ode_all_within_tolerance": (all(o.get("within_tolerance", False) for o in ode)
                                            if ode and all(o["available"] for o in ode) else None),
               "wall_s": sum(r.wall_s for r in runs)}
    run.write_json("metrics.json", metrics)
    arrays = {f"{r.param}_r{r.ratio:g}_{k}": v for r in runs for k, v in r.log.items()}
    for r, t in zip(runs, trajs, strict=False):
        if t is not None:
            for k in ("u", "v", "p", "loss"):
                arrays[f"{r.param}_r{r.ratio:g}_ode_{k}"] = np.asarray(getattr(t, k))
    run.write_arrays("trajectories.npz", **arrays)
    run.write_arrays("dtap.npz", **{f"{r.param}_r{r.ratio:g}_{k}": getattr(r, k)
                                    for r in runs for k in ("mass", "p_true", "correct")})
    if "u" in runs[0].log:
        curves = [t if t is not None else theory_curves(cfg, r) for r, t in zip(runs, trajs, strict=False)]
        run.write_figure("theory_vs_training", theory_vs_training_figure(cfg, runs, curves))
    run.write_figure("attention_vs_loss", attention_vs_loss_figure(cfg, runs))
    run.write_figure("dtap_heatmaps", dtap_grid_figure(cfg, runs, summaries))
    return {"metrics": metrics, "summaries": summaries, "rescaling": rescale}
