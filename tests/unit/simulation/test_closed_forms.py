"""Theory's closed forms held against solutions: first integrals, asymptotic laws, matched loss, paper."""

import numpy as np
import pytest

from simulation.closed_forms import asymptotic_errors, first_integral_drift, level_curve
from simulation.reduced import integrate_many
from simulation.sweep import PARAMS, dense_times, residual_at_loss, sharpest, sweep

T = np.array([0.0, 1.0, 10.0, 1e3, 1e6, 1e9, 1e12])


@pytest.mark.parametrize("param", PARAMS)
def test_first_integral_conserved_along_solutions(param):
    tr = integrate_many(param, 6, 5, [0.3, 5.0], 1.0, 0.1, 0.2, T)
    drift = first_integral_drift(param, tr.state, tr.K, tr.M, tr.eta_qk, tr.eta_ov)
    assert drift.max() < 1e-8
    # ...and H is not trivially constant: perturbing v breaks it.
    bumped = tr.state.copy()
    bumped[-1, -1] *= 1.1
    assert first_integral_drift(param, bumped, tr.K, tr.M, tr.eta_qk, tr.eta_ov).max() > 1e-4


def test_level_curve_passes_through_trajectory():
    tr = integrate_many("FACO", 5, 4, 2.0, 1.0, 0.1, 0.1, np.logspace(-1, 6, 8))
    v_h = level_curve("FACO", tr.state[:, 0, 0], 5, 4, 2.0, 1.0, tr.u[:, 0])
    np.testing.assert_allclose(v_h, tr.v[:, 0], atol=1e-8)


@pytest.mark.parametrize("param", PARAMS)
def test_asymptotic_laws_approached_as_t_grows(param):
    times = np.array([1e4, 1e8, 1e12])
    tr = integrate_many(param, 10, 19, 1.0, 1.0, 0.1, 0.1, times)
    err = asymptotic_errors(param, times, {"u": tr.u, "v": tr.v, "residual": tr.residual}, tr.K, tr.M,
                            tr.eta_qk, tr.eta_ov)
    for law in ("u_of_t", "v_of_u", "residual_of_u"):
        e = err[law][:, 0]
        assert e[-1] < e[0], (law, e)
    assert err["u_of_t"][-1, 0] < 0.06
    assert err["residual_of_u"][-1, 0] < 0.25


def test_residual_at_loss_interpolates_monotone_curves():
    loss = np.array([[1.0, 0.1, 0.01, 0.001]])
    res = np.array([[0.5, 0.05, 0.005, 0.0005]])            # residual = loss / 2 exactly (log-linear)
    out = residual_at_loss(loss, res, [0.3, 0.003, 1e-6])
    np.testing.assert_allclose(out[0, :2], [0.15, 0.0015], rtol=1e-12)
    assert np.isnan(out[0, 2])                                # never reached


def test_sweep_sharpness_ratio_and_grid_shape():
    sw = sweep(PARAMS, [0.1, 1.0, 10.0], [0.1], dense_times(1e12, 80), Ks=(6,), Ms=(5,))
    assert sw.u.shape == (4, 3, 1, 1, 1, 81) and sw.success.all()
    res = residual_at_loss(sw.loss, sw.residual, [1e-4])[..., 0, 0, 0, 0]       # (P, R)
    assert np.all(np.diff(res, axis=1) < 0)                  # faster QK learning -> sharper at matched loss
    assert sharpest(res, PARAMS)[1] == "FACO"
