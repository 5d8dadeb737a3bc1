"""``qkov validate``: training validation, synthetic and real."""

from __future__ import annotations

import importlib

import click

from theory.cli_support import CONTEXT_SETTINGS


@click.group(context_settings=CONTEXT_SETTINGS)
def validate() -> None:
    """Train torch models and hold them against the theory (synthetic or real data)."""


for _module, _attr in (("validation.synthetic.cli", "synthetic"), ("validation.real.cli", "real")):
    try:
        validate.add_command(getattr(importlib.import_module(_module), _attr))
    except ModuleNotFoundError as _exc:  # a layer not built yet is skipped; a broken import raises
        if _exc.name not in (_module, _module.rsplit(".", 1)[0]):
            raise
