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

from theory.cli_support import CONTEXT_SETTINGS, run_cli
from theory.runstore import qkov_version

# (module, attribute) of each subcommand, in the order `qkov --help` lists them.
COMMANDS: tuple[tuple[str, str], ...] = (
    ("theory.cli", "derive"),
    ("simulation.cli", "simulate"),
    ("validation.validate_cli", "validate"),
    ("validation.reproduce", "reproduce"),
    ("validation.report_cli", "report"),
)


class LazyGroup(click.Group):
    """A click group that imports a subcommand's module only when that subcommand is used.

    ``qkov derive`` then pays for sympy alone, not for torch and Dask; ``qkov --help`` imports all.
    A module that does not exist yet is skipped; a module that fails to import raises.
    """

    def list_commands(self, ctx: click.Context) -> list[str]:
        return [attr for module, attr in COMMANDS if self._load(module, attr) is not None]

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        for module, attr in COMMANDS:
            if attr == name:
                return self._load(module, attr)
        return None

    @staticmethod
    def _load(module_name: str, attr: str) -> click.Command | None:
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name == module_name:
                return None
            raise
        return getattr(module, attr)



@click.group(cls=LazyGroup, context_settings=CONTEXT_SETTINGS)
@click.version_option(qkov_version(), "--version", prog_name="qkov")
def cli() -> None:
    """qkov: derive, simulate and validate how faster query-key learning sharpens attention."""


def main(args: list[str] | None = None) -> None:
    """Console-script entry point of ``qkov``."""
    sys.exit(run_cli(cli, args))


if __name__ == "__main__":  # pragma: no cover
    main()
