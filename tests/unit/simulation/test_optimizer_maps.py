"""The reduced optimizer maps are torch's full-matrix training from the symmetric start, step by step.

Tolerance 1e-8 relative on u, v, 1 - p and the loss: both sides compute the same float64 numbers in a different
order, so they agree to ~1e-14 per step; 1e-8 leaves room for rounding amplified over the steps, not for another
map (one step of GD instead of Adam, or momentum without its buffer, moves u by ~1e-3 relative).
Compared at every step against torch's optimizer *on the set* (``train_full(on_set=True)``: each gradient averaged
over its orbit before torch's step, which moves it by rounding only, asserted <= 1e-12): unrestricted, Adam with
eps = 1e-8 leaves the set from rounding (x1e3-1e4 per step through the directions with zero gradient,
simulation.transverse) at a step that depends on the BLAS code path and the thread count (7 on one machine, 8-30
on another), so a comparison "before torch leaves" would be decided by rounding (issue 41).
"""

from __future__ import annotations

import numpy as np
import pytest

from simulation import generated_optim as gen
from simulation.optimizer_maps import (
    OPTIMIZERS,
    OptimizerSpec,
    embed,
    orbit_masks,
    run_orbit_map,
    symmetric_distance,
)
from simulation.optimizer_torch import train_full
from theory.parametrization import PARAMETRIZATIONS

K, M, DT, STEPS, RATIO = 3, 2, 0.01, 60, 2.0
ON_SET = 1e-9
REL = 1e-8


GRAD_ROUNDING = 1e-12
"""The orbit averaging may move torch's gradient on the set by rounding only (measured ~1e-16 relative); a gradient
that broke the symmetry (a wrong layer) moves by O(1)."""


def _compare(param, spec, steps=STEPS, on_set=True):
    kw = dict(K=K, M=M, eta_qk=RATIO, eta_ov=1.0, dt=DT, steps=steps, u0=0.5, v0=0.5)
    red = run_orbit_map(param, spec, **kw)
    ref = train_full(param, spec, on_set=on_set, **kw)
    if on_set:
        assert ref.grad_asymmetry.max() <= GRAD_ROUNDING, ref.grad_asymmetry.max()
    on = ref.distance <= ON_SET
    first_off = int(np.argmin(on)) if not on.all() else on.size
    errs = {name: np.max(np.abs(getattr(red, name)[:first_off] - getattr(ref, name)[:first_off])
                         / np.abs(getattr(ref, name)[:first_off]))
            for name in ("u", "v", "loss")}
    res_ref = 1 - ref.p[:first_off]
    errs["residual"] = np.max(np.abs(red.residual[:first_off] - res_ref) / res_ref)
    return first_off, errs, red, ref


@pytest.mark.parametrize("param", PARAMETRIZATIONS)
@pytest.mark.parametrize("spec", [OptimizerSpec("adam", 0.9, 0.999, 1e-8), OptimizerSpec("momentum", beta1=0.9)],
                         ids=["adam-default", "momentum-0.9"])
def test_reduced_map_matches_torch_full_matrices(param, spec):
    first_off, errs, red, ref = _compare(param, spec)
    assert first_off == STEPS + 1, f"torch's on-set run left the set at step {first_off}"
    assert max(errs.values()) < REL, errs
    assert red.loss[-1] < (1 - 1e-3) * red.loss[0]  # the runs moved: two frozen states would match trivially


@pytest.mark.parametrize("param", ["CACO", "FAFO"])
def test_momentum_stays_on_the_set_and_matches_for_every_step(param):
    """Unrestricted (no orbit averaging): Nesterov momentum is transversally stable, rounding does not grow."""
    first_off, errs, _, ref = _compare(param, OptimizerSpec("nesterov", beta1=0.9), on_set=False)
    assert first_off == STEPS + 1 and ref.distance.max() < 1e-12
    assert max(errs.values()) < REL


def test_a_wrong_map_is_caught():
    """The comparison fails for a map that differs from torch's (Adam without bias correction ~ beta2 = 0)."""
    spec = OptimizerSpec("adam", 0.9, 0.999, 1e-8)
    kw = dict(K=K, M=M, eta_qk=RATIO, eta_ov=1.0, dt=DT, steps=15, u0=0.5, v0=0.5)
    wrong = run_orbit_map("CACO", OptimizerSpec("adam", 0.9, 0.0, 1e-8), **kw)
    ref = train_full("CACO", spec, on_set=True, **kw)
    assert np.max(np.abs(wrong.u - ref.u) / ref.u) > 100 * REL


@pytest.mark.parametrize("param", PARAMETRIZATIONS)
def test_masks_partition_with_theory_sizes_and_embed_round_trips(param):
    masks = orbit_masks(param, K, M)
    sizes = dict(zip(gen.ORBIT_NAMES[param], gen.ORBIT_SIZES[param](K, M)))
    for pname, ms in masks.items():
        total = sum(m.astype(int) for m in ms.values())
        assert total.max() == 1                           # disjoint
        for oname, m in ms.items():
            assert m.sum() == sizes[oname], (pname, oname)
    w = np.random.default_rng(0).normal(size=len(gen.ORBIT_NAMES[param]))
    assert symmetric_distance(param, embed(param, w, K, M), K, M) < 1e-15
    mats = embed(param, w, K, M)
    next(iter(mats.values()))[0, 0] += 0.1
    assert symmetric_distance(param, mats, K, M) > 1e-3


def test_every_optimizer_with_torch_counterpart_is_declared_once():
    assert set(OPTIMIZERS) == {"gd", "momentum", "nesterov", "adam", "adamw", "sign"}
    with pytest.raises(ValueError, match="must be one of"):
        OptimizerSpec("lion")
