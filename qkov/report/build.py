"""Build ``<out>/report.html`` and ``<out>/report.md`` from the run directories of a study."""

from __future__ import annotations

from pathlib import Path

from qkov.core.runstore import atomic_write_bytes
from qkov.report.collect import collect_runs
from qkov.report.ledger import build_ledger
from qkov.report.real_table import REAL_SUMMARY
from qkov.report.render_html import render_html
from qkov.report.render_markdown import render_markdown

HTML_NAME = "report.html"
MD_NAME = "report.md"
SUMMARY_SCHEMA = 3
"""Version of the summary's evidence: 2 = one ``real-data`` record per group with its number and scope
(:func:`qkov.study.rules.real_data_evidence`); 3 = a group below the paper's level is insufficient, with the reason
as caveat (:func:`qkov.study.rules.below_paper_level`). A summary of an older version is rebuilt."""


def summarise_real_runs(out: Path) -> Path | None:
    """Summarise the complete real-data runs under ``<out>/runs`` (tables, paired tests, DTAP, claim).

    The summary is a run of its own, ``<out>/runs/validate-real-summary``; it is rebuilt only when the
    set of complete real-data runs changed, or when it was written by an older :data:`SUMMARY_SCHEMA`. Returns its path, or None when there are no such runs.
    """
    import json

    from qkov.core.runstore import is_complete
    from qkov.study.real_summary import summarise

    runs = sorted(p for p in (out / "runs").glob("validate-real-*")
                  if p.name != REAL_SUMMARY and p.is_dir() and is_complete(p))
    if not runs:
        return None
    target = out / "runs" / REAL_SUMMARY
    config = {"runs": [p.name for p in runs], "schema": SUMMARY_SCHEMA}
    if is_complete(target):
        try:
            if json.loads((target / "config.json").read_text()) == config:
                return target
        except (OSError, ValueError):
            pass
    summarise(runs, target, kind=REAL_SUMMARY, config=config)
    return target


def build_report(out: str | Path) -> tuple[Path, Path]:
    """Read ``<out>/runs/*`` and write the HTML report and its Markdown twin; return both paths.

    Raises ``FileNotFoundError`` (one line) when ``out`` has no ``runs`` directory.
    """
    out = Path(out)
    if not (out / "runs").is_dir():
        raise FileNotFoundError(f"{out / 'runs'}: no runs to report on (run `qkov reproduce --out {out}` first)")
    summarise_real_runs(out)
    results = collect_runs(out)
    rows = build_ledger(results)
    # atomic_write_bytes gives 0666 & ~umask (0644 under umask 022): a document to share, as the runs are.
    html_path = atomic_write_bytes(out / HTML_NAME, render_html(results, rows).encode("utf-8"), parents=False)
    md_path = atomic_write_bytes(out / MD_NAME, render_markdown(results, rows).encode("utf-8"), parents=False)
    return html_path, md_path
