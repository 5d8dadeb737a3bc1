"""One level for the real-data verdict (issue 45): tests one-sided at 0.025, intervals two-sided 95 %, MDEs against
the null actually tested; the case where the old mix (Holm at one-sided 0.05 beside 95 % intervals) said supports."""

import pytest

from qkov.study.real_inference import (ALPHA, LEVEL, POWER, Comparison, RealEvidence, family_verdicts,
                                       judge_real_evidence)
from theory.claims import CLAIMS, THRESHOLDS
from validation.metrics.stats import holm, min_detectable_effect, one_sided_p, seed_interval

pytestmark = pytest.mark.unit

MASS = (0.01, 0.07, 0.11, 0.02, 0.10)          # mean +0.062; 95 % interval [+0.0055, +0.118]: lower end below 0.01
ACC = (0.012, 0.02, 0.016, 0.014, 0.018)


def ev(mass=MASS, task=ACC, group="g"):
    return RealEvidence("hatexplain", group, 30.0, Comparison("relevant_mass_mean", "best_val", 30.0, tuple(mass), 0.01),
                        Comparison("accuracy", "best_val", 30.0, tuple(task), 0.01, null=-0.01))


def test_the_level_lives_with_the_rules_thresholds():
    assert ALPHA == THRESHOLDS["real-alpha"].bound == 0.025 and LEVEL == pytest.approx(0.95)
    assert POWER == THRESHOLDS["real-power"].bound
    assert {"real-alpha", "real-attention-margin", "real-task-margin-accuracy"} <= set(CLAIMS["real-data"].thresholds)


def test_the_old_mix_said_supports_beside_an_interval_below_the_margin_the_one_level_does_not():
    p_mass = one_sided_p(MASS, 0.01, "greater")
    p_acc = one_sided_p(ACC, -0.01, "greater")
    iv = seed_interval(MASS, 0.95)
    assert 0.025 < p_mass < 0.05 and iv["lo"] < 0.01 < iv["hi"]             # the interval does not clear +0.01
    assert not (iv["lo"] < -0.01 and iv["hi"] > 0.01)                       # nor straddles both (the old guard)
    assert all(p < 0.05 for p in holm([p_mass, p_acc]))                     # the old rule: supports
    v = judge_real_evidence(ev())
    assert v.verdict == "inconclusive", v.line


def test_mde_is_against_the_null_tested_at_the_one_level():
    c = Comparison("relevant_mass_mean", "best_val", 30.0, MASS, 0.01)
    sd = seed_interval(MASS)["sd"]
    assert c.mde() == pytest.approx(0.01 + min_detectable_effect(sd, 5, 0.025, 0.8))
    task = Comparison("accuracy", "best_val", 30.0, ACC, 0.01, null=-0.01)
    assert task.mde() == pytest.approx(-0.01 + min_detectable_effect(seed_interval(ACC)["sd"], 5, 0.025, 0.8))
    less = c.tested(0.01, "less")
    assert less.mde() == pytest.approx(0.01 - min_detectable_effect(sd, 5, 0.025, 0.8))
    assert c.describe().endswith(f"MDE {c.mde():+.2g} against +0.01")


@pytest.mark.parametrize("shift", [-0.03, -0.012, -0.005, 0.0, 0.01, 0.03])
def test_a_verdict_agrees_with_the_intervals_printed_beside_it(shift):
    mass = tuple(m + shift for m in MASS)
    v = judge_real_evidence(ev(mass=mass))
    iv = seed_interval(mass)
    if v.verdict == "supports":
        assert iv["lo"] > 0.01
    if v.verdict == "contradicts":
        assert iv["hi"] < 0.01
    if iv["lo"] > 0.01:
        assert v.verdict == "supports"


def test_family_across_groups_holds_a_group_verdict_only_after_holm_over_the_groups():
    strong = tuple(m + 0.1 for m in MASS)        # mass p ~ 1e-4 on its own
    marginal = tuple(m + 0.01 for m in MASS)     # lower end just above +0.01: supports on its own (p 0.019)
    own = judge_real_evidence(ev(mass=marginal)).verdict
    fam = family_verdicts([ev(mass=strong, group="a"), ev(mass=marginal, group="b"), ev(group="c")])
    assert own == "supports" and fam["a"] == "supports" and fam["b"] == "inconclusive" and fam["c"] == "inconclusive"
