"""The report as one self-contained HTML file: inline CSS, figures as data URIs, MathML equations.

No script, no external resource: the page renders offline in any current browser.

Nothing read from a results file reaches the page unescaped: text goes through :func:`_e`
(``html.escape`` with quotes), a verdict or status reaches a ``class`` attribute only through the
allow-list :data:`CLASS_OF` (anything else becomes ``v-unknown``), figures are embedded as base64
data URIs of files ``COMPLETE`` lists, and equations pass :func:`qkov.report.mathml.sanitise_mathml`.
"""

from __future__ import annotations

import base64
import datetime as _dt
import html
from pathlib import Path

from qkov.report import content
from qkov.report.collect import Figure, RunRecord, StudyResults
from qkov.report.ledger import STAGE_TITLES, LedgerRow, StageVerdict
from qkov.report.mathml import html_text, math_block  # html_text: formulas in prose, no raw ** or _
from qkov.report.real_table import REAL_SUMMARY, real_table
from qkov.report.tables import MetricTable, metric_tables

CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;max-width:1150px;margin:2em auto;padding:0 1em;
color:#1d1d1f;line-height:1.45}
h1{font-size:1.7em;margin-bottom:.2em}h2{margin-top:1.8em;border-bottom:1px solid #ddd;padding-bottom:.2em}
.meta{color:#666;font-size:.9em}.headline{font-size:1.1em;font-weight:600}
table{border-collapse:collapse;margin:.8em 0;font-size:.88em;width:100%}
th,td{border:1px solid #d0d0d0;padding:.35em .5em;vertical-align:top;text-align:left}
th{background:#f3f3f5}td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
.v{font-weight:600;white-space:nowrap}.v-supports,.v-holds{color:#0a6b2b}
.v-supports-in-part,.v-holds-in-part{color:#4f7f1a}
.v-contradicts,.v-contradicted,.v-refuted,.v-mixed{color:#b00020}
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
.v-inconclusive{color:#6a4c93}.v-insufficient,.v-unknown,.v-none,.v-empirical,.v-simulated{color:#777}
.v-unverified{color:#9a6200}
table#claims-table td.thumb{width:170px}table#claims-table td.thumb img{width:160px;border:1px solid #eee}
section.claim{border-top:2px solid #ccc;margin-top:1.6em;padding-top:.2em}
section.claim h3{margin:.4em 0 .2em}section.claim .where{color:#666;font-size:.88em}
ul.evidence li{margin:.35em 0}details{margin:.3em 0}details summary{cursor:pointer;color:#1f4e9a}
.stagecell{font-size:.86em}
td.realnum{font-variant-numeric:tabular-nums}table#real-vs-paper td{font-size:.95em}
"""


CLASS_OF: dict[str, str] = {v: "v-" + v.replace(" ", "-") for v in (
    "supports", "supports in part", "contradicts", "mixed", "inconclusive", "insufficient", "untested",
    "holds", "holds in part", "contradicted",
    "derived", "refined", "refuted", "empirical", "simulated", "unverified")}
"""The only values that become a CSS class (allow-list); anything else renders as ``v-unknown``."""


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def _badge(value: str) -> str:
    """A verdict/status as a coloured label: the class from :data:`CLASS_OF`, the text escaped."""
    cls = CLASS_OF.get(value, "v-unknown") if value else "v-none"
    return f'<span class="v {cls}">{_e(value or "—")}</span>'


PALETTE_COLOURS = 256
"""Colours of the page's copy of a figure: matplotlib's line plots and colour maps (256 entries) fit in them."""


def compact_png(png: bytes) -> bytes:
    """The page's copy of a PNG figure: quantized to an adaptive :data:`PALETTE_COLOURS`-colour palette.

    Matplotlib writes 8-bit RGBA with an opaque background; the palette copy is about a third
    of the bytes (4.3 MB -> 1.5 MB for the quick study's 36 figures), which keeps the page under
    3 MB. The run directory keeps the full-colour file; the page is a view. Bytes that Pillow
    cannot read, or a copy that comes out larger, are returned unchanged.
    """
    import io

    try:
        from PIL import Image

        with Image.open(io.BytesIO(png)) as im:
            if im.mode == "P":
                return png
            rgb = im.convert("RGB")
            pal = rgb.quantize(colors=PALETTE_COLOURS, method=Image.Quantize.MEDIANCUT)
            buf = io.BytesIO()
            pal.save(buf, "PNG", optimize=True)
    except Exception:  # noqa: BLE001 - an unreadable image is embedded as it is
        return png
    out = buf.getvalue()
    return out if len(out) < len(png) else png


def _img(fig: Figure, alt: str) -> str:
    if fig.png is not None:
        uri = "data:image/png;base64," + base64.b64encode(compact_png(fig.png.read_bytes())).decode()
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


_EMBEDDED: set[str] = set()
"""Figure ids already embedded in the page being rendered (each image is embedded once; reset per page)."""


def _fig_id(run, fig) -> str:
    """The page id of a figure: a hash of its bytes, so the same image (of one run or of two) is embedded once."""
    import hashlib

    path = fig.png if fig.png is not None else fig.svg
    try:
        return "fig-" + hashlib.sha256(path.read_bytes()).hexdigest()[:16]
    except (OSError, AttributeError):
        return "fig-" + "".join(c if c.isalnum() or c in "-_" else "_" for c in f"{run.name}-{fig.stem}")


def _figures(items, empty: str) -> str:
    """Each figure with its caption; a figure already on the page becomes a link to it (embedded once)."""
    if not items:
        return f"<p class=\"meta\">{_e(empty)}</p>"
    parts = []
    for run, fig in items:
        cap = content.figure_caption(run, fig)
        fid = _fig_id(run, fig)
        if fid in _EMBEDDED:
            parts.append(f'<p class="figref"><a href="#{_e(fid)}">See the figure above: {_e(cap)}</a></p>')
            continue
        _EMBEDDED.add(fid)
        aspect = _png_aspect(fig.png)
        cls = ' class="wide"' if aspect > 1.8 or aspect < 0.9 else ""  # multi-panel rows and grids: full width
        parts.append(f'<figure id="{_e(fid)}"{cls}>{_img(fig, cap)}<figcaption>{_e(cap)}</figcaption></figure>')
    return "\n".join(parts)


def figure2_grid_html(results: StudyResults) -> str:
    """The Figure 2 grid (:mod:`qkov.report.figure2_grid`), embedded once; a link to it on later calls."""
    from qkov.report.figure2_grid import CAPTION, STEM, figure2_grid_png

    if STEM in _EMBEDDED:
        return f'<p class="figref"><a href="#{STEM}">See Figure 2 (grid) above.</a></p>'
    png = figure2_grid_png(results)
    if png is None:
        return ""
    _EMBEDDED.add(STEM)
    uri = "data:image/png;base64," + base64.b64encode(compact_png(png)).decode()
    return (f'<figure id="{STEM}" class="wide"><img src="{uri}" alt="{_e(CAPTION)}">'
            f"<figcaption>{_e(CAPTION)}</figcaption></figure>")


FIGURE2_CLAIMS = ("sharpness-ratio", "sharpness-order")
"""The claims under which the Figure 2 grid is shown (first one embeds it, the other links to it)."""


def _stage_cell(sv: StageVerdict) -> str:
    if not sv.verdict:
        return '<td class="stagecell"><span class="v v-none">—</span></td>'
    return f'<td class="stagecell">{_badge(sv.verdict)}<div class="ev">{_e(sv.line)}</div></td>'


VERDICT_NOTE = ("Outcomes: holds / holds in part (a narrower scope, stated) / contradicted (any contradicting "
                "evidence: each line is named in the headline) / inconclusive / insufficient (evidence that cannot "
                "discriminate: 0 comparisons, ties, levels not reached, an untrained model) / untested. Evidence "
                "verdicts: supports / supports in part / contradicts / inconclusive / insufficient; 'mixed' (older "
                "runs) counts as contradicts. One rule (qkov.study.rules) judges each run's evidence; any "
                "contradiction makes a stage and a claim contradicted.")


def headline_html(rows: list[LedgerRow]) -> str:
    """The headline: the outcome counts, then every contradicting line as a list item."""
    counts, lines = content.headline_parts(rows)
    open_ = content.undecided_lines(rows)
    items = "".join(f"<li>{_e(x)}</li>" for x in lines)
    undecided = "".join(f"<li>{_e(x)}</li>" for x in open_)
    return (f'<p class="headline">{_e(counts)}</p>'
            + (f'<p class="headline">Evidence against ({len(lines)} lines):</p><ul class="against">{items}</ul>'
               if lines else "")
            + (f'<p class="headline">{_e(content.UNDECIDED_TITLE)} ({len(open_)} lines):</p><ul class="undecided">'
               f'{undecided}</ul>' if open_ else ""))


def first_screen(rows: list[LedgerRow], results: StudyResults | None = None) -> str:
    """The first screen: one row per claim with the paper's number beside qkov's (in the paper's units), the
    verdict (named by setting when the settings disagree), the scope and whether the full preset is expected to
    change it; every cell whole (the table wraps, nothing is cut)."""
    head = "".join(f"<th>{_e(c)}</th>" for c in content.CLAIM_LINE_COLUMNS)
    body = []
    for c in content.claim_lines(rows, results):
        against = f" <span class=\"meta\">({c.n_against} lines against)</span>" if c.n_against > 1 else ""
        caveat = f'<div class="ev">caveat: {_e(c.caveat)}</div>' if c.caveat else ""
        by_setting = f'<div class="ev">{_e(c.verdict)}</div>' if c.verdict and c.verdict != c.outcome else ""
        body.append(f'<tr id="row-{_e(c.id)}"><td><a href="#claim-{_e(c.id)}"><b>{_e(c.id)}</b></a>'
                    f'<div class="ev">{_e(c.wording)}</div></td>'
                    f"<td class=\"stagecell\">{_e(c.paper) or 'no number in the paper'}</td>"
                    f"<td class=\"stagecell\">{_e(c.qkov) or '—'}{caveat}</td>"
                    f"<td>{_badge(c.outcome)}{against}{by_setting}</td>"
                    f"<td class=\"stagecell\">{_e(c.scope) or '—'}</td>"
                    f"<td class=\"stagecell\">{_e(c.full_preset) or '—'}</td></tr>")
    return (f'<table id="claims-table"><caption>{_e(VERDICT_NOTE)}</caption><thead><tr>{head}</tr></thead>'
            f"<tbody>{''.join(body)}</tbody></table>")


def claims_table(rows: list[LedgerRow]) -> str:
    """Per stage: one row per claim, its outcome, each stage's verdict with one line of numbers, a figure."""
    head = ("<tr><th>claim</th><th>outcome</th>" + "".join(f"<th>{_e(t)}</th>" for t in STAGE_TITLES.values())
            + "<th>headline figure</th></tr>")
    body = []
    for r in rows:
        thumb = ""
        if r.headline is not None:   # a link, not a second copy of the image (the section embeds it)
            run, fig = r.headline
            thumb = f'<a href="#claim-{_e(r.id)}">{_e(fig.stem.replace("_", " "))}</a>'
        body.append(f'<tr id="stage-row-{_e(r.id)}"><td><a href="#claim-{_e(r.id)}"><b>{_e(r.id)}</b></a>'
                    f'<div class="ev">{_e(r.claim)}</div></td><td>{_badge(r.outcome)}</td>'
                    + "".join(_stage_cell(r.stages[s]) for s in STAGE_TITLES) + f'<td class="thumb">{thumb}</td></tr>')
    cap = "Each stage's combined verdict with one line of numbers (a contradiction first); — = not tested."
    return (f'<table id="stage-table"><caption>{_e(cap)}</caption><thead>{head}</thead>'
            f"<tbody>{''.join(body)}</tbody></table>")


def claim_section(r: LedgerRow, results: StudyResults | None = None) -> str:
    """One claim: wording, the derivation's statements, figures with captions, evidence lines, long text folded."""
    parts = [f'<section class="claim" id="claim-{_e(r.id)}"><h3>{_e(r.id)} {_badge(r.outcome)}</h3>',
             f"<p>{_e(r.claim)} <span class=\"where\">({_e(r.where)})</span></p>"]
    if r.statements:
        parts.append("<ul class=\"statements\">" + "".join(
            f"<li>{_badge(st)} {html_text(text)}</li>" for st, text in r.statements) + "</ul>")
    elif r.status:
        parts.append(f"<p>Derivation: {_badge(r.status)}</p>")
    if r.derived:
        parts.append(f"<details><summary>what was derived</summary><p>{html_text(r.derived)}</p></details>")
    grid = figure2_grid_html(results) if results is not None and r.id in FIGURE2_CLAIMS else ""
    parts.append(grid + _figures([(run, f) for run, f in r.figures if not (grid and f.stem == "figure2_dtap")],
                                 "" if grid else "No figure for this claim in these runs."))
    lines = []
    for stage, run, e in r.ordered_evidence:
        more = f"<details><summary>details</summary><p>{_e(e.text)}</p></details>" if e.text else ""
        extra = "".join(f'<div class="ev">{k}: {_e(v)}</div>' for k, v in (("number", e.number), ("scope", e.scope),
                                                                          ("caveat", e.caveat)) if v)
        lines.append(f"<li>{_badge(e.verdict)} <b>{_e(STAGE_TITLES.get(stage, stage))}</b> "
                     f"<span class=\"meta\">run {_e(run.name)}</span>: {_e(e.numbers)}{extra}{more}</li>")
    parts.append(f'<ul class="evidence">{"".join(lines)}</ul>' if lines else '<p class="meta">No evidence yet.</p>')
    return "".join(parts) + "</section>"


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


REAL_NOTE = ("Paper: its number as spec/PAPER.md records it (source per row; none = the paper gives no number "
             "there). qkov: the real-data summary's groups (dataset x configuration), read where the verdict reads "
             "them. The verdict reads one pre-declared comparison per group (claim ratio vs 1, relevant mass and the "
             "task metric, per-seed differences, 95 % t-interval over seeds, each test one-sided 2.5 %, MDE against "
             "the null tested at power 0.8; qkov.study.real_inference); the other metrics are exploratory.")


def real_data_html(results: StudyResults) -> str:
    """The real-data section's opening: per dataset and metric the paper's value beside qkov's at the same ratios
    and the comparison the verdict read (:func:`qkov.report.real_table.real_table`), then one verdict line per
    group naming the comparison, n, the interval and the MDE."""
    from qkov.report.real_table import COLUMNS

    rows, verdicts, problems = real_table(results)
    if not rows and not problems:
        return '<p class="meta">No real-data summary in these runs (no completed real-data runs).</p>'
    head = "".join(f"<th>{_e(c)}</th>" for c in COLUMNS)
    body, prev = [], None
    for r in rows:
        src = f'<div class="ev">{_e(r.source)}</div>' if r.source else ""
        where = f'<div class="ev">{_e(r.group)}: {_e(r.setting)}</div>' if r.group != prev else ""
        prev = r.group
        body.append(f"<tr><td><b>{_e(r.dataset)}</b>{where}</td>"
                    f"<td>{_e(r.metric)}</td><td>{_e(r.paper)}{src}</td><td class=\"realnum\">{_e(r.qkov)}</td>"
                    f"<td class=\"realnum\">{_e(r.comparison)}</td><td>{_badge(r.verdict)}</td></tr>")
    lines = "".join(f"<li>{_badge(v.verdict)} <b>{_e(v.dataset)}</b> <span class=\"meta\">({_e(v.group)})</span>: "
                    f"read {_e(v.reads)}"
                    + (f"<details><summary>the rule's line</summary><p>{_e(v.line)}</p></details>" if v.line else "")
                    + "</li>" for v in verdicts)
    bad = "".join(f"<li>{_e(x)}</li>" for x in problems)
    return (f'<div class="scroll"><table id="real-vs-paper"><caption>{_e(REAL_NOTE)}</caption><thead><tr>{head}'
            f"</tr></thead><tbody>{''.join(body)}</tbody></table></div>"
            f'<h3>Real-data verdict per dataset</h3><ul class="evidence" id="real-verdicts">{lines}{bad}</ul>')


def render_html(results: StudyResults, rows: list[LedgerRow]) -> str:
    """The whole report page."""
    now = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    _EMBEDDED.clear()
    stages = "".join(f"<li>{_e(x)}</li>" for x in content.stage_lines(results))
    eqs = "".join(f'<div class="eq"><h4>{html_text(d.title)}</h4>{math_block(d.mathml, d.latex)}'
                  + (f'<div class="ev">verified by: {_e(d.check)}</div>' if d.check else "") + "</div>"
                  for d in content.displays(results)) or '<p class="meta">No derivation run yet.</p>'
    dtext = content.derivation_text(results)
    prov = "".join("<tr>" + "".join(f"<td>{_e(x)}</td>" for x in row) + "</tr>"
                   for row in content.provenance_rows(results))
    prov_head = "".join(f"<th>{_e(c)}</th>" for c in content.PROVENANCE_COLUMNS)
    cluster = (results.summary or {}).get("cluster", "")
    others = content.other_figures(results, rows)
    real = results.stage("real")
    sections = [
        f"<h1>qkov reproduction report</h1><p class=\"meta\">Built {now} from {_e(results.out.resolve())}"
        f"{' — cluster ' + _e(cluster) if cluster else ''}. {_e(content.FIRST_SCREEN)}</p>",
        f'<h2 id="claims">{content.section_title("claims")}</h2>{first_screen(rows, results)}',
        f"{headline_html(rows)}<p>{_e(content.INTRO).replace('*' + content.PAPER_TITLE + '*', '<em>' + content.PAPER_TITLE + '</em>')}"
        "</p>",
        f'<ul class="stages">{stages}</ul>',
        f'<details><summary>each stage\'s verdict</summary>{claims_table(rows)}</details>',
        f'<h2 id="per-claim">{content.section_title("per-claim")}</h2>' + "\n".join(claim_section(r, results) for r in rows),
        f'<h2 id="derivation">{content.section_title("derivation")}</h2>' + (f"<p>{_e(dtext)}</p>" if dtext else "") + eqs,
        f'<h2 id="real-data">{content.section_title("real-data")}</h2>' + real_data_html(results)
        + "<details><summary>per-run metrics of the real-data runs (configuration columns)</summary>"
        + _tables([r for r in real if r.kind != REAL_SUMMARY], "real data") + "</details>",
        f'<h2 id="other-figures">{content.section_title("other-figures")}</h2>'
        + (f"<details><summary>{len(others)} figures not tied to a claim's evidence</summary>"
           + _figures(others, "") + "</details>" if others else '<p class="meta">None.</p>'),
        f'<h2 id="metrics">{content.section_title("metrics")}</h2><details><summary>tables</summary>'
        + _tables(results.stage("simulate"), "simulation") + _tables(results.stage("synthetic"), "synthetic training")
        + "</details>",
        f'<h2 id="provenance">{content.section_title("provenance")}</h2><details><summary>{len(results.runs)} runs</summary>'
        f'<div class="scroll"><table id="provenance-table"><thead><tr>{prov_head}</tr></thead>'
        f"<tbody>{prov}</tbody><caption>Each run's manifest.json; every run directory lies under "
        f"{_e(results.out / 'runs')}.</caption></table></div></details>",
    ]
    return ("<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<title>qkov reproduction report</title><style>{CSS}</style></head><body>"
            + "\n".join(sections) + "</body></html>\n")

