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
