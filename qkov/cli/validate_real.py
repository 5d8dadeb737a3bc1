"""``qkov validate real``: an eta_QK/eta_OV sweep on a real data set, then its summary.

Parses the options, calls :func:`qkov.study.real_command.validate_real` (plans, runs through the study
engine, summarises) and prints the summary. Every option is checked while it is parsed or right after, before
the study modules (pydantic, numpy, torch, Dask) are imported and before any data is loaded: a refusal costs
a fraction of a second of CPU (docs/reliability.md)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from qkov.cli.options import RATIO, Choice, Integer, ListOf, _Type, device_option, out_option
from qkov.cli.executor import executor_options
from qkov.cli.support import CONTEXT_SETTINGS
from theory.errors import InputError
from theory.parametrization import BASELINE, registered

from validation.real.config import DATASETS, MODELS, OPTIMIZERS, RECIPES
from validation.real.official import PRESETS

__all__ = ["real", "Rates"]


class Rates(_Type):
    """``--rates GROUP=FACTOR,...`` parsed while the options are (:func:`validation.real.config.parse_rates`:
    known groups, once each, factors in the bounds of ``--ratios``) -> ``{group: factor}``."""

    name = "rates"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if value is None or isinstance(value, dict):
            return value
        from validation.real.config import parse_rates

        try:
            return parse_rates(str(value))
        except ValueError as exc:
            raise InputError(str(exc)) from None


def _apply_rates(factors: dict[str, float] | None, ratio_list: tuple | None, extra: dict) -> tuple | None:
    """``--rates`` (issue 32): the per-group factors go into ``extra["rates"]``; ``qk=F`` is the ratio F (with
    ``--ratios`` too: one line, exit 2). Returns the ratios."""
    if factors is None:
        return ratio_list
    factors = dict(factors)
    if "qk" in factors and ratio_list is not None:
        raise _error("rates", ",".join(f"{k}={v:g}" for k, v in factors.items()),
                     "qk=F or --ratios, not both (the QK factor is the ratio)")
    if "qk" in factors:
        ratio_list = (factors.pop("qk"),)
    if factors:
        extra["rates"] = factors
    return ratio_list


def _error(field: str, value: Any, allowed: str) -> InputError:
    from qkov.cli.options import field_error

    return field_error(field, value, allowed)


def _check_applies(optimizers: tuple | None, fused: bool) -> None:
    """Options that do not apply are refused, not ignored: ``--fused-adamw`` with ``--optimizer`` naming no
    AdamW (the sweep's defaults are checked once planned: :func:`qkov.study.real_command.plan_configs`)."""
    if fused and optimizers is not None and "adamw" not in optimizers:
        raise _error("fused-adamw", ",".join(optimizers), "AdamW's fused kernel: only with --optimizer adamw "
                                                          "(the sweep trains none with AdamW)")


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
@click.option("--param", type=Choice(registered()), default=BASELINE, show_default=True,
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
@click.option("--rates", "rates", type=Rates(), default=None,
              help="Rate factors (times the OV rate) per parameter group, e.g. qk=30,embedding=30; groups: qk, ov, "
                   "position (at the embedding's factor unless set), embedding, bias, mlp, other; each factor in "
                   "[1e-6, 1e6] like --ratios; set on top of "
                   "--recipe; qk=F is the same as --ratios F. Recorded in each run's config.")
@click.option("--preset", type=Choice(PRESETS), default="sized", show_default=True,
              help="sized: qkov's defaults; official: the official code's settings (SQuAD: context cut to 200 "
                   "characters either side of the answer, d_model 300, 6 heads, 6 layers, AdamW 5e-5; HateXplain: "
                   "PAPER.md's optimizer groups, frozen MLP, weight decay 1e-3, no clipping; SVA: SGD momentum 0.99, "
                   "QK, embedding and biases x100; each difference listed, see docs/real-data.md); powered: MiniLM on "
                   "the full HateXplain, AdamW 3e-5 with warm-up, ratios 1,3,10, 11 seeds (derived for a 0.1 mass "
                   "change against the 0.01 margin at power 0.8). Recorded in each run's config.")
@click.option("--stacked", is_flag=True,
              help="Train the seeds x ratios of each configuration together in this process (torch.func.vmap; "
                   "paper and small classifiers, CPU or one device); each run still gets its own directory.")
@click.option("--fused-adamw", "fused", is_flag=True,
              help="AdamW's fused kernel (faster on small steps; its rounding differs from the default AdamW, so "
                   "results are not bitwise the same). Recorded in each run's config.")
@executor_options()
@device_option()
def real(datasets, ratios, seeds, optimizers, model: str | None, param: str, layers: int, quick: bool,
         as_json: bool, out: Path, data_dir: str | None, recipe: str, stacked: bool, scheduler: str | None,
         workers: int | None, device: str, bf16: bool, rates: dict[str, float] | None = None, preset: str = "sized",
         fused: bool = False) -> None:
    """Train the QKOV models at each eta_QK/eta_OV ratio and seed, then tabulate and compare with ratio 1."""
    extra: dict = {}
    ratio_list = _apply_rates(rates, tuple(ratios) if ratios is not None else None, extra)
    _check_applies(tuple(optimizers) if optimizers is not None else None, fused)
    from qkov.core.runstore import to_json_text
    from qkov.study.engine import RunsFailed
    from qkov.study.real_command import RealSweep, validate_real
    from qkov.study.real_summary import markdown_tables

    sweep = RealSweep(datasets=tuple(datasets), ratios=ratio_list, seeds=tuple(seeds) if seeds is not None else None,
                      optimizers=tuple(optimizers) if optimizers is not None else None, model=model, param=param,
                      layers=layers, quick=quick, recipe=recipe, stacked=stacked, device=device, bf16=bf16,
                      rates=extra.get("rates"), preset=preset, fused=fused)
    try:
        res = validate_real(sweep, out, data_dir=data_dir, progress=not as_json, scheduler=scheduler,
                            workers=workers)
    except RunsFailed as exc:
        raise click.ClickException(str(exc)) from None
    result = res.summary
    if as_json:
        click.echo(to_json_text({"summary_dir": str(res.summary_dir.resolve()), "runs": [str(d) for d in res.run_dirs],
                                 "claims": result["claims"], "groups": result["groups"], "tests": result["tests"]}),
                   nl=False)
    else:
        click.echo(markdown_tables(result["groups"], result["tests"], result["claims"]["real-data"]))
        click.echo(f"claim real-data: {json.dumps(result['claims']['real-data'])}")
        click.echo(f"summary: {res.summary_dir.resolve()}")
