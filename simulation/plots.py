r"""Figures of the simulation layer (matplotlib, Agg): each function returns a ``Figure``.

* :func:`plot_trajectories` — ``u(t)``, ``v(t)``, ``1 - p(t)`` on log axes, with theory's leading-order
  laws overlaid (dashed);
* :func:`plot_phase_portraits` — ``(u, v)`` trajectories for several ratios with the level curves
  :math:`H(u, v) = H_0` of the first integral (dotted) they must follow;
* :func:`plot_residual_vs_ratio` — attention residual at matched loss versus
  :math:`\eta_{QK}/\eta_{OV}`, the four parametrizations;
* :func:`plot_phase_diagram` — which parametrization attends most sharply over (ratio, scale);
* :func:`plot_asymptotic_errors` — relative error of each law as ``t`` grows;
* :func:`plot_paper_comparison` — the paper's system beside the derived flow.
"""

from __future__ import annotations

from typing import Sequence

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from theory.parametrization import BASELINE, FULLY_FACTORIZED, Parametrization, registered  # noqa: E402

OKABE_ITO = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000")
"""Okabe & Ito's colour-blind-safe palette, without its yellow (unreadable as a line on white)."""
COLORS = {name: OKABE_ITO[i % len(OKABE_ITO)] for i, name in enumerate(registered())}
"""One fixed colour per registered parametrization (the registry's order) in every figure."""
PARAM_NAMES = {name: Parametrization(name).description for name in registered()}
"""Legend names of the parametrizations, e.g. ``"FACO (factorized QK, collapsed OV)"``."""
LAW_LABELS = {"u_of_t": "u(t), closed form", "u_of_t_expanded": "u(t), leading terms",
              "v_of_u": "v(u), first integral", "residual_of_u": "1-p as a function of u",
              "v_of_t_expanded": "v(t), leading terms", "residual_of_t_expanded": "1-p(t), leading terms"}
"""Legend names of theory's laws (simulation.closed_forms.LAW_NAMES)."""
LAW_STYLES = ("-", "--", "-.", ":", (0, (5, 1, 1, 1)), (0, (1, 2)))
LAW_MARKERS = ("o", "s", "^", "v", "D", "x")


def ratio_colors(n: int) -> list[str]:
    """``n`` distinguishable Okabe-Ito colours (for ratios), in order."""
    return [OKABE_ITO[i % len(OKABE_ITO)] for i in range(n)]


def plot_trajectories(trajs: Sequence, laws: dict[str, dict[str, np.ndarray]] | None = None,
                      laws_next: dict[str, dict[str, np.ndarray]] | None = None):
    """``trajs``: objects with ``param, t, u, v, residual`` (``(T,)``); ``laws[param]`` (leading, dashed) and
    ``laws_next[param]`` (next order, dotted): ``u, v, residual`` on ``t`` (NaN where a law has no value).

    Each panel's title names only the line styles drawn in it (a law with no positive finite value on the
    panel's times draws nothing, and is not promised); the legend names the parametrizations (colours)."""
    fig, axes = plt.subplots(1, 3, figsize=(14, 4))
    drawn: list[set[str]] = [set() for _ in axes]
    for tr in trajs:
        c = COLORS.get(tr.param, None)
        t = np.asarray(tr.t)
        m = t > 0
        for i, (ax, key) in enumerate(zip(axes, ("u", "v", "residual"), strict=False)):
            y = np.asarray(getattr(tr, key))
            ax.plot(t[m], y[m], color=c, label=PARAM_NAMES.get(tr.param, tr.param))
            if laws and tr.param in laws:
                lt = laws[tr.param]
                ok = m & (t >= 10.0) & np.isfinite(lt[key]) & (lt[key] > 0)
                if ok.any():
                    ax.plot(t[ok], lt[key][ok], color=c, ls="--", lw=1)
                    drawn[i].add("dashed: leading-order law")
            if laws_next and tr.param in laws_next:
                ln = laws_next[tr.param]
                ok = m & np.isfinite(ln[key]) & (ln[key] > 0)
                if ok.any():
                    ax.plot(t[ok], ln[key][ok], color=c, ls=":", lw=2)
                    drawn[i].add("dotted: next order")
    order = ("dashed: leading-order law", "dotted: next order")
    for ax, title, ylabel, styles in zip(axes, ("u(t)", "v(t)", "1 - p(t)"), ("u (OV margin)", "v (attention logit gap)",
                                                                             "1 - p (attention residual)"), drawn,
                                         strict=False):
        ax.set_xscale("log")
        ax.set_yscale("log")
        shown = [s for s in order if s in styles]
        ax.set_title(title + "  (solid: reduced flow" + "".join(f"; {s}" for s in shown) + ")", fontsize=9)
        ax.set_xlabel("t")
        ax.set_ylabel(ylabel)
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    return fig


def plot_phase_portraits(portraits: dict[str, list[dict]]):
    """``portraits[param]``: list of ``{ratio, u, v, level_u, level_v}`` (trajectory and ``H = H_0`` curve)."""
    params = list(portraits)
    fig, axes = plt.subplots(1, len(params), figsize=(4 * len(params), 4), squeeze=False)
    for ax, prm in zip(axes[0], params, strict=False):
        items = portraits[prm]
        cols = ratio_colors(len(items))
        for i, it in enumerate(items):
            col = cols[i]
            ax.plot(it["u"], it["v"], color=col, lw=2, label=f"r = {it['ratio']:g}")
            ax.plot(it["level_u"], it["level_v"], color="k", ls=":", lw=1)
        ax.set_xscale("log")
        ax.set_xlabel("u")
        ax.set_ylabel("v")
        ax.set_title(f"{prm}: (u, v), dotted H = H0")
        ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def plot_residual_vs_ratio(ratios: np.ndarray, residual: dict[str, np.ndarray], loss_level: float,
                           theory: dict[str, np.ndarray] | None = None):
    """``residual[param]``: ``(R,)`` attention residual at loss ``loss_level``."""
    fig, ax = plt.subplots(figsize=(6, 4.5))
    for prm, y in residual.items():
        ax.plot(ratios, y, marker="o", color=COLORS.get(prm), label=PARAM_NAMES.get(prm, prm))
        if theory and prm in theory:
            ax.plot(ratios, theory[prm], color=COLORS.get(prm), ls="--", lw=1)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(r"$\eta_{QK}/\eta_{OV}$")
    ax.set_ylabel(f"1 - p at loss {loss_level:g}")
    ax.set_title("Attention residual at matched loss" + (" (dashed: asymptotic law)" if theory else ""))
    ax.legend()
    fig.tight_layout()
    return fig


def plot_phase_diagram(ratios: np.ndarray, scales: np.ndarray, winner: np.ndarray, params: Sequence[str],
                       loss_level: float, margin: np.ndarray | None = None, runner_up: np.ndarray | None = None):
    """Sharpest parametrization over (ratio, scale) and by how much.

    ``winner``: ``(R, S)`` names of the parametrization with the smallest residual at loss ``loss_level``;
    ``margin``: ``(R, S)`` ratio (second-smallest residual) / (smallest residual) >= 1; ``runner_up``: ``(R, S)``
    names of the second. Left: the winner's colour, each cell labelled with the runner-up and the margin factor;
    right: log10 of the margin (0 = a tie).
    """
    from matplotlib.colors import ListedColormap
    from matplotlib.patches import Patch

    codes = np.vectorize(lambda n: list(params).index(n) if n in params else -1)(winner)
    ncols = 1 if margin is None else 2
    fig, axes = plt.subplots(1, ncols, figsize=(6.5 * ncols, 4.8), squeeze=False)
    ax = axes[0][0]
    cmap = ListedColormap([COLORS.get(p, "grey") for p in params])
    ax.pcolormesh(np.arange(len(ratios) + 1), np.arange(len(scales) + 1), np.ma.masked_less(codes.T, 0), cmap=cmap,
                  vmin=-0.5, vmax=len(params) - 0.5, alpha=0.85)
    for ax_ in axes[0]:
        ax_.set_xticks(np.arange(len(ratios)) + 0.5, [f"{r:g}" for r in ratios], rotation=45)
        ax_.set_yticks(np.arange(len(scales)) + 0.5, [f"{s:g}" for s in scales])
        ax_.set_xlabel(r"$\eta_{QK}/\eta_{OV}$")
        ax_.set_ylabel("initial scale u0 = v0")
    if margin is not None:
        for i in range(len(ratios)):
            for j in range(len(scales)):
                if np.isfinite(margin[i, j]):
                    who = f"{runner_up[i, j]}\n" if runner_up is not None else ""
                    ax.text(i + 0.5, j + 0.5, f"{who}x{margin[i, j]:.2g}", ha="center", va="center", fontsize=7,
                            color="white")
    ax.set_title(f"Sharpest attention at loss {loss_level:g}\n(label: runner-up, its residual / the winner's)")
    present = [p for p in params if np.any(winner == p)]
    ax.legend(handles=[Patch(color=COLORS.get(p, "grey"), label=p) for p in present], fontsize=7,
              loc="upper left", bbox_to_anchor=(1.0, 1.0))
    if margin is not None:
        ax2 = axes[0][1]
        lm = np.log10(np.where(np.isfinite(margin), margin, np.nan)).T
        mesh = ax2.pcolormesh(np.arange(len(ratios) + 1), np.arange(len(scales) + 1), np.ma.masked_invalid(lm),
                              cmap="viridis", vmin=0.0)
        fig.colorbar(mesh, ax=ax2, label="log10(2nd-best / best residual)")
        ax2.set_title("Margin of the winner (0 = tie)")
    fig.tight_layout()
    return fig


def plot_asymptotic_errors(times: np.ndarray, errors: dict[str, dict[str, np.ndarray]]):
    """``errors[param][law]``: ``(T,)`` relative errors at ``times``; one panel per parametrization.

    Each law has its own colour, line style and marker, and lines are drawn slightly transparent in
    order of decreasing error, so two laws with equal errors stay visible (the marker of one inside the other).
    """
    params = list(errors)
    laws = list(dict.fromkeys(law for prm in params for law in errors[prm]))
    fig, axes = plt.subplots(1, len(params), figsize=(4 * len(params), 4.4), squeeze=False, sharey=True)
    for ax, prm in zip(axes[0], params, strict=False):
        for k, law in enumerate(laws):
            if law not in errors[prm]:
                continue
            e = np.maximum(np.asarray(errors[prm][law], dtype=float), 1e-16)
            ax.plot(times, e, color=OKABE_ITO[k % len(OKABE_ITO)], ls=LAW_STYLES[k % len(LAW_STYLES)],
                    marker=LAW_MARKERS[k % len(LAW_MARKERS)], ms=7 - k, mfc="none", alpha=0.85, lw=1.4,
                    label=LAW_LABELS.get(law, law.replace("_", " ")))
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("t")
        ax.set_title(PARAM_NAMES.get(prm, prm).replace(" (", "\n("), fontsize=9)
    axes[0][0].set_ylabel("relative error |law / solution - 1|")
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=min(3, len(labels)), fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0.12, 1, 1))
    return fig


def plot_paper_comparison(run, levels: np.ndarray, paper_at: np.ndarray, ours_at: np.ndarray):
    """Attention against time (log axis) and against loss level: paper's system (solid) and the derived flow (dashed)."""
    from matplotlib.lines import Line2D

    fig, axes = plt.subplots(1, 2, figsize=(12, 4.8))
    cols = ratio_colors(len(run.ratios))
    t = np.asarray(run.t)
    m = t > 0
    for i in range(len(run.ratios)):
        axes[0].plot(t[m], run.paper_attention[m, i], color=cols[i])
        axes[0].plot(t[m], run.ours_attention[m, i], color=cols[i], ls="--")
        axes[1].plot(levels, paper_at[i], color=cols[i])
        axes[1].plot(levels, ours_at[i], color=cols[i], ls="--")
    axes[0].set_xscale("log")
    axes[0].set_xlabel("t (log scale)")
    axes[0].set_ylabel("attention on relevant tokens")
    axes[0].set_title("attention against time")
    axes[1].set_xscale("log")
    axes[1].invert_xaxis()
    axes[1].set_xlabel("loss level (log scale, decreasing)")
    axes[1].set_ylabel("attention when the loss first reaches the level")
    axes[1].set_title("attention at matched loss")
    handles = [Line2D([], [], color=c, label=f"eta_QK/eta_OV = {r:g}") for c, r in zip(cols, run.ratios, strict=False)]
    handles += [Line2D([], [], color="k", label="paper's equations"),
                Line2D([], [], color="k", ls="--", label=f"derived CACO flow (K={run.ours_K}, M={run.ours_M})")]
    fig.legend(handles=handles, loc="lower center", ncol=4, fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0.1, 1, 1))
    return fig


def plot_reduction(random: dict[str, dict[str, np.ndarray]], errors: dict[str, tuple[float, float]], dt: float):
    """Left: relative distance from the symmetric set along full-matrix GD from random starts (log axis),
    ``random[param] = {"t", "asym_ov", "asym_qk"}``; right: relative error of full-matrix GD against the
    reduced flow from balanced starts at ``dt`` and ``dt/2`` (``errors[param] = (err_dt, err_half)``): O(dt)
    means the second bar is half the first."""
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.4))
    for prm, d in random.items():
        t = np.asarray(d["t"])
        axes[0].plot(t, np.maximum(d["asym_ov"], 1e-17), color=COLORS.get(prm), label=f"{prm}: OV circuit")
        axes[0].plot(t, np.maximum(d["asym_qk"], 1e-17), color=COLORS.get(prm), ls="--", label=f"{prm}: QK circuit")
    axes[0].set_yscale("log")
    axes[0].set_xlabel("t")
    axes[0].set_ylabel("relative distance from the symmetric set")
    axes[0].set_title("Random starts: full-matrix GD")
    axes[0].legend(fontsize=7, ncol=2)
    names = list(errors)
    x = np.arange(len(names))
    axes[1].bar(x - 0.2, [errors[p][0] for p in names], 0.4, color=OKABE_ITO[0], label=f"dt = {dt:g}")
    axes[1].bar(x + 0.2, [errors[p][1] for p in names], 0.4, color=OKABE_ITO[1], label=f"dt = {dt / 2:g}")
    axes[1].set_xticks(x, names)
    axes[1].set_yscale("log")
    axes[1].set_ylabel("max relative error vs reduced flow")
    axes[1].set_title("Balanced starts: halving dt halves the error (O(dt))")
    axes[1].legend(fontsize=8)
    fig.tight_layout()
    return fig


def plot_order_crossover(levels: np.ndarray, residual: dict[str, np.ndarray], label: str,
                         crossover: float | None = None):
    """Attention residual ``1-p`` against loss level (both log) for the four parametrizations.

    ``residual[param]``: ``(L,)`` at ``levels``; ``crossover``: the loss where CACO overtakes FAFO (marked).
    """
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.6))
    for prm, y in residual.items():
        axes[0].plot(levels, y, color=COLORS.get(prm), label=PARAM_NAMES.get(prm, prm))
    if BASELINE in residual and FULLY_FACTORIZED in residual:
        axes[1].plot(levels, residual[BASELINE] / residual[FULLY_FACTORIZED], color=COLORS[BASELINE])
        axes[1].axhline(1.0, color="k", lw=0.8)
        axes[1].set_ylabel(f"(1-p) {BASELINE} / (1-p) {FULLY_FACTORIZED}  (>1: {FULLY_FACTORIZED} sharper)")
        axes[1].set_xscale("log")
        axes[1].set_yscale("log")
        axes[1].invert_xaxis()
        axes[1].set_xlabel("loss level")
        axes[1].set_title("CACO overtakes FAFO only where this falls below 1")
    for ax in axes:
        if crossover is not None:
            ax.axvline(crossover, color="grey", ls=":", lw=1)
    axes[0].set_xscale("log")
    axes[0].set_yscale("log")
    axes[0].invert_xaxis()
    axes[0].set_xlabel("loss level")
    axes[0].set_ylabel("1 - p at matched loss")
    axes[0].set_title(f"Residual at matched loss ({label})")
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    return fig


def close(fig) -> None:
    plt.close(fig)


__all__ = ["plot_reduction", "plot_order_crossover", "PARAM_NAMES", "OKABE_ITO", "LAW_LABELS", "plot_trajectories", "plot_phase_portraits", "plot_residual_vs_ratio", "plot_phase_diagram",
           "plot_asymptotic_errors", "plot_paper_comparison", "close", "COLORS"]
