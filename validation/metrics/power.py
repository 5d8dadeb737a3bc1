r"""How many seeds a paired comparison needs: the inverse of
:func:`validation.metrics.stats.min_detectable_effect` (the real-data verdict's minimum detectable effect),
and the spread to plan with when it was measured on a few seeds only.

The verdict's test is a one-sided one-sample t-test on the per-seed paired differences :math:`d_s`
(:mod:`qkov.study.real_inference`); over ``n`` seeds of spread ``sd`` it detects a true mean difference
:math:`\delta` at level :math:`\alpha` with probability ``power`` iff
:math:`\mathrm{MDE}(sd, n) \le \delta`. :func:`seeds_for_power` is the smallest such ``n``.
"""

from __future__ import annotations

import math

from scipy import stats

from .stats import min_detectable_effect

MAX_SEEDS = 100_000
"""Upper end of the search of :func:`seeds_for_power` (a larger need is an error, not a plan)."""


def seeds_for_power(sd: float, delta: float, alpha: float = 0.025, power: float = 0.8) -> int:
    r"""The smallest number of seeds ``n >= 2`` whose one-sided one-sample t-test at level ``alpha`` detects a
    true mean paired difference ``delta`` with probability ``power``, the differences having spread ``sd``:
    :math:`\min\{n \ge 2 : \mathrm{MDE}(sd, n, \alpha, \text{power}) \le \delta\}`
    (:func:`~validation.metrics.stats.min_detectable_effect`, noncentral t).

    For large ``n`` it tends to the normal approximation :math:`\lceil((z_{1-\alpha} + z_{\text{power}})\,
    sd/\delta)^2\rceil`; the t-test needs a few more (its critical value and noncentrality on ``n - 1`` df).
    ``sd = 0`` gives 2 (the fewest a t-test takes). ``ValueError`` (one line) for ``sd < 0``, ``delta <= 0``,
    ``alpha`` or ``power`` outside (0, 1), a non-finite value, or a need above :data:`MAX_SEEDS`."""
    for name, v in (("sd", sd), ("delta", delta), ("alpha", alpha), ("power", power)):
        if not math.isfinite(v):
            raise ValueError(f"{name}: {v}: must be a finite number")
    if sd < 0 or delta <= 0 or not 0 < alpha < 1 or not 0 < power < 1:
        raise ValueError(f"seeds_for_power: sd {sd}, delta {delta}, alpha {alpha}, power {power}: needs sd >= 0, "
                         "delta > 0 and alpha, power in (0, 1)")
    if sd == 0:
        return 2

    def enough(n: int) -> bool:
        return min_detectable_effect(sd, n, alpha, power) <= delta

    hi = 2
    while not enough(hi):          # MDE falls with n: double to a sufficient n, then bisect
        if hi >= MAX_SEEDS:
            raise ValueError(f"seeds_for_power: sd {sd} and delta {delta} need more than {MAX_SEEDS} seeds")
        hi = min(2 * hi, MAX_SEEDS)
    lo = max(2, hi // 2)
    if enough(lo):
        return lo
    while hi - lo > 1:             # invariant: enough(hi), not enough(lo)
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if enough(mid) else (mid, hi)
    return hi


def sd_upper_bound(sd: float, df: int, confidence: float = 0.8) -> float:
    r"""The one-sided ``confidence`` upper bound of a spread :math:`\sigma` estimated as ``sd`` on ``df`` degrees
    of freedom: :math:`s\,\sqrt{df / \chi^2_{1-\text{confidence},\,df}}` (:math:`(df)\,s^2/\sigma^2 \sim
    \chi^2_{df}`). Planning with it instead of ``s`` keeps the stated power with probability ``confidence``
    when ``s`` comes from a small pilot (Browne 1995, "On the use of a pilot sample for sample size
    determination"). ``ValueError`` for ``df < 1`` or ``confidence`` outside (0, 1)."""
    if df < 1 or not 0 < confidence < 1:
        raise ValueError(f"sd_upper_bound: df {df}, confidence {confidence}: needs df >= 1 and confidence in (0, 1)")
    return float(sd * math.sqrt(df / stats.chi2.ppf(1 - confidence, df)))


def pooled_sd(sds: list[float] | tuple[float, ...], n: int) -> tuple[float, int]:
    r"""The pooled spread of groups of ``n`` replicates each with sample SDs ``sds``:
    :math:`\sqrt{\overline{s^2}}` on :math:`k(n-1)` degrees of freedom (``k = len(sds)``)."""
    if not sds or n < 2:
        raise ValueError(f"pooled_sd: {len(sds)} group(s) of {n} replicate(s): needs >= 1 group of >= 2")
    return float(math.sqrt(sum(s * s for s in sds) / len(sds))), len(sds) * (n - 1)


def power_at(sd: float, n: int, delta: float, alpha: float = 0.025) -> float:
    r"""The power of the one-sided one-sample t-test at level ``alpha`` over ``n`` seeds of spread ``sd`` when the
    true mean lies ``delta`` beyond the null: :math:`P(T'_{n-1,\ \delta\sqrt n/sd} > t_{1-\alpha,\,n-1})`
    (noncentral t; the inverse view of :func:`~validation.metrics.stats.min_detectable_effect`). 1 for ``sd = 0``
    and ``delta > 0``; NaN for ``n < 2``."""
    if n < 2 or not math.isfinite(sd):
        return math.nan
    if sd == 0:
        return 1.0 if delta > 0 else 0.0
    df = n - 1
    return float(stats.nct.sf(stats.t.ppf(1 - alpha, df), df, delta * math.sqrt(n) / sd))


def sd_from_interval(lo: float, hi: float, n: int, level: float = 0.95) -> float:
    r"""The sample SD of ``n`` paired differences whose two-sided ``level`` t-interval is ``[lo, hi]``:
    :math:`s = (hi - lo)\sqrt n / (2\, t_{(1+\text{level})/2,\,n-1})` (to recover a planning SD from a printed
    interval when the runs are not at hand; good to the interval's printed digits)."""
    if n < 2 or not hi >= lo:
        raise ValueError(f"sd_from_interval: [{lo}, {hi}] over {n} seeds: needs hi >= lo and n >= 2")
    return float((hi - lo) * math.sqrt(n) / (2 * stats.t.ppf(0.5 + level / 2, n - 1)))


__all__ = ["seeds_for_power", "sd_upper_bound", "pooled_sd", "power_at", "sd_from_interval", "MAX_SEEDS"]
