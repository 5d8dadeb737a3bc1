"""Running a click command group the qkov way: a rejected config is one stderr line and exit status 2."""

from __future__ import annotations

import click

from theory.config import ConfigError

HELP_OPTIONS = ["-h", "--help"]
CONTEXT_SETTINGS = {"help_option_names": HELP_OPTIONS}
"""Context settings of every qkov command: ``-h`` and ``--help``, wherever the command is invoked from."""


def run_cli(group: click.Group, args: list[str] | None = None, prog_name: str = "qkov") -> int:
    """Run a click group, mapping :class:`ConfigError` to one stderr line and exit status 2."""
    try:
        # With standalone_mode=False click returns ctx.exit(n)'s code instead of exiting: keep it.
        rv = group.main(args=args, prog_name=prog_name, standalone_mode=False)
    except ConfigError as exc:
        click.echo(f"{prog_name}: error: {exc}", err=True)
        return 2
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except click.ClickException as exc:
        exc.show()
        return exc.exit_code
    except click.exceptions.Abort:
        click.echo("Aborted!", err=True)
        return 1
    return rv if isinstance(rv, int) else 0
