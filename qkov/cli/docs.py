"""``qkov docs``: regenerate every generated block of the docs from the committed records (``--check``: compare)."""

from __future__ import annotations

from pathlib import Path

import click

from qkov.cli.support import CONTEXT_SETTINGS


@click.command(context_settings=CONTEXT_SETTINGS)
@click.option("--check", is_flag=True, help="Change nothing; exit 1 naming every block that differs from its records.")
@click.option("--root", type=str, default=None, help="Repository root (default: the checkout qkov runs from).")
def docs(check: bool, root: str | None) -> None:
    """Rebuild every block between <!-- generated:ID --> markers (README.md, docs/) from records/*.jsonl."""
    from qkov.docsgen import TABLES, regenerate

    differ = regenerate(None if root is None else Path(root), check=check)
    if check:
        if differ:
            click.echo(f"{len(differ)} of {len(TABLES)} generated blocks differ from their records: "
                       f"{', '.join(differ)} (run `qkov docs`)", err=True)
            click.get_current_context().exit(1)
        click.echo(f"{len(TABLES)} generated blocks match their records")
        return
    click.echo(f"{len(TABLES)} generated blocks, {len(differ)} rewritten" + (f": {', '.join(differ)}" if differ else ""))
