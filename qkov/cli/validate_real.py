"""``qkov validate real``: an eta_QK/eta_OV sweep on a real data set, then its summary."""

from __future__ import annotations

import json
from pathlib import Path

import click

from qkov.cli.support import CONTEXT_SETTINGS
import torch
from tqdm.auto import tqdm

from qkov.core.config import ConfigError, as_choice_list, parse_config, parse_float_list, resolve_data_dir
from qkov.core.runstore import config_key, is_complete, to_json_text

from validation.real.config import DATASETS, OPTIMIZERS, RealRunConfig
from validation.real.run import load_dataset
from qkov.study.real_stage import execute_run
from qkov.study.real_stage import KIND, NO_DATA, sweep_configs
from qkov.study.real_summary import markdown_tables, summarise


def _seeds(text: str) -> tuple[int, ...]:
    vals = parse_float_list("seeds", text)
    if not vals or any(v < 0 or v != int(v) for v in vals):
        raise ConfigError(f"config field 'seeds' = {text!r}: must be comma-separated integers >= 0")
    return tuple(int(v) for v in vals)


@click.command(context_settings=CONTEXT_SETTINGS)
@click.option("--dataset", "dataset", required=True, help="squad, hatexplain, sva, comma-separated, or all.")
@click.option("--ratios", default=None, help="eta_QK/eta_OV values [default: the dataset's; quick: 1, an "
              "intermediate ratio and the paper's (SQuAD 1,20); full: 1,2,5,10,30,100 (SQuAD 1,2,5,10,20)].")
@click.option("--seeds", default=None, help="Training seeds [default: quick 0,1,2; full 0,1,2,3,4].")
@click.option("--optimizer", default=None, help="adamw, sgd, comma-separated, or all [default: the paper's "
              "for --model paper (HateXplain AdamW, SVA SGD+momentum 0.99), AdamW for small].")
@click.option("--model", "model", default=None, type=click.Choice(["paper", "small"]),
              help="paper: the official code's models; small: for --quick/CI [default: small with --quick, "
                   "else paper].")
@click.option("--param", type=str, default="CACO", show_default=True,
              help="Circuits of the attention layer: CACO, FACO, CAFO or FAFO (C = collapsed, F = factorized).")
@click.option("--layers", type=int, default=1, show_default=True,
              help="Attention layers (lower ones: single-head self-attention with collapsed circuits).")
@click.option("--quick", is_flag=True, help="Small models, subsampled data, fewer epochs (idle 2-core machine: "
              "HateXplain, SVA about 2 min; SQuAD about 4 min).")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=Path("qkov-results"),
              show_default=True, help="Results directory (runs go to OUT/runs/, the summary to OUT/).")
@click.option("--data-dir", type=str, default=None, help="Real-data directory (else $QKOV_DATA_DIR).")
def real(dataset: str, ratios: str | None, seeds: str | None, optimizer: str | None, model: str | None,
         param: str, layers: int, quick: bool, as_json: bool, out: Path, data_dir: str | None) -> None:
    """Train the QKOV models at each eta_QK/eta_OV ratio and seed, then tabulate and compare with ratio 1."""
    torch.set_num_threads(1)  # small models: one thread is fastest and shares a busy machine well
    datasets = as_choice_list("dataset", dataset, DATASETS)
    optimizers = as_choice_list("optimizer", optimizer, OPTIMIZERS) if optimizer is not None else None
    ratio_list = parse_float_list("ratios", ratios) if ratios is not None else None
    if ratio_list is not None and (not ratio_list or any(not r > 0 for r in ratio_list)):
        raise ConfigError(f"config field 'ratios' = {ratios!r}: must be comma-separated numbers > 0")
    seed_list = _seeds(seeds) if seeds is not None else None
    data = resolve_data_dir(data_dir)
    if data is None:
        raise ConfigError(NO_DATA)
    extra = {k: v for k, v in (("param", param), ("layers", layers)) if (k, v) not in (("param", "CACO"), ("layers", 1))}
    if model is not None:
        extra["model"] = model
    configs = [parse_config(RealRunConfig, **c.to_json_dict())
               for c in sweep_configs(datasets, ratio_list, seed_list, optimizers, quick, data, **extra)]
    for ds in datasets:  # validate every file before training anything
        load_dataset(ds, str(data))
    run_dirs = []
    for cfg in tqdm(configs, desc="real-data runs", unit="run", disable=as_json):
        cd = cfg.to_json_dict()
        run_dir = out / "runs" / f"{KIND}-{config_key(KIND, cd)}"
        if not is_complete(run_dir):
            execute_run(cfg, run_dir, kind=KIND, progress=not as_json)
        run_dirs.append(run_dir)
    name = ("validate-real-summary-" + "-".join(datasets) + "".join(f"-{v}" for v in extra.values())
            + ("-quick" if quick else ""))
    summary_cfg = {"datasets": list(datasets), "ratios": list(ratio_list or []), "seeds": list(seed_list or []),
                   "optimizers": list(optimizers or []), "quick": quick, **extra, "data_dir": str(data),
                   "runs": [d.name for d in run_dirs]}
    result = summarise(run_dirs, out / name, config=summary_cfg)
    if as_json:
        click.echo(to_json_text({"summary_dir": str((out / name).resolve()), "runs": [str(d) for d in run_dirs],
                                 "claims": result["claims"], "groups": result["groups"], "tests": result["tests"]}),
                   nl=False)
    else:
        click.echo(markdown_tables(result["groups"], result["tests"], result["claims"]["real-data"]))
        click.echo(f"claim real-data: {json.dumps(result['claims']['real-data'])}")
        click.echo(f"summary: {(out / name).resolve()}")
