"""Properties of the reduced dynamics that hold exactly: invariants, exact solutions, symmetries.

Tolerances: the integrator runs at ``rtol = 1e-10`` over at most ~1e4 accepted steps in log time, so a
quantity computed from the state carries a relative error of at most ~1e-6 (``1e-10`` per step,
accumulated linearly); each bound below is that, scaled by the quantity's sensitivity to the state.
"""

import numpy as np
import sympy as sp
from hypothesis import given, note, strategies as st

from simulation.closed_forms import first_integral_drift
from simulation.problems import collapsed_qk_v_of_u, frozen_qk_time
from simulation.reduced import integrate, integrate_many
from tests.property.conftest import PROPERTY_SETTINGS
from tests.property.strategies import PARAMS, Case, cases, integrate_case, log_uniform

T_GRID = np.logspace(0, 12, 13)
ACCUMULATED = 1e-6          # rtol 1e-10 times at most ~1e4 steps


@PROPERTY_SETTINGS
@given(cases())
def test_first_integral_is_conserved_along_solutions(case):
    """H(u, v) = G_QK(v) - R G_OV(u) stays at H(u0, v0): relative drift <= 1e-6 of max(|G_QK|, |R G_OV|, 1)."""
    tr = integrate_many(case.param, case.K, case.M, case.ratio, 1.0, case.scale, case.scale, T_GRID)
    drift = first_integral_drift(case.param, tr.state, tr.K, tr.M, tr.eta_qk, tr.eta_ov)
    assert drift.max() < ACCUMULATED, f"{case}: drift {drift.max():.2e}"


@PROPERTY_SETTINGS
@given(cases(), st.floats(0.02, 0.2))
def test_first_integral_detects_states_off_the_trajectory(case, bump):
    """H is not trivially constant: moving v by a relative 2-20% at t = 1e6 changes it by >= 1e-4 (scaled)."""
    tr = integrate_many(case.param, case.K, case.M, case.ratio, 1.0, case.scale, case.scale, np.array([0.0, 1e6]))
    state = tr.state.copy()
    idx = -1                                  # the last coordinate is v (collapsed QK) or c (factorized QK)
    if case.param[0] == "F":
        idx = -3                              # scale the query factor a, hence v
    state[idx, -1] *= 1 + bump
    drift = first_integral_drift(case.param, state, tr.K, tr.M, tr.eta_qk, tr.eta_ov)
    assert drift[-1].max() > 1e-4, f"{case}: bump {bump} drift {drift[-1].max():.2e}"


@PROPERTY_SETTINGS
@given(cases(), log_uniform(1e2, 1e12))
def test_frozen_attention_time_is_exact(case, t):
    """eta_QK = 0: the integrated u reaches u(t) exactly at theory's closed-form time (|t_exact/t - 1| <= 1e-6)."""
    tr = integrate(case.param, case.K, case.M, 0.0, 1.0, case.scale, case.scale, np.array([t]))
    t_exact = frozen_qk_time(case.param, tr.u, case.K, case.M, 1.0, case.scale, case.scale)
    note(f"{case} t={t:.3g}")
    # d log t / d u <= u + 1 along the flow, so a relative state error 1e-6 gives <= 1e-6 (u + 1) in log t.
    assert abs(t_exact[0] / t - 1) < ACCUMULATED * (tr.u[0] + 1), f"{case} t={t:.3g}: t_exact={t_exact[0]:.6g}"


@PROPERTY_SETTINGS
@given(cases(params=("CACO", "CAFO")))
def test_collapsed_qk_v_of_u_is_the_lambert_w_curve(case):
    """Collapsed QK: v(t) = X/(M+1) - omega(X/(M+1) - log(M+1)) at the integrated u(t), to 1e-6 (1 + v)."""
    tr = integrate_case(case, T_GRID)
    v_exact = collapsed_qk_v_of_u(case.param, tr.u, case.K, case.M, case.ratio, 1.0, case.scale, case.scale)
    err = np.abs(v_exact - tr.v) / (1 + tr.v)
    assert err.max() < ACCUMULATED, f"{case}: {err.max():.2e}"


@PROPERTY_SETTINGS
@given(cases())
def test_margin_and_logit_gap_grow_while_loss_and_residual_fall(case):
    """u, v increase and the loss and 1 - p decrease at every step of a 1..1e12 grid (gradient flow)."""
    tr = integrate_case(case, T_GRID)
    assert np.all(np.diff(tr.u) > 0) and np.all(np.diff(tr.v) > 0), str(case)
    assert np.all(np.diff(tr.loss) < 0) and np.all(np.diff(tr.residual) < 0), str(case)


@PROPERTY_SETTINGS
@given(cases(), log_uniform(0.1, 10.0))
def test_rates_and_time_rescale_together(case, c):
    """(c eta_QK, c eta_OV) at time t equals (eta_QK, eta_OV) at time c t: the flow only sees eta * t."""
    t = np.array([1.0, 1e3, 1e6])
    a = integrate(case.param, case.K, case.M, c * case.ratio, c, case.scale, case.scale, t)
    b = integrate(case.param, case.K, case.M, case.ratio, 1.0, case.scale, case.scale, c * t)
    np.testing.assert_allclose(a.u, b.u, rtol=ACCUMULATED, err_msg=f"{case} c={c}")
    np.testing.assert_allclose(a.v, b.v, rtol=ACCUMULATED, err_msg=f"{case} c={c}")


@PROPERTY_SETTINGS
@given(cases(params=("FACO", "CAFO", "FAFO")))
def test_balancedness_constants_are_conserved(case):
    """Factorized circuits: theory's conserved quantities (delta; C_QK, S) keep their start values (abs 1e-6 (1 + |x|))."""
    from theory.reduced import reduced_system
    from theory.rescaling import conserved_quantities
    from theory.symbols import K, M

    sysm = reduced_system(case.param)
    tr = integrate_case(case, T_GRID)
    for name, expr in conserved_quantities(case.param).items():
        f = sp.lambdify((*sysm.state, K, M), expr, modules="numpy")
        vals = np.asarray(f(*tr.state, case.K, case.M), dtype=float)
        scale = 1 + np.max(np.abs(tr.state)) ** 2
        assert np.max(np.abs(vals - vals[0])) < ACCUMULATED * scale, f"{case}: {name} drifts"


@PROPERTY_SETTINGS
@given(st.sampled_from(PARAMS), st.integers(2, 4), st.integers(1, 3), log_uniform(0.3, 3.0), st.floats(0.2, 1.0))
def test_full_matrix_gd_from_symmetric_start_tracks_reduced_flow_at_order_dt(param, K, M, ratio, scale):
    """GD on the full matrices from MODEL.md's start: symmetric to 1e-12, and error(dt)/error(dt/2) in [1.6, 2.4]."""
    from simulation.full_matrix import balanced_state, simulate_full

    t = np.array([2.0, 6.0])
    ref = integrate(param, K, M, ratio, 1.0, scale, scale, t)
    errs = []
    for dt in (0.1, 0.05):
        fr = simulate_full(param, K, M, ratio, 1.0, t, dt, state=balanced_state(param, K, M, scale, scale))
        assert max(fr.asym_ov.max(), fr.asym_qk.max()) < 1e-12, f"{param} K={K} M={M} ratio={ratio:.3g}"
        errs.append(max(np.max(np.abs(fr.u - ref.u)), np.max(np.abs(fr.v - ref.v))))
    note(f"{param} K={K} M={M} ratio={ratio:.3g} scale={scale:.3g} errs={errs}")
    # Euler's global error is c dt + O(dt^2): halving dt halves it up to O(dt) relative, <= 20% at dt = 0.1.
    assert 1.6 < errs[0] / errs[1] < 2.4
