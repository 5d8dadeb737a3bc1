r"""DTAP heatmaps, attention confidence (AC) and ACMC.

A DTAP heatmap (PAPER.md) is a 2-D histogram over test instances of the attention mass
on the relevant tokens, :math:`m_i`, and the probability of the true token,
:math:`p_i`; each cell holds the percentage of instances that fall in it:

.. math::
    H_{ab} = \frac{100}{N} \#\{ i : m_i \in M_a,\ p_i \in P_b \},

with bins :math:`[e_0, e_1), [e_1, e_2), \dots, [e_{n-1}, e_n]` (left-closed; the last
bin also holds its right edge). Rows index mass bins, columns probability bins.

Attention confidence and ACMC are fractions of instances (in :math:`[0, 1]`):

.. math::
    \mathrm{AC}_\tau = \frac{1}{N}\#\{i : m_i \ge \tau\}, \qquad
    \mathrm{ACMC}_{\tau,\kappa} = \frac{1}{N}\#\{i : m_i \ge \tau,\ p_i \ge \kappa\}.

Defaults :data:`DEFAULT_TAU` = :data:`DEFAULT_KAPPA` = 0.5 are our reading of PAPER.md
("the top cells of the heatmap"): with the SQuAD edges ``(0, .05, .1, .5, 1)`` the top
mass bin and the top probability bin both start at 0.5, so AC is the top row and ACMC
the top-right cell. :func:`top_cell_thresholds` gives the thresholds that match any
other edges (0.8 and 0.8 for the synthetic edges). See ``docs/metrics.md``.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ._arrays import as_numpy

SQUAD_MASS_EDGES: tuple[float, ...] = (0.0, 0.05, 0.1, 0.5, 1.0)
"""Bin edges of the SQuAD DTAP heatmaps of the official code (both axes)."""
SYNTH_EDGES: tuple[float, ...] = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)
"""Bin edges of the synthetic-data DTAP heatmaps of the official code (both axes)."""
DEFAULT_TAU = 0.5
"""Default attention-mass threshold of AC and ACMC (the top SQuAD mass bin)."""
DEFAULT_KAPPA = 0.5
"""Default true-token probability threshold of ACMC (the top SQuAD probability bin)."""

LOWER_IS_BETTER = {"attention_confidence": False, "acmc": False}


def _check_edges(edges: Sequence[float], name: str) -> np.ndarray:
    e = np.asarray(edges, dtype=np.float64)
    if e.ndim != 1 or e.size < 2 or not np.all(np.diff(e) > 0):
        raise ValueError(f"{name}: expected at least two strictly increasing edges, got {list(edges)}")
    return e


def _check_values(x: Any, name: str) -> np.ndarray:
    v = as_numpy(x, name=name, dtype=np.float64).reshape(-1)
    if not np.all(np.isfinite(v)):
        raise ValueError(f"{name}: contains NaN or infinite values")
    return v


def dtap_histogram(mass: Any, p_true: Any, mass_edges: Sequence[float] = SQUAD_MASS_EDGES,
                   prob_edges: Sequence[float] | None = None) -> np.ndarray:
    r"""DTAP heatmap: percentage of instances per (mass bin, probability bin).

    .. math:: H_{ab} = \tfrac{100}{N}\#\{i : m_i \in M_a, p_i \in P_b\}

    Bins are left-closed, the last one closed on both sides. Values a rounding error
    outside ``[edges[0], edges[-1]]`` (e.g. a mass of ``1 + 1e-7``) are clipped into the
    range, so every instance is counted and the cells sum to 100.

    Args:
        mass: attention mass on relevant tokens ``(N,)``.
        p_true: probability of the true token/class ``(N,)``.
        mass_edges: mass bin edges (rows); ``prob_edges`` (columns) default to the same.

    Returns:
        ``(len(mass_edges) - 1, len(prob_edges) - 1)`` float array of percentages.
    """
    me = _check_edges(mass_edges, "mass_edges")
    pe = me if prob_edges is None else _check_edges(prob_edges, "prob_edges")
    m = _check_values(mass, "mass")
    p = _check_values(p_true, "p_true")
    if m.shape != p.shape:
        raise ValueError(f"p_true: {p.size} values, mass has {m.size}")
    if m.size == 0:
        raise ValueError("mass: no instances")
    m = np.clip(m, me[0], me[-1])
    p = np.clip(p, pe[0], pe[-1])
    counts, _, _ = np.histogram2d(m, p, bins=[me, pe])
    return 100.0 * counts / m.size


def top_cell_thresholds(mass_edges: Sequence[float], prob_edges: Sequence[float] | None = None
                        ) -> tuple[float, float]:
    """``(tau, kappa)`` for which AC is the top mass row and ACMC the top-right cell."""
    me = _check_edges(mass_edges, "mass_edges")
    pe = me if prob_edges is None else _check_edges(prob_edges, "prob_edges")
    return float(me[-2]), float(pe[-2])


def attention_confidence(mass: Any, tau: float = DEFAULT_TAU) -> float:
    r"""AC: fraction of instances whose relevant attention mass is at least ``tau``.

    .. math:: \mathrm{AC}_\tau = \tfrac{1}{N}\#\{i : m_i \ge \tau\} \in [0, 1]

    Higher is better; non-increasing in ``tau``.
    """
    m = _check_values(mass, "mass")
    if m.size == 0:
        raise ValueError("mass: no instances")
    return float(np.mean(m >= tau))


def acmc(mass: Any, p_true: Any, tau: float = DEFAULT_TAU, kappa: float = DEFAULT_KAPPA) -> float:
    r"""ACMC: fraction of instances with mass :math:`\ge\tau` *and* true-token probability :math:`\ge\kappa`.

    .. math:: \mathrm{ACMC}_{\tau,\kappa} = \tfrac{1}{N}\#\{i : m_i \ge \tau,\ p_i \ge \kappa\} \in [0, 1]

    Higher is better; never above :func:`attention_confidence` at the same ``tau``.
    """
    m = _check_values(mass, "mass")
    p = _check_values(p_true, "p_true")
    if m.shape != p.shape:
        raise ValueError(f"p_true: {p.size} values, mass has {m.size}")
    if m.size == 0:
        raise ValueError("mass: no instances")
    return float(np.mean((m >= tau) & (p >= kappa)))


attention_confidence.lower_is_better = False  # type: ignore[attr-defined]
acmc.lower_is_better = False  # type: ignore[attr-defined]


def _fmt_edge(x: float) -> str:
    return f"{x:g}"


def plot_dtap(hist: np.ndarray, mass_edges: Sequence[float], prob_edges: Sequence[float] | None = None,
              ax: Any = None, title: str = "") -> Any:
    """Draw an annotated DTAP heatmap; returns the matplotlib ``Figure``.

    Rows (y axis, bottom to top) are mass bins, columns (x axis) probability bins; each
    cell shows its percentage. Uses matplotlib's object API (no pyplot state), so it
    works under the Agg backend; pass the figure to ``RunWriter.write_figure``.
    """
    from matplotlib.figure import Figure

    me = _check_edges(mass_edges, "mass_edges")
    pe = me if prob_edges is None else _check_edges(prob_edges, "prob_edges")
    h = np.asarray(hist, dtype=np.float64)
    if h.shape != (me.size - 1, pe.size - 1):
        raise ValueError(f"hist: shape {h.shape} does not match the edges ({me.size - 1}, {pe.size - 1})")
    if ax is None:
        fig = Figure(figsize=(1.1 * h.shape[1] + 2.2, 0.9 * h.shape[0] + 1.6))
        ax = fig.add_subplot(1, 1, 1)
    else:
        fig = ax.figure
    # a fixed 0-100 colour scale, so heatmaps of different runs compare by eye
    im = ax.imshow(h, origin="lower", cmap="Blues", vmin=0.0, vmax=100.0, aspect="auto")
    vmax = 100.0
    for a in range(h.shape[0]):
        for b in range(h.shape[1]):
            ax.text(b, a, f"{h[a, b]:.1f}", ha="center", va="center", fontsize=8,
                    color="white" if h[a, b] > 0.6 * vmax else "black")
    ax.set_xticks(np.arange(-0.5, h.shape[1]), [_fmt_edge(x) for x in pe])
    ax.set_yticks(np.arange(-0.5, h.shape[0]), [_fmt_edge(x) for x in me])
    ax.set_xlabel("probability of the true token")
    ax.set_ylabel("attention mass on relevant tokens")
    if title:
        ax.set_title(title)
    fig.colorbar(im, ax=ax, label="% of instances")
    return fig
