"""Trainer: per-circuit rates, the GD step as the Euler step of the flow, reproducibility."""

import math

import numpy as np
import pytest

from validation.synthetic.data import population_batch
from validation.synthetic.experiment import SyntheticConfig, run_pair
from validation.synthetic.models import symmetric_model
from validation.synthetic.observables import measure
from validation.synthetic.trainer import batch_loss, make_circuit_optimizer, train


def test_per_circuit_rates():
    m = symmetric_model("FAFO", 3, 2, 0.5, 0.5)
    opt = make_circuit_optimizer(m, "adamw", eta_ov=2.0, ratio=5.0, dt=0.1)
    lrs = {g["circuit"]: g["lr"] for g in opt.param_groups}
    assert lrs == {"qk": pytest.approx(1.0), "ov": pytest.approx(0.2)}


def test_one_gd_step_is_the_euler_step_of_the_ou_flow():
    # CACO on the symmetric line: du/dt = eta_OV p / (e^{pu} + K - 1) (hand-derived from the CE gradient)
    K, M, u0, v0, eta, dt = 4, 3, 0.7, 0.4, 1.5, 1e-3
    m = symmetric_model("CACO", K, M, u0, v0)
    p = math.exp(v0) / (math.exp(v0) + M + 1)
    opt = make_circuit_optimizer(m, "gd", eta_ov=eta, ratio=1.0, dt=dt)
    opt.zero_grad()
    batch_loss(m, population_batch(K, M))[0].backward()
    opt.step()
    du = measure(m, K, M)["u"] - u0
    assert du == pytest.approx(eta * dt * p / (math.exp(p * u0) + K - 1), rel=1e-12)


@pytest.mark.parametrize("data", ["population", "sampled"])
def test_seeded_runs_are_bit_identical(data):
    cfg = SyntheticConfig(data=data, optimizer="sgd", init="random", steps=30, log_every=10, test_size=50,
                          float64=False)
    a, b = run_pair(cfg, "FAFO", 3.0), run_pair(cfg, "FAFO", 3.0)
    for k in a.log:
        assert np.array_equal(a.log[k], b.log[k], equal_nan=True), k
    assert np.array_equal(a.mass, b.mass)


def test_train_logs_clock_and_stops_early():
    K, M = 3, 2
    m = symmetric_model("CACO", K, M, 0.5, 0.5)
    b = population_batch(K, M)
    opt = make_circuit_optimizer(m, "gd", eta_ov=1.0, ratio=1.0, dt=0.5)
    log = train(m, lambda s: b, opt, 2000, observe=lambda mm: measure(mm, K, M), log_every=10, dt=0.5,
                stop_loss=0.2).arrays()
    assert log["t"][1] == 5.0 and np.allclose(log["t"], 0.5 * log["step"])
    assert log["loss"][-1] <= 0.2 and log["loss"][-2] > 0.2
    assert np.all(np.diff(log["loss"]) < 0)
