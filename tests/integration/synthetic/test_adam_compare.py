"""Helpers of the Adam comparison: the residual from v, the eps -> oo regime, the figure files."""

import numpy as np
import torch

from validation.synthetic.adam_compare import OptimizerTrajectory, log_residual_of_v, plot_residual_vs_loss, residual_of_v
from validation.synthetic.models import symmetric_model
from validation.synthetic.observables import measure


def test_residual_from_v_is_one_minus_measured_p_on_the_symmetric_line():
    for v0 in (0.0, 1.5, 6.0):
        obs = measure(symmetric_model("CACO", 3, 5, 0.7, v0), 3, 5)
        # float64: p is a softmax of O(1) logits, so 1 - p carries ~1e-16 absolute error.
        assert abs(residual_of_v(obs["v"], 5) - (1 - obs["p"])) < 1e-14
    assert np.isfinite(log_residual_of_v(2000.0, 5)) and abs(log_residual_of_v(2000.0, 5) - (np.log(6) - 2000)) < 1e-9


def test_class_basis_start_has_the_same_effective_matrices_as_the_svd_start():
    a = symmetric_model("FAFO", 4, 3, 0.6, 0.4, ov_basis="class")
    b = symmetric_model("FAFO", 4, 3, 0.6, 0.4)
    assert a.W_O.shape == (4, 4) and b.W_O.shape == (4, 3)
    assert torch.allclose(a.effective_ov(), b.effective_ov(), atol=1e-14)
    assert torch.allclose(a.W_O.T @ a.W_O, a.W_V @ a.W_V.T, atol=1e-14)      # balanced


def test_plot_writes_png_and_svg(tmp_path):
    loss = np.geomspace(1, 1e-3, 20)
    cols = {"loss": loss, "residual": loss ** 2}
    runs = {("CACO", r): {"gd": OptimizerTrajectory("CACO", r, "gd", 0.0, cols), "adam": OptimizerTrajectory("CACO", r, "adam", 1e-8, cols),
                          "law": {"loss": loss, "residual": loss ** r}} for r in (1.0, 3.0)}
    paths = plot_residual_vs_loss({"params": ("CACO",), "ratios": (1.0, 3.0), "eps": 1e-8, "runs": runs}, tmp_path / "f")
    assert [p.suffix for p in paths] == [".png", ".svg"] and all(p.stat().st_size > 1000 for p in paths)
