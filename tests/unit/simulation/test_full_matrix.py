"""Full-matrix flow: gradients against autograd, reduction exact to O(dt) from balanced starts."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from simulation.full_matrix import (PopulationGradient, autograd_gradients, balanced_state, random_state,
                                    simulate_full, symmetric_projection_distance, effective)
from simulation.reduced import integrate

PARAMS = ("CACO", "FACO", "CAFO", "FAFO")


@settings(max_examples=10, deadline=None)
@given(param=st.sampled_from(PARAMS), K=st.integers(2, 5), M=st.integers(1, 4), seed=st.integers(0, 1000),
       scale=st.floats(0.05, 2.0))
def test_numpy_gradients_equal_autograd(param, K, M, seed, scale):
    state = random_state(param, K, M, scale, seed, rank_qk=3, rank_ov=3)
    loss, grads = PopulationGradient(K, M).gradients(state)
    loss_t, grads_t = autograd_gradients(state, K, M)
    assert abs(loss - loss_t) < 1e-12
    for k in grads:
        np.testing.assert_allclose(grads[k], grads_t[k], atol=1e-12)


@pytest.mark.parametrize("param", PARAMS)
def test_reduction_exact_to_order_dt_from_balanced_starts(param):
    K, M, r = 4, 5, 3.0
    t = np.array([4.0, 12.0])
    ref = integrate(param, K, M, r, 1.0, 0.5, 0.5, t)
    errs = []
    for dt in (0.1, 0.05):
        fr = simulate_full(param, K, M, r, 1.0, t, dt, state=balanced_state(param, K, M, 0.5, 0.5))
        assert max(fr.asym_ov.max(), fr.asym_qk.max()) < 1e-12      # stays on the symmetric set
        assert fr.u_spread.max() < 1e-12 and fr.v_spread.max() < 1e-12
        errs.append(max(np.max(np.abs(fr.u / ref.u - 1)), np.max(np.abs(fr.v / ref.v - 1)),
                        np.max(np.abs((1 - fr.p) / ref.residual - 1))))
    assert errs[1] < 0.08
    assert 1.8 < errs[0] / errs[1] < 2.2                           # first order in dt
    rk = simulate_full(param, K, M, r, 1.0, t, 0.1, state=balanced_state(param, K, M, 0.5, 0.5), method="rk4")
    assert np.max(np.abs(rk.u / ref.u - 1)) < 1e-6 and np.max(np.abs(rk.v / ref.v - 1)) < 1e-6


def test_random_start_measures_distance_from_symmetric_set():
    K, M = 4, 5
    st0 = random_state("CACO", K, M, 0.05, seed=3)
    a_ov, a_qk = symmetric_projection_distance(*effective(st0), K, M)
    assert a_ov > 0.3 and a_qk > 0.3
    fr = simulate_full("CACO", K, M, 3.0, 1.0, [1.0, 100.0], 0.05, state=st0)
    assert fr.asym_ov[-1] < fr.asym_ov[0]          # the learned symmetric component dominates the noise
    assert np.all(fr.loss[1:] < fr.loss[:1])


def test_symmetric_projection_is_zero_on_symmetric_matrices_and_seeded_starts_repeat():
    W_KQ, W_OV = effective(balanced_state("FAFO", 5, 3, 0.7, 0.4))
    assert max(symmetric_projection_distance(W_KQ, W_OV, 5, 3)) < 1e-14
    a, b = random_state("FAFO", 4, 2, 0.1, 7), random_state("FAFO", 4, 2, 0.1, 7)
    assert all(np.array_equal(a[k], b[k]) for k in a)


def test_times_must_be_multiples_of_dt():
    with pytest.raises(ValueError, match="multiple"):
        simulate_full("CACO", 3, 2, 1.0, 1.0, [0.03], 0.05, state=balanced_state("CACO", 3, 2, 0.0, 0.0))
