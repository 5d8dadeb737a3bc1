"""Theory against training: symmetric set, closed forms, conserved quantities, rescaling, ODE, matched loss."""

import numpy as np
import pytest

from qkov.core.runstore import RunWriter, is_complete
from validation.synthetic.compare import (max_relative_deviation, measured_rescaling, ode_deviations,
                                          predicted_rescaling, values_at_loss)
from validation.synthetic.experiment import SyntheticConfig, run_grid, run_pair
from validation.synthetic.reference import ode_tolerance, reference_trajectory
from validation.synthetic.report import pair_summary

PARAMS = ("CACO", "FACO", "CAFO", "FAFO")


def test_max_relative_deviation_hand_case():
    assert max_relative_deviation(np.array([1.1, 2.0, 0.0]), np.array([1.0, 2.5, 0.0]), floor=1e-3) \
        == pytest.approx(0.2)


def test_values_at_loss_interpolates_in_log_loss():
    log = {"loss": np.array([1.0, 0.1, 0.01]), "p": np.array([0.0, 0.5, 1.0])}
    out = values_at_loss(log, np.array([np.sqrt(0.1), 0.1, 1e-3, 2.0]))
    assert out[0] == pytest.approx(0.25) and out[1] == pytest.approx(0.5)
    assert np.isnan(out[2]) and out[3] == 0.0


@pytest.fixture(scope="module")
def gd_runs():
    cfg = SyntheticConfig(ratios=(1.0, 10.0), steps=600, log_every=20, dt=0.05)
    return cfg, run_grid(cfg)


def test_gd_from_symmetric_start_stays_on_fixed_lines_and_closed_forms(gd_runs):
    cfg, runs = gd_runs
    for r in runs:
        s, _ = pair_summary(cfg, r)
        assert s["spread"]["max_abs_u"] < 1e-10 and s["spread"]["max_abs_v"] < 1e-10
        assert s["closed_form_residuals"]["loss"] < 1e-12 and s["closed_form_residuals"]["p"] < 1e-12
        # balance matrices: conserved by the flow, by GD up to O(dt^2) per step (O(dt) in all)
        for drift in s["conserved_drift"].values():
            assert drift < 0.01
        assert r.log["loss"][-1] < r.log["loss"][0]


@pytest.mark.parametrize("param", ["FACO", "CAFO", "FAFO"])
@pytest.mark.parametrize("u,v", [(0.5, 0.5), (2.0, 1.0), (1.0, 3.0)])
def test_implicit_rescaling_matches_prediction(param, u, v):
    mq, mo = measured_rescaling(param, 4, 8, u, v)
    pq, po = predicted_rescaling(param, 4, 8, u, v)
    assert mq == pytest.approx(pq, rel=1e-4) and mo == pytest.approx(po, rel=1e-4)


def test_gd_converges_at_first_order_in_dt():
    # Euler: halving dt halves the gap to the flow; measured by Richardson against dt/4
    cfg = SyntheticConfig(steps=800, log_every=40, dt=0.05)
    devs = []
    for k in (1, 2):
        c = cfg.replace(**{"dt": 0.05 / k, "steps": 800 * k, "log_every": 40 * k})
        devs.append(run_pair(c, "FAFO", 3.0).log)
    fine = run_pair(cfg.replace(**{"dt": 0.0125, "steps": 3200, "log_every": 160}), "FAFO", 3.0).log
    e1 = max_relative_deviation(devs[0]["v"], fine["v"])
    e2 = max_relative_deviation(devs[1]["v"], fine["v"])
    assert 2.0 < e1 / e2 < 4.0   # (dt - dt/4) / (dt/2 - dt/4) = 3 at first order
    # the balance drift of GD is first order in dt as well
    d1, d2 = (np.abs(d["balance_qk"] - d["balance_qk"][0]).max() for d in devs)
    assert 1.6 < d1 / d2 < 2.4


@pytest.mark.parametrize("param", PARAMS)
def test_gd_matches_the_reduced_ode_within_tolerance(param):
    pytest.importorskip("simulation.reduced")
    cfg = SyntheticConfig(steps=2000, log_every=50, dt=0.05)
    for ratio in (1.0, 3.0):
        run = run_pair(cfg, param, ratio)
        traj = reference_trajectory(param, cfg.K, cfg.M, ratio * cfg.eta_ov, cfg.eta_ov, cfg.u0, cfg.v0, run.log["t"])
        dev = ode_deviations(run.log, traj)
        tol = ode_tolerance(cfg.dt, cfg.eta_ov, ratio)
        assert max(dev["u"], dev["v"], dev["one_minus_p"]) <= tol, dev


def test_write_run_is_complete_with_claims(gd_runs, tmp_path):
    from qkov.study.synthetic_stage import write_synthetic_run

    cfg, runs = gd_runs
    with RunWriter(tmp_path / "r", kind="synthetic", config=cfg.to_json_dict()) as run:
        res = write_synthetic_run(cfg, runs, run)
    assert is_complete(tmp_path / "r")
    for f in ("metrics.json", "claims.json", "trajectories.npz", "dtap_heatmaps.png", "theory_vs_training.svg"):
        assert (tmp_path / "r" / f).is_file()
    cl = {e.claim: e.verdict for e in res["evidence"]}
    assert {"rescaling", "fixed-lines", "sharpness-ratio", "sharpness-order"} <= set(cl)
    assert cl["fixed-lines"] == "supports" and cl["rescaling"] == "supports"
    for p in res["metrics"]["pairs"]:
        assert sum(map(sum, p["dtap"]["hist_percent"])) == pytest.approx(100.0)
