"""The small-batch path (simulation.scalar: one scipy DOP853 call per trajectory) and the vectorised batch path
agree, and solve()/integrate_many route few trajectories to the former."""

from __future__ import annotations

import numpy as np
import pytest

import simulation.reduced as reduced
from simulation import solve
from simulation.reduced import integrate_many

pytestmark = pytest.mark.unit

T = np.array([0.0, 10.0, 1e3, 1e6, 1e12])
AGREE = 1e-8
"""Both paths run DOP853 at rtol 1e-10; each accumulates a global error of a few 1e-10 relative over ~100-200
steps to t = 1e12 (measured: largest difference 1.6e-10 relative, FACO); 1e-8 leaves a margin and still fails for any
wrong right-hand side, parameter or time (those move the states by > 1e-3)."""


def _rel(a, b):
    return float(np.max(np.abs(a - b) / np.maximum(np.abs(b), 1e-6)))


@pytest.mark.parametrize("param", ["CACO", "FAFO"])
def test_small_batch_path_agrees_with_batch_path(param, monkeypatch):
    monkeypatch.setattr(reduced, "CLOCK_FREE", False)          # CACO would otherwise be integrated clock-free
    ratios = np.array([0.1, 1.0, 30.0])
    small = integrate_many(param, 10, 19, ratios, 1.0, 0.1, 0.2, T)
    assert np.all(small.steps > 0) and np.all(small.success)
    monkeypatch.setattr(reduced, "SMALL_BATCH", 0)             # force the vectorised batch path
    batch = integrate_many(param, 10, 19, ratios, 1.0, 0.1, 0.2, T)
    assert _rel(small.state, batch.state) < AGREE
    assert np.array_equal(small.state[:, 0], batch.state[:, 0])   # t = 0 is the start itself on both


def test_solve_single_trajectory_uses_scalar_path_and_agrees():
    """TACO (tied QK: no first integral, so DOP853 by default; the four with one are clock-free)."""
    tr = solve("TACO", K=10, M=19, eta_qk=10, eta_ov=1, u0=0.1, v0=0.1, t=T[1:])
    assert tr.stats["integrator"] == "dop853" and "rejected" not in tr.stats   # scipy does not report rejections
    ref = integrate_many("TACO", 10, 19, [10.0] * 8, 1.0, 0.1, 0.1, T[1:])      # 8 > SMALL_BATCH: batch path
    assert ref.batch_size > reduced.SMALL_BATCH
    assert _rel(tr.state, ref.state[:, :, 0]) < AGREE


def test_chunked_batch_equals_one_batch(monkeypatch):
    """Every trajectory has its own steps and error control, so integrating in chunks gives the same numbers."""
    monkeypatch.setattr(reduced, "CLOCK_FREE", False)
    ratios = np.logspace(-1, 1, 12)
    whole = integrate_many("CACO", 10, 19, ratios, 1.0, 0.1, 0.2, T)
    monkeypatch.setattr(reduced, "CHUNK", 6)                    # 12 = 6 + 6, both above SMALL_BATCH
    chunked = integrate_many("CACO", 10, 19, ratios, 1.0, 0.1, 0.2, T)
    assert np.array_equal(whole.steps, chunked.steps)
    # same steps; the stage-sum matmuls may round differently with the array width (BLAS kernels): 1e-12
    np.testing.assert_allclose(chunked.state, whole.state, rtol=1e-12, atol=1e-15)
