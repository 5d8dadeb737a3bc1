"""simulation/generated_optim.py is theory.optimizer_orbits' expressions, byte for byte and value for value."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from simulation import generated_optim as gen
from tests.paths import ROOT


def test_regenerating_gives_the_checked_in_file(tmp_path):
    out = tmp_path / "g.py"
    subprocess.run([sys.executable, "-m", "theory.codegen_optim", "--out", str(out)], cwd=ROOT, check=True,
                   capture_output=True, env={"PYTHONHASHSEED": "77", "PATH": "/usr/bin:/bin"})
    assert out.read_text() == (ROOT / "simulation" / "generated_optim.py").read_text(), \
        "simulation/generated_optim.py is stale: run `python -m theory.codegen_optim`"


@pytest.mark.parametrize("param", ["CACO", "FACO", "CAFO", "FAFO"])
def test_orbit_gradients_equal_torch_autograd_of_the_embedded_point(param):
    """At a random symmetric point the generated per-entry gradients are torch's gradients of each orbit entry
    (1e-12: the same float64 numbers in another order)."""
    import torch

    from simulation.optimizer_maps import embed, orbit_masks
    from simulation.optimizer_torch import population_loss

    K, M = 4, 3
    w = np.random.default_rng(1).normal(scale=0.7, size=len(gen.ORBIT_NAMES[param]))
    mats = {k: torch.tensor(v, requires_grad=True) for k, v in embed(param, w, K, M).items()}
    population_loss(param, mats, K, M).backward()
    g = gen.ORBIT_GRAD[param](*w, K, M)
    masks = orbit_masks(param, K, M)
    for (oname, pname), gi in zip(zip(gen.ORBIT_NAMES[param], gen.ORBIT_PARAMS[param]), g):
        got = mats[pname].grad.numpy()[masks[pname][oname]]
        assert np.allclose(got, gi, rtol=1e-12, atol=1e-14), (oname, got, gi)
    loss = gen.ORBIT_OBS[param](*w, K, M)[4]
    assert abs(loss - float(population_loss(param, mats, K, M).detach())) < 1e-13
