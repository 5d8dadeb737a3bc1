"""Seeds for power (issue 32, MiniLM with power): the inverse of the verdict's minimum detectable effect, the
pilot SD's upper bound, and the powered preset's 10 seeds derived from the measured 3-seed spreads."""

from __future__ import annotations

import math

import pytest
from scipy import stats

from validation.metrics.power import pooled_sd, sd_upper_bound, seeds_for_power
from validation.metrics.stats import min_detectable_effect


@pytest.mark.parametrize("sd, delta, n", [
    # known answers: n is the first count whose noncentral-t power at one-sided 2.5 % reaches 0.8
    (0.0958, 0.1, 10),    # the powered preset's design spread -> 10 seeds (9 give MDE 0.102)
    (0.0685, 0.1, 6),     # the pooled 3-seed spread x sqrt 2, no upper bound
    (0.05, 0.1, 5),
    (1.0, 0.5, 34),       # normal approximation (1.96 + 0.84)^2 / 0.25 = 31.4 -> 32; the t-test needs 34
])
def test_seeds_for_power_known_answers(sd, delta, n):
    assert seeds_for_power(sd, delta) == n
    assert min_detectable_effect(sd, n) <= delta < min_detectable_effect(sd, n - 1)


def test_the_returned_n_has_the_stated_power():
    """Independent of min_detectable_effect's root finding: the noncentral t's tail at the critical value."""
    sd, delta = 0.0958, 0.1
    n = seeds_for_power(sd, delta)

    def power(k: int) -> float:
        return float(stats.nct.sf(stats.t.ppf(0.975, k - 1), k - 1, delta * math.sqrt(k) / sd))

    assert power(n) >= 0.8 > power(n - 1)


def test_large_n_approaches_the_normal_formula():
    # z-formula n = ((z_.975 + z_.8) sd / delta)^2; the t-test needs at most a few more (tolerance: +3)
    z = (stats.norm.ppf(0.975) + stats.norm.ppf(0.8)) ** 2
    sd, delta = 1.0, 0.05
    normal = math.ceil(z * (sd / delta) ** 2)
    assert normal <= seeds_for_power(sd, delta) <= normal + 3


def test_monotone_in_spread_power_and_level():
    base = seeds_for_power(0.1, 0.1)
    assert seeds_for_power(0.2, 0.1) > base and seeds_for_power(0.1, 0.2) < base
    assert seeds_for_power(0.1, 0.1, power=0.9) > base and seeds_for_power(0.1, 0.1, alpha=0.05) < base
    assert seeds_for_power(0.0, 0.1) == 2


@pytest.mark.parametrize("kw", [dict(sd=-0.1), dict(delta=0.0), dict(alpha=1.0), dict(power=0.0),
                                dict(sd=math.nan), dict(sd=1e6, delta=1e-6)])
def test_bad_input_is_one_line(kw):
    args = dict(sd=0.1, delta=0.1) | kw
    with pytest.raises(ValueError) as exc:
        seeds_for_power(**args)
    assert "\n" not in str(exc.value)


def test_sd_upper_bound_and_pooling():
    sd, df = pooled_sd((0.044, 0.051, 0.050), 3)
    assert df == 6 and sd == pytest.approx(math.sqrt((0.044**2 + 0.051**2 + 0.050**2) / 3))
    # chi2: P(6 s^2 / sigma^2 <= chi2_{0.2,6}) = 0.2, so sigma <= s sqrt(6 / chi2_{0.2,6}) with probability 0.8
    assert sd_upper_bound(sd, df, 0.8) == pytest.approx(sd * math.sqrt(6 / stats.chi2.ppf(0.2, 6)))
    assert sd_upper_bound(1.0, 6, 0.8) == pytest.approx(1.3980, abs=1e-4)   # sqrt(6 / 3.070), chi2 table
    assert sd_upper_bound(1.0, 6, 0.5) < sd_upper_bound(1.0, 6, 0.8) < sd_upper_bound(1.0, 2, 0.8)
    with pytest.raises(ValueError):
        sd_upper_bound(1.0, 0)


def test_the_powered_preset_derives_its_seeds():
    from validation.real import powered

    assert powered.design_sd() == pytest.approx(0.09575, abs=5e-5)
    assert powered.powered_seeds() == tuple(range(11))
    n = len(powered.powered_seeds())
    # the MDE against the margin tested: a true change of 0.1 is 0.09 beyond the null +0.01 (10 seeds: 0.095 > 0.09)
    assert min_detectable_effect(powered.design_sd(), n, powered.ALPHA, powered.POWER) <= powered.TARGET_MDE - 0.01
    assert min_detectable_effect(powered.design_sd(), n - 1, powered.ALPHA, powered.POWER) > powered.TARGET_MDE - 0.01
    # the verdict's one level
    from qkov.study.real_inference import ALPHA, POWER

    assert powered.ALPHA == ALPHA == 0.025 and powered.POWER == POWER


def test_every_leg_of_the_powered_preset_has_its_power():
    from validation.metrics.power import power_at
    from validation.real import powered

    legs = powered.leg_powers()
    assert legs["mass"]["power"] == pytest.approx(power_at(powered.design_sd(), 11, 0.09), rel=1e-12)
    assert 0.8 <= legs["mass"]["power"] < 0.85 and legs["mass"]["seeds"] == 11
    # the accuracy leg (non-inferiority at -1 point) at a true difference of 0: nearly powerless at 11 seeds
    assert legs["accuracy"]["design_sd"] == pytest.approx(0.0538, abs=1e-4)
    assert legs["accuracy"]["power"] < 0.1 and legs["accuracy"]["seeds"] == 230
    assert powered.leg_powers(accuracy_difference=0.03)["accuracy"]["power"] > legs["accuracy"]["power"]


def test_power_at_inverts_the_mde_and_sd_from_interval_inverts_seed_interval():
    from validation.metrics.power import power_at, sd_from_interval
    from validation.metrics.stats import seed_interval

    assert power_at(0.05, 8, min_detectable_effect(0.05, 8)) == pytest.approx(0.8, abs=1e-6)
    iv = seed_interval((0.01, 0.05, 0.12, 0.02, 0.09))
    assert sd_from_interval(iv["lo"], iv["hi"], 5) == pytest.approx(iv["sd"], rel=1e-12)
    with pytest.raises(ValueError):
        sd_from_interval(1.0, 0.0, 5)
