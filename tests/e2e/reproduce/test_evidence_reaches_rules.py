"""End to end on a small study: every run that measured something reaches its claim's rule (qkov.study.rules), so
no measured claim is silently insufficient; checked per claim, through the real stage code and claims.json."""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    """Four real runs, kept small (about a minute on one core): exact-population GD from the symmetric start
    (issue 30's path: no held-out curve), the reduced flow to t = 1e12, GD against Adam(0, 0), Adam at default
    betas against its reduced map. Returns ``{claim: [evidence json]}``."""
    from qkov.study import adam_run, optimizer_run, simulate_stage, synthetic_stage
    from validation.synthetic.adam_compare import AdamCompareConfig
    from validation.synthetic.experiment import SyntheticConfig
    from validation.synthetic.optimizer_map_run import OptimizerMapConfig

    out = tmp_path_factory.mktemp("study")
    synthetic_stage.execute("synthetic", SyntheticConfig(ratios=(1.0, 10.0), params=("FAFO",), steps=300, log_every=10,
                                                         dt=0.05).to_json_dict(), out / "syn")
    simulate_stage.execute("simulate-asymptotics", {"K": 6, "M": 9, "ratios": [1.0, 10.0], "scale": 0.1, "seed": 0},
                           out / "asy")
    adam_run.execute(AdamCompareConfig(ratios=(1.0, 3.0), steps_adam=300, steps_gd=500, params=("CACO",)).to_json_dict(),
                     out / "adam")
    optimizer_run.execute(OptimizerMapConfig(optimizer="adam", ratios=(1.0, 4.0), steps=300, params=("CACO",))
                          .to_json_dict(), out / "opt")
    by: dict[str, list[dict]] = {}
    for run in ("syn", "asy", "adam", "opt"):
        for e in json.loads((out / run / "claims.json").read_text())["evidence"]:
            by.setdefault(e["claim"], []).append(e)
    return by


MEASURED = ("rescaling", "fixed-lines", "sharpness-ratio", "first-integrals", "growth-rates", "adam-ratio",
            "adam-ratio-default", "optimizer-stability", "desharpen-predictor")
"""Claims these runs measure: each must come back decided, with its one number and its scope."""


@pytest.mark.parametrize("claim", MEASURED)
def test_every_measured_claim_reaches_its_rule(study, claim):
    evs = study.get(claim)
    assert evs, f"{claim}: no evidence written"
    for e in evs:
        assert e["verdict"] != "insufficient", e          # measured, so decided (issue 30: population runs)
        assert e["number"] and e["scope"], e                # the rule's number and the stage's scope reach the file


def test_population_run_counts_for_sharpness_ratio_with_its_numbers(study):
    (e,) = study["sharpness-ratio"]
    assert e["verdict"] == "supports" and "population" in e["scope"] and "steps" in e["number"]
