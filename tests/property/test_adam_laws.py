"""Sign-descent laws of Adam(beta1 = beta2 = 0) (theory.adam) held against torch training on the full matrices.

Each tolerance is derived from the regime: an entry with gradient g moves by lr*|g|/(|g| + eps) instead of
lr, a shortfall of at most lr*eps/g_min per step (g_min: the smallest nonzero entry gradient seen), and
float64 rounding adds ~1e-16 relative per operation.
"""

import math

import numpy as np
import pytest
import torch
from hypothesis import assume, given, settings, strategies as st
from torch.nn import functional as F

from validation.synthetic.adam_compare import log_residual_of_v, pattern_gradients, sign_law
from validation.synthetic.data import population_batch
from validation.synthetic.models import symmetric_model
from validation.synthetic.observables import measure

from qkov.testing import strategies as qst

pytestmark = pytest.mark.property


def _adam_run(param, K, M, u0, v0, ratio, steps, dt, eps, betas=(0.0, 0.0), optimizer="adam", every=5):
    """Adam (or GD at rate eta/eps when optimizer == 'gd/eps') with lr_OV = dt, lr_QK = ratio*dt.

    Returns the measured (t, u, v, spreads) every ``every`` steps and at the end, and the smallest and
    largest gradient of the entries u and v are read from.
    """
    model = symmetric_model(param, K, M, u0, v0, ov_basis="class", dtype=torch.float64)
    pop = population_batch(K, M, torch.float64)
    qk = list(model.qk_parameters())
    ov = list(model.ov_parameters())
    if optimizer == "adam":
        opt = torch.optim.Adam([{"params": qk, "lr": ratio * dt}, {"params": ov, "lr": dt}], betas=betas, eps=eps)
    else:
        opt = torch.optim.SGD([{"params": qk, "lr": ratio * dt / eps}, {"params": ov, "lr": dt / eps}])
    rows, gmin, gmax = [], math.inf, 0.0
    for n in range(steps + 1):
        if n % every == 0 or n == steps:
            obs = measure(model, K, M)
            rows.append((n * dt, obs["u"], obs["v"], obs["u_spread"], obs["v_spread"]))
        if n == steps:
            break
        opt.zero_grad()
        logits, _ = model(pop.x)
        F.cross_entropy(logits, pop.y).backward()
        for g in (g for gs in pattern_gradients(model, K, M).values() for g in gs):
            gmin = min(gmin, float(g.abs().min()))
            gmax = max(gmax, float(g.abs().max()))
        opt.step()
    return np.array(rows), gmin, gmax


@settings(max_examples=15)   # each example trains 5-40 Adam steps on full matrices
@given(param=qst.parametrizations(), K=st.integers(2, 5), M=st.integers(1, 5),
       u0=st.floats(0.3, 1.5), v0=st.floats(0.3, 1.5), ratio=st.floats(0.25, 4.0), steps=st.integers(5, 40))
def test_adam_beta0_tiny_eps_follows_the_derived_sign_descent_trajectory(param, K, M, u0, v0, ratio, steps):
    dt, eps = 0.02, 1e-14
    rows, gmin, _ = _adam_run(param, K, M, u0, v0, ratio, steps, dt, eps)
    t = rows[:, 0]
    u_law, v_law = sign_law(param, t, ratio, K=K, u0=u0, v0=v0)
    assume(gmin > 1e-6)   # the sign regime: every moving entry has |g| >> eps
    # Shortfall per entry <= n lr eps / gmin; a product of two coordinates of size <= s doubles it times s.
    scale = 2.0 * (1.0 + max(np.abs(u_law).max(), np.abs(v_law).max()))
    tol = scale * steps * max(ratio, 1.0) * dt * eps / gmin + 1e-10   # + float64 rounding over <= 40 steps
    assert np.abs(rows[:, 1] - u_law).max() <= tol
    assert np.abs(rows[:, 2] - v_law).max() <= tol
    # The state stays on the symmetric set (spreads are rounding-level).
    assert rows[:, 3].max() < 1e-9 and rows[:, 4].max() < 1e-9


@settings(max_examples=10)
@given(ratio=st.floats(0.25, 8.0), u0=st.floats(0.2, 1.0), v0=st.floats(0.0, 1.0), K=st.integers(2, 6),
       M=st.integers(1, 6))
def test_caco_sign_descent_is_the_line_v_minus_v0_equals_ratio_times_u_minus_u0(ratio, u0, v0, K, M):
    rows, gmin, _ = _adam_run("CACO", K, M, u0, v0, ratio, 30, 0.02, 1e-14)
    assume(gmin > 1e-6)
    du, dv = rows[:, 1] - u0, rows[:, 2] - v0
    # Linear growth in t: du = 2 t exactly in the sign regime (tolerance as above, u ~ 2).
    assert np.allclose(du, 2 * rows[:, 0], rtol=0, atol=1e-9)
    assert np.allclose(dv, ratio * du, rtol=0, atol=1e-9 * max(ratio, 1.0))


@given(param=st.sampled_from(("CACO", "FAFO")), ratio=st.floats(0.5, 6.0), K=st.integers(2, 6), M=st.integers(1, 8))
def test_matched_loss_exponent_of_the_sign_law(param, ratio, K, M):
    """log(1-p)/log L -> r (CACO) or r^2/2 (FAFO) along the derived law; the O(1/u) gap is bounded."""
    u0 = v0 = 0.5
    expo = ratio if param == "CACO" else ratio ** 2 / 2
    lk = math.log(K - 1)
    for t in (50.0, 200.0, 800.0):
        u, v = (float(x[0]) for x in sign_law(param, np.array([t]), ratio, K=K, u0=u0, v0=v0))
        log_res = float(log_residual_of_v(v, M))
        res = math.exp(log_res)
        # L = log1p(x), x = (K-1) e^{-pu} < e^{-50} here, so log L = log(K-1) - p u to relative 1e-20.
        log_L = lk - (1 - res) * u
        # log(1-p) = log(M+1) - v - delta with 0 <= delta <= (M+1)e^{-v} <= 1, hence
        # |log(1-p)/log L - expo| <= (|v - expo u| + expo (1-p) u + log(M+1) + expo log(K-1) + 1)/(p u - log(K-1)).
        gap = abs(log_res / log_L - expo)
        bound = (abs(v - expo * u) + expo * res * u + math.log(M + 1) + expo * lk + 1) / ((1 - res) * u - lk)
        assert gap <= bound
    # At t = 800 the bound is O(1/u) (CACO) or O(1/sqrt(u)) (FAFO): the exponent is reached.
    assert gap < 0.05 * expo


@settings(max_examples=8)    # two 20-step runs per example
@given(param=qst.parametrizations(), ratio=st.floats(0.5, 4.0), log_eps=st.floats(1.0, 3.0))
def test_large_eps_adam_is_gradient_descent_at_rate_eta_over_eps(param, ratio, log_eps):
    """The late phase: every |g| << eps, so Adam(0,0) equals GD with rates eta/eps."""
    eps, dt, steps = 10.0 ** log_eps, 0.05, 20
    a, _, gmax = _adam_run(param, 3, 2, 0.8, 0.8, ratio, steps, dt * eps, eps)   # lr = dt*eps: GD step dt
    g, _, _ = _adam_run(param, 3, 2, 0.8, 0.8, ratio, steps, dt * eps, eps, optimizer="gd/eps")
    # Per step the two updates differ by lr |g|^2/(eps (|g| + eps)) <= ratio*dt*gmax^2/eps; the flows are
    # Lipschitz on this short horizon, so 4x the summed difference bounds the state gap.
    tol = 4 * steps * max(ratio, 1.0) * dt * gmax ** 2 / eps + 1e-12
    assert np.abs(a[:, 1] - g[:, 1]).max() <= tol and np.abs(a[:, 2] - g[:, 2]).max() <= tol
    # ... and it is not sign descent: after the run the sign law has moved u by 2*n*dt*eps, far more.
    assert a[-1, 1] - a[0, 1] < 0.5 * 2 * steps * dt * eps
