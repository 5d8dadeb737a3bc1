"""``qkov validate``: training validation, synthetic and real."""

from __future__ import annotations

import click

from qkov.cli.support import CONTEXT_SETTINGS, LazyGroup


def _synthetic() -> click.Command:
    from qkov.cli.validate_synthetic import synthetic
    return synthetic


def _real() -> click.Command:
    from qkov.cli.validate_real import real
    return real


@click.group(cls=LazyGroup, context_settings=CONTEXT_SETTINGS, commands_registry={
    "synthetic": ("Train QK/OV attention models on MODEL.md's data; compare with the ODE, closed forms, DTAP.",
                  _synthetic),
    "real": ("Train on SQuAD, HateXplain or subject-verb agreement at several eta_QK/eta_OV ratios.", _real),
})
def validate() -> None:
    """Train torch models and hold them against the theory (synthetic or real data)."""
