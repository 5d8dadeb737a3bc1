"""Properties of the reduced dynamics that hold exactly: invariants, exact solutions, symmetries.

Tolerances: the integrator runs at ``rtol = 1e-10`` over at most ~1e4 accepted steps in log time, so a
quantity computed from the state carries a relative error of at most ~1e-6 (``1e-10`` per step,
accumulated linearly: :data:`qkov.testing.assertions.INTEGRATION_STEPS`); each bound below is that, scaled by
the quantity's sensitivity to the state.
"""

import numpy as np
import sympy as sp
from hypothesis import given, strategies as st

from simulation.closed_forms import first_integral_drift

from qkov.testing import (Case, assert_first_integral_conserved, assert_on_symmetric_set, full_run, property_settings,
                          strategies as qst, trajectory)
from qkov.testing.assertions import INTEGRATION_STEPS
from qkov.testing.helpers import RTOL

PROPERTY_SETTINGS = property_settings()
T_GRID = np.logspace(0, 12, 13)
ACCUMULATED = RTOL * INTEGRATION_STEPS          # 1e-6: rtol 1e-10 times at most ~1e4 steps


@PROPERTY_SETTINGS
@given(qst.cases())
def test_first_integral_is_conserved_along_solutions(case):
    """H(u, v) = G_QK(v) - R G_OV(u) stays at H(u0, v0): relative drift <= 1e-6 of max(|G_QK|, |R G_OV|, 1)."""
    assert_first_integral_conserved(trajectory(case, T_GRID))


@PROPERTY_SETTINGS
@given(qst.cases(), st.floats(0.02, 0.2))
def test_first_integral_detects_states_off_the_trajectory(case, bump):
    """H is not trivially constant: moving v by a relative 2-20% at t = 1e6 changes it by >= 1e-4 (scaled)."""
    tr = trajectory(case, [0.0, 1e6])
    state = tr.state.copy()
    idx = -1                                  # the last coordinate is v (collapsed QK) or c (factorized QK)
    if not case.collapsed_qk:
        idx = -3                              # scale the query factor a, hence v
    state[idx, -1] *= 1 + bump
    drift = first_integral_drift(case.param, state, case.K, case.M, case.eta_qk, case.eta_ov)
    assert drift[-1].max() > 1e-4, f"{case}: bump {bump} drift {drift[-1]:.2e}"


@PROPERTY_SETTINGS
@given(qst.cases(), qst.times(1e2, 1e12))
def test_frozen_attention_time_is_exact(case, t):
    """eta_QK = 0: the integrated u reaches u(t) exactly at theory's closed-form time (|t_exact/t - 1| <= 1e-6)."""
    from simulation.problems import frozen_qk_time

    tr = trajectory(case.with_ratio(0.0), [t])
    t_exact = frozen_qk_time(case.param, tr.u, case.K, case.M, 1.0, case.u0, case.v0)
    # d log t / d u <= u + 1 along the flow, so a relative state error 1e-6 gives <= 1e-6 (u + 1) in log t.
    assert abs(t_exact[0] / t - 1) < ACCUMULATED * (tr.u[0] + 1), f"{case.with_ratio(0.0)} t={t:.6g}: t_exact={t_exact[0]:.6g}"


@PROPERTY_SETTINGS
@given(qst.cases(("CACO", "CAFO")))
def test_collapsed_qk_v_of_u_is_the_lambert_w_curve(case):
    """Collapsed QK: v(t) = X/(M+1) - omega(X/(M+1) - log(M+1)) at the integrated u(t), to 1e-6 (1 + v)."""
    from simulation.problems import collapsed_qk_v_of_u

    tr = trajectory(case, T_GRID)
    v_exact = collapsed_qk_v_of_u(case.param, tr.u, case.K, case.M, case.ratio, 1.0, case.u0, case.v0)
    err = np.abs(v_exact - tr.v) / (1 + tr.v)
    i = int(np.argmax(err))
    assert err[i] < ACCUMULATED, f"{case} t={tr.t[i]:.6g}: {err[i]:.2e}"


@PROPERTY_SETTINGS
@given(qst.cases())
def test_margin_and_logit_gap_grow_while_loss_and_residual_fall(case):
    """u, v increase and the loss and 1 - p decrease at every step of a 1..1e12 grid (gradient flow)."""
    tr = trajectory(case, T_GRID)
    assert np.all(np.diff(tr.u) > 0) and np.all(np.diff(tr.v) > 0), str(case)
    assert np.all(np.diff(tr.loss) < 0) and np.all(np.diff(tr.residual) < 0), str(case)


@PROPERTY_SETTINGS
@given(qst.cases(), qst.log_uniform(0.1, 10.0))
def test_rates_and_time_rescale_together(case, c):
    """(c eta_QK, c eta_OV) at time t equals (eta_QK, eta_OV) at time c t: the flow only sees eta * t."""
    t = np.array([1.0, 1e3, 1e6])
    a = trajectory(Case(case.param, case.K, case.M, case.ratio, case.u0, case.v0, eta_ov=c), t)
    b = trajectory(case, c * t)
    np.testing.assert_allclose(a.u, b.u, rtol=ACCUMULATED, err_msg=f"{case} c={c}")
    np.testing.assert_allclose(a.v, b.v, rtol=ACCUMULATED, err_msg=f"{case} c={c}")


@PROPERTY_SETTINGS
@given(qst.cases(("FACO", "CAFO", "FAFO")))
def test_balancedness_constants_are_conserved(case):
    """Factorized circuits: theory's conserved quantities (delta; C_QK, S) keep their start values (abs 1e-6 (1 + |x|))."""
    from theory.reduced import reduced_system
    from theory.rescaling import conserved_quantities
    from theory.symbols import K, M

    sysm = reduced_system(case.param)
    tr = trajectory(case, T_GRID)
    for name, expr in conserved_quantities(case.param).items():
        f = sp.lambdify((*sysm.state, K, M), expr, modules="numpy")
        vals = np.asarray(f(*tr.state, case.K, case.M), dtype=float)
        scale = 1 + np.max(np.abs(tr.state)) ** 2
        assert np.max(np.abs(vals - vals[0])) < ACCUMULATED * scale, f"{case}: {name} drifts"


@PROPERTY_SETTINGS
@given(qst.cases(K=(2, 4), M=(1, 3), ratio=(0.3, 3.0), start=(0.2, 1.0)))
def test_full_matrix_gd_from_symmetric_start_tracks_reduced_flow_at_order_dt(case):
    """GD on the full matrices from MODEL.md's start: symmetric to 1e-12, and error(dt)/error(dt/2) in [1.6, 2.4]."""
    t = np.array([2.0, 6.0])
    ref = trajectory(case, t)
    errs = []
    for dt in (0.1, 0.05):
        fr = full_run(case, t, dt)
        assert_on_symmetric_set(fr)
        errs.append(max(np.max(np.abs(fr.run.u - ref.u)), np.max(np.abs(fr.run.v - ref.v))))
    # Euler's global error is c dt + O(dt^2): halving dt halves it up to O(dt) relative, <= 20% at dt = 0.1.
    assert 1.6 < errs[0] / errs[1] < 2.4, f"{case}: errors {errs} at dt = 0.1, 0.05"
