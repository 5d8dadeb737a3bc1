"""The broken-set predictor on issue 31's case: before any training it says that ratio 4 de-sharpens below
L = 1e-1 while ratio 1 does not (CACO, K = 4, M = 3, u0 = v0 = 0.1, Adam(0.9, 0.999, 1e-8), lr 1e-3, float64).

Measured by full-matrix torch training (docs/synthetic-validation.md): 1 - p at L = 1e-1 / 1e-2: ratio 1 8.49e-2 /
2.89e-2, ratio 4 5.55e-3 / 1.65e-1. The predicted values are held to 35% of those (measured agreement: ratio 1 to
4 digits, ratio 4 within 34% at L = 1e-1 and 17% at 1e-2; the map does not know when torch's rounding first
separates the classes, which shifts the breakdown by some steps); the calls are exact.
"""

from __future__ import annotations

import pytest

from simulation.broken_set_predictor import predict
from simulation.optimizer_maps import OptimizerSpec

MEASURED = {1.0: (8.49e-2, 2.89e-2), 4.0: (5.55e-3, 1.65e-1)}


@pytest.mark.slow
def test_predictor_calls_issue_31s_case():
    pred = predict("CACO", OptimizerSpec("adam", 0.9, 0.999, 1e-8), K=4, M=3, u0=0.1, v0=0.1, eta_ov=1.0, dt=1e-3,
                   ratios=(1.0, 4.0), levels=(1e-1, 1e-2), steps=8000)
    assert pred.calls[4.0] == ["sharpens", "de-sharpens"]
    assert pred.rises[4.0] == [None, True] and pred.rises[1.0] == [None, False]
    for r, vals in MEASURED.items():
        for got, want in zip(pred.one_minus_p[r], vals):
            assert abs(got / want - 1) <= 0.35, (r, got, want)
    assert pred.distance[4.0][1] > 0.5 > 1e-3 > pred.distance[1.0][1]


@pytest.mark.slow
def test_torch_run_of_the_case_leaves_the_symmetric_set_for_a_two_classes_set():
    """Where the state goes is measured, not assumed: torch's full-matrix Adam run of the case at ratio 4 is 0.56 from
    the symmetric set by step 2000 (L ~ 0.11) and on a `two-classes` set (two classes equal, best relabelling of the
    classes) to rounding (<= 1e-15; measured <= 1e-16)."""
    import itertools

    import numpy as np
    import torch

    from simulation import generated_optim as gen
    from simulation.optimizer_maps import embed, symmetric_distance
    from simulation.optimizer_torch import population_loss, torch_optimizer
    from simulation.subgroup_maps import distance, layout
    from theory.subgroup_orbits import subgroup

    K, M = 4, 3
    w0 = np.asarray(gen.ORBIT_INIT["CACO"](0.1, 0.1, K), dtype=np.float64)
    params = {k: torch.nn.Parameter(torch.as_tensor(v)) for k, v in embed("CACO", w0, K, M).items()}
    opt = torch_optimizer("CACO", params, OptimizerSpec("adam"), 4.0, 1.0, 1e-3)
    for _ in range(2000):
        opt.zero_grad()
        population_loss("CACO", params, K, M).backward()
        opt.step()
    mats = {k: p.detach().numpy().copy() for k, p in params.items()}
    lay = layout("CACO", subgroup("two-classes", K, M), K, M)

    def relabelled(perm):
        tok = np.concatenate([perm, np.arange(K, K + M + 1)])
        return {"W_OV": mats["W_OV"][np.ix_(perm, tok)], "W_KQ": mats["W_KQ"][np.ix_(tok, tok)]}

    best = min(distance(lay, relabelled(np.array(p))) for p in itertools.permutations(range(K)))
    assert symmetric_distance("CACO", mats, K, M) > 0.3
    assert best <= 1e-15
