"""Contradictions on top: the headline counts each outcome and names EVERY contradicting line (one per run and
setting, none merged) with its number and caveat; cells show the contradiction first."""

from __future__ import annotations

from pathlib import Path

import pytest

from qkov.report.collect import RunRecord, StudyResults
from qkov.report.content import claim_lines, headline
from qkov.report.ledger import build_ledger
from qkov.study.claims import CLAIMS, Evidence

pytestmark = pytest.mark.unit


def run(name, stage, evidence, derivation=None):
    return RunRecord(Path(f"/x/{name}"), name, stage, {}, {}, {}, evidence, derivation, [])


def results(runs, ledger=()):
    r = StudyResults.__new__(StudyResults)
    fields = getattr(StudyResults, "__dataclass_fields__", {})
    for f in fields.values():   # a StudyResults with only what build_ledger reads
        object.__setattr__(r, f.name, None)
    object.__setattr__(r, "runs", runs + [run("derive-x", "derive", [], {"ledger": list(ledger)})])
    return r


def _rows(runs, ledger=()):
    return {r.id: r for r in build_ledger(results(runs, ledger))}


def test_headline_counts_each_outcome_and_names_every_contradicting_line_with_number_and_caveat():
    gap = Evidence("paper-equations", "simulate", "contradicts", "attention at loss 1e-2 ...; max gap 0.44",
                   number="max attention gap at loss 1e-2 0.44 (bound 0.02)",
                   caveat="rests on one reading of the paper's b (attention scores scaled by 1/b)")
    caco = Evidence("sharpness-ratio", "synthetic", "contradicts", "CACO, paper preset ...",
                    number="CACO distinct attention 0.404 -> 0.044")
    fafo = Evidence("sharpness-ratio", "synthetic", "contradicts", "FAFO, paper preset ...",
                    number="FAFO distinct attention 0.300 -> 0.200")
    sva = Evidence("real-data", "real", "contradicts", "sva/sgd/small: ...",
                   number="ratio 100 vs 1: accuracy -0.044 [-0.079, -0.012], mass +0.002")
    hx = Evidence("real-data", "real", "supports", "hatexplain/adamw/small: ...", number="mass +0.05")
    runs = [run("sim-a", "simulate", [gap, Evidence("growth-rates", "simulate", "supports", "12/12")]),
            run("syn-a", "synthetic", [Evidence("sharpness-ratio", "synthetic", "supports", "rises 4/4")]),
            run("fig2-caco", "synthetic", [caco]), run("fig2-fafo", "synthetic", [fafo]),
            run("syn-c", "synthetic", [Evidence("rescaling", "synthetic", "insufficient", "0 states")]),
            run("real-summary", "real", [sva, hx])]
    rows = _rows(runs, [{"id": "growth-rates", "status": "refined"}])
    assert rows["growth-rates"].outcome == "holds"
    # any contradicting evidence makes the claim contradicted, even beside support (never "holds in part")
    assert {rows[c].outcome for c in ("sharpness-ratio", "paper-equations", "real-data")} == {"contradicted"}
    assert rows["rescaling"].outcome == "insufficient" and rows["adam-ratio"].outcome == "untested"
    h = headline(list(rows.values()))
    assert h.startswith(f"Of {len(CLAIMS)} claims: 1 hold, 3 contradicted, 1 insufficient, {len(CLAIMS) - 5} untested.")
    assert "Evidence against (4 lines)" in h
    assert ("paper-equations (simulation: max attention gap at loss 1e-2 0.44 (bound 0.02); caveat: rests on one "
            "reading of the paper's b") in h
    assert "CACO distinct attention 0.404 -> 0.044" in h and "FAFO distinct attention 0.300 -> 0.200" in h  # not merged
    assert "accuracy -0.044 [-0.079, -0.012]" in h and "mass +0.05" not in h    # only the contradicting dataset
    cell = rows["sharpness-ratio"].stages["synthetic"]
    assert cell.verdict == "contradicts" and cell.line.startswith("against: CACO, paper preset")
    assert [e.verdict for _, _, e in rows["sharpness-ratio"].ordered_evidence] == ["contradicts", "contradicts",
                                                                                   "supports"]
    line = {c.id: c for c in claim_lines(list(rows.values()))}
    assert line["paper-equations"].number.startswith("max attention gap") and line["paper-equations"].caveat
    assert line["sharpness-ratio"].n_against == 2 and line["real-data"].paper.startswith("SQuAD: AC about 12%")


def test_support_for_a_claim_that_holds_in_part_is_not_counted_as_holding():
    runs = [run("d", "derive", [Evidence("sharpness-order", "derive", "supports", "4/4 pairs, asymptotically")])]
    rows = _rows(runs, [{"id": "sharpness-order", "holds": "in part"}])
    assert rows["sharpness-order"].outcome == "holds in part"
    runs = [run("d", "derive", [Evidence("growth-rates", "derive", "supports in part", "limit only")]),
            run("s", "simulate", [Evidence("growth-rates", "simulate", "supports", "12/12")])]
    assert _rows(runs)["growth-rates"].outcome == "holds in part"


def test_an_older_mixed_verdict_reads_as_a_contradiction():
    runs = [run("s", "simulate", [Evidence("sharpness-order", "simulate", "mixed", "3/4 pairs")])]
    row = _rows(runs)["sharpness-order"]
    assert row.outcome == "contradicted" and len(row.against) == 1 and "3/4 pairs" in headline([row])


def test_nothing_is_cut_short():
    """A contradicting line is shown whole, scope and caveat included (the page wraps): the quick study's Figure 2
    line was cut mid-parenthesis at 'equal rates (QK 0.1 ...'."""
    scope = ("CACO, paper preset at 10x the paper's rates, SGD, 2 seeds, 10000 steps, equal rates (QK 0.1, OV 0.1) "
             "vs faster QK (QK 2, OV 0.1)")
    numbers = scope + ": held-out distinct attention equal rates 0.404 -> faster QK 0.044 (difference -0.361, " * 3
    caco = Evidence("sharpness-ratio", "synthetic", "contradicts", numbers, scope=scope, caveat="x " * 200)
    (row,) = [r for r in _rows([run("fig2", "synthetic", [caco])]).values() if r.id == "sharpness-ratio"]
    h = headline([row])
    assert numbers in h and scope in h and ("x " * 200).strip() in h and " ..." not in h
    (line,) = [c for c in claim_lines([row]) if c.id == "sharpness-ratio"]
    assert line.qkov == numbers and line.scope == scope


def test_first_screen_states_which_part_holds_for_a_claim_that_holds_in_part():
    runs = [run("d", "derive", [Evidence("growth-rates", "derive", "supports in part", "refined",
                                         caveat="holds in part: a limit only")]),
            run("s", "simulate", [Evidence("growth-rates", "simulate", "supports", "12/12", number="v exp 0.3",
                                           scope="reduced flow, K=6, M=9")])]
    (line,) = [c for c in claim_lines(list(_rows(runs).values())) if c.id == "growth-rates"]
    assert (line.outcome, line.number, line.stage) == ("holds in part", "v exp 0.3", "simulation")
    # the settings disagree (supports / in part): each is named, its number prefixed, its scope without the name
    assert line.verdict == "holds for reduced flow (simulation); holds in part for derivation"
    assert line.qkov == "reduced flow: v exp 0.3; refined" and line.scope == "K=6, M=9"
    assert line.caveat == "holds in part: a limit only"
    runs[0] = run("d", "derive", [Evidence("growth-rates", "derive", "supports in part", "refined")])
    (line,) = [c for c in claim_lines(list(_rows(runs).values())) if c.id == "growth-rates"]
    assert line.caveat == "in part: derivation: refined"


def test_an_undecided_effect_is_named_below_the_contradictions_never_counted_as_one():
    """SVA quick under the seed-level test: accuracy -0.044 with a 95 % t-interval [-0.098, +0.010] straddles the
    1-point margin, so the rule says inconclusive; the headline still shows that effect and its interval, under
    its own heading, in report.html and report.md (it fails if inconclusive lines are dropped or listed against)."""
    from qkov.report.content import UNDECIDED_TITLE, headline_parts, undecided_lines
    from qkov.report.render_html import headline_html
    from qkov.report.render_markdown import _headline

    sva = Evidence("real-data", "real", "inconclusive", "sva/adamw/small/quick: ...",
                   number="ratio 100 vs 1 at best_val: accuracy -0.044 [95% t -0.0977, +0.00974], n=3, MDE 0.071")
    gap = Evidence("paper-equations", "simulate", "contradicts", "gap", number="max gap 0.44")
    rows = list(_rows([run("real-summary", "real", [sva]), run("sim", "simulate", [gap])]).values())
    counts, against = headline_parts(rows)
    assert len(against) == 1 and "max gap 0.44" in against[0] and "1 inconclusive" in counts
    undecided = undecided_lines(rows)
    assert undecided == ["real-data (real data: ratio 100 vs 1 at best_val: accuracy -0.044 [95% t -0.0977, "
                         "+0.00974], n=3, MDE 0.071)"]
    html_, md = headline_html(rows), _headline(rows)
    assert UNDECIDED_TITLE in html_ and "accuracy -0.044 [95% t -0.0977, +0.00974]" in html_
    assert html_.index("max gap 0.44") < html_.index("accuracy -0.044")
    assert "accuracy -0.044 \\[95% t -0.0977, +0.00974\\]" in md or "accuracy -0.044 [95% t" in md
