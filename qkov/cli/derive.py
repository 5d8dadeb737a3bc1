"""``qkov derive``: the derivation report and its JSON."""

from __future__ import annotations

import json
from pathlib import Path

import click

from qkov.cli.options import Choice, ListOf, json_option, out_option, param_option
from qkov.cli.support import CONTEXT_SETTINGS
from qkov.core.config import parse_config
from theory.checks import exactness_text
from qkov.study.derive_command import FORMATS, DeriveConfig, derivation_payload, derive as run
from qkov.study.engine import RunsFailed


@click.command(context_settings=CONTEXT_SETTINGS)
@param_option()
@out_option()
@click.option("--format", "formats", type=ListOf(Choice(FORMATS)), default="md,html,tex", show_default=True,
              help="Report formats: comma-separated from md, html, tex.")
@json_option()
@click.option("--thorough", is_flag=True, help="Full-matrix cross-checks at every size (K in {2,3}, M in {1,2}).")
@click.option("--no-cache", is_flag=True, help="Recompute even if a cached derivation of this code exists.")
def derive(params, out: Path, formats, as_json: bool, thorough: bool, no_cache: bool) -> None:
    """Derive the gradient flow of the four parametrizations in sympy, check every claim, write the report.

    The run goes to OUT/runs/derive-<key>/ (derivation.json, report.md/.html/.tex, metrics, claims); a
    complete run of the same options there is reused (--no-cache derives again and rewrites it). With --json the derivation is printed on stdout and nothing is written.
    """
    cfg = parse_config(DeriveConfig, params=params, formats=formats, thorough=thorough)
    if as_json:
        click.echo(json.dumps(derivation_payload(cfg, not no_cache)[0], indent=1))
        return
    try:
        res = run(cfg, out, use_cache=not no_cache)
    except RunsFailed as exc:
        raise click.ClickException(str(exc)) from None
    if res.reused:
        click.echo(f"reused the complete run {res.run_dir.name} (--no-cache derives again)", err=True)
    s = res.payload["summary"]
    click.echo(f"checks: {exactness_text(s)}")
    for path in res.reports:
        click.echo(f"report: {path.resolve()}")
