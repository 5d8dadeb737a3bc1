"""Token F1, IOU-F1 and AUPRC against human rationales, as ERASER's scorer computes them."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from validation.metrics.plausibility import (auprc, hard_rationale, iou_counts, iou_f1, mask_to_spans,
                                             mean_rationale_length, token_f1, token_prf)


def test_token_f1_hand_computed():
    pred = [[1, 1, 0, 0], [0, 0, 0, 0], [1, 0, 0, 0]]
    gold = [[0, 1, 1, 0], [0, 0, 0, 0], [0, 0, 0, 0]]
    # instance 0: P = R = 1/2, F = 1/2; instance 1: nothing on either side, not scored;
    # instance 2: a prediction without gold, F = 0 and scored. Mean over scored = 1/4.
    p, r, f, scored = token_prf(pred, gold)
    np.testing.assert_allclose(p, [0.5, 0, 0])
    np.testing.assert_allclose(r, [0.5, 0, 0])
    assert scored.tolist() == [True, False, True]
    assert token_f1(pred, gold) == pytest.approx(0.25)
    np.testing.assert_allclose(token_f1(pred, gold, per_instance=True), [0.5, 0.0, 0.0])


masks = st.integers(1, 12).flatmap(lambda n: st.tuples(st.lists(st.booleans(), min_size=n, max_size=n),
                                                        st.lists(st.booleans(), min_size=n, max_size=n)))


@given(masks)
def test_token_f1_symmetric_and_one_iff_equal(pair):
    a, b = pair
    fa = token_f1([a], [b], per_instance=True)[0]
    fb = token_f1([b], [a], per_instance=True)[0]
    assert fa == pytest.approx(fb)
    assert 0 <= fa <= 1
    assert (fa == pytest.approx(1.0)) == (a == b and any(a))


def test_mask_to_spans():
    assert mask_to_spans([0, 1, 1, 0, 1]) == [(1, 3), (4, 5)]
    assert mask_to_spans([1, 1]) == [(0, 2)]
    assert mask_to_spans([0, 0]) == []


def test_iou_f1_hand_computed():
    gold = [[0, 1, 1, 1, 0, 0],   # span [1, 4)
            [1, 1, 0, 0, 1, 1]]   # spans [0, 2), [4, 6)
    pred = [[0, 1, 1, 0, 0, 1],   # [1, 3): IOU 2/3 with [1, 4) -> TP; [5, 6): no overlap, IOU 0
            [1, 0, 0, 0, 0, 0]]   # [0, 1): IOU 1/2 with [0, 2) -> TP at >= 0.5
    tp, n_pred, n_gold = iou_counts(pred, gold)
    assert tp.tolist() == [1, 1] and n_pred.tolist() == [2, 1] and n_gold.tolist() == [1, 2]
    # macro: P = mean(1/2, 1) = 3/4, R = mean(1, 1/2) = 3/4 -> F1 = 3/4
    assert iou_f1(pred, gold) == pytest.approx(0.75)
    # micro: P = 2/3, R = 2/3
    assert iou_f1(pred, gold, average="micro") == pytest.approx(2 / 3)
    # at threshold 0.6 instance 1's span no longer matches: P = mean(1/2, 0), R = mean(1, 0)
    assert iou_f1(pred, gold, threshold=0.6) == pytest.approx(2 * 0.25 * 0.5 / 0.75)
    assert iou_f1(gold, gold) == 1.0
    with pytest.raises(ValueError, match="average"):
        iou_f1(pred, gold, average="weighted")


def test_auprc_hand_computed_and_skips():
    # ranking 0.9 (neg), 0.8 (pos), 0.2 (neg), 0.1 (pos): AP = (1/2 + 2/4) / 2 = 1/2
    assert auprc([[0.9, 0.8, 0.1, 0.2]], [[0, 1, 1, 0]]) == pytest.approx(0.5)
    # a perfect ranking scores 1 with both methods; an all-negative instance is skipped
    scores = [[0.9, 0.8, 0.1, 0.2], [0.1, 0.2, 0.3, 0.4]]
    gold = [[1, 1, 0, 0], [0, 0, 0, 0]]
    assert auprc(scores, gold) == pytest.approx(1.0)
    assert auprc(scores, gold, method="trapezoid") == pytest.approx(1.0)
    per = auprc(scores, gold, per_instance=True)
    assert per[0] == pytest.approx(1.0) and np.isnan(per[1])
    # invalid positions are left out: without the padded 0.95 the ranking is perfect
    assert auprc([[0.95, 0.9, 0.1]], [[0, 1, 0]], valid=[[0, 1, 1]]) == pytest.approx(1.0)
    assert auprc([[0.95, 0.9, 0.1]], [[0, 1, 0]]) == pytest.approx(0.5)


def test_hard_rationale_rule():
    gold = [[1, 1, 0, 0], [0, 0, 0, 0], [1, 1, 1, 0]]
    assert mean_rationale_length(gold) == 3  # mean of 2 and 3 = 2.5, rounded half up
    assert mean_rationale_length([[0, 0]]) == 1
    scores = [[0.1, 0.4, 0.3, 0.2]]
    np.testing.assert_array_equal(hard_rationale(scores, [[1, 0, 1, 1]], 2), [[0, 0, 1, 1]])
    np.testing.assert_array_equal(hard_rationale(scores, None, 10), [[1, 1, 1, 1]])


def test_directions_declared():
    assert not token_f1.lower_is_better and not iou_f1.lower_is_better and not auprc.lower_is_better


@given(st.integers(1, 12).flatmap(lambda n: st.tuples(
    st.lists(st.sampled_from([0.0, 0.1, 0.25, 0.5, 0.7, 1.0]), min_size=n, max_size=n),  # few values: ties
    st.lists(st.booleans(), min_size=n, max_size=n))))
def test_auprc_equals_sklearn_average_precision_and_trapezoid_with_ties(case):
    # the numpy curve against scikit-learn's functions it replaces (average_precision_score; auc of
    # precision_recall_curve), to 1e-12: both sum the same few ratios in the same order
    from sklearn.metrics import auc, average_precision_score, precision_recall_curve

    scores, gold = np.array(case[0]), np.array(case[1])
    ap, trap = auprc([scores], [gold], per_instance=True)[0], auprc([scores], [gold], method="trapezoid",
                                                                      per_instance=True)[0]
    if gold.any() and not gold.all():
        assert ap == pytest.approx(average_precision_score(gold.astype(int), scores), abs=1e-12)
    else:
        assert np.isnan(ap)
    if gold.any():
        prec, rec, _ = precision_recall_curve(gold.astype(int), scores)
        assert trap == pytest.approx(auc(rec, prec), abs=1e-12)
    else:
        assert np.isnan(trap)
