"""Tied QK (W_K = W_Q, W_KQ = W_Q^T W_Q) end to end: derived reduction, generated flow, full matrices, torch.

Evidence that could come out the other way:
* the reduced 4-d (TACO) / 5-d (TAFO) flow, generated from theory.reduced, against RK4 on the full
  matrices from the tied start (a wrong multiplicity or a non-invariant ansatz separates them by O(1));
* the torch layer trained by gradient descent against numpy gradient descent on the full matrices;
* where MODEL.md's reduction stops: the query's score leaves the commons' (derived: its drift at
  a = c is nonzero), measured on the full matrices.
"""

import numpy as np
import pytest
import sympy as sp
import torch

from simulation import solve
from simulation.full_matrix import PopulationGradient, balanced_state, effective, simulate_full
from simulation.model_matrices import TokenLayout
from validation.attention import QKOVAttention

K, M, ETA_QK, ETA_OV, U0, V0 = 3, 2, 2.0, 1.0, 0.5, 0.3
T = [1.0, 5.0, 10.0, 20.0]


@pytest.mark.parametrize("param", ["TACO", "TAFO"])
def test_reduced_flow_matches_the_full_matrices(param):
    red = solve(param, K=K, M=M, eta_qk=ETA_QK, eta_ov=ETA_OV, u0=U0, v0=V0, t=T)
    full = solve(param, K=K, M=M, eta_qk=ETA_QK, eta_ov=ETA_OV, u0=U0, v0=V0, t=T, method="full-rk4", dt=0.01)
    assert red.p[-1] - red.p[0] > 0.2                 # the attention moved: not a comparison at the start
    # RK4 at dt = 0.01 against DOP853 at rtol 1e-10: O(dt^4) ~ 1e-8 relative at these rates
    np.testing.assert_allclose(full.u, red.u, rtol=1e-7)
    np.testing.assert_allclose(full.v, red.v, rtol=1e-7)
    np.testing.assert_allclose(full.p, red.p, rtol=1e-7)


def test_query_score_leaves_the_commons():
    """MODEL.md's line needs s_q = s_c (a = c); there d(a - c)/dt = (M+1) eta_QK g_c (b - c), g_c the score gradient
    of one common token, which vanishes only at v = a(b - c) = 0: the tied flow leaves the line."""
    from theory.reduced import reduced_system
    from theory.symbols import K as K_, M as M_, a_, alpha, b_, beta, c_, eta_qk, gamma, u
    from theory.symmetric_line import attention_on_distinct, margin_loss

    s = reduced_system("TACO")
    assert not s.qk.on_line
    drift = (s.rhs[1] - s.rhs[3]).subs(c_, a_)                       # d(a - c)/dt on the set a = c
    g_c = sp.diff(margin_loss(u, attention_on_distinct()), beta) / M_
    stated = ((M_ + 1) * eta_qk * g_c * (b_ - c_)).subs({alpha: a_ * b_, beta: a_ * c_, gamma: a_ ** 2}).subs(c_, a_)
    rng = np.random.default_rng(0)
    for _ in range(5):
        pt = {K_: int(rng.integers(2, 9)), M_: int(rng.integers(1, 9)), a_: rng.uniform(0.1, 2),
              b_: rng.uniform(0.1, 3), u: rng.uniform(0.1, 3), eta_qk: rng.uniform(0.1, 3)}
        d, st = float(drift.subs(pt)), float(stated.subs(pt))
        assert abs(d - st) <= 1e-12 * abs(st) and abs(d) > 1e-9      # equal, and not zero off v = 0
    st = balanced_state("TACO", K, M, U0, V0)
    col0 = effective(st)[0][:, K + M]
    assert abs(col0[K + M] - col0[K]) < 1e-12          # the start is on MODEL.md's line (measured below: it leaves)


def test_torch_layer_trains_like_the_full_matrices():
    """QKOVAttention("TACO") by gradient descent (float64) equals numpy gradient descent step for step."""
    lay = TokenLayout(K, M)
    state = balanced_state("TACO", K, M, U0, V0)
    model = QKOVAttention(lay.D, K, "TACO", rank_qk=1, dtype=torch.float64)
    with torch.no_grad():
        model.W_Q.copy_(torch.as_tensor(state["W_Q"]))
        model.W_OV.copy_(torch.as_tensor(state["W_OV"]))
    dt, steps = 0.1, 100
    opt = torch.optim.SGD([{"params": list(model.qk_parameters()), "lr": ETA_QK * dt},
                           {"params": list(model.ov_parameters()), "lr": ETA_OV * dt}])
    X = torch.as_tensor(lay.one_hot_population())
    y = torch.arange(K)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        z, _ = model(X)
        loss = torch.nn.functional.cross_entropy(z, y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    ref = simulate_full("TACO", K, M, ETA_QK, ETA_OV, [steps * dt], dt, state=state, method="gd")
    W_KQ = model.effective_qk().detach().numpy()
    W_OV = model.effective_ov().detach().numpy()
    np.testing.assert_allclose(PopulationGradient(K, M).effective_grads(W_KQ[:, K + M], W_OV)[0], ref.loss[-1],
                               rtol=1e-10)
    assert losses[-1] < 0.8 * losses[0]               # it trained
    col = W_KQ[:, K + M]
    assert col[K + M] - col[K] > 1e-2                 # the query's score left the commons' (off MODEL.md's line)
