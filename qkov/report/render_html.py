"""The report as one self-contained HTML file: inline CSS, figures as data URIs, MathML equations.

No script, no external resource: the page renders offline in any current browser.
"""

from __future__ import annotations

import base64
import datetime as _dt
import html
from pathlib import Path

from qkov.report import content
from qkov.report.collect import Figure, RunRecord, StudyResults
from qkov.report.ledger import EMPIRICAL_STAGES, LedgerRow
from qkov.report.mathml import math_block
from qkov.report.tables import MetricTable, metric_tables

CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;max-width:1150px;margin:2em auto;padding:0 1em;
color:#1d1d1f;line-height:1.45}
h1{font-size:1.7em;margin-bottom:.2em}h2{margin-top:1.8em;border-bottom:1px solid #ddd;padding-bottom:.2em}
.meta{color:#666;font-size:.9em}.headline{font-size:1.1em;font-weight:600}
table{border-collapse:collapse;margin:.8em 0;font-size:.88em;width:100%}
th,td{border:1px solid #d0d0d0;padding:.35em .5em;vertical-align:top;text-align:left}
th{background:#f3f3f5}td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
.v{font-weight:600;white-space:nowrap}.v-supports,.v-supported,.v-supported-as-refined{color:#0a6b2b}
.v-contradicts,.v-contradicted,.v-refuted{color:#b00020}.v-mixed{color:#9a6200}
.v-derived,.v-derived-only,.v-refined,.v-refined-only{color:#1f4e9a}.v-na,.v-untested{color:#888}
.ev{color:#444;font-size:.92em;margin-top:.2em}
figure{display:inline-block;vertical-align:top;width:47%;margin:.6em 1%}figure.wide{width:98%}
.scroll{overflow-x:auto;max-width:100%}
figure img{width:100%;height:auto;border:1px solid #eee}
figcaption{font-size:.85em;color:#444}
.eq{margin:.6em 0 1em}.eq h4{margin:.2em 0;font-weight:500;color:#333}
math[display=block]{font-size:1.15em;margin:.3em 0}
pre.latex{background:#f7f7f7;padding:.4em;overflow-x:auto}
caption{caption-side:bottom;text-align:left;color:#555;font-size:.85em;padding-top:.3em}
ul.stages li{margin:.1em 0}
"""


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def _vclass(verdict: str) -> str:
    return "v v-" + (verdict.replace("/", "").replace(" ", "-") or "none")


def _img(fig: Figure, alt: str) -> str:
    if fig.png is not None:
        uri = "data:image/png;base64," + base64.b64encode(fig.png.read_bytes()).decode()
    elif fig.svg is not None:
        uri = "data:image/svg+xml;base64," + base64.b64encode(fig.svg.read_bytes()).decode()
    else:  # pragma: no cover - a Figure always has one file
        return ""
    return f'<img src="{uri}" alt="{_e(alt)}">'


def _png_aspect(path: Path | None) -> float:
    """Width / height of a PNG from its IHDR header (1.0 when unreadable)."""
    if path is None:
        return 1.0
    head = path.read_bytes()[:24]
    if head[:8] != b"\x89PNG\r\n\x1a\n":
        return 1.0
    w, h = int.from_bytes(head[16:20], "big"), int.from_bytes(head[20:24], "big")
    return w / h if h else 1.0


def _figures(items: list[tuple[RunRecord, Figure]], empty: str) -> str:
    if not items:
        return f"<p class=\"meta\">{_e(empty)}</p>"
    parts = []
    for run, fig in items:
        cap = content.figure_caption(run, fig)
        cls = ' class="wide"' if _png_aspect(fig.png) > 1.8 else ""  # multi-panel rows get the full width
        parts.append(f"<figure{cls}>{_img(fig, cap)}<figcaption>{_e(cap)}</figcaption></figure>")
    return "\n".join(parts)


def _stage_cell(row: LedgerRow, stage: str) -> str:
    sv = row.stages[stage]
    if not sv.verdict:
        return '<td><span class="v v-untested">—</span></td>'
    ev = "".join(f'<div class="ev">{_e(x)}</div>' for x in sv.evidence)
    return f'<td><span class="{_vclass(sv.verdict)}">{_e(sv.verdict)}</span>{ev}</td>'


def ledger_table(rows: list[LedgerRow]) -> str:
    """The claims ledger as an HTML table (``id="ledger"``)."""
    head = ("<tr><th>paper's claim</th><th>derived</th>"
            + "".join(f"<th>{_e(t)}</th>" for _, t in EMPIRICAL_STAGES) + "<th>verdict</th></tr>")
    body = []
    for r in rows:
        derived = (f'<span class="{_vclass(r.status)}">{_e(r.status)}</span>' if r.status
                   else '<span class="v v-untested">—</span>')
        if r.derived:
            derived += f'<div class="ev">{_e(r.derived)}</div>'
        body.append(
            f'<tr id="claim-{_e(r.id)}"><td><b>{_e(r.id)}</b><div class="ev">{_e(r.claim)}</div></td>'
            f"<td>{derived}</td>" + "".join(_stage_cell(r, s) for s, _ in EMPIRICAL_STAGES)
            + f'<td><span class="{_vclass(r.verdict)}">{_e(r.verdict)}</span></td></tr>')
    cap = ("Stage verdicts: supports / contradicts / mixed / n/a, — = not tested. Overall verdict: mixed if any "
           "stage is mixed or stages disagree; refuted if the derivation refutes the claim and no stage supports "
           "it; contradicted / supported if every tested stage contradicts / supports it ('as refined' when the "
           "derivation refined the claim); otherwise derived only / refined only / untested.")
    return (f'<table id="ledger"><caption>{_e(cap)}</caption><thead>{head}</thead>'
            f"<tbody>{''.join(body)}</tbody></table>")


def metric_table_html(t: MetricTable, caption: str) -> str:
    """One metric table, cells ``mean ± std``."""
    head = "".join(f"<th>{_e(f)}</th>" for f in t.label_fields) + "<th>n</th>" + "".join(
        f"<th>{_e(c)}</th>" for c in t.columns)
    body = []
    for labels, cells, n in t.rows:
        tds = "".join(f"<td>{_e(x)}</td>" for x in labels) + f'<td class="num">{n}</td>'
        tds += "".join(f'<td class="num">{_e(cells[c].text()) if c in cells else ""}</td>' for c in t.columns)
        body.append(f"<tr>{tds}</tr>")
    more = f" ({t.omitted_columns} more metrics in the runs' JSON files.)" if t.omitted_columns else ""
    return (f'<div class="scroll"><table class="metrics"><caption>{_e(caption + more)}</caption><thead><tr>{head}'
            f"</tr></thead><tbody>{''.join(body)}</tbody></table></div>")


def _tables(runs: list[RunRecord], what: str) -> str:
    tables = metric_tables(runs)
    if not tables:
        return f'<p class="meta">No {_e(what)} metrics.</p>'
    return "\n".join(
        f"<h3>{_e(t.kind)}</h3>" + metric_table_html(
            t, f"{what}: mean ± sample std over seeds (n runs per row) for run kind {t.kind}.") for t in tables)


def render_html(results: StudyResults, rows: list[LedgerRow]) -> str:
    """The whole report page."""
    now = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    stages = "".join(f"<li>{_e(x)}</li>" for x in content.stage_lines(results))
    eqs = "".join(f'<div class="eq"><h4>{_e(d.title)}</h4>{math_block(d.mathml, d.latex)}'
                  + (f'<div class="ev">verified by: {_e(d.check)}</div>' if d.check else "") + "</div>"
                  for d in content.displays(results)) or '<p class="meta">No derivation run yet.</p>'
    dtext = content.derivation_text(results)
    theory_rows = "".join(
        f"<tr><td>{_e(r.id)}</td><td>{_e(r.status)}</td><td>{_e(r.section)}</td><td>{_e(r.derived)}</td></tr>"
        for r in rows if r.status)
    theory_table = (f"<table><thead><tr><th>claim</th><th>status</th><th>section</th><th>what was derived</th>"
                    f"</tr></thead><tbody>{theory_rows}</tbody></table>") if theory_rows else ""
    prov = "".join("<tr>" + "".join(f"<td>{_e(x)}</td>" for x in row) + "</tr>"
                   for row in content.provenance_rows(results))
    prov_head = "".join(f"<th>{_e(c)}</th>" for c in content.PROVENANCE_COLUMNS)
    cluster = (results.summary or {}).get("cluster", "")
    real = results.stage("real")
    sections = [
        f"<h1>qkov reproduction report</h1><p class=\"meta\">Built {now} from {_e(results.out.resolve())}"
        f"{' — cluster ' + _e(cluster) if cluster else ''}.</p>",
        f"<p>{_e(content.INTRO).replace('*' + content.PAPER_TITLE + '*', '<em>' + content.PAPER_TITLE + '</em>')}</p><p class=\"headline\">{_e(content.headline(rows))}</p>",
        f'<ul class="stages">{stages}</ul>',
        f'<h2 id="ledger-section">1. Claims ledger</h2>{ledger_table(rows)}',
        f'<h2 id="derivation">2. Derivation</h2>' + (f"<p>{_e(dtext)}</p>" if dtext else "") + eqs + theory_table,
        '<h2 id="theory-vs-training">3. Theory versus training</h2>'
        "<p>Simulated gradient flow of the reduced equations and trained models, side by side.</p>"
        + _figures(content.figures(results, ("simulate", "synthetic"), dtap=False), "No simulation or "
                   "synthetic-training figures yet."),
        '<h2 id="dtap">4. DTAP heatmaps</h2><p>Each cell: percentage of test instances by attention mass on the '
        "relevant tokens (x) and probability of the true token (y).</p>"
        + _figures(content.figures(results, ("synthetic", "real", "simulate", "other"), dtap=True),
                   "No DTAP heatmaps yet."),
        '<h2 id="real-data">5. Real data</h2>' + _tables(real, "real data")
        + _figures(content.figures(results, ("real",), dtap=False), "No real-data figures."),
        '<h2 id="metrics">6. Simulation and synthetic metrics</h2>'
        + _tables(results.stage("simulate"), "simulation") + _tables(results.stage("synthetic"), "synthetic training"),
        f'<h2 id="provenance">7. Run provenance</h2><div class="scroll"><table id="provenance-table"><thead><tr>{prov_head}</tr></thead>'
        f"<tbody>{prov}</tbody><caption>Each run's manifest.json; every run directory lies under "
        f"{_e(results.out / 'runs')}.</caption></table></div>",
    ]
    return ("<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<title>qkov reproduction report</title><style>{CSS}</style></head><body>"
            + "\n".join(sections) + "</body></html>\n")


def write_html(path: Path, text: str) -> Path:
    """Write the page atomically."""
    from qkov.core.runstore import atomic_write_bytes

    return atomic_write_bytes(path, text.encode("utf-8"))
