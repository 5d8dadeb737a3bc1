"""The clock-free path (simulation.clockfree): its pieces against theory's generated first integrals, its states
against an independent DOP853 reference, and the routing of simulation.reduced."""

from __future__ import annotations

import numpy as np
import pytest

import simulation.reduced as reduced
from simulation import generated
from simulation.clockfree import (_collapsed_v_of_g, _factorized_lift, applies, clock_free_capable,
                                  integrate_clock_free)
from simulation.reduced import initial_states, integrate_many, integrate_states, reference_states
from theory.parametrization import Parametrization, registered

pytestmark = pytest.mark.unit

TARGET = 2e-11
"""The project's accuracy target: 99th-percentile final-state error (max over coordinates of
|y - y_ref| / max(1, |y_ref|)) at most 2e-11 (docs/performance.md, benchmarks/bench_integrators.py). Measured here:
<= 1e-12 to t = 1e12 (the reference, DOP853 at rtol 1e-13, is itself good to a few 1e-13 there)."""


def _error(y, ref):
    return np.max(np.abs(y - ref) / np.maximum(1.0, np.abs(ref)), axis=0)


def _batch(param, B, seed=0):
    rng = np.random.default_rng(seed)
    ratios = 10.0 ** rng.uniform(-2, 2, B)
    starts = 10.0 ** rng.uniform(-3, 0, B)
    y0 = initial_states(param, starts, starts, 10.0)
    return y0, np.stack([np.full(B, 10.0), np.full(B, 19.0), ratios, np.ones(B)])


def test_capable_exactly_where_the_level_curve_is_closed_form():
    """A first integral whose G_QK has no unevaluated integral (collapsed QK) and both kinds registered."""
    capable = {str(p) for p in registered() if clock_free_capable(p)}
    assert capable == {"CACO", "CAFO"}
    assert all(str(p) in generated.FIRST_INTEGRALS for p in map(Parametrization, capable))


@pytest.mark.parametrize("c", [2.0, 20.0, 2000.0])
def test_collapsed_inverse_of_g_qk_is_the_generated_g_qk_inverted(c):
    """v_of_g(G_QK(v)) = v, with G_QK the generated closed form of theory's first integral, over v in [-2, 95]:
    4 ulp-scale relative error (Halley converged to 4e-16; G_QK's own rounding adds one ulp)."""
    v = np.concatenate([np.linspace(-2, 5, 200), np.linspace(5, 95, 200)])
    G = generated.FIRST_INTEGRALS["CACO"]["g_qk_closed"](0.0, v, 10.0, c - 1, 1.0, 1.0, 0.0, 1.0)
    back = _collapsed_v_of_g(G, 10.0, c - 1)
    assert np.max(np.abs(back - v) / np.maximum(1.0, np.abs(v))) < 1e-14


def test_factorized_lift_inverts_the_generated_constants():
    """(s_O, s_V) = lift(u, delta) gives back u = s_O s_V and delta = s_O^2 - s_V^2 (theory's conserved quantity)."""
    rng = np.random.default_rng(1)
    s_O, s_V = 10 ** rng.uniform(-3, 1, (2, 500))
    u, _, delta, _ = generated.FIRST_INTEGRALS["CAFO"]["constants"](s_O, s_V, 0.3, 10.0, 19.0, 1.0, 1.0)
    lo, lv = _factorized_lift(u, delta, np.ones_like(u))
    np.testing.assert_allclose(lo, s_O, rtol=1e-13)
    np.testing.assert_allclose(lv, s_V, rtol=1e-13)


@pytest.mark.parametrize("param", ["CACO", "CAFO"])
def test_states_agree_with_dop853_reference(param):
    """32 trajectories (ratios 1e-2..1e2, starts 1e-3..1) at t = 1e3 and 1e12: p99 error <= TARGET."""
    y0, pars = _batch(param, 32)
    t = np.array([1e3, 1e12])
    sol = integrate_clock_free(param, y0, pars, t)
    assert sol.success.all() and sol.method == "clock-free"
    ref = np.stack([reference_states(param, y0[:, b], *pars[:, b], t) for b in range(32)], axis=2)
    err = _error(sol.y.reshape(sol.y.shape[0], -1), ref.reshape(ref.shape[0], -1))
    assert np.percentile(err, 99) <= TARGET


def test_time_zero_is_the_start_and_times_are_monotone():
    y0, pars = _batch("CAFO", 8)
    sol = integrate_clock_free("CAFO", y0, pars, np.array([0.0, 1.0, 1e2, 1e6]))
    assert np.array_equal(sol.y[:, 0], y0)
    assert np.all(np.diff(sol.y[2, :, :], axis=0) > 0)          # v increases along every trajectory here


def test_routing_by_capability(monkeypatch):
    """CACO/CAFO go clock-free, FAFO (no closed-form level curve) to DOP853; CLOCK_FREE off or a tighter rtol
    than CLOCK_FREE_MIN_RTOL send CACO to DOP853 too; all agree."""
    t = [10.0, 1e6]
    cf = integrate_many("CACO", 10, 19, [0.1, 1.0, 30.0] * 3, 1.0, 0.1, 0.2, t)
    assert cf.integrator == "clock-free" and cf.column(0).stats["integrator"] == "clock-free"
    assert integrate_many("FAFO", 10, 19, [0.1] * 6, 1.0, 0.1, 0.2, t).integrator == "dop853"
    tight = integrate_many("CACO", 10, 19, [0.1, 1.0, 30.0] * 3, 1.0, 0.1, 0.2, t, rtol=1e-13, atol=1e-15)
    assert tight.integrator == "dop853"
    np.testing.assert_allclose(cf.state, tight.state, rtol=1e-11, atol=1e-13)
    monkeypatch.setattr(reduced, "CLOCK_FREE", False)
    assert integrate_many("CACO", 10, 19, [0.1] * 6, 1.0, 0.1, 0.2, t).integrator == "dop853"


def test_starts_it_does_not_apply_to_go_to_dop853():
    """A factorized OV start with s_O < 0 (u < 0) is outside the clock's branch: DOP853 integrates that column,
    the clock-free path the others, and each column equals its own path's result."""
    y0, pars = _batch("CAFO", 6)
    y0[:2, 2] = [-0.3, 0.2]
    assert list(applies("CAFO", y0)) == [True, True, False, True, True, True]
    t = [10.0, 1e6]
    states, sol = integrate_states("CAFO", y0, *pars, t)
    assert sol.method == "clock-free+dop853" and sol.success.all()
    alone, _ = integrate_states("CAFO", y0[:, [2]], *pars[:, [2]], t)
    np.testing.assert_array_equal(states[:, :, 2], alone[:, :, 0])
    rest = [0, 1, 3, 4, 5]
    np.testing.assert_array_equal(states[:, :, rest], integrate_clock_free("CAFO", y0[:, rest], pars[:, rest],
                                                                             np.array(t)).y)


def test_solve_defaults_to_clock_free_where_it_applies():
    """solve() on CACO takes the clock-free integrator by default and agrees with DOP853 at rtol 1e-13 to 1e-11
    relative (both ~1e-12 from the truth); FAFO keeps dop853."""
    from simulation import solve

    kw = dict(K=10, M=19, eta_qk=3.0, eta_ov=1.0, u0=0.1, v0=0.2, t=[10.0, 1e4, 1e12])
    cf = solve("CACO", **kw)
    ref = solve("CACO", integrator="dop853", rtol=1e-13, atol=1e-15, **kw)
    assert cf.stats["integrator"] == "clock-free" and ref.stats["integrator"] == "dop853"
    np.testing.assert_allclose(cf.state, ref.state, rtol=1e-11)
    assert solve("FAFO", **kw).stats["integrator"] == "dop853"


def test_many_times_in_a_large_batch_go_to_dop853():
    """One quadrature per requested time: past CLOCK_FREE_MAX_TIMES times, batches above CLOCK_FREE_SMALL_BATCH
    trajectories are stepped by DOP853 (which lands on a time for one shortened step)."""
    many = np.logspace(0, 6, reduced.CLOCK_FREE_MAX_TIMES + 1)
    big, small = reduced.CLOCK_FREE_SMALL_BATCH + 4, reduced.CLOCK_FREE_SMALL_BATCH
    assert integrate_many("CACO", 10, 19, np.logspace(-1, 1, big), 1.0, 0.1, 0.2, many).integrator == "dop853"
    assert integrate_many("CACO", 10, 19, np.logspace(-1, 1, big), 1.0, 0.1, 0.2, many[1:]).integrator == "clock-free"
    assert integrate_many("CACO", 10, 19, np.logspace(-1, 1, small), 1.0, 0.1, 0.2, many).integrator == "clock-free"
