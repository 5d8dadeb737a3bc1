"""The report's Markdown twin (``report.md``): same sections, figures linked relative to the file."""

from __future__ import annotations

import datetime as _dt
from pathlib import Path

from qkov.report import content
from qkov.report.collect import Figure, RunRecord, StudyResults
from qkov.report.ledger import EMPIRICAL_STAGES, LedgerRow
from qkov.report.tables import metric_tables


def _cell(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def _table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(_cell(h) for h in header) + " |", "|" + " --- |" * len(header)]
    lines += ["| " + " | ".join(_cell(x) for x in row) + " |" for row in rows]
    return "\n".join(lines)


def _figures(items: list[tuple[RunRecord, Figure]], out: Path, empty: str) -> str:
    if not items:
        return f"_{empty}_"
    parts = []
    for run, fig in items:
        f = fig.png or fig.svg
        rel = f.relative_to(out).as_posix() if f is not None else ""
        cap = content.figure_caption(run, fig)
        parts.append(f"![{_cell(cap)}]({rel})\n\n*{_cell(cap)}*")
    return "\n\n".join(parts)


def _stage(row: LedgerRow, stage: str) -> str:
    sv = row.stages[stage]
    if not sv.verdict:
        return "—"
    return sv.verdict + ("" if not sv.evidence else ": " + " ".join(sv.evidence))


def _metric_tables(runs: list[RunRecord], what: str) -> str:
    tables = metric_tables(runs)
    if not tables:
        return f"_No {what} metrics._"
    parts = []
    for t in tables:
        rows = [labels + [str(n)] + [cells[c].text() if c in cells else "" for c in t.columns]
                for labels, cells, n in t.rows]
        parts.append(f"### {t.kind}\n\n" + _table(t.label_fields + ["n"] + t.columns, rows)
                     + f"\n\n*{what}: mean ± sample std over seeds, run kind {t.kind}.*")
    return "\n\n".join(parts)


def render_markdown(results: StudyResults, rows: list[LedgerRow]) -> str:
    """The whole report as Markdown (equations as ``$$ LaTeX $$``)."""
    out = results.out
    now = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    ledger = _table(["paper's claim", "derived"] + [t for _, t in EMPIRICAL_STAGES] + ["verdict"],
                    [[f"**{r.id}**: {r.claim}", (r.status + (": " + r.derived if r.derived else "")) or "—"]
                     + [_stage(r, s) for s, _ in EMPIRICAL_STAGES] + [f"**{r.verdict}**"] for r in rows])
    eqs = "\n\n".join(f"**{d.title}**\n\n$$\n{d.latex}\n$$" + (f"\n\n_verified by: {d.check}_" if d.check else "")
                      for d in content.displays(results)) \
        or "_No derivation run yet._"
    dtext = content.derivation_text(results)
    parts = [
        "# qkov reproduction report",
        f"_Built {now} from `{out.resolve()}`._",
        content.INTRO,
        f"**{content.headline(rows)}**",
        "\n".join(f"- {x}" for x in content.stage_lines(results)),
        "## 1. Claims ledger", ledger,
        "*Overall verdict: mixed if any stage is mixed or stages disagree; refuted if the derivation refutes the "
        "claim and no stage supports it; contradicted / supported if every tested stage contradicts / supports "
        "it; otherwise derived only / refined only / untested.*",
        "## 2. Derivation", dtext, eqs,
        "## 3. Theory versus training",
        _figures(content.figures(results, ("simulate", "synthetic"), dtap=False), out,
                 "No simulation or synthetic-training figures yet."),
        "## 4. DTAP heatmaps",
        _figures(content.figures(results, ("synthetic", "real", "simulate", "other"), dtap=True), out,
                 "No DTAP heatmaps yet."),
        "## 5. Real data", _metric_tables(results.stage("real"), "real data"),
        _figures(content.figures(results, ("real",), dtap=False), out, "No real-data figures."),
        "## 6. Simulation and synthetic metrics",
        _metric_tables(results.stage("simulate"), "simulation"),
        _metric_tables(results.stage("synthetic"), "synthetic training"),
        "## 7. Run provenance", _table(list(content.PROVENANCE_COLUMNS), content.provenance_rows(results)),
    ]
    return "\n\n".join(p for p in parts if p) + "\n"
