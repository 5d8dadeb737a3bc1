r"""The simulation stage of ``qkov reproduce`` (contract: ``docs/architecture.md``).

Runs (each independent, written with :class:`qkov.core.runstore.RunWriter`, ``claims.json`` last):

* ``simulate-reduction`` — full matrices vs reduced flow from balanced starts for the four
  parametrizations (GD at ``dt`` and ``dt/2``: error ratio ~2 is :math:`O(dt)`; RK4 agreement;
  distance from the symmetric set), and random starts approaching it. Claim ``fixed-lines``.
* ``simulate-asymptotics`` — trajectories to :math:`t = 10^{12}`, first-integral drift, the
  relative-error table of theory's laws at :math:`t = 10^4..10^{12}`, figures.
  Claims ``first-integrals``, ``growth-rates``.
* ``simulate-sharpness`` — sweep ratios x initial scales: residual at matched loss, phase diagram.
  Claims ``sharpness-ratio``, ``sharpness-order``.
* ``simulate-paper`` — the paper's own simulation beside the derived flow. Claim ``paper-equations``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from qkov.core.runstore import RunWriter
from theory.parametrization import PARAMETRIZATIONS

PARAMS = PARAMETRIZATIONS
TABLE_TIMES = (1e4, 1e6, 1e8, 1e10, 1e12)


def study_runs(quick: bool, data_dir: Path | None) -> list[tuple[str, dict]]:
    """The (kind, config) pairs of the simulation stage; ``quick`` keeps the whole stage under ~2 minutes."""
    K, M = (6, 9) if quick else (10, 19)
    return [
        ("simulate-reduction", {"K": 4 if quick else K, "M": 6 if quick else M, "ratio": 3.0, "u0": 0.5, "v0": 0.5,
                                "t": [5.0, 20.0] if quick else [5.0, 20.0, 100.0], "dt": 0.05,
                                "random_scale": 0.05, "random_t": 200.0 if quick else 2000.0, "seed": 0}),
        ("simulate-asymptotics", {"K": K, "M": M, "ratios": [0.1, 1.0, 10.0], "scale": 0.1, "seed": 0}),
        ("simulate-sharpness", {"K": K, "M": M, "ratios": np.logspace(-2, 2, 5 if quick else 9).tolist(),
                                "scales": np.logspace(-3, 0, 4 if quick else 7).tolist(), "ref_scale": 0.1,
                                "loss_level": 1e-4, "n_times": 120 if quick else 300, "seed": 0}),
        ("simulate-paper", {"horizon_tau_rk4": 2e4 if quick else 2e5, "t_max": 1e9, "n_times": 200,
                            "loss_levels": 50, "seed": 0}),
    ]


def execute(kind: str, config: dict, run_dir: Path) -> None:
    """Perform one run of the stage into ``run_dir``."""
    fn = {"simulate-reduction": _reduction, "simulate-asymptotics": _asymptotics,
          "simulate-sharpness": _sharpness, "simulate-paper": _paper}.get(kind)
    if fn is None:
        raise ValueError(f"simulation study: unknown run kind {kind!r}")
    with RunWriter(run_dir, kind=kind, config=config, seed=config.get("seed")) as run:
        fn(config, run)


def _rel(a, b) -> float:
    return float(np.max(np.abs(np.asarray(a) / np.asarray(b) - 1)))


def _reduction(cfg: dict, run: RunWriter) -> None:
    from simulation.full_matrix import balanced_state, random_state, simulate_full
    from simulation.reduced import integrate

    K, M, r, u0, v0, dt = cfg["K"], cfg["M"], cfg["ratio"], cfg["u0"], cfg["v0"], cfg["dt"]
    t = np.asarray(cfg["t"])
    metrics, worst_asym, ratios = {}, 0.0, []
    for prm in PARAMS:
        ref = integrate(prm, K, M, r, 1.0, u0, v0, t)
        errs = {}
        for h in (dt, dt / 2):
            fr = simulate_full(prm, K, M, r, 1.0, t, h, state=balanced_state(prm, K, M, u0, v0))
            errs[h] = max(_rel(fr.u, ref.u), _rel(fr.v, ref.v), _rel(1 - fr.p, ref.residual))
            worst_asym = max(worst_asym, float(fr.asym_ov.max()), float(fr.asym_qk.max()))
        rk = simulate_full(prm, K, M, r, 1.0, t, dt, state=balanced_state(prm, K, M, u0, v0), method="rk4")
        rk_err = max(_rel(rk.u, ref.u), _rel(rk.v, ref.v), _rel(1 - rk.p, ref.residual))
        ratios.append(errs[dt] / errs[dt / 2])
        tr = np.linspace(0, cfg["random_t"], 11)[1:]
        rnd = simulate_full(prm, K, M, r, 1.0, tr, dt, state=random_state(prm, K, M, cfg["random_scale"], cfg["seed"]))
        metrics[prm] = {"gd_rel_err_dt": errs[dt], "gd_rel_err_half_dt": errs[dt / 2], "error_ratio": errs[dt] / errs[dt / 2],
                        "rk4_rel_err": rk_err, "random_asym_ov_first": float(rnd.asym_ov[0]),
                        "random_asym_ov_last": float(rnd.asym_ov[-1]), "random_asym_qk_first": float(rnd.asym_qk[0]),
                        "random_asym_qk_last": float(rnd.asym_qk[-1]), "random_u_spread_last": float(rnd.u_spread[-1])}
        run.write_arrays(f"random_{prm}.npz", t=rnd.t, asym_ov=rnd.asym_ov, asym_qk=rnd.asym_qk, u=rnd.u, v=rnd.v,
                         p=rnd.p, loss=rnd.loss, u_spread=rnd.u_spread, v_spread=rnd.v_spread)
    run.write_json("reduction.json", metrics)
    rk_worst = max(m["rk4_rel_err"] for m in metrics.values())
    ok = worst_asym < 1e-10 and all(1.7 < x < 2.3 for x in ratios) and rk_worst < 1e-5
    run.write_json("claims.json", {"fixed-lines": {
        "verdict": "supports" if ok else "mixed",
        "evidence": (f"Full-matrix GD from balanced starts stays on the symmetric set (relative distance <= {worst_asym:.1e}) "
                     f"and matches the reduced flow to O(dt): halving dt divides the error by "
                     f"{min(ratios):.2f}-{max(ratios):.2f}; RK4 on the full matrices agrees to {rk_worst:.1e} (K={K}, M={M}).")}})


def _asymptotics(cfg: dict, run: RunWriter) -> None:
    from simulation import plots
    from simulation.closed_forms import LAW_NAMES, asymptotic_errors, first_integral_drift
    from simulation.figures import phase_portrait_figure, trajectories_figure
    from simulation.reduced import integrate_many

    K, M, s = cfg["K"], cfg["M"], cfg["scale"]
    ratios = np.asarray(cfg["ratios"])
    times = np.asarray(TABLE_TIMES)
    t = np.concatenate([[0.0, 1.0, 10.0, 100.0], times])
    table, drift, errors_r1, growth = {}, {}, {}, {}
    for prm in PARAMS:
        tr = integrate_many(prm, K, M, ratios, 1.0, s, s, t)
        drift[prm] = float(np.max(first_integral_drift(prm, tr.state, tr.K, tr.M, tr.eta_qk, tr.eta_ov)))
        sol = {"u": tr.u[4:], "v": tr.v[4:], "residual": tr.residual[4:]}
        err = asymptotic_errors(prm, times, sol, tr.K, tr.M, tr.eta_qk, tr.eta_ov)
        table[prm] = {law: {f"r={r:g}": {f"t=1e{int(np.log10(tt))}": float(err[law][i, b]) for i, tt in enumerate(times)}
                            for b, r in enumerate(ratios)} for law in LAW_NAMES}
        j = int(np.argmin(np.abs(ratios - 1)))
        errors_r1[prm] = {law: err[law][:, j] for law in LAW_NAMES}
        lt = np.log(times)
        growth[prm] = {"u_over_log_t_at_1e12": float(tr.u[-1, j] / lt[-1]),
                       "v_over_log2_t_at_1e4": float(tr.v[4, j] / lt[0] ** 2),
                       "v_over_log2_t_at_1e12": float(tr.v[-1, j] / lt[-1] ** 2),
                       "v_over_loglog_t_at_1e12": float(tr.v[-1, j] / np.log(lt[-1])),
                       "u_at_1e12_spread_over_ratios": float(np.ptp(tr.u[-1]))}
    run.write_json("asymptotic_errors.json", table)
    run.write_json("growth.json", growth)
    run.write_json("first_integral_drift.json", drift)
    fig = plots.plot_asymptotic_errors(times, errors_r1)
    run.write_figure("asymptotic_errors", fig)
    plots.close(fig)
    trajectories_figure(run, PARAMS, K, M, 1.0, 1.0, s, s)
    pp = phase_portrait_figure(run, PARAMS, K, M, 1.0, s, s, ratios=tuple(ratios), t_max=1e8)
    run.write_json("phase_portraits.json", pp)
    shrink = {prm: all(errors_r1[prm][law][-1] < errors_r1[prm][law][0] for law in ("u_of_t", "v_of_u", "residual_of_u"))
              for prm in PARAMS}
    dmax = max(drift.values())
    claims = {
        "first-integrals": {"verdict": "supports" if dmax < 1e-8 else "contradicts",
                            "evidence": f"H(u, v) of theory is conserved along every solution to t = 1e12 (max relative drift "
                                        f"{dmax:.1e} over 4 parametrizations x ratios {[float(x) for x in ratios]}); the (u, v) curves lie on "
                                        f"its level sets (max |v - v_H| {max(pp['max_abs_v_minus_level_curve'].values()):.1e})."},
    }
    g = growth
    claims["growth-rates"] = {
        "verdict": "mixed" if all(shrink.values()) else "contradicts",
        "evidence": (f"u/log t at t=1e12: " + ", ".join(f"{p} {g[p]['u_over_log_t_at_1e12']:.2f}" for p in PARAMS)
                     + f" (u = Theta(log t), leading constant independent of the ratio); v/log^2 t falls to "
                     + ", ".join(f"{g[p]['v_over_log2_t_at_1e12']:.3f}" for p in PARAMS)
                     + " so the paper's O(log^2 t) bound holds only loosely: v ~ 2 log log t (collapsed OV) or log log t "
                     f"(factorized OV); theory's laws' relative errors shrink from t=1e4 to 1e12 for "
                     f"{sum(shrink.values())}/4 parametrizations.")}
    run.write_json("claims.json", claims)


def _sharpness(cfg: dict, run: RunWriter) -> None:
    from simulation.figures import sharpness_figures

    out = sharpness_figures(run, cfg["K"], cfg["M"], 1.0, cfg["ratios"], cfg["scales"], cfg["ref_scale"],
                            cfg["loss_level"], cfg["n_times"])
    at = out["at_ref"]
    monotone = {p: bool(np.all(np.diff(at[p]) < 0)) for p in PARAMS}
    j1 = int(np.argmin(np.abs(out["ratios"] - 1)))
    order = sorted(PARAMS, key=lambda p: at[p][j1])
    winners, counts = np.unique(out["winner"], return_counts=True)
    share = {str(w): int(c) for w, c in zip(winners, counts)}
    run.write_json("sharpness.json", {"residual_at_loss_ref_scale": {p: at[p].tolist() for p in PARAMS},
                                      "ratios": out["ratios"].tolist(), "order_at_ratio_1": order,
                                      "phase_diagram_cells": share})
    lvl = cfg["loss_level"]
    claims = {
        "sharpness-ratio": {
            "verdict": "supports" if all(monotone.values()) else "mixed",
            "evidence": f"At loss {lvl:g} (scale {out['ref_scale']:g}) 1-p falls monotonically with eta_QK/eta_OV for "
                        f"{sum(monotone.values())}/4 parametrizations, e.g. CACO {at['CACO'][0]:.2g} -> {at['CACO'][-1]:.2g} "
                        f"from ratio {out['ratios'][0]:g} to {out['ratios'][-1]:g}."},
        "sharpness-order": {
            "verdict": "supports" if order[-1] == "FAFO" and set(order[:2]) == {"CACO", "FACO"} else "mixed",
            "evidence": f"Order of 1-p at loss {lvl:g}, ratio 1 (sharpest first): "
                        + " < ".join(f"{p} {at[p][j1]:.2g}" for p in order)
                        + f"; sharpest over the (ratio, scale) grid: {share}."},
    }
    run.write_json("claims.json", claims)


def _paper(cfg: dict, run: RunWriter) -> None:
    from simulation import plots
    from simulation.paper_sim import attention_at_levels, paper_adaptive, paper_rk4, reproduce
    from simulation.sweep import dense_times

    t = dense_times(cfg["t_max"], cfg["n_times"], 1e-2)
    res = reproduce(t)
    levels = np.logspace(-4, 0, cfg["loss_levels"])
    pa, ou = attention_at_levels(res, levels)
    fig = plots.plot_paper_comparison(res, levels, pa, ou)
    run.write_figure("paper_vs_derived", fig)
    plots.close(fig)
    # The paper's own scheme (RK4, step 10 in tau = t min(eta)) against our adaptive solution of the same equations.
    t_rk, a_rk, _ = paper_rk4(res.ratios, cfg["horizon_tau_rk4"])
    rk_dev = 0.0
    for i, r in enumerate(res.ratios):
        a_ad, _ = paper_adaptive([r], t_rk[:, i])
        rk_dev = max(rk_dev, float(np.max(np.abs(a_ad[:, 0] - a_rk[:, i]))))
    k = int(np.argmin(np.abs(levels - 1e-2)))
    diff = np.abs(pa[:, k] - ou[:, k])
    run.write_arrays("paper_vs_derived.npz", t=t, ratios=res.ratios, paper_attention=res.paper_attention,
                     ours_attention=res.ours_attention, paper_loss=res.paper_loss, ours_loss=res.ours_loss,
                     levels=levels, paper_at_levels=pa, ours_at_levels=ou)
    run.write_json("paper.json", {"ratios": res.ratios.tolist(), "paper_attention_at_loss_1e-2": pa[:, k].tolist(),
                                  "derived_attention_at_loss_1e-2": ou[:, k].tolist(),
                                  "rk4_step10_max_abs_attention_error": rk_dev, "derived_K": res.ours_K,
                                  "derived_M": res.ours_M})
    both_increase = bool(np.all(np.diff(pa[:, k]) > 0) and np.all(np.diff(ou[:, k]) > 0))
    run.write_json("claims.json", {"paper-equations": {
        "verdict": "mixed" if both_increase else "contradicts",
        "evidence": (f"With the paper's settings its equations give attention "
                     + ", ".join(f"{a:.2f}" for a in pa[:, k]) + " at loss 1e-2 for ratios "
                     + ", ".join(f"{r:g}" for r in res.ratios) + "; the derived flow of the model (K=20, M=9, score scale 1/b) gives "
                     + ", ".join(f"{a:.2f}" for a in ou[:, k])
                     + f" (max gap {diff.max():.2f}): same ordering in the ratio, different numbers, since the paper's QK rate "
                     f"lacks the factor (K+M+1)/(M+1) and its OV rate carries a 1/b the model does not give. "
                     f"Their RK4 step 10 is accurate (max attention error {rk_dev:.1e}).")}})


__all__ = ["study_runs", "execute"]
