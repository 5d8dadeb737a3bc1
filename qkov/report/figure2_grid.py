"""The paper's Figure 2 as one grid: parametrizations (rows) x rate settings (columns), one shared colour bar.

Read from the ``figure2`` runs' ``metrics.json`` (:func:`validation.synthetic.figure2.figure2_summary`):
per setting ``dtap_percent[a][b]``, the seed-mean percentage of held-out sequences whose distinct-token
attention falls in bin ``a`` (x, 5 bins over [0, 1]) and whose true-token probability falls in bin ``b``
(y). Every panel shares the colour scale 0..100 %.
"""

from __future__ import annotations

import io
from typing import Any

import numpy as np

from qkov.report.collect import StudyResults
from theory.parametrization import PARAMETRIZATIONS

STEM = "figure2_grid"
CAPTION = ("The paper's Figure 2 (paper preset, SGD), one row per parametrization and one column per rate "
           "setting: DTAP heatmaps, the percentage of held-out sequences by attention on the distinct tokens (x) "
           "and probability of the true token (y), seed means, one colour scale for all panels. Faster QK "
           "should move mass to the right (sharper attention) without moving it down.")


def grid_data(results: StudyResults) -> tuple[list[str], list[str], list[list[np.ndarray]]]:
    """``(params, setting labels, panels[param][setting])`` from the figure2 runs (empty when there are none)."""
    by_param: dict[str, Any] = {}
    for r in results.runs:
        m = r.metrics.get("metrics") if r.kind == "figure2" else None
        if isinstance(m, dict) and isinstance(m.get("settings"), list) and m.get("param") in PARAMETRIZATIONS:
            by_param.setdefault(m["param"], m)
    params: list[str] = [p for p in PARAMETRIZATIONS if p in by_param]
    if not params:
        return [], [], []
    n_set = min(len(by_param[p]["settings"]) for p in params)
    labels, panels = [], []
    first = by_param[params[0]]["settings"]
    for i in range(n_set):
        s = first[i]
        labels.append(f"{s.get('name', f'setting {i}')} (QK {s.get('lr_qk', '?')}, OV {s.get('lr_ov', '?')})")
    for p in params:
        row = []
        for i in range(n_set):
            try:
                a = np.asarray(by_param[p]["settings"][i]["dtap_percent"], dtype=float)
            except (KeyError, TypeError, ValueError):
                a = np.full((5, 5), np.nan)
            row.append(a if a.ndim == 2 else np.full((5, 5), np.nan))
        panels.append(row)
    return params, labels, panels


PRINT_DPI = 200
"""Resolution of the grid (dots per inch): print quality; the page embeds a 256-colour copy (compact_png)."""


def figure2_grid_png(results: StudyResults, dpi: int = PRINT_DPI) -> bytes | None:
    """The grid as PNG bytes at ``dpi`` (default :data:`PRINT_DPI`, recorded in the PNG), None without figure2 runs."""
    params, labels, panels = grid_data(results)
    if not params:
        return None
    from matplotlib.figure import Figure

    n_r, n_c = len(params), len(labels)
    fig = Figure(figsize=(2.4 * n_c + 1.2, 2.1 * n_r + 0.4))
    axes = fig.subplots(n_r, n_c, squeeze=False)
    im = None
    for i, p in enumerate(params):
        for j in range(n_c):
            ax, panel = axes[i, j], panels[i][j]
            im = ax.imshow(panel.T, origin="lower", extent=(0, 1, 0, 1), vmin=0, vmax=100, cmap="Blues")
            for a in range(panel.shape[0]):
                for b in range(panel.shape[1]):
                    if np.isfinite(panel[a, b]) and panel[a, b] >= 0.5:
                        ax.text((a + 0.5) / panel.shape[0], (b + 0.5) / panel.shape[1], f"{panel[a, b]:.0f}",
                                ha="center", va="center", fontsize=6, color="white" if panel[a, b] > 60 else "black")
            if i == 0:
                ax.set_title(labels[j], fontsize=7)
            if j == 0:
                ax.set_ylabel(f"{p}\np(true token)", fontsize=7)
            if i == n_r - 1:
                ax.set_xlabel("distinct attention", fontsize=7)
            ax.tick_params(labelsize=6)
    fig.subplots_adjust(left=0.12, right=0.82, top=0.95, bottom=0.07, hspace=0.35, wspace=0.25)
    if im is None:  # not reached (subplots refuses 0 columns first); narrows im for colorbar
        return None
    cax = fig.add_axes((0.86, 0.15, 0.03, 0.7))
    cb = fig.colorbar(im, cax=cax)
    cb.set_label("% of held-out sequences", fontsize=7)
    cb.ax.tick_params(labelsize=6)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)
    return buf.getvalue()


__all__ = ["STEM", "CAPTION", "PRINT_DPI", "grid_data", "figure2_grid_png"]
