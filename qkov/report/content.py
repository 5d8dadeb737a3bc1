"""What the report says, independent of its format: headline, figure captions, provenance rows."""

from __future__ import annotations

import collections
import dataclasses
import datetime as _dt
from typing import Any

from qkov.report.collect import STAGE_ORDER, STAGE_TITLES, Figure, RunRecord, StudyResults
from qkov.report.ledger import LedgerRow

INTRO = (
    "qkov checks the claims of Vashisht & Ramaswamy, *Faster Query-Key Learning Sharpens Attention in "
    "Self-Attention Models* (ICML 2026): the theory layer derives the gradient flow of the orthogonal "
    "synthetic model in sympy, the simulation layer integrates it, and the validation layer trains matching "
    "torch models on synthetic and real data and holds them against the closed forms. "
    "Each claim of the paper is one row of the ledger below."
)
PAPER_TITLE = "Faster Query-Key Learning Sharpens Attention in Self-Attention Models"


def headline(rows: list[LedgerRow]) -> str:
    """One sentence counting the overall verdicts, e.g. ``Of 10 claims: 6 supported, 1 mixed, ...``."""
    if not rows:
        return "No claims were evaluated."
    counts = collections.Counter(r.verdict for r in rows)
    order = ["supported", "supported as refined", "mixed", "contradicted", "refuted", "derived only",
             "refined only", "untested"]
    parts = [f"{counts[v]} {v}" for v in order if counts.get(v)]
    parts += [f"{n} {v}" for v, n in counts.items() if v not in order]
    return f"Of {len(rows)} claims: " + ", ".join(parts) + "."


def config_summary(config: dict[str, Any], limit: int = 8) -> str:
    """``k=v`` pairs of a run's scalar config fields (at most ``limit``)."""
    items = [(k, v) for k, v in config.items() if isinstance(v, (str, int, float, bool)) or v is None]
    text = ", ".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in items[:limit])
    return text + (", ..." if len(items) > limit else "")


def figure_caption(run: RunRecord, fig: Figure) -> str:
    """Caption of a figure: its name, the run's stage and kind, and the run's config."""
    title = fig.stem.replace("_", " ").replace("-", " ")
    return f"{title} — {STAGE_TITLES.get(run.stage, run.stage)} run {run.kind} ({config_summary(run.config)})"


def figures(results: StudyResults, stages: tuple[str, ...], dtap: bool) -> list[tuple[RunRecord, Figure]]:
    """Figures of the given stages, DTAP heatmaps or the others."""
    return [(r, f) for r in results.runs if r.stage in stages for f in r.figures if f.is_dtap == dtap]


def _duration(m: dict[str, Any]) -> str:
    try:
        s = _dt.datetime.fromisoformat(m["started"])
        e = _dt.datetime.fromisoformat(m["ended"])
        return f"{(e - s).total_seconds():.0f} s"
    except (KeyError, TypeError, ValueError):
        return ""


PROVENANCE_COLUMNS = ("run", "stage", "seed", "qkov", "commit", "started", "duration", "python", "numpy",
                      "torch", "sympy")


def provenance_rows(results: StudyResults) -> list[list[str]]:
    """One row per run from its ``manifest.json`` (versions, commit, seed, times)."""
    rows = []
    for r in results.runs:
        m = r.manifest
        seed = m.get("seed")
        if seed is None:
            seed = r.config.get("seed", "")
        rows.append([r.name, STAGE_TITLES.get(r.stage, r.stage), str(seed), str(m.get("qkov_version", "")),
                     str(m.get("git_commit") or "")[:10], str(m.get("started", "")), _duration(m),
                     str(m.get("python", "")), str(m.get("numpy") or ""), str(m.get("torch") or ""),
                     str(m.get("sympy") or "")])
    return rows


def stage_lines(results: StudyResults) -> list[str]:
    """Status of each stage: from the engine summary when present, else from the runs found."""
    lines = []
    summary = results.summary or {}
    if summary.get("stages"):
        for s in summary["stages"]:
            title = STAGE_TITLES.get(s["name"], s["name"])
            if s.get("state") == "not built":  # results of an older qkov
                lines.append(f"{title}: not built yet")
            elif s.get("state") == "not selected":
                lines.append(f"{title}: not run this time (not selected); {len(results.stage(s['name']))} "
                             "earlier runs found")
            else:
                planned = {r["name"] for r in summary.get("runs", []) if r.get("stage") == s["name"]}
                done = [r for r in results.stage(s["name"]) if not planned or r.name in planned]
                lines.append(f"{title}: {len(done)} of {s.get('n_runs', 0)} runs complete")
    else:
        for name in STAGE_ORDER:
            lines.append(f"{STAGE_TITLES[name]}: {len(results.stage(name))} runs")
    lines += [f"skipped {x}" for x in summary.get("skipped", [])]
    failed = [r for r in summary.get("runs", []) if r.get("status") == "failed"]
    lines += [f"failed {r['name']}: {r.get('error')}" for r in failed]
    if results.incomplete:
        lines.append(f"incomplete (not shown): {', '.join(results.incomplete)}")
    return lines


@dataclasses.dataclass(frozen=True)
class Display:
    """One equation of the derivation: a title, LaTeX source and presentation MathML."""

    title: str
    latex: str
    mathml: str
    check: str = ""


def displays(results: StudyResults) -> list[Display]:
    """The derivation's ``displays`` list."""
    d = results.derivation or {}
    out = []
    for e in d.get("displays", []) or []:
        if isinstance(e, dict):
            out.append(Display(str(e.get("title", "")), str(e.get("latex", "")), str(e.get("mathml", "")),
                               str(e.get("check", "") or "")))
    return out


def derivation_text(results: StudyResults) -> str:
    """A sentence on the derivation: its model and its ``summary`` (text, or counts of checks)."""
    d = results.derivation or {}
    parts = []
    if isinstance(d.get("model"), str):
        parts.append(f"Model: {d['model']}.")
    s = d.get("summary") or d.get("description") or ""
    if isinstance(s, dict) and "checks" in s and "passed" in s:
        text = f"{s['passed']} of {s['checks']} symbolic checks passed"
        if s.get("numeric_fallbacks"):
            text += f" ({s['numeric_fallbacks']} of them by a high-precision numeric check where simplification stalled)"
        parts.append(text + ".")
    elif isinstance(s, dict):
        parts.append("; ".join(f"{k.replace('_', ' ')}: {v}" for k, v in s.items()) + ".")
    elif s:
        parts.append(str(s))
    return " ".join(parts)
