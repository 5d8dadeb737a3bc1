"""The report's Markdown twin (``report.md``): the same claim table and per-claim sections, figures
linked relative to the file.

Every string from a results file goes through :func:`_md`: one line, HTML-escaped (so no raw
``<script>`` or ``<img onerror>`` reaches a renderer that passes HTML through) and with Markdown's
link, emphasis, code and table characters backslash-escaped; a verdict is printed only when it is one
of the registry's values. Figure links are percent-encoded paths of files ``COMPLETE`` lists.
"""

from __future__ import annotations

import datetime as _dt
import html
import re
from pathlib import Path
from urllib.parse import quote

from qkov.report.mathml import plain_powers  # no raw ** in formulas
from qkov.report import content
from qkov.report.collect import StudyResults
from qkov.report.ledger import STAGE_TITLES, LedgerRow
from qkov.report.real_table import COLUMNS as REAL_COLUMNS, REAL_SUMMARY, real_table
from qkov.report.tables import metric_tables
from qkov.report.render_html import REAL_NOTE, VERDICT_NOTE
from qkov.study.claims import VERDICTS

_MD_SPECIAL = re.compile(r"([\\`*_\[\]()!|{}#~])")
_SHOWN = set(VERDICTS) | {"untested", "derived", "refined", "refuted", "empirical", "simulated", "unverified", "holds",
                          "holds in part", "contradicted"}


def _md(text: object) -> str:
    """One line of inert Markdown text: whitespace collapsed, HTML escaped, Markdown syntax escaped."""
    flat = " ".join(str(text).split())
    return _MD_SPECIAL.sub(r"\\\1", html.escape(flat, quote=False))


def _v(value: str) -> str:
    """A verdict or status: printed only if allowed, else ``unknown``."""
    return (value if value in _SHOWN else "unknown") if value else "—"


def _table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def _link(path: Path | None, out: Path) -> str:
    return quote(path.relative_to(out).as_posix()) if path is not None else ""


def _figures(items, out: Path) -> str:
    parts = []
    for run, fig in items:
        cap = _md(content.figure_caption(run, fig))
        parts.append(f"![{cap}]({_link(fig.png or fig.svg, out)})\n\n*{cap}*")
    return "\n\n".join(parts)


def _metric_tables(runs, what: str) -> str:
    tables = metric_tables(runs)
    if not tables:
        return f"_No {what} metrics._"
    parts = []
    for t in tables:
        rows = [[_md(x) for x in labels] + [str(n)] + [_md(cells[c].text()) if c in cells else "" for c in t.columns]
                for labels, cells, n in t.rows]
        parts.append(f"### {_md(t.kind)}\n\n" + _table([_md(x) for x in t.label_fields + ["n"] + t.columns], rows)
                     + f"\n\n*{what}: mean ± sample std over seeds, run kind {_md(t.kind)}.*")
    return "\n\n".join(parts)


def _claim_section(r: LedgerRow, out: Path) -> str:
    parts = [f"### {r.id}: {_v(r.outcome)}", f"{_md(r.claim)} _({_md(r.where)})_"]
    if r.statements:
        parts.append("\n".join(f"- **{_v(st)}**: {_md(plain_powers(text))}" for st, text in r.statements))
    elif r.status:
        parts.append(f"Derivation: **{_v(r.status)}**")
    if r.figures:
        parts.append(_figures(list(r.figures), out))
    lines = [f"- **{_v(e.verdict)}** ({STAGE_TITLES.get(stage, stage)}, run {_md(run.name)}): {_md(e.numbers)}"
             + "".join(f" _{k}: {_md(v)}_" for k, v in (("scope", e.scope), ("caveat", e.caveat)) if v)
             + (f"\n  <details><summary>details</summary>{_md(e.text)}</details>" if e.text else "")
             for stage, run, e in r.ordered_evidence]
    parts.append("\n".join(lines) if lines else "_No evidence yet._")
    return "\n\n".join(parts)


def _real_data(results: StudyResults) -> str:
    """The real-data section's opening (as :func:`qkov.report.render_html.real_data_html`): the paper-vs-qkov
    table, then one verdict line per group."""
    rows, verdicts, problems = real_table(results)
    if not rows and not problems:
        return "_No real-data summary in these runs (no completed real-data runs)._"
    first = {r.group: i for i, r in reversed(list(enumerate(rows)))}   # the group's first row names its setting
    table = _table(list(REAL_COLUMNS),
                   [[f"**{_md(r.dataset)}**" + (f" ({_md(r.group)}: {_md(r.setting)})" if first[r.group] == i else ""),
                     _md(r.metric),
                     _md(r.paper) + (f" ({_md(r.source)})" if r.source else ""), _md(r.qkov), _md(r.comparison),
                     f"**{_v(r.verdict)}**"] for i, r in enumerate(rows)])
    lines = [f"- **{_v(v.verdict)}** {_md(v.dataset)} ({_md(v.group)}): read {_md(v.reads)}"
             + (f"; the rule's line: {_md(v.line)}" if v.line else "") for v in verdicts]
    lines += [f"- {_md(x)}" for x in problems]
    return (table + f"\n\n*{_md(REAL_NOTE)}*\n\n### Real-data verdict per dataset\n\n" + "\n".join(lines))


def _headline(rows: list[LedgerRow]) -> str:
    counts, lines = content.headline_parts(rows)
    open_ = content.undecided_lines(rows)
    return (f"**{_md(counts)}**" + (f"\n\n**Evidence against ({len(lines)} lines):**\n\n"
                                   + "\n".join(f"- {_md(x)}" for x in lines) if lines else "")
            + (f"\n\n**{_md(content.UNDECIDED_TITLE)} ({len(open_)} lines):**\n\n" + "\n".join(f"- {_md(x)}" for x in open_)
               if open_ else ""))


def render_markdown(results: StudyResults, rows: list[LedgerRow]) -> str:
    """The whole report as Markdown (equations as ``$$ LaTeX $$``)."""
    out = results.out
    now = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    first = _table(list(content.CLAIM_LINE_COLUMNS),
                   [[f"[{c.id}](#{c.id})", _md(c.paper) or "no number in the paper",
                     (_md(c.qkov) or "—") + (f"; caveat: {_md(c.caveat)}" if c.caveat else ""),
                     f"**{_v(c.outcome)}**" + (f" ({c.n_against} lines against)" if c.n_against > 1 else "")
                     + (f": {_md(c.verdict)}" if c.verdict and c.verdict != c.outcome else ""),
                     _md(c.scope) or "—", _md(c.full_preset) or "—"]
                    for c in content.claim_lines(rows, results)])
    table = _table(["claim", "outcome"] + list(STAGE_TITLES.values()),
                   [[f"[{r.id}](#{r.id})", f"**{_v(r.outcome)}**"]
                    + [(f"{_v(sv.verdict)}: {_md(sv.line)}" if sv.verdict else "—")
                       for sv in (r.stages[s] for s in STAGE_TITLES)] for r in rows])
    eqs = "\n\n".join(f"**{_md(d.title)}**\n\n```math\n{_md_math(d.latex)}\n```"
                      + (f"\n\n_verified by: {_md(d.check)}_" if d.check else "")
                      for d in content.displays(results)) or "_No derivation run yet._"
    parts = [
        "# qkov reproduction report",
        f"_Built {now} from {_md(out.resolve())}. {_md(content.FIRST_SCREEN)}_",
        f"## {content.section_title('claims')}", first, f"*{_md(VERDICT_NOTE)}*",
        _headline(rows),
        content.INTRO,
        "\n".join(f"- {_md(x)}" for x in content.stage_lines(results)),
        "### Each stage's verdict", table,
        f"## {content.section_title('per-claim')}",
        "\n\n".join(_claim_section(r, out) for r in rows),
        f"## {content.section_title('derivation')}", _md(content.derivation_text(results)), eqs,
        f"## {content.section_title('real-data')}", _real_data(results),
        "### Per-run metrics of the real-data runs (configuration columns)",
        _metric_tables([r for r in results.stage("real") if r.kind != REAL_SUMMARY], "real data"),
        f"## {content.section_title('other-figures')}",
        _figures(content.other_figures(results, rows), out) or "_None._",
        f"## {content.section_title('metrics')}",
        _metric_tables(results.stage("simulate"), "simulation"),
        _metric_tables(results.stage("synthetic"), "synthetic training"),
        f"## {content.section_title('provenance')}", _table(list(content.PROVENANCE_COLUMNS),
                                       [[_md(x) for x in row] for row in content.provenance_rows(results)]),
    ]
    return "\n\n".join(p for p in parts if p) + "\n"


def _md_math(latex: str) -> str:
    """LaTeX for a fenced ``math`` block (GitHub renders it as math; elsewhere it is literal code, so nothing in
    it is Markdown or HTML): one line, backticks removed so it cannot close the fence."""
    return " ".join(str(latex).replace("`", "").split())
