"""Presentation MathML for the report: sympy's output, sanitised and wrapped in ``<math>``.

Chromium, Firefox and Safari render MathML natively, so the report needs no script
and no network. The input comes from ``derivation.json``; only MathML elements and
a few presentational attributes pass, and text is re-escaped, so nothing in a
results file can inject markup or script into the page.
"""

from __future__ import annotations

import html
from html.parser import HTMLParser

MATHML_TAGS = frozenset(
    "math mrow mi mn mo ms mtext mspace mfrac msqrt mroot msup msub msubsup munder mover munderover "
    "mtable mtr mtd mstyle mpadded mphantom mfenced menclose semantics annotation merror".split())
MATHML_ATTRS = frozenset(
    "mathvariant display open close separators stretchy fence separator form lspace rspace "
    "columnalign rowalign linethickness accent accentunder displaystyle scriptlevel notation "
    "encoding width height depth".split())
_SKIP_CONTENT = frozenset({"script", "style"})
VOID = frozenset({"mspace"})


class _Sanitiser(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.out: list[str] = []
        self.stack: list[str] = []
        self.skip = 0

    def handle_starttag(self, tag, attrs):
        if tag not in MATHML_TAGS:
            self.skip += tag in _SKIP_CONTENT
            return
        kept = "".join(f' {k}="{html.escape(v or "", quote=True)}"' for k, v in attrs if k in MATHML_ATTRS)
        self.out.append(f"<{tag}{kept}>")
        if tag in VOID:
            self.out.append(f"</{tag}>")
        else:
            self.stack.append(tag)

    def handle_startendtag(self, tag, attrs):
        self.handle_starttag(tag, attrs)
        if tag in MATHML_TAGS and tag not in VOID:
            self.handle_endtag(tag)

    def handle_endtag(self, tag):
        if tag in _SKIP_CONTENT:
            self.skip = max(0, self.skip - 1)
        if tag in self.stack:
            while self.stack:
                t = self.stack.pop()
                self.out.append(f"</{t}>")
                if t == tag:
                    break

    def handle_data(self, data):
        if not self.skip:
            self.out.append(html.escape(data, quote=False))


def sanitise_mathml(markup: str) -> str:
    """Keep only MathML elements/attributes of ``markup``; decode entities (``&ExponentialE;``)."""
    p = _Sanitiser()
    p.feed(markup)
    p.close()
    while p.stack:
        p.out.append(f"</{p.stack.pop()}>")
    return "".join(p.out)


def math_block(mathml: str | None, latex: str | None = None) -> str:
    r"""A ``<math display="block">`` element for one equation.

    ``mathml`` is sympy's presentation MathML (``sympy.mathml(expr, printer="presentation")``,
    which has no ``<math>`` root); when it is missing or empty the LaTeX source is shown
    as code instead (e.g. ``\dot u = \eta_{QK} \ldots``).
    """
    body = sanitise_mathml(mathml or "").strip()
    if not body:
        return f'<pre class="latex"><code>{html.escape(latex or "")}</code></pre>'
    if body.startswith("<math"):
        body = body[body.index(">") + 1:]
        body = body[: body.rfind("</math>")] if body.endswith("</math>") else body
    tex = f'<annotation encoding="application/x-tex">{html.escape(latex)}</annotation>' if latex else ""
    inner = f"<semantics><mrow>{body}</mrow>{tex}</semantics>" if tex else body
    return f'<math xmlns="http://www.w3.org/1998/Math/MathML" display="block">{inner}</math>'
