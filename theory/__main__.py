"""``python -m theory``: the theory layer's own command line (``derive``)."""

import sys

import click

from theory.cli import derive
from theory.cli_support import run_cli

group = click.Group(name="theory", commands={"derive": derive}, help="qkov theory layer: symbolic derivations.")
sys.exit(run_cli(group, prog_name="python -m theory"))
