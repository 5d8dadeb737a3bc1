"""Symbolic results against torch autograd on the full matrices (hypothesis over sizes and states)."""

import numpy as np
import sympy as sp
import torch
from hypothesis import given, settings, strategies as st

from theory.orbit_gradient import orbit_gradient
from theory.rescaling import ov_rescaling, qk_rescaling
from theory.reduced import reduced_system
from theory.symbols import A_, B_, C_, E_, K, M, alpha, beta, gamma, v0
from simulation.model_matrices import TokenLayout, balanced_ov_factors, balanced_qk_factors


ORBIT_ARGS = (A_, B_, C_, E_, alpha, beta, gamma, K, M)
_G = orbit_gradient()
ORBIT_FN = {name: sp.lambdify(ORBIT_ARGS, getattr(_G, name)) for name in ("A", "B", "C", "E", "alpha", "beta", "gamma")}


def population_loss(WKQ: torch.Tensor, WOV: torch.Tensor, k: int, m: int) -> torch.Tensor:
    """Independent torch oracle of MODEL.md's population loss (one-hot tokens, query last)."""
    x = torch.eye(k + m + 1, dtype=torch.float64)[torch.as_tensor(TokenLayout(k, m).sequences())]   # (K, L, D)
    xq = x[:, -1]
    s = torch.einsum("yld,de,ye->yl", x, WKQ, xq)
    a = torch.softmax(s, dim=1)
    z = torch.einsum("yl,yld,kd->yk", a, x, WOV)
    return torch.nn.functional.cross_entropy(z, torch.arange(k))


def symmetric_point(k, m, vals):
    A, B, C, E, al, be, ga = vals
    D, q = k + m + 1, k + m
    WOV = np.full((k, D), C)
    WOV[:, :k] = B
    WOV[np.arange(k), np.arange(k)] = A
    WOV[:, q] = E
    WKQ = np.zeros((D, D))
    WKQ[:k, q] = al
    WKQ[k:q, q] = be
    WKQ[q, q] = ga
    return WKQ, WOV


values = st.floats(-2.0, 2.0, allow_nan=False)


@given(k=st.integers(2, 6), m=st.integers(1, 5), vals=st.tuples(*[values] * 7))
def test_full_gradient_at_symmetric_points_is_the_orbit_gradient(k, m, vals):
    WKQ, WOV = (torch.tensor(a, requires_grad=True) for a in symmetric_point(k, m, vals))
    population_loss(WKQ, WOV, k, m).backward()
    gq, go = WKQ.grad.numpy(), WOV.grad.numpy()
    q = k + m
    want = {name: fn(*vals, k, m) for name, fn in ORBIT_FN.items()}
    off = ~np.eye(k, dtype=bool)
    np.testing.assert_allclose(np.diag(go[:, :k]), want["A"], atol=1e-12)
    np.testing.assert_allclose(go[:, :k][off], want["B"], atol=1e-12)
    np.testing.assert_allclose(go[:, k:q], want["C"], atol=1e-12)
    np.testing.assert_allclose(go[:, q], want["E"], atol=1e-12)
    np.testing.assert_allclose(gq[:k, q], want["alpha"], atol=1e-12)
    np.testing.assert_allclose(gq[k:q, q], want["beta"], atol=1e-12)
    np.testing.assert_allclose(gq[q, q], want["gamma"], atol=1e-12)
    assert np.abs(np.delete(gq, q, axis=1)).max() == 0.0
    # The symmetric set is invariant: commons/query OV columns get no gradient, sums are conserved.
    assert abs(want["C"]) < 1e-12 and abs(want["E"]) < 1e-12
    assert abs(go[:, :k].sum(axis=0)).max() < 1e-12 and abs(gq[:, q].sum()) < 1e-12


def _flow(param, k, m, eta_qk, eta_ov, u, v, rank_qk=2, rank_ov=None):
    """Full-matrix flow of the effective (u, v) at MODEL.md's balanced/symmetric start, by autograd."""
    from simulation.model_matrices import symmetric_ov, symmetric_qk

    qk_f, ov_f = param[0] == "F", param[2] == "F"
    params, rates = {}, {}
    if qk_f:
        WK, WQ = balanced_qk_factors(k, m, v, rank=rank_qk)
        params.update(WK=WK, WQ=WQ); rates.update(WK=eta_qk, WQ=eta_qk)
    else:
        params["WKQ"] = symmetric_qk(k, m, v); rates["WKQ"] = eta_qk
    if ov_f:
        WO, WV = balanced_ov_factors(k, m, u, rank=rank_ov)
        params.update(WO=WO, WV=WV); rates.update(WO=eta_ov, WV=eta_ov)
    else:
        params["WOV"] = symmetric_ov(k, m, u); rates["WOV"] = eta_ov
    tp = {n: torch.tensor(a, requires_grad=True) for n, a in params.items()}
    eff = lambda P: ((P["WK"].T @ P["WQ"]) if qk_f else P["WKQ"], (P["WO"] @ P["WV"]) if ov_f else P["WOV"])
    WKQ, WOV = eff(tp)
    population_loss(WKQ, WOV, k, m).backward()
    vel = {n: -rates[n] * tp[n].grad for n in tp}
    # d/dt of the effective matrices (first order in the factor velocities, exact for the flow).
    if qk_f:
        dKQ = vel["WK"].T @ tp["WQ"].detach() + tp["WK"].detach().T @ vel["WQ"]
    else:
        dKQ = vel["WKQ"]
    if ov_f:
        dOV = vel["WO"] @ tp["WV"].detach() + tp["WO"].detach() @ vel["WV"]
    else:
        dOV = vel["WOV"]
    q = k + m
    du = (dOV[0, 0] - dOV[1, 0]).item()
    dv = (dKQ[0, q] - dKQ[k, q]).item()
    return du, dv


@settings(max_examples=15)
@given(param=st.sampled_from(["CACO", "FACO", "CAFO", "FAFO"]), k=st.integers(2, 5), m=st.integers(1, 4),
       ratio=st.floats(0.1, 30.0), u=st.floats(0.05, 4.0), v=st.floats(0.05, 4.0))
def test_reduced_flow_and_rescaling_match_autograd(param, k, m, ratio, u, v):
    """(du/dt, dv/dt) of the full matrices = eta * rho * collapsed field, with rho from theory."""
    from simulation.numeric import numeric_system
    from theory.symbols import delta, u as U, v as V

    du, dv = _flow(param, k, m, ratio, 1.0, u, v)
    base = numeric_system("CACO").rhs(np.array([u, v]), k, m, ratio, 1.0)
    rho_ov = float(ov_rescaling().in_effective.subs({delta: 0, U: u})) if param[2] == "F" else 1.0
    A_bal = qk_rescaling().balanced
    rho_qk = float(A_bal.subs({K: k, M: m, V: v, v0: v})) if param[0] == "F" else 1.0
    np.testing.assert_allclose(du, rho_ov * base[0], rtol=1e-9, atol=1e-13)
    np.testing.assert_allclose(dv, rho_qk * base[1], rtol=1e-9, atol=1e-13)
    # ... and the reduced system of `param` pushed to (u, v) agrees too.
    ns = numeric_system(param)
    y0 = ns.initial_state(u, v, k)
    sysm = reduced_system(param)
    f = ns.rhs(y0, k, m, ratio, 1.0)
    jac_u = [float(sp.diff(sysm.u_expr, s).subs(dict(zip(sysm.state, y0)))) for s in sysm.state]
    jac_v = [float(sp.diff(sysm.v_expr, s).subs(dict(zip(sysm.state, y0)))) for s in sysm.state]
    np.testing.assert_allclose(np.dot(jac_u, f), du, rtol=1e-9, atol=1e-13)
    np.testing.assert_allclose(np.dot(jac_v, f), dv, rtol=1e-9, atol=1e-13)


@settings(max_examples=15)
@given(k=st.integers(2, 5), m=st.integers(1, 4), r1=st.integers(1, 4), r2=st.integers(1, 4), seed=st.integers(0, 10_000))
def test_preconditioned_form_holds_for_random_factors(k, m, r1, r2, seed):
    r"""Any state: dW/dt = -eta (W1 W1^T G + G W2^T W2) for both circuits, G the collapsed gradient."""
    g = torch.Generator().manual_seed(seed)
    D = k + m + 1
    WK, WQ = torch.randn(r1, D, generator=g, dtype=torch.float64) * 0.7, torch.randn(r1, D, generator=g, dtype=torch.float64) * 0.7
    WO, WV = torch.randn(k, r2, generator=g, dtype=torch.float64) * 0.7, torch.randn(r2, D, generator=g, dtype=torch.float64) * 0.7
    for t in (WK, WQ, WO, WV):
        t.requires_grad_(True)
    population_loss(WK.T @ WQ, WO @ WV, k, m).backward()
    WKQ = (WK.T @ WQ).detach().requires_grad_(True)
    WOV = (WO @ WV).detach().requires_grad_(True)
    population_loss(WKQ, WOV, k, m).backward()
    eta = 0.37
    dKQ = (-eta * WK.grad).T @ WQ.detach() + WK.detach().T @ (-eta * WQ.grad)
    dOV = (-eta * WO.grad) @ WV.detach() + WO.detach() @ (-eta * WV.grad)
    want_KQ = -eta * (WK.detach().T @ WK.detach() @ WKQ.grad + WKQ.grad @ WQ.detach().T @ WQ.detach())
    want_OV = -eta * (WO.detach() @ WO.detach().T @ WOV.grad + WOV.grad @ WV.detach().T @ WV.detach())
    torch.testing.assert_close(dKQ, want_KQ, rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(dOV, want_OV, rtol=1e-10, atol=1e-12)
