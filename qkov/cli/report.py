"""``qkov report``: (re)build the HTML report and its Markdown twin from a results directory."""

from __future__ import annotations

from pathlib import Path

import click

from qkov.cli.support import CONTEXT_SETTINGS, one_line

from qkov.core.config import field_error


@click.command(context_settings=CONTEXT_SETTINGS)
@click.option("--out", type=str, default="qkov-results", show_default=True,
              help="Results directory written by `qkov reproduce`.")
def report(out: str) -> None:
    """Build <out>/report.html (self-contained, offline) and <out>/report.md from <out>/runs/."""
    from qkov.core.config import check_path
    from qkov.core.lock import results_lock
    from qkov.core.runstore import check_results_tree, incomplete_lines
    from qkov.report import build_report

    check_path("out", out)  # empty, NUL, a component over 255 bytes: one line
    check_results_tree(out)  # OUT, OUT/runs or a run directory as a symbolic link: refused, one line
    if not Path(out, "runs").is_dir():  # before taking the lock, which would create --out
        raise field_error("out", out, f"must hold a study's runs: {Path(out) / 'runs'} does not exist "
                          f"(run `qkov reproduce --out {out}` first)")
    try:
        with results_lock(Path(out), "qkov report"):
            html_path, md_path = build_report(Path(out))
    except FileNotFoundError as exc:
        raise field_error("out", out, f"must hold a study's runs ({exc})") from None
    except OSError as exc:  # disk full, read-only --out: one line, the runs are untouched
        from qkov.study.reproduce_study import report_failure

        raise click.ClickException(f"report: not written: {report_failure(exc)}") from None
    bad = [line.removeprefix("redoing ") for line in incomplete_lines(sorted(Path(out, "runs").iterdir()))]
    if bad:  # one line naming every run the report leaves out, and why (reproduce redoes them)
        click.echo(one_line(f"incomplete runs, not in the report ({len(bad)}): " + "; ".join(bad)), err=True)
    click.echo(f"markdown: {md_path.resolve()}")
    click.echo(f"report: {html_path.resolve()}")
