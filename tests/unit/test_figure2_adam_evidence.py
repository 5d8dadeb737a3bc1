"""Evidence of the ``figure2`` and ``adam`` study runs on hand-made summaries, and their configs' validation."""

from __future__ import annotations

import pytest

from qkov.core.config import ConfigError, parse_config
from qkov.study import adam_run, figure2_run
from qkov.study.claims import CLAIMS
from validation.synthetic.adam_compare import AdamCompareConfig
from validation.synthetic.figure2 import Figure2Config

UNIFORM = 0.349


def setting(name, lr_qk, distinct, per_seed_spread=0.002, query=0.016, copies=0.064, start=UNIFORM, p_true=0.9):
    def stat(m, spread=0.0):
        return {"mean": m, "min": m - spread / 2, "max": m + spread / 2, "per_seed": [m - spread / 2, m + spread / 2]}

    return {"name": name, "lr_qk": lr_qk, "lr_ov": 0.01, "ratio": lr_qk / 0.01,
            "final": {"distinct": stat(distinct, per_seed_spread), "query": stat(query), "query_copies": stat(copies),
                      "commons": stat(1 - distinct - query - copies), "p_true": stat(p_true), "test_loss": stat(0.3)},
            "start": {"distinct": start, "query": 0.016, "query_copies": 0.064, "commons": 0.571, "p_true": 0.02,
                      "test_loss": 3.9}}


def fig2_summary(eq, fq, **kw):
    return {"param": "CACO", "seeds": [1234, 1235], "steps": [0, 100_000],
            "settings": [setting("equal rates", 0.01, eq, **kw), setting("faster QK", 0.2, fq, **kw)]}


def test_figure2_uniform_attention_in_both_settings_is_insufficient():
    (e,) = figure2_run.evidence(fig2_summary(UNIFORM + 4e-4, UNIFORM - 5e-4, per_seed_spread=1e-4))
    assert (e.claim, e.stage, e.verdict) == ("sharpness-ratio", "synthetic", "insufficient")
    assert "uniform 0.349" in e.numbers and "distinct attention stays uniform in both settings" in e.numbers


def test_figure2_prediction_at_chance_is_insufficient_even_when_attention_moved():
    """The quick paper-preset case of issue 22: CACO's attention moved a little, p_true 0.04 (chance 1/50)."""
    (e,) = figure2_run.evidence(fig2_summary(UNIFORM, UNIFORM - 0.02, per_seed_spread=1e-4, p_true=0.04))
    assert e.verdict == "insufficient" and "p_true at chance in equal rates, faster QK" in e.numbers


def test_figure2_difference_within_the_seed_spread_is_insufficient():
    (e,) = figure2_run.evidence(fig2_summary(0.40, 0.43, per_seed_spread=0.05))
    assert e.verdict == "insufficient" and "seed spread 0.050" in e.numbers and "within the seed spread" in e.numbers


def test_figure2_faster_qk_raising_distinct_attention_supports():
    (e,) = figure2_run.evidence(fig2_summary(UNIFORM, 0.99))
    assert e.verdict == "supports" and "equal rates 0.349 -> faster QK 0.990" in e.numbers
    assert e.number == "CACO distinct attention 0.349 -> 0.990" and "equal rates (QK 0.01, OV 0.01) vs faster QK (QK 0.2, OV 0.01)" in e.scope
    assert e.figure == "attention_split"


def test_figure2_faster_qk_lowering_distinct_attention_contradicts_and_names_the_query():
    s = fig2_summary(0.41, 0.04)
    s["settings"][1]["final"]["query_copies"]["mean"] = 0.69
    (e,) = figure2_run.evidence(s)
    assert e.verdict == "contradicts" and "query + query-id copies 0.080 -> 0.706" in e.numbers
    assert "query's id" in e.numbers and e.number == "CACO distinct attention 0.410 -> 0.040"


def pair(param, ratio, adam, law, n=20, rng=(0.5, 0.005)):
    return {"param": param, "ratio": ratio, "n_usable": n, "loss_range": list(rng), "slope_adam": adam,
            "slope_law": law, "slope_gd": 0.5, "asymptotic_exponent": ratio}


def test_adam_slopes_matching_the_law_support_and_a_law_scaled_by_1_5_contradicts():
    cfg = AdamCompareConfig(ratios=(1.0, 3.0))
    ok = [pair("CACO", 1.0, 0.702, 0.70), pair("CACO", 3.0, 2.74, 2.75)]
    (e,) = adam_run.evidence(cfg, ok)
    assert (e.claim, e.verdict, e.figure) == ("adam-ratio", "supports", "gd_vs_adam") and "2/2 pairs" in e.numbers
    (e,) = adam_run.evidence(cfg, [pair("CACO", 1.0, 1.5 * 0.70, 0.70), pair("CACO", 3.0, 1.5 * 2.75, 2.75)])
    assert e.verdict == "contradicts" and "0/2 pairs" in e.numbers


@pytest.mark.parametrize("bad", [dict(n=1), dict(rng=(0.02, 0.015)), dict(law=None), dict(adam=None)])
def test_adam_pairs_without_a_usable_range_are_insufficient(bad):
    kw = {"adam": 0.7, "law": 0.7} | {k: v for k, v in bad.items() if k in ("adam", "law")}
    p = pair("FAFO", 1.0, kw["adam"], kw["law"], **{k: v for k, v in bad.items() if k in ("n", "rng")})
    assert adam_run.pair_verdict(p) == "insufficient"
    (e,) = adam_run.evidence(AdamCompareConfig(ratios=(1.0,)), [p])
    assert e.verdict == "insufficient" and "not judged" in e.numbers


def test_adam_ratio_is_a_registered_claim_tested_by_derive_and_training():
    c = CLAIMS["adam-ratio"]
    assert c.stages == ("derive", "synthetic") and c.headline_figure == adam_run.FIGURE


@pytest.mark.parametrize("cls,values,field", [
    (Figure2Config, {"param": "XYZ"}, "param"), (Figure2Config, {"seeds": []}, "seeds"),
    (Figure2Config, {"faster_qk_rates": [0.2, 0.0]}, "faster-qk-rates"), (Figure2Config, {"steps": 0}, "steps"),
    (Figure2Config, {"lr": 0.1}, "lr"),
    (AdamCompareConfig, {"ratios": [1.0, -3.0]}, "ratios"), (AdamCompareConfig, {"eps": float("nan")}, "eps"),
    (AdamCompareConfig, {"params": []}, "params")])
def test_configs_reject_bad_values_in_one_line(cls, values, field):
    with pytest.raises(ConfigError, match=f"^{field}") as exc:
        parse_config(cls, **values)
    assert "\n" not in str(exc.value)


def test_study_configs_round_trip_and_full_mode_is_the_papers():
    for quick in (True, False):
        for c in figure2_run.study_configs(quick):
            assert parse_config(Figure2Config, **c.to_json_dict()) == c
        for c in adam_run.study_configs(quick):
            assert parse_config(AdamCompareConfig, **c.to_json_dict()) == c
    full = figure2_run.study_configs(False)
    assert [c.param for c in full] == ["CACO", "FACO", "CAFO", "FAFO"]
    assert all(c.seeds == (1234, 1235, 1236, 1237, 1238) and c.steps == 100_000 and c.settings == [(0.01, 0.01), (0.2, 0.01)]
               for c in full)


def test_the_ledgers_adam_ratio_entry_gives_derive_evidence():
    from qkov.study.derive_stage import derivation_evidence

    entry = {"id": "adam-ratio", "status": "refined", "derived": "Adam(0,0) is exactly reduced. More.", "statements": []}
    (e,) = derivation_evidence({"ledger": [entry]})
    assert (e.claim, e.stage, e.verdict) == ("adam-ratio", "derive", "supports") and e.numbers.startswith("refined")
    (e,) = derivation_evidence({"ledger": [entry | {"status": "unverified"}]})
    assert e.verdict == "inconclusive"


def test_the_preset_label_is_true_of_the_rates():
    """'paper preset' only at the paper's four rates (QK 0.01/OV 0.01 vs QK 0.2/OV 0.01); the quick study's 10x rates
    say so; other rates do not claim the paper's."""
    paper = fig2_summary(0.35, 0.9)
    assert figure2_run.preset_label(paper) == "paper preset"
    assert figure2_run.figure2_evidence(paper).scope.startswith("CACO, paper preset, SGD")
    quick = fig2_summary(0.35, 0.9)
    for s in quick["settings"]:
        s["lr_qk"], s["lr_ov"] = s["lr_qk"] * 10, s["lr_ov"] * 10
    assert figure2_run.preset_label(quick) == "paper preset at 10x the paper's rates"
    assert "paper preset at 10x the paper's rates, SGD" in figure2_run.evidence(quick)[0].scope
    odd = fig2_summary(0.35, 0.9)
    odd["settings"][1]["lr_qk"] = 0.5
    assert figure2_run.preset_label(odd) == "paper preset data and model, not the paper's rates"
