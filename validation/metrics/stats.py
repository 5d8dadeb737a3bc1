r"""Paired statistics of seeds against a baseline: paired t-test and Wilcoxon, Holm's correction, a
seed-and-item bootstrap of a mean difference. Pure functions of arrays (``scipy.stats`` for the tests).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy import stats

N_BOOT = 2000
"""Bootstrap resamples of :func:`bootstrap_diff` (a 95 % percentile interval's ends move by ~1 % of its width)."""
BOOT_SEED = 20260101


def paired(x1: np.ndarray, xr: np.ndarray) -> dict[str, Any]:
    """Mean difference ``xr - x1`` over paired seeds, paired t-test and Wilcoxon p (NaN when undefined)."""
    d = xr - x1
    res: dict[str, Any] = {"n": int(d.size), "mean_diff": float(d.mean()) if d.size else math.nan}
    if d.size >= 2 and np.any(d != d[0]):
        res["t_p"] = float(stats.ttest_rel(xr, x1).pvalue)
    else:
        res["t_p"] = 1.0 if d.size >= 2 and np.all(d == 0) else math.nan
    try:
        res["wilcoxon_p"] = float(stats.wilcoxon(xr, x1).pvalue) if d.size >= 1 and np.any(d != 0) else 1.0
    except ValueError:
        res["wilcoxon_p"] = math.nan
    return res


def holm(pvalues: list[float]) -> list[float]:
    r"""Holm's step-down adjusted p-values: sort :math:`p_{(1)}\le\dots\le p_{(m)}`,
    :math:`\tilde p_{(i)} = \max_{j\le i} \min(1, (m-j+1)\,p_{(j)})`. NaN stays NaN and does not count in ``m``."""
    p = np.asarray(pvalues, float)
    ok = np.flatnonzero(np.isfinite(p))
    out = np.full(p.shape, np.nan)
    m = ok.size
    running = 0.0
    for rank, i in enumerate(ok[np.argsort(p[ok], kind="stable")]):
        running = max(running, min(1.0, (m - rank) * p[i]))
        out[i] = running
    return out.tolist()


def bootstrap_diff(base: np.ndarray, other: np.ndarray, *, n_boot: int = N_BOOT, seed: int = BOOT_SEED
                   ) -> dict[str, float]:
    """95 % percentile interval of the mean of ``other - base`` (arrays ``(seeds, items)``, paired by seed
    and item), resampling seeds and items with replacement."""
    base, other = np.asarray(base, float), np.asarray(other, float)
    d = other - base
    rng = np.random.default_rng(seed)
    S, N = d.shape
    si = rng.integers(0, S, size=(n_boot, S))
    ii = rng.integers(0, N, size=(n_boot, N))
    means = np.array([d[s][:, i].mean() for s, i in zip(si, ii)])
    lo, hi = np.percentile(means, [2.5, 97.5])
    return {"diff": float(d.mean()), "lo": float(lo), "hi": float(hi), "n_seeds": int(S), "n_items": int(N)}


__all__ = ["paired", "holm", "bootstrap_diff", "N_BOOT", "BOOT_SEED"]
