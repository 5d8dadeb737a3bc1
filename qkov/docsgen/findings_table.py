"""README's "What qkov finds": one row per claim, built from committed records by the report's own row logic
(:mod:`qkov.report.findings`): the paper's statement and number, qkov's number, the verdict (by setting where the
settings disagree), the scope, and the command that reproduces it with the run time its records took.

Rows come from the quick study's record set (every claim but ``real-data``) and, for ``real-data``, from the
full-data real-data sets, judged by the rules module on the records (:func:`qkov.study.rules.real_data_evidence`
of :func:`qkov.study.real_summary.summarise_groups`)."""

from __future__ import annotations

from typing import Any, Iterable

from qkov.docsgen import GeneratedBlock, Loader
from qkov.records import Record, real_runs

README = "README.md"
QUICK_SET = "quick-study"
"""The quick study (`qkov reproduce --quick`) of every stage but real data."""
REAL_SETS = ("hx-2x2", "hx-recipe", "sva-paper", "squad-paper")
"""The real-data sets of the paper's models behind the ``real-data`` row (HateXplain and SVA on their full data, the
SQuAD decoder at the quick data size)."""
PENDING: dict[str, str] = {
    "adam-ratio-default": "row to be replaced by issue 41's ensemble probabilities (one seeded run per setting here)",
}
"""Rows another issue is reworking: the row is generated, and marked."""
QUICK_COMMAND = "`qkov reproduce --quick`"
REAL_COMMAND = "the loops of docs/real-data.md (HateXplain 2 x 2 design and paper's recipe; SVA; SQuAD)"


def _stage(kind: str) -> str:
    from qkov.study.stages import RUN_KINDS

    return RUN_KINDS.get(kind, "other")


def evidence_of(records: Iterable[Record]) -> list[tuple[str, Any, str]]:
    """``(stage, Evidence, run)`` of every evidence entry the records keep."""
    from qkov.study.claims import Evidence

    out = []
    for r in records:
        for e in r.metrics.get("evidence") or []:
            out.append((_stage(r.kind), Evidence.from_json(e), r.run))
    return out


def _outcome(claim: str, items: list[tuple[str, Any]], holds: dict[str, str]) -> str:
    """The claim's outcome as the report gives it: the rules' combination, and "holds in part" where the
    derivation says only part of the claim holds."""
    from qkov.study.rules import combine, outcome_of

    out = outcome_of(combine(e.verdict for _, e in items))
    return "holds in part" if out == "holds" and holds.get(claim) == "in part" else out


def _minutes(seconds: float) -> str:
    return f"{seconds / 3600:.1f} h" if seconds >= 5400 else f"{seconds / 60:.1f} min"


def _run_time(records: list[Record], runs: set[str]) -> str:
    walls = [float(r.provenance["wall_s"]) for r in records if r.run in runs
             and isinstance(r.provenance.get("wall_s"), (int, float))]
    n = len(runs)
    return f"{n} run{'s' if n != 1 else ''}, {_minutes(sum(walls))} of run time here" if walls else f"{n} runs"


def _cell(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|") or "—"


def real_evidence(load: Loader) -> tuple[list[tuple[str, Any]], list[Record]]:
    """``real-data`` evidence of the full-data sets (one per configuration group, the rules module's verdict on
    the records) and the records it read."""
    from qkov.study.real_summary import summarise_groups
    from qkov.study.rules import real_data_evidence

    items, recs = [], []
    for name in REAL_SETS:
        rs = load(name)
        recs += rs
        items += [("real", e) for e in real_data_evidence(summarise_groups(real_runs(rs)))]
    return items, recs


def build_findings(load: Loader) -> str:
    """The README table (module docstring)."""
    from qkov.report.findings import finding
    from theory.claims import CLAIMS

    quick = load(QUICK_SET)
    holds = {e["id"]: e["holds"] for r in quick for e in r.metrics.get("ledger") or []}
    by_claim: dict[str, list[tuple[str, Any, str]]] = {}
    for s, e, run in evidence_of(quick):
        by_claim.setdefault(e.claim, []).append((s, e, run))
    real_items, real_recs = real_evidence(load)
    lines = ["| claim | the paper | qkov | verdict | scope | reproduce (time here) |",
             "| --- | --- | --- | --- | --- | --- |"]
    for cid, claim in CLAIMS.items():
        if cid == "real-data":
            items, recs, runs, command = real_items, real_recs, {r.run for r in real_recs}, REAL_COMMAND
        else:
            got = by_claim.get(cid, [])
            items, recs, runs, command = [(s, e) for s, e, _ in got], quick, {r for _, _, r in got}, QUICK_COMMAND
        f = finding(cid, items, _outcome(cid, items, holds))
        verdict = f"**{f.outcome}**" + (f": {_cell(f.verdict)}" if f.split else "")
        scope = _cell(f.scope) + (f"; caveat: {_cell(f.caveat)}" if f.caveat else "")
        name = f"**{cid}**: {_cell(claim.wording)}" + (f" *({PENDING[cid]})*" if cid in PENDING else "")
        paper = _cell(f.paper) if f.paper else f"no number ({_cell(claim.where)})"
        lines.append(f"| {name} | {paper} | {_cell(f.qkov)} | {verdict} | {scope} | "
                     f"{command}: {_run_time(recs, runs)} |")
    commits = sorted({str(r.provenance.get("git_commit") or "?")[:7] for r in quick + real_recs})
    lines += ["", f"Generated by `qkov docs` from `records/{QUICK_SET}.jsonl` and "
              + ", ".join(f"`records/{s}.jsonl`" for s in REAL_SETS) + f" (code {', '.join(commits)})."]
    return "\n".join(lines)


BLOCKS: tuple[GeneratedBlock, ...] = (
    GeneratedBlock("findings", README, build_findings, (QUICK_SET, *REAL_SETS)),
)

__all__ = ["BLOCKS", "PENDING", "QUICK_SET", "REAL_SETS", "build_findings", "evidence_of", "real_evidence"]
