"""``qkov validate real``: an eta_QK/eta_OV sweep on a real data set, then its summary."""

from __future__ import annotations

import json
from pathlib import Path

import click

from qkov.cli.options import RATIO, Choice, Integer, ListOf, device_option, out_option
from qkov.cli.support import CONTEXT_SETTINGS
from theory.parametrization import PARAMETRIZATIONS
import torch
from tqdm.auto import tqdm

from qkov.core.config import ConfigError, field_error, parse_config, resolve_data_dir
from qkov.core.runstore import is_complete, run_dir_for, to_json_text
from qkov.core.lock import results_lock

from validation.real.config import DATASETS, MODELS, OPTIMIZERS, RECIPES, RealRunConfig
from validation.real import datasets as dataset_registry
from validation.real.run import load_dataset
from qkov.study.real_stage import execute_run, execute_runs_stacked, stack_groups
from qkov.study.real_stage import KIND, sweep_configs
from qkov.study.real_summary import markdown_tables, summarise


SWEEP_SUMMARY_KIND = "real-sweep-summary"
"""Kind of the summary run a ``qkov validate real`` sweep writes (``OUT/runs/real-sweep-summary-<key>/``)."""


def _apply_rates(text: str | None, ratio_list: tuple | None, extra: dict) -> tuple | None:
    """``--rates`` (issue 32): the per-group factors go into ``extra["rates"]``; ``qk=F`` is the ratio F (with
    ``--ratios`` too: one line, exit 2). Returns the ratios."""
    if text is None:
        return ratio_list
    from validation.real.config import parse_rates

    try:
        factors = parse_rates(text)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    if "qk" in factors and ratio_list is not None:
        raise field_error("rates", text, "qk=F or --ratios, not both (the QK factor is the ratio)")
    if "qk" in factors:
        ratio_list = (factors.pop("qk"),)
    if factors:
        extra["rates"] = factors
    return ratio_list


@click.command(context_settings=CONTEXT_SETTINGS)
@click.option("--dataset", "datasets", type=ListOf(Choice(DATASETS)), default="all", show_default=True,
              help="squad, hatexplain, sva, comma-separated, or all.")
@click.option("--ratios", type=ListOf(RATIO), default=None,
              help="eta_QK/eta_OV values [default: the dataset's; quick: 1, an intermediate ratio and the paper's "
                   "(SQuAD 1,20); full: 1,2,5,10,30,100 (SQuAD 1,2,5,10,20)].")
@click.option("--seeds", type=ListOf(Integer(0, 2**32 - 1)), default=None,
              help="Training seeds [default: quick 0,1,2; full 0,1,2,3,4].")
@click.option("--optimizer", "optimizers", type=ListOf(Choice(OPTIMIZERS)), default=None,
              help="adamw, sgd, comma-separated, or all [default: the paper's for --model paper (HateXplain AdamW, "
                   "SVA SGD+momentum 0.99), AdamW for small].")
@click.option("--model", "model", type=Choice(MODELS), default=None,
              help="paper: the official code's models; small: for --quick/CI; minilm: pretrained all-MiniLM-L6-v2 "
                   "fine-tuned with the ratio (HateXplain; the 'pretrained' extra) [default: small with --quick, "
                   "else paper].")
@click.option("--param", type=Choice(PARAMETRIZATIONS), default="CACO", show_default=True,
              help="Circuits of the attention layer: CACO, FACO, CAFO or FAFO (C = collapsed, F = factorized).")
@click.option("--layers", type=Integer(1, 6), default=1, show_default=True,
              help="Attention layers (lower ones: single-head self-attention with collapsed circuits).")
@click.option("--quick", is_flag=True, help="Small models, subsampled data, fewer epochs (idle 2-core machine: "
              "about 2 min per dataset, measured: SQuAD 2.2, HateXplain 1.9, SVA 2.1).")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
@out_option()
@click.option("--data-dir", type=str, default=None, help="Real-data directory (else $QKOV_DATA_DIR).")
@click.option("--recipe", type=Choice(RECIPES), default="ratio-only", show_default=True,
              help="ratio-only: only W_Q, W_K move with the ratio; paper: the official code's recipe, the embeddings "
                   "(SVA: and the biases) also train at the QK rate.")
@click.option("--rates", "rates", type=str, default=None,
              help="Rate factors (times the OV rate) per parameter group, e.g. qk=30,embedding=30; groups: qk, ov, "
                   "embedding, bias, mlp, other; set on top of --recipe; qk=F is the same as --ratios F. Recorded in "
                   "each run's config.")
@click.option("--stacked", is_flag=True,
              help="Train the seeds x ratios of each configuration together in this process (torch.func.vmap; "
                   "paper and small classifiers, CPU or one device); each run still gets its own directory.")
@device_option()
def real(datasets, ratios, seeds, optimizers, model: str | None, param: str, layers: int, quick: bool,
         as_json: bool, out: Path, data_dir: str | None, recipe: str, stacked: bool, device: str,
         bf16: bool, rates: str | None = None) -> None:
    """Train the QKOV models at each eta_QK/eta_OV ratio and seed, then tabulate and compare with ratio 1."""
    from validation.device import check_autocast, resolve_device

    try:
        check_autocast(resolve_device(device), bf16)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    torch.set_num_threads(1)  # small models: one thread is fastest and shares a busy machine well
    ratio_list = tuple(ratios) if ratios is not None else None
    seed_list = tuple(seeds) if seeds is not None else None
    data = resolve_data_dir(data_dir)
    if data is None:
        raise field_error("data-dir", "(not given)",
                          "a real-data directory: --data-dir DIR or $QKOV_DATA_DIR (no data directory; see docs/data.md)")
    extra = {k: v for k, v in (("param", param), ("layers", layers)) if (k, v) not in (("param", "CACO"), ("layers", 1))}
    if model is not None:
        extra["model"] = model
    if recipe != "ratio-only":
        extra["recipe"] = recipe
    ratio_list = _apply_rates(rates, ratio_list, extra)
    if model == "minilm":
        from validation.real.pretrained import PretrainedUnavailable, minilm_dir

        try:
            minilm_dir()      # the extra is there: else one line, before any work
        except PretrainedUnavailable as exc:
            raise ConfigError(str(exc)) from None
    try:
        sweep = sweep_configs(datasets, ratio_list, seed_list, optimizers, quick, data, **extra)
    except ValueError as exc:     # e.g. a model that does not fit a dataset (minilm is HateXplain's)
        raise ConfigError(str(exc)) from None
    configs = [parse_config(RealRunConfig, **c.to_json_dict()) for c in sweep]
    for ds in datasets:  # validate every file before training anything
        load_dataset(ds, str(data))
    if stacked and (bf16 or any(c.model == "minilm" or dataset_registry.get(c.dataset).task == "generation" for c in configs)):
        raise field_error("stacked", "true", "only for the paper and small classifiers (HateXplain, SVA), without --bf16")
    run_dirs = [run_dir_for(out, KIND, cfg.to_json_dict()) for cfg in configs]
    with results_lock(out, "qkov validate real"):  # one writer per results directory
        todo = [i for i, d in enumerate(run_dirs) if not is_complete(d)]
        if stacked:
            for group in tqdm(stack_groups([configs[i] for i in todo]), desc="stacked groups", unit="group",
                              disable=as_json):
                idx = [todo[j] for j in group]
                execute_runs_stacked([configs[i] for i in idx], [run_dirs[i] for i in idx], kind=KIND, device=device)
        else:
            for i in tqdm(todo, desc="real-data runs", unit="run", disable=as_json):
                execute_run(configs[i], run_dirs[i], kind=KIND, progress=not as_json, device=device, bf16=bf16)
        summary_cfg = {"datasets": list(datasets), "ratios": list(ratio_list or []), "seeds": list(seed_list or []),
                       "optimizers": list(optimizers or []), "quick": quick, **extra, "data_dir": str(data),
                       "runs": [d.name for d in run_dirs]}
        summary_dir = run_dir_for(out, SWEEP_SUMMARY_KIND, summary_cfg)
        result = summarise(run_dirs, summary_dir, kind=SWEEP_SUMMARY_KIND, config=summary_cfg)
    if as_json:
        click.echo(to_json_text({"summary_dir": str(summary_dir.resolve()), "runs": [str(d) for d in run_dirs],
                                 "claims": result["claims"], "groups": result["groups"], "tests": result["tests"]}),
                   nl=False)
    else:
        click.echo(markdown_tables(result["groups"], result["tests"], result["claims"]["real-data"]))
        click.echo(f"claim real-data: {json.dumps(result['claims']['real-data'])}")
        click.echo(f"summary: {summary_dir.resolve()}")
