"""``qkov inspect``: how qkov would classify a model's attention and the rate each parameter would get.

Thin: parses, calls :func:`validation.model_inspect.inspect_model`, prints. Bad input (a source that is no model
directory, config JSON or model type; a rate that is not a finite positive number): one line, exit 2.
"""

from __future__ import annotations

import json

import click

from qkov.cli.options import Integer, Number, json_option
from qkov.cli.support import CONTEXT_SETTINGS
from validation.model_inspect import DEFAULT_MAX_PARAMS, inspect_model


@click.command("inspect", context_settings=CONTEXT_SETTINGS)
@click.argument("source")
@click.option("--lr", type=Number(0.0, lo_open=True), default=1e-3, show_default=True,
              help="The base (W_V, W_O) learning rate.")
@click.option("--ratio", type=Number(0.0, lo_open=True), default=10.0, show_default=True,
              help="eta_QK / eta_OV: W_Q and W_K train at ratio * lr.")
@click.option("--lr-other", type=Number(0.0), default=None, help="Rate of everything else (default: --lr).")
@click.option("--embeddings", is_flag=True, help="Train the input embedding with QK (as the paper's code does).")
@click.option("--whole-circuit", is_flag=True,
              help="Also train the attention's parameters that act only on the scores (q/k norms, sinks, "
                   "positional q/k projections, q/k adapters) with QK.")
@click.option("--no-qk-bias", is_flag=True, help="Leave the q and k biases at --lr-other.")
@click.option("--max-params", type=Integer(0), default=DEFAULT_MAX_PARAMS, show_default=True,
              help="Largest model built and run on the CPU to confirm its layouts; larger ones are read from "
                   "their module structure only.")
@json_option()
def inspect(source: str, lr: float, ratio: float, lr_other: float | None, embeddings: bool, whole_circuit: bool,
            no_qk_bias: bool, max_params: int, as_json: bool) -> None:
    """Show how qkov.param_groups would split SOURCE's attention, and each parameter's rate.

    SOURCE is a local model directory (with config.json), a config JSON file, or a transformers model type
    (gpt2, llama, qwen2, ...). The model is built from the config with random weights (nothing is downloaded)
    and, up to --max-params parameters, run once to confirm fused layouts. For each attention module it prints
    its layout and each parameter's role (Q, K, V, O, a fused tensor's q/k/v slice, an adapter, other) with its
    rate; then the modules param_groups would refuse, one line each.
    """
    res = inspect_model(source, lr=lr, ratio=ratio, lr_other=lr_other, qk_bias=not no_qk_bias,
                        embeddings=embeddings, whole_circuit=whole_circuit, max_params=max_params)
    click.echo(json.dumps(res.as_dict(), indent=1) if as_json else res.render())
