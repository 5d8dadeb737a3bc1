"""validation.synthetic.grid_training: full-matrix training over a grid of configurations (torch.func.vmap) equals
the per-configuration loop with torch's optimizers, and its observables are simulation's."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from validation.synthetic.grid_training import GRID_OBSERVABLES, grid_observables, train_grid, train_grid_loop
from validation.synthetic.models import random_model
from validation.synthetic.observables import measure

EQUAL = 1e-10
"""Grid and loop apply the same element-wise optimizer arithmetic (the registry's step matches torch's update to
rounding) to gradients that differ only in reduction order (a vmapped batch against one model's autograd), ~1e-16
per step. From a perturbed start nothing amplifies that: measured 1.4e-14 (observables) and 1.3e-11 (factors, FAFO
Adam) after 40 steps of 12 configurations; 1e-10 fails for any configuration trained with another's rates, betas,
eps or start (they differ by > 1e-3)."""


def _grid(C: int, seed: int = 0) -> dict:
    """Ratios x lrs x starts x betas x eps, drawn as in tests/unit/simulation/test_optimizer_batch.py."""
    rng = np.random.default_rng(seed)
    return dict(eta_qk=10.0 ** rng.uniform(-1, 1, C), eta_ov=1.0, dt=10.0 ** rng.uniform(-3, -1, C),
                beta1=rng.uniform(0.5, 0.95, C), beta2=rng.uniform(0.9, 0.9999, C), eps=10.0 ** rng.uniform(-8, -6, C),
                u0=10.0 ** rng.uniform(-2, 0, C), v0=10.0 ** rng.uniform(-2, 0, C))


@pytest.mark.parametrize("param,optimizer,wd", [("CACO", "adam", 0.0), ("FAFO", "adamw", 0.01), ("FACO", "momentum", 0.0),
                                                ("CAFO", "gd", 0.0)])
def test_grid_equals_the_per_configuration_loop(param, optimizer, wd):
    # A start perturbed off the symmetric set (noise 1e-3): no gradient entry vanishes by symmetry, so Adam's
    # normalisation has no round-off to amplify (from the exact symmetric start it does: the module's docstring).
    g = _grid(10)
    kw = dict(K=4, M=3, steps=30, noise=1e-3, seed=5, weight_decay=wd, record=range(0, 31, 3), **g)
    grid, loop = train_grid(param, optimizer, **kw), train_grid_loop(param, optimizer, **kw)
    assert grid.size == 10 and grid.step.tolist() == list(range(0, 31, 3)) and grid.u.shape == (11, 10)
    for k in GRID_OBSERVABLES:
        np.testing.assert_allclose(getattr(grid, k), getattr(loop, k), rtol=EQUAL, atol=EQUAL, err_msg=k)
    assert grid.params.keys() == loop.params.keys()
    for k in grid.params:
        np.testing.assert_allclose(grid.params[k], loop.params[k], rtol=EQUAL, atol=EQUAL, err_msg=k)
    np.testing.assert_allclose(grid.t, grid.step[:, None] * g["dt"][None, :], rtol=1e-15)
    assert np.ptp(grid.loss[-1]) > 1e-3                # the configurations really differ
    assert np.all(grid.loss[-1] < grid.loss[0])         # and trained


def test_symmetric_start_gd_equals_the_loop():
    g = _grid(6, seed=1)
    kw = dict(K=4, M=3, steps=25, **g)
    grid, loop = train_grid("FAFO", "gd", **kw), train_grid_loop("FAFO", "gd", **kw)
    for k in GRID_OBSERVABLES:
        np.testing.assert_allclose(getattr(grid, k), getattr(loop, k), rtol=EQUAL, atol=EQUAL, err_msg=k)


@pytest.mark.parametrize("param", ["CACO", "FACO", "CAFO", "FAFO"])
def test_grid_observables_are_simulations(param):
    """u, v, p, loss of :func:`grid_observables` against :func:`validation.synthetic.observables.measure` (numpy,
    simulation.model_matrices.observables) at random states; 1e-12: the same sums in another order."""
    K, M = 4, 3
    models = [random_model(param, K + M + 1, K, 0.5, s, rank_qk=K + M + 1, rank_ov=K + M + 1) for s in range(3)]
    with torch.no_grad():
        obs = grid_observables(torch.stack([m.effective_qk() for m in models]),
                               torch.stack([m.effective_ov() for m in models]), K, M)
    for i, m in enumerate(models):
        ref = measure(m, K, M)
        for k in ("u", "v", "p", "loss"):
            assert float(obs[k][i]) == pytest.approx(ref[k], rel=1e-12, abs=1e-12), k
        assert float(obs["residual"][i]) == pytest.approx(1 - ref["p"], rel=1e-10)


def test_bad_input():
    g = dict(eta_qk=1.0, eta_ov=1.0, dt=0.01, u0=0.5, v0=0.5, steps=1)
    with pytest.raises(ValueError, match="optimizer 'lion'"):
        train_grid("CACO", "lion", K=4, M=3, **g)
    with pytest.raises(ValueError, match="beta3"):
        train_grid("CACO", K=4, M=3, beta3=0.1, **g)
    with pytest.raises(ValueError, match="K="):
        train_grid("CACO", K=np.array([4, 5]), M=3, **g)
    with pytest.raises(ValueError, match="torch counterpart"):
        train_grid_loop("CACO", "sign", K=4, M=3, **g)
    assert train_grid("CACO", "sign", K=4, M=3, **g).loss.shape == (2, 1)
