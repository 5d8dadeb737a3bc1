"""Label-free sharpness: closed forms on hand-made rows, and invariants (Hypothesis)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from validation.metrics.sharpness import (
    attention_entropy,
    mass_span,
    max_weight,
    normalized_entropy,
    sharpness_summary,
)


def test_closed_forms():
    rows = np.array([[0.25, 0.25, 0.25, 0.25], [1.0, 0.0, 0.0, 0.0], [0.5, 0.3, 0.2, 0.0]])
    np.testing.assert_allclose(attention_entropy(rows), [np.log(4), 0.0, -(0.5 * np.log(.5) + .3 * np.log(.3) + .2 * np.log(.2))])
    # support = all 4 keys: the uniform row is maximally flat, the one-key row maximally sharp
    np.testing.assert_allclose(normalized_entropy(rows), [1.0, 0.0, attention_entropy(rows)[2] / np.log(4)])
    assert np.isnan(normalized_entropy(rows[:, :1] * 0 + 1)).all()  # support 1: nothing to normalise by
    np.testing.assert_allclose(max_weight(rows), [0.25, 1.0, 0.5])
    assert mass_span(rows, 0.9).tolist() == [4, 1, 3] and mass_span(rows, 0.5).tolist() == [2, 1, 1]
    assert mass_span(rows, 0.8).tolist() == [4, 1, 2]
    valid = np.array([True, True, False, False])  # an explicit support: the row is renormalised on it
    assert mass_span(np.array([0.3, 0.3, 0.0, 0.0]), 0.9, valid).item() == 2
    with pytest.raises(ValueError, match="mass"):
        mass_span(rows, 0.0)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(0.0, 1.0), min_size=2, max_size=12).filter(lambda x: sum(x) > 1e-3),
       st.floats(0.05, 1.0))
def test_invariants(weights, mass):
    a = np.array(weights) / sum(weights)
    n = int((a > 0).sum())
    h = attention_entropy(a)
    assert -1e-12 <= h <= np.log(n) + 1e-12
    k = int(mass_span(a, mass))
    top = np.sort(a)[::-1]
    assert 1 <= k <= n and top[:k].sum() >= mass - 1e-9  # k keys hold the mass ...
    assert k == 1 or top[:k - 1].sum() < mass  # ... and k - 1 do not
    assert max_weight(a) >= 1.0 / n - 1e-12
    perm = np.random.default_rng(0).permutation(len(a))  # key order does not matter
    assert attention_entropy(a[perm]) == pytest.approx(h, abs=1e-12) and mass_span(a[perm], mass) == k


def test_summary_per_layer_and_head_skips_padding_and_single_key_rows():
    # 1 layer, 1 instance, 2 heads, 3 queries over 3 keys, causal; key 2 is padding
    a = np.zeros((1, 1, 2, 3, 3))
    a[0, 0, 0] = [[1, 0, 0], [0.5, 0.5, 0], [0.5, 0.5, 0]]   # head 0: flat over what it sees
    a[0, 0, 1] = [[1, 0, 0], [1.0, 0.0, 0], [1.0, 0.0, 0]]   # head 1: all on key 0
    s = sharpness_summary(a, valid=np.array([[True, True, False]]))
    assert s["entropy"].shape == (1, 2)
    # query 0 sees one key (NaN, skipped); queries 1, 2 see keys 0, 1 (causal, read from the zeros)
    np.testing.assert_allclose(s["normalized_entropy"][0], [1.0, 0.0])
    np.testing.assert_allclose(s["max_weight"][0], [(1 + 0.5 + 0.5) / 3, 1.0])
    np.testing.assert_allclose(s["mass_span"][0], [(1 + 2 + 2) / 3, 1.0])
    np.testing.assert_allclose(s["support"][0], [(1 + 2 + 2) / 3] * 2)
    flat = sharpness_summary(a, valid=np.array([[True, True, False]]), causal=False)
    np.testing.assert_allclose(flat["support"][0], [2.0, 2.0])
