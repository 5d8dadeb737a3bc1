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
