"""Properties of the clock-free path (simulation.clockfree) over the whole admissible range of starts, sizes, rate
ratios and times (qkov.testing.strategies.admissible_cases: u0, v0 down to 1e-12, K up to 1e4, M 1..99, ratio
1e-3..1e3; t from 1e-4 to 1e15).

Two independent checks per example, both by relative error per coordinate (simulation.accuracy): the states against
Radau at rtol 1e-13 with per-coordinate relative error control (which knows nothing of the first integral), and the
clock itself: an adaptive quadrature (scipy ``quad``) of dt/du along the level curve from the start to the returned
``u`` gives back the requested time. And the path's own error estimate bounds what it reports.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, strategies as st

from qkov.testing import property_settings
from qkov.testing import strategies as qst
from simulation.accuracy import max_relative_error, reference_states
from simulation.clockfree import TOLERANCE, _curve, integrate_clock_free
from simulation.reduced import initial_states

PROPERTY_SETTINGS = property_settings()

REFERENCE_TOL = 1e-11
"""The contract (simulation.clockfree.TOLERANCE): the largest relative error of any coordinate at any requested time.
Measured on 120 random starts over the admissible range against the same reference: at most 3e-14 (the
reference's own error is of that order). Before the increment forms and the panel error control: up to 1.5 (FAFO)
and NaN (FACO) on the same range, 4.5e-3 on the issue's two calls."""
REFERENCE_DRIFT = 1e-12
"""How far the Radau reference itself may be off: up to 1e-12 relative, measured where the thorough profile found it
(FACO, K = 639, ratio 738, u0 = v0 = 1, t = 1.5: 4.9e-13 at rtol 1e-13, 1.0e-12 at 3e-14, against a 40-digit mpmath
Taylor solution that the clock-free path matches to 2e-16: the known-answer test in
tests/unit/simulation/test_clockfree.py). 1e-13 before, which that case exceeded."""
CLOCK_TOL = 1e-10
"""Relative |t_quad(u) - t| of scipy's quad (epsrel 1e-13, over 40 subintervals) at the returned ``u``."""


def _times(log_lo: float, log_hi: float):
    return st.tuples(st.floats(log_lo, log_hi), st.floats(log_lo, log_hi)).map(
        lambda p: np.array(sorted({10.0 ** p[0], 10.0 ** p[1] * 1.5})))


@PROPERTY_SETTINGS
@given(qst.admissible_cases(["CACO", "CAFO", "FACO", "FAFO"]), _times(-4.0, 15.0))
def test_clock_free_states_match_radau_on_every_coordinate(case, t):
    """Every coordinate at both times within REFERENCE_TOL relative of Radau, and the error estimate within the
    contract; the estimate is not below the measured error by more than the reference's own error (REFERENCE_DRIFT)."""
    p = case.param
    y0 = initial_states(p, case.u0, case.v0, case.K)
    pars = np.array([[case.K], [case.M], [case.eta_qk], [case.eta_ov]], dtype=float)
    sol = integrate_clock_free(p, y0, pars, t)
    ref = reference_states(p, y0[:, 0], *pars[:, 0], t)
    err = float(max_relative_error(sol.y[:, :, 0], ref))
    assert sol.success[0] and err <= REFERENCE_TOL, (case, t, err)
    assert sol.error[0] <= TOLERANCE and err <= sol.error[0] + REFERENCE_DRIFT, (case, t, err, sol.error[0])


@PROPERTY_SETTINGS
@given(qst.admissible_cases(["CACO", "CAFO"]), st.floats(-4.0, 15.0))
def test_clock_free_time_is_the_quadrature_of_the_clock(case, log_t):
    """Walked in u (collapsed QK), where dt/du is a closed-form function of u alone; the w walk's clock is held by
    the Radau comparison above and by the first integral (tests/unit/simulation/test_clockfree.py)."""
    from scipy.integrate import quad

    p = case.param
    y0 = initial_states(p, case.u0, case.v0, case.K)
    pars = np.array([[case.K], [case.M], [case.eta_qk], [case.eta_ov]], dtype=float)
    t = 10.0 ** log_t
    sol = integrate_clock_free(p, y0, pars, np.array([t]))
    curve, _ = _curve(p, y0, pars)
    curve = getattr(curve, "inner", curve)             # CAFO is walked in log u: its clock in u is the inner curve's
    u0 = float(case.u0)
    u_end = float(sol.y[0, 0, 0]) if p == "CACO" else float(sol.y[0, 0, 0] * sol.y[1, 0, 0])
    g = lambda h: 1.0 / float(curve.rate(np.array([h]), None, np.arange(1), settle=True)[0])  # noqa: E731
    h_end = u_end - u0
    edges = np.linspace(0.0, h_end, 41)                # quad per piece, in the offset: the integrand spans decades
    t_quad = sum(quad(g, a, b, epsabs=0.0, epsrel=1e-13, limit=200)[0] for a, b in zip(edges[:-1], edges[1:]))
    # the returned u is rounded to 1 ulp: where u barely moved that alone moves t by g(u) ulp(u)
    allowed = CLOCK_TOL + 4.5e-16 * abs(u_end) * g(h_end) / t
    assert abs(t_quad / t - 1) <= allowed, (case, t, t_quad / t - 1, allowed)
