"""The adam-ratio-default and optimizer-stability rules can come out either way (constructed inputs)."""

from qkov.study.optimizer_run import default_betas_verdict, stability_verdict


def _pair(ratio, measured, reduced=None, flow=None, distance=1e-4, pred=None, meas=None):
    n = len(measured)
    return {"param": "CACO", "ratio": ratio, "measured": measured, "reduced": reduced or measured,
            "flow": flow or measured, "distance": [distance] * n, "predicted_departure_step": pred,
            "measured_departure_step": meas, "ftle_per_step": 0.0}


def _run(*pairs):
    return {"optimizer": {"name": "adam"}, "levels": [0.1, 0.01], "pairs": list(pairs)}


def test_supports_when_adam_sharpens_more_than_flow_and_follows_its_map():
    run = _run(_pair(1.0, [0.1, 0.05], flow=[0.2, 0.1]), _pair(4.0, [0.01, 0.001], flow=[0.1, 0.05]))
    assert default_betas_verdict([run]).verdict == "supports"


def test_counter_example_sharpening_no_more_than_flow_contradicts():
    run = _run(_pair(1.0, [0.1, 0.05], flow=[0.1, 0.05]), _pair(4.0, [0.05, 0.025], flow=[0.05, 0.025]))
    assert default_betas_verdict([run]).verdict == "contradicts"


def test_counter_example_reduced_map_missing_on_the_set_contradicts():
    run = _run(_pair(1.0, [0.1, 0.05], reduced=[0.2, 0.1], flow=[0.2, 0.1]),
               _pair(4.0, [0.01, 0.001], reduced=[0.02, 0.002], flow=[0.1, 0.05]))
    assert default_betas_verdict([run]).verdict == "contradicts"
    # off the set the reduced map is not applied: the same miss no longer counts against it
    run["pairs"][0]["distance"] = [0.5, 0.5]
    run["pairs"][1]["distance"] = [0.5, 0.5]
    assert default_betas_verdict([run]).verdict == "supports"


def test_levels_not_reached_are_insufficient():
    run = _run(_pair(1.0, [None, None]), _pair(4.0, [None, None]))
    assert default_betas_verdict([run]).verdict == "insufficient"


def test_stability_rule_fails_when_prediction_and_run_disagree():
    ok = _run(_pair(1.0, [0.1], pred=3, meas=20), _pair(4.0, [0.1], pred=None, meas=None))
    bad = _run(_pair(1.0, [0.1], pred=3, meas=None), _pair(4.0, [0.1], pred=None, meas=12))
    assert stability_verdict([ok]).verdict == "supports"
    assert stability_verdict([bad]).verdict == "contradicts"
