"""The verdict rule, Holm's correction, the bootstrap interval and matched-loss levels on hand-built numbers."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from qkov.study.real_summary import (at_level, bootstrap_diff, combine_outcomes, holm, judge_group, loss_levels,
                                     paired)


def group(dataset="sva", a=(0.1, 0.001), b=(0.1, 0.001), ci=(-0.005, 0.005), n=5, levels=(0.3,)):
    """A summary group: mass difference and Holm p at best-val (a) and matched loss (b), task CI (lo, hi)."""
    lv = list(levels)
    paired_ = {"best_val": {"30": {"relevant_mass_mean": {"mean_diff": a[0], "p_holm": a[1], "n": n}}}}
    if lv:
        paired_[f"matched_loss@{lv[0]:.4g}"] = {"30": {"relevant_mass_mean": {"mean_diff": b[0], "p_holm": b[1],
                                                                              "n": n}}}
    tm = "f1" if dataset == "squad" else "accuracy"
    return {"dataset": dataset, "claim_ratio": 30.0, "task_metric": tm, "paired": paired_,
            "matched_loss": {"levels": lv},
            "bootstrap": {"best_val": {"30": {"diff": sum(ci) / 2, "lo": ci[0], "hi": ci[1]}}}}


@pytest.mark.parametrize("g, outcome", [
    (group(), "supports"),
    (group(ci=(-0.02, 0.01)), "inconclusive"),                     # interval reaches below -1 point: not "no worse"
    (group(ci=(-0.05, -0.02)), "contradicts"),                     # clearly worse
    (group(a=(-0.1, 0.001)), "contradicts"),                       # mass falls at best-val
    (group(b=(-0.1, 0.001)), "contradicts"),                       # mass falls at matched loss
    (group(b=(0.1, 0.2)), "inconclusive"),                         # matched loss not significant after Holm
    (group(a=(0.005, 0.001)), "inconclusive"),                     # below the minimum effect
    (group(levels=()), "insufficient"),                            # no level reached by every run
    (group(n=1), "insufficient"),
    (group("squad", ci=(-0.5, 0.8)), "supports"),                  # F1 in points: -0.5 is within the 1-point margin
    (group("squad", ci=(-1.5, 0.8)), "inconclusive"),
])
def test_judge_group(g, outcome):
    assert judge_group(g)[0] == outcome


def with_uniform_baseline(g, best_mass=(0.178, 0.181), task=(0.713, 0.713), uniform_task=(0.713, 0.713)):
    """Add best-val masses, fixed-epoch task metrics and a uniform baseline (mass 0.178) at ratios 1 and 30."""
    tm = g["task_metric"]
    g["best_val"] = {"rows": [{"ratio": r, "relevant_mass_mean": {"mean": m}} for r, m in zip((1.0, 30.0), best_mass)]}
    g["rows"] = [{"ratio": r, tm: {"mean": x}} for r, x in zip((1.0, 30.0), task)]
    g["baseline"] = {"uniform": {"rows": [{"ratio": r, "relevant_mass_mean": {"mean": 0.178}, tm: {"mean": x}}
                                         for r, x in zip((1.0, 30.0), uniform_task)]}}
    return g


def test_attention_that_never_left_uniform_is_insufficient():
    # the paper's SVA model at quick size: mass and accuracy both equal the uniform baseline's
    assert judge_group(with_uniform_baseline(group()))[0] == "insufficient"
    # the claim ratio's attention moved
    assert judge_group(with_uniform_baseline(group(), best_mass=(0.178, 0.25)))[0] == "supports"


def test_mass_near_uniform_but_attention_that_matters_is_judged():
    # the 6-layer SQuAD decoder: rollout mass within 0.01 of uniform at both ratios, but uniform attention
    # costs 11.8 (ratio 1) and 11.3 (ratio 20) F1 points: the model left its start, so the rule judges it
    def decoder(task):
        return with_uniform_baseline(group("squad", a=(-0.004, 1.0), b=(0.004, 1.0), ci=(-4.9, 0.1)),
                                     best_mass=(0.181, 0.177), task=task, uniform_task=(2.8, 0.6))

    assert judge_group(decoder((14.6, 11.9)))[0] == "inconclusive"
    # a cost just under the 1-point margin at one ratio still counts as unused there; both must be unused
    assert judge_group(decoder((3.5, 11.9)))[0] == "inconclusive"
    assert judge_group(decoder((3.5, 1.2)))[0] == "insufficient"


def test_combine_outcomes():
    assert combine_outcomes([]) == "insufficient"
    assert combine_outcomes(["insufficient"]) == "insufficient"
    assert combine_outcomes(["supports", "supports", "insufficient"]) == "supports"
    assert combine_outcomes(["contradicts"]) == "contradicts"
    assert combine_outcomes(["inconclusive", "inconclusive", "insufficient"]) == "inconclusive"
    assert combine_outcomes(["supports", "inconclusive"]) == "mixed"


def test_holm_hand_computed():
    # m = 4: sorted 0.01, 0.02, 0.03, 0.5 -> 0.04, max(0.04, 0.06), max(0.06, 0.06), max(0.06, 0.5)
    assert holm([0.03, 0.01, 0.5, 0.02]) == pytest.approx([0.06, 0.04, 0.5, 0.06])
    out = holm([0.2, float("nan"), 0.01])                 # NaN is not a test: m = 2
    assert out[0] == pytest.approx(0.2) and np.isnan(out[1]) and out[2] == pytest.approx(0.02)


@given(st.lists(st.floats(0, 1), min_size=1, max_size=30))
def test_holm_dominates_raw_and_keeps_order(ps):
    adj = holm(ps)
    assert all(a >= p - 1e-12 and a <= 1 for a, p in zip(adj, ps))
    order = np.argsort(ps, kind="stable")
    assert all(adj[i] <= adj[j] + 1e-12 for i, j in zip(order, order[1:]))


def test_paired_hand_computed():
    x1, xr = np.array([0.1, 0.2, 0.3]), np.array([0.2, 0.4, 0.5])
    r = paired(x1, xr)
    # d = 0.1, 0.2, 0.2: mean 0.1667, sd 0.0577, t = 5.0 with 2 df -> two-sided p = 0.0377
    assert r["n"] == 3 and r["mean_diff"] == pytest.approx(0.5 / 3)
    assert r["t_p"] == pytest.approx(0.03775, abs=1e-4)
    assert r["wilcoxon_p"] == pytest.approx(0.25)


def test_bootstrap_interval_brackets_a_clear_shift_and_zero_for_none():
    rng = np.random.default_rng(0)
    base = rng.integers(0, 2, size=(5, 400)).astype(float)
    better = np.clip(base + (rng.random((5, 400)) < 0.2), 0, 1)     # about +0.1 accuracy
    ci = bootstrap_diff(base, better, n_boot=500)
    assert 0 < ci["lo"] < ci["diff"] < ci["hi"] and ci["diff"] == pytest.approx((better - base).mean())
    same = bootstrap_diff(base, base, n_boot=200)
    assert same["lo"] == same["hi"] == 0.0


@settings(max_examples=50)
@given(st.lists(st.lists(st.floats(0.01, 5), min_size=2, max_size=8), min_size=1, max_size=6))
def test_every_level_is_crossed_from_above_by_every_run(curves):
    levels = loss_levels(curves)
    for lev in levels:
        for c in curves:
            cps = [{"step": i, "epoch": i, "train_loss": x, "test": {}} for i, x in enumerate(c)]
            hit = at_level(cps, lev)
            assert hit is not None and hit["train_loss"] <= lev
            # a crossing: some earlier checkpoint (the peak) was above the level, none since the peak below it
            assert max(c[:hit["step"]]) > lev
            assert all(x > lev for x in c[int(np.argmax(c)) + 1:hit["step"]])


def test_a_seed_whose_untrained_loss_is_low_leaves_levels():
    # HateXplain paper model, seed 4: step-0 loss 0.516, raised by the warm-up to 0.86, then down to 0.39;
    # ratio 100 ends at 0.52. With the smallest step-0 loss as the top no level existed (0.525 > 0.516).
    runs = [[1.02, 0.80, 0.60, 0.45, 0.41], [0.516, 0.86, 0.70, 0.50, 0.39], [1.02, 0.77, 0.60, 0.55, 0.525]]
    levels = loss_levels(runs)
    assert levels and levels[0] == pytest.approx(0.525) and levels[-1] < 0.77
    hit = at_level([{"step": i, "epoch": i, "train_loss": x, "test": {}} for i, x in enumerate(runs[1])], levels[0])
    assert hit["step"] == 3                           # 0.50, the first value <= 0.525 after the peak 0.86


def test_matched_point_is_after_the_peak_not_a_dip_before_it():
    cps = [{"step": i, "epoch": i, "train_loss": x, "test": {}} for i, x in enumerate([0.5, 0.3, 0.9, 0.6, 0.4])]
    assert at_level(cps, 0.45)["step"] == 4           # not step 1 (0.3, before the loss rose to 0.9)
    assert at_level(cps, 0.2) is None


def test_levels_none_when_no_run_improves():
    assert loss_levels([[1.0, 1.2], [0.9, 0.95]]) == []
    assert loss_levels([[1.0, 0.5], [1.2, 0.6]]) == pytest.approx([0.6, 0.6 * (1.0 / 0.6) ** (1 / 3),
                                                                    0.6 * (1.0 / 0.6) ** (2 / 3)])
