"""The circuit-kind registry: each kind's pull-back and rescaling against autograd, on random matrices.

A kind states three things about its factors theta: the effective matrix W(theta), the pull-back
grad_theta L = J^T G of G = dL/dW, and the velocity R(G) of W when every factor follows -grad. The
tests differentiate W(theta) with torch (float64), so a wrong transpose or a missing symmetrisation fails.
"""

import numpy as np
import pytest
import torch

from theory.parametrization import KINDS, Parametrization, registered

CASES = [(kind, circuit) for kind in KINDS.values() for circuit in kind.circuits]


def _mats(kind, circuit, seed, D=5, K=3, rank=4):
    rng = np.random.default_rng(seed)
    return [torch.tensor(rng.standard_normal(s), dtype=torch.float64, requires_grad=True)
            for s in kind.factor_shapes(circuit, D, K, rank)]


@pytest.mark.parametrize("kind,circuit", CASES, ids=[f"{k.name}-{c}" for k, c in CASES])
@pytest.mark.parametrize("seed", [0, 1])
def test_pullback_is_the_chain_rule(kind, circuit, seed):
    mats = _mats(kind, circuit, seed)
    W = kind.effective(circuit, mats)
    G = torch.tensor(np.random.default_rng(seed + 10).standard_normal(tuple(W.shape)), dtype=torch.float64)
    (W * G).sum().backward()                       # L = <G, W>, so dL/dW = G
    got = kind.pullback(circuit, [m.detach() for m in mats], G)
    for m, g in zip(mats, got):
        np.testing.assert_allclose(g.numpy(), m.grad.numpy(), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("kind,circuit", CASES, ids=[f"{k.name}-{c}" for k, c in CASES])
def test_velocity_is_the_derivative_of_the_effective_matrix(kind, circuit):
    mats = [m.detach() for m in _mats(kind, circuit, 3)]
    W = kind.effective(circuit, mats)
    G = torch.tensor(np.random.default_rng(4).standard_normal(tuple(W.shape)), dtype=torch.float64)
    grads = kind.pullback(circuit, mats, G)
    # d/de W(theta - e grad) at e = 0, exactly by forward-mode autodiff
    _, jvp = torch.func.jvp(lambda *ms: kind.effective(circuit, list(ms)), tuple(mats), tuple(-g for g in grads))
    np.testing.assert_allclose(jvp.numpy(), -kind.velocity(circuit, mats, G).numpy(), rtol=1e-12, atol=1e-12)


def test_effective_works_batched_numpy_and_torch():
    """Batched (n, r, D) factors (validation.synthetic.paper_fast trains many models at once)."""
    rng = np.random.default_rng(0)
    for kind, circuit in CASES:
        shapes = kind.factor_shapes(circuit, 4, 3, 2)
        batch = [rng.standard_normal((2, *s)) for s in shapes]
        W = kind.effective(circuit, batch)
        W0 = kind.effective(circuit, [b[0] for b in batch])
        np.testing.assert_allclose(W[0], W0)
        np.testing.assert_allclose(kind.effective(circuit, [torch.tensor(b) for b in batch]).numpy(), W)


def test_tied_effective_matrix_is_symmetric_psd():
    (W,) = KINDS["T"].start("QK", 3, 2, 0.4, rank=2)
    E = KINDS["T"].effective("QK", [W])
    assert np.allclose(E, E.T) and np.linalg.eigvalsh(E).min() > -1e-12


def test_tied_start_is_models_query_column_up_to_a_shift():
    """Scores 2 v0 on distinct tokens, v0 on commons and the query: gap v0, the query's score = the commons'."""
    K, M, v0 = 4, 3, 0.36
    (W,) = KINDS["T"].start("QK", K, M, v0)
    col = KINDS["T"].effective("QK", [W])[:, K + M]
    np.testing.assert_allclose(col[:K] - col[K], v0)
    np.testing.assert_allclose(col[K:K + M], col[K + M])


def test_registry_forms_the_four_and_the_extensions():
    assert registered()[:4] == ("CACO", "FACO", "CAFO", "FAFO")
    assert {"TACO", "TAFO"} <= set(registered()[4:])          # tied is QK only: no CATO/...
    assert not any(p[2] == "T" for p in registered())
    assert set(registered()[4:]) >= {"SACO", "SAFO", "CASO", "FASO", "TASO", "SASO"}  # scaled: both circuits
    with pytest.raises(ValueError, match="not a parametrization"):
        Parametrization("CATO")
    assert Parametrization("FACO").description == "FACO (factorized QK, collapsed OV)"


@pytest.mark.parametrize("kind", [k for k in KINDS.values() if "QK" in k.circuits], ids=lambda k: k.name)
def test_scores_are_the_effective_bilinear_form(kind):
    """A kind's (low-rank) scores equal x_j^T W x_q through its effective matrix, batched (B, L, D)."""
    mats = [m.detach() for m in _mats(kind, "QK", 5)]
    rng = np.random.default_rng(6)
    x, xq = torch.tensor(rng.standard_normal((3, 7, 5))), torch.tensor(rng.standard_normal((3, 5)))
    want = torch.einsum("bld,de,be->bl", x, kind.effective("QK", mats), xq)
    np.testing.assert_allclose(kind.scores("QK", mats, x, xq).numpy(), want.numpy(), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("kind,circuit", CASES, ids=[f"{k.name}-{c}" for k, c in CASES])
def test_apply_is_the_effective_read_out(kind, circuit):
    mats = [m.detach() for m in _mats(kind, circuit, 7)]
    h = torch.tensor(np.random.default_rng(8).standard_normal((4, 5)))
    want = h @ kind.effective(circuit, mats).T
    np.testing.assert_allclose(kind.apply(circuit, mats, h).numpy(), want.numpy(), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("kind,circuit", CASES, ids=[f"{k.name}-{c}" for k, c in CASES])
def test_balance_is_conserved_by_the_flow_on_the_factors(kind, circuit):
    """d/dt balance(theta) along theta' = -pullback(G) is 0 (forward-mode autodiff), for any G; None: no balance."""
    mats = [m.detach() for m in _mats(kind, circuit, 9)]
    B = kind.balance(circuit, mats)
    if B is None:
        assert not isinstance(kind, type(KINDS["F"])), "a factorized kind conserves its balance"
        return
    G = torch.tensor(np.random.default_rng(10).standard_normal(tuple(kind.effective(circuit, mats).shape)))
    grads = kind.pullback(circuit, mats, G)
    _, rate = torch.func.jvp(lambda *ms: kind.balance(circuit, list(ms)), tuple(mats), tuple(-g for g in grads))
    assert float(torch.linalg.norm(B)) > 1e-3          # a random state is not balanced: the check is not 0 = 0
    np.testing.assert_allclose(rate.numpy(), 0.0, atol=1e-11)


@pytest.mark.parametrize("kind,circuit", CASES, ids=[f"{k.name}-{c}" for k, c in CASES])
def test_zero_is_a_fixed_point_as_the_kind_says(kind, circuit):
    """At zero factors every factor's gradient vanishes exactly when the kind declares zero a fixed point."""
    mats = [torch.zeros_like(m.detach()) for m in _mats(kind, circuit, 11)]
    G = torch.ones(tuple(kind.effective(circuit, mats).shape), dtype=torch.float64)
    moving = any(float(torch.abs(g).max()) > 0 for g in kind.pullback(circuit, mats, G))
    assert moving is not kind.zero_is_fixed_point


@pytest.mark.parametrize("circuit", ["QK", "OV"])
def test_scaled_kind_is_the_factorized_product_times_its_scale(circuit):
    """W = c W_1 W_2 with the same factors; its start has the factorized start's effective matrix (same u0, v0)."""
    S, F = KINDS["S"], KINDS["F"]
    mats = [m.detach() for m in _mats(S, circuit, 12)]
    np.testing.assert_allclose(S.effective(circuit, mats).numpy(), S.scale * F.effective(circuit, mats).numpy())
    assert S.scale != 1                                                   # else the test could not fail
    K, M, value = 3, 2, 0.7
    np.testing.assert_allclose(S.effective(circuit, S.start(circuit, K, M, value)),
                               F.effective(circuit, F.start(circuit, K, M, value)), atol=1e-14)
