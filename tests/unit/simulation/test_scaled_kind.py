"""The scaled factorization (W = c W_1 W_2, kind ``S``), added as a user would: 3 files outside tests.

Evidence that could come out the other way:
* the reduced flow generated from its entry in ``theory.reduced.REDUCED_CIRCUITS`` against RK4 on the full
  matrices (``simulation.full_matrix``, from the kind's start): a wrong multiplicity, effective observable or
  start separates them by O(1);
* the torch layer (the kind's ``scores``/``apply``) trained by gradient descent against numpy gradient descent on
  the full matrices (the kind's ``pullback``);
* ``qkov simulate --param`` with the new names, reduced against full matrices through the CLI.
"""

import json

import numpy as np
import pytest
import torch

from qkov.cli.main import cli, run_cli
from simulation import solve
from simulation.full_matrix import PopulationGradient, balanced_state, simulate_full
from simulation.model_matrices import TokenLayout
from validation.attention import QKOVAttention

K, M, ETA_QK, ETA_OV, U0, V0 = 3, 2, 2.0, 1.0, 0.5, 0.3
T = [1.0, 5.0, 10.0]


@pytest.mark.parametrize("param", ["SACO", "CASO", "SASO"])
def test_reduced_flow_matches_the_full_matrices(param):
    red = solve(param, K=K, M=M, eta_qk=ETA_QK, eta_ov=ETA_OV, u0=U0, v0=V0, t=T)
    full = solve(param, K=K, M=M, eta_qk=ETA_QK, eta_ov=ETA_OV, u0=U0, v0=V0, t=T, method="full-rk4", dt=0.01)
    assert red.p[-1] - red.p[0] > 0.2 and red.u[-1] > 2 * U0          # it moved: not a comparison at the start
    # RK4 at dt = 0.01 against DOP853 at rtol 1e-10: O(dt^4) ~ 1e-7 relative at these rates (scale 2 doubles them)
    for name in ("u", "v", "p"):
        np.testing.assert_allclose(getattr(full, name), getattr(red, name), rtol=1e-6)


def test_scaled_flow_is_faster_than_the_factorized_one():
    """c = 2 multiplies the velocity by c^2 at equal effective matrices: SASO's u grows faster than FAFO's."""
    s = solve("SASO", K=K, M=M, eta_qk=ETA_QK, eta_ov=ETA_OV, u0=U0, v0=V0, t=[1.0])
    f = solve("FAFO", K=K, M=M, eta_qk=ETA_QK, eta_ov=ETA_OV, u0=U0, v0=V0, t=[1.0])
    assert s.u[0] - U0 > 2 * (f.u[0] - U0) > 0


def test_torch_layer_trains_like_the_full_matrices():
    """QKOVAttention("SASO") by gradient descent (float64) equals numpy gradient descent on the full matrices."""
    lay = TokenLayout(K, M)
    state = balanced_state("SASO", K, M, U0, V0)
    model = QKOVAttention(lay.D, K, "SASO", rank_qk=1, rank_ov=K - 1, dtype=torch.float64)
    with torch.no_grad():
        for name, value in state.items():
            getattr(model, name).copy_(torch.as_tensor(value))
    dt, steps = 0.05, 100
    opt = torch.optim.SGD([{"params": list(model.qk_parameters()), "lr": ETA_QK * dt},
                           {"params": list(model.ov_parameters()), "lr": ETA_OV * dt}])
    X, y = torch.as_tensor(lay.one_hot_population()), torch.arange(K)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(X)[0], y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    ref = simulate_full("SASO", K, M, ETA_QK, ETA_OV, [steps * dt], dt, state=state, method="gd")
    W_KQ, W_OV = model.effective_qk().detach().numpy(), model.effective_ov().detach().numpy()
    np.testing.assert_allclose(PopulationGradient(K, M).effective_grads(W_KQ[:, K + M], W_OV)[0], ref.loss[-1],
                               rtol=1e-10)
    assert losses[-1] < 0.5 * losses[0]               # it trained


def test_simulate_cli_runs_the_new_kind_reduced_and_full(capsys):
    args = ["simulate", "--param", "SASO,CASO", "--K", "3", "--M", "2", "--t", "2,5", "--json"]
    assert run_cli(cli, args) == 0
    red = json.loads(capsys.readouterr().out)
    assert run_cli(cli, [*args, "--method", "full-rk4", "--dt", "0.01"]) == 0
    full = json.loads(capsys.readouterr().out)
    got = {r["param"]: r for r in red["runs"]}
    assert set(got) == {"SASO", "CASO"}
    for r in full["runs"]:
        np.testing.assert_allclose(r["u"], got[r["param"]]["u"], rtol=1e-6)


def test_simulate_cli_refuses_the_scaled_kind_at_zero(capsys):
    assert run_cli(cli, ["simulate", "--param", "SACO", "--v0", "0"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("qkov: error: v0: 0") and "SACO" in err and "\n" not in err


def test_simulate_cli_refuses_what_is_not_derived_for_the_new_kind(capsys):
    """The laws and the optimizer maps exist for MODEL.md's four: one line naming them, not a KeyError."""
    assert run_cli(cli, ["simulate", "--param", "SASO", "--laws", "--t", "5"]) == 2
    assert capsys.readouterr().err.strip() == "qkov: error: laws: SASO: theory derives the laws for CACO, FACO, CAFO, FAFO only"
    assert run_cli(cli, ["simulate", "--param", "TACO", "--optimizer", "adam", "--t", "5"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("qkov: error: param: TACO: --optimizer adam has reduced maps for") and "\n" not in err
