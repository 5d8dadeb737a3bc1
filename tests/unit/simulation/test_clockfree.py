"""The clock-free path (simulation.clockfree): its pieces against theory's generated first integrals, its states
against an independent DOP853 reference, and the routing of simulation.reduced."""

from __future__ import annotations

import numpy as np
import pytest

import simulation.reduced as reduced
from simulation import generated
from simulation.accuracy import max_relative_error, reference_states as radau_reference
from simulation.clockfree import (OV_KINDS, QK_KINDS, _collapsed_dg_qk, _collapsed_dv_of_dg, _curve, _factorized_lift,
                                  applies, clock_free_capable, integrate_clock_free)
from simulation.closed_forms import first_integral_drift
from simulation.reduced import initial_states, integrate_many, integrate_states
from theory.parametrization import Parametrization, registered

pytestmark = pytest.mark.unit

TARGET = 1e-11
"""The clock-free contract (simulation.clockfree.TOLERANCE): largest relative error of any coordinate
(simulation.accuracy.relative_error). Measured here against Radau: <= 3e-14."""


def _batch(param, B, seed=0):
    rng = np.random.default_rng(seed)
    ratios = 10.0 ** rng.uniform(-2, 2, B)
    starts = 10.0 ** rng.uniform(-3, 0, B)
    y0 = initial_states(param, starts, starts, 10.0)
    return y0, np.stack([np.full(B, 10.0), np.full(B, 19.0), ratios, np.ones(B)])


def test_capable_exactly_where_there_is_a_first_integral():
    """A generated first integral and both circuit kinds registered: collapsed QK walked in u (closed-form v(u)),
    factorized QK in w (G_QK carried); the tied and scaled kinds have no first integral."""
    capable = {str(p) for p in registered() if clock_free_capable(p)}
    assert capable == {"CACO", "CAFO", "FACO", "FAFO"}
    assert all(str(p) in generated.FIRST_INTEGRALS for p in map(Parametrization, capable))


@pytest.mark.parametrize("c", [2.0, 20.0, 101.0])
def test_collapsed_increment_of_v_inverts_the_generated_g_qk(c):
    """dv_of_dg(v0, G_QK(v0 + dv) - G_QK(v0)) = dv, with G_QK the generated closed form of theory's first integral
    (where its difference does not cancel: dv >= 1e-3), over v0 in 1e-12..50; and for tiny dv (down to 1e-300,
    where the generated difference is all rounding) against the kind's own increment form, to 1e-15 relative; the
    quadrature's quick form (settle=False, e^x - 1 for expm1) to 1e-15 (1 + dv) absolute."""
    rng = np.random.default_rng(0)
    v0 = 10 ** rng.uniform(-12, np.log10(50), 400)
    dv = 10 ** rng.uniform(-3, 1.5, 400)
    g = generated.FIRST_INTEGRALS["CACO"]["g_qk_closed"]
    D = g(0.0, v0 + dv, 10.0, c - 1, 1.0, 1.0, 0.0, 1.0) - g(0.0, v0, 10.0, c - 1, 1.0, 1.0, 0.0, 1.0)
    np.testing.assert_allclose(_collapsed_dv_of_dg(v0, D, c - 1), dv, rtol=1e-12)
    tiny = 10 ** rng.uniform(-300, 0, 400)
    back = _collapsed_dv_of_dg(v0, _collapsed_dg_qk(v0, tiny, c - 1), c - 1)
    assert np.max(np.abs(back / tiny - 1)) < 1e-15
    quick = _collapsed_dv_of_dg(v0, _collapsed_dg_qk(v0, dv, c - 1), c - 1, settle=False)
    assert np.all(np.abs(quick - dv) <= 1e-15 * (1 + dv))                      # inside the quadrature: absolute


def test_factorized_lift_inverts_the_generated_constants():
    """(s_O, s_V) = lift(u, delta) gives back u = s_O s_V and delta = s_O^2 - s_V^2 (theory's conserved quantity)."""
    rng = np.random.default_rng(1)
    s_O, s_V = 10 ** rng.uniform(-3, 1, (2, 500))
    u, _, delta, _ = generated.FIRST_INTEGRALS["CAFO"]["constants"](s_O, s_V, 0.3, 10.0, 19.0, 1.0, 1.0)
    lo, lv = _factorized_lift(u, delta, np.ones_like(u))
    np.testing.assert_allclose(lo, s_O, rtol=1e-13)
    np.testing.assert_allclose(lv, s_V, rtol=1e-13)


@pytest.mark.parametrize("kind", ["collapsed", "factorized"])
def test_ov_kind_g_ov_times_r_is_the_generated_r_g_ov_and_inverts(kind):
    """R * g_ov(u, delta) = theory's generated R G_OV(u) (``r_g_ov`` of CAFO/CACO; where u >= |delta|/100: the
    generated form sqrt(delta^2 + 4u^2) - |delta| cancels below that, g_ov's form does not), and u_of_g inverts g_ov
    on u > 0 to a few ulp (1e-13 relative) over u in 1e-3..1e3, delta in -10..10."""
    rng = np.random.default_rng(2)
    u = 10 ** rng.uniform(-3, 3, 400)
    delta = rng.uniform(-10, 10, 400) if kind == "factorized" else np.zeros(400)
    param = "CAFO" if kind == "factorized" else "CACO"
    r_g = generated.FIRST_INTEGRALS[param]["r_g_ov"](u, 0.0, 10.0, 19.0, 3.0, 1.0, delta, 0.5)
    g = OV_KINDS[kind].g_ov(u, delta)
    R = 3.0 * 9 * 30 / 10
    fine = u >= np.abs(delta) / 100
    assert fine.sum() > 250
    np.testing.assert_allclose(r_g[fine], R * g[fine], rtol=1e-12)
    np.testing.assert_allclose(OV_KINDS[kind].u_of_g(g, delta), u, rtol=1e-13)


def test_factorized_qk_walk_matches_the_generated_first_integral():
    """In w, the lift gives the start back at h = 0, keeps theory's conserved A_QK and L = Kb + (M+1)c and puts
    v = a(b - c) at alpha sinh(w0 + h) (1e-12 relative); a tiny h moves c = 0 to a tiny c with its relative accuracy
    (against the lift evaluated in mpmath); dG_QK/dw is the generated integrands of G_QK times dv/dw = alpha cosh w."""
    import mpmath as mp

    rng = np.random.default_rng(3)
    a, b, c = rng.uniform(0.1, 2, 300), rng.uniform(-1, 1, 300), rng.uniform(-1, 1, 300)
    K, M = 10.0, 19.0
    _, v, _, A = generated.FIRST_INTEGRALS["FACO"]["constants"](1.0, a, b, c, K, M, 1.0, 1.0)
    ok = A > 0
    a, b, c, v, A = a[ok], b[ok], c[ok], v[ok], A[ok]
    qk = QK_KINDS["factorized"]
    consts = qk.constants((a, b, c), K, M, A)
    alpha = qk.scale(K, M, A)
    w0 = np.arcsinh(v / alpha)
    np.testing.assert_array_equal(np.stack(qk.lift_dw(w0, 0.0, A, consts, K, M)), np.stack([a, b, c]))
    h = rng.uniform(0, 2, w0.size)
    la, lb, lc = qk.lift_dw(w0, h, A, consts, K, M)
    _, v1, _, A1 = generated.FIRST_INTEGRALS["FACO"]["constants"](1.0, la, lb, lc, K, M, 1.0, 1.0)
    np.testing.assert_allclose(v1, alpha * np.sinh(w0 + h), rtol=1e-12)
    np.testing.assert_allclose(A1, A, rtol=1e-10)
    np.testing.assert_allclose(K * lb + (M + 1) * lc, K * b + (M + 1) * c, rtol=1e-12, atol=1e-14)
    # FAFO's balanced start has c = 0: a step of 1e-9 in w moves it to ~1e-10, kept to 1e-14 relative
    a0, b0, c0 = 2.0, 0.5, 0.0
    A0 = a0 ** 2 - (K * (M + 1) / (K + M + 1)) * (b0 - c0) ** 2
    cs = qk.constants((np.array([a0]), np.array([b0]), np.array([c0])), K, M, np.array([A0]))
    al = qk.scale(K, M, A0)
    w_0 = np.arcsinh(a0 * (b0 - c0) / al)
    got_c = qk.lift_dw(w_0, 1e-9, A0, cs, K, M)[2][0]
    mp.mp.dps = 40
    kap = mp.mpf(K) * (M + 1) / (K + M + 1)
    d = lambda w: mp.sqrt(mp.mpf(A0) / kap) * mp.sinh(w / 2)  # noqa: E731
    exact = -K * (d(mp.mpf(w_0) + mp.mpf(1e-9)) - d(mp.mpf(w_0))) / (K + M + 1)
    assert abs(got_c / float(exact) - 1) < 1e-14
    fi = generated.FIRST_INTEGRALS["FAFO"]
    dG_dv = sum(coef(0.0, v, K, M, 1.0, 1.0, 0.0, A) * f(v, K, M, A) for coef, f in fi["g_qk_integrals"])
    np.testing.assert_allclose(qk.dg_dw(v, consts, K, M), dG_dv * alpha * np.cosh(w0), rtol=1e-12)


@pytest.mark.parametrize("param", ["FACO", "FAFO"])
def test_factorized_qk_states_keep_the_first_integral(param):
    """Along the returned states H = G_QK(v) - R G_OV(u) is constant (G_QK by scipy quad of the generated integrands,
    independent of the walk's spectral sums) to 1e-11 relative, at times 1 to 1e40."""
    y0, pars = _batch(param, 12, seed=4)
    t = np.array([0.0, 1.0, 1e3, 1e12, 1e40])
    sol = integrate_clock_free(param, y0, pars, t)
    for b in range(12):
        drift = first_integral_drift(param, sol.y[:, :, b], *pars[:, b])
        assert drift.max() <= 1e-11, (b, drift)


@pytest.mark.parametrize("param", ["CACO", "CAFO", "FACO", "FAFO"])
def test_states_agree_with_radau_on_every_coordinate(param):
    """2 trajectories over the admissible range (starts 1e-12..3, K 2..1e4, M 1..99, ratios 1e-3..1e3) at
    t = 1e-3, 10 and 1e3: every coordinate within TARGET relative of Radau, and within the path's own estimate (the
    property tier draws many more, to t = 1e15: tests/property/test_clockfree_property.py)."""
    rng = np.random.default_rng(11)
    B = 2
    u0, v0 = 10 ** rng.uniform(-12, np.log10(3), (2, B))
    K = np.round(10 ** rng.uniform(np.log10(2), 4, B))
    pars = np.stack([K, rng.integers(1, 100, B).astype(float), 10 ** rng.uniform(-3, 3, B), np.ones(B)])
    y0 = initial_states(param, u0, v0, K)
    t = np.array([1e-3, 10.0, 1e3])
    sol = integrate_clock_free(param, y0, pars, t)
    assert sol.success.all() and sol.method == "clock-free"
    ref = np.stack([radau_reference(param, y0[:, b], *pars[:, b], t) for b in range(B)], axis=2)
    err = max_relative_error(sol.y, ref, axis=(0, 1))
    assert err.max() <= TARGET, err
    assert np.all(err <= sol.error + 1e-13) and np.all(sol.error <= TARGET), (err, sol.error)


ISSUE_CALLS = [
    ("FAFO", dict(K=100, M=1, eta_qk=0.004918629271448918, eta_ov=0.4023525263836922, u0=1.0643575624720592e-08,
                  v0=0.3151394427195722, t=1.0)),
    ("CAFO", dict(K=100, M=19, eta_qk=1.730563906269334, eta_ov=0.40491895362246333, u0=0.0234648089730422,
                  v0=8.749365818658765e-08, t=1e-4)),
]


@pytest.mark.parametrize("param,kw", ISSUE_CALLS, ids=["FAFO-u-below-u0", "CAFO-v-off"])
def test_issue_calls_agree_with_a_taylor_reference_in_mpmath(param, kw):
    """Issue 43's two calls (FAFO gave u below u0, 4.5e-3 off; CAFO's v 1.8e-3 off) against mpmath's Taylor solver
    at 30 digits on the generated right-hand side (no log time, no scipy, no first integral): every coordinate to
    1e-13 relative through solve(), which reports the clock-free path and its estimate."""
    import inspect

    import mpmath as mp

    from simulation import solve

    mp.mp.dps = 30
    src = inspect.getsource(generated.RHS[param]).replace("numpy.", "mp.")
    ns: dict = {}
    exec(src, {"mp": mp}, ns)
    f = next(iter(ns.values()))
    y0 = initial_states(param, kw["u0"], kw["v0"], kw["K"])[:, 0]
    pars = [mp.mpf(kw[k]) for k in ("K", "M", "eta_qk", "eta_ov")]
    exact = mp.odefun(lambda _, y: list(f(*y, *pars)), 0, [mp.mpf(float(x)) for x in y0])(mp.mpf(kw["t"]))
    tr = solve(param, **{**kw, "t": [kw["t"]]})
    assert tr.stats["integrator"] == "clock-free"
    err = max_relative_error(tr.state[:, 0], np.array([float(x) for x in exact]))
    assert err <= 1e-13, err
    assert tr.u[0] > kw["u0"]


def test_error_estimate_over_the_contract_hands_the_start_to_dop853(monkeypatch):
    """The router holds the clock-free path to its contract: with TOLERANCE and rtol below what the estimate can
    show, every start goes to DOP853 and the result says so (method, NaN estimate)."""
    import simulation.clockfree as cf

    y0, pars = _batch("CACO", 3)
    t = np.array([10.0, 1e6])
    states, sol = integrate_states("CACO", y0, *pars, t)
    assert sol.method == "clock-free" and np.all(sol.error <= TARGET)
    monkeypatch.setattr(cf, "TOLERANCE", 1e-30)
    sol2 = reduced.clock_free_states("CACO", y0, pars, t, rtol=3e-14, atol=1e-16)   # below the ROUNDING floor
    assert sol2.method == "clock-free+dop853" and np.isnan(sol2.error).all() and sol2.success.all()


@pytest.mark.parametrize("param", ["CACO", "CAFO", "FACO", "FAFO"])
@pytest.mark.parametrize("t", [[1.0, 1e15], [5e-324, 1e-300]])
def test_extreme_starts_and_times_warn_nothing_and_stay_put(param, t):
    """u0 = v0 = 100 (p = 1 to 43 digits: the rates are 1e-44..1e-84) to t = 1e15, and subnormal times: no numpy
    warning (they are errors here), finite, clock-free, the state where it started to 1e-14."""
    import warnings

    y0 = initial_states(param, 100.0, 100.0, 10.0)
    pars = np.array([[10.0], [19.0], [10.0], [1.0]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        states, sol = integrate_states(param, y0, *pars, t)
    assert sol.method == "clock-free" and sol.success.all()
    moved = np.abs(states[:, -1, 0] - y0[:, 0]) / np.maximum(np.abs(y0[:, 0]), 1e-300)
    assert np.all(moved[np.abs(y0[:, 0]) > 0] <= 1e-14)


def test_panel_error_estimate_bounds_the_gauss_error():
    """simulation.clockfree._panel_error over one panel of a pole 1/(x + d), a square-root branch point
    1/sqrt(x + d) and e^(x/d), d from 0.02 to 3: never below the NODES-node Gauss rule's actual error (so an accepted
    panel is at least that good); for the two singularities the walks meet (pole, branch point) at most 1e3 times
    above it where the error is above rounding (an entire e^(x/d) is overestimated far more: its coefficients fall
    faster than geometrically, which only costs a halving)."""
    from simulation.clockfree import NODES, _panel_error, _rule

    x, w = _rule(NODES)
    for singular, f, exact in [(True, lambda x, d: 1 / (x + d), lambda d: np.log1p(1 / d)),
                               (True, lambda x, d: 1 / np.sqrt(x + d), lambda d: 2 * (np.sqrt(1 + d) - np.sqrt(d))),
                               (False, lambda x, d: np.exp(x / d), lambda d: d * np.expm1(1 / d))]:
        for d in [0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 3.0]:
            g = f(x, d)
            actual = abs(w @ g / exact(d) - 1)
            est = float(_panel_error(g[:, None])[0])
            assert est >= actual or actual < 5e-14, (d, actual, est)      # 5e-14: the sums' own rounding
            if singular and actual > 5e-14:
                assert est <= 1e3 * actual, (d, actual, est)


def test_time_zero_is_the_start_and_times_are_monotone():
    y0, pars = _batch("CAFO", 8)
    sol = integrate_clock_free("CAFO", y0, pars, np.array([0.0, 1.0, 1e2, 1e6]))
    assert np.array_equal(sol.y[:, 0], y0)
    assert np.all(np.diff(sol.y[2, :, :], axis=0) > 0)          # v increases along every trajectory here


def test_routing_by_capability(monkeypatch):
    """CACO/CAFO/FACO/FAFO go clock-free, TACO (tied QK: no first integral) to DOP853; CLOCK_FREE off or a tighter
    rtol than CLOCK_FREE_MIN_RTOL send CACO to DOP853 too; all agree."""
    t = [10.0, 1e6]
    cf = integrate_many("CACO", 10, 19, [0.1, 1.0, 30.0] * 3, 1.0, 0.1, 0.2, t)
    assert cf.integrator == "clock-free" and cf.column(0).stats["integrator"] == "clock-free"
    assert integrate_many("FAFO", 10, 19, [0.1] * 6, 1.0, 0.1, 0.2, t).integrator == "clock-free"
    assert integrate_many("TACO", 10, 19, [0.1] * 6, 1.0, 0.1, 0.2, t).integrator == "dop853"
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
    assert list(applies("CAFO", y0, pars)) == [True, True, False, True, True, True]
    t = [10.0, 1e6]
    states, sol = integrate_states("CAFO", y0, *pars, t)
    assert sol.method == "clock-free+dop853" and sol.success.all()
    alone, _ = integrate_states("CAFO", y0[:, [2]], *pars[:, [2]], t)
    np.testing.assert_array_equal(states[:, :, 2], alone[:, :, 0])
    rest = [0, 1, 3, 4, 5]
    np.testing.assert_array_equal(states[:, :, rest], integrate_clock_free("CAFO", y0[:, rest], pars[:, rest],
                                                                             np.array(t)).y)


def test_solve_defaults_to_clock_free_where_it_applies():
    """solve() on CACO and FAFO takes the clock-free integrator by default and agrees with DOP853 at rtol 1e-13 to
    1e-11 relative (both ~1e-12 from the truth); TACO keeps dop853."""
    from simulation import solve

    kw = dict(K=10, M=19, eta_qk=3.0, eta_ov=1.0, u0=0.1, v0=0.2, t=[10.0, 1e4, 1e12])
    cf = solve("CACO", **kw)
    ref = solve("CACO", integrator="dop853", rtol=1e-13, atol=1e-15, **kw)
    assert cf.stats["integrator"] == "clock-free" and ref.stats["integrator"] == "dop853"
    np.testing.assert_allclose(cf.state, ref.state, rtol=1e-11)
    fa = solve("FAFO", **kw)
    fa_ref = solve("FAFO", integrator="dop853", rtol=1e-13, atol=1e-15, **kw)
    assert fa.stats["integrator"] == "clock-free"
    np.testing.assert_allclose(fa.state, fa_ref.state, rtol=1e-11)
    assert solve("TACO", **kw).stats["integrator"] == "dop853"


def test_many_times_in_a_large_batch_go_to_dop853():
    """One quadrature per requested time: past CLOCK_FREE_MAX_TIMES times, batches above CLOCK_FREE_SMALL_BATCH
    trajectories are stepped by DOP853 (which lands on a time for one shortened step)."""
    many = np.logspace(0, 6, reduced.CLOCK_FREE_MAX_TIMES + 1)
    big, small = reduced.CLOCK_FREE_SMALL_BATCH + 4, reduced.CLOCK_FREE_SMALL_BATCH
    assert integrate_many("CACO", 10, 19, np.logspace(-1, 1, big), 1.0, 0.1, 0.2, many).integrator == "dop853"
    assert integrate_many("CACO", 10, 19, np.logspace(-1, 1, big), 1.0, 0.1, 0.2, many[1:]).integrator == "clock-free"
    assert integrate_many("CACO", 10, 19, np.logspace(-1, 1, small), 1.0, 0.1, 0.2, many).integrator == "clock-free"


def test_factorized_qk_start_without_u_or_a_qk_goes_to_dop853():
    """The w walk needs u > 0 (v moves only then) and A_QK > 0 (v = alpha sinh w): a FACO start at u = 0 and a FAFO
    start with A_QK <= 0 are not clock-free; integrate_states integrates them by DOP853 next to the others."""
    y0, pars = _batch("FACO", 4)
    y0[0, 1] = 0.0
    assert list(applies("FACO", y0, pars)) == [True, False, True, True]
    y0f, parsf = _batch("FAFO", 3)
    y0f[2:, 2] = [0.05, 0.5, 0.0]              # a^2 - K b^2 + (K b)^2/(K+M+1) < 0
    _, _, _, A = generated.FIRST_INTEGRALS["FAFO"]["constants"](*y0f, *parsf)
    assert A[2] <= 0 and list(applies("FAFO", y0f, parsf)) == [True, True, False]
    states, sol = integrate_states("FACO", y0, *pars, [10.0, 1e6])
    assert sol.method == "clock-free+dop853" and sol.success.all() and np.isfinite(states).all()


def test_walk_coordinate_follows_the_qk_kind():
    """Collapsed QK is walked in u (offsets from u0), factorized QK in w from w0 = asinh(v0/alpha); with factorized
    OV (CAFO) the u walk is in log u (offset u - u0 = u0 expm1(h/u0): the pole of dt/du at u = 0 is u0 behind)."""
    from simulation.clockfree import _Graded, _UCurve, _WCurve

    y0, pars = _batch("FAFO", 3)
    curve, ok = _curve("FAFO", y0, pars)
    _, v0, _, A = generated.FIRST_INTEGRALS["FAFO"]["constants"](*y0, *pars)
    assert isinstance(curve, _WCurve) and ok.all()
    np.testing.assert_allclose(curve.table[-1], np.arcsinh(v0 / QK_KINDS["factorized"].scale(10.0, 19.0, A)),
                               rtol=1e-14)
    y0, pars = _batch("CAFO", 3)
    curve, ok = _curve("CAFO", y0, pars)
    u0 = generated.FIRST_INTEGRALS["CAFO"]["constants"](*y0, *pars)[0]
    assert isinstance(curve, _Graded) and isinstance(curve.inner, _UCurve) and ok.all()
    np.testing.assert_allclose(curve.d, u0, rtol=1e-15)
    assert isinstance(_curve("CACO", *_batch("CACO", 3))[0], _UCurve)


@pytest.mark.parametrize("param", ["FACO", "FAFO"])
def test_generated_walk_rate_is_the_lift_rhs_composition(param):
    """The w walk's rate (generated dw/dt(u, v), theory.walk_rate) equals the composition it replaces: the OV and QK
    lifts, the full generated rhs, dv/dt over alpha cosh w, at 400 random admissible points (K 2..50, M 1..100,
    rates 1e-2..1e2, either sign of a, unbalanced starts with delta, C_QK != 0, offsets h in 0..4 and
    carried Y up to 1e3 Y0), to 2e-13 relative (measured: 6.7e-14): a handful of ulp (both evaluate exp and a few
    products; the lift's v = a(b - c) differs from alpha sinh w by a few ulp, which moves p(v) and the rate by as much
    relative times v <= 20; numpy's exp may differ by an ulp between SIMD paths, hence the factor 3).
    Real and complex steps (the log_scale derivative) both."""
    rng = np.random.default_rng(11)
    n = 400
    K, M = rng.integers(2, 51, n).astype(float), rng.integers(1, 101, n).astype(float)
    eq, eo = 10 ** rng.uniform(-2, 2, (2, n))
    ov = (10 ** rng.uniform(-3, 0.5, n),) if param == "FACO" else tuple(10 ** rng.uniform(-3, 0.5, (2, n)))
    a = rng.choice([-1.0, 1.0], n) * 10 ** rng.uniform(-1, 0.5, n)
    c = rng.uniform(-0.3, 0.3, n)
    b = c + np.sign(a) * 10 ** rng.uniform(-3, -0.5, n)            # v = a (b - c) > 0
    y0 = np.stack([*ov, a, b, c])
    pars = np.stack([K, M, eq, eo])
    curve, ok = _curve(param, y0, pars)
    assert ok.mean() > 0.5
    cols = np.flatnonzero(ok)
    h = rng.uniform(0, 4, cols.size) * np.minimum(1.0, 3.0 / curve.table[-1][cols].clip(1e-3))
    v = curve.table[-3][cols] * np.sinh(curve.table[-1][cols] + h)
    keep = v < 20                                                   # the admissible range of the walk's v
    cols, h = cols[keep], h[keep]
    Y = curve.c0[cols] * 10 ** rng.uniform(0, 3, cols.size)
    new, old = curve.rate(h, Y, cols), curve.rate_composed(h, Y, cols)
    assert cols.size > 100 and np.all(np.isfinite(new)) and np.all(new > 0)
    assert np.max(np.abs(new / old - 1)) < 2e-13
    step = 1e-150
    new_c = curve.rate(h + 1j * step, Y + 1j * step * curve.dY(h, cols), cols)
    old_c = curve.rate_composed(h + 1j * step, Y + 1j * step * curve.dY(h, cols), cols)
    np.testing.assert_allclose(new_c.imag / step, old_c.imag / step, rtol=1e-11)


@pytest.mark.parametrize("width", [0.01, 1.0, 6.0])
def test_end_log_slope_is_the_log_derivative_at_the_panel_end(width):
    """From g at a panel's NODES Gauss nodes: |d log g/ds| at its end, for g = e^{3s} (exactly 3) and g = 1/(s + 1)
    (1/(1 + a + width)) on [a, a + width]: 1e-5 relative (a degree-(NODES - 1) interpolant of log g differentiated at the end
    errs by ~n^2 rho^-n, rho the Bernstein parameter: 4e-7 for 1/(s+1) over width 6; a panel width needs a few
    percent, and a wrong factor in the z -> s map or the P_k'(1) row is off by 2x or more)."""
    from simulation.clockfree import NODES, _end_log_slope, _rule

    x, _ = _rule(NODES)
    a = 0.5
    s = a + width * x[:, None]
    g = np.concatenate([np.exp(3 * s), 1 / (s + 1)], axis=1)
    got = _end_log_slope(g, np.full(2, width))
    np.testing.assert_allclose(got, [3.0, 1 / (1 + a + width)], rtol=1e-5)


def test_solve_reports_what_ran_when_the_walk_hands_a_start_to_dop853():
    """solve() and integrate_states share one router (simulation.reduced.clock_free_states): a FACO start at u0 = 0
    (v moves only once u > 0: outside the w walk) is integrated by DOP853 under the default clock-free integrator,
    stats["integrator"] says so, and the states equal integrate_states' for the same start."""
    from simulation import solve

    kw = dict(K=10, M=19, eta_qk=3.0, eta_ov=1.0, v0=0.2, t=[10.0, 1e4])
    off = solve("FACO", u0=0.0, **kw)
    on = solve("FACO", u0=0.1, **kw)
    assert off.stats["integrator"] == "dop853" and on.stats["integrator"] == "clock-free"
    states, sol = integrate_states("FACO", initial_states("FACO", 0.0, 0.2, 10.0), 10.0, 19.0, 3.0, 1.0, [10.0, 1e4])
    assert sol.method == "dop853"
    np.testing.assert_array_equal(off.state, states[:, :, 0])


def test_log_u_walk_keeps_the_clock_of_the_u_walk():
    """CAFO's walk in log u (simulation.clockfree._Graded) gives the same time over a panel as the u walk over the
    mapped panel: offset u - u0 = u0 expm1(h/u0), integrand times dH/dh = 1 + H/u0 (1e-13 relative: both rules are
    exact to rounding on these smooth panels; without the factor dH/dh the times differ by 8.6%)."""
    from simulation.clockfree import _Graded

    y0, pars = _batch("CAFO", 4, seed=3)
    curve, ok = _curve("CAFO", y0, pars)
    assert isinstance(curve, _Graded) and ok.all()
    cols = np.arange(4)
    H = 0.2 * curve.d                                  # u from u0 to 1.2 u0
    h = curve.d * np.log1p(H / curve.d)
    t_log, _, _, _ = curve.quad(np.zeros(4), h, curve.c0, cols)
    t_u, _, _, _ = curve.inner.quad(np.zeros(4), H, curve.c0, cols)
    np.testing.assert_allclose(t_log, t_u, rtol=1e-13)
    u_end = curve.state(h[None, :], curve.c0[None, :])
    np.testing.assert_allclose(u_end[0][0] * u_end[1][0], 1.2 * curve.d, rtol=1e-14)


@pytest.mark.parametrize("param", ["CACO", "FAFO"])
def test_level_curves_passed_in_give_the_same_states_bit_for_bit(param):
    """The router builds the batch's level curves once (for applies) and hands them to integrate_clock_free: the
    states must be those integrate_clock_free computes from its own curves, exactly; curves of another batch size
    are refused."""
    from simulation.clockfree import level_curves

    y0, pars = _batch(param, 5, seed=3)
    t = np.array([0.5, 1e3, 1e9])
    curves = level_curves(param, y0, pars)
    assert curves.applies.all()
    np.testing.assert_array_equal(integrate_clock_free(param, y0, pars, t, curves=curves).y,
                                  integrate_clock_free(param, y0, pars, t).y)
    with pytest.raises(ValueError, match="curves: built for 5 trajectories, y0 has 4"):
        integrate_clock_free(param, y0[:, :4], pars[:, :4], t, curves=curves)


def test_panel_loop_runs_blas_on_one_thread(monkeypatch):
    """Inside the panel loop every BLAS library is limited to one thread (OpenBLAS's threads doubled the CPU time of
    the (NODES x NODES) @ (NODES x chunk) products and saved no wall time; a result should not depend on them)."""
    import threadpoolctl

    import simulation.clockfree as cf

    seen = []
    real = cf._integrate

    def spy(*args, **kwargs):
        seen.extend(info["num_threads"] for info in threadpoolctl.threadpool_info() if info["user_api"] == "blas")
        return real(*args, **kwargs)

    monkeypatch.setattr(cf, "_integrate", spy)
    integrate_clock_free("CACO", *_batch("CACO", 3), np.array([1.0]))
    assert seen and set(seen) == {1}


def test_legendre_to_chebyshev_converts_series_exactly_to_rounding():
    """The dense Newton start evaluates the panel's Legendre series in Chebyshev form (T_k = cos(k arccos z)): the
    converted series must take the Legendre series' values on [-1, 1] (random coefficients, degree NODES: 1e-13
    absolute, O(1) coefficients summed at 31 terms) and the conversion must be well conditioned (entries <= 1)."""
    from simulation.clockfree import NODES, _legendre_to_chebyshev

    C = _legendre_to_chebyshev(NODES + 1)
    c = np.random.default_rng(1).normal(size=NODES + 1)
    z = np.linspace(-1, 1, 201)
    leg, cheb = np.polynomial.legendre, np.polynomial.chebyshev
    assert np.max(np.abs(leg.legval(z, c) - cheb.chebval(z, C @ c))) < 1e-13
    assert np.max(np.abs(C)) <= 1 + 1e-12


def test_clock_free_beats_radau_where_radau_drifts_known_answer_at_40_digits():
    """FACO, K = 639, M = 1, ratio 737.88, balanced start u0 = v0 = 1, t = 1 and 1.5 (found by the thorough
    Hypothesis profile of tests/property/test_clockfree_property.py): Radau, the property test's reference, is off by
    3e-13..1e-12 relative on the last coordinate there, and more at a tighter rtol (5e-13 at rtol 1e-13, 1e-12 at
    3e-14). The known answer: mpmath.odefun (Taylor series, 40 digits) on the generated right-hand side with numpy's
    functions replaced by mpmath's (79 s, run once; printed to 20 digits). The clock-free path must agree to 1e-15
    relative on every coordinate (measured: <= 2.3e-16)."""
    y0 = initial_states("FACO", 1.0, 1.0, 639.0)
    pars = np.array([[639.0], [1.0], [737.8839126874433], [1.0]])
    sol = integrate_clock_free("FACO", y0, pars, np.array([1.0, 1.5]))
    known = np.array([[1.0015593297823412376, 5.6323926006266477311, 0.20391903090680564228, -1.6050432755129227553],
                      [1.0023396507082453584, 5.6731773334611772219, 0.20411507426602505358, -1.6676791287835246677]]).T
    assert np.max(np.abs(sol.y[:, :, 0] - known) / np.abs(known)) <= 1e-15
