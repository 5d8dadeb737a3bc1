"""Factorization's rescaling under sign descent (theory.optimizer_rescaling) against torch's Adam(0, 0)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from theory.optimizer_rescaling import DELTA_S, ETA, SIGN, W, X, Y, sign_rescaling, sign_rescaling_checks

LR = 1e-6
"""One Adam(0, 0) step of size LR: the product's change is LR * (first-order term) + LR^2 * (dx dy); the
first-order term is what the theory states, so (dw / LR) matches it to ~LR relative."""


def _adam00_step(params, loss_fn):
    opt = torch.optim.Adam(params, lr=LR, betas=(0.0, 0.0), eps=1e-30)   # eps << |g|: the sign-descent limit
    opt.zero_grad()
    loss_fn().backward()
    opt.step()


def test_the_derived_checks_hold_symbolically():
    checks = sign_rescaling_checks()
    assert [c.passed for c in checks] == [True] * 4 and {c.method for c in checks} == {"symbolic"}


@settings(max_examples=40, deadline=None)
@given(x=st.floats(0.05, 5.0), y=st.floats(0.05, 5.0), target=st.floats(-10.0, 10.0))
def test_scalar_product_moves_at_the_derived_factor_times_the_collapsed_sign_step(x, y, target):
    """torch Adam(0, 0) on w = x y: dw/lr equals rho_sign(x, y) * (-sign(dL/dw)), the theory's expression
    evaluated (not retyped); and the conserved x - y does not move (to rounding of the two updates)."""
    xt = torch.tensor(x, dtype=torch.float64, requires_grad=True)
    yt = torch.tensor(y, dtype=torch.float64, requires_grad=True)
    if abs(x * y - target) < 1e-3:      # dL/dw ~ 0: its sign is rounding, not a statement
        return
    _adam00_step([xt, yt], lambda: 0.5 * (xt * yt - target) ** 2)
    r = sign_rescaling()
    s = float(np.sign(x * y - target))
    predicted = float(r.wdot.subs({X: x, Y: y, ETA: 1.0, SIGN: s}))
    assert (xt.item() * yt.item() - x * y) / LR == pytest.approx(predicted, rel=5e-5, abs=1e-9)
    effective = float(r.in_effective.subs({DELTA_S: x - y, W: x * y}) if x >= y else r.in_effective.subs(
        {DELTA_S: y - x, W: x * y}))
    assert effective == pytest.approx(x + y, rel=1e-12)
    assert (xt.item() - yt.item()) - (x - y) == pytest.approx(0.0, abs=1e-14)


@pytest.mark.parametrize("shape", [(2, 2, 3), (4, 3, 5)])
def test_matrix_product_under_adam00_is_the_sign_product_rule_not_a_scalar_factor(shape):
    """W = W1 W2, one Adam(0, 0) step: dW/lr = -(sign(G W2^T) W2 + W1 sign(W1^T G)) to O(lr); and that is not
    rho * sign(G) for any scalar rho (why the symmetric set's orbits separate under Adam)."""
    m, k, n = shape
    g = torch.Generator().manual_seed(m * 100 + k * 10 + n)
    W1 = torch.randn(m, k, generator=g, dtype=torch.float64, requires_grad=True)
    W2 = torch.randn(k, n, generator=g, dtype=torch.float64, requires_grad=True)
    T = torch.randn(m, n, generator=g, dtype=torch.float64)
    with torch.no_grad():
        W0, A, B = W1 @ W2, W1.clone(), W2.clone()
        G = W0 - T                                    # dL/dW of L = |W - T|^2 / 2
    _adam00_step([W1, W2], lambda: 0.5 * ((W1 @ W2 - T) ** 2).sum())
    with torch.no_grad():
        measured = (W1 @ W2 - W0) / LR
        predicted = -(torch.sign(G @ B.T) @ B + A @ torch.sign(A.T @ G))
    assert torch.allclose(measured, predicted, rtol=1e-4, atol=1e-4 * predicted.abs().max().item())
    # no scalar rho with predicted = -rho * sign(G): the least-squares rho leaves a residual of order one
    sg = torch.sign(G)
    rho = -(predicted * sg).sum() / (sg * sg).sum()
    assert (predicted + rho * sg).norm() > 0.1 * predicted.norm()
