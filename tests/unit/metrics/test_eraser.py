"""ERASER comprehensiveness, sufficiency and AOPC: a 3-token hand computation and invariants."""

import math

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from validation.metrics.eraser import (AOPC_FRACTIONS, LOWER_IS_BETTER, aopc, comprehensiveness,
                                       comprehensiveness_aopc, eraser_scores, n_top_tokens, sufficiency,
                                       sufficiency_aopc, top_k_mask)


# a bag-of-tokens binary classifier: p_1 = sigmoid(sum of kept tokens' weights)
WEIGHTS = torch.tensor([2.0, 1.0, -2.0])


def bag_model(token_ids, keep):
    z = (WEIGHTS[token_ids] * keep).sum(1)
    return torch.stack([torch.sigmoid(-z), torch.sigmoid(z)], dim=1)


IDS = torch.tensor([[0, 1, 2]])
ATTN = torch.tensor([[0.6, 0.3, 0.1]])
VALID = torch.ones(1, 3, dtype=torch.bool)


def test_three_token_example_by_hand():
    # full input: z = 2 + 1 - 2 = 1, p_1 = sigmoid(1) = 0.7310586, predicted class 1
    # k = 1%: ceil(0.03) = 1 token, r = {token 0}
    #   comprehensiveness = sigmoid(1) - sigmoid(-1) = tanh(1/2) = 0.4621172
    #   sufficiency       = sigmoid(1) - sigmoid(2)  = 0.7310586 - 0.8807971 = -0.1497385
    # k = 50%: ceil(1.5) = 2 tokens, r = {0, 1}
    #   comprehensiveness = sigmoid(1) - sigmoid(-2) = 0.7310586 - 0.1192029 = 0.6118557
    #   sufficiency       = sigmoid(1) - sigmoid(3)  = 0.7310586 - 0.9525741 = -0.2215155
    assert comprehensiveness(bag_model, IDS, ATTN, VALID, 0.01) == pytest.approx([0.4621172], abs=1e-6)
    assert sufficiency(bag_model, IDS, ATTN, VALID, 0.01) == pytest.approx([-0.1497385], abs=1e-6)
    assert comprehensiveness(bag_model, IDS, ATTN, VALID, 0.5) == pytest.approx([0.6118557], abs=1e-6)
    assert sufficiency(bag_model, IDS, ATTN, VALID, 0.5) == pytest.approx([-0.2215155], abs=1e-6)
    # AOPC over the two bins: mean (0.4621172 + 0.6118557) / 2 = 0.5369864; with k = 0: sum / 3
    assert comprehensiveness_aopc(bag_model, IDS, ATTN, VALID, (0.01, 0.5)) == pytest.approx([0.5369864], abs=1e-6)
    assert comprehensiveness_aopc(bag_model, IDS, ATTN, VALID, (0.01, 0.5), include_zero=True) == \
        pytest.approx([0.3579910], abs=1e-6)
    assert sufficiency_aopc(bag_model, IDS, ATTN, VALID, (0.01, 0.5)) == pytest.approx([-0.1856270], abs=1e-6)


def test_target_class_and_predicted_class():
    res = eraser_scores(bag_model, IDS, ATTN, VALID, (0.01,), target=[0])
    # class 0 scored: p_0(x) - p_0(x without token 0) = sigmoid(-1) - sigmoid(1) = -tanh(1/2)
    assert res.comprehensiveness_points[0, 0] == pytest.approx(-0.4621172, abs=1e-6)
    assert eraser_scores(bag_model, IDS, ATTN, VALID, (0.01,)).predicted.tolist() == [1]
    with pytest.raises(ValueError, match="target"):
        eraser_scores(bag_model, IDS, ATTN, VALID, (0.01,), target=[2])


@pytest.mark.parametrize("n, k, expected", [(3, 0.01, 1), (30, 0.1, 3), (10, 0.05, 1), (10, 0.2, 2),
                                            (7, 0.5, 4), (100, 0.2, 20), (0, 0.5, 0), (5, 0.0, 0),
                                            (49, 0.2, 10)])
def test_rounding_is_ceiling(n, k, expected):
    assert n_top_tokens(n, k) == expected


def test_top_k_mask_ties_padding_and_types():
    scores = np.array([[0.2, 0.5, 0.5, 0.9, 0.1]])
    valid = np.array([[1, 1, 1, 0, 1]], dtype=bool)
    # 4 valid tokens, 50% -> 2; the invalid 0.9 is never picked; the tie keeps the earlier one
    # (positions 1, 2 tie: both are in the top 2)
    np.testing.assert_array_equal(top_k_mask(scores, valid, 0.5), [[0, 1, 1, 0, 0]])
    np.testing.assert_array_equal(top_k_mask(scores, valid, 0.25), [[0, 1, 0, 0, 0]])
    out = top_k_mask(torch.tensor(scores), torch.tensor(valid), 0.25)
    assert isinstance(out, torch.Tensor) and out.dtype == torch.bool
    with pytest.raises(ValueError, match="k_frac"):
        top_k_mask(scores, valid, 1.5)


def test_keep_masks_passed_to_the_model():
    calls = []

    def recorder(token_ids, keep):
        calls.append(keep.clone())
        return torch.full((token_ids.shape[0], 2), 0.5)

    ids = torch.zeros(1, 5, dtype=torch.long)
    scores = torch.tensor([[0.1, 0.9, 0.5, 0.0, 0.0]])
    valid = torch.tensor([[1, 1, 1, 1, 0]], dtype=torch.bool)  # position 4 is padding
    always = torch.tensor([[0, 0, 0, 1, 0]], dtype=torch.bool)  # position 3: the query, always kept
    eraser_scores(recorder, ids, scores, valid, (0.5,), always_keep=always)
    full, without, only = (c[0].int().tolist() for c in calls)
    assert full == [1, 1, 1, 1, 0]
    # candidates: positions 0-2 (3 tokens), ceil(1.5) = 2 -> r = {1, 2}
    assert without == [1, 0, 0, 1, 0]
    assert only == [0, 1, 1, 1, 0]


def test_model_that_ignores_removal_scores_zero():
    def constant(token_ids, keep):
        return torch.tensor([[0.3, 0.7]]).expand(token_ids.shape[0], 2)

    res = eraser_scores(constant, torch.zeros(2, 4, dtype=torch.long), torch.rand(2, 4),
                        torch.ones(2, 4, dtype=torch.bool))
    assert np.all(res.comprehensiveness_points == 0) and np.all(res.sufficiency_points == 0)
    assert res.comprehensiveness_points.shape == (2, len(AOPC_FRACTIONS))


def test_bad_model_output_is_reported():
    with pytest.raises(ValueError, match="predict_proba"):
        eraser_scores(lambda t, k: torch.ones(3), IDS, ATTN, VALID)
    with pytest.raises(ValueError, match="scores"):
        eraser_scores(bag_model, IDS, torch.ones(1, 4), VALID)


def test_lower_is_better_declared():
    assert LOWER_IS_BETTER == {"comprehensiveness": False, "sufficiency": True,
                               "comprehensiveness_aopc": False, "sufficiency_aopc": True}
    assert sufficiency.lower_is_better and not comprehensiveness.lower_is_better


@given(st.integers(1, 4), st.integers(2, 12), st.integers(0, 2**16))
def test_aopc_bounds_and_five_sixths(batch, length, seed):
    g = torch.Generator().manual_seed(seed)
    w = torch.randn(8, 3, generator=g)

    def model(token_ids, keep):
        return torch.softmax((w[token_ids] * keep[..., None]).sum(1), dim=1)

    ids = torch.randint(0, 8, (batch, length), generator=g)
    scores = torch.rand(batch, length, generator=g)
    valid = torch.rand(batch, length, generator=g) < 0.8
    valid[:, 0] = True
    res = eraser_scores(model, ids, scores, valid)
    for pts in (res.comprehensiveness_points, res.sufficiency_points):
        assert np.all(pts <= 1) and np.all(pts >= -1)
    c = res.comprehensiveness_aopc()
    assert np.all(np.abs(c) <= 1)
    np.testing.assert_allclose(res.comprehensiveness_aopc(include_zero=True), c * 5 / 6)
    np.testing.assert_allclose(res.sufficiency_aopc(include_zero=True), res.sufficiency_aopc() * 5 / 6)
    # the rationale of each bin has ceil(k n) tokens and grows with k
    n_valid = valid.sum(1).numpy()
    for i, k in enumerate(res.fractions):
        assert res.rationale_masks[i].sum(1).tolist() == [n_top_tokens(int(n), k) for n in n_valid]
    assert np.all(res.rationale_masks[:-1] <= res.rationale_masks[1:])


def test_aopc_pure_helper():
    pts = np.array([[0.1, 0.2, 0.3, 0.4, 0.5]])
    assert aopc(pts) == pytest.approx([0.3])
    assert aopc(pts, include_zero=True) == pytest.approx([0.25])
    assert math.isclose(float(aopc([0.6, 0.0])[0]), 0.3)
