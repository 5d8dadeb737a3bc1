"""Presentation MathML for the report: sympy's output, sanitised and wrapped in ``<math>``.

Chromium, Firefox and Safari render MathML natively, so the report needs no script
and no network. The input comes from ``derivation.json``; only MathML elements and
a few presentational attributes pass, and text is re-escaped, so nothing in a
results file can inject markup or script into the page.
"""

from __future__ import annotations

import html
import re
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


# -- plain text of formulas: sympy's ``sstr`` and the checks' LaTeX, for HTML and Markdown ------------------
SUPERSCRIPT = str.maketrans("0123456789+-()n", "⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻⁽⁾ⁿ")
_POWER = re.compile(r"\*\*(\((?:[^()]|\([^()]*\))*\)|-?[\w.]+)")
_SUB = re.compile(r"((?<![\w.])[A-Za-z]+|\))_(\{[^{}]*\}|[A-Z]{1,4}\b|[A-Za-z]{1,3}\b|\d+\b)")


def _superscript(exp: str) -> str | None:
    """``exp`` in Unicode superscript characters, or None when one has none (a letter other than n, a /)."""
    inner = exp[1:-1] if exp.startswith("(") and exp.endswith(")") and exp.count("(") == 1 else exp
    return inner.translate(SUPERSCRIPT) if all(ch in "0123456789+-()n" for ch in inner) else None


def plain_powers(text: str) -> str:
    """``x**2`` -> ``x²``, ``u**(-1)`` -> ``u⁻¹``; an exponent without superscript characters -> ``x^(1/2)``.

    For sympy's ``sstr`` output in prose (the ledger, the ordering limits): no raw ``**`` reaches a page.
    """
    def one(m: re.Match) -> str:
        sup = _superscript(m.group(1))
        return sup if sup is not None else "^" + m.group(1)
    return _POWER.sub(one, text).replace("*", "·")


SUBSCRIPT = str.maketrans("0123456789", "₀₁₂₃₄₅₆₇₈₉")
_INFINITY = re.compile(r"(?<![\w.])oo(?![\w])")
_MATRIX = re.compile(r"(?<![\w.])([A-Z])(\d)(?![\w.])")
_TRANSPOSE = (re.compile(r"(?<=[A-Za-z)₀-₉])\^T(?![\w])"), re.compile(r"(?<=</sub>)\^T(?![\w])"))


def plain_symbols(text: str) -> str:
    """sympy's ``oo`` -> ``∞``, ``->`` -> ``→``, a matrix named by one capital and one digit (``W1``) -> ``W₁``
    (:func:`html_text` then writes a transpose ``^T`` as ``ᵀ``: ``W1 W1^T G`` reads ``W₁ W₁ᵀ G``)."""
    text = _INFINITY.sub("∞", text.replace("->", "→"))
    return _MATRIX.sub(lambda m: m.group(1) + m.group(2).translate(SUBSCRIPT), text)


def html_text(text: str) -> str:
    """Prose with formulas as escaped HTML: :func:`plain_powers`, :func:`plain_symbols` (infinity, arrows,
    matrix products), a transpose ``^T`` as ``ᵀ``, and a short subscript written ``s_O``, ``eta_QK``, ``W_{-1}`` as ``<sub>`` (code names like
    ``level_curve_crossover`` stay as they are)."""
    out, last = [], 0
    text = plain_symbols(plain_powers(text))
    for m in _SUB.finditer(text):
        out.append(html.escape(text[last:m.start()], quote=False))
        sub = m.group(2).strip("{}")
        out.append(f"{html.escape(m.group(1), quote=False)}<sub>{html.escape(sub, quote=False)}</sub>")
        last = m.end()
    out.append(html.escape(text[last:], quote=False))
    joined = "".join(out)
    for pattern in _TRANSPOSE:   # after the subscripts: E_d^T is E<sub>d</sub>ᵀ
        joined = pattern.sub("ᵀ", joined)
    return joined


_SYMBOLS = {
    "alpha": "α", "beta": "β", "gamma": "γ", "delta": "δ", "epsilon": "ε", "varepsilon": "ε", "eta": "η",
    "kappa": "κ", "lambda": "λ", "mu": "μ", "rho": "ρ", "sigma": "σ", "varphi": "φ", "phi": "φ", "Lambda": "Λ",
    "infty": "∞", "to": "→", "rightarrow": "→", "partial": "∂", "sum": "Σ", "cdot": "·", "le": "≤", "leq": "≤",
    "ge": "≥", "geq": "≥", "ne": "≠", "neq": "≠", "iff": "⇔", "ldots": "…", "dots": "…", "top": "ᵀ", "times": "×",
    "lim": "lim", "log": "log", "max": "max", "min": "min", "exp": "exp", "sqrt": "√", "in": "∈", "approx": "≈",
    "sim": "~", "pm": "±", "nabla": "∇", "mid": "|", "vert": "|",
}
_SPACING = {",", ";", " ", ":", "!", "quad", "qquad"}
_DROP = {"left", "right", "bigl", "bigr", "Bigl", "Bigr", "big", "Big", "textstyle", "displaystyle", "rm", "limits"}
_ACCENTS = {"dot": "\u0307", "hat": "\u0302", "widehat": "\u0302", "bar": "\u0304", "tilde": "\u0303"}
_FONTS = {"text", "mathrm", "mathbf", "mathit", "operatorname", "textbf", "mathsf"}


class _Latex:
    """A small reader of the checks' LaTeX statements into escaped HTML text (sub/sup, Unicode symbols)."""

    def __init__(self, src: str) -> None:
        self.s, self.i = src, 0

    def group(self) -> str:
        """One argument: ``{...}``, a macro or one character."""
        self.skip_space()
        if self.i >= len(self.s):
            return ""
        if self.s[self.i] == "{":
            self.i += 1
            return self.read(until="}")
        if self.s[self.i] == "\\":
            return self.macro()
        ch = self.s[self.i]
        self.i += 1
        return html.escape(ch, quote=False)

    def skip_space(self) -> None:
        while self.i < len(self.s) and self.s[self.i] == " ":
            self.i += 1

    def macro(self) -> str:
        self.i += 1
        m = re.match(r"[A-Za-z]+|.", self.s[self.i:])
        name = m.group(0) if m else ""
        self.i += len(name)
        if name in _SPACING:
            return " "
        if name in _DROP:
            return ""
        if name in ("frac", "tfrac", "dfrac"):
            num, den = self.group(), self.group()
            wrap = (lambda x: x if re.fullmatch(r"[\w.·]+(?:<(su[bp])>[\w.·]*</\1>)?", x) else f"({x})")
            return f"{wrap(num)}/{wrap(den)}"
        if name == "sqrt":
            return f"√({self.group()})"
        if name in _ACCENTS:
            return self.group() + _ACCENTS[name]
        if name in _FONTS:
            return self.group()
        if name == "mathcal":
            arg = self.group()
            return {"L": "ℒ"}.get(arg, arg)
        if name in ("{", "}", "_", "%", "&", "#", "|"):
            return html.escape(name, quote=False)
        return _SYMBOLS.get(name, html.escape(name, quote=False))

    def read(self, until: str = "") -> str:
        out: list[str] = []
        while self.i < len(self.s):
            ch = self.s[self.i]
            if until and ch == until:
                self.i += 1
                break
            if ch == "\\":
                out.append(self.macro())
            elif ch in "_^":
                self.i += 1
                tag = "sub" if ch == "_" else "sup"
                out.append(f"<{tag}>{self.group()}</{tag}>")
            elif ch == "{":
                self.i += 1
                out.append(self.read(until="}"))
            elif ch == "~":
                self.i += 1
                out.append(" ")
            else:
                self.i += 1
                out.append(html.escape(ch, quote=False))
        return "".join(out)


def latex_html(latex: str) -> str:
    r"""A check's LaTeX statement as readable, escaped HTML: ``\frac{a}{b}`` -> ``a/b``, ``\eta_{QK}`` ->
    ``η<sub>QK</sub>``, ``\text{...}`` -> its text, Greek letters and arrows as Unicode; no backslash,
    no ``_`` and no ``^`` are left for the reader."""
    return re.sub(r" {2,}", " ", _Latex(latex or "").read()).replace("<sup>ᵀ</sup>", "ᵀ").strip()

