"""``qkov validate synthetic``: train torch models of the four parametrizations and hold them against the theory."""

from __future__ import annotations

import json
from pathlib import Path

import click

from qkov.cli.options import (Choice, Integer, Number, field_error, json_option, out_option, param_option,
                              ratios_option, seed_option, size_options)
from qkov.cli.support import CONTEXT_SETTINGS

from qkov.core.config import parse_config
from qkov.core.runstore import RunWriter, run_dir_for
from qkov.core.lock import results_lock
from validation.synthetic.experiment import SyntheticConfig, run_grid

DEFAULT_STEPS = {"population": 4000, "sampled": 3000, "paper": 2000}
"""Steps per (param, ratio) when ``--steps`` is not given."""
DEFAULT_DT = {"gd": 0.05, "sgd": 0.05, "adamw": 0.01}
"""Per-step rate multiplier ``dt`` (rates are eta * dt) when ``--dt`` is not given."""


def build_config(params, ratios, data: str, optimizer: str, steps: int | None, dt: float | None,
                 init: str | None, seed: int, K: int, M: int) -> SyntheticConfig:
    """Validated :class:`SyntheticConfig` from parsed options (``ConfigError`` names the bad field).

    ``steps``/``dt``/``init`` left as ``None`` take the defaults of ``data`` and ``optimizer``.
    """
    init = init or ("symmetric" if data in ("population", "paper") else "random")
    if data == "sampled" and init == "symmetric":
        raise field_error("init", "symmetric", "sampled data needs 'random' (its vocabulary is not MODEL.md's)")
    extra = {"eta_ov": 1.0, "dt": 0.5, "float64": False, "test_size": 1000} if data == "paper" else {}
    steps = DEFAULT_STEPS[data] if steps is None else steps
    values = {"params": tuple(params), "ratios": tuple(ratios), "data": data, "optimizer": optimizer, "init": init,
              "steps": steps, "seed": seed, "K": K, "M": M,
              "dt": extra.pop("dt", DEFAULT_DT[optimizer]) if dt is None else dt, **extra}
    values["log_every"] = max(1, values["steps"] // 200)
    return parse_config(SyntheticConfig, **values)


OPTIMIZER_MAP_CHOICES = ("adam", "momentum")
"""Optimizers judged against their exact reduced map (:func:`validation.synthetic.adam_compare.optimizer_matched_loss`)."""


def _betas(text: str) -> tuple[float, float]:
    try:
        b = tuple(float(x) for x in text.split(","))
    except ValueError:
        b = ()
    if len(b) != 2 or not all(0.0 <= x < 1.0 for x in b):
        raise field_error("betas", text, "must be two numbers B1,B2, each in [0, 1)")
    return b  # type: ignore[return-value]


def optimizer_map_run(params, ratios, data, optimizer, steps, dt, init, seed, K, M, as_json, out, betas, eps,
                      weight_decay) -> None:
    """``--optimizer adam|momentum``: measured 1-p and set distance at matched loss against the reduced map."""
    if data != "population":
        raise field_error("data", data, f"--optimizer {optimizer} trains MODEL.md's population: use population")
    if init not in (None, "symmetric"):
        raise field_error("init", init, f"--optimizer {optimizer} starts on the symmetric set: use symmetric")
    from validation.synthetic.adam_compare import optimizer_matched_loss

    steps = 1000 if steps is None else steps
    dt = 0.01 if dt is None else dt
    config = {"params": list(params), "ratios": list(ratios), "optimizer": optimizer, "betas": list(betas),
              "eps": eps, "weight_decay": weight_decay, "steps": steps, "dt": dt, "K": K, "M": M, "seed": seed}
    run_dir = run_dir_for(out, "synthetic-optimizer", config)
    with results_lock(out, "qkov validate synthetic"):
        res = [optimizer_matched_loss(p, tuple(ratios), optimizer=optimizer, betas=betas, eps=eps,
                                      weight_decay=weight_decay, K=K, M=M, dt=dt, steps=steps) for p in params]
        with RunWriter(run_dir, kind="synthetic-optimizer", config=config, seed=seed) as run:
            run.write_json("metrics.json", {"config": config, "runs": res})
    if as_json:
        click.echo(json.dumps({"run_dir": str(run_dir), "runs": res}, indent=2, default=float))
    else:
        for r in res:
            for p in r["pairs"]:
                click.echo(f"{p['param']} r={p['ratio']:g}: measured 1-p {p['measured']} (reduced {p['reduced']}), "
                           f"set distance {p['distance']} at losses {r['levels']}")
        click.echo(f"results: {run_dir.resolve()}")


@click.command(context_settings=CONTEXT_SETTINGS)
@param_option()
@ratios_option("1,3,10")
@click.option("--data", type=Choice(("population", "sampled", "paper")), default="population", show_default=True,
              help="population (MODEL.md exactly), sampled (departures from it), paper (the paper's Figure 2 data).")
@click.option("--optimizer", type=Choice(("gd", "sgd", "adamw", "adam", "momentum")), default="gd", show_default=True,
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
@click.option("--progress/--no-progress", default=None, help="Progress bars (default: on long runs).")
@click.option("--betas", type=str, default="0.9,0.999", show_default=True,
              help="B1,B2 of --optimizer adam (B1 is the coefficient of --optimizer momentum); each in [0, 1).")
@click.option("--eps", type=Number(0.0, 1e3, lo_open=True), default=1e-8, show_default=True, help="Adam's eps.")
@click.option("--weight-decay", type=Number(0.0, 1e3), default=0.0, show_default=True,
              help="Decoupled weight decay of --optimizer adam (AdamW).")
def synthetic(params, ratios, data: str, optimizer: str, steps: int | None, dt: float | None,
              init: str | None, seed: int, K: int, M: int, as_json: bool, out: Path, progress: bool | None,
              betas: str, eps: float, weight_decay: float) -> None:
    """Train QK/OV attention models and compare them with the ODE, closed forms and DTAP heatmaps.

    The run goes to OUT/runs/synthetic-<key>/.
    """
    if optimizer in OPTIMIZER_MAP_CHOICES:
        return optimizer_map_run(params, ratios, data, optimizer, steps, dt, init, seed, K, M, as_json, out,
                                 _betas(betas), eps, weight_decay)
    cfg = build_config(params, ratios, data, optimizer, steps, dt, init, seed, K, M)
    config = cfg.to_json_dict()
    run_dir = run_dir_for(out, "synthetic", config)
    with results_lock(out, "qkov validate synthetic"):  # one writer per results directory
        runs = run_grid(cfg, progress=progress)
        with RunWriter(run_dir, kind="synthetic", config=config, seed=cfg.seed) as run:
            from qkov.study.synthetic_stage import write_synthetic_run

            res = write_synthetic_run(cfg, runs, run)
    if as_json:
        m = res["metrics"]
        brief = {"run_dir": str(run_dir), "ode_all_within_tolerance": m["ode_all_within_tolerance"],
                 "pairs": [{k: p[k] for k in ("param", "ratio", "final", "ode", "p_at_loss") if k in p}
                           | {"dtap_mean_mass": p["dtap"]["mean_mass"], "accuracy": p["dtap"]["accuracy"]}
                           for p in m["pairs"]],
                 "claims": [e.to_json() for e in res["evidence"]]}
        click.echo(json.dumps(brief, indent=2, default=float))
    else:
        for e in res["evidence"]:
            click.echo(f"{e.claim}: {e.verdict} — {e.numbers}")
        click.echo(f"results: {run_dir.resolve()}")
