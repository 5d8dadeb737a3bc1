"""``qkov export``: write a committed record set (``records/<set>.jsonl``) from results directories."""

from __future__ import annotations

import warnings
from pathlib import Path

import click

from qkov.cli.support import CONTEXT_SETTINGS, one_line


@click.command(context_settings=CONTEXT_SETTINGS)
@click.option("--out", "outs", type=str, multiple=True, required=True,
              help="Results directory whose OUT/runs/ to export (repeatable: one set from several directories).")
@click.option("--set", "set_name", type=str, required=True,
              help="Record set name (lowercase letters, digits, '-'): writes RECORDS/<set>.jsonl, replacing it.")
@click.option("--kind", "kinds", type=str, multiple=True, help="Export only runs of this kind (repeatable).")
@click.option("--records", type=str, default="records", show_default=True, help="The records folder.")
def export(outs: tuple[str, ...], set_name: str, kinds: tuple[str, ...], records: str) -> None:
    """Export the complete runs of OUT/runs/ as the record set RECORDS/<set>.jsonl (config, compact metrics,
    provenance per run; incomplete runs and kinds without an extractor are skipped, each named on stderr)."""
    from qkov.core.config import check_path, field_error
    from qkov.core.runstore import RUNS_DIR, check_results_tree
    from qkov.records import check_set_name, export_runs, load_set

    check_set_name(set_name)
    run_dirs: list[Path] = []
    for out in outs:
        check_path("out", out)
        check_results_tree(out)  # a link at OUT, OUT/runs or a run: refused, one line
        runs = Path(out, RUNS_DIR)
        if not runs.is_dir():
            raise field_error("out", out, f"must hold runs: {runs} does not exist")
        run_dirs += sorted(runs.iterdir())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            path = export_runs(run_dirs, set_name, Path(records), kinds=kinds or None)
        except ValueError as exc:
            raise click.ClickException(one_line(str(exc))) from None
        finally:
            for w in caught:
                click.echo(one_line(f"skipped: {w.message}"), err=True)
    click.echo(f"records: {path} ({len(load_set(set_name, Path(records)))} runs)")
