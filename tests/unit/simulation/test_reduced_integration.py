"""Reduced-flow integration: accuracy against tight references, batch = single (the high-precision mpmath
reference is tests/integration/test_reduced_mpmath_reference.py)."""

import numpy as np
import pytest

from simulation.batch import integrate_batch
from simulation.reduced import initial_states, integrate, integrate_many, integrate_states, reference_states

PARAMS = ("CACO", "FACO", "CAFO", "FAFO")
T_LONG = np.array([0.0, 0.5, 10.0, 1e3, 1e6, 1e9, 1e12])


def test_batch_integrator_exact_on_known_solutions():
    # dy/dtau = -k y, per-trajectory k: y = exp(-k tau); hits the evaluation points exactly.
    k = np.array([0.5, 1.0, 3.0])
    tau = np.array([0.0, 0.3, 2.0, 7.5])
    sol = integrate_batch(lambda s, y, idx: -k[idx] * y, np.ones((1, 3)), tau, rtol=1e-11, atol=1e-14)
    np.testing.assert_allclose(sol.y[0], np.exp(-np.outer(tau, k)), rtol=1e-9, atol=1e-13)
    assert sol.success.all()


@pytest.mark.parametrize("param", PARAMS)
def test_reduced_matches_tight_solve_ivp_to_1e12(param):
    u0 = 0.05 if param[2] == "F" else 0.0
    v0 = 0.05 if param[0] == "F" else 0.0
    trajs = integrate_many(param, [4, 10], [3, 19], [0.1, 30.0], 1.0, u0, v0, T_LONG)
    assert trajs.success.all()
    for b in range(2):
        y0 = initial_states(param, u0, v0, trajs.K[b])[:, 0]
        ref = reference_states(param, y0, trajs.K[b], trajs.M[b], trajs.eta_qk[b], 1.0, T_LONG)
        scale = np.maximum(np.abs(ref), 1e-6)
        assert np.max(np.abs(trajs.state[:, :, b] - ref) / scale) < 2e-8


def test_batch_equals_single_trajectories():
    t = np.array([1.0, 100.0, 1e8])
    many = integrate_many("FAFO", 6, 5, [0.5, 2.0, 8.0], 1.0, 0.1, 0.2, t)
    for b, r in enumerate([0.5, 2.0, 8.0]):
        one = integrate("FAFO", 6, 5, r, 1.0, 0.1, 0.2, t)
        np.testing.assert_allclose(one.u, many.u[:, b], rtol=1e-9)
        np.testing.assert_allclose(one.residual, many.residual[:, b], rtol=1e-8)


def test_observables_on_the_line():
    # loss = log(1 + (K-1) e^{-p u}), p = e^v / (e^v + M + 1), residual = 1 - p without cancellation.
    tr = integrate("CACO", 7, 4, 2.0, 1.0, 0.3, 0.4, [0.0, 3.0, 1e6])
    p = np.exp(tr.v) / (np.exp(tr.v) + 5)
    np.testing.assert_allclose(tr.p, p, rtol=1e-12)
    np.testing.assert_allclose(tr.loss, np.log1p(6 * np.exp(-p * tr.u)), rtol=1e-10)
    np.testing.assert_allclose(tr.residual, 5 / (np.exp(tr.v) + 5), rtol=1e-12)
    assert tr.u[0] == 0.3 and tr.v[0] == 0.4


@pytest.mark.parametrize("param", ["FACO", "CAFO", "FAFO"])
def test_factorized_start_at_zero_is_an_error(param):
    with pytest.raises(ValueError, match="fixed point"):
        integrate(param, 4, 3, 1.0, 1.0, 0.0, 0.0, [1.0])


def test_bad_times_rejected():
    with pytest.raises(ValueError):
        integrate_states("CACO", np.zeros(2), 4, 3, 1.0, 1.0, [2.0, 1.0])
