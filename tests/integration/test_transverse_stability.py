"""The transverse analysis says before training whether a symmetric-start run leaves the symmetric set.

Prediction: the cumulative log growth of an off-set perturbation along the reduced trajectory (jvp through the
full torch step) exceeds log(1e-6/1e-16) within the run. Measured: torch's full-matrix run from the symmetric
start plus a seeded perturbation of 1e-12 relative (far above rounding, so the seed and not the BLAS decides,
issue 41) reaches distance 1e-6 from the set within the run. Adam(0.9, 0.999, 1e-8) leaves (gain lr/eps on the
zero-gradient entries: growth e^6-e^9 per step); momentum and Adam with eps = 1e-2 stay (distance <= 1e-10: the
seed does not grow past 100x).
"""

import pytest

from simulation.optimizer_maps import OptimizerSpec
from simulation.optimizer_torch import train_full
from simulation.transverse import predicted_departure_step, transverse_growth

KW = {"K": 3, "M": 2, "eta_qk": 4.0, "eta_ov": 1.0, "dt": 0.01, "steps": 50, "u0": 0.5, "v0": 0.5}


@pytest.mark.parametrize("spec, leaves", [(OptimizerSpec("adam", 0.9, 0.999, 1e-8), True),
                                          (OptimizerSpec("momentum", beta1=0.9), False),
                                          (OptimizerSpec("adam", 0.9, 0.999, 1e-2), False)],
                         ids=["adam-default-leaves", "momentum-stays", "adam-eps1e-2-stays"])
def test_prediction_before_training_matches_the_full_run(spec, leaves):
    tr = transverse_growth("CACO", spec, **KW)
    predicted = predicted_departure_step(tr) is not None
    ref = train_full("CACO", spec, perturbation=1e-12, seed=0, **KW)
    measured = bool((ref.distance > 1e-6).any())
    assert predicted == leaves and measured == leaves, (tr.as_json(), float(ref.distance.max()))
    if leaves:
        assert tr.ftle > 1.0
    else:
        assert ref.distance.max() < 1e-10
