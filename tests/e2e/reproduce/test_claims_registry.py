"""The claim registry: Evidence validation, the one combining rule, and the judges that refuse vacuous evidence."""

from __future__ import annotations

import pytest
from hypothesis import given, strategies as st

from qkov.study.claims import (CLAIMS, VERDICTS, Evidence, claim_verdict, combine, judge_bound, judge_fraction,
                               judge_order, order_pairs_text, read_evidence)

V = st.sampled_from(VERDICTS)


def test_combine_hand_cases():
    assert combine([]) == ""
    assert combine(["insufficient", "insufficient"]) == "insufficient"
    assert combine(["supports", "insufficient", "supports"]) == "supports"
    assert combine(["contradicts"]) == "contradicts"
    assert combine(["supports", "contradicts"]) == "contradicts"        # a contradiction is never folded away
    assert combine(["supports", "mixed"]) == "contradicts"              # older files' "mixed" counts against
    assert combine(["supports", "inconclusive"]) == "supports in part"
    assert combine(["supports in part", "supports"]) == "supports in part"
    assert combine(["inconclusive", "insufficient"]) == "inconclusive"
    with pytest.raises(ValueError, match="verdict: 'n/a'"):
        combine(["n/a"])


@given(st.lists(V, max_size=6), st.lists(V, max_size=6), st.randoms())
def test_combine_is_order_and_grouping_free(a, b, rnd):
    flat = a + b
    shuffled = list(flat)
    rnd.shuffle(shuffled)
    assert combine(flat) == combine(shuffled)
    if a and b:  # runs grouped into stages give the claim the same verdict as all runs at once
        assert combine([combine(a), combine(b)]) == combine(flat)
    assert combine(flat + flat) == combine(flat)


@given(st.lists(V, min_size=1, max_size=6))
def test_insufficient_never_counts_for_or_against(vs):
    decided = [v for v in vs if v != "insufficient"]
    if decided:
        assert combine(vs + ["insufficient"] * 3) == combine(decided)
    else:
        assert combine(vs) == "insufficient"


def test_evidence_is_validated_against_the_registry():
    e = Evidence("growth-rates", "simulate", "supports", "u/log t 1.0")
    assert Evidence.from_json(e.to_json()) == e
    for bad, match in ((dict(claim="no-such-claim"), "evidence claim"), (dict(verdict="n/a"), "evidence verdict"),
                       (dict(stage="real"), "evidence stage"), (dict(numbers=3), "evidence numbers")):
        with pytest.raises(ValueError, match=match):
            Evidence(**(e.to_json() | bad))
    with pytest.raises(ValueError, match="expected an object"):
        Evidence.from_json(e.to_json() | {"onclick": "x"})
    good, bad = read_evidence({"evidence": [e.to_json(), {"claim": "x"}, "text"]})
    assert good == [e] and len(bad) == 2
    assert read_evidence({"growth-rates": {"verdict": "supports"}}) == ([], ['claims.json: expected {"evidence": [...]}'])


def test_every_claim_names_known_stages_and_the_verdict_combines_per_stage():
    assert all(c.stages and set(c.stages) <= {"derive", "simulate", "synthetic", "real"} for c in CLAIMS.values())
    ev = [Evidence("sharpness-ratio", "simulate", "supports", ""), Evidence("sharpness-ratio", "synthetic", "supports", ""),
          Evidence("sharpness-ratio", "synthetic", "insufficient", ""), Evidence("growth-rates", "simulate", "contradicts", "")]
    assert claim_verdict(ev, "sharpness-ratio") == ("supports", {"simulate": "supports", "synthetic": "supports"})


def test_judges_call_vacuous_evidence_insufficient():
    assert judge_fraction(0, 0) == "insufficient"
    assert (judge_fraction(3, 3), judge_fraction(0, 3), judge_fraction(1, 3)) == ("supports", "contradicts",
                                                                                  "contradicts")
    assert judge_bound(float("nan"), 1.0) == "insufficient" and judge_bound(0.5, 1.0) == "supports"
    assert judge_bound(2.0, 1.0) == "contradicts"
    # the finite-loss order of the reduced flow, FACO > FAFO > CACO > CAFO: 3 of the paper's 4 pairs hold
    finite = {"FACO": 0.01, "FAFO": 0.02, "CACO": 0.03, "CAFO": 0.04}
    assert judge_order(finite, 1e-3) == ("contradicts", 3, 4)
    assert "fails: CACO sharper than FAFO" in order_pairs_text(finite, 1e-3)
    # CAFO against FAFO is not a pair the paper states: either order of the two supports
    assert judge_order({"CACO": 0.1, "FACO": 0.1, "CAFO": 0.3, "FAFO": 0.2}, 1e-3) == ("supports", 4, 4)
    # ties within the resolution are not comparisons: all four tied -> insufficient, never "contradicts"
    tied = {"FACO": 0.349, "FAFO": 0.3491, "CAFO": 0.349, "CACO": 0.3489}
    assert judge_order(tied, 1e-3) == ("insufficient", 0, 0)
    assert judge_order({"CACO": 0.1, "FACO": 0.1, "CAFO": 0.2, "FAFO": 0.3}, 1e-3) == ("supports", 4, 4)
