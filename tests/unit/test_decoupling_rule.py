"""Known answers of the decoupling rule (qkov.study.real_inference.judge_decoupling), one per verdict.

Each case gives per-seed paired effects of a QK x embedding 2 x 2 design directly as Comparisons: the rule reads
A|B=low on the mass (QK alone), B|A=low on the mass and on accuracy (the embedding alone)."""

import pytest

from qkov.study.real_inference import Comparison, judge_decoupling

pytestmark = pytest.mark.unit


def case(qk_mass, emb_mass, emb_acc):
    mass = {"A|B=low": Comparison("relevant_mass_mean", "A|B=low", 30.0, tuple(qk_mass), 0.01),
            "B|A=low": Comparison("relevant_mass_mean", "B|A=low", 30.0, tuple(emb_mass), 0.01)}
    task = {"B|A=low": Comparison("accuracy", "B|A=low", 30.0, tuple(emb_acc), 0.01)}
    return judge_decoupling(mass, task, "hatexplain")


FIVE = (0.0, 0.01, -0.01, 0.005, -0.005)   # a small seed spread around each mean below


def shifted(mean):
    return [mean + e for e in FIVE]


def test_supports_when_qk_alone_sharpens_and_the_better_predicting_embedding_does_not():
    v = case(shifted(0.13), shifted(-0.02), shifted(0.03))
    assert v.verdict == "supports" and "Holm over 3 tests" in v.line and len(v.tests) == 3


def test_contradicts_when_the_embedding_alone_sharpens():
    # the arm that predicts better also sharpens: sharpening follows prediction
    v = case(shifted(0.13), shifted(0.10), shifted(0.03))
    assert v.verdict == "contradicts" and "embedding alone raises the mass <" not in v.line


def test_contradicts_when_qk_alone_does_not_sharpen():
    assert case(shifted(-0.05), shifted(-0.02), shifted(0.03)).verdict == "contradicts"


def test_insufficient_when_the_embedding_arm_does_not_predict_better():
    v = case(shifted(0.13), shifted(-0.02), shifted(-0.03))
    assert v.verdict == "insufficient" and "did not predict better" in v.line


def test_insufficient_with_one_seed_or_a_missing_effect():
    assert case([0.13], [-0.02], [0.03]).verdict == "insufficient"
    mass = {"A|B=low": Comparison("relevant_mass_mean", "A|B=low", 30.0, (0.1, 0.2), 0.01)}
    assert judge_decoupling(mass, {}, "hatexplain").verdict == "insufficient"


def test_inconclusive_when_the_intervals_are_wide():
    # two seeds far apart: no test rejects either way
    assert case([0.3, -0.1], [0.1, -0.12], [0.2, -0.1]).verdict == "inconclusive"
