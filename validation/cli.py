"""The ``qkov`` command line: one click group that gathers every layer's commands.

Data flows one way (theory -> simulation -> validation), so the composed CLI
lives here, at the top of the flow. Each layer defines its own commands in its
own module; ``python -m theory`` / ``python -m simulation`` run just that layer's.

A rejected configuration (:class:`theory.config.ConfigError`) prints one line,
``qkov: error: <field, value, what is allowed>``, and exits with status 2.
"""

from __future__ import annotations

import importlib
import sys

import click

from theory.cli_support import run_cli
from theory.runstore import qkov_version

# (module, attribute) of each subcommand, in the order `qkov --help` lists them.
COMMANDS: tuple[tuple[str, str], ...] = (
    ("theory.cli", "derive"),
    ("simulation.cli", "simulate"),
    ("validation.validate_cli", "validate"),
    ("validation.reproduce", "reproduce"),
    ("validation.report_cli", "report"),
)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(qkov_version(), "--version", prog_name="qkov")
def cli() -> None:
    """qkov: derive, simulate and validate how faster query-key learning sharpens attention."""


def _register() -> None:
    for module_name, attr in COMMANDS:
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            # Only a module that does not exist yet is skipped; a broken import raises.
            if exc.name == module_name:
                continue
            raise
        cli.add_command(getattr(module, attr))


_register()


def main(args: list[str] | None = None) -> None:
    """Console-script entry point of ``qkov``."""
    sys.exit(run_cli(cli, args))


if __name__ == "__main__":  # pragma: no cover
    main()
