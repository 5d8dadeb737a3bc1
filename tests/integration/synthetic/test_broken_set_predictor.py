"""The broken-set predictor on issue 31's case: before any training it says that ratio 4 de-sharpens below
L = 1e-1 on the ``one-class`` branch while ratio 1 does not (CACO, K = 4, M = 3, u0 = v0 = 0.1, Adam(0.9, 0.999,
1e-8), lr 1e-3, float64); and the mechanism of issue 41's probability, measured on a seeded ensemble.

Reference values, none of them one rounding-decided run: ratio 1 stays near the symmetric set, so its 1 - p at
L = 1e-1 / 1e-2 is the same on every machine (8.49e-2 / 2.89e-2, every member of the ensembles to 4 digits); at
ratio 4 the 64-member ensemble of docs/synthetic-validation.md has its median 5.7e-3 at L = 1e-1 and its
de-sharpening members at 0.19-0.20 at L = 1e-2. The predicted values are held to 35% of those (the map does not
know when the classes first separate, which shifts the breakdown by some steps); the calls are exact.
"""

from __future__ import annotations

import numpy as np
import pytest

from simulation.broken_set_predictor import predict
from simulation.optimizer_maps import OptimizerSpec

BRANCH = {1.0: (8.49e-2, 2.89e-2), 4.0: (5.7e-3, 0.195)}


@pytest.mark.slow
def test_predictor_calls_issue_31s_case():
    pred = predict("CACO", OptimizerSpec("adam", 0.9, 0.999, 1e-8), K=4, M=3, u0=0.1, v0=0.1, eta_ov=1.0, dt=1e-3,
                   ratios=(1.0, 4.0), levels=(1e-1, 1e-2), steps=8000)
    assert pred.calls[4.0] == ["sharpens", "de-sharpens"]
    assert pred.rises[4.0] == [None, True] and pred.rises[1.0] == [None, False]
    for r, vals in BRANCH.items():
        for got, want in zip(pred.one_minus_p[r], vals):
            assert abs(got / want - 1) <= 0.35, (r, got, want)
    assert pred.distance[4.0][1] > 0.5 > 1e-3 > pred.distance[1.0][1]


@pytest.mark.slow
def test_the_class_pattern_after_the_linear_phase_decides_the_branch():
    """Issue 41's mechanism, measured: 32 seeded starts (1e-6 relative) of the case at ratio 4. After 10 steps the
    class bias of the OV circuit's common-token columns is still small (the linear and sign phases), and the number
    of classes above its mean, k, decides where the member ends at L = 1e-2: every member that de-sharpens
    (1 - p > 0.1, the one-class branch at ~0.19) had k = 3, and at least 90% of the k = 3 members de-sharpen (measured
    52 of 55 in a 256-member ensemble); k = 1 and k = 2 members sharpen (1 - p ~1.5e-3 and ~2.8e-3)."""
    import torch

    from theory.parametrization import Parametrization
    from validation.synthetic.ensemble import start_scale
    from validation.synthetic.grid_training import train_grid

    K, M, n = 4, 3, 32
    kw = dict(K=K, M=M, eta_qk=4.0, eta_ov=1.0, dt=1e-3, u0=0.1, v0=0.1, seeds=np.arange(n),
              noise=1e-6 * start_scale("CACO", K, M, 0.1, 0.1), beta1=0.9, beta2=0.999, eps=1e-8)
    early = train_grid("CACO", "adam", steps=10, record=[10], **kw)
    bias = early.params["W_OV"][:, :, K:K + M].mean(2)
    assert np.abs(bias).max() < 1e-2                               # still small: no branch chosen by size
    k = (bias > bias.mean(1, keepdims=True)).sum(1)
    late = train_grid("CACO", "adam", steps=20000, record=np.arange(0, 20001, 10), stop_loss=1e-2, **kw)
    assert late.loss[-1].max() < 1e-2
    p = Parametrization("CACO")
    wkq = p.qk.effective([torch.as_tensor(late.params[f]) for f in p.qk.factors]).numpy()
    wov = p.ov.effective([torch.as_tensor(late.params[f]) for f in p.ov.factors]).numpy()
    from simulation.model_matrices import population_forward

    res = np.array([population_forward(wkq[c], wov[c], K, M)[0][:, 1:].sum(1).mean() for c in range(n)])
    de = res > 0.1
    assert de.any() and np.all(k[de] == 3), (k, res)
    assert de[k == 3].mean() >= 0.9, (k, res)
    assert np.all(res[k != 3] < 5e-3)
