"""``qkov validate synthetic``: train torch models of the four parametrizations and hold them against the theory.

Every option is checked while it is parsed or right after (:func:`check_applies`: an option that does not apply
to the chosen optimizer is refused, not ignored), before torch, numpy or the study engine are imported: a
refusal costs a fraction of a second of CPU (docs/reliability.md)."""

from __future__ import annotations

import json
from pathlib import Path

import click
from click.core import ParameterSource

from qkov.cli.options import (Choice, Integer, ListOf, Number, field_error, json_option, out_option, param_option,
                              ratios_option, seed_option, size_options)
from qkov.cli.executor import executor_options
from qkov.cli.support import CONTEXT_SETTINGS
from simulation.optimizer_defaults import ADAM_BETAS, ADAM_EPS
from validation.synthetic.optimizers import APPLIES, MAP_OPTIMIZERS, TRAIN_OPTIMIZERS

OPTIMIZER_MAP_CHOICES = MAP_OPTIMIZERS
"""Optimizers judged against their exact reduced map (:func:`validation.synthetic.adam_compare.optimizer_matched_loss`)."""

OPTION_NAMES = {"u0": "u0", "v0": "v0", "levels": "levels", "stop_loss": "stop-loss", "betas": "betas", "eps": "eps",
                "weight_decay": "weight-decay", "progress": "progress"}
"""Parameter name -> the option's name in an error line."""


def check_applies(ctx: click.Context, optimizer: str) -> None:
    """Refuse (one line, exit 2) an option given on the command line that does not apply to ``optimizer``
    (:data:`validation.synthetic.optimizers.APPLIES`), and for the optimizer-map runs a data set or start they do
    not train (population data from the symmetric start only)."""
    for name, optimizers in APPLIES.items():
        source = ctx.get_parameter_source(name)
        if optimizer not in optimizers and source in (ParameterSource.COMMANDLINE, ParameterSource.ENVIRONMENT):
            value = ctx.params.get(name)
            shown = ",".join(f"{v:g}" for v in value) if isinstance(value, tuple) else value
            raise field_error(OPTION_NAMES[name], shown, f"does not apply to --optimizer {optimizer} (only to "
                                                         f"{', '.join(optimizers)})")
    if optimizer in MAP_OPTIMIZERS:
        if ctx.params.get("data") != "population":
            raise field_error("data", ctx.params.get("data"), f"--optimizer {optimizer} trains MODEL.md's "
                                                              "population: use population")
        if ctx.params.get("init") not in (None, "symmetric"):
            raise field_error("init", ctx.params.get("init"), f"--optimizer {optimizer} starts on the symmetric "
                                                              "set: use symmetric")


def _betas(text: str) -> tuple[float, float]:
    try:
        b = tuple(float(x) for x in text.split(","))
    except ValueError:
        b = ()
    if len(b) != 2 or not all(0.0 <= x < 1.0 for x in b):
        raise field_error("betas", text, "must be two numbers B1,B2, each in [0, 1)")
    return b[0], b[1]


def optimizer_map_run(params, ratios, data, optimizer, steps, dt, init, seed, K, M, as_json, out, betas, eps,
                      weight_decay, start=None, **where) -> None:
    """``--optimizer adam|momentum``: measured 1-p and set distance at matched loss against the reduced map."""
    from qkov.study.engine import RunsFailed
    from qkov.study.synthetic_command import validate_optimizer_map

    try:
        run_dir, res = validate_optimizer_map(params, ratios, data, optimizer, steps, dt, init, seed, K, M, out, betas,
                                              eps, weight_decay, **(start or {}), **where)
    except RunsFailed as exc:
        raise click.ClickException(str(exc)) from None
    if as_json:
        click.echo(json.dumps({"run_dir": str(run_dir), "runs": res}, indent=2, default=float))
    else:
        for r in res:
            for p in r["pairs"]:
                click.echo(f"{p['param']} r={p['ratio']:g}: measured 1-p {p['measured']} (reduced {p['reduced']}"
                           + (f", broken-set prediction {p['predicted_one_minus_p']} {p['predicted_call']}"
                              if "predicted_one_minus_p" in p else "")
                           + f"), set distance {p['distance']} at losses {r['levels']}")
        click.echo(f"results: {run_dir.resolve()}")


@click.command(context_settings=CONTEXT_SETTINGS)
@param_option()
@ratios_option("1,3,10")
@click.option("--data", type=Choice(("population", "sampled", "paper")), default="population", show_default=True,
              help="population (MODEL.md exactly), sampled (departures from it), paper (the paper's Figure 2 data).")
@click.option("--optimizer", type=Choice(TRAIN_OPTIMIZERS + OPTIMIZER_MAP_CHOICES), default="gd", show_default=True,
              help="adam / momentum: from the symmetric start, measured 1-p and set distance against the reduced "
                   "optimizer map at matched loss (issue 23).")
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
@click.option("--progress/--no-progress", default=None,
              help="Progress bars of the gd/sgd/adamw runs (default: on long runs).")
@click.option("--betas", type=str, default=",".join(f"{b:g}" for b in ADAM_BETAS), show_default=True,
              help="B1,B2 of --optimizer adam (B1 is the coefficient of --optimizer momentum); each in [0, 1); "
                   "refused with another optimizer.")
@click.option("--eps", type=Number(0.0, 1e3, lo_open=True), default=ADAM_EPS, show_default=True,
              help="Adam's eps (--optimizer adam only).")
@click.option("--weight-decay", type=Number(0.0, 1e3), default=0.0, show_default=True,
              help="Weight decay: decoupled for --optimizer adam (AdamW) and adamw, of momentum's SGD; refused with "
                   "gd and sgd.")
@click.option("--u0", type=Number(0.0, 1e3, lo_open=True), default=None,
              help="--optimizer adam|momentum: the symmetric start's u0 (default 0.5).")
@click.option("--v0", type=Number(0.0, 1e3, lo_open=True), default=None,
              help="--optimizer adam|momentum: the symmetric start's v0 (default 0.5).")
@click.option("--levels", type=ListOf(Number(0.0, 100.0, lo_open=True)), default=None,
              help="--optimizer adam|momentum: matched losses, comma-separated (default: 5 inside every run's "
                   "range); the broken-set prediction is made at these.")
@click.option("--stop-loss", type=Number(0.0, 100.0, lo_open=True), default=None,
              help="--optimizer adam|momentum: stop each run at its first logged loss below this (default: the "
                   "lowest --levels).")
@executor_options()
def synthetic(params, ratios, data: str, optimizer: str, steps: int | None, dt: float | None,
              init: str | None, seed: int, K: int, M: int, as_json: bool, out: Path, progress: bool | None,
              betas: str, eps: float, weight_decay: float, u0: float | None, v0: float | None,
              levels: tuple | None, stop_loss: float | None, scheduler: str | None = None,
              workers: int | None = None) -> None:
    """Train QK/OV attention models and compare them with the ODE, closed forms and DTAP heatmaps.

    The run goes to OUT/runs/synthetic-<key>/.
    """
    check_applies(click.get_current_context(), optimizer)
    where = {"scheduler": scheduler, "workers": workers}
    if optimizer in OPTIMIZER_MAP_CHOICES:
        start = {k: v for k, v in (("u0", u0), ("v0", v0), ("levels", levels), ("stop_loss", stop_loss))
                 if v is not None}
        return optimizer_map_run(params, ratios, data, optimizer, steps, dt, init, seed, K, M, as_json, out,
                                 _betas(betas), eps, weight_decay, start, **where)
    from qkov.study.engine import RunsFailed
    from qkov.study.synthetic_command import build_config, validate_synthetic

    cfg = build_config(params, ratios, data, optimizer, steps, dt, init, seed, K, M,
                       weight_decay=weight_decay if optimizer == "adamw" else 0.0)
    try:
        res = validate_synthetic(cfg, out, progress=progress, scheduler=scheduler, workers=workers)
    except RunsFailed as exc:
        raise click.ClickException(str(exc)) from None
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
