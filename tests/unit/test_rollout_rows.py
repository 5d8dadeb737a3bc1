"""The SQuAD checkpoint's rollout read-out without forming the rollout matrix (issue 34: the rollout was 70 % of a
checkpoint): the mean of the measured rows of R equals the one read from :func:`attention_rollout`'s R."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from validation.metrics.attention_mass import attention_rollout
from validation.real.squad_decoder import rollout_rows_mean


@pytest.mark.parametrize("seed, layers, T", [(0, 1, 5), (1, 3, 9), (2, 6, 17)])
def test_rows_mean_equals_the_full_rollout(seed, layers, T):
    g = torch.Generator().manual_seed(seed)
    A = torch.softmax(3 * torch.randn(layers, 4, T, T, generator=g, dtype=torch.float64), -1)
    rows = (torch.rand(4, T, generator=g) < 0.4).double()
    w = rows / rows.sum(1, keepdim=True).clamp(min=1)
    R = torch.from_numpy(attention_rollout(A.numpy()))
    expected = torch.einsum("bi,bij->bj", w, R)
    # the same sums of products in another order: float64 rounding, a few ulps of values <= 1
    torch.testing.assert_close(rollout_rows_mean(A, w), expected, rtol=0, atol=1e-13)
    # rows of a row-stochastic product: the mean of measured rows sums to 1 where any row is measured
    np.testing.assert_allclose(rollout_rows_mean(A, w).sum(1).numpy(), (rows.sum(1) > 0).double().numpy(), atol=1e-12)
