r"""Paired statistics of seeds against a baseline: paired t-test and Wilcoxon, Holm's correction, a
seed-and-item bootstrap of a mean difference, and the seed-level inference of the real-data verdict
(:func:`seed_interval`, :func:`one_sided_p`, :func:`min_detectable_effect`: the seed is the unit, its
``n - 1`` degrees of freedom are the only ones). Pure functions of arrays (``scipy.stats`` for the tests).
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


def seed_interval(diffs, level: float = 0.95) -> dict[str, float]:
    r"""Two-sided ``level`` t-interval of the mean of per-seed paired differences ``diffs`` (shape ``(n,)``):
    :math:`\bar d \pm t_{(1+\text{level})/2,\,n-1}\, s/\sqrt n` (``s`` the sample std, ``ddof=1``).

    Returns ``{"n", "mean", "sd", "lo", "hi"}``; ``lo = hi = mean`` when ``s = 0``; NaN ends for ``n < 2``.
    Seeds, not items, are the replicates: the item-level spread of one seed says nothing of the next seed's."""
    d = np.asarray(diffs, float)
    n = int(d.size)
    mean = float(d.mean()) if n else math.nan
    sd = float(d.std(ddof=1)) if n >= 2 else math.nan
    if n < 2:
        return {"n": n, "mean": mean, "sd": sd, "lo": math.nan, "hi": math.nan}
    half = float(stats.t.ppf(0.5 + level / 2, n - 1)) * sd / math.sqrt(n)
    return {"n": n, "mean": mean, "sd": sd, "lo": mean - half, "hi": mean + half}


def one_sided_p(diffs, null: float, alternative: str) -> float:
    r"""One-sample t-test p of ``H0: mu <= null`` (``alternative="greater"``) or ``H0: mu >= null``
    (``"less"``) for the mean of ``diffs`` over seeds, :math:`t = (\bar d - \text{null})/(s/\sqrt n)` on
    ``n - 1`` df. ``s = 0``: 0 when every difference lies strictly on the alternative's side, else 1.
    NaN for ``n < 2``."""
    d = np.asarray(diffs, float)
    if d.size < 2:
        return math.nan
    if alternative not in ("greater", "less"):
        raise ValueError(f"alternative: {alternative!r}: must be 'greater' or 'less'")
    if float(d.std(ddof=1)) == 0.0:
        beyond = d[0] > null if alternative == "greater" else d[0] < null
        return 0.0 if beyond else 1.0
    return float(stats.ttest_1samp(d, null, alternative=alternative).pvalue)


def min_detectable_effect(sd: float, n: int, alpha: float = 0.025, power: float = 0.8) -> float:
    r"""The smallest true mean difference a one-sided one-sample t-test at level ``alpha`` detects with
    probability ``power`` over ``n`` seeds of spread ``sd``: the :math:`\delta` with
    :math:`P(T'_{n-1,\ \delta\sqrt n/sd} > t_{1-\alpha,\,n-1}) = \text{power}` (``T'`` noncentral t;
    ``scipy.stats.nct``, solved by ``brentq``). 0 when ``sd = 0``; NaN for ``n < 2``. For large ``n`` it tends
    to :math:`(z_{1-\alpha} + z_{\text{power}})\, sd/\sqrt n`."""
    if n < 2 or not math.isfinite(sd):
        return math.nan
    if sd == 0:
        return 0.0
    from scipy.optimize import brentq

    df, crit = n - 1, float(stats.t.ppf(1 - alpha, n - 1))

    def gap(nc: float) -> float:
        return float(stats.nct.sf(crit, df, nc)) - power

    nc = brentq(gap, 0.0, 1e4)
    return float(nc * sd / math.sqrt(n))


__all__ = ["paired", "holm", "bootstrap_diff", "seed_interval", "one_sided_p", "min_detectable_effect", "N_BOOT",
           "BOOT_SEED"]
