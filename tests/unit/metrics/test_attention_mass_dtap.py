"""Attention mass, DTAP heatmaps, AC and ACMC: hand-computed cases and invariants."""

import io

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from validation.metrics import LOWER_IS_BETTER
from validation.metrics.attention_mass import relevant_mass
from validation.metrics.dtap import (DEFAULT_KAPPA, DEFAULT_TAU, SQUAD_MASS_EDGES, SYNTH_EDGES, acmc,
                                     attention_confidence, dtap_histogram, plot_dtap, top_cell_thresholds)


def test_relevant_mass_hand_computed():
    attn = np.array([[0.5, 0.3, 0.2], [0.1, 0.1, 0.8]])
    relevant = np.array([[1, 0, 1], [0, 0, 1]], dtype=bool)
    np.testing.assert_allclose(relevant_mass(attn, relevant), [0.7, 0.8])
    # a padded relevant position does not count
    valid = np.array([[1, 1, 0], [1, 1, 1]], dtype=bool)
    np.testing.assert_allclose(relevant_mass(attn, relevant, valid), [0.5, 0.8])


def test_relevant_mass_accepts_torch_and_checks_shapes():
    attn = torch.tensor([[0.25, 0.75]])
    assert relevant_mass(attn, torch.tensor([[False, True]])).tolist() == [0.75]
    with pytest.raises(ValueError, match="relevant"):
        relevant_mass(np.ones((2, 3)) / 3, np.ones((2, 4), dtype=bool))
    with pytest.raises(ValueError, match="NaN"):
        relevant_mass([[np.nan, 1.0]], [[True, False]])


def test_dtap_hand_computed_squad_bins():
    mass = [0.0, 0.05, 0.5, 1.0, 0.07]
    p_true = [1.0, 0.5, 0.2, 0.04, 0.1]
    h = dtap_histogram(mass, p_true, SQUAD_MASS_EDGES, SQUAD_MASS_EDGES)
    expected = np.zeros((4, 4))
    # mass bins [0,.05) [.05,.1) [.1,.5) [.5,1]; probability bins the same
    expected[0, 3] = expected[1, 3] = expected[3, 2] = expected[3, 0] = expected[1, 2] = 20.0
    np.testing.assert_array_equal(h, expected)
    assert attention_confidence(mass, 0.5) == pytest.approx(0.4)
    assert acmc(mass, p_true, 0.5, 0.5) == 0.0
    assert acmc(mass, p_true, 0.0, 0.5) == pytest.approx(0.4)


def test_dtap_shapes_and_defaults():
    assert dtap_histogram([0.3], [0.9], SYNTH_EDGES).shape == (5, 5)
    assert dtap_histogram([0.3], [0.9], SQUAD_MASS_EDGES, SYNTH_EDGES).shape == (4, 5)
    assert (DEFAULT_TAU, DEFAULT_KAPPA) == top_cell_thresholds(SQUAD_MASS_EDGES) == (0.5, 0.5)
    assert top_cell_thresholds(SYNTH_EDGES) == (0.8, 0.8)
    assert not LOWER_IS_BETTER["attention_confidence"] and not attention_confidence.lower_is_better


def test_dtap_rejects_bad_input():
    with pytest.raises(ValueError, match="p_true"):
        dtap_histogram([0.1, 0.2], [0.5], SYNTH_EDGES)
    with pytest.raises(ValueError, match="mass_edges"):
        dtap_histogram([0.1], [0.5], (0, 0.5, 0.4, 1))
    with pytest.raises(ValueError, match="NaN"):
        dtap_histogram([np.nan], [0.5], SYNTH_EDGES)
    with pytest.raises(ValueError, match="no instances"):
        attention_confidence([])


unit = st.floats(0.0, 1.0, allow_nan=False)


@given(st.lists(st.tuples(unit, unit), min_size=1, max_size=40),
       st.sampled_from([SQUAD_MASS_EDGES, SYNTH_EDGES]))
def test_dtap_sums_to_100_and_top_cells_are_ac_acmc(pairs, edges):
    mass, p = map(np.array, zip(*pairs))
    h = dtap_histogram(mass, p, edges)
    assert h.sum() == pytest.approx(100.0)
    tau, kappa = top_cell_thresholds(edges)
    assert h[-1].sum() == pytest.approx(100 * attention_confidence(mass, tau))
    assert h[-1, -1] == pytest.approx(100 * acmc(mass, p, tau, kappa))


@given(st.lists(st.tuples(unit, unit), min_size=1, max_size=40), unit, unit, unit)
def test_ac_monotone_in_tau_and_acmc_below_ac(pairs, t1, t2, kappa):
    mass, p = map(np.array, zip(*pairs))
    lo, hi = sorted((t1, t2))
    assert attention_confidence(mass, lo) >= attention_confidence(mass, hi)
    assert 0.0 <= acmc(mass, p, lo, kappa) <= attention_confidence(mass, lo) <= 1.0


def test_dtap_clips_rounding_error_above_one():
    h = dtap_histogram([1.0 + 1e-7], [1.0 + 1e-9], SYNTH_EDGES)
    assert h[-1, -1] == 100.0


def test_plot_dtap_draws_annotated_cells():
    h = dtap_histogram([0.1, 0.9, 0.95], [0.2, 0.9, 0.3], SQUAD_MASS_EDGES)
    fig = plot_dtap(h, SQUAD_MASS_EDGES, title="t")
    ax = fig.axes[0]
    texts = [t.get_text() for t in ax.texts]
    assert len(texts) == 16 and "33.3" in texts
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    assert buf.getvalue()[:4] == b"\x89PNG"
    with pytest.raises(ValueError, match="hist"):
        plot_dtap(np.zeros((2, 2)), SQUAD_MASS_EDGES)


def test_attention_rollout_hand_computed():
    from validation.metrics.attention_mass import attention_rollout

    a1 = np.array([[1.0, 0.0], [0.5, 0.5]])
    a2 = np.array([[0.0, 1.0], [0.0, 1.0]])
    # (A2/2 + I/2)(A1/2 + I/2) = [[.5, .5], [0, 1]] @ [[1, 0], [.25, .75]] = [[.625, .375], [.25, .75]]
    r = attention_rollout(np.stack([a1, a2])[:, None])
    np.testing.assert_allclose(r[0], [[0.625, 0.375], [0.25, 0.75]])
    np.testing.assert_allclose(attention_rollout(np.stack([a1, a2])[:, None], residual=False)[0], a2 @ a1)
    np.testing.assert_allclose(r.sum(-1), 1.0)
    with pytest.raises(ValueError, match="attn_layers"):
        attention_rollout(np.ones((2, 3, 3)))
