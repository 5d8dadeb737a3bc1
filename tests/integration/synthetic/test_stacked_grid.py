"""run_grid's stack (every (param, ratio) of a config trained at once) equals the per-pair loop it replaced.

Tolerance: the stack computes the same products grouped differently (effective matrices and batched einsums
instead of each kind's factored ``scores``/``apply``, one flat update), so each step's round-off differs at the
dtype's epsilon (1e-16 in float64, 6e-8 in float32). Gradient descent on these runs does not amplify it: measured
over the quick study's configs, the logged columns agree to 1e-13 relative (float64, 1000 steps) and 2e-7
(float32 paper data, 100 steps). The bounds below, 1e-10 and 1e-4 of each column's scale plus an absolute floor
for columns that are round-off themselves (the spreads and balances of a symmetric start, ~1e-15), leave that
margin and still fail on a wrong rate, a missed step or a pair trained on the wrong batches (all change the
columns at 1e-3 or more).
"""

import numpy as np
import pytest

from validation.synthetic import experiment
from validation.synthetic.experiment import SyntheticConfig, run_grid, stacks_to_rounding

F64 = (1e-10, 1e-12)
F32 = (1e-4, 1e-6)
"""(relative to the column's largest magnitude, absolute floor) per dtype: see the module docstring."""

CONFIGS = {
    "gd-symmetric": (SyntheticConfig(params=("CACO", "FACO", "CAFO", "FAFO"), ratios=(1.0, 10.0), steps=200,
                                     log_every=20), F64),
    "gd-random": (SyntheticConfig(params=("CACO", "FAFO"), ratios=(1.0, 3.0), init="random", init_std=0.05,
                                  steps=200, log_every=25), F64),
    "adamw-random": (SyntheticConfig(params=("FACO", "CAFO"), ratios=(1.0, 10.0), init="random", optimizer="adamw",
                                     dt=0.01, steps=150, log_every=30), F64),
    "sgd-population": (SyntheticConfig(params=("CACO", "FAFO"), ratios=(1.0, 10.0), init="random",
                                       optimizer="sgd", steps=150, log_every=30), F64),
    "sgd-sampled": (SyntheticConfig(params=("FACO", "FAFO"), ratios=(1.0, 10.0), data="sampled", optimizer="sgd",
                                    init="random", init_std=0.1, steps=120, log_every=30, test_size=200), F64),
    "sgd-paper-f32": (SyntheticConfig(params=("CACO", "FAFO"), ratios=(1.0, 10.0), data="paper", optimizer="sgd",
                                      dt=0.5, float64=False, steps=40, log_every=10, test_size=100), F32),
}


def _assert_close(a, b, rtol, atol, what):
    scale = np.nanmax(np.abs(a)) if np.isfinite(a).any() else 0.0
    ok = np.isclose(a, b, rtol=0, atol=rtol * scale + atol, equal_nan=True)
    assert ok.all(), f"{what}: max |diff| {np.nanmax(np.abs(a - b)):.2e} at scale {scale:.2e}"


@pytest.mark.parametrize("name", list(CONFIGS))
def test_stacked_grid_equals_the_loop(name, monkeypatch):
    cfg, (rtol, atol) = CONFIGS[name]
    calls = []
    real = experiment.train_models
    monkeypatch.setattr(experiment, "train_models", lambda models, *a, **k: calls.append(len(models))
                        or real(models, *a, **k))
    loop = run_grid(cfg, stacked=False)
    assert calls == []
    stack = run_grid(cfg)
    assert calls == [len(cfg.params) * len(cfg.ratios)]            # one stack for the whole grid
    assert [(str(r.param), r.ratio) for r in stack] == [(str(r.param), r.ratio) for r in loop]
    for a, b in zip(loop, stack):
        assert a.log.keys() == b.log.keys()
        for k in a.log:
            assert a.log[k].shape == b.log[k].shape, k
            _assert_close(a.log[k], b.log[k], rtol, atol, f"{a.param} r={a.ratio} {k}")
        for k in ("mass", "p_true"):
            _assert_close(getattr(a, k), getattr(b, k), rtol, atol, f"{a.param} r={a.ratio} {k}")
        assert np.array_equal(a.correct, b.correct)
    # the ratios gave different runs (a stack that trained every model at one rate would not)
    assert not np.allclose(stack[0].log["norm_qk"], stack[1].log["norm_qk"])
    assert sum(r.wall_s for r in stack) > 0


def test_adamw_from_the_symmetric_start_keeps_the_loop(monkeypatch):
    """Adam turns the round-off of gradients that vanish by symmetry into steps (stacks_to_rounding): those runs
    are not stacked, so they stay bit for bit what the loop gives."""
    cfg = SyntheticConfig(params=("CACO", "FAFO"), ratios=(1.0, 10.0), optimizer="adamw", dt=0.01, steps=30,
                          log_every=10)
    assert not stacks_to_rounding(cfg) and stacks_to_rounding(cfg.replace(init="random"))
    monkeypatch.setattr(experiment, "train_models", lambda *a, **k: pytest.fail("stacked"))
    a, b = run_grid(cfg), run_grid(cfg, stacked=False)
    for x, y in zip(a, b):
        for k in x.log:
            assert np.array_equal(x.log[k], y.log[k], equal_nan=True), k


def test_a_lone_pair_trains_by_the_loop(monkeypatch):
    monkeypatch.setattr(experiment, "train_models", lambda *a, **k: pytest.fail("stacked"))
    (run,) = run_grid(SyntheticConfig(params=("FAFO",), ratios=(3.0,), steps=20, log_every=10))
    assert run.log["step"][-1] == 20


def test_train_models_refuses_what_it_cannot_stack():
    from validation.synthetic.data import population_batch
    from validation.synthetic.models import symmetric_model
    from validation.synthetic.stacked import train_models

    pop = population_batch(4, 3)
    a, b = symmetric_model("CACO", 4, 3, 0.5, 0.5), symmetric_model("CACO", 4, 5, 0.5, 0.5)
    kw = dict(eta_ov=1.0, dt=0.05)
    with pytest.raises(ValueError, match="same d_in"):
        train_models([a, b], [1.0, 2.0], lambda s: pop, "gd", 2, observe=[dict, dict], **kw)
    with pytest.raises(ValueError, match="need as many"):
        train_models([a], [1.0, 2.0], lambda s: pop, "gd", 2, observe=[dict], **kw)
    with pytest.raises(ValueError, match="optimizer 'lion'"):
        train_models([a], [1.0], lambda s: pop, "lion", 2, observe=[dict], **kw)
