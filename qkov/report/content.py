"""What the report says, independent of its format: headline, figure captions, provenance rows."""

from __future__ import annotations

import collections
import dataclasses

from qkov.report.collect import STAGE_ORDER, STAGE_TITLES, Figure, RunRecord, StudyResults
from qkov.report.ledger import LedgerRow
from qkov.study.claims import Evidence
from qkov.study.rules import OUTCOMES

INTRO = (
    "qkov checks the claims of Vashisht & Ramaswamy, *Faster Query-Key Learning Sharpens Attention in "
    "Self-Attention Models* (ICML 2026): the theory layer derives the gradient flow of the orthogonal "
    "synthetic model in sympy, the simulation layer integrates it, and the validation layer trains matching "
    "torch models on synthetic and real data and holds them against the closed forms. "
    "Each claim of the paper is one row of the table above, with its evidence claim by claim below."
)
PAPER_TITLE = "Faster Query-Key Learning Sharpens Attention in Self-Attention Models"
FIRST_SCREEN = ("One row per claim of the paper: the paper's number beside qkov's, the verdict (by setting where "
                "settings disagree) and its scope; the evidence follows.")

OUTCOMES = OUTCOMES
"""What the headline counts, in its order (:data:`qkov.study.rules.OUTCOMES`)."""

def _against_line(cid: str, stage: str, e: Evidence) -> str:
    """One contradicting line of the headline: claim, stage, the one number (else the line of numbers), its
    scope and its caveat, each whole (nothing is cut: the page wraps)."""
    num = e.number or e.numbers
    where = STAGE_TITLES.get(stage, stage)
    if e.scope and e.scope not in num:
        where += ", " + e.scope
    return f"{cid} ({where}: {num}" + (f"; caveat: {e.caveat}" if e.caveat else "") + ")"


def headline_parts(rows: list[LedgerRow]) -> tuple[str, list[str]]:
    """``(counts, lines)``: the sentence counting the claims' outcomes (:attr:`LedgerRow.outcome`), and EVERY
    contradicting line (one per run and setting, none merged) with its number and caveat."""
    if not rows:
        return "No claims were evaluated.", []
    counts = collections.Counter(r.outcome for r in rows)
    parts = [f"{counts[v]} {'hold' if v == 'holds' else 'hold in part' if v == 'holds in part' else v}"
             for v in OUTCOMES if counts.get(v)]
    return (f"Of {len(rows)} claims: " + ", ".join(parts) + ".",
            [_against_line(r.id, s, e) for r in rows for s, e in r.contradictions])


UNDECIDED_TITLE = "Undecided (an effect whose interval straddles the margins; not counted against)"
"""The heading of :func:`undecided_lines` in the headline of report.html and report.md."""


def undecided_lines(rows: list[LedgerRow]) -> list[str]:
    """Every ``inconclusive`` evidence line (one per run and setting) with its number, e.g. a real-data accuracy
    loss whose seed-level interval straddles the margin: an effect a reader should see even though the rule could
    not decide it (named below the contradicting lines, never counted as one)."""
    return [_against_line(r.id, s, e) for r in rows for s, _, e in r.ordered_evidence if e.verdict == "inconclusive"]


def headline(rows: list[LedgerRow]) -> str:
    """:func:`headline_parts` as one paragraph, e.g. ``Of 13 claims: 3 hold, 4 hold in part, 3 contradicted, ...
    Evidence against (4 lines): paper-equations (simulation: max gap 0.44 (bound 0.02); caveat: rests on one
    reading of the paper's b); ...``."""
    counts, lines = headline_parts(rows)
    return counts + (f" Evidence against ({len(lines)} lines): " + "; ".join(lines) + "." if lines else "")


@dataclasses.dataclass(frozen=True)
class ClaimLine:
    """One row of the first screen (:mod:`qkov.report.findings`): the claim, the paper's number, qkov's numbers
    (in the paper's units where the paper gives one), the verdict (by setting when the settings disagree), the
    scope, the caveat, and whether the full preset is expected to change it; ``number`` and ``stage``: the one
    number behind the outcome and where it was measured."""

    id: str
    outcome: str
    number: str
    stage: str
    scope: str
    caveat: str
    paper: str
    full_preset: str
    n_against: int
    verdict: str = ""
    qkov: str = ""
    wording: str = ""


def paper_unit_numbers(results: StudyResults | None) -> str:
    """qkov's numbers for the paper's real-data numbers, in the paper's units (``"squad/...: AC 0.333% ± 0% ->
    0.111% ± 0.19% (ratio 1 -> 20; n = 3 and 3 seeds; paper about 12% -> 43%)"``), from the real-data table
    (:func:`qkov.report.real_table.real_table`); "" without a summary or a paper number."""
    if results is None:
        return ""
    from qkov.report.real_table import real_table

    out = []
    for r in real_table(results)[0]:
        if r.paper.startswith("no number") or r.qkov == "not measured":
            continue
        paper = r.paper.split(" (")[0]
        out.append(f"{r.group}: {r.metric.split(' (')[0]} " + r.qkov.replace(")", f"; paper {paper})", 1))
    return "; ".join(out)


def claim_lines(rows: list[LedgerRow], results: StudyResults | None = None) -> list[ClaimLine]:
    """The first screen's rows, one per claim (:func:`qkov.report.findings.finding` of each ledger row's evidence,
    with the ledger's outcome); ``results``: the study, for the real-data numbers in the paper's units."""
    from qkov.report.findings import finding
    from theory.claims import CLAIMS

    out = []
    for r in rows:
        d = r.deciding
        stage, e = (d[0], d[2]) if d else ("", None)
        c = CLAIMS.get(r.id)
        f = finding(r.id, [(s, x) for s, _, x in r.ordered_evidence], r.outcome)
        caveat = f.caveat
        if r.outcome == "holds in part" and (e is None or e.verdict != "supports in part"):
            # say which part: the first evidence that supports only in part, else the derivation's note
            part = next((f"{STAGE_TITLES.get(s, s)}: {x.caveat or x.number or x.numbers}"
                         for s, _, x in r.ordered_evidence if x.verdict == "supports in part"),
                        "the derivation: holds in part" if r.holds == "in part" else "")
            if part and part.split(": ", 1)[-1] not in caveat:
                caveat = "; ".join(x for x in (caveat, f"in part: {part}") if x)
        qkov = f.qkov
        if r.id == "real-data":
            qkov = "; ".join(x for x in (paper_unit_numbers(results), qkov) if x)
        out.append(ClaimLine(r.id, r.outcome, (e.number or e.numbers) if e else "", STAGE_TITLES.get(stage, stage),
                             f.scope, caveat, c.paper_number if c else "", c.full_preset if c else "", len(r.against),
                             f.verdict, qkov, r.claim))
    return out


CLAIM_LINE_COLUMNS = ("claim", "paper", "qkov", "verdict", "scope", "--full expected to change it")
"""The first screen's columns: the paper's number beside qkov's."""


CAPTIONS: dict[str, str] = {
    "theory_vs_training": "Solid: training. Full-batch GD on the population from the symmetric start: dashed, same "
                          "colour, theory's reduced flow from the same start, and beneath the relative deviation "
                          "|train/theory - 1| (log axis). Other optimizers and starts have no theory: the dotted "
                          "curve there is gradient flow from the run's first state, a reference only (not a "
                          "prediction; see the figure's title).",
    "attention_vs_loss": "Attention on the distinct tokens against loss (falling to the right): at the same loss, "
                         "a higher curve is a sharper model. Look at the order of the ratios' curves; a panel marked "
                         "'did not train' holds a run whose loss barely fell (not evidence).",
    "dtap_heatmaps": "DTAP heatmaps: percentage of test instances by probability of the true token (x) and "
                     "attention on the relevant tokens (y). Sharp, confident models fill the top-right cell.",
    "reduction": "Left: full-matrix GD from random starts, distance from the symmetric set (log axis): it should "
                 "fall. Right: full-matrix GD from balanced starts against the reduced flow: an exact reduction leaves "
                 "only the O(dt) error, so the dt/2 bar is half the dt bar.",
    "phase_portraits": "Each trajectory (u, v) must lie on its dotted level curve H(u, v) = H0 of the first integral.",
    "trajectories": "u, v and 1-p against t (log axes); dashed: theory's leading-order laws, which the solid "
                    "solutions should approach as t grows.",
    "asymptotic_errors": "Relative error of each of theory's laws against the solved flow: each should fall as t "
                         "grows (log axes); one panel per parametrization.",
    "residual_vs_ratio": "Attention residual 1-p at matched loss against eta_QK/eta_OV (log-log): a slope of -1 is "
                         "theory's asymptotic limit (u -> oo), not a finite-loss prediction; a falling line supports "
                         "the claim.",
    "phase_diagram": "Left: which parametrization is sharpest at matched loss for each (ratio, start), labelled "
                     "with its margin (2nd-best / best residual); right: the margin on a log colour scale, "
                     "0 = tie. Small margins mean the winner is barely ahead.",
    "order_crossover": "1-p at matched loss down to very small losses: the finite-loss order (left part) differs "
                       "from the asymptotic one; the right panel's curve crosses 1 where CACO overtakes FAFO.",
    "paper_vs_derived": "The paper's equations (solid) against the derived flow of the model (dashed), one colour "
                        "per ratio: against time (left, log axis) and at matched loss (right). Look at the gap "
                        "between solid and dashed of the same colour.",
    "figure2_dtap": "The paper's Figure 2 (paper preset, SGD): DTAP heatmaps at equal rates (top) and faster QK "
                    "(bottom), mean over seeds: percentage of held-out sequences by attention on the distinct tokens "
                    "(x) and probability of the true token (y).",
    "attention_split": "Where the held-out attention goes at the end of training, per setting (seed means; error bar: "
                       "seed range of the distinct part; dotted: uniform attention), and distinct attention and p_true "
                       "over training. Faster QK should raise the blue part.",
    "gd_vs_adam": "1-p against the loss (falling to the right), GD left, Adam right, one colour per ratio; dotted: "
                  "the derived sign-descent law. Under GD the ratio shifts the curve by a factor; under Adam it "
                  "changes its slope, until the eps floor flattens it.",
    "optimizer_map": "One optimizer (Adam at default betas, or momentum) from the symmetric start: measured 1-p "
                     "against the loss (solid, falling to the right), the optimizer's exact reduced map (dashed) and "
                     "gradient flow (dotted), one colour per ratio; beneath, the measured distance from the symmetric "
                     "set. The reduced map should lie on the training curve while the distance is small; a larger gap "
                     "between ratios than gradient flow's is the extra sharpening.",
    "dtap": "DTAP heatmap of a real-data group: percentage of test instances by probability of the true token (x) "
            "and attention on the relevant tokens (y) (validation.metrics.dtap.plot_dtap).",
}
"""What to look at in each figure, by stem (the longest matching prefix wins)."""


def figure_caption(run: RunRecord, fig: Figure) -> str:
    """What to look at in the figure, and which run drew it."""
    key = max((k for k in CAPTIONS if fig.stem == k or fig.stem.startswith(k)), key=len, default=None)
    what = CAPTIONS[key] if key else fig.stem.replace("_", " ")
    return f"{what} (run {run.name}, {STAGE_TITLES.get(run.stage, run.stage)})"


def figures(results: StudyResults, stages: tuple[str, ...], dtap: bool) -> list[tuple[RunRecord, Figure]]:
    """Figures of the given stages, DTAP heatmaps or the others."""
    return [(r, f) for r in results.runs if r.stage in stages for f in r.figures if f.is_dtap == dtap]


def _run_time(r: RunRecord) -> str:
    from qkov.report.provenance import run_seconds

    sec, source = run_seconds(r)
    return "" if sec is None else f"{sec:.0f} s" + (" (training)" if source == "training" else "")


SECTIONS = (("claims", "Claims"), ("per-claim", "The evidence, claim by claim"), ("derivation", "Derivation"),
            ("real-data", "Real data"), ("other-figures", "Other figures"),
            ("metrics", "Simulation and synthetic metrics"), ("provenance", "Run provenance"))
"""The report's numbered sections, in order: one list for report.html and report.md (same numbers in both)."""


def section_title(key: str) -> str:
    """``"N. Title"`` of section ``key`` of :data:`SECTIONS`."""
    return next(f"{i}. {t}" for i, (k, t) in enumerate(SECTIONS, 1) if k == key)


def other_figures(results: StudyResults, rows) -> list:
    """``(run, figure)`` not shown under a claim (nor drawn as the Figure 2 grid): the "Other figures" section."""
    shown = {(run.name, f.stem) for r in rows for run, f in r.figures}
    return [(run, f) for run in results.runs for f in run.figures if (run.name, f.stem) not in shown
            and not (f.stem == "figure2_dtap" and run.kind == "figure2")]


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
                     str(m.get("git_commit") or "")[:10], str(m.get("started", "")), _run_time(r),
                     str(m.get("python", "")), str(m.get("numpy") or ""), str(m.get("torch") or ""),
                     str(m.get("sympy") or "")])
    return rows


def stage_lines(results: StudyResults) -> list[str]:
    """What ran (:func:`qkov.report.provenance.study_lines`: preset, times, machine, sizes), then the status of
    each stage: from the engine summary when present, else from the runs found."""
    from qkov.report.provenance import study_lines

    lines = study_lines(results)
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
    lines += results.unreadable  # a malformed engine summary: one line saying it was ignored
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
        from theory.checks import exactness_text

        parts.append(exactness_text(s) + ".")   # counts by exactness: symbolic, scoped, numeric
    elif isinstance(s, dict):
        parts.append("; ".join(f"{k.replace('_', ' ')}: {v}" for k, v in s.items()) + ".")
    elif s:
        parts.append(str(s))
    return " ".join(parts)
