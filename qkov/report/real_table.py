"""The real-data section's opening table, independent of its format: per dataset and metric the paper's
number (:data:`theory.paper_numbers.REAL_NUMBERS`) beside qkov's at the same ratios, and each group's verdict
with the comparison it read, n, the interval and the minimum detectable effect.

qkov's values come from the real-data summary run (``validate-real-summary``: its ``tables.json``, one
entry per group = dataset x configuration, :func:`qkov.study.real_summary.summarise_groups`), read at the
verdict's declared reading point (:data:`qkov.study.real_inference.READING`, each run's best-validation
checkpoint): mean +- sample sd over seeds at ratio 1 and at the group's claim ratio. The interval and MDE of
each primary metric are those of the pre-declared comparison
(:func:`qkov.study.real_summary.group_evidence`: per-seed paired differences, t-interval over seeds); the
verdict and its line are the summary's recorded ``real-data`` evidence of that group (decided by
:mod:`qkov.study.rules`; the report does not judge). Every string here may come from a results file: the
renderers escape it.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

from qkov.report.collect import RunRecord, StudyResults

REAL_SUMMARY = "validate-real-summary"
"""Kind (and directory name) of the real-data summary run."""

READING_TEXT = "best validation (each run's checkpoint of lowest validation loss)"

COLUMNS = ("dataset", "metric", "paper (ratio 1 -> claim ratio)", "qkov (ratio 1 -> claim ratio, mean ± sd)",
           "claim ratio vs 1: mean difference [95% t-interval], n seeds, MDE", "verdict")
"""The table's columns, in order."""


@dataclasses.dataclass(frozen=True)
class RealRow:
    """One dataset x metric of one group: the paper's value (``paper``, with its ``source``), qkov's
    (``qkov``), the comparison the verdict read on this metric (``comparison``; an exploratory metric says
    so) and the group's ``verdict``; ``setting`` says which configuration and reading point."""

    dataset: str
    group: str
    metric: str
    paper: str
    source: str
    qkov: str
    comparison: str
    verdict: str
    setting: str


@dataclasses.dataclass(frozen=True)
class GroupVerdict:
    """One group's verdict: what it compared (``reads``: the comparison, n, the interval and the MDE of each
    primary metric) and the rule's ``line`` as the summary recorded it."""

    dataset: str
    group: str
    verdict: str
    reads: str
    line: str


def summary_run(results: StudyResults) -> RunRecord | None:
    """The real-data summary run of ``results`` (the last one found), if any."""
    runs = [r for r in results.runs if r.kind == REAL_SUMMARY]
    return runs[-1] if runs else None


def _num(x: Any) -> float | None:
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) else None


def _cell(rows: Any, ratio: float, metric: str, scale: float) -> tuple[str, int]:
    """``("0.312 ± 0.021", n)`` of ``metric`` at ``ratio`` in a summary view's rows (``"-", 0`` when absent)."""
    for row in rows if isinstance(rows, list) else []:
        if isinstance(row, dict) and _num(row.get("ratio")) == ratio and isinstance(row.get(metric), dict):
            m, s = _num(row[metric].get("mean")), _num(row[metric].get("std"))
            n_seeds = row.get("n_seeds")
            n = n_seeds if isinstance(n_seeds, int) else 0
            if m is not None:
                s = 0.0 if s is not None and abs(s) <= 1e-12 * max(1.0, abs(m)) else s   # rounding noise
                pct = "%" if scale == 100 else ""   # each number with its unit: "0.333% ± 0.19%", never "0.333 ± 0%"
                return f"{m * scale:.3g}{pct}" + (f" ± {s * scale:.2g}{pct}" if s is not None else ""), n
    return "-", 0


def setting_text(g: dict[str, Any]) -> str:
    """Which configuration a group is: model, optimizer, preset, recipe, rates (from its ``config``)."""
    config = g.get("config")
    c: dict[str, Any] = config if isinstance(config, dict) else {}
    parts = [f"{c.get('model', 'small')} model", str(c.get("optimizer", "adamw")),
             "quick preset" if c.get("quick") else "full preset", f"recipe {c.get('recipe', 'ratio-only')}"]
    if isinstance(c.get("rates"), dict) and c["rates"]:
        parts.append("rates " + ", ".join(f"{k}={v}" for k, v in sorted(c["rates"].items(), key=str)))
    preset = c.get("preset", "sized")
    if preset != "sized":
        parts.append(f"preset {preset}")
    text = ", ".join(parts) + f"; read at {READING_TEXT}"
    diffs = _preset_differences(c) if preset == "official" else ()
    return text + ("; differs from the paper's settings (validation.real.official): " + "; ".join(diffs)
                   if diffs else "")


def _preset_differences(c: dict[str, Any]) -> tuple[str, ...]:
    """The official preset's listed differences from PAPER.md for the group's dataset (none for an unknown one)."""
    from validation.real.datasets import DATASETS

    entry = DATASETS.get(str(c.get("dataset")))
    return entry.official_differences if entry is not None else ()


def _verdicts(run: RunRecord) -> dict[str, tuple[str, str]]:
    """``{group: (verdict, line)}`` from the summary's ``real-data`` evidence (its scope is the group)."""
    return {e.scope: (e.verdict, e.number or e.numbers) for e in run.evidence if e.claim == "real-data" and e.scope}


def _group(name: str, g: dict[str, Any], recorded: tuple[str, str] | None) -> tuple[list[RealRow], GroupVerdict]:
    from qkov.study.real_inference import ATTENTION_METRIC
    from qkov.study.real_summary import group_evidence
    from theory.paper_numbers import real_numbers

    dataset = str(g["dataset"])
    ratio = float(g["claim_ratio"])
    tm = str(g["task_metric"])
    ev = group_evidence(name, g)
    primary = {c.metric: c for c in (ev.attention, ev.task) if c is not None}
    paper = {p.metric: p for p in real_numbers(dataset)}
    metrics = list(dict.fromkeys([ATTENTION_METRIC, tm, *paper]))
    rows_bv = (g.get("best_val") or {}).get("rows", [])
    verdict, line = recorded or ("", "")
    setting = setting_text(g)
    rows = []
    for m in metrics:
        p = paper.get(m)
        scale = 100 if p is not None and p.percent else 1
        lo, n1 = _cell(rows_bv, 1.0, m, scale)
        hi, n2 = _cell(rows_bv, ratio, m, scale)
        qkov = f"{lo} -> {hi} (ratio 1 -> {ratio:g}; n = {n1} and {n2} seeds)" if (n1 or n2) else "not measured"
        c = primary.get(m)
        comp = (f"{c.describe()} (primary: read by the verdict)" if c is not None and c.n >= 2
                else f"{c.n} paired seed(s): no interval (primary)" if c is not None
                else "exploratory: not read by the verdict")
        rows.append(RealRow(dataset, name, (p.label + f" ({m})") if p and p.label != m else m,
                            p.text() if p else "no number in PAPER.md", p.source if p else "",
                            qkov, comp, verdict, setting))
    reads = (f"ratio {ratio:g} vs 1 at {READING_TEXT}, paired by seed: "
             + "; ".join(f"{c.metric} {c.describe()}" if c.n >= 2 else f"{c.metric}: {c.n} paired seed(s)"
                         for c in primary.values())) if primary else f"ratio {ratio:g} vs 1: no paired seeds"
    return rows, GroupVerdict(dataset, name, verdict, reads, line)


def real_table(results: StudyResults) -> tuple[list[RealRow], list[GroupVerdict], list[str]]:
    """``(rows, verdicts, problems)`` of the real-data summary: rows by dataset (the registry's order) then
    group, one verdict per group, and one line per group the summary holds but that could not be read."""
    from validation.real.datasets import NAMES

    run = summary_run(results)
    groups = run.metrics.get("tables") if run is not None else None
    if run is None or not isinstance(groups, dict):
        return [], [], []
    recorded = _verdicts(run)
    rows: list[RealRow] = []
    verdicts: list[GroupVerdict] = []
    problems: list[str] = []
    order = {n: i for i, n in enumerate(NAMES)}

    def key(item: tuple[str, Any]) -> tuple:
        d = item[1].get("dataset") if isinstance(item[1], dict) else None
        return (order.get(d, len(order)) if isinstance(d, str) else len(order) + 1, str(item[0]))

    for name, g in sorted(groups.items(), key=key):
        try:
            r, v = _group(str(name), g, recorded.get(str(name)))
        except (KeyError, TypeError, ValueError, AttributeError, IndexError, ZeroDivisionError):
            problems.append(f"{name}: the summary's entry for this group is not readable")
            continue
        rows += r
        verdicts.append(v)
    return rows, verdicts, problems


__all__ = ["REAL_SUMMARY", "COLUMNS", "RealRow", "GroupVerdict", "summary_run", "setting_text", "real_table"]
