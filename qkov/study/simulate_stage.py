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

from qkov.study.context import DEFAULT_CONTEXT, RunContext

from pathlib import Path
from typing import Any

import numpy as np

from qkov.core.runstore import RunWriter
from theory.parametrization import BASELINE, Parametrization, registered
from qkov.study import evidence_types as et
from qkov.study.claims import THRESHOLDS, write_evidence
from qkov.study.rules import evidence as judged

PARAMS = Parametrization.all()
TABLE_TIMES = (1e4, 1e6, 1e8, 1e10, 1e12)
STAGE = "simulate"


def study_runs(quick: bool, data_dir: Path | None) -> list[tuple[str, dict]]:
    """The (kind, config) pairs of the simulation stage; ``quick`` keeps the whole stage under ~2 minutes."""
    K, M = (6, 9) if quick else (10, 19)
    return [
        ("simulate-reduction", {"params": list(registered()), "K": 4 if quick else K, "M": 6 if quick else M,
                                "ratio": 3.0, "u0": 0.5, "v0": 0.5,
                                "t": [5.0, 20.0] if quick else [5.0, 20.0, 100.0], "dt": 0.05,
                                "random_scale": 0.05, "random_t": 200.0 if quick else 2000.0, "seed": 0}),
        ("simulate-asymptotics", {"K": K, "M": M, "ratios": [0.1, 1.0, 10.0], "scale": 0.1, "seed": 0}),
        ("simulate-sharpness", {"K": K, "M": M, "ratios": np.logspace(-2, 2, 5 if quick else 9).tolist(),
                                "scales": np.logspace(-3, 0, 4 if quick else 7).tolist(), "ref_scale": 0.1,
                                "loss_level": 1e-4, "n_times": 120 if quick else 300, "seed": 0,
                                "slopes": {"K": 10, "M": 19, "ratios": [1.0, 100.0], "scales": [0.05, 0.5],
                                           "levels": [1e-2, 1e-4, 1e-6, 1e-8]},
                                "crossover": {"KM": [[4, 8], [10, 19]] if quick else [[4, 8], [10, 19], [20, 39]],
                                              "ratios": [1.0, 10.0], "scales": [0.05, 0.5],
                                              "n_times": 300 if quick else 600}}),
        ("simulate-paper", {"horizon_tau_rk4": 2e4 if quick else 2e5, "t_max": 1e9, "n_times": 200,
                            "loss_levels": 50, "seed": 0}),
    ]


def execute(kind: str, config: dict, run_dir: Path, ctx: RunContext = DEFAULT_CONTEXT) -> None:
    """Perform one run of the stage into ``run_dir`` (kind ``simulate``, ``qkov simulate --save``'s run:
    :func:`qkov.study.simulate_command.execute`)."""
    if kind == "simulate":
        from qkov.study import simulate_command

        simulate_command.execute(kind, config, run_dir, ctx)
        return
    fn = {"simulate-reduction": _reduction, "simulate-asymptotics": _asymptotics,
          "simulate-sharpness": _sharpness, "simulate-paper": _paper}.get(kind)
    if fn is None:
        raise ValueError(f"simulation study: unknown run kind {kind!r}")
    with RunWriter(run_dir, kind=kind, config=config, seed=config.get("seed")) as run:
        fn(config, run)


def _rel(a, b) -> float:
    return float(np.max(np.abs(np.asarray(a) / np.asarray(b) - 1)))


def _reduction(cfg: dict, run: RunWriter) -> None:
    from simulation import solve

    K, M, r, u0, v0, dt = cfg["K"], cfg["M"], cfg["ratio"], cfg["u0"], cfg["v0"], cfg["dt"]
    t = np.asarray(cfg["t"])
    metrics, ratios = {}, []
    random_logs: dict[str, dict[str, np.ndarray]] = {}
    asym: dict[str, float] = {}
    params = tuple(Parametrization(p) for p in cfg.get("params", PARAMS))  # every registered kind (older configs: the four)
    for prm in params:
        start = {"K": K, "M": M, "eta_qk": r, "eta_ov": 1.0, "u0": u0, "v0": v0}
        ref = solve(prm, **start, t=t)                       # the reduced flow, its default integrator
        errs = {}
        for h in (dt, dt / 2):
            fr = solve(prm, **start, t=t, system="full", integrator="gd", dt=h)     # balanced start
            errs[h] = max(_rel(fr.u, ref.u), _rel(fr.v, ref.v), _rel(1 - fr.p, ref.residual))
            asym[prm] = max(asym.get(prm, 0.0), float(fr.extras["asym_ov"].max()), float(fr.extras["asym_qk"].max()))
        rk = solve(prm, **start, t=t, system="full", integrator="rk4", dt=dt)
        rk_err = max(_rel(rk.u, ref.u), _rel(rk.v, ref.v), _rel(1 - rk.p, ref.residual))
        ratios.append(errs[dt] / errs[dt / 2])
        tr = np.linspace(0, cfg["random_t"], 11)[1:]
        rnd = solve(prm, **start, t=tr, system="full", integrator="gd", dt=dt, init="random",
                    scale=cfg["random_scale"], seed=cfg["seed"])
        ex = rnd.extras
        metrics[prm] = {"gd_rel_err_dt": errs[dt], "gd_rel_err_half_dt": errs[dt / 2], "error_ratio": errs[dt] / errs[dt / 2],
                        "rk4_rel_err": rk_err, "random_asym_ov_first": float(ex["asym_ov"][0]),
                        "random_asym_ov_last": float(ex["asym_ov"][-1]), "random_asym_qk_first": float(ex["asym_qk"][0]),
                        "random_asym_qk_last": float(ex["asym_qk"][-1]), "random_u_spread_last": float(ex["u_spread"][-1])}
        random_logs[prm] = {"t": rnd.t, "asym_ov": ex["asym_ov"], "asym_qk": ex["asym_qk"]}
        run.write_arrays(f"random_{prm}.npz", t=rnd.t, asym_ov=ex["asym_ov"], asym_qk=ex["asym_qk"], u=rnd.u, v=rnd.v,
                         p=rnd.p, loss=rnd.loss, u_spread=ex["u_spread"], v_spread=ex["v_spread"])
    run.write_json("reduction.json", metrics)
    rk_worst = max(m["rk4_rel_err"] for m in metrics.values())
    from simulation import plots

    fig = plots.plot_reduction(random_logs, {p: (metrics[p]["gd_rel_err_dt"], metrics[p]["gd_rel_err_half_dt"])
                                             for p in params}, dt)
    run.write_figure("reduction", fig)
    plots.close(fig)
    sym_b, rk_b = THRESHOLDS["symmetric-distance"].bound, THRESHOLDS["rk4-agreement"].bound
    rnd_txt = ", ".join(f"{p} {metrics[p]['random_asym_ov_first']:.2g} -> {metrics[p]['random_asym_ov_last']:.2g}"
                        for p in params)
    scope = f"full-matrix GD from balanced starts, K={K}, M={M}, ratio {r:g}, t <= {t[-1]:g}"
    worst_asym = max(asym.values())
    distance = et.Bound("symmetric-distance", worst_asym, len(params), "distance",
                        f"{scope}; {len(params)} registered parametrizations")
    # The fixed lines are MODEL.md's: judged on the parametrizations whose QK score stays on them (the four).
    on_line = [p for p in params if p in PARAMS]
    line_asym = max((asym[p] for p in on_line), default=float("nan"))
    line_distance = et.Bound("symmetric-distance", line_asym, len(on_line), "distance", scope)
    write_evidence(run, [
        judged("symmetric-subspace", STAGE, distance,
               f"full-matrix GD from balanced starts: relative distance from the symmetric set <= {worst_asym:.1e} "
               f"(bound {sym_b:g}; K={K}, M={M})", "reduction",
               "The full matrices are integrated without any symmetry imposed. "
               + THRESHOLDS["symmetric-distance"].reason),
        judged("reduced-odes", STAGE, et.ReducedAgreement(tuple(ratios), rk_worst, scope),
               f"full matrices vs reduced flow: error ratio dt/(dt/2) {min(ratios):.2f}-{max(ratios):.2f} "
               f"(O(dt): {THRESHOLDS['odt-ratio-low'].bound:g}-{THRESHOLDS['odt-ratio-high'].bound:g}); RK4 "
               f"{rk_worst:.1e} (bound {rk_b:g})", "reduction",
               "If the reduced ODEs are exact, full-matrix GD differs from them only by the O(dt) discretisation "
               "error (halving dt halves it), and RK4 on the full matrices agrees to its own small error."),
        judged("fixed-lines", STAGE, line_distance,
               f"from balanced starts the full model stays on the symmetric set to {line_asym:.1e} (bound {sym_b:g}), "
               f"so each circuit's effective parameter moves on its line, at the reduced flow's (u, v) "
               f"(reproduced to O(dt), ratio {min(ratios):.2f}-{max(ratios):.2f})", "reduction",
               "What the claim says: along a trajectory the effective QK and OV parameters stay on fixed lines. "
               "The relative speed along them is dv/du = ratio x a state-dependent factor (derive stage), not a "
               "constant. Random starts (attraction of the symmetric set; asymmetry of W_OV first -> last: "
               f"{rnd_txt}) are shown, not judged: the claim is not about them.")])


def _asymptotics(cfg: dict, run: RunWriter) -> None:
    from simulation import plots
    from simulation.closed_forms import LAW_NAMES, asymptotic_errors, first_integral_drift
    from simulation.figures import phase_portrait_figure, trajectories_figure
    from simulation import solve

    K, M, s = cfg["K"], cfg["M"], cfg["scale"]
    ratios = np.asarray(cfg["ratios"])
    times = np.asarray(TABLE_TIMES)
    t = np.concatenate([[0.0, 1.0, 10.0, 100.0], times])
    table, drift = {}, {}
    errors_r1: dict[str, dict[str, np.ndarray]] = {}
    growth: dict[str, dict[str, Any]] = {}
    for prm in PARAMS:
        tr = solve(prm, K=K, M=M, eta_qk=ratios, eta_ov=1.0, u0=s, v0=s, t=t, check=False)
        drift[prm] = float(np.max(first_integral_drift(prm, tr.state, tr.K, tr.M, tr.eta_qk, tr.eta_ov)))
        sol = {"u": tr.u[4:], "v": tr.v[4:], "residual": tr.residual[4:]}
        err = asymptotic_errors(prm, times, sol, tr.K, tr.M, tr.eta_qk, tr.eta_ov)
        table[prm] = {law: {f"r={r:g}": {f"t=1e{int(np.log10(tt))}": float(err[law][i, b]) for i, tt in enumerate(times)}
                            for b, r in enumerate(ratios)} for law in LAW_NAMES}
        j = int(np.argmin(np.abs(ratios - 1)))
        errors_r1[prm] = {law: err[law][:, j] for law in LAW_NAMES}
        lt = np.log(times)
        llt = np.log(lt[-2:])      # log log t at the two largest times: the local growth exponents
        growth[prm] = {f"r={r:g}": {"u_over_log_t_at_1e12": float(tr.u[-1, b] / lt[-1]),
                                    "u_exponent_loglog": float(np.log(tr.u[-1, b] / tr.u[-2, b]) / (llt[1] - llt[0])),
                                    "v_exponent_loglog": float(np.log(tr.v[-1, b] / tr.v[-2, b]) / (llt[1] - llt[0])),
                                    "v_over_log2_t_at_1e4": float(tr.v[4, b] / lt[0] ** 2),
                                    "v_over_log2_t_at_1e12": float(tr.v[-1, b] / lt[-1] ** 2),
                                    "v_over_loglog_t_at_1e12": float(tr.v[-1, b] / np.log(lt[-1])),
                                    "laws_errors_shrink": bool(all(err[law][-1, b] < err[law][0, b]
                                                                   for law in ("u_of_t", "v_of_u", "residual_of_u")))}
                       for b, r in enumerate(ratios)}
        growth[prm]["u_at_1e12_spread_over_ratios"] = float(np.ptp(tr.u[-1]))
    run.write_json("asymptotic_errors.json", table)
    run.write_json("growth.json", growth)
    run.write_json("first_integral_drift.json", drift)
    fig = plots.plot_asymptotic_errors(times, errors_r1)
    run.write_figure("asymptotic_errors", fig)
    plots.close(fig)
    trajectories_figure(run, PARAMS, K, M, 1.0, 1.0, s, s)
    pp = phase_portrait_figure(run, PARAMS, K, M, 1.0, s, s, ratios=tuple(ratios), t_max=1e8)
    run.write_json("phase_portraits.json", pp)
    dmax = max(drift.values())
    g = growth
    rkeys = [f"r={r:g}" for r in ratios]
    cells = tuple(et.GrowthCell(p, float(r), g[p][rk]["u_exponent_loglog"], g[p][rk]["v_exponent_loglog"],
                                g[p][rk]["v_over_loglog_t_at_1e12"], g[p][rk]["laws_errors_shrink"])
                  for p in PARAMS for r, rk in zip(ratios, rkeys))
    scope = f"reduced gradient flow, K={K}, M={M}, start {s:g}, ratios {', '.join(f'{r:g}' for r in ratios)}, t <= 1e12"
    u_rng = {p: (min(g[p][rk]["u_over_log_t_at_1e12"] for rk in rkeys), max(g[p][rk]["u_over_log_t_at_1e12"] for rk in rkeys))
             for p in PARAMS}
    kv = {p: (min(g[p][rk]["v_exponent_loglog"] for rk in rkeys), max(g[p][rk]["v_exponent_loglog"] for rk in rkeys))
          for p in PARAMS}
    evidence = [
        judged("first-integrals", STAGE, et.Bound("first-integral-drift", dmax, len(drift), "relative drift of H",
                                                  scope.replace("t <= 1e12", "to t = 1e12")),
               f"max relative drift of H {dmax:.1e} (bound {THRESHOLDS['first-integral-drift'].bound:g}) to t = 1e12; "
               f"max |v - v_H| {max(pp['max_abs_v_minus_level_curve'].values()):.1e}", "phase_portraits",
               f"H(u, v) of theory is conserved along every solution (4 parametrizations x ratios "
               f"{[float(x) for x in ratios]}); the (u, v) curves lie on its level sets (dotted)."),
        judged("growth-rates", STAGE, et.Growth(cells, (1e10, 1e12), scope),
               "local exponent d log u/d log log t (u = O(log t): <= 1) between t = 1e10 and 1e12: "
               + ", ".join(f"{p} {min(g[p][rk]['u_exponent_loglog'] for rk in rkeys):.2f}.."
                           f"{max(g[p][rk]['u_exponent_loglog'] for rk in rkeys):.2f}" for p in PARAMS)
               + "; of v (O(log^2 t): <= 2): " + ", ".join(f"{p} {a:.2f}..{b:.2f}" for p, (a, b) in kv.items())
               + "; u/log t at 1e12: " + ", ".join(f"{p} {a:.2f}..{b:.2f}" for p, (a, b) in u_rng.items()),
               "asymptotic_errors",
               "Per parametrization and integrated ratio: the local growth exponents of u and v in log log t between "
               "t = 1e10 and 1e12 against the laws' (u = O(log t): 1; v = O(log^2 t): 2), and theory's laws' relative "
               "errors shrinking from 1e4 to 1e12. The claim's constants are 'set by the ratio', so no window is "
               "imposed on u/log t. Finding: v grows like log log t (v ~ 2 log log t for collapsed OV, log log t for "
               "factorized OV as t -> oo), so the paper's O(log^2 t) holds but is loose. Spread of u(1e12) over the "
               "ratios: " + ", ".join(f"{p} {g[p]['u_at_1e12_spread_over_ratios']:.2f}" for p in PARAMS)
               + " (theory: the leading term of u does not depend on the ratio; the spread is lower-order terms at "
               "finite t)."),
    ]
    write_evidence(run, evidence)


def _sharpness(cfg: dict, run: RunWriter) -> None:
    from simulation import plots
    from simulation.figures import order_crossover, ratio_slopes, sharpness_figures

    out = sharpness_figures(run, cfg["K"], cfg["M"], 1.0, cfg["ratios"], cfg["scales"], cfg["ref_scale"],
                            cfg["loss_level"], cfg["n_times"])
    at = out["at_ref"]
    ratios = np.asarray(out["ratios"])
    lvl = cfg["loss_level"]
    scope = (f"reduced gradient flow, K={cfg['K']}, M={cfg['M']}, start {out['ref_scale']:g}, "
             f"ratios {ratios[0]:g}..{ratios[-1]:g}, loss {lvl:g}")
    trend = et.RatioTrend("residual", tuple(et.Series(p, tuple(float(r) for r in ratios),
                                                      tuple(float(x) if np.isfinite(x) else None for x in at[p]))
                                            for p in PARAMS), scope)
    lr = np.log(ratios)
    slopes = {p: float(np.polyfit(lr[np.isfinite(at[p])], np.log(at[p][np.isfinite(at[p])]), 1)[0])
              if np.isfinite(at[p]).sum() >= 2 else float("nan") for p in PARAMS}
    sl = cfg.get("slopes") or {}
    finite_slopes = (ratio_slopes(sl["K"], sl["M"], sl["ratios"][0], sl["ratios"][1], sl["scales"], sl["levels"])
                     if sl else {})
    slope_range = {p: (float(np.nanmin(v)), float(np.nanmax(v))) for p, v in finite_slopes.items()
                   if np.isfinite(v).any()}
    slope_txt = (f"finite-loss slope between r = {sl['ratios'][0]:g} and {sl['ratios'][1]:g} (K={sl['K']}, M={sl['M']}, "
                 f"losses {sl['levels'][0]:g}..{sl['levels'][-1]:g}, starts {sl['scales']}): "
                 + ", ".join(f"{p} {a:.2f}..{b:.2f}" for p, (a, b) in slope_range.items())) if slope_range else ""
    j1 = int(np.argmin(np.abs(ratios - 1)))
    at1 = {p: float(at[p][j1]) for p in PARAMS}
    winners, counts = np.unique(out["winner"], return_counts=True)
    share = {str(w): int(c) for w, c in zip(winners, counts) if str(w)}
    # finite-loss order against the asymptotic one: where CACO overtakes FAFO
    cx = cfg.get("crossover") or {}
    cases = [(K, M, r, s0) for K, M in cx.get("KM", []) for r in cx.get("ratios", []) for s0 in cx.get("scales", [])]
    cross_rows, finite_orders, shown = [], set(), None
    if cases:
        Ks, Ms, rs, ss = (np.array(x, dtype=float) for x in zip(*cases))
        for oc in order_crossover(Ks, Ms, rs, ss, n_times=int(cx.get("n_times", 300))):
            lv = oc["levels"]
            if (oc["K"], oc["M"]) == (10, 19):
                finite_orders |= {o for o, l in zip(oc["orders"], lv) if o and l >= 1e-12}
            cross_rows.append({"K": oc["K"], "M": oc["M"], "ratio": oc["ratio"], "scale": oc["scale"],
                               "crossover_loss": oc["crossover"],
                               "order_at_1e-4": oc["orders"][int(np.argmin(np.abs(np.log(lv / 1e-4))))],
                               "order_at_smallest": next((o for o in oc["orders"][::-1] if o), "")})
            if shown is None or (oc["K"], -oc["ratio"]) > (shown["K"], -shown["ratio"]):
                shown = oc                                       # the largest K at the smallest ratio
    if shown is not None:
        fig = plots.plot_order_crossover(shown["levels"], shown["residual"],
                                         f"K={shown['K']}, M={shown['M']}, ratio {shown['ratio']:g}, start {shown['scale']:g}",
                                         shown["crossover"])
        run.write_figure("order_crossover", fig)
        plots.close(fig)
    run.write_json("sharpness.json", {"residual_at_loss_ref_scale": {p: at[p].tolist() for p in PARAMS},
                                      "ratios": ratios.tolist(), "order_at_ratio_1": sorted(PARAMS, key=at1.__getitem__),
                                      "slope_dlog_residual_dlog_ratio": slopes,
                                      "finite_loss_slopes": {p: v.tolist() for p, v in finite_slopes.items()},
                                      "finite_loss_slope_config": sl, "phase_diagram_cells": share,
                                      "crossover": cross_rows})
    cross_txt = "; ".join(f"K={c['K']}, M={c['M']}, r={c['ratio']:g}, start {c['scale']:g}: "
                          + (f"{c['crossover_loss']:.1e}" if c["crossover_loss"] else "not reached")
                          for c in cross_rows)
    evidence = [
        judged("sharpness-ratio", STAGE, trend,
               f"1-p at loss {lvl:g} along the ratios {', '.join(f'{r:g}' for r in ratios)}; "
               + (slope_txt or "fitted slope d log(1-p)/d log r " + ", ".join(f"{p} {slopes[p]:.2f}" for p in PARAMS)),
               "residual_vs_ratio",
               f"Start {out['ref_scale']:g}, ratios {ratios[0]:g}..{ratios[-1]:g}; slope of a straight-line fit of "
               f"log(1-p) on log r over that range: " + ", ".join(f"{p} {slopes[p]:.2f}" for p in PARAMS)
               + ". Theory's slope -1 is a limit (u -> oo); the finite-loss slopes above are what holds at the "
               "losses reached. Steps within residual-resolution are ties, not comparisons."),
        judged("sharpness-order", STAGE, et.Order(tuple(at1.items()), "residual-resolution",
                                                  scope.replace(f"ratios {ratios[0]:g}..{ratios[-1]:g}", "ratio 1")),
               "1-p at loss " + f"{lvl:g}, ratio 1 (sharpest first): "
               + " < ".join(f"{p} {at1[p]:.2g}" for p in sorted(PARAMS, key=at1.__getitem__)),
                 "phase_diagram",
                 f"Finite-loss statement. The paper's pairs: collapsed OV (CACO, FACO) sharper than factorized OV "
                 f"(CAFO, FAFO); it does not rank CAFO against FAFO. Sharpest over the (ratio, start) grid (cells): {share}. Loss where CACO overtakes FAFO "
                 f"(the asymptotic order sets in), by K, M, ratio and start: {cross_txt}. Finite-loss orders seen at K=10, M=19 down to 1e-12: "
                 f"{sorted(finite_orders) or 'not computed'}. The crossover is late because the CACO/FAFO residual "
                 "ratio tends to 0 only logarithmically in the margin u."),
    ]
    write_evidence(run, evidence)


def _paper(cfg: dict, run: RunWriter) -> None:
    from simulation import plots
    from simulation import solve
    from simulation.paper_sim import attention_at_levels, paper_functions, reproduce
    from simulation.sweep import dense_times

    t = dense_times(cfg["t_max"], cfg["n_times"], 1e-2)
    res = reproduce(t)
    levels = np.logspace(-4, 0, cfg["loss_levels"])
    pa, ou = attention_at_levels(res, levels)
    fig = plots.plot_paper_comparison(res, levels, pa, ou)
    run.write_figure("paper_vs_derived", fig)
    plots.close(fig)
    # The paper's own scheme (RK4, step 10 in tau = t min(eta)) against our adaptive solution of the same equations.
    ps = paper_functions()[3]                                                   # the paper's settings
    h, eo = ps["rk4_step"], ps["eta_OV"]
    n = int(round(cfg["horizon_tau_rk4"] / h))
    tau = np.r_[0, np.unique(np.r_[np.arange(100, n + 1, 100), n])] * h      # every 100 steps, tau = 0 first
    paper = {"K": ps["M_out"], "M": ps["n"] - 1, "u0": 0.0, "v0": 0.0, "system": "paper", "m": ps["m"], "n": ps["n"],
             "b": ps["b"], "M_out": ps["M_out"]}                             # (m, n, b, M_out) as written, from mu = 0
    rk_dev = 0.0
    for r in res.ratios:
        rates = {"eta_qk": r * eo, "eta_ov": eo}
        a_rk = solve(Parametrization(BASELINE), **paper, **rates, t=tau, integrator="rk4", clock="tau", dt=h).p
        a_ad = solve(Parametrization(BASELINE), **paper, **rates, t=tau / min(r * eo, eo), integrator="dop853").p
        rk_dev = max(rk_dev, float(np.max(np.abs(a_ad - a_rk))))
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
    gap = float(np.nanmax(diff)) if np.isfinite(diff).any() else float("nan")
    write_evidence(run, [judged(
        "paper-equations", STAGE,
        et.Bound("paper-gap", gap, len(res.ratios), "max attention gap at loss 1e-2",
                 f"the paper's (m, n, b, M) = (5, 50, 50, 20) against the derived flow at K={res.ours_K}, "
                 f"M={res.ours_M}, ratios {res.ratios[0]:g}..{res.ratios[-1]:g}",
                 "rests on one reading of the paper's b (attention scores scaled by 1/b)"),
        "attention at loss 1e-2, paper's equations: " + ", ".join(f"{a:.2f}" for a in pa[:, k])
        + "; derived flow: " + ", ".join(f"{a:.2f}" for a in ou[:, k])
        + f" (ratios {', '.join(f'{r:g}' for r in res.ratios)}; max gap {gap:.2f}, "
        f"resolution {THRESHOLDS['paper-gap'].bound:g})",
        "paper_vs_derived",
        "With the paper's settings (m, n, b, M) = (5, 50, 50, 20) and the derived flow of the model (K=20, M=9, "
        "attention scores scaled by 1/b, our reading of b): "
        + ("same ordering in the ratio, " if both_increase else "different ordering in the ratio, ")
        + "different numbers: the paper's QK rate lacks the factor (K+M+1)/(M+1) of the gradient flow, and its OV "
        f"rate carries a 1/b that a 1/b score scale does not give. Their RK4 step 10 is accurate (max attention "
        f"error {rk_dev:.1e}).")])


__all__ = ["study_runs", "execute"]
