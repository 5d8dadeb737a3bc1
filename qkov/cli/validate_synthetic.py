"""``qkov validate synthetic``: train torch models of the four parametrizations and hold them against the theory."""

from __future__ import annotations

import json
from pathlib import Path

import click

from qkov.cli.support import CONTEXT_SETTINGS

from qkov.core.config import ConfigError, PARAMETRIZATIONS, as_choice_list, parse_config, parse_float_list
from qkov.core.runstore import RunWriter, config_key
from validation.synthetic.experiment import SyntheticConfig, run_grid

DEFAULT_STEPS = {"population": 4000, "sampled": 3000, "paper": 2000}
"""Steps per (param, ratio) when ``--steps`` is not given."""
DEFAULT_DT = {"gd": 0.05, "sgd": 0.05, "adamw": 0.01}
"""Per-step rate multiplier ``dt`` (rates are eta * dt) when ``--dt`` is not given."""


def build_config(param: str, ratios: str, data: str, optimizer: str, steps: int | None, dt: float | None,
                 init: str | None, seed: int, K: int, M: int) -> SyntheticConfig:
    """Validated :class:`SyntheticConfig` from CLI strings (``ConfigError`` names the bad field)."""
    params = as_choice_list("param", param, PARAMETRIZATIONS)
    rs = parse_float_list("ratios", ratios)
    if not rs:
        raise ConfigError(f"config field 'ratios' = {ratios!r}: must hold at least one number")
    init = init or ("symmetric" if data in ("population", "paper") else "random")
    if data == "sampled" and init == "symmetric":
        raise ConfigError("config field 'init' = 'symmetric': sampled data needs 'random' (its vocabulary is not MODEL.md's)")
    extra = {"eta_ov": 1.0, "dt": 0.5, "float64": False, "test_size": 1000} if data == "paper" else {}
    values = {"params": params, "ratios": rs, "data": data, "optimizer": optimizer, "init": init,
              "steps": steps or DEFAULT_STEPS[data], "seed": seed, "K": K, "M": M,
              "dt": dt or extra.pop("dt", DEFAULT_DT[optimizer]), **extra}
    values["log_every"] = max(1, values["steps"] // 200)
    return parse_config(SyntheticConfig, **values)


@click.command(context_settings=CONTEXT_SETTINGS)
@click.option("--param", default="all", show_default=True, help="Comma-separated parametrizations or 'all'.")
@click.option("--ratios", default="1,3,10", show_default=True, help="eta_QK/eta_OV values, comma-separated.")
@click.option("--data", type=click.Choice(["population", "sampled", "paper"]), default="population", show_default=True)
@click.option("--optimizer", type=click.Choice(["gd", "sgd", "adamw"]), default="gd", show_default=True)
@click.option("--steps", type=int, default=None, help="Steps per run (default depends on --data).")
@click.option("--dt", type=float, default=None, help="Rates are eta * dt per step (default 0.05; adamw 0.01; paper 0.5).")
@click.option("--init", type=click.Choice(["symmetric", "random"]), default=None,
              help="symmetric start (u0=v0=0.5; the paper's 1e-6*I for --data paper) or small random.")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("-K", "K", type=int, default=4, show_default=True, help="Classes.")
@click.option("-M", "M", type=int, default=8, show_default=True, help="Common tokens.")
@click.option("--json", "as_json", is_flag=True, help="Print the metrics summary and claims as JSON.")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=Path("qkov-results"),
              show_default=True, help="Results directory; the run goes to OUT/synthetic-<key>.")
@click.option("--progress/--no-progress", default=None, help="Progress bars (default: on long runs).")
def synthetic(param: str, ratios: str, data: str, optimizer: str, steps: int | None, dt: float | None,
              init: str | None, seed: int, K: int, M: int, as_json: bool, out: Path, progress: bool | None) -> None:
    """Train QK/OV attention models and compare them with the ODE, closed forms and DTAP heatmaps."""
    cfg = build_config(param, ratios, data, optimizer, steps, dt, init, seed, K, M)
    config = cfg.to_json_dict()
    run_dir = out / f"synthetic-{config_key('synthetic', config)}"
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
