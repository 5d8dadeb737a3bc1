"""``qkov derive``: the derivation report and its JSON."""

from __future__ import annotations

import json
import time
from pathlib import Path

import click

from qkov.cli.options import Choice, ListOf, json_option, out_option, param_option
from qkov.cli.support import CONTEXT_SETTINGS

from qkov.core.config import PARAMETRIZATIONS, StrictConfig, parse_config
from qkov.core.lock import results_lock
from qkov.core.runstore import RunWriter, run_dir_for

FORMATS = ("md", "html", "tex")


class DeriveConfig(StrictConfig):
    """What ``qkov derive`` derives and writes."""

    params: tuple[str, ...] = PARAMETRIZATIONS
    formats: tuple[str, ...] = FORMATS
    thorough: bool = False


def write_derivation(run_dir: Path, cfg: DeriveConfig, use_cache: bool = True) -> dict:
    """Derive (or load from the cache), then write ``derivation.json`` and the reports into ``run_dir``."""
    from theory.derivation_cache import cached_derivation_json
    from qkov.report.derivation import RENDERERS

    started = time.perf_counter()
    payload, hit = cached_derivation_json(cfg.params, cfg.thorough, use_cache)
    elapsed = time.perf_counter() - started
    with RunWriter(run_dir, kind="derive", config=cfg.to_json_dict()) as run:
        run.write_json("derivation.json", payload)
        for fmt in cfg.formats:
            name, render = RENDERERS[fmt]
            run.write_text(name, render(payload))
        run.write_json("metrics.json", {**payload["summary"], "seconds": round(elapsed, 3), "from_cache": hit})
        from qkov.study.derive_stage import derivation_evidence
        from qkov.study.claims import write_evidence

        write_evidence(run, derivation_evidence(payload))
    return payload


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

    The run goes to OUT/runs/derive-<key>/ (derivation.json, report.md/.html/.tex, metrics, claims).
    With --json the derivation is printed on stdout and nothing is written.
    """
    cfg = parse_config(DeriveConfig, params=params, formats=formats, thorough=thorough)
    if as_json:
        from theory.derivation_cache import cached_derivation_json

        payload, _ = cached_derivation_json(cfg.params, cfg.thorough, not no_cache)
        click.echo(json.dumps(payload, indent=1))
        return
    run_dir = run_dir_for(out, "derive", cfg.to_json_dict())
    with results_lock(out, "qkov derive"):  # one writer per results directory
        payload = write_derivation(run_dir, cfg, use_cache=not no_cache)
    s = payload["summary"]
    click.echo(f"checks: {s['passed']}/{s['checks']} passed")
    for fmt in cfg.formats:
        click.echo(f"report: {(run_dir / {'md': 'report.md', 'html': 'report.html', 'tex': 'report.tex'}[fmt]).resolve()}")
