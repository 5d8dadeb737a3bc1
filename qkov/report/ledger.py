"""The claims ledger: one row per claim of the registry (:mod:`qkov.study.claims`), joined with the
derivation's statements and every run's evidence.

Per claim: the paper's wording and where it is made, the derivation's status and statements, the
evidence of each stage (each :class:`~qkov.study.claims.Evidence` with the run it came from), each
stage's verdict and the claim's verdict, both by the rules module's one combination
(:func:`qkov.study.rules.combine`: ``insufficient`` never counts; any contradiction makes it ``contradicts``),
the claim's outcome (:func:`qkov.study.rules.outcome_of`), every contradicting line, and the headline figure.
"""

from __future__ import annotations

import dataclasses

from qkov.report.collect import Figure, RunRecord, StudyResults
from qkov.study.claims import CLAIMS, STAGES, Evidence
from qkov.study.rules import AGAINST, combine, outcome_of

STAGE_TITLES = {"derive": "derivation", "simulate": "simulation", "synthetic": "synthetic training",
                "real": "real data"}


@dataclasses.dataclass(frozen=True)
class StageVerdict:
    """One stage's combined verdict on one claim, with each run's evidence."""

    verdict: str  # one of qkov.study.claims.VERDICTS, or "" (not tested)
    evidence: tuple[tuple[RunRecord, Evidence], ...] = ()

    @property
    def line(self) -> str:
        """One line of numbers: a contradiction first if there is one (with how many runs contradict), else the
        first supporting, then inconclusive evidence (else the first); and how many more runs."""
        if not self.evidence:
            return ""
        against = [e for _, e in self.evidence if e.verdict in AGAINST]
        if against:
            more = f" (+{len(self.evidence) - 1} more runs, {len(against)} against)" if len(self.evidence) > 1 else ""
            return "against: " + against[0].numbers + more
        by = {v: [e for _, e in self.evidence if e.verdict == v] for v in ("supports", "supports in part",
                                                                            "inconclusive")}
        main = next(iter(by["supports"] or by["supports in part"] or by["inconclusive"]), self.evidence[0][1])
        more = f" (+{len(self.evidence) - 1} more runs)" if len(self.evidence) > 1 else ""
        return main.numbers + more

    @property
    def contradiction(self) -> Evidence | None:
        """The first contradicting evidence of the stage, if any."""
        return next((e for _, e in self.evidence if e.verdict in AGAINST), None)


@dataclasses.dataclass(frozen=True)
class LedgerRow:
    """One claim: wording, where, the derivation's status and statements, each stage, the verdict, figures."""

    id: str
    claim: str
    where: str
    status: str  # derived | refined | refuted | empirical | unverified | "" (no derivation)
    derived: str
    statements: tuple[tuple[str, str], ...]
    stages: dict[str, StageVerdict]
    verdict: str
    figures: tuple[tuple[RunRecord, Figure], ...]
    holds: str = ""
    """The derivation's ``holds`` ("in part" when only part of the claim survives)."""

    @property
    def outcome(self) -> str:
        """What a reader is told (:func:`qkov.study.rules.outcome_of`): ``holds``, ``holds in part``,
        ``contradicted`` (any contradicting evidence), ``inconclusive``, ``insufficient`` or ``untested``; support
        for a claim the derivation says holds only in part is ``holds in part``."""
        out = outcome_of("" if self.verdict == "untested" else self.verdict)
        return "holds in part" if out == "holds" and self.holds == "in part" else out

    @property
    def against(self) -> list[tuple[str, RunRecord, Evidence]]:
        """``(stage, run, evidence)`` of every contradicting line (one per run and setting, none merged)."""
        return [(s, run, e) for s, v in self.stages.items() for run, e in v.evidence
                if e.verdict in AGAINST]

    @property
    def deciding(self) -> tuple[str, RunRecord, Evidence] | None:
        """The evidence behind the outcome: the first contradiction; else the first supporting (then in part,
        then inconclusive) evidence of the most direct stage (real data, synthetic training, simulation,
        derivation); else the first evidence at all."""
        if self.against:
            return self.against[0]
        order = ("real", "synthetic", "simulate", "derive")
        for verdict in ("supports", "supports in part", "inconclusive", "insufficient"):
            for stage in order:
                for run, e in (self.stages.get(stage) or StageVerdict("")).evidence:
                    if e.verdict == verdict:
                        return stage, run, e
        return None

    @property
    def ordered_evidence(self) -> list[tuple[str, RunRecord, Evidence]]:
        """``(stage, run, evidence)`` of every stage, contradictions first, then other decided evidence, then
        ``insufficient`` (stable within each)."""
        rank = {"contradicts": 0, "mixed": 0, "supports": 1, "supports in part": 2, "inconclusive": 3,
                "insufficient": 4}
        items = [(s, run, e) for s, v in self.stages.items() for run, e in v.evidence]
        return sorted(items, key=lambda x: rank.get(x[2].verdict, 5))

    @property
    def contradictions(self) -> list[tuple[str, Evidence]]:
        """``(stage, evidence)`` of every contradicting line (:attr:`against`)."""
        return [(s, e) for s, _, e in self.against]

    @property
    def headline(self) -> tuple[RunRecord, Figure] | None:
        """The figure shown for the claim in the summary table."""
        return self.figures[0] if self.figures else None


def _claim_figures(cid: str, evidence: list[tuple[RunRecord, Evidence]], results: StudyResults):
    """Figures of a claim: the registry's headline figure first (first run that has it), then each figure
    the evidence names, without repeats."""
    out: list[tuple[RunRecord, Figure]] = []
    head = CLAIMS[cid].headline_figure if cid in CLAIMS else ""
    if head:
        for run, _ in evidence:
            f = run.figure(head) or next((g for g in run.figures if g.stem.startswith(head)), None)
            if f is not None:
                out.append((run, f))
                break
    for run, e in evidence:
        f = run.figure(e.figure) if e.figure else None
        if f is not None and all((r.name, g.stem) != (run.name, f.stem) for r, g in out):
            out.append((run, f))
    return tuple(out)


def build_ledger(results: StudyResults) -> list[LedgerRow]:
    """One row per registered claim, in the registry's order."""
    derivation = results.derivation or {}
    theory = {str(e.get("id")): e for e in derivation.get("ledger", []) or [] if isinstance(e, dict)}
    rows = []
    for cid, claim in CLAIMS.items():
        t = theory.get(cid, {})
        evidence = [(r, e) for r in results.runs for e in r.evidence if e.claim == cid]
        stages = {}
        for stage in STAGES:
            ev = tuple((r, e) for r, e in evidence if e.stage == stage)
            stages[stage] = StageVerdict(combine(e.verdict for _, e in ev), ev)
        verdict = combine(e.verdict for _, e in evidence)
        statements = tuple((str(x.get("status", "")), str(x.get("text", ""))) for x in t.get("statements", []) or []
                           if isinstance(x, dict))
        rows.append(LedgerRow(cid, claim.wording, claim.where, str(t.get("status", "")), str(t.get("derived", "")),
                              statements, stages, verdict or "untested", _claim_figures(cid, evidence, results),
                              str(t.get("holds", "") or "")))
    return rows
