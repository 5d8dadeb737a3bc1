"""The claim rule and the paired statistics on hand-built numbers."""

from __future__ import annotations

import pytest

from qkov.study.real_summary import _paired, judge, judge_group

import numpy as np


def group(dataset, mass_diff, p, task_diff):
    tm = "f1" if dataset == "squad" else "accuracy"
    return {"dataset": dataset, "paired": {"10": {"relevant_mass_mean": {"mean_diff": mass_diff, "t_p": p, "n": 3},
                                                  tm: {"mean_diff": task_diff, "t_p": 0.5, "n": 3}}}}


@pytest.mark.parametrize("g, outcome", [
    (group("sva", 0.1, 0.01, -0.005), "supports"),
    (group("sva", 0.1, 0.01, -0.02), "contradicts"),       # accuracy drops 2 points
    (group("sva", -0.1, 0.01, 0.0), "contradicts"),
    (group("sva", 0.1, 0.2, 0.0), "inconclusive"),
    (group("sva", 0.001, 0.001, 0.0), "inconclusive"),      # significant but below MIN_EFFECT
    (group("sva", -0.001, 0.001, 0.0), "inconclusive"),
    (group("squad", 0.1, 0.01, -0.5), "supports"),          # F1 in percent: -0.5 points is within 1
    (group("squad", 0.1, 0.01, -1.5), "contradicts"),
])
def test_judge_group(g, outcome):
    assert judge_group(g)[0] == outcome


def test_judge_combines_groups():
    s = group("sva", 0.1, 0.01, 0.0)
    c = group("sva", -0.1, 0.01, 0.0)
    assert judge({"a": s, "b": s}).verdict == "supports"
    assert judge({"a": c}).verdict == "contradicts"
    assert judge({"a": s, "b": c}).verdict == "mixed"
    assert judge({"a": {"dataset": "sva", "paired": {}}}).verdict == "insufficient"


def test_paired_hand_computed():
    x1, xr = np.array([0.1, 0.2, 0.3]), np.array([0.2, 0.4, 0.5])
    r = _paired(x1, xr)
    d = xr - x1   # 0.1, 0.2, 0.2: mean 0.1667, sd 0.0577, t = 5.0, df 2 -> p = 0.0377
    assert r["n"] == 3 and r["mean_diff"] == pytest.approx(d.mean())
    assert r["t_p"] == pytest.approx(0.03775, abs=1e-4)
    assert r["wilcoxon_p"] == pytest.approx(0.25)


def test_judge_group_without_two_seeds_or_a_p_value_is_insufficient():
    one = group("sva", 0.5, 0.01, 0.0)
    one["paired"]["10"]["relevant_mass_mean"]["n"] = 1
    assert judge_group(one)[0] == "insufficient"
    assert judge_group(group("sva", 0.5, float("nan"), 0.0))[0] == "insufficient"
    # insufficient groups do not count: one supporting group decides
    assert judge({"a": group("sva", 0.1, 0.01, 0.0), "b": one}).verdict == "supports"
