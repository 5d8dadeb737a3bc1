"""Figures draw theory only where it applies (GD on the population from the symmetric start); elsewhere the
gradient flow is a labelled reference, and a panel of a run that did not train says so (issue 30)."""

from __future__ import annotations

import numpy as np
import pytest

from validation.synthetic.experiment import PairRun, SyntheticConfig
from validation.synthetic.report import attention_vs_loss_figure, theory_vs_training_figure

pytestmark = pytest.mark.unit


def _run(ratio, loss_end=0.1):
    t = np.linspace(0.0, 10.0, 6)
    log = {"t": t, "u": np.linspace(0.5, 2, 6), "v": np.linspace(0.5, 3, 6), "p": np.linspace(0.3, 0.9, 6),
           "loss": np.linspace(1.0, loss_end, 6)}
    return PairRun("CACO", ratio, log, np.zeros(3), np.zeros(3), np.zeros(3), 0.0)


class _Traj:
    def __init__(self, run):
        self.u, self.v, self.p = run.log["u"] * 1.01, run.log["v"] * 1.01, run.log["p"] * 0.99


def _labels(fig):
    return [ln.get_label() for ax in fig.axes for ln in ax.get_lines()]


@pytest.mark.parametrize("kw,applies", [({}, True), ({"optimizer": "adamw", "dt": 0.01}, False),
                                        ({"init": "random", "init_std": 0.05}, False)])
def test_theory_is_a_prediction_only_for_gd_from_the_symmetric_start(kw, applies):
    cfg = SyntheticConfig(ratios=(1.0, 10.0), params=("CACO",), **kw)
    runs = [_run(1.0), _run(10.0)]
    fig = theory_vs_training_figure(cfg, runs, [_Traj(r) for r in runs])
    labels = _labels(fig)
    assert any(x.startswith("theory, ratio") for x in labels) == applies
    assert any(x.startswith("reference: gradient flow (not a prediction)") for x in labels) == (not applies)
    assert ("no theory applies here" in fig._suptitle.get_text()) == (not applies)


def test_a_panel_of_a_run_that_did_not_train_says_so():
    cfg = SyntheticConfig(ratios=(1.0, 10.0), params=("CACO",))
    fig = attention_vs_loss_figure(cfg, [_run(1.0, loss_end=0.99), _run(10.0)])
    texts = [t.get_text() for ax in fig.axes for t in ax.texts]
    assert texts == ["ratio 1: did not train (loss fell < 5%)"]
    assert "eta_QK/eta_OV = 1 (did not train)" in _labels(fig)
