"""The claims table exists once (theory/claims.py): the docs table, the ledger and the study read it and agree."""

from __future__ import annotations

import inspect
import pathlib
import re

import pytest

import qkov.study.claims as study_claims
import theory.ledger as ledger
from theory.checks import AT_ONE_POINT, AT_ONE_SIZE, SYMBOLIC, Check, method_counts, tag
from theory.claims import CHECK_FAMILIES, CLAIMS, SHARPNESS_ORDER_PAIRS, THRESHOLDS, markdown_table

ROOT = pathlib.Path(__file__).resolve().parents[3]


def docs_table() -> str:
    text = (ROOT / "docs" / "architecture.md").read_text()
    m = re.search(r"<!-- claims-table:begin[^>]*-->\n(.*?)\n<!-- claims-table:end -->", text, re.S)
    assert m, "docs/architecture.md lost its generated claims table markers"
    return m.group(1)


def test_the_docs_table_is_the_generated_one():
    assert docs_table() == markdown_table()
    ids = re.findall(r"^\| `([a-z-]+)` \|", docs_table(), re.M)
    assert ids == list(CLAIMS) and "adam-ratio" in ids


def test_the_study_registry_is_the_theory_table():
    assert study_claims.CLAIMS is CLAIMS
    assert study_claims.SHARPNESS_ORDER_PAIRS is SHARPNESS_ORDER_PAIRS


def test_the_ledger_takes_wording_and_place_from_the_table_and_types_none_in():
    src = inspect.getsource(ledger)
    for c in CLAIMS.values():
        assert c.wording not in src, f"ledger.py repeats the wording of {c.id}"
        e = ledger._entry(c.id, "derived", "text", [])
        assert (e["id"], e["claim"], e["source"], e["section"]) == (c.id, c.wording, c.where, c.section)
    # no claim's checks are found by substring of their names
    assert "in c.name" not in src and ".name.startswith(" not in src


def test_derive_stage_evidence_names_only_table_claims():
    from qkov.study.derive_stage import derivation_evidence

    payload = {"ledger": [{"id": cid, "status": "derived", "derived": "x"} for cid in CLAIMS]
               + [{"id": "not-a-claim", "status": "derived"}]}
    got = {e.claim for e in derivation_evidence(payload)}
    assert got == {cid for cid, c in CLAIMS.items() if "derive" in c.stages}


def test_every_claim_names_known_stages_families_and_thresholds():
    for c in CLAIMS.values():
        assert c.stages and set(c.stages) <= set(study_claims.STAGES)
        assert {s for s, _ in c.rule} <= set(c.stages), c.id
        assert set(c.thresholds) <= set(THRESHOLDS), c.id
    assert all(t.reason for t in THRESHOLDS.values())
    # the paper states collapsed-OV sharper than factorized-OV; it does not rank CAFO against FAFO
    assert ("CAFO", "FAFO") not in SHARPNESS_ORDER_PAIRS and ("FAFO", "CAFO") not in SHARPNESS_ORDER_PAIRS


def test_a_threshold_is_one_strict_comparison():
    t = THRESHOLDS["paper-gap"]
    assert t.judge(t.bound * 0.99) == "supports"
    assert t.judge(t.bound) == "contradicts"          # strict, as everywhere (the stage once used <=)
    assert t.judge(float("nan")) == "insufficient" and t.judge(None) == "insufficient"
    assert study_claims.judge_threshold("symmetric-distance", 1e-9) == "contradicts"


def test_checks_are_tagged_by_family_and_scoped_methods_are_counted():
    c = Check("x", "x", SYMBOLIC, True)
    (t,) = tag("growth", [c])
    assert t.claims == ("growth-rates",) and "growth-rates" in t.as_dict()["claims"]
    assert tag("line-direction", tag("symmetric-line", [c]))[0].claims == ("symmetric-subspace", "fixed-lines")
    with pytest.raises(KeyError):
        tag("no-such-family", [c])
    assert set(CHECK_FAMILIES) >= {f for cl in CLAIMS.values() for f in cl.check_families}
    checks = [c, Check("p", "p", AT_ONE_POINT, True), Check("s", "s", AT_ONE_SIZE, True)]
    assert method_counts(checks) == {"symbolic": 1, "scoped": 2, "numeric": 0}
    assert not checks[1].numeric and checks[1].scoped
    with pytest.raises(ValueError, match="method"):
        Check("bad", "bad", "by eye", True)


def test_ledger_supporting_uses_tags_not_names():
    named_like = Check("u-is-Theta-log-t", "x", SYMBOLIC, True)          # a growth-like name, untagged
    tagged = tag("growth", [Check("anything", "x", SYMBOLIC, True)])
    assert ledger.supporting("growth-rates", [named_like] + tagged) == tagged


def test_the_claims_table_names_the_stages_the_study_runs():
    """theory cannot import the app, so the stage names stand in both layers: they must be the same, in order."""
    from qkov.study.stages import STAGE_NAMES
    from theory.claims import STAGES

    assert STAGES == STAGE_NAMES
