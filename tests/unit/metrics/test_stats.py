"""validation.metrics.stats against scipy and hand-computed values."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sps

from validation.metrics.stats import bootstrap_diff, holm, paired


def test_paired_matches_scipy_on_a_hand_case():
    x1 = np.array([0.50, 0.52, 0.47, 0.55, 0.49])
    xr = np.array([0.58, 0.55, 0.56, 0.61, 0.50])
    got = paired(x1, xr)
    assert got["n"] == 5 and got["mean_diff"] == pytest.approx(0.054)
    assert got["t_p"] == pytest.approx(sps.ttest_rel(xr, x1).pvalue, rel=1e-12)
    assert got["wilcoxon_p"] == pytest.approx(sps.wilcoxon(xr, x1).pvalue, rel=1e-12)
    # a constant nonzero difference: t-test undefined (zero variance) -> NaN, never a fake 0
    assert math.isnan(paired(np.zeros(3), np.ones(3))["t_p"])
    assert paired(np.ones(3), np.ones(3))["t_p"] == 1.0


def test_holm_by_hand():
    # sorted 0.01, 0.03, 0.04, 0.2 (m = 4): 4*0.01, max(., 3*0.03), max(., 2*0.04), max(., 1*0.2)
    assert holm([0.01, 0.04, 0.03, 0.2]) == pytest.approx([0.04, 0.09, 0.09, 0.2])
    out = holm([0.5, float("nan"), 0.01])      # NaN stays NaN and is not counted in m = 2
    assert out[0] == pytest.approx(0.5) and math.isnan(out[1]) and out[2] == pytest.approx(0.02)
    assert holm([0.9, 0.8]) == pytest.approx([1.0, 1.0])    # 2 * 0.8 capped at 1; monotone after it


def test_bootstrap_interval_of_a_mean_difference():
    rng = np.random.default_rng(0)
    base = rng.integers(0, 2, size=(3, 400)).astype(float)
    const = bootstrap_diff(base, base + 0.1, n_boot=200)
    assert const["diff"] == pytest.approx(0.1) and const["lo"] == pytest.approx(0.1) and const["hi"] == pytest.approx(0.1)
    other = np.clip(base + (rng.random((3, 400)) < 0.2), 0, 1)
    ci = bootstrap_diff(base, other, n_boot=500)
    assert ci["lo"] < ci["diff"] < ci["hi"] and ci["lo"] > 0 and (ci["n_seeds"], ci["n_items"]) == (3, 400)


def test_seed_interval_is_scipys_t_interval():
    from validation.metrics.stats import seed_interval

    d = np.array([-0.050, -0.020, -0.062])          # SVA quick: per-seed accuracy changes
    got = seed_interval(d)
    lo, hi = sps.t.interval(0.95, 2, loc=d.mean(), scale=sps.sem(d))
    assert got["n"] == 3 and got["lo"] == pytest.approx(lo, rel=1e-12) and got["hi"] == pytest.approx(hi, rel=1e-12)
    assert got["lo"] == pytest.approx(-0.0977, abs=1e-4) and got["hi"] == pytest.approx(0.0097, abs=1e-4)
    one = seed_interval([0.3])
    assert one["n"] == 1 and math.isnan(one["lo"]) and math.isnan(one["hi"])
    flat = seed_interval([0.2, 0.2, 0.2])
    assert flat["lo"] == pytest.approx(0.2) and flat["hi"] == pytest.approx(0.2)   # zero spread: a point


def test_one_sided_p_matches_scipy_and_handles_zero_spread():
    from validation.metrics.stats import one_sided_p

    d = [0.11, 0.15, 0.19]
    assert one_sided_p(d, 0.01, "greater") == pytest.approx(sps.ttest_1samp(d, 0.01, alternative="greater").pvalue)
    assert one_sided_p(d, 0.01, "less") == pytest.approx(1 - one_sided_p(d, 0.01, "greater"))
    assert one_sided_p([0.2, 0.2], 0.01, "greater") == 0.0 and one_sided_p([0.2, 0.2], 0.01, "less") == 1.0
    assert one_sided_p([0.01, 0.01], 0.01, "greater") == 1.0          # a tie with the null is no evidence
    assert math.isnan(one_sided_p([0.2], 0.0, "greater"))
    with pytest.raises(ValueError):
        one_sided_p(d, 0.0, "two-sided")


def test_min_detectable_effect_has_the_stated_power():
    from validation.metrics.stats import min_detectable_effect

    sd, n, alpha = 0.04, 3, 0.025
    mde = min_detectable_effect(sd, n, alpha)
    crit = sps.t.ppf(1 - alpha, n - 1)
    # at the MDE the noncentral t exceeds the critical value with probability 0.8 (the definition) ...
    assert sps.nct.sf(crit, n - 1, mde * math.sqrt(n) / sd) == pytest.approx(0.8, abs=1e-6)
    # ... and by simulation: 20000 draws of 3 seeds with true mean = MDE reject about 80 % of the time
    rng = np.random.default_rng(1)
    x = rng.normal(mde, sd, size=(20000, n))
    t = x.mean(1) / (x.std(1, ddof=1) / math.sqrt(n))
    assert (t > crit).mean() == pytest.approx(0.8, abs=0.015)     # 3 binomial s.e. at 20000 draws
    # large n tends to the normal formula; more seeds detect less
    assert min_detectable_effect(1.0, 400) == pytest.approx((1.959964 + 0.841621) / 20, rel=0.01)
    assert min_detectable_effect(sd, 5) < mde and min_detectable_effect(0.0, 3) == 0.0
    assert math.isnan(min_detectable_effect(sd, 1))
