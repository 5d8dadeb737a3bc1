"""Contradictions on top: the headline counts outcomes and names every contradicted claim; cells show
the contradiction first; "mixed" names what points which way."""

from __future__ import annotations

from pathlib import Path

from qkov.report.collect import RunRecord, StudyResults
from qkov.report.content import headline
from qkov.report.ledger import build_ledger
from qkov.study.claims import CLAIMS, Evidence


def run(name, stage, evidence, derivation=None):
    return RunRecord(Path(f"/x/{name}"), name, stage, {}, {}, {}, evidence, derivation, [])


def results(runs, ledger=()):
    r = StudyResults.__new__(StudyResults)
    fields = getattr(StudyResults, "__dataclass_fields__", {})
    for f in fields.values():   # a StudyResults with only what build_ledger reads
        object.__setattr__(r, f.name, None)
    object.__setattr__(r, "runs", runs + [run("derive-x", "derive", [], {"ledger": list(ledger)})])
    return r


def test_headline_counts_outcomes_and_names_the_contradiction_with_its_number():
    runs = [run("sim-a", "simulate", [Evidence("paper-equations", "simulate", "contradicts", "max gap 0.44"),
                                      Evidence("growth-rates", "simulate", "supports", "12/12")]),
            run("syn-a", "synthetic", [Evidence("sharpness-ratio", "synthetic", "supports", "rises 4/4")]),
            run("syn-b", "synthetic", [Evidence("sharpness-ratio", "synthetic", "contradicts", "CACO 0.404 -> 0.044")]),
            run("syn-c", "synthetic", [Evidence("rescaling", "synthetic", "insufficient", "0 states")])]
    ledger = [{"id": "growth-rates", "status": "refined"}, {"id": "sharpness-ratio", "status": "refined",
                                                             "holds": "in part"}]
    rows = {r.id: r for r in build_ledger(results(runs, ledger))}
    assert rows["growth-rates"].outcome == "holds"
    assert rows["sharpness-ratio"].outcome == "holds in part" and rows["paper-equations"].outcome == "contradicted"
    assert rows["rescaling"].outcome == "insufficient" and rows["real-data"].outcome == "untested"
    h = headline(list(rows.values()))
    assert h.startswith(f"Of {len(CLAIMS)} claims: 1 hold, 1 hold in part, 1 contradicted, 1 insufficient, ")
    assert "paper-equations (simulation: max gap 0.44)" in h and "sharpness-ratio (synthetic training: CACO 0.404" in h
    cell = rows["sharpness-ratio"].stages["synthetic"]
    assert cell.verdict == "mixed" and cell.line.startswith("against (1 runs): CACO 0.404 -> 0.044 | for (1 runs)")
    assert [e.verdict for _, _, e in rows["sharpness-ratio"].ordered_evidence] == ["contradicts", "supports"]


def test_support_for_a_claim_that_holds_in_part_is_not_counted_as_holding():
    runs = [run("d", "derive", [Evidence("sharpness-order", "derive", "supports", "4/4 pairs, asymptotically")])]
    rows = {r.id: r for r in build_ledger(results(runs, [{"id": "sharpness-order", "holds": "in part"}]))}
    assert rows["sharpness-order"].outcome == "holds in part"


def test_headline_cuts_a_long_line_of_numbers_between_clauses_not_inside_a_number():
    from qkov.report.content import _short

    numbers = "attention at loss 1e-2, paper's equations: 0.12, 0.22; derived flow: 0.09, 0.11; max gap 0.44"
    assert _short(numbers, len(numbers)) == numbers
    cut = _short(numbers, 90)   # the limit falls inside '0.44'
    assert cut == "attention at loss 1e-2, paper's equations: 0.12, 0.22; derived flow: 0.09, 0.11 ..."
    assert not any(_short(numbers, n).endswith(("0 ...", "0. ...", "0....")) for n in range(20, len(numbers)))
