"""The adam-ratio-default, optimizer-stability and desharpen-predictor rules can come out every way they can, on
constructed inputs and on issue 41's ensemble of issue 31's case (CACO, K=4, M=3, u0=v0=0.1, Adam(0.9, 0.999, 1e-8),
lr 1e-3, ratios 1 and 4: 17 of 64 seeded starts de-sharpen at L = 1e-2)."""

import pytest

from qkov.study import evidence_types as et
from qkov.study.optimizer_run import calibration_verdict, default_betas_verdict, stability_verdict
from qkov.study.rules import brier, desharpen_call
from validation.synthetic.ensemble import wilson

pytestmark = pytest.mark.unit


def _pair(ratio, measured, reduced=None, flow=None, distance=1e-4, pred=None, ens=None, predicted=None):
    """One pair; ``ens``: per level ``(k, n)`` de-sharpening counts of an ensemble (Wilson intervals derived)."""
    n = len(measured)
    out = {"param": "CACO", "ratio": ratio, "measured": measured, "reduced": reduced or measured,
           "flow": flow or measured, "distance": distance if isinstance(distance, list) else [distance] * n,
           "predicted_departure_step": pred, "ftle_per_step": 0.0}
    if ens is not None:
        out["desharpen_k"] = [k for k, _ in ens]
        out["desharpen_n"] = [m for _, m in ens]
        out["p_desharpen_lo"] = [wilson(k, m)[0] for k, m in ens]
        out["p_desharpen_hi"] = [wilson(k, m)[1] for k, m in ens]
    if predicted is not None:
        out["predicted_p_desharpen"] = predicted
    return out


def _run(*pairs, levels=(0.1, 0.01), ensemble=False):
    run = {"optimizer": {"name": "adam"}, "levels": list(levels), "pairs": list(pairs)}
    if ensemble:
        run["ensemble"] = {"size": 64, "amplitude": 1e-6, "seed": 0, "confidence": 0.95}
    return run


# issue 41's ensemble of issue 31's case at L = 1e-1 / 1e-2 (medians; 17/64 de-sharpen at 1e-2)
R1 = [8.49e-2, 2.89e-2]
R4 = [5.73e-3, 2.76e-3]
FLOW_R1, FLOW_R4 = [1.15e-1, 4.27e-2], [3.09e-2, 1.05e-2]


def _issue41(counts=((0, 64), (17, 64)), predicted=(0.0, 0.176)):
    return _run(_pair(1.0, R1, flow=FLOW_R1, pred=1),
                _pair(4.0, R4, flow=FLOW_R4, pred=1, ens=counts, predicted=list(predicted)), ensemble=True)


def _point(k, n):
    lo, hi = wilson(k, n)
    return et.OptimizerPoint(4.0, 0.01, 0.003, desharpen_k=k, desharpen_n=n, p_lo=lo, p_hi=hi)


@pytest.mark.parametrize("k, n, call", [(0, 64, "supports"), (2, 64, "inconclusive"), (17, 64, "contradicts"),
                                        (0, 0, "insufficient"), (0, 32, "inconclusive")])
def test_desharpen_call_every_verdict(k, n, call):
    # 0/32: Wilson [0, 0.107] straddles 0.1 -- why the default ensemble has 64 members ([0, 0.057])
    assert desharpen_call(_point(k, n)) == call


def test_issue41_ensemble_contradicts_on_the_probability():
    ev = default_betas_verdict([_issue41()])
    assert ev.verdict == "contradicts"
    assert "CACO r=4 L=0.01: P(de-sharpen) 0.27 [0.17, 0.38] (17/64)" in ev.number


def test_an_ensemble_where_de_sharpening_is_rare_supports():
    ev = default_betas_verdict([_issue41(counts=((0, 64), (0, 64)))])
    assert ev.verdict == "supports", ev.numbers


def test_an_interval_straddling_the_bound_is_inconclusive():
    ev = default_betas_verdict([_issue41(counts=((0, 64), (4, 64)))])    # 4/64: [0.025, 0.15]
    assert ev.verdict == "inconclusive" and "(4/64)" in ev.number


def test_the_predictor_missing_never_contradicts_the_paper_claim():
    # the predictor says 0.9 where 0/64 de-sharpen: the claim's verdict does not move, the calibration line fails
    run = _issue41(counts=((0, 64), (0, 64)), predicted=(0.9, 0.9))
    assert default_betas_verdict([run]).verdict == "supports"
    cal = calibration_verdict([run])
    assert cal.verdict == "contradicts" and "predicted 0.90, ensemble 0/64" in cal.numbers


def test_calibration_every_verdict_and_its_brier_score():
    assert calibration_verdict([_issue41()]).verdict == "supports"          # 0.0 in [0, 0.057], 0.176 in [0.17, 0.38]
    assert calibration_verdict([_issue41(predicted=(0.0, 0.5))]).verdict == "contradicts"
    none = _run(_pair(1.0, R1, flow=FLOW_R1), _pair(4.0, R4, flow=FLOW_R4))   # no ensemble: no calibration line
    assert calibration_verdict([none]) is None
    unpredicted = _issue41()
    del unpredicted["pairs"][1]["predicted_p_desharpen"]
    assert calibration_verdict([unpredicted]).verdict == "insufficient"
    pts = [et.CalibrationPoint("CACO", 4.0, 0.01, 0.25, 1, 4, 0.0, 1.0)]
    assert brier(pts) == pytest.approx((1 * 0.75 ** 2 + 3 * 0.25 ** 2) / 4)


def test_a_single_run_off_the_set_is_not_judged():
    # the transverse call says the runs leave; without an ensemble their outcome is rounding's: not a comparison
    run = _run(_pair(1.0, R1, flow=FLOW_R1, pred=1), _pair(4.0, [5.55e-3, 1.65e-1], flow=FLOW_R4, pred=1))
    ev = default_betas_verdict([run])
    assert ev.verdict == "insufficient" and "no ensemble" in ev.numbers


def test_an_ensemble_beside_unjudged_single_runs_supports_in_part():
    # one configuration judged on its ensemble (rare), another only as single runs off the set: the verdict says
    # that part was left out instead of counting it either way
    off = _run(_pair(1.0, R1, flow=FLOW_R1, pred=1), _pair(4.0, [5.55e-3, 1.65e-1], flow=FLOW_R4, pred=1))
    ev = default_betas_verdict([_issue41(counts=((0, 64), (0, 64))), off])
    assert ev.verdict == "supports in part"
    assert "4/4 comparisons hold; 2 single runs off the set not judged" in ev.number
    assert default_betas_verdict([_issue41(), off]).verdict == "contradicts"      # a probability above 0.1 wins


def test_deterministic_runs_support_and_contradict():
    # momentum: runs predicted to stay on the set are deterministic and judged one by one
    good = _run(_pair(1.0, [0.1, 0.05], flow=[0.2, 0.1]), _pair(4.0, [0.01, 0.001], flow=[0.1, 0.05]))
    assert default_betas_verdict([good]).verdict == "supports"
    reversed_ = _run(_pair(1.0, [0.1, 0.05], flow=[0.2, 0.1]), _pair(4.0, [0.2, 0.08], flow=[0.1, 0.05]))
    ev = default_betas_verdict([reversed_])
    assert ev.verdict == "contradicts" and "r=4 less sharp than r=1" in ev.numbers


def test_sharpening_no_more_than_flow_contradicts():
    run = _run(_pair(1.0, [0.1, 0.05], flow=[0.1, 0.05]), _pair(4.0, [0.05, 0.025], flow=[0.05, 0.025]))
    ev = default_betas_verdict([run])
    assert ev.verdict == "contradicts" and "not >= 1.1 x flow's" in ev.numbers


def test_levels_not_reached_are_insufficient():
    run = _run(_pair(1.0, [None, None]), _pair(4.0, [None, None]))
    assert default_betas_verdict([run]).verdict == "insufficient"


def test_stability_is_judged_on_attention_not_on_a_tiny_distance():
    # predicted "leaves" for both ratios; ratio 1's attention stays on the reduced map, ratio 4's departs
    run = _issue41()
    run["pairs"][1]["reduced"] = [4.28e-3, 1.18e-3]
    ev = stability_verdict([run])
    assert ev.verdict == "contradicts" and "CACO r=1: predicted leaves, attention stays on the reduced map" in ev.numbers
    run["pairs"][0]["predicted_departure_step"] = None        # predicted to stay: now both calls are right
    assert stability_verdict([run]).verdict == "supports"


def test_stability_without_any_reached_level_is_insufficient():
    run = _run(_pair(1.0, [None], pred=3), _pair(4.0, [None], pred=None), levels=(0.1,))
    assert stability_verdict([run]).verdict == "insufficient"
