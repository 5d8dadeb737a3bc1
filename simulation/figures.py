"""The data behind each figure, computed and written to a run (shared by the CLI and the study)."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from simulation import plots
from simulation.closed_forms import law_functions, level_curve
from simulation.solve import solve_batch
from simulation.sweep import PARAMS, dense_times, residual_at_loss, sharpest, sweep
from theory.parametrization import BASELINE, FULLY_FACTORIZED, Parametrization

MATCHED_LOSS = 1e-4
"""Loss level at which attention is compared (the paper's stopping loss)."""


def laws_on(param: Parametrization, t: np.ndarray, u: np.ndarray, K: int, M: int, eta_qk: float, eta_ov: float) -> dict:
    """Leading-order ``u(t)``, ``v(t)``, ``1 - p(t)`` of theory on ``t`` (``u`` unused except for shape)."""
    f = law_functions(param)
    return {"u": f["u_of_t"](t, u, K, M, eta_qk, eta_ov), "v": f["v_of_t_expanded"](t, u, K, M, eta_qk, eta_ov),
            "residual": f["residual_of_t_expanded"](t, u, K, M, eta_qk, eta_ov)}


def trajectories_figure(run, params: Sequence[Parametrization], K: int, M: int, eta_qk: float, eta_ov: float, u0: float,
                        v0: float, t_max: float = 1e12, full_runs: Sequence = ()) -> dict:
    """Dense reduced trajectories with law overlays (and full-matrix points as markers); returns the data."""
    t = dense_times(t_max, 200, 1e-2)[1:]
    from simulation.next_order import next_order_law

    trajs: list = []
    laws: dict[str, dict] = {}
    laws_next: dict[str, dict] = {}
    late = t >= 1e2                      # the next-order clock needs u past the start (its O(u e^-u) term)
    for prm in params:
        tr = solve_batch(prm, K=K, M=M, eta_qk=eta_qk, eta_ov=eta_ov, u0=u0, v0=v0, t=t).column(0)
        trajs.append(tr)
        laws[prm] = laws_on(prm, t, tr.u, K, M, eta_qk, eta_ov)
        nxt = next_order_law(prm, K, M, eta_qk, eta_ov, u0, v0, t[late])
        laws_next[prm] = {k: np.full(t.shape, np.nan) for k in ("u", "v", "residual")}
        for k in laws_next[prm]:
            laws_next[prm][k][late] = nxt[k]
    fig = plots.plot_trajectories(trajs, laws, laws_next)
    for fr in full_runs:
        axes = fig.axes
        c = plots.COLORS.get(fr.param)
        axes[0].plot(fr.t, fr.u, "o", color=c, ms=5, mfc="none")
        axes[1].plot(fr.t, fr.v, "o", color=c, ms=5, mfc="none")
        axes[2].plot(fr.t, 1 - fr.p, "o", color=c, ms=5, mfc="none")
    run.write_figure("trajectories", fig)
    plots.close(fig)
    run.write_arrays("trajectories.npz", t=t, **{f"{tr.param}_{k}": getattr(tr, k) for tr in trajs
                                                  for k in ("u", "v", "p", "residual", "loss")})
    return {"t": t, "trajectories": trajs, "laws": laws, "laws_next": laws_next}


def phase_portrait_figure(run, params: Sequence[Parametrization], K: int, M: int, eta_ov: float, u0: float, v0: float,
                          ratios: Sequence[float] = (0.1, 1.0, 10.0, 100.0), t_max: float = 1e8) -> dict:
    """(u, v) trajectories for several ratios with their first-integral level curves; returns max |v - v_H|."""
    t = dense_times(t_max, 120, 1e-2)[1:]
    portraits: dict[str, list] = {}
    worst: dict[str, float] = {}
    for prm in params:
        tr = solve_batch(prm, K=K, M=M, eta_qk=np.asarray(ratios) * eta_ov, eta_ov=eta_ov, u0=u0, v0=v0, t=t)
        items, w = [], 0.0
        for b, r in enumerate(ratios):
            ug = np.geomspace(max(tr.u[0, b], 1e-3), tr.u[-1, b], 40)
            vg = level_curve(prm, tr.state[:, 0, b], K, M, r * eta_ov, eta_ov, ug)
            on = level_curve(prm, tr.state[:, 0, b], K, M, r * eta_ov, eta_ov, tr.u[::10, b])
            w = max(w, float(np.nanmax(np.abs(on - tr.v[::10, b]))))
            items.append({"ratio": r, "u": tr.u[:, b], "v": tr.v[:, b], "level_u": ug, "level_v": vg})
        portraits[prm], worst[prm] = items, w
    fig = plots.plot_phase_portraits(portraits)
    run.write_figure("phase_portraits", fig)
    plots.close(fig)
    return {"max_abs_v_minus_level_curve": worst}


def sharpness_figures(run, K: int, M: int, eta_ov: float, ratios: Sequence[float], scales: Sequence[float],
                      ref_scale: float, loss_level: float = MATCHED_LOSS, n_times: int = 200) -> dict:
    """Sweep (4 params x ratios x scales): residual at matched loss vs ratio, and the phase diagram."""
    sw = sweep(PARAMS, ratios, sorted(set(list(scales) + [ref_scale])), dense_times(1e12, n_times), Ks=(K,), Ms=(M,),
               eta_ov=eta_ov)
    res = residual_at_loss(sw.loss, sw.residual, [loss_level])[..., 0, 0, 0]     # (P, R, S)
    j = int(np.argmin(np.abs(sw.scales - ref_scale)))
    at_ref: dict[str, np.ndarray] = {prm: res[i, :, j] for i, prm in enumerate(PARAMS)}
    fig = plots.plot_residual_vs_ratio(sw.ratios, at_ref, loss_level)
    run.write_figure("residual_vs_ratio", fig)
    plots.close(fig)
    winner = sharpest(res, PARAMS)                                               # (R, S)
    margin = winner_margin(res)
    second = np.asarray(PARAMS, dtype=object)[np.argsort(np.where(np.isfinite(res), res, np.inf), axis=0)[1]]
    fig = plots.plot_phase_diagram(sw.ratios, sw.scales, winner, PARAMS, loss_level, margin, second)
    run.write_figure("phase_diagram", fig)
    plots.close(fig)
    run.write_arrays("sharpness_sweep.npz", ratios=sw.ratios, scales=sw.scales, residual_at_loss=res,
                     winner=winner.astype(str), margin=margin, params=np.array(PARAMS))
    return {"ratios": sw.ratios, "scales": sw.scales, "residual": res, "winner": winner, "margin": margin,
            "ref_scale": sw.scales[j],
            "at_ref": at_ref}


def winner_margin(residual: np.ndarray) -> np.ndarray:
    """``(second-smallest / smallest)`` residual along axis 0 (parametrizations); NaN with < 2 finite values.

    ``residual``: ``(P, ...)``; returns ``(...)``, >= 1 (1 = a tie between the two sharpest).
    """
    srt = np.sort(np.where(np.isfinite(residual), residual, np.inf), axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        m = srt[1] / srt[0]
    return np.where(np.isfinite(m), m, np.nan)


def crossover_level(residual_caco: np.ndarray, residual_fafo: np.ndarray, levels: np.ndarray) -> float | None:
    r"""The largest loss below which CACO is sharper than FAFO for good, from ``1-p`` of each at the
    decreasing loss ``levels (L,)`` (NaN where not reached): the last sign change of
    :math:`D = \log(1-p)_{CACO} - \log(1-p)_{FAFO}`, interpolated linearly in :math:`\log L`;
    ``levels[0]`` if CACO is sharper at every level, None if it is not sharper at the smallest level reached.
    """
    d = np.log(residual_caco) - np.log(residual_fafo)               # < 0: CACO sharper
    fin = np.isfinite(d)
    if not fin.any() or d[fin][-1] >= 0:
        return None
    above = np.nonzero(fin & (d >= 0))[0]
    if not above.size:
        return float(levels[0])
    i = above[-1]                                                   # last level where FAFO was still sharper
    j = i + 1 + int(np.argmax(fin[i + 1:]))                         # next level with a value (CACO sharper)
    return float(np.exp(np.interp(0.0, [d[j], d[i]], np.log([levels[j], levels[i]]))))


def level_curve_residual_at_loss(param: Parametrization, K, M, eta_qk, eta_ov, u0, v0, levels: np.ndarray,
                                 n_v: int = 3000, v_max: float = 60.0) -> np.ndarray:
    r"""``1-p`` at the loss ``levels (L,)`` without integrating in time: on the first integral's level curve
    through MODEL.md's balanced start, ``u`` is a function of ``v`` (:mod:`simulation.next_order`), and so
    are :math:`1-p = (M+1)/(e^v+M+1)` and the loss :math:`\Lambda = \log(1 + (K-1)e^{-pu})`; both are
    sampled at ``n_v`` values of ``v`` up to ``v_max`` and ``1-p`` is interpolated in :math:`\log\Lambda`
    (log-log). NaN at levels the curve does not reach.

    >>> levels = np.array([1e-2, 1e-6])
    >>> level_curve_residual_at_loss("CACO", 4, 8, 1.0, 1.0, 0.5, 0.5, levels).shape
    (2,)
    """
    from simulation.next_order import _Curve

    c = _Curve(param, K, M, eta_qk, eta_ov, u0, v0)
    v = np.linspace(max(float(v0), 1e-3), v_max, n_v)
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        u = c.u_of_v(v)
        res = (float(M) + 1) / (np.exp(v) + float(M) + 1)
        loss = np.log1p((float(K) - 1) * np.exp(-(1 - res) * u))
    ok = np.isfinite(loss) & np.isfinite(res) & (loss > 0)
    order = np.argsort(loss[ok])
    x, y = np.log(loss[ok][order]), np.log(res[ok][order])
    return np.exp(np.interp(np.log(np.asarray(levels, dtype=float)), x, y, left=np.nan, right=np.nan))


def level_curve_crossover(K, M, ratio, scale, eta_ov: float = 1.0, levels: np.ndarray | None = None,
                          n_v: int = 3000) -> float | None:
    r"""The CACO/FAFO crossover loss of :func:`order_crossover` from the first integrals alone (no clock):
    :func:`crossover_level` of :func:`level_curve_residual_at_loss` for both, from ``u0 = v0 = scale``.

    Matched loss needs no time: along a trajectory both ``1-p`` and the loss are functions of the state,
    and the first integral fixes the state's path. Measured against the integrator (K, M, r = 4, 8, 1;
    10, 19, 1; 10, 19, 10; 3, 2, 3): equal to 1e-4 relative, while the leading-order estimate of
    :mod:`theory.ledger` is 3 decades too low.
    """
    levels = np.logspace(-1, -30, 300) if levels is None else np.asarray(levels, dtype=float)
    res: dict[str, np.ndarray] = {p: level_curve_residual_at_loss(p, K, M, ratio * eta_ov, eta_ov, scale, scale, levels, n_v)
           for p in (Parametrization(BASELINE), Parametrization(FULLY_FACTORIZED))}
    return crossover_level(res[BASELINE], res[FULLY_FACTORIZED], levels)


def order_crossover(K, M, ratio, scale, eta_ov: float = 1.0, t_max: float = 1e40, n_times: int = 600,
                    levels: np.ndarray | None = None) -> list[dict]:
    r"""Residual :math:`1-p` of the four parametrizations at matched loss down to tiny losses, and the
    largest loss below which CACO is sharper than FAFO for good (the finite-loss / asymptotic crossover).

    ``K, M, ratio, scale`` broadcast to ``(B,)`` cases; each case is solved from the balanced start
    ``u0 = v0 = scale`` to ``t_max`` (one vectorised solve per parametrization; in
    :math:`\tau = \log(1+t)`, so ``1e40`` costs little). ``levels``: ``(L,)`` decreasing loss levels.
    Returns per case ``{"K", "M", "ratio", "scale", "levels", "residual": {param: (L,)}, "crossover": loss
    or None, "orders": [order per level, sharpest first, "" where a level is not reached]}``.
    """
    levels = np.logspace(-1, -30, 59) if levels is None else np.asarray(levels, dtype=float)
    Kb, Mb, rb, sb = (a.ravel() for a in np.broadcast_arrays(*(np.atleast_1d(np.asarray(x, dtype=float))
                                                              for x in (K, M, ratio, scale))))
    t = dense_times(t_max, n_times)
    res: dict[str, np.ndarray] = {}
    for prm in PARAMS:
        tr = solve_batch(prm, K=Kb, M=Mb, eta_qk=rb * eta_ov, eta_ov=eta_ov, u0=sb, v0=sb, t=t)
        res[prm] = residual_at_loss(tr.loss.T, tr.residual.T, levels)             # (B, L)
    out = []
    for b in range(Kb.size):
        rb_: dict[str, np.ndarray] = {p: res[p][b] for p in PARAMS}
        cross = crossover_level(rb_[BASELINE], rb_[FULLY_FACTORIZED], levels)
        orders = [" > ".join(sorted(PARAMS, key=lambda p: rb_[p][k])) if all(np.isfinite(rb_[p][k]) for p in PARAMS)
                  else "" for k in range(levels.size)]
        out.append({"K": int(Kb[b]), "M": int(Mb[b]), "ratio": float(rb[b]), "scale": float(sb[b]), "levels": levels,
                    "residual": rb_, "crossover": cross, "orders": orders})
    return out


def ratio_slopes(K: int, M: int, r_lo: float, r_hi: float, scales, levels, eta_ov: float = 1.0,
                 t_max: float = 1e30, n_times: int = 400) -> dict[str, np.ndarray]:
    r"""Finite-loss slope :math:`\Delta\log(1-p)/\Delta\log r` between ratios ``r_lo`` and ``r_hi`` at matched loss.

    ``scales``: ``(S,)`` balanced starts; ``levels``: ``(L,)`` loss levels. Returns ``{param: (S, L)}``
    (NaN where a level is not reached). Theory's limit (u -> oo) is -1 for every parametrization.
    """
    scales = np.asarray(scales, dtype=float)
    levels = np.asarray(levels, dtype=float)
    rr = np.repeat([r_lo, r_hi], scales.size)
    ss = np.tile(scales, 2)
    t = dense_times(t_max, n_times)
    out: dict[str, np.ndarray] = {}
    for prm in PARAMS:
        tr = solve_batch(prm, K=K, M=M, eta_qk=rr * eta_ov, eta_ov=eta_ov, u0=ss, v0=ss, t=t)
        res = residual_at_loss(tr.loss.T, tr.residual.T, levels).reshape(2, scales.size, levels.size)
        out[prm] = (np.log(res[1]) - np.log(res[0])) / np.log(r_hi / r_lo)
    return out


__all__ = ["ratio_slopes", "winner_margin", "order_crossover", "crossover_level", "level_curve_residual_at_loss", "level_curve_crossover", "trajectories_figure", "phase_portrait_figure", "sharpness_figures", "laws_on", "MATCHED_LOSS"]
