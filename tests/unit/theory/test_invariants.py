"""Conserved quantities and first integrals along trajectories (hypothesis over sizes, ratios, states)."""

import functools

import numpy as np
import sympy as sp
import torch
from hypothesis import given, settings, strategies as st
from scipy.integrate import solve_ivp

from simulation.numeric import numeric_system
from theory.reduced import reduced_system
from theory.rescaling import conserved_quantities
from tests.unit.theory.test_symbolic_vs_autograd import population_loss



def _gd_balancedness_drift(k, m, dt, T, seed):
    g = torch.Generator().manual_seed(seed)
    D = k + m + 1
    P = {n: (torch.randn(*shape, generator=g, dtype=torch.float64) * 0.5).requires_grad_(True)
         for n, shape in (("WK", (2, D)), ("WQ", (2, D)), ("WO", (k, 3)), ("WV", (3, D)))}
    inv = lambda: (P["WQ"] @ P["WQ"].T - P["WK"] @ P["WK"].T, P["WO"].T @ P["WO"] - P["WV"] @ P["WV"].T)
    start = [x.detach().clone() for x in inv()]
    for _ in range(int(round(T / dt))):
        for p in P.values():
            p.grad = None
        population_loss(P["WK"].T @ P["WQ"], P["WO"] @ P["WV"], k, m).backward()
        with torch.no_grad():
            for n, p in P.items():
                p -= dt * (3.0 if n in ("WK", "WQ") else 1.0) * p.grad
    return max((x.detach() - s).abs().max().item() for x, s in zip(inv(), start))


@settings(max_examples=6)
@given(k=st.integers(2, 4), m=st.integers(1, 3), seed=st.integers(0, 1000))
def test_balancedness_drift_under_gradient_descent_is_first_order_in_dt(k, m, seed):
    """W_Q W_Q^T - W_K W_K^T and W_O^T W_O - W_V W_V^T are conserved by the flow: GD drifts by O(dt)."""
    d1 = _gd_balancedness_drift(k, m, 0.02, 2.0, seed)
    d2 = _gd_balancedness_drift(k, m, 0.01, 2.0, seed)
    assert d2 < 0.1
    assert 1.6 < d1 / d2 < 2.4, (d1, d2)


@settings(max_examples=12)
@given(param=st.sampled_from(["FACO", "CAFO", "FAFO"]), k=st.integers(2, 12), m=st.integers(1, 20),
       ratio=st.floats(0.05, 50.0), u0=st.floats(0.05, 2.0), v0=st.floats(0.05, 2.0))
def test_reduced_conserved_quantities_along_solutions(param, k, m, ratio, u0, v0):
    ns = numeric_system(param)
    sysm = reduced_system(param)
    f = {name: sp.lambdify(sysm.state + (sp.Symbol("K", positive=True, integer=True),
                                         sp.Symbol("M", positive=True, integer=True)), e)
         for name, e in conserved_quantities(param).items()}
    sol = solve_ivp(lambda t, y: ns.rhs(y, k, m, ratio, 1.0), (0, 300.0), ns.initial_state(u0, v0, k),
                    method="DOP853", rtol=1e-11, atol=1e-12, dense_output=True)
    ys = sol.sol(np.linspace(0, 300.0, 7))
    for name, fn in f.items():
        vals = np.array([fn(*ys[:, i], k, m) for i in range(ys.shape[1])])
        scale = max(1.0, np.abs(ys).max() ** 2)
        assert np.ptp(vals) < 1e-7 * scale, (name, vals)
    if param[0] == "F":  # balanced start: C_QK = 0
        assert abs(f["C_QK"](*ys[:, -1], k, m)) < 1e-7 * max(1.0, np.abs(ys).max() ** 2)


@settings(max_examples=12)
@given(param=st.sampled_from(["CACO", "FACO", "CAFO", "FAFO"]), k=st.integers(2, 12), m=st.integers(1, 20),
       ratio=st.floats(0.05, 50.0), u0=st.floats(0.05, 2.0), v0=st.floats(0.05, 2.0))
def test_first_integral_constant_along_reduced_solutions(param, k, m, ratio, u0, v0):
    from simulation.closed_forms import first_integral_evaluator

    ns = numeric_system(param)
    sol = solve_ivp(lambda t, y: ns.rhs(y, k, m, ratio, 1.0), (0, 500.0), ns.initial_state(u0, v0, k),
                    method="DOP853", rtol=1e-11, atol=1e-12, dense_output=True)
    ys = sol.sol(np.linspace(0, 500.0, 9))
    ev = first_integral_evaluator(param)
    g_qk, r_g_ov = ev.terms(ys, k, m, ratio, 1.0)
    H = np.asarray(g_qk) - np.asarray(r_g_ov)
    scale = max(1.0, float(np.max(np.abs(g_qk))), float(np.max(np.abs(r_g_ov))))
    assert np.ptp(H) < 1e-7 * scale, H


@given(k=st.integers(2, 50), m=st.integers(1, 50), ratio=st.floats(0.01, 100.0), u=st.floats(0.0, 30.0),
       v=st.floats(-5.0, 30.0))
def test_slope_rescaling_identity_of_ratio(k, m, ratio, u, v):
    """Rescaling both rates by c leaves dv/du unchanged; dv/du scales linearly in eta_QK/eta_OV."""
    ns = numeric_system("CACO")
    f1 = ns.rhs(np.array([u, v]), k, m, ratio, 1.0)
    f2 = ns.rhs(np.array([u, v]), k, m, 3.0 * ratio, 3.0)
    f3 = ns.rhs(np.array([u, v]), k, m, 2.0 * ratio, 1.0)
    if f1[0] > 1e-300 and f1[1] > 1e-300:
        np.testing.assert_allclose(f2[1] / f2[0], f1[1] / f1[0], rtol=1e-12)
        np.testing.assert_allclose(f3[1] / f3[0], 2.0 * f1[1] / f1[0], rtol=1e-12)


@functools.lru_cache(maxsize=1)
def _v_of_level_collapsed_qk():
    """theory's v(X) of the collapsed-QK first integral, lambdified once (to mpmath) for every example."""
    from theory.first_integrals import v_of_u_collapsed_qk
    from theory.symbols import M as M_

    expr = v_of_u_collapsed_qk("CACO")
    return sp.lambdify((sp.Symbol("X", positive=True), M_), expr, modules="mpmath")


@given(m=st.integers(1, 50), X=st.floats(1.0, 500.0))
def test_lambert_w_form_of_v_solves_the_collapsed_first_integral(m, X):
    r"""v(X) from theory solves e^v + (M+1) v = X (the collapsed-QK first integral at level X)."""
    v = float(sp.re(_v_of_level_collapsed_qk()(X, m)))
    np.testing.assert_allclose(np.exp(v) + (m + 1) * v, X, rtol=1e-10)
