"""The adam-ratio-default and optimizer-stability rules can come out every way, on constructed inputs and on
issue 31's counter-example (CACO, K=4, M=3, u0=v0=0.1, Adam(0.9, 0.999, 1e-8), lr 1e-3, ratios 1 and 4)."""

import pytest

from qkov.study.optimizer_run import default_betas_verdict, stability_verdict

pytestmark = pytest.mark.unit


def _pair(ratio, measured, reduced=None, flow=None, distance=1e-4, pred=None, meas=None, predicted=None):
    n = len(measured)
    out = {"param": "CACO", "ratio": ratio, "measured": measured, "reduced": reduced or measured,
           "flow": flow or measured, "distance": distance if isinstance(distance, list) else [distance] * n,
           "predicted_departure_step": pred, "measured_departure_step": meas, "ftle_per_step": 0.0}
    if predicted is not None:
        out["predicted_one_minus_p"] = predicted
    return out


def _run(*pairs, levels=(0.1, 0.01)):
    return {"optimizer": {"name": "adam"}, "levels": list(levels), "pairs": list(pairs)}


# issue 31: measured 1-p at the first step below L = 1e-1 / 1e-2 / 1e-3 / 1e-4
LEVELS = (1e-1, 1e-2, 1e-3, 1e-4)
R1 = [8.49e-2, 2.89e-2, 1.35e-2, 7.46e-3]          # ratio 1: sharpens as the loss falls, on the set
R4 = [5.55e-3, 1.65e-1, 2.12e-1, 2.30e-1]          # ratio 4: de-sharpens off the set
R4_REDUCED = [4.28e-3, 1.19e-3, 5.26e-4, 2.85e-4]  # the reduced Adam map (stays on the set)
FLOW_R1 = [9e-2, 4e-2, 2e-2, 1e-2]                 # gradient flow sharpens monotonically (illustrative values)
FLOW_R4 = [5e-2, 2e-2, 9e-3, 4e-3]


def _issue31(n_levels):
    return _run(_pair(1.0, R1[:n_levels], flow=FLOW_R1[:n_levels], distance=[7e-4] * n_levels),
                _pair(4.0, R4[:n_levels], reduced=R4_REDUCED[:n_levels], flow=FLOW_R4[:n_levels],
                      distance=[0.58, 0.7, 0.75, 0.77][:n_levels]),
                levels=LEVELS[:n_levels])


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


def test_a_point_off_the_set_is_never_a_hit_by_default():
    # the same run as the supporting one, but every point off the set and no broken-set prediction
    run = _run(_pair(1.0, [0.1, 0.05], flow=[0.2, 0.1], distance=0.5),
               _pair(4.0, [0.01, 0.001], flow=[0.1, 0.05], distance=0.5))
    ev = default_betas_verdict([run])
    assert ev.verdict == "supports in part" and "off the set, unexplained" in ev.numbers
    # a supplied broken-set prediction that explains the points makes them hits ...
    for p in run["pairs"]:
        p["predicted_one_minus_p"] = [m * 1.01 for m in p["measured"]]
    assert default_betas_verdict([run]).verdict == "supports"
    # ... and one that misses them by more than the tolerance contradicts
    for p in run["pairs"]:
        p["predicted_one_minus_p"] = [m * 2 for m in p["measured"]]
    assert default_betas_verdict([run]).verdict == "contradicts"


def test_one_minus_p_rising_as_the_loss_falls_contradicts_even_on_the_map():
    run = _run(_pair(1.0, [0.1, 0.2], flow=[0.5, 0.4]), _pair(4.0, [0.01, 0.02], flow=[0.3, 0.2]))
    ev = default_betas_verdict([run])
    assert ev.verdict == "contradicts" and "1-p rises as the loss falls" in ev.numbers


def test_a_middle_ratio_less_sharp_than_a_lower_one_contradicts():
    # lowest vs highest alone would pass: only comparing every ratio finds the middle one
    run = _run(_pair(1.0, [0.1, 0.05], flow=[0.2, 0.1]), _pair(2.0, [0.2, 0.08], flow=[0.15, 0.08]),
               _pair(4.0, [0.01, 0.001], flow=[0.1, 0.05]))
    ev = default_betas_verdict([run])
    assert ev.verdict == "contradicts" and "r=2 less sharp than r=1" in ev.numbers


@pytest.mark.parametrize("n_levels", [2, 3, 4])
def test_issue31_case_contradicts_at_every_run_length_that_reaches_below_5e_2(n_levels):
    ev = default_betas_verdict([_issue31(n_levels)])
    assert ev.verdict == "contradicts"
    assert "r=4 less sharp than r=1" in ev.numbers and "r=4: 1-p rises as the loss falls" in ev.numbers


def test_issue31_run_that_stops_just_before_the_breakdown_does_not_support():
    # stopped at L >= 5e-2: ratio 4 is already off the set (distance 0.58) and the reduced map is 30% off there;
    # the old rule counted the point as a hit and said "supports"
    ev = default_betas_verdict([_issue31(1)])
    assert ev.verdict == "supports in part" and "r=4 L=0.1 (distance 0.58)" in ev.numbers


def test_levels_not_reached_are_insufficient():
    run = _run(_pair(1.0, [None, None]), _pair(4.0, [None, None]))
    assert default_betas_verdict([run]).verdict == "insufficient"


def test_stability_is_judged_on_attention_not_on_a_tiny_distance():
    # predicted "leaves" for both ratios; ratio 1's attention stays on the reduced map (issue 31: it saturates at
    # distance 7e-4 with attention exact), ratio 4's departs 800x: the call is right for ratio 4 only
    run = _issue31(4)
    run["pairs"][0]["predicted_departure_step"] = 1
    run["pairs"][1]["predicted_departure_step"] = 1
    ev = stability_verdict([run])
    assert ev.verdict == "contradicts" and "CACO r=1: predicted leaves, attention stays on the reduced map" in ev.numbers
    run["pairs"][0]["predicted_departure_step"] = None        # predicted to stay: now both calls are right
    assert stability_verdict([run]).verdict == "supports"


def test_stability_with_a_predicted_one_minus_p_compares_it_with_the_measurement():
    run = _issue31(4)
    run["pairs"][0]["predicted_one_minus_p"] = [x * 1.02 for x in R1]
    run["pairs"][1]["predicted_one_minus_p"] = [x * 1.02 for x in R4]
    assert stability_verdict([run]).verdict == "supports"
    run["pairs"][1]["predicted_one_minus_p"] = R4_REDUCED
    ev = stability_verdict([run])
    assert ev.verdict == "contradicts" and "CACO r=4: predicted 1-p off by" in ev.numbers


def test_stability_without_any_reached_level_is_insufficient():
    run = _run(_pair(1.0, [None], pred=3), _pair(4.0, [None], pred=None), levels=(0.1,))
    assert stability_verdict([run]).verdict == "insufficient"


def test_the_named_number_is_the_reversal_before_a_shortfall_or_a_missed_map():
    """Issue 31's case to L = 1e-2, as the quick study runs it: at L = 0.1 ratio 4 sharpens less than 1.1 x
    flow's and its reduced map misses; at L = 1e-2 it is less sharp than ratio 1. The line the headline shows
    is the reversal, the claim's own contradiction (it fails if the shortfall or the map is named first)."""
    run = _run(_pair(1.0, R1[:2], flow=FLOW_R1[:2], distance=[7e-4] * 2),
               _pair(4.0, R4[:2], reduced=R4_REDUCED[:2], flow=[8.9e-3, 2e-2], distance=[0.58, 0.7]),
               levels=LEVELS[:2])
    out = default_betas_verdict([run])
    assert out.verdict == "contradicts"
    assert out.number.startswith("CACO L=0.01: r=4 less sharp than r=1 (1-p 0.165 vs 0.0289)"), out.number
