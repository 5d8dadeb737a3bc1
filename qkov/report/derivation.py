"""The derivation report: Markdown, HTML (offline MathML) and LaTeX views over the derive payload.

Every displayed equation comes from the payload's ``displays`` (sympy's LaTeX and presentation
MathML); each is followed by the check that established it (name, method, outcome). The HTML is
one self-contained file: no scripts, no fonts or styles from a network; Chromium renders MathML.
"""

from __future__ import annotations

import html
import re
from typing import Any

_FROM_SUPERSCRIPT = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻⁽⁾ⁿ", "0123456789+-()n")

SECTIONS = [
    ("symmetric-subspace", "1. The symmetric subspace and the fixed lines"),
    ("reduced", "2. Reduced ODEs, conserved quantities and implicit rescaling"),
    ("asymptotics", "3. Asymptotics"),
    ("ordering", "4. Sharpness ordering at matched loss"),
    ("paper", "5. The paper's reduced equations"),
    ("checks", "6. Every check"),
]

INTRO = ("qkov derives the gradient flow of the orthogonal synthetic model (K classes, M common tokens, "
         "one-hot tokens, attention read at the query) for the four parametrizations CACO, FACO, CAFO, FAFO, "
         "with K, M, eta_QK and eta_OV symbolic. Every equation below is printed by sympy from the derivation; "
         "under each one is the machine check that established it.")


def _check_index(payload: dict[str, Any]) -> dict[str, dict[str, Any]]:
    idx: dict[str, dict[str, Any]] = {}
    for c in payload["symmetric_subspace"]["checks"] + payload["rescaling_general"]["checks"]:
        idx[c["name"]] = c
    for c in payload["paper_mapping"]["checks"] + payload["ordering"]["checks"]:
        idx[c["name"]] = c
    for p in payload["parametrizations"].values():
        for c in p["checks"]:
            idx[c["name"]] = c
    return idx


def all_checks(payload: dict[str, Any]) -> list[dict[str, Any]]:
    """Every check in the payload, in report order."""
    return list(_check_index(payload).values())


def _status(c: dict[str, Any] | None, claim: str = "") -> str:
    if c is None:
        return "check: (none recorded)"
    return (f"check `{c['name']}`: {'PASSED' if c['passed'] else 'FAILED'} ({c['method']})"
            + (f", for the claim `{claim}`" if claim else ""))


SCOPED_NOTE = ("symbolic: exact for symbolic K, M and rates; scoped: exact, but at one parameter point or at one "
               "size (K, M) only; numeric: decided by high-precision evaluation at random points.")


def summary_text(payload: dict[str, Any]) -> str:
    """The checks' counts by exactness (:func:`theory.checks.exactness_text`): never 'all symbolic' when some
    checks are scoped or numeric."""
    from theory.checks import exactness_text

    return exactness_text(payload["summary"])


def _displays_in(payload: dict[str, Any], prefix: str) -> list[dict[str, Any]]:
    return [d for d in payload["displays"] if d["section"].startswith(prefix)]


# -- Markdown --------------------------------------------------------------------------------
def render_markdown(payload: dict[str, Any]) -> str:
    """The report as Markdown (equations as ``$$ LaTeX $$``)."""
    idx = _check_index(payload)
    from qkov.report.mathml import html_text, latex_html

    def cell(x: Any) -> str:
        return html_text(str(x)).replace("|", "/")

    out = ["# qkov derivation report", "", INTRO, "", f"Checks: {summary_text(payload)} ({SCOPED_NOTE})", ""]
    out += ["## Claims ledger", "", "| claim | source | status | derived |", "| --- | --- | --- | --- |"]
    for e in payload["ledger"]:
        out.append(f"| {cell(e['claim'])} | {cell(e['source'])} | **{e['status']}** | {cell(e['derived'])} |")
    out.append("")
    for key, title in SECTIONS:
        out += [f"## {title}", ""]
        if key == "checks":
            out += ["| check | statement | method | outcome |", "| --- | --- | --- | --- |"]
            for c in all_checks(payload):
                out.append(f"| {c['name']} | {latex_html(c['statement']).replace('|', '/')} | {c['method']} | "
                           f"{'passed' if c['passed'] else 'FAILED'} |")
            continue
        if key == "ordering":
            o = payload["ordering"]
            out += [f"Asymptotic order at matched loss, sharpest first: **{' > '.join(o['asymptotic_order_sharpest_first'])}**.", ""]
            out += [f"- lim (1-p)<sub>{k.split('/')[0]}</sub> / (1-p)<sub>{k.split('/')[1]}</sub> = {cell(v)}"
                    for k, v in o["pairwise_limits"].items()]
            out += [f"- d log(1-p) / d log(η<sub>QK</sub>/η<sub>OV</sub>) → {cell(v)} ({k})"
                    for k, v in o["dlog_residual_dlog_ratio"].items()]
            out.append("")
        if key == "paper":
            out += [f"Identification: {payload['paper_mapping']['identification']}.", ""]
            for c in payload["paper_mapping"]["checks"]:
                out += [f"- {latex_html(c['statement'])} — {_status(c)}"]
            out.append("")
            continue
        for d in _displays_in(payload, key):
            out += [f"**{html_text(d['title'])}**", "", f"$$ {d['latex']} $$", "", f"> {_status(idx.get(d['check']), str(d.get('claim') or ''))}", ""]
    return "\n".join(out) + "\n"


# -- HTML --------------------------------------------------------------------------------------
_CSS = """
body{font-family:Georgia,serif;max-width:62rem;margin:2rem auto;padding:0 1rem;color:#222;line-height:1.45}
h1,h2,h3{font-family:Helvetica,Arial,sans-serif}
table{border-collapse:collapse;width:100%;margin:1rem 0;font-size:.9rem}
td,th{border:1px solid #ccc;padding:.35rem .5rem;vertical-align:top;text-align:left}
th{background:#f3f3f3}
.eq{margin:.8rem 0 .2rem;overflow-x:auto;overflow-y:hidden}
.check{font-size:.8rem;color:#555;margin-bottom:1rem;font-family:monospace}
.passed{color:#176d2c}.failed{color:#b00020;font-weight:bold}
.status-derived{color:#176d2c;font-weight:bold}.status-refined{color:#9a6700;font-weight:bold}
.status-refuted{color:#b00020;font-weight:bold}.status-empirical{color:#555;font-weight:bold}
math{font-size:1.1em}
"""


def _h(x: Any) -> str:
    return html.escape(str(x))


_STATUSES = ("derived", "refined", "refuted", "empirical", "simulated", "unverified")


def _status_class(status: Any) -> str:
    """``status-<s>`` for an allowed status, else ``status-unknown`` (nothing else reaches a class attribute)."""
    return f"status-{status}" if status in _STATUSES else "status-unknown"


def _t(x: Any) -> str:
    """Prose with formulas (sympy's ``sstr``, ``eta_QK``) as escaped HTML with superscripts and subscripts."""
    from qkov.report.mathml import html_text

    return html_text(str(x))


def _statements(e: dict[str, Any]) -> str:
    items = [x for x in e.get("statements") or [] if isinstance(x, dict)]
    if not items:
        return _t(e["derived"])
    return "<ul>" + "".join(f"<li><span class='{_status_class(x.get('status'))}'>{_h(x.get('status', ''))}</span>: "
                            f"{_t(x.get('text', ''))}</li>" for x in items) + "</ul>"


def _mathml(markup: str) -> str:
    """The display's MathML with only MathML elements and attributes kept (qkov.report.mathml)."""
    from qkov.report.mathml import sanitise_mathml

    return sanitise_mathml(markup or "")


def render_html(payload: dict[str, Any]) -> str:
    """The report as one self-contained HTML page with presentation MathML."""
    idx = _check_index(payload)
    parts = [f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>qkov derivation report</title>"
             f"<style>{_CSS}</style></head><body>",
             "<h1>qkov derivation report</h1>", f"<p>{_h(INTRO)}</p>",
             f"<p id='summary'>Checks: {_h(summary_text(payload))}.</p><p class='note'>{_h(SCOPED_NOTE)}</p>",
             "<h2 id='ledger'>Claims ledger</h2><table class='ledger'><tr><th>claim</th><th>source</th><th>status</th>"
             "<th>derived</th></tr>"]
    for e in payload["ledger"]:
        parts.append(f"<tr><td>{_t(e['claim'])}</td><td>{_t(e['source'])}</td>"
                     f"<td class='{_status_class(e['status'])}'>{_h(e['status'])}</td><td>{_statements(e)}</td></tr>")
    parts.append("</table>")

    from qkov.report.mathml import latex_html

    def check_line(c: dict[str, Any] | None, claim: Any = "") -> str:
        if c is None:
            return "<div class='check'>check: (none recorded)</div>"
        cls = "passed" if c["passed"] else "failed"
        return (f"<div class='check'>check <b>{_h(c['name'])}</b>: <span class='{cls}'>"
                f"{'PASSED' if c['passed'] else 'FAILED'}</span> — {_h(c['method'])}"
                + (f", for the claim <i>{_h(claim)}</i>" if claim else "") + ": "
                f"<span class='statement'>{latex_html(c['statement'])}</span></div>")

    for key, title in SECTIONS:
        parts.append(f"<h2 id='{key}'>{_h(title)}</h2>")
        if key == "checks":
            parts.append("<table class='checks'><tr><th>check</th><th>statement</th><th>method</th><th>outcome</th></tr>")
            for c in all_checks(payload):
                parts.append(f"<tr><td>{_h(c['name'])}</td><td class='statement'>{latex_html(c['statement'])}</td>"
                             f"<td>{_h(c['method'])}</td><td class='{'passed' if c['passed'] else 'failed'}'>"
                             f"{'passed' if c['passed'] else 'FAILED'}</td></tr>")
            parts.append("</table>")
            continue
        if key == "ordering":
            o = payload["ordering"]
            parts.append(f"<p>Asymptotic order at matched loss, sharpest first: "
                         f"<b>{_h(' > '.join(o['asymptotic_order_sharpest_first']))}</b>.</p><ul>")
            parts += [f"<li>lim (1-p)<sub>{_h(k.split('/')[0])}</sub> / (1-p)<sub>{_h(k.split('/')[1])}</sub> = {_t(v)}</li>"
                      for k, v in o["pairwise_limits"].items()]
            parts += [f"<li>d log(1-p) / d log(&eta;<sub>QK</sub>/&eta;<sub>OV</sub>) &rarr; {_t(v)} ({_h(k)})</li>"
                      for k, v in o["dlog_residual_dlog_ratio"].items()]
            parts.append("</ul>")
        if key == "paper":
            parts.append(f"<p>Identification: {_t(payload['paper_mapping']['identification'])}.</p>")
            for c in payload["paper_mapping"]["checks"]:
                parts.append(f"<p class='statement'>{latex_html(c['statement'])}</p>{check_line(c)}")
            continue
        current = None
        for d in _displays_in(payload, key):
            sub = d["section"]
            if sub != current and "-" in sub and key != "symmetric-subspace":
                parts.append(f"<h3>{_h(sub.split('-', 1)[1])}</h3>")
                current = sub
            parts.append(f"<div class='eq'><div>{_t(d['title'])}</div>{_mathml(d['mathml'])}</div>"
                         f"{check_line(idx.get(d['check']), d.get('claim') or '')}")
    parts.append("</body></html>")
    return "\n".join(parts)


# -- LaTeX -------------------------------------------------------------------------------------
def render_tex(payload: dict[str, Any]) -> str:
    """The report as a standalone LaTeX document."""
    idx = _check_index(payload)

    def esc(x: str) -> str:
        x = (x.replace("\\", r"\textbackslash{}").replace("_", r"\_").replace("%", r"\%").replace("&", r"\&")
             .replace("#", r"\#").replace("{", r"\{").replace("}", r"\}").replace("^", r"\^{}").replace("~", r"\~{}"))
        # the ledger's plain-text powers (M², u⁻¹) and products (·) as math, so pdflatex needs no Unicode
        x = re.sub("[⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻⁽⁾ⁿ]+", lambda m: "$^{" + m.group(0).translate(_FROM_SUPERSCRIPT) + "}$", x)
        return x.replace("·", r"$\cdot$")

    out = [r"\documentclass{article}", r"\usepackage{amsmath,amssymb}", r"\usepackage[margin=2cm]{geometry}",
           r"\allowdisplaybreaks", r"\begin{document}", r"\section*{qkov derivation report}", esc(INTRO),
           r"\section*{Claims ledger}", r"\begin{itemize}"]
    for e in payload["ledger"]:
        out.append(rf"\item \textbf{{{esc(e['status'])}}}: {esc(e['claim'])} --- {esc(e['derived'])}")
    out.append(r"\end{itemize}")
    for key, title in SECTIONS[:-1]:
        out.append(rf"\section*{{{esc(title)}}}")
        for d in _displays_in(payload, key):
            c = idx.get(d["check"])
            out += [rf"\paragraph{{{esc(d['title'])}}}", r"\begin{equation*}", d["latex"], r"\end{equation*}",
                    rf"{{\small check \texttt{{{esc(c['name'])}}}: {'passed' if c and c['passed'] else 'FAILED'}"
                    rf" ({esc(c['method']) if c else ''})}}" if c else r"{\small no check recorded}"]
    out.append(r"\end{document}")
    return "\n".join(out) + "\n"


RENDERERS = {"md": ("report.md", render_markdown), "html": ("report.html", render_html), "tex": ("report.tex", render_tex)}
