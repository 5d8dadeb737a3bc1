r"""Turn trained pairs into the run's metrics, figures and ``claims.json``.

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

from validation.attention import circuit_kinds
from validation.metrics.dtap import SYNTH_EDGES, acmc, attention_confidence, dtap_histogram, plot_dtap
from validation.synthetic.compare import (closed_form_residuals, conserved_drift, measured_rescaling,
                                          ode_deviations, predicted_rescaling, values_at_loss)
from validation.synthetic.experiment import PairRun, SyntheticConfig
from validation.synthetic.reference import ode_tolerance, reference_trajectory

LOSS_LEVELS = np.array([0.5, 0.3, 0.2, 0.1, 0.05])
"""Loss levels at which attention is compared across ratios and parametrizations."""
SYMMETRIC_SPREAD = 0.05
"""A state counts as on the symmetric set once the relative spreads of u and v are below this."""


def _f(x: Any) -> Any:
    if isinstance(x, (float, np.floating)):
        return None if not math.isfinite(float(x)) else float(x)
    return x


def pair_summary(cfg: SyntheticConfig, run: PairRun) -> tuple[dict[str, Any], Any]:
    """Metrics of one pair and its ODE reference trajectory (or None)."""
    L = run.log
    out: dict[str, Any] = {"param": run.param, "ratio": run.ratio, "wall_s": run.wall_s,
                           "final": {k: _f(v[-1]) for k, v in L.items() if k not in ("step",)}}
    traj = None
    if cfg.compares_to_ode:
        traj = reference_trajectory(run.param, cfg.K, cfg.M, run.ratio * cfg.eta_ov, cfg.eta_ov, cfg.u0, cfg.v0, L["t"])
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
        out["p_at_loss"] = {f"{lev:g}": _f(x) for lev, x in zip(LOSS_LEVELS, values_at_loss(L, LOSS_LEVELS, "p"))}
    hist = dtap_histogram(run.mass, run.p_true, SYNTH_EDGES)
    out["dtap"] = {"edges": list(SYNTH_EDGES), "hist_percent": hist.round(3).tolist(),
                   "mean_mass": float(run.mass.mean()), "mean_p_true": float(run.p_true.mean()),
                   "accuracy": float(run.correct.mean()), "ac_0.8": attention_confidence(run.mass, 0.8),
                   "acmc_0.8_0.8": acmc(run.mass, run.p_true, 0.8, 0.8)}
    return out, traj


def rescaling_check(cfg: SyntheticConfig, runs: list[PairRun], n_states: int = 3) -> dict[str, Any]:
    """Measured vs predicted implicit learning-rate factors at states along the factorized runs."""
    rows = []
    for run in runs:
        qk_f, ov_f = circuit_kinds(run.param)
        if not (qk_f or ov_f) or "u" not in run.log:
            continue
        idx = np.linspace(0, len(run.log["t"]) - 1, n_states).astype(int)
        for i in idx:
            u, v = float(run.log["u"][i]), float(run.log["v"][i])
            if u <= 0 or v <= 0:
                continue
            mq, mo = measured_rescaling(run.param, cfg.K, cfg.M, u, v)
            pq, po = predicted_rescaling(run.param, cfg.K, cfg.M, u, v)
            rows.append({"param": run.param, "u": u, "v": v, "measured_qk": mq, "predicted_qk": pq,
                         "measured_ov": mo, "predicted_ov": po,
                         "rel_err": max(abs(mq / pq - 1), abs(mo / po - 1))})
    return {"states": rows, "max_rel_err": max((r["rel_err"] for r in rows), default=None)}


def _sharpness(cfg: SyntheticConfig, summaries: list[dict[str, Any]], key: str) -> dict[str, Any]:
    """Per param: is attention at matched loss non-decreasing in the ratio? Order of params at ratio min."""
    by = {(s["param"], s["ratio"]): s for s in summaries}
    ratios = sorted(cfg.ratios)
    checks, total = 0, 0
    for p in cfg.params:
        for lev in LOSS_LEVELS:
            vals = [by[(p, r)]["p_at_loss"].get(f"{lev:g}") for r in ratios]
            vals = [x for x in vals if x is not None]
            for a, b in zip(vals, vals[1:]):
                total += 1
                checks += b >= a - 1e-9
    return {"monotone_pairs": checks, "compared_pairs": total}


RESCALING_TOL = 1e-3
"""Relative tolerance of the measured rescaling (one GD step, forward difference) against theory's."""


def claims(cfg: SyntheticConfig, summaries: list[dict[str, Any]], rescale: dict[str, Any] | None) -> dict[str, Any]:
    """``claims.json`` verdicts for ``rescaling``, ``fixed-lines``, ``sharpness-ratio``, ``sharpness-order``."""
    out: dict[str, Any] = {}
    where = f"{cfg.optimizer} on {cfg.data} data, {cfg.init} start"
    if rescale and rescale["max_rel_err"] is not None:
        err = rescale["max_rel_err"]
        out["rescaling"] = {"verdict": "supports" if err < RESCALING_TOL else "contradicts",
                            "evidence": f"{where}: factorized speed / collapsed speed at the same state matches "
                                        f"theory's rho_OV = 2u and rho_QK at the balanced start to {err:.1e} (tolerance {RESCALING_TOL:g}) over "
                                        f"{len(rescale['states'])} states."}
    if all("spread" in s for s in summaries):
        if cfg.init == "symmetric" and cfg.data == "population":
            worst = max(max(s["spread"]["max_abs_u"], s["spread"]["max_abs_v"]) for s in summaries)
            out["fixed-lines"] = {"verdict": "supports" if worst < 1e-8 else "contradicts",
                                  "evidence": f"{where}: largest spread of u, v across classes/tokens {worst:.1e} "
                                              f"over {len(summaries)} runs (0 on the symmetric set)."}
        else:
            reached = [s["spread"]["t_reach_symmetric"] for s in summaries]
            ok = sum(r is not None for r in reached)
            fin = max(max(s["spread"]["final_rel_u"], s["spread"]["final_rel_v"]) for s in summaries)
            out["fixed-lines"] = {"verdict": "supports" if ok == len(reached) else ("mixed" if ok else "contradicts"),
                                  "evidence": f"{where}: {ok}/{len(reached)} runs reach relative spread < "
                                              f"{SYMMETRIC_SPREAD} in u and v; largest final relative spread {fin:.3f}."}
    if all("p_at_loss" in s for s in summaries) and len(cfg.ratios) > 1:
        sh = _sharpness(cfg, summaries, "p")
        frac = sh["monotone_pairs"] / max(sh["compared_pairs"], 1)
        out["sharpness-ratio"] = {"verdict": "supports" if frac == 1 else ("mixed" if frac >= 0.5 else "contradicts"),
                                  "evidence": f"{where}: attention p at matched loss rises with eta_QK/eta_OV in "
                                              f"{sh['monotone_pairs']}/{sh['compared_pairs']} comparisons."}
    elif len(cfg.ratios) > 1:
        masses = {(s["param"], s["ratio"]): s["dtap"]["mean_mass"] for s in summaries}
        r0, r1 = min(cfg.ratios), max(cfg.ratios)
        up = sum(masses[(p, r1)] > masses[(p, r0)] for p in cfg.params)
        out["sharpness-ratio"] = {"verdict": "supports" if up == len(cfg.params) else ("mixed" if up else "contradicts"),
                                  "evidence": f"{where}: held-out distinct-token attention at the end is higher at ratio "
                                              f"{r1:g} than {r0:g} for {up}/{len(cfg.params)} parametrizations."}
    r0 = min(cfg.ratios)
    if set(cfg.params) >= {"CACO", "FACO", "FAFO"}:
        at = {s["param"]: s for s in summaries if s["ratio"] == r0}
        if all("p_at_loss" in s for s in at.values()):
            lev = next((f"{lev:g}" for lev in LOSS_LEVELS[::-1]
                        if all(at[p]["p_at_loss"].get(f"{lev:g}") is not None for p in cfg.params)), None)
            vals = {p: at[p]["p_at_loss"][lev] for p in cfg.params} if lev else {}
            what = f"p at loss {lev}" if lev else "no common loss level"
        else:
            vals = {p: at[p]["dtap"]["mean_mass"] for p in cfg.params}
            what = "final held-out distinct attention"
        if vals:
            ok = vals["FAFO"] < min(vals["CACO"], vals["FACO"])
            order = " > ".join(f"{p} {vals[p]:.3f}" for p in sorted(vals, key=vals.get, reverse=True))
            out["sharpness-order"] = {"verdict": "supports" if ok else "contradicts",
                                      "evidence": f"{where}, ratio {r0:g}, {what}: {order} (claim: CACO, FACO "
                                                  f"concentrate, FAFO weakest)."}
        else:
            out["sharpness-order"] = {"verdict": "n/a",
                                      "evidence": f"{where}: no loss level in {[float(x) for x in LOSS_LEVELS]} reached by every "
                                                  f"parametrization at ratio {r0:g}; train longer."}
    return out


# -- figures --------------------------------------------------------------------------------
def theory_vs_training_figure(cfg: SyntheticConfig, runs: list[PairRun], trajs: list[Any]) -> Figure:
    """Rows: params; columns: u, v, 1 - p against t; solid = training, dashed black = ODE."""
    params = list(dict.fromkeys(r.param for r in runs))
    fig = Figure(figsize=(12, 2.6 * len(params)))
    axes = fig.subplots(len(params), 3, squeeze=False)
    colors = {r: f"C{i}" for i, r in enumerate(cfg.ratios)}
    for run, traj in zip(runs, trajs):
        row = params.index(run.param)
        L = run.log
        for col, (name, y, yt) in enumerate((("u", L["u"], None if traj is None else traj.u),
                                             ("v", L["v"], None if traj is None else traj.v),
                                             ("1 - p", 1 - L["p"], None if traj is None else 1 - np.asarray(traj.p)))):
            ax = axes[row, col]
            ax.plot(L["t"], y, color=colors[run.ratio], label=f"train, ratio {run.ratio:g}")
            if yt is not None:
                ax.plot(L["t"], yt, "k--", lw=0.8, label="ODE" if run.ratio == cfg.ratios[0] else None)
            ax.set_title(f"{run.param}: {name}")
            ax.set_xlabel("t = step * dt")
            if name == "1 - p":
                ax.set_yscale("log")
    axes[0, 0].legend(fontsize=7)
    fig.tight_layout()
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
        ax.plot(loss, att, label=f"ratio {run.ratio:g}")
        ax.set_xscale("log")
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
    for run, s in zip(runs, summaries):
        ax = axes[params.index(run.param), ratios.index(run.ratio)]
        plot_dtap(np.asarray(s["dtap"]["hist_percent"]), SYNTH_EDGES, ax=ax,
                  title=f"{run.param}, eta_QK/eta_OV = {run.ratio:g}")
    fig.tight_layout()
    return fig


def write_run(cfg: SyntheticConfig, runs: list[PairRun], run: Any) -> dict[str, Any]:
    """Write ``metrics.json``, ``claims.json``, ``trajectories.npz``, ``dtap.npz`` and figures into ``run`` (a RunWriter)."""
    summaries, trajs = [], []
    for r in runs:
        s, t = pair_summary(cfg, r)
        summaries.append(s)
        trajs.append(t)
    rescale = (rescaling_check(cfg, runs) if cfg.data == "population" and cfg.init == "symmetric"
               and cfg.optimizer == "gd" else None)
    cl = claims(cfg, summaries, rescale)
    ode = [s["ode"] for s in summaries if "ode" in s]
    metrics = {"config": cfg.to_json_dict(), "pairs": summaries, "rescaling": rescale,
               "ode_all_within_tolerance": (all(o.get("within_tolerance", False) for o in ode)
                                            if ode and all(o["available"] for o in ode) else None),
               "wall_s": sum(r.wall_s for r in runs)}
    run.write_json("metrics.json", metrics)
    run.write_json("claims.json", cl)
    arrays = {f"{r.param}_r{r.ratio:g}_{k}": v for r in runs for k, v in r.log.items()}
    for r, t in zip(runs, trajs):
        if t is not None:
            for k in ("u", "v", "p", "loss"):
                arrays[f"{r.param}_r{r.ratio:g}_ode_{k}"] = np.asarray(getattr(t, k))
    run.write_arrays("trajectories.npz", **arrays)
    run.write_arrays("dtap.npz", **{f"{r.param}_r{r.ratio:g}_{k}": getattr(r, k)
                                    for r in runs for k in ("mass", "p_true", "correct")})
    if "u" in runs[0].log:
        run.write_figure("theory_vs_training", theory_vs_training_figure(cfg, runs, trajs))
    run.write_figure("attention_vs_loss", attention_vs_loss_figure(cfg, runs))
    run.write_figure("dtap_heatmaps", dtap_grid_figure(cfg, runs, summaries))
    return {"metrics": metrics, "claims": cl}
