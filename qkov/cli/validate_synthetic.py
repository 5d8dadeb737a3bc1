"""``qkov validate synthetic``: train torch models of the four parametrizations and hold them against the theory."""

from __future__ import annotations

import json
from pathlib import Path

import click

from qkov.cli.options import (Choice, Integer, Number, json_option, out_option, param_option, ratios_option,
                              seed_option, size_options)
from qkov.cli.support import CONTEXT_SETTINGS

from qkov.study.synthetic_command import build_config, validate_synthetic


@click.command(context_settings=CONTEXT_SETTINGS)
@param_option()
@ratios_option("1,3,10")
@click.option("--data", type=Choice(("population", "sampled", "paper")), default="population", show_default=True,
              help="population (MODEL.md exactly), sampled (departures from it), paper (the paper's Figure 2 data).")
@click.option("--optimizer", type=Choice(("gd", "sgd", "adamw")), default="gd", show_default=True)
@click.option("--steps", type=Integer(1, 10_000_000), default=None,
              help="Steps per run (default: 4000 population, 3000 sampled, 2000 paper).")
@click.option("--dt", type=Number(0.0, 1e3, lo_open=True), default=None,
              help="Rates are eta * dt per step (default 0.05; adamw 0.01; paper 0.5).")
@click.option("--init", type=Choice(("symmetric", "random")), default=None,
              help="symmetric start (u0=v0=0.5; the paper's 1e-6*I for --data paper) or small random.")
@seed_option()
@size_options(K=4, M=8, hi=1000)
@json_option()
@out_option()
@click.option("--progress/--no-progress", default=None, help="Progress bars (default: on long runs).")
def synthetic(params, ratios, data: str, optimizer: str, steps: int | None, dt: float | None,
              init: str | None, seed: int, K: int, M: int, as_json: bool, out: Path, progress: bool | None) -> None:
    """Train QK/OV attention models and compare them with the ODE, closed forms and DTAP heatmaps.

    The run goes to OUT/runs/synthetic-<key>/.
    """
    cfg = build_config(params, ratios, data, optimizer, steps, dt, init, seed, K, M)
    res = validate_synthetic(cfg, out, progress=progress)
    if as_json:
        m = res.metrics
        brief = {"run_dir": str(res.run_dir), "ode_all_within_tolerance": m["ode_all_within_tolerance"],
                 "pairs": [{k: p[k] for k in ("param", "ratio", "final", "ode", "p_at_loss") if k in p}
                           | {"dtap_mean_mass": p["dtap"]["mean_mass"], "accuracy": p["dtap"]["accuracy"]}
                           for p in m["pairs"]],
                 "claims": [e.to_json() for e in res.evidence]}
        click.echo(json.dumps(brief, indent=2, default=float))
    else:
        for e in res.evidence:
            click.echo(f"{e.claim}: {e.verdict} — {e.numbers}")
        click.echo(f"results: {res.run_dir.resolve()}")
