"""train_symmetric records what the model does (attention residual, prediction, set distance), not a formula of v."""

import numpy as np
import torch

from validation.synthetic.adam_compare import measured_state, residual_of_v, train_symmetric
from validation.synthetic.models import symmetric_model
from validation.synthetic.observables import measure


def test_adamw_default_betas_reports_its_measured_residual():
    tr = train_symmetric("CACO", 4.0, optimizer="adamw", betas=(0.9, 0.999), eps=1e-8, K=3, M=2, dt=0.01,
                         steps=60, log_every=5)
    c = tr.cols
    assert {"residual", "residual_max", "prob_true", "accuracy", "set_distance"} <= set(c)
    # the logged residual is the model's attention off the distinct token: 1 - (measured p) to rounding
    p = np.array([1.0 - r for r in c["residual"]])
    assert np.all(c["residual"] > 0) and np.all(c["residual_max"] >= c["residual"] - 1e-15)
    assert c["residual"][-1] < 0.5 * c["residual"][0]                       # attention sharpened: the run moved
    assert np.all(np.isfinite(c["set_distance"])) and c["set_distance"][0] < 1e-15
    assert np.all((p > 0) & (p < 1))


def test_measured_residual_is_not_the_line_formula_off_the_set():
    """Off the symmetric set the mean-v formula is wrong; the measurement is the model's attention."""
    K, M = 3, 4
    model = symmetric_model("CACO", K, M, 0.7, 0.5, dtype=torch.float64)
    with torch.no_grad():
        model.W_KQ[0, K + M] += 6.0                                          # class 0's distinct token only
    got = measured_state(model, K, M)
    obs = measure(model, K, M)
    assert abs(got["residual"] - (1 - obs["p"])) < 1e-14                    # = the model's attention
    assert abs(got["residual"] - float(residual_of_v(obs["v"], M))) > 0.05  # != the formula at mean v
    assert got["set_distance"] > 0.1 and got["residual_max"] > got["residual"]
    on = measured_state(symmetric_model("CACO", K, M, 0.7, 0.5, dtype=torch.float64), K, M)
    assert on["set_distance"] < 1e-15 and abs(on["residual"] - float(residual_of_v(0.5, M))) < 1e-15
