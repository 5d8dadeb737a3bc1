"""One row per claim (qkov.report.findings), the same for the report's first screen and README: a claim that some
settings contradict and others support names them; settings that agree read as one word; nothing is cut."""

from __future__ import annotations

import pytest

from qkov.report.findings import clauses, finding, findings, verdict_by_setting
from qkov.study.claims import CLAIMS, Evidence

pytestmark = pytest.mark.unit

SCOPE = ("{p}, paper preset at 10x the paper's rates, SGD, 2 seeds, 10000 steps, equal rates (QK 0.1, OV 0.1) vs "
         "faster QK (QK 2, OV 0.1)")


def fig2(param, verdict, before, after):
    return ("synthetic", Evidence("sharpness-ratio", "synthetic", verdict, "...", number=f"{param} distinct attention "
                                  f"{before} -> {after}", scope=SCOPE.format(p=param)))


def test_clauses_split_at_top_level_commas_only():
    assert clauses("Adam(0.9, 0.999, eps=1e-08), symmetric start, K=4") == ["Adam(0.9, 0.999, eps=1e-08)",
                                                                           "symmetric start", "K=4"]
    assert clauses("") == [] and clauses("a") == ["a"]


def test_a_split_verdict_names_the_parametrizations():
    items = [fig2("CACO", "contradicts", 0.404, 0.044), fig2("FACO", "supports", 0.348, 0.991),
             fig2("FAFO", "supports", 0.348, 0.848), fig2("CAFO", "supports", 0.360, 0.482),
             ("simulate", Evidence("sharpness-ratio", "simulate", "supports", "16/16", number="1-p falls in 16/16 steps",
                                   scope="reduced gradient flow, K=6, M=9, ratios 0.01..100")),
             ("synthetic", Evidence("sharpness-ratio", "synthetic", "insufficient", "0/0", scope="sgd, sampled data"))]
    f = finding("sharpness-ratio", items)
    assert f.outcome == "contradicted" and f.split
    assert f.verdict == ("contradicted for CACO (synthetic training); holds for FACO, FAFO, CAFO (synthetic training) "
                         "and reduced gradient flow (simulation); insufficient for sgd (synthetic training)")
    assert f.qkov.startswith("CACO distinct attention 0.404 -> 0.044; FACO distinct attention 0.348 -> 0.991")
    assert "reduced gradient flow: 1-p falls in 16/16 steps" in f.qkov and "0/0" not in f.qkov
    # the shared scope once, without the setting that the verdict names
    assert f.scope.startswith("paper preset at 10x the paper's rates, SGD, 2 seeds, 10000 steps, equal rates (QK 0.1, "
                              "OV 0.1) vs faster QK (QK 2, OV 0.1); K=6, M=9")
    assert f.paper == CLAIMS["sharpness-ratio"].paper_number and "QK 0.2, OV 0.01" in f.paper


def test_settings_that_agree_read_as_one_word_and_undecided_ones_are_named_not_counted():
    items = [fig2("FACO", "supports", 0.3, 0.9), fig2("CAFO", "supports", 0.3, 0.5)]
    assert verdict_by_setting(items) == ("", False)
    f = finding("sharpness-ratio", items)
    assert (f.verdict, f.outcome, f.split) == ("holds", "holds", False)
    assert f.qkov == "FACO distinct attention 0.3 -> 0.9; CAFO distinct attention 0.3 -> 0.5"
    items.append(("synthetic", Evidence("sharpness-ratio", "synthetic", "insufficient", "0/0", number="0/0 steps",
                                        scope="sgd, sampled data")))
    f = finding("sharpness-ratio", items)
    assert f.outcome == "holds" and f.verdict == "holds for FACO, CAFO (synthetic training); insufficient for sgd " \
                                                 "(synthetic training)"
    assert "0/0" not in f.qkov


def test_the_fewest_scope_clauses_that_keep_disagreeing_settings_apart():
    a = ("synthetic", Evidence("sharpness-order", "synthetic", "contradicts", "x", number="3/4",
                               scope="gd, population data, symmetric start, K=4"))
    b = ("synthetic", Evidence("sharpness-order", "synthetic", "supports", "y", number="4/4",
                               scope="gd, population data, random start, K=4"))
    c = ("synthetic", Evidence("sharpness-order", "synthetic", "supports", "z", number="4/4", scope="adamw, K=4"))
    text, split = verdict_by_setting([a, b, c])
    assert split and text == ("contradicted for gd/population data/symmetric start (synthetic training); holds for "
                              "gd/population data/random start, adamw (synthetic training)")


def test_every_claim_has_a_row_and_a_claim_without_evidence_is_untested():
    rows = findings([fig2("CACO", "contradicts", 0.4, 0.04)])
    assert [r.claim for r in rows] == list(CLAIMS)
    assert {r.outcome for r in rows if r.claim != "sharpness-ratio"} == {"untested"}
