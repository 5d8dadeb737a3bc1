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

COLORS = {"CACO": "tab:blue", "FACO": "tab:orange", "CAFO": "tab:green", "FAFO": "tab:red"}


def plot_trajectories(trajs: Sequence, laws: dict[str, dict[str, np.ndarray]] | None = None,
                      laws_next: dict[str, dict[str, np.ndarray]] | None = None):
    """``trajs``: objects with ``param, t, u, v, residual`` (``(T,)``); ``laws[param]`` (leading, dashed) and
    ``laws_next[param]`` (next order, dotted): ``u, v, residual`` on ``t`` (NaN where a law has no value)."""
    fig, axes = plt.subplots(1, 3, figsize=(14, 4))
    for tr in trajs:
        c = COLORS.get(tr.param, None)
        t = np.asarray(tr.t)
        m = t > 0
        for ax, key in zip(axes, ("u", "v", "residual")):
            y = np.asarray(getattr(tr, key))
            ax.plot(t[m], y[m], color=c, label=tr.param)
            if laws and tr.param in laws:
                lt = laws[tr.param]
                ok = m & (t >= 10.0) & np.isfinite(lt[key]) & (lt[key] > 0)
                ax.plot(t[ok], lt[key][ok], color=c, ls="--", lw=1)
            if laws_next and tr.param in laws_next:
                ln = laws_next[tr.param]
                ok = m & np.isfinite(ln[key]) & (ln[key] > 0)
                ax.plot(t[ok], ln[key][ok], color=c, ls=":", lw=2)
    for ax, title in zip(axes, ("u(t)", "v(t)", "1 - p(t)")):
        ax.set_xscale("log")
        ax.set_title(title + ("  (dashed: leading law; dotted: next order)" if laws_next else
                              "  (dashed: leading-order law)"), fontsize=9)
        ax.set_xlabel("t")
    axes[0].set_yscale("log")
    axes[1].set_yscale("log")
    axes[2].set_yscale("log")
    axes[0].legend()
    fig.tight_layout()
    return fig


def plot_phase_portraits(portraits: dict[str, list[dict]]):
    """``portraits[param]``: list of ``{ratio, u, v, level_u, level_v}`` (trajectory and ``H = H_0`` curve)."""
    params = list(portraits)
    fig, axes = plt.subplots(1, len(params), figsize=(4 * len(params), 4), squeeze=False)
    for ax, prm in zip(axes[0], params):
        cmap = plt.get_cmap("viridis")
        items = portraits[prm]
        for i, it in enumerate(items):
            col = cmap(i / max(1, len(items) - 1))
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
        ax.plot(ratios, y, marker="o", color=COLORS.get(prm), label=prm)
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
                       loss_level: float):
    """``winner``: ``(R, S)`` names of the sharpest parametrization at loss ``loss_level``."""
    from matplotlib.colors import ListedColormap

    codes = np.vectorize(lambda n: list(params).index(n) if n in params else -1)(winner)
    fig, ax = plt.subplots(figsize=(6, 4.5))
    cmap = ListedColormap([COLORS.get(p, "grey") for p in params])
    mesh = ax.pcolormesh(np.arange(len(ratios) + 1), np.arange(len(scales) + 1),
                         np.ma.masked_less(codes.T, 0), cmap=cmap, vmin=-0.5, vmax=len(params) - 0.5)
    ax.set_xticks(np.arange(len(ratios)) + 0.5, [f"{r:g}" for r in ratios], rotation=45)
    ax.set_yticks(np.arange(len(scales)) + 0.5, [f"{s:g}" for s in scales])
    ax.set_xlabel(r"$\eta_{QK}/\eta_{OV}$")
    ax.set_ylabel("initial scale u0 = v0")
    ax.set_title(f"Sharpest attention at loss {loss_level:g}")
    cb = fig.colorbar(mesh, ticks=range(len(params)))
    cb.ax.set_yticklabels(list(params))
    fig.tight_layout()
    return fig


def plot_asymptotic_errors(times: np.ndarray, errors: dict[str, dict[str, np.ndarray]]):
    """``errors[param][law]``: ``(T,)`` relative errors at ``times``."""
    params = list(errors)
    fig, axes = plt.subplots(1, len(params), figsize=(4 * len(params), 4), squeeze=False, sharey=True)
    for ax, prm in zip(axes[0], params):
        for law, e in errors[prm].items():
            ax.plot(times, np.maximum(e, 1e-16), marker=".", label=law)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("t")
        ax.set_title(f"{prm}: |law / solution - 1|")
    axes[0][0].legend(fontsize=7)
    fig.tight_layout()
    return fig


def plot_paper_comparison(run, levels: np.ndarray, paper_at: np.ndarray, ours_at: np.ndarray):
    """Attention vs :math:`\\log_{10}(1+t)` and vs loss level: paper's system (solid) and ours (dashed)."""
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))
    cmap = plt.get_cmap("plasma")
    for i, r in enumerate(run.ratios):
        col = cmap(i / max(1, len(run.ratios) - 1))
        x = np.log10(1 + run.t)
        axes[0].plot(x, run.paper_attention[:, i], color=col, label=f"paper r = {r:g}")
        axes[0].plot(x, run.ours_attention[:, i], color=col, ls="--")
        axes[1].plot(levels, paper_at[i], color=col, label=f"r = {r:g}")
        axes[1].plot(levels, ours_at[i], color=col, ls="--")
    axes[0].set_xlabel("log10(1 + t)")
    axes[0].set_ylabel("attention on relevant tokens")
    axes[0].set_title(f"paper's equations (solid) vs derived CACO, K={run.ours_K}, M={run.ours_M} (dashed)")
    axes[1].set_xscale("log")
    axes[1].invert_xaxis()
    axes[1].set_xlabel("loss level")
    axes[1].set_ylabel("attention at first time loss <= level")
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    return fig


def close(fig) -> None:
    plt.close(fig)


__all__ = ["plot_trajectories", "plot_phase_portraits", "plot_residual_vs_ratio", "plot_phase_diagram",
           "plot_asymptotic_errors", "plot_paper_comparison", "close", "COLORS"]
